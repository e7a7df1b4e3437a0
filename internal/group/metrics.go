package group

// Stats is a snapshot of a coordinator for metrics.
type Stats struct {
	// Groups counts the groups served, by state.
	Groups map[State]int
	// Rebalances counts the rebalances that ended since the coordinator
	// started.
	Rebalances int64
}

// CommittedOffset is one group's committed offset of one partition.
type CommittedOffset struct {
	Group     string
	Topic     string
	Partition int32
	Offset    int64
}

// Stats returns the groups by state and the rebalance count. It takes
// each group's lock in turn, so it waits for a group's record append in
// flight (at most offsets.commit.timeout.ms). The caller owns the map.
func (c *Coordinator) Stats() Stats {
	st := Stats{Groups: map[State]int{}, Rebalances: c.rebalances.Load()}
	for _, e := range c.snapshot() {
		e.mu.Lock()
		if !e.removed {
			st.Groups[e.g.state]++
		}
		e.mu.Unlock()
	}
	return st
}

// CommittedOffsets returns the committed offsets of every group served
// (transactional offsets pending their transaction are left out). It
// locks the groups as Stats does. The caller owns the slice.
func (c *Coordinator) CommittedOffsets() []CommittedOffset {
	var out []CommittedOffset
	for _, e := range c.snapshot() {
		e.mu.Lock()
		if !e.removed {
			for tp, o := range e.g.offsets {
				out = append(out, CommittedOffset{Group: e.g.id, Topic: tp.topic, Partition: tp.partition, Offset: o.Offset})
			}
		}
		e.mu.Unlock()
	}
	return out
}
