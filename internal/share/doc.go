// Package share is KIP-932 share groups (queues) as deterministic state
// machines: no goroutines, no IO, no clock (every call that depends on
// time takes it). Neither type is safe for concurrent use; the broker
// serialises calls to each.
//
// # Share-partitions
//
// Partition is one share group's view of one topic partition, kept by the
// partition's leader:
//
//	      SPSO                                   SPEO
//	       v                                      v
//	... | 5 ACQ(a,2) | 6 ACK | 7 AVL(1) | 8 ARC | 9 ACQ(b,1) | 10 ... (never acquired)
//
// Records are AVAILABLE, ACQUIRED (by a member, until a lock deadline),
// ACKNOWLEDGED or ARCHIVED, each with its delivery count.
//
//  1. NextFetchOffset says where to read the log from.
//  2. Acquire takes the batches read (below the high watermark) and locks
//     their available records for a member, raising delivery counts.
//  3. Acknowledge applies a member's accept / release / reject / gap /
//     renew (ValidateAcks first); ExpireLocks and ReleaseMember release.
//  4. Snapshot is what to persist after Version moves; Restore rebuilds a
//     Partition from it (acquired records come back available, with their
//     delivery counts).
//
// Invariants: SPSO <= SPEO; the record at SPSO is available or acquired
// (acknowledged and archived ones at the front are dropped, moving SPSO);
// an accepted record never becomes available again; a record released or
// expired at the delivery count limit is archived; at most
// group.share.partition.max.record.locks records are in flight, plus the
// rest of a batch already started.
//
// # Membership
//
// Group is one share group's members, group epoch and assignment
// (SimpleAssign: every partition of a subscribed topic to at least one
// member, shared when members outnumber partitions). A change of members,
// subscriptions or partition counts bumps the epoch and reassigns at once:
// share groups do not revoke. Its __consumer_offsets records
// (GroupRecord, Kafka's ShareGroup* key versions 10-15) are what a change
// made: the caller changes a Clone, writes RecordsSince(the original),
// and keeps the clone once they are durable; a loader rebuilds the group
// with ApplyRecord and then Loaded.
//
// # Persisted state
//
// States is the share coordinator's map of share-partition snapshots,
// replayed from __share_group_state records (EncodeKey, EncodeValue; see
// records.go for the format), with leader-epoch fencing (CheckLeader) and
// state-epoch fencing (CheckStateEpoch) that a delete's record
// (DeleteRecord) keeps across a replay.
package share
