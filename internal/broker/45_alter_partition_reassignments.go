package broker

// AlterPartitionReassignments: v0-1
//
// * v1: AllowReplicationFactorChange (KIP-860): when false, a target whose
//   length differs from the partition's current replication factor gets
//   INVALID_REPLICATION_FACTOR; the response echoes the flag.
//
// Any broker answers (Kafka sends it to the controller). Per partition, a
// target replica list starts or replaces a reassignment (KIP-455) and a
// null list cancels the one in progress; cluster.ReassignPartition writes
// the topic's replica list and the partition state in one compare-and-swap
// transaction, deciding again from the newer image when it loses to a
// concurrent change. The controller finishes the reassignment once every
// adding replica is in the ISR, and brokers start or stop hosting the
// partition from the new image.
//
// Per-partition errors: UNKNOWN_TOPIC_OR_PARTITION; INVALID_REPLICA_ASSIGNMENT
// for an empty list, a duplicate, a broker that is neither registered nor
// already a replica, or a cancel that would leave no in-sync replica;
// NO_REASSIGNMENT_IN_PROGRESS for a cancel of a partition not being
// reassigned. Unlike Kafka, a broker that is down (not registered) is
// accepted only if it already is a replica of the partition: samsa's
// registrations go with the broker's session.

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/cluster"
)

func (b *Broker) handleAlterPartitionReassignments(ctx context.Context, req *kmsg.AlterPartitionAssignmentsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	allowRFChange := true
	if req.Version >= 1 {
		allowRFChange = req.AllowReplicationFactorChange
		resp.AllowReplicationFactorChange = allowRFChange
	}
	if req.TimeoutMillis > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(req.TimeoutMillis)*time.Millisecond)
		defer cancel()
	}
	for _, rt := range req.Topics {
		st := kmsg.NewAlterPartitionAssignmentsResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			sp.Partition = rp.Partition
			err := b.reassignPartition(ctx, rt.Topic, rp.Partition, rp.Replicas, allowRFChange)
			if err != nil {
				sp.ErrorCode, sp.ErrorMessage = errCode(err).Code, errMessage(err)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

// reassignPartition applies one partition's entry of the request. A nil
// target (the null array on the wire) cancels.
func (b *Broker) reassignPartition(ctx context.Context, topic string, p int32, target []int32, allowRFChange bool) error {
	if target != nil && !allowRFChange {
		img := b.cluster.Image()
		t := img.Topics[topic]
		if t == nil || p < 0 || int(p) >= len(t.Replicas) || int(p) >= len(t.Partitions) {
			return fmt.Errorf("%w: %s-%d", cluster.ErrUnknownPartition, topic, p)
		}
		// The replication factor is that of the original replicas, also
		// while a reassignment is in progress.
		rf := len(t.Replicas[p]) - len(t.Partitions[p].AddingReplicas)
		if len(target) != rf {
			return fmt.Errorf("%w: %s-%d has replication factor %d, the target %v has %d and AllowReplicationFactorChange is false",
				cluster.ErrInvalidReplicationFactor, topic, p, rf, target, len(target))
		}
	}
	return b.cluster.ReassignPartition(ctx, topic, p, target)
}
