// Package group is the consumer group coordinator: Kafka's classic group
// protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup), the KIP-848
// consumer protocol (ConsumerGroupHeartbeat), committed offsets
// (OffsetCommit, OffsetFetch, OffsetDelete), DescribeGroups, ListGroups and
// DeleteGroups, persisted in the __consumer_offsets partitions in Kafka's
// own record schemas so that Kafka tooling can read the topic.
//
// # Layers
//
// Group is a deterministic state machine for one group: no goroutines, no
// IO, no clock. Every call takes the time and returns Effects (answers for
// parked JoinGroup/SyncGroup calls, and whether the group metadata must be
// stored before they go out). Deadline/Tick drive its timers.
//
// Coordinator is the runtime: it owns the groups of the partitions it has
// loaded, parks blocking calls, persists through Log (which the broker
// implements over its replica of the partition), and runs one timer
// goroutine for sessions, rebalance timeouts, the initial rebalance delay
// and offset expiry.
//
// # Use
//
//  1. NewCoordinator(ConfigFromBroker(cfg)).
//  2. When this broker leads __consumer_offsets-N: Load(ctx, N, log).
//     Until it returns, calls for its groups get ErrCoordinatorLoadInProgress.
//  3. When it stops leading N: Unload(N); waiting calls get ErrNotCoordinator.
//  4. Translate requests into calls; map the sentinel errors to Kafka codes.
//  5. When a COMMIT or ABORT marker of a producer is durable in a loaded
//     partition: CompleteTxn(ctx, N, producerID, commit).
//  6. Close on shutdown.
//
// # States
//
//	              join (initial delay)
//	+-------+ ------------------------> +--------------------+
//	| Empty |                           | PreparingRebalance | <--+
//	+-------+ <------------------------ +--------------------+    |
//	  |        all members gone at join end   |  all joined or     |
//	  |                                       |  rebalance timeout |
//	  |                                       v                    |
//	  |                              +---------------------+       |
//	  |                              | CompletingRebalance | ------+
//	  |                              +---------------------+ join with new
//	  |                                       |  leader's   metadata, leave,
//	  |                                       |  SyncGroup  session expiry,
//	  |                                       v             sync timeout
//	  |                                 +--------+                 |
//	  |                                 | Stable | ----------------+
//	  |                                 +--------+  join (leader or new
//	  |                                              metadata), leave, expiry
//	  v     DeleteGroups / all offsets expired
//	+------+
//	| Dead |   (removed from the coordinator)
//	+------+
//
// A static member (group.instance.id, KIP-345) rejoining a Stable group
// with a new member id takes over the old id's place without a rebalance
// unless the selected protocol would change; the old id is fenced
// (ErrFencedInstanceID). Dynamic members that did not rejoin by the end of
// the join phase are removed; static ones stay until their session ends.
// A first join without member id with RequireKnownMemberID (v4+, KIP-394)
// gets ErrMemberIDRequired and the id, kept pending for a session timeout.
//
// # Records (__consumer_offsets)
//
// Keys and values are kmsg's encodings of Kafka's schemas, all big endian:
//
//	offset commit key (version 1)        offset commit value (version 3)
//	+-------+-------+-------+-----------+  +-------+--------+-------+----------+-----------+
//	| int16 | str16 | str16 | int32     |  | int16 | int64  | int32 | str16    | int64     |
//	| 1     | group | topic | partition |  | 3     | offset | epoch | metadata | commit ms |
//	+-------+-------+-------+-----------+  +-------+--------+-------+----------+-----------+
//
//	group metadata key (version 2)   group metadata value (version 3)
//	+-------+-------+                +-------+---------------+-------+------------+----------+------------+---------+
//	| int16 | str16 |                | int16 | str16         | int32 | nstr16     | nstr16   | int64      | members |
//	| 2     | group |                | 3     | protocol type | gen   | protocol   | leader   | state ms   | [...]   |
//	+-------+-------+                +-------+---------------+-------+------------+----------+------------+---------+
//
//	member: str16 member id, nstr16 instance id, str16 client id,
//	        str16 client host, int32 rebalance timeout ms,
//	        int32 session timeout ms, bytes32 subscription, bytes32 assignment
//
// A nil value is a tombstone: it deletes an offset or a group. Offsets are
// written on commit; the group metadata after each rebalance completes
// (the leader's SyncGroup, before any member learns its assignment), when
// a static member replaces its id, and when the group becomes Empty;
// tombstones on OffsetDelete, DeleteGroups and offset expiry. Loading
// replays the partition: the last record per key wins. A loaded group
// with members is Stable and its members' sessions start at load time.
//
// # Transactional offsets (KIP-98, KIP-447)
//
// TxnOffsetCommit writes its offset records as one transactional batch of
// the producer (producer id and epoch, base sequence -1, the
// transactional attribute; Log.AppendTxn), in the same schemas as plain
// commits. Their offsets are pending for that producer: OffsetFetch does
// not return them, and answers ErrUnstableOffsetCommit for their
// partitions when the request asks for stable offsets (RequireStable,
// KIP-447), so that a consumer taking over the partitions waits for the
// transaction to end. The producer's COMMIT marker in the partition makes
// them committed, its ABORT marker drops them, each only the offsets
// whose records are before it in the log (as a reload replays them), also
// when the marker is written while the TxnOffsetCommit's append still
// waits for the high watermark:
//
//	TxnOffsetCommit(pid)        plain OffsetCommit
//	        |                          |
//	        v                          v
//	  pending[pid][tp] --COMMIT--> offsets[tp]   (only if its record is
//	        |                                      later in the log than
//	      ABORT --> dropped                        the committed one's)
//
// Every offset keeps the log offset of its record (Offset.RecordOffset):
// a plain commit made after the TxnOffsetCommit wins over the
// transaction's commit, so that the result does not depend on whether the
// coordinator learnt the marker live or replayed it. A tombstone
// (OffsetDelete, DeleteGroups) drops the partition's pending offsets too;
// an offset that a transaction is about to replace does not expire, and a
// group with an open transaction is not removed by expiry.
//
// Loading replays the same rules: the records of a transactional batch
// are pending for its producer, a marker (Entry.Marker) commits or drops
// them, a marker of a producer with nothing pending is ignored, and the
// transactions still open at the end stay pending. A coordinator that
// loads the partition after a crash therefore has exactly the committed
// offsets and the open transactions' pending ones.
//
// A TxnOffsetCommit is checked against the group as Kafka's classic group
// checks a transactional commit (ValidateTxnCommit): the member,
// instance and generation when the request names them (v3+), but not the
// group's state. Kafka 3.6+ coordinators also ask the transaction
// coordinator to confirm that the partition is in the producer's
// transaction (KIP-890); this one does not.
//
// # Offsets expiry (Kafka 2.1+, KIP-211)
//
// Every offsets.retention.check.interval.ms: an Empty group's offsets
// expire offsets.retention.minutes after the group became Empty; a Stable
// consumer group's offsets of topics it no longer subscribes to, after
// their commit; a group of simple consumers' (no protocol type) after
// their commit; a KIP-848 consumer group's, after their commit, except
// those of the topics it subscribes to (Kafka's rule for consumer
// groups). An Empty group left without offsets becomes Dead.
//
// # Consumer groups (KIP-848)
//
// ConsumerGroup is the state machine of a group of the consumer protocol
// (ConsumerGroupHeartbeat). Like Group it has no goroutines, IO or clock;
// a call returns a Change whose Records the runtime writes before it
// calls Apply, and loading applies the replayed records one by one
// (ApplyRecord), so the runtime and the loader share one code path.
//
//	member heartbeat
//	  1. member metadata changed?      -> member metadata record
//	     subscription or its topics'
//	     partitions changed?           -> partition metadata, group epoch + 1
//	  2. group epoch > target epoch?   -> target assignment (assignor),
//	                                      target member records, target epoch
//	  3. reconcile the member:
//	     Stable at an older epoch, or the revocation done:
//	       keep current ∩ target; revoke current - target
//	         (UnrevokedPartitions, same epoch, until the member's owned
//	          list no longer has them)
//	       else move to the target epoch, add the target's partitions no
//	         other member owns (UnreleasedPartitions while some are still
//	         owned, else Stable)            -> current assignment record
//
// Invariant: a partition is owned (assigned or pending revocation) by at
// most one member; CheckInvariants verifies it. Epoch -1 removes a member
// (tombstones, group epoch + 1); -2 keeps a static member's place and
// assignment until its session ends, and a new member id with the same
// group.instance.id takes them over without a new epoch. Sessions
// (group.consumer.session.timeout.ms) and revocations (the member's
// rebalance timeout) that expire fence the member the same way.
//
// Records, in Kafka's schemas (key version = record type; values are
// version 0, flexible):
//
//	key  record                         value fields
//	3    ConsumerGroupMetadata          group epoch
//	4    ConsumerGroupPartitionMetadata subscribed topics: id, name, partitions
//	5    ConsumerGroupMemberMetadata    instance, rack, client id/host,
//	                                    topic names, regex, rebalance timeout,
//	                                    server assignor
//	6    ConsumerGroupTargetAssignmentMetadata  target epoch
//	7    ConsumerGroupTargetAssignmentMember    partitions by topic id
//	8    ConsumerGroupCurrentMemberAssignment   epoch, previous epoch, state,
//	                                    assigned, pending revocation
//
// Keys 5, 7 and 8 carry the member id after the group id. Deleting a group
// writes tombstones for all of them, the group epoch last.
//
// Key 5's value carries, for a classic member, Kafka's tagged field 0
// (ClassicMemberMetadata: session timeout, the JoinGroup's protocols).
//
// The coordinator keeps a consumer group in the same entry as its offsets
// (entry.cg next to entry.g). An empty group of either protocol is
// replaced (its records deleted) and keeps its offsets.
//
// # Migration (KIP-848 online upgrade and downgrade)
//
// group.consumer.migration.policy (bidirectional, upgrade, downgrade,
// disabled) decides whether a group with members changes protocol:
//
//	classic group, protocol type "consumer"
//	   |  ConsumerGroupHeartbeat epoch 0 (upgrade allowed, members <=
//	   |  group.consumer.max.size): every member becomes a classic member
//	   v  at epoch = generation, Stable, target = its assignment
//	consumer group with classic members
//	   |  the last consumer-protocol member leaves or is fenced
//	   |  (downgrade allowed, the others <= group.max.size): members keep
//	   v  their target as assignment, generation = group epoch
//	classic group, PreparingRebalance
//
// A classic member of a consumer group (ClassicJoin, ClassicSync,
// ClassicHeartbeat, ClassicLeave; consumer_classic.go) is a member like
// the others for the assignor and reconciliation: its JoinGroup carries
// its subscription and owned partitions (the consumer protocol metadata)
// and is answered at once with its member epoch as generation; SyncGroup
// returns its assigned partitions (not those it must revoke); Heartbeat
// answers ErrRebalanceInProgress when it must rejoin (a newer group
// epoch, partitions to revoke, partitions it waits for now free), after
// which it must join within its rebalance timeout, and sync within it
// after a join, or it is fenced; its session is its JoinGroup's. A
// ConsumerGroupHeartbeat naming a classic member's id is checked against
// the member's epoch like any (ErrFencedMemberEpoch, epoch 0 included
// unless the previous epoch was 0 with a subset of the assignment); one
// that passes turns it into a consumer-protocol member with its
// assignment, and its classic SyncGroup and Heartbeat then get
// ErrUnknownMemberID, as in Kafka (testdata/migrate/classic_member_id.txt).
//
// Records: an upgrade writes, in one append, the classic metadata
// tombstone, the new group's records (member metadata, group epoch,
// target members, target epoch, current assignments) and those of the
// heartbeat that caused it; a downgrade writes the consumer group's
// tombstones (Delete) and the classic group metadata. Replay keeps the
// form whose group record (classic metadata or group epoch) came last, so
// a coordinator loading the partition after a conversion has the new
// form. Offsets are records of their own and are kept. Without the
// policy's consent a heartbeat of a classic group with members is
// ErrGroupIDNotFound, and a consumer group stays one when its last
// consumer-protocol member leaves; classic members may join a consumer
// group with members under any policy, as in Kafka.
//
// # Concurrency
//
// Coordinator is safe for concurrent use. Coordinator.mu guards the maps
// of partitions and groups; each group has its own mutex (entry.mu) held
// while its state changes and across the Log.Append (or AppendTxn) of its
// records, so a marker's CompleteTxn, which takes each group's mu in
// turn, sees a TxnOffsetCommit either not started or done.
// Lock order: the two are never held together (an entry is found under
// Coordinator.mu, which is released before entry.mu is taken).
// Coordinator.txns, the index of open transactions by producer, is a
// leaf: Coordinator.mu -> txns and entry.mu -> txns.
//
// The coordinator owns one goroutine, the timer goroutine, started by
// NewCoordinator through goAttach. Close cancels the coordinator's lifetime
// context (stop asks) and waits for the goroutine to exit. Every Log.Append
// runs under a context that Close cancels and that ends after
// offsets.commit.timeout.ms, so a log that cannot commit (a stalled ISR)
// holds a group's mu, and the timer goroutine, for at most that long, and
// never holds up Close.
package group
