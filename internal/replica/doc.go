// Package replica holds the partitions this broker hosts: for each, its log,
// its leader epoch and its high watermark.
//
// A single broker is the leader of every partition it hosts and its ISR is
// itself, so the high watermark is the offset below which the log is durable
// (fsynced, under the default flush policy) or, in page-cache mode, the log
// end offset. Replication across brokers extends this type without changing
// what the broker package sees: Partition.HighWatermark, Partition.Log and
// the leader epoch.
//
// Terms: HW high watermark, LEO log end offset, ISR in-sync replica set.
//
// # Replication
//
// LeaderState is the leader side of Kafka's ISR replication for one
// partition, as a deterministic state machine (no IO, no goroutines, times
// passed in). The caller:
//
//  1. On becoming leader at a new leader epoch, makes a NewLeaderState with
//     the partition state it read (replicas, ISR, partition epoch), its log
//     end offset (the epoch's start offset) and high watermark.
//  2. After each group-commit fsync of the leader's log, calls LeaderDurable.
//  3. On each follower fetch that passed the leader-epoch check (KIP-320),
//     calls FollowerFetch with the fetch offset (the follower's durable end).
//  4. Calls Tick periodically (a fraction of replica.lag.time.max.ms).
//  5. Writes any returned ISRChange with compare-and-swap at its
//     PartitionEpoch and calls ISRCommitted with what the partition state
//     then holds, or ISRChangeAborted if the write failed unanswered.
//  6. Before an acks=all append calls CheckAppend, and completes the produce
//     when AppendAcked says so.
//
// Invariants it keeps:
//
//	HW = max(HW, min(leader durable offset, fetch offset of each follower
//	     in the maximal ISR))   only while |committed ISR| >= min.insync.replicas
//	HW never decreases; a follower that has not fetched this epoch holds it
//	the leader is never proposed out of the ISR
//	at most one ISR change is in flight; it is proposed at the partition
//	epoch last committed, so a stale leader's change fails its CAS
//	a follower joins only at fetch offset >= HW and >= the epoch start offset
//
//	term           Kafka name                         rule
//	-------------  ---------------------------------  ----------------------
//	caught up      lastCaughtUpTimeMs                 fetch >= LEO now, or
//	                                                  >= LEO at previous fetch
//	out of sync    replica.lag.time.max.ms            now - caught up > max
//	maximal ISR    committed ISR + pending expansion  KIP-497
//	strict min ISR min.insync.replicas                KIP-966
//
// sim_test.go drives LeaderState in a deterministic simulation of three
// replicas, a CAS controller and a reordering network with crashes and
// partitions, checking the invariants above plus leader-epoch fencing and
// OffsetForLeaderEpoch truncation (KIP-101, KIP-279) after every step:
//
//	go test ./internal/replica -run Sim -sim.seeds=100000
//	go test ./internal/replica -run Sim -sim.seed=S -v   (one seed, with its trace)
//
// Manager is safe for concurrent use. Lock order: Manager.mu -> storage.
package replica
