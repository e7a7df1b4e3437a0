package broker

// Fetching from the closest replica (KIP-392).
//
// A leader with replica.selector.class set to Kafka's
// RackAwareReplicaSelector answers a consumer's Fetch (v11+) that names a
// rack other than its own with PreferredReadReplica, the in-sync replica in
// that rack whose log is furthest ahead and reaches the fetch offset
// (replica.Partition.ReadReplicas, replica.SelectReadReplica), and no
// records; the consumer then fetches from that replica. Without a replica
// in its rack, or with the leader in it, the leader serves it as before.
//
// Any replica serves a consumer's Fetch v11+ (clients older than v11 never
// fetch from followers): a follower reads up to the high watermark it
// learned from its leader, or the last stable offset it computes from the
// transactions it replicated, so it never returns a record the leader has
// not committed. CurrentLeaderEpoch is checked against the epoch the
// follower follows: FENCED_LEADER_EPOCH for an older one, UNKNOWN_LEADER_EPOCH
// for a newer one. A follower does not redirect: the consumer asks the
// leader again when its metadata changes or the follower fails it.

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/cluster"
	"samsa/internal/config"
	"samsa/internal/replica"
	"samsa/internal/storage"
)

// followerReadable returns tp when this broker hosts it as a follower, for
// a consumer's fetch; otherwise err, the reason it is not led here.
func (b *Broker) followerReadable(tp storage.TopicPartition, err error) (*replica.Partition, error) {
	if !errors.Is(err, replica.ErrNotLeader) {
		return nil, err
	}
	if p := b.replicas.Get(tp); p != nil {
		return p, nil
	}
	return nil, err
}

// sendToReadReplica decides, for a consumer fetching p from this broker,
// whether another replica should serve it; if so it fills sp with that
// replica and p's offsets, and reports true.
func (b *Broker) sendToReadReplica(img *cluster.Image, p *replica.Partition, clientRack string, fetchOffset int64, sp *kmsg.FetchResponseTopicPartition) bool {
	if clientRack == "" || b.cfg.ReplicaSelectorClass != config.RackAwareReplicaSelector || !p.IsLeader() {
		return false
	}
	rack := func(id int32) (string, bool) {
		br, ok := img.Brokers[id]
		if !ok || br.ShuttingDown || br.Rack == nil {
			return "", false
		}
		return *br.Rack, true
	}
	to := replica.SelectReadReplica(clientRack, b.cfg.BrokerRack, p.ReadReplicas(fetchOffset), rack)
	if to < 0 {
		return false
	}
	sp.PreferredReadReplica = to
	sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = p.HighWatermark(), p.LastStableOffset(), p.LogStartOffset()
	return true
}
