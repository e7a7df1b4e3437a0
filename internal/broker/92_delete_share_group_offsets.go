package broker

// DeleteShareGroupOffsets: v0 (KIP-932)
//
// Served by the group's coordinator: deletes the state of every
// share-partition of each topic named (DeleteShareGroupState at their
// share coordinators), so that the group starts the topic again at
// share.auto.offset.reset. The group must exist (GROUP_ID_NOT_FOUND; a
// group the coordinator does not know but with state for a partition of
// a topic named is an empty share group after a coordinator failover) and
// have no members (NON_EMPTY_GROUP), both top level. DELETE on the group
// (GROUP_AUTHORIZATION_FAILED) and READ on each topic
// (TOPIC_AUTHORIZATION_FAILED for that topic), as Kafka checks them. A
// topic that does not exist, or that the group has no offsets for, is
// UNKNOWN_TOPIC_OR_PARTITION ("no offsets": neither subscribed nor
// altered since this broker became the coordinator, and no partition
// with state at the share coordinators).
//
// A partition leader that still holds a deleted state is fenced by the
// state epoch at its next write and drops it (the share coordinator
// remembers the deleted state's epoch in memory; after a failover of the
// coordinator, the delete is seen by leaders when a member opens a share
// session with them).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/server"
)

func (b *Broker) handleDeleteShareGroupOffsets(ctx context.Context, c *server.Conn, req *kmsg.DeleteShareGroupOffsetsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DeleteShareGroupOffsetsResponse)
	z := b.authzFor(c)
	if !z.group(aclDelete, req.GroupID) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp
	}
	img := b.cluster.Image()
	unlock, err := b.emptyShareGroup(ctx, req.GroupID, false)
	if err == nil {
		defer unlock()
	} else {
		// An empty share group without records may be known by its
		// state only (90_describe_share_group_offsets.go).
		named := map[string][]int32{}
		for _, t := range req.Topics {
			if ti := img.Topics[t.Topic]; ti != nil && z.topic(opRead, t.Topic) {
				for p := range ti.Replicas {
					named[t.Topic] = append(named[t.Topic], int32(p))
				}
			}
		}
		if !b.shareGroupAfterFailover(ctx, req.GroupID, named, img, err) {
			resp.ErrorCode, resp.ErrorMessage = groupCode(err), errMessage(err)
			return resp
		}
		unlock, err = b.emptyShareGroup(ctx, req.GroupID, false)
		if err != nil {
			resp.ErrorCode, resp.ErrorMessage = groupCode(err), errMessage(err)
			return resp
		}
		defer unlock()
	}
	for _, t := range req.Topics {
		rt := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
		rt.Topic = t.Topic
		ti := img.Topics[t.Topic]
		switch {
		case !z.topic(opRead, t.Topic):
			rt.ErrorCode = kerr.TopicAuthorizationFailed.Code
		case ti == nil:
			rt.ErrorCode = kerr.UnknownTopicOrPartition.Code
		case !b.shareGroupHasOffsets(ctx, req.GroupID, t.Topic, ti.ID, len(ti.Replicas)):
			rt.TopicID = ti.ID
			rt.ErrorCode = kerr.UnknownTopicOrPartition.Code
			msg := "There is no offset information to delete."
			rt.ErrorMessage = &msg
		default:
			rt.TopicID = ti.ID
			for p := range ti.Replicas {
				if err := (coordPersister{b}).delete(ctx, sharePartKey{req.GroupID, ti.ID, int32(p)}); err != nil {
					rt.ErrorCode, rt.ErrorMessage = shareCoordCode(err), errMessage(err)
					break
				}
			}
			if rt.ErrorCode == 0 {
				if err := b.setShareGroupTopicLocked(ctx, req.GroupID, t.Topic, false); err != nil {
					b.log.Warn("forget share group topic", "group", req.GroupID, "topic", t.Topic, "err", err)
				}
			}
			b.forgetShareParts(req.GroupID, ti.ID)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// shareGroupHasOffsets reports whether the share group keeps offsets for
// the topic: one its members subscribed to or whose offsets were altered
// (kept in ShareGroupStatePartitionMetadata), or one with state for
// some partition at its share coordinator (a group whose records do not
// name it).
func (b *Broker) shareGroupHasOffsets(ctx context.Context, id, topic string, topicID [16]byte, partitions int) bool {
	if b.shareGroupHasTopic(id, topic) {
		return true
	}
	for p := 0; p < partitions; p++ {
		if _, _, ok, err := (coordPersister{b}).read(ctx, sharePartKey{id, topicID, int32(p)}, -1); err != nil || ok {
			return true // on error, try the delete, which reports it
		}
	}
	return false
}
