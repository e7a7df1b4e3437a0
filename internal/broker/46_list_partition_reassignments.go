package broker

// ListPartitionReassignments: v0
//
// Lists the reassignments in progress (KIP-455) from this broker's image:
// every one for a null topic list, else those of the named partitions.
// Per partition: Replicas (the union of original and target replicas),
// AddingReplicas and RemovingReplicas. Named partitions that are not being
// reassigned, and unknown topics and partitions, are left out, as Kafka
// does.

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Broker) handleListPartitionReassignments(req *kmsg.ListPartitionReassignmentsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	var want map[string][]int32
	if req.Topics != nil {
		want = make(map[string][]int32, len(req.Topics))
		for _, rt := range req.Topics {
			want[rt.Topic] = append(want[rt.Topic], rt.Partitions...)
		}
	}
	var cur *kmsg.ListPartitionReassignmentsResponseTopic
	for _, r := range b.cluster.Image().Reassignments() {
		if want != nil && !slices.Contains(want[r.Topic], r.Partition) {
			continue
		}
		if cur == nil || cur.Topic != r.Topic {
			resp.Topics = append(resp.Topics, kmsg.NewListPartitionReassignmentsResponseTopic())
			cur = &resp.Topics[len(resp.Topics)-1]
			cur.Topic = r.Topic
		}
		sp := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
		sp.Partition = r.Partition
		sp.Replicas = nonNil(r.Replicas)
		sp.AddingReplicas = nonNil(r.AddingReplicas)
		sp.RemovingReplicas = nonNil(r.RemovingReplicas)
		cur.Partitions = append(cur.Partitions, sp)
	}
	return resp
}

// nonNil returns a copy of ids that is never nil (an empty array on the
// wire, not a null one).
func nonNil(ids []int32) []int32 {
	return append([]int32{}, ids...)
}
