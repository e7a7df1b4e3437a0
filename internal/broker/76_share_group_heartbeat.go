package broker

// ShareGroupHeartbeat: v1 (KIP-932)
//
// * v1: the first version Kafka 4.1 serves (v0 was the early access
//   form); the member makes its own id (an empty one is INVALID_REQUEST).
//
// READ on the group and DESCRIBE on every subscribed topic, as Kafka
// checks them. The coordinator is the group coordinator
// (FindCoordinator key type 0). A group id used by a classic or consumer
// group is GROUP_ID_NOT_FOUND. Membership is written to __consumer_offsets
// before the answer (see shareGroups), so a member continues at its epoch
// with the next coordinator. Differences from Kafka: the assignor is the
// simple one, without rack awareness.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/server"
	"samsa/internal/share"
)

func (b *Broker) handleShareGroupHeartbeat(c *server.Conn, clientID *string, req *kmsg.ShareGroupHeartbeatRequest) server.Reply {
	z := b.authzFor(c)
	return inOrder(func(ctx context.Context) kmsg.Response {
		resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
		fail := func(code int16, msg string) kmsg.Response {
			resp.ErrorCode = code
			if msg != "" {
				resp.ErrorMessage = &msg
			}
			return resp
		}
		if !z.group(opRead, req.GroupID) {
			return fail(kerr.GroupAuthorizationFailed.Code, "")
		}
		for _, t := range req.SubscribedTopicNames {
			if !z.topic(opDescribe, t) {
				return fail(kerr.TopicAuthorizationFailed.Code, "")
			}
		}
		// Reference: ShareGroupHeartbeatRequest validation in
		// GroupMetadataManager.
		switch {
		case req.GroupID == "":
			return fail(kerr.InvalidRequest.Code, "GroupId can't be empty.")
		case req.MemberID == "":
			return fail(kerr.InvalidRequest.Code, "MemberId can't be empty.")
		case req.MemberEpoch < -1:
			return fail(kerr.InvalidRequest.Code, "MemberEpoch is invalid.")
		case req.MemberEpoch == 0 && len(req.SubscribedTopicNames) == 0:
			return fail(kerr.InvalidRequest.Code, "SubscribedTopicNames must be set in first request.")
		}
		hr := share.HeartbeatRequest{
			MemberID:    req.MemberID,
			MemberEpoch: req.MemberEpoch,
			RackID:      req.RackID,
			Topics:      req.SubscribedTopicNames,
			ClientHost:  clientHost(c),
		}
		if clientID != nil {
			hr.ClientID = *clientID
		}
		res, err := b.shareHeartbeat(ctx, req.GroupID, hr)
		if err != nil {
			return fail(groupCode(err), err.Error())
		}
		id := req.MemberID
		resp.MemberID = &id
		resp.MemberEpoch = res.MemberEpoch
		resp.HeartbeatIntervalMillis = int32(res.HeartbeatInterval.Milliseconds())
		if res.HasAssignment && req.MemberEpoch != -1 {
			a := kmsg.NewShareGroupHeartbeatResponseAssignment()
			a.TopicPartitions = []kmsg.ShareGroupHeartbeatResponseAssignmentTopicPartition{}
			for _, tp := range res.Assignment {
				t := kmsg.NewShareGroupHeartbeatResponseAssignmentTopicPartition()
				t.TopicID, t.Partitions = tp.TopicID, tp.Partitions
				a.TopicPartitions = append(a.TopicPartitions, t)
			}
			resp.Assignment = &a
		}
		return resp
	})
}
