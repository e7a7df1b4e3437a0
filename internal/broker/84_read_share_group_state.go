package broker

// ReadShareGroupState: v0 (KIP-932), and InitializeShareGroupState (83),
// WriteShareGroupState (85), DeleteShareGroupState (86) and
// ReadShareGroupStateSummary (87), all v0: the share coordinator's RPCs,
// sent by partition leaders (and, in Kafka, the group coordinator) to the
// leader of the __share_group_state partition that maps the
// share-partition (share_coordinator.go). CLUSTER_ACTION on the cluster,
// as Kafka requires of inter-broker RPCs.
//
// Differences from Kafka: a share-partition with no state is answered
// with StartOffset -1 and no batches (Kafka answers its "uninitialized"
// state the same way in 4.1) and the state epoch its next state starts
// with. InitializeShareGroupState starts the state over at a state epoch
// of at least the request's and past the current one (StateEpoch -1:
// the next one), which fences writes of partition leaders that read the
// older state (FENCED_STATE_EPOCH); samsa's group coordinator sends it
// for AlterShareGroupOffsets. WriteShareGroupState v1 and
// ReadShareGroupStateSummary v1 are not served.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/server"
	"samsa/internal/share"
)

func (b *Broker) handleReadShareGroupState(ctx context.Context, c *server.Conn, req *kmsg.ReadShareGroupStateRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ReadShareGroupStateResponse)
	allowed := b.authzFor(c).cluster(opClusterAction)
	for _, t := range req.Topics {
		rt := kmsg.NewReadShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewReadShareGroupStateResponseTopicPartition()
			rp.Partition, rp.StartOffset = p.Partition, -1
			if !allowed {
				rp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			v, ok, err := b.shareCoordRead(ctx, share.StateKey{Group: req.GroupID, TopicID: t.TopicID, Partition: p.Partition}, p.LeaderEpoch)
			rp.ErrorCode = shareCoordCode(err)
			if err == nil {
				rp.StateEpoch = v.StateEpoch
			}
			if err == nil && ok {
				rp.StartOffset = v.StartOffset
				for _, sb := range v.Batches {
					x := kmsg.NewReadShareGroupStateResponseTopicPartitionStateBatch()
					x.FirstOffset, x.LastOffset, x.DeliveryState, x.DeliveryCount = sb.First, sb.Last, int8(sb.State), sb.DeliveryCount
					rp.StateBatches = append(rp.StateBatches, x)
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func (b *Broker) handleWriteShareGroupState(ctx context.Context, c *server.Conn, req *kmsg.WriteShareGroupStateRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.WriteShareGroupStateResponse)
	allowed := b.authzFor(c).cluster(opClusterAction)
	for _, t := range req.Topics {
		rt := kmsg.NewWriteShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewWriteShareGroupStateResponseTopicPartition()
			rp.Partition = p.Partition
			if !allowed {
				rp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			st := share.State{StartOffset: p.StartOffset}
			for _, sb := range p.StateBatches {
				st.Batches = append(st.Batches, share.StateBatch{First: sb.FirstOffset, Last: sb.LastOffset, State: share.RecordState(sb.DeliveryState), DeliveryCount: sb.DeliveryCount})
			}
			err := b.shareCoordWrite(ctx, share.StateKey{Group: req.GroupID, TopicID: t.TopicID, Partition: p.Partition}, p.LeaderEpoch, p.StateEpoch, st)
			rp.ErrorCode = shareCoordCode(err)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func (b *Broker) handleInitializeShareGroupState(ctx context.Context, c *server.Conn, req *kmsg.InitializeShareGroupStateRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.InitializeShareGroupStateResponse)
	allowed := b.authzFor(c).cluster(opClusterAction)
	for _, t := range req.Topics {
		rt := kmsg.NewInitializeShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewInitializeShareGroupStateResponseTopicPartition()
			rp.Partition = p.Partition
			if !allowed {
				rp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
			} else {
				err := b.shareCoordInit(ctx, share.StateKey{Group: req.GroupID, TopicID: t.TopicID, Partition: p.Partition}, p.StateEpoch, p.StartOffset)
				rp.ErrorCode = shareCoordCode(err)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func (b *Broker) handleDeleteShareGroupState(ctx context.Context, c *server.Conn, req *kmsg.DeleteShareGroupStateRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DeleteShareGroupStateResponse)
	allowed := b.authzFor(c).cluster(opClusterAction)
	for _, t := range req.Topics {
		rt := kmsg.NewDeleteShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewDeleteShareGroupStateResponseTopicPartition()
			rp.Partition = p.Partition
			if !allowed {
				rp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
			} else {
				rp.ErrorCode = shareCoordCode(b.shareCoordDelete(ctx, share.StateKey{Group: req.GroupID, TopicID: t.TopicID, Partition: p.Partition}))
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func (b *Broker) handleReadShareGroupStateSummary(ctx context.Context, c *server.Conn, req *kmsg.ReadShareGroupStateSummaryRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ReadShareGroupStateSummaryResponse)
	allowed := b.authzFor(c).cluster(opClusterAction)
	for _, t := range req.Topics {
		rt := kmsg.NewReadShareGroupStateSummaryResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewReadShareGroupStateSummaryResponseTopicPartition()
			rp.Partition, rp.StartOffset = p.Partition, -1
			if !allowed {
				rp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
			} else {
				v, ok, err := b.shareCoordRead(ctx, share.StateKey{Group: req.GroupID, TopicID: t.TopicID, Partition: p.Partition}, p.LeaderEpoch)
				rp.ErrorCode = shareCoordCode(err)
				if err == nil && ok {
					rp.StartOffset, rp.StateEpoch, rp.LeaderEpoch = v.StartOffset, v.StateEpoch, v.LeaderEpoch
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
