package broker

// AlterShareGroupOffsets: v0 (KIP-932)
//
// Served by the group's coordinator: sets the share-partition start
// offset (SPSO) of each partition named, with nothing in flight. The
// group must have no members (NON_EMPTY_GROUP, top level); an unknown
// group id becomes an empty share group, as in Kafka 4.2 (offsets may be
// set before a group is first used); a group of another type is
// GROUP_ID_NOT_FOUND. READ on the group (GROUP_AUTHORIZATION_FAILED, top
// level) and on each topic (TOPIC_AUTHORIZATION_FAILED for its
// partitions), as Kafka checks them: it is the share group's
// OffsetCommit. A topic or partition that does not exist is
// UNKNOWN_TOPIC_OR_PARTITION.
//
// Each new start offset is written by the share coordinator of the
// share-partition (InitializeShareGroupState, committed in
// __share_group_state before the answer) at a new state epoch, so it
// survives a failover of the coordinator, and a partition leader that
// still holds the old state is fenced at its next write
// (FENCED_STATE_EPOCH), drops it and loads the new one; a leader that
// holds it idle drops it when a member opens a share session.
//
// Differences from Kafka: a negative StartOffset is INVALID_REQUEST for
// its partition (Kafka stores it as given); the group epoch is not
// bumped (the group is empty: no member holds an epoch to fence). A
// member that heartbeats to join while the offsets are altered waits
// for the alteration to end (the group's change lock).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/server"
)

func (b *Broker) handleAlterShareGroupOffsets(ctx context.Context, c *server.Conn, req *kmsg.AlterShareGroupOffsetsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.AlterShareGroupOffsetsResponse)
	z := b.authzFor(c)
	if !z.group(opRead, req.GroupID) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp
	}
	unlock, err := b.emptyShareGroup(ctx, req.GroupID, true)
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = groupCode(err), errMessage(err)
		return resp
	}
	// Joins wait until the new start offsets are written.
	defer unlock()
	img := b.cluster.Image()
	for _, t := range req.Topics {
		rt := kmsg.NewAlterShareGroupOffsetsResponseTopic()
		rt.Topic = t.Topic
		ti := img.Topics[t.Topic]
		allowed := z.topic(opRead, t.Topic)
		if ti != nil && allowed {
			rt.TopicID = ti.ID
		}
		altered := false
		for _, p := range t.Partitions {
			rp := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
			rp.Partition = p.Partition
			switch {
			case !allowed:
				rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			case ti == nil || p.Partition < 0 || int(p.Partition) >= len(ti.Replicas):
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case p.StartOffset < 0:
				rp.ErrorCode = kerr.InvalidRequest.Code
				msg := "The start offset must not be negative."
				rp.ErrorMessage = &msg
			default:
				err := (coordPersister{b}).initialize(ctx, sharePartKey{req.GroupID, ti.ID, p.Partition}, p.StartOffset)
				if err != nil {
					rp.ErrorCode, rp.ErrorMessage = shareCoordCode(err), errMessage(err)
				} else {
					altered = true
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		if altered {
			if err := b.setShareGroupTopicLocked(ctx, req.GroupID, t.Topic, true); err != nil {
				b.log.Warn("record share group topic", "group", req.GroupID, "topic", t.Topic, "err", err)
			}
			b.forgetShareParts(req.GroupID, ti.ID)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
