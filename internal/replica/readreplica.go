package replica

import (
	"cmp"
	"slices"
)

// ReadReplica is a replica a consumer could fetch from instead of the
// leader (KIP-392): an in-sync follower and the offset its log is known
// to reach (its latest fetch offset).
type ReadReplica struct {
	ID        int32
	LogEndOff int64
}

// ReadReplicas returns, while this broker leads the partition, the
// in-sync followers whose logs reach fetchOffset, the furthest first.
// Reference: Kafka's ReplicaManager offers only in-sync replicas that
// hold the requested offset (KAFKA-14372), so a consumer is not sent to a
// follower that lags. It returns nil on a follower.
func (p *Partition) ReadReplicas(fetchOffset int64) []ReadReplica {
	p.roleMu.Lock()
	defer p.roleMu.Unlock()
	ls := p.role.leader
	if ls == nil {
		return nil
	}
	var out []ReadReplica
	for _, id := range ls.isr {
		if id == ls.self {
			continue
		}
		if f := ls.followers[id]; f != nil && f.fetchOffset >= fetchOffset {
			out = append(out, ReadReplica{ID: id, LogEndOff: f.fetchOffset})
		}
	}
	slices.SortFunc(out, func(a, b ReadReplica) int {
		if c := cmp.Compare(b.LogEndOff, a.LogEndOff); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return out
}

// SelectReadReplica is the rack-aware replica selector (Kafka's
// RackAwareReplicaSelector): a consumer in clientRack reads from the
// leader when the leader is in that rack or no candidate is, else from
// the first candidate (the furthest ahead) in that rack. rack gives a
// broker's rack, ok false when it has none or is not usable. It returns
// -1 for the leader.
func SelectReadReplica(clientRack, leaderRack string, candidates []ReadReplica, rack func(id int32) (string, bool)) int32 {
	if clientRack == "" || leaderRack == clientRack {
		return -1
	}
	for _, c := range candidates {
		if r, ok := rack(c.ID); ok && r == clientRack {
			return c.ID
		}
	}
	return -1
}
