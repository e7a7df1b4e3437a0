package replica

import "sync/atomic"

// Traffic counts a partition's client and replication traffic. The broker
// adds to it as it serves requests; the counters only grow, and start at
// zero when the partition is hosted (again). Safe for concurrent use.
type Traffic struct {
	// BytesIn and RecordsIn count what Produce requests appended here.
	BytesIn, RecordsIn atomic.Int64
	// ProduceRequests counts Produce requests that reached this
	// partition's topic and were counted on this partition (the broker
	// counts a request once per topic, on its first partition led here).
	ProduceRequests atomic.Int64
	// BytesOut and RecordsOut count what consumer Fetch responses carried
	// (RecordsOut in offsets: the fetched batches' offset span).
	BytesOut, RecordsOut atomic.Int64
	// FetchRequests counts consumer Fetch requests, as ProduceRequests.
	FetchRequests atomic.Int64
	// ReplicationBytesIn counts bytes a follower appended from its leader;
	// ReplicationBytesOut bytes a leader sent to followers.
	ReplicationBytesIn, ReplicationBytesOut atomic.Int64
}

// PartitionStats is a snapshot of a hosted partition for metrics.
type PartitionStats struct {
	Leader bool
	// Replicas is the size of the assignment; ISR and MinISR are the
	// leader's committed ISR size and min.insync.replicas (0 on a
	// follower).
	Replicas, ISR, MinISR int
	HighWatermark         int64
}

// UnderReplicated reports whether the partition leads with an ISR smaller
// than its replica set (Kafka's UnderReplicatedPartitions counts it).
func (s PartitionStats) UnderReplicated() bool { return s.Leader && s.ISR < s.Replicas }

// UnderMinISR reports whether the partition leads with an ISR smaller than
// min.insync.replicas: acks=all produces fail (Kafka's
// UnderMinIsrPartitionCount).
func (s PartitionStats) UnderMinISR() bool { return s.Leader && s.ISR < s.MinISR }

// Stats returns a snapshot of the partition's role. It takes the role
// lock briefly.
func (p *Partition) Stats() PartitionStats {
	p.roleMu.Lock()
	defer p.roleMu.Unlock()
	st := PartitionStats{Replicas: len(p.role.replicas), HighWatermark: p.HighWatermark()}
	if ls := p.role.leader; ls != nil {
		st.Leader = true
		st.ISR = len(ls.isr)
		st.MinISR = ls.cfg.MinInsyncReplicas
	}
	return st
}

// TruncatedOffsets returns how many offsets this broker's followers have
// removed from their logs to match their leaders since the Manager
// started: uncommitted tails after a leader change, and, after an
// unclean election, records that had been committed (acknowledged and
// readable) on the old leader.
func (m *Manager) TruncatedOffsets() int64 { return m.truncated.Load() }

// RepairedOffsets returns how many offsets followers removed from their
// logs at a corrupt stored batch, to fetch them again (repair.go).
func (m *Manager) RepairedOffsets() int64 { return m.repaired.Load() }

// ISRChanges returns how many ISR shrinks and expands this broker, as a
// leader, has written to the cluster metadata since the Manager started.
func (m *Manager) ISRChanges() (shrinks, expands int64) {
	return m.isrShrinks.Load(), m.isrExpands.Load()
}
