package broker

// ShareAcknowledge: v1-2 (KIP-932)
//
// * v1: the first version Kafka 4.1 serves.
// * v2: IsRenewAck (KIP-1222) and AcquisitionLockTimeoutMillis.
//
// Acknowledges records acquired through ShareFetch in the member's share
// session; epoch 0 is INVALID_SHARE_SESSION_EPOCH (a session is opened by
// ShareFetch only), -1 closes the session after the acknowledgements and
// releases the records the member still holds on this broker. Records not
// acquired by the member are INVALID_RECORD_STATE for their partition.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/server"
)

func (b *Broker) handleShareAcknowledge(c *server.Conn, req *kmsg.ShareAcknowledgeRequest) kmsg.Response {
	z := b.authzFor(c)
	resp := req.ResponseKind().(*kmsg.ShareAcknowledgeResponse)
	resp.AcquisitionLockTimeoutMillis = b.groupConfig(derefString(req.GroupID)).ShareRecordLockDurationMs
	fail := func(code int16, msg string) kmsg.Response {
		resp.ErrorCode = code
		if msg != "" {
			resp.ErrorMessage = &msg
		}
		return resp
	}
	if req.GroupID == nil || *req.GroupID == "" || req.MemberID == nil || *req.MemberID == "" {
		return fail(kerr.InvalidRequest.Code, "GroupId and MemberId must be set.")
	}
	group, member := *req.GroupID, *req.MemberID
	if !z.group(opRead, group) {
		return fail(kerr.GroupAuthorizationFailed.Code, "")
	}
	if req.ShareSessionEpoch == 0 || req.ShareSessionEpoch < -1 {
		return fail(kerr.InvalidShareSessionEpoch.Code, "")
	}
	if _, err := b.shareSessionFor(group, member, req.ShareSessionEpoch); err != nil {
		return fail(shareSessionCode(err), err.Error())
	}
	renew := req.Version >= 2 && req.IsRenewAck
	ctx := b.ctx
	for _, t := range req.Topics {
		rt := kmsg.NewShareAcknowledgeResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewShareAcknowledgeResponseTopicPartition()
			rp.Partition = p.Partition
			rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = -1, -1
			batches := shareAckBatches(p.AcknowledgementBatches, func(x kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch) (int64, int64, []int8) {
				return x.FirstOffset, x.LastOffset, x.AcknowledgeTypes
			})
			rp.ErrorCode = b.shareAck(ctx, z, group, member, sharePartKey{group, t.TopicID, p.Partition}, batches, renew)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if req.ShareSessionEpoch == -1 {
		b.releaseShareMember(group, member)
	}
	return resp
}
