package broker

// OffsetForLeaderEpoch: v0-4
//
// For each partition, the end offset of the requested leader epoch in the
// leader's log: the start offset of the first larger epoch in its leader
// epoch cache, or its log end offset when the requested epoch is its
// latest or its current one. A follower truncates to it before fetching
// (KIP-101, KIP-279); a consumer compares it with its position to detect
// truncation (KIP-320).
//
// * v0: EndOffset only (ErrorCode, Partition, EndOffset).
// * v1: LeaderEpoch in the response, the largest epoch <= the requested
//   one that the leader knows (KIP-279). An epoch below every cached one,
//   or above the leader's current one, gets UNDEFINED_EPOCH (-1) and
//   UNDEFINED_EPOCH_OFFSET (-1).
// * v2: CurrentLeaderEpoch in the request (KIP-320): FENCED_LEADER_EPOCH
//   when it is older than the leader's, UNKNOWN_LEADER_EPOCH when newer;
//   ThrottleMillis in the response (always 0).
// * v3: ReplicaID (KIP-392). Only the leader answers, except for the
//   debugging replica id -2, which any replica answers.
// * v4: flexible versions.
//
// Authorization (authz_apis.go) is Kafka's: CLUSTER_ACTION on the
// cluster, else DESCRIBE on each topic, whatever the replica id; a topic
// that fails gets TOPIC_AUTHORIZATION_FAILED.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/storage"
)

// debuggingReplicaID lets a tool ask any replica, not only the leader.
const debuggingReplicaID = -2

func (b *Broker) handleOffsetForLeaderEpoch(req *kmsg.OffsetForLeaderEpochRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	img := b.cluster.Image()
	for i := range req.Topics {
		rt := &req.Topics[i]
		st := kmsg.NewOffsetForLeaderEpochResponseTopic()
		st.Topic = rt.Topic
		t := img.Topics[rt.Topic]
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			sp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.LeaderEpoch, sp.EndOffset = -1, -1
			if t == nil || rp.Partition < 0 || int(rp.Partition) >= len(t.Replicas) {
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			tp := storage.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}
			p, err := b.replicas.Leader(tp)
			if err != nil && req.Version >= 3 && req.ReplicaID == debuggingReplicaID {
				if p = b.replicas.Get(tp); p != nil {
					err = nil
				}
			}
			if err != nil {
				sp.ErrorCode = errCode(err).Code
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			current := int32(-1)
			if req.Version >= 2 {
				current = rp.CurrentLeaderEpoch
			}
			if code := checkLeaderEpoch(p, current); code != 0 {
				sp.ErrorCode = code
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			sp.LeaderEpoch, sp.EndOffset = p.EndOffsetForEpoch(rp.LeaderEpoch)
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}
