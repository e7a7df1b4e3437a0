// Package replica holds the partitions this broker hosts and replicates
// them: for each, its log, its producer state, its role (leader, follower
// or neither) with its leader epoch, and its high watermark.
//
// Roles come from the cluster metadata: the node's reconciler calls
// Manager.Ensure with each partition's PartitionInfo (replicas, leader, leader epoch, ISR,
// partition epoch) and then SyncFetchers.
//
//   - A leader appends client batches (Partition.Append, fenced by
//     leadership under the append lock), tracks its followers in a
//     LeaderState, and proposes ISR changes through the ISRWriter, a
//     compare-and-swap on the partition state. Its high watermark is the
//     minimum durable log end over the ISR; acks=all waits for it
//     (WaitCommitted, which also fails if the leader epoch changed), in
//     the delay queue (see Waiting).
//   - A follower is replicated by one fetcher goroutine per leader: first
//     it truncates to where its log agrees with the leader's
//     (OffsetForLeaderEpoch, KIP-101/KIP-279), then it fetches with its
//     replica id, appends the leader's batches as they are
//     (storage.Log.AppendReplica), replays them into its producer state,
//     and reports a fetch offset only once everything below it is fsynced.
//
// With a single broker every partition is led here with an ISR of one, and
// the high watermark is the durable end of the log.
//
// # Reading
//
// A Partition's log is its own: nothing outside this package reaches it,
// so every reader gets the rules of the replica layer. Read bounds a read
// by Isolation: ReadUncommitted below the high watermark,
// ReadCommitted below the last stable offset, ReadLogEnd (followers) below
// the log end; the ListOffsets lookups (EndOffset, OffsetForTimestamp,
// MaxTimestamp, LegacyOffsets) never name an offset past the same bound
// (Reference: Kafka Partition.fetchOffsetForTimestamp);
// EndOffsetForEpoch answers OffsetForLeaderEpoch; DeleteRecords checks
// leadership and the high watermark and deletes under the append lock, so
// no change of role comes between the check and the deletion. Read takes
// no lock and allocates nothing beyond the log's own read.
//
// # Transactions
//
// The partition's producer state (txn.State) tracks each producer's open
// transaction (Reference: KIP-98): a transactional batch opens it at its
// first offset, an end-transaction marker ends it. The leader writes
// markers with AppendMarker (for the transaction coordinator's
// WriteTxnMarkers) and coordinator batches, such as transactional offset
// commits, with AppendFromCoordinator; clients may not write control
// batches (ErrControlBatch). Followers and the load at startup replay
// markers the same way. An ABORT that ends a transaction is added to the
// .txnindex of the marker's segment (storage.Log.AppendAbortedTxn) with
// the last stable offset it leaves.
//
//	LastStableOffset = min(HW, first offset of the oldest open transaction)
//
// Consumers at read_committed read below it and get AbortedTxns for what
// they read. OngoingTxn tells whether a producer has a transaction open
// here. At load the producer state comes from the newest snapshot and a
// replay of the log after it; the .txnindex entries above the snapshot are
// dropped and re-added by that replay, and the .txnindex is fsynced
// (storage.Log.SyncAbortedTxns) before each snapshot is written.
//
// Terms: HW high watermark, LEO log end offset, LSO last stable offset,
// ISR in-sync replica set, epoch start offset (the leader's LEO when its
// epoch began).
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
// # Waiting
//
// Everything that waits for a partition's offsets waits in the Manager's
// delay queue (delayed.go; Kafka's purgatory): WaitCommitted, the
// broker's Fetch long-polls (Manager.Watch, or Manager.WatchEach when the
// waiter sums min_bytes itself) and the fetchers' wait for their own
// fsync. A DelayedOp watches one or more (partition, WaitKind) keys for
// an offset and may have a deadline:
//
//	WaitKind            offset              published by
//	------------------  ------------------  ---------------------------------
//	WaitDurable         durable offset      fsync completion (change hook)
//	WaitHighWatermark   high watermark      fsync completion on the leader,
//	                                        FollowerFetched, applyInfo, tick,
//	                                        the follower's fetched HW
//	WaitLastStable      last stable offset  the above, and the end of the
//	                                        oldest open transaction
//	WaitLogEnd          log end offset      an append (change hook)
//
// One key is per follower broker rather than per partition: a follower's
// parked fetch also watches FollowerNews, a count bumped by each append
// to a partition led here whose in-sync follower it is and which it has
// not fetched since this broker became leader (a new topic, a moved
// leadership). Such a fetch then answers at once, and for a second after
// news the follower's fetches park at most 10 ms, since it may start to
// follow the partition only after the append: otherwise the partition,
// and every acks=all produce to it, would wait for the follower's long-
// poll (replica.fetch.wait.max.ms, 500 ms) over the others.
//
// The log calls Partition.logChanged (storage.Log.SetChangeHook) after
// each change; the high watermark is stored by refreshHWLocked whenever
// its inputs move, so HighWatermark is a plain read.
//
// Invariants of the queue:
//
//	an operation completes exactly once (Satisfied, Changed, Expired or
//	Cancelled) and is then in no key's heap and not in the deadline heap
//	an event wakes only the watches its offset reached: O(log n) each,
//	an atomic load when the key has none
//	registering sees every offset stored before it: a watch already
//	reached completes at once
//	a change of leadership, leader epoch or followed leader, a failed or
//	closed log and Remove complete every operation on the partition as
//	Changed; deleted records (a higher log start) those waiting for its
//	high watermark or last stable offset
//	one timer goroutine (owned by the Manager) expires deadlines; at
//	Close every operation with a deadline expires
//
// Manager and Partition are safe for concurrent use. Lock order:
//
//	Partition.appendMu -> storage.Log locks -> Partition.roleMu ->
//	    watchSet.mu, delayQueue.mu (leaves, never held together)
//	Under roleMu only the log's atomic reads are called (LogEndOffset,
//	DurableOffset, DurableErr), so the change hook may take roleMu.
//	Manager.mu is taken alone (never across IO or another lock), except
//	that SyncFetchers and Remove take Partition.roleMu/appendMu after
//	releasing it.
//
// Partition.leader and leaderEpoch are written only by applyInfo (under
// appendMu and roleMu) and read anywhere. Goroutines: the Manager owns the
// ISR ticker, the delay queue's timer, the fetchers and the ISR writes
// (goFunc); Close stops them.
package replica
