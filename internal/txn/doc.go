// Package txn keeps the idempotent producer state of a partition and the
// transaction coordinator's state of a transactional id. For a partition: for each
// producer id, its epoch and the last WindowSize batches it appended, so
// that retried batches are answered with their original offsets instead of
// being written twice, and gaps or fenced producers are refused, as Kafka
// does (Reference: KIP-98 idempotent producer, KIP-360 producer id
// recovery).
//
// State is a deterministic state machine: it starts no goroutines, reads no
// clock (times are passed in) and does no IO. Only the snapshot helpers
// (WriteSnapshot, LoadSnapshot, PruneSnapshots, DeleteSnapshotsAbove) touch
// files, through vfs.FS.
//
// Short names used inside the package: pid (producer id), seq (sequence
// number).
//
// # Transaction coordinator
//
// TxnMetadata is the coordinator's record of one transactional id, moved
// by pure transitions that take the time and return a new value or a
// sentinel error (Reference: KIP-98, KIP-360, KIP-890 part 2):
// InitProducerID, AddPartitions, EndTxn, CompleteEnd, AbortTimedOut and
// Expire. The caller persists the new value, writes the markers of a
// Prepare state and then calls CompleteEnd.
//
//	        InitProducerID
//	  +-------------------------------+
//	  v                               |
//	Empty --AddPartitions--> Ongoing --EndTxn commit--> PrepareCommit --CompleteEnd--> CompleteCommit
//	  |                      |  |                                                        |
//	  |                      |  +--EndTxn abort--> PrepareAbort --CompleteEnd--> CompleteAbort
//	  |                      |                        ^                                  |
//	  |    InitProducerID or timeout                  |                                  |
//	  |                      +--> PrepareEpochFence --+                                  |
//	  |                                                                                  |
//	  +------ Expire (also from CompleteCommit and CompleteAbort) --> Dead               |
//	Complete* --AddPartitions--> Ongoing; Complete* --InitProducerID--> Empty <----------+
//
// With EndTxn version 5 (transaction version 2) the epoch is bumped when a
// transaction ends, a retried end is recognised by the epoch before the
// bump, and Empty, CompleteCommit and CompleteAbort may go to PrepareAbort
// (an abort with no partitions). An epoch within one of the maximum moves
// the producer to a new producer id at epoch 0.
//
// # Coordinator runtime
//
// Coordinator (runtime.go) serves the transactional ids of the
// __transaction_state partitions the broker leads. The broker supplies a
// Log per partition and one MarkerWriter. Its duties, in order:
//
//  1. NewCoordinator(cfg) once; Close at shutdown (it waits for the timer
//     and marker goroutines).
//  2. Load(ctx, partition, leaderEpoch, log) when the broker becomes
//     leader of a partition, or its leader epoch changes; Unload when
//     leadership moves away.
//  3. Route InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn,
//     DescribeTransactions and ListTransactions to the methods of the same
//     names, and map the sentinels to Kafka's codes.
//
// Each record of __transaction_state is one id's TxnMetadata in Kafka's
// schema (EncodeKey, EncodeValue, DecodeRecord); Dead is a tombstone.
//
// Invariants: an id's metadata in memory is always the last value
// appended for it (persist, then install, under the id's lock); markers are
// written only for a Prepare state that is durable; CompleteCommit and
// CompleteAbort are written only after every partition's marker is.
//
// Lock order: Coordinator.mu is never held while taking an id's lock; an
// id's lock is held across Log.Append; no lock is held across
// MarkerWriter.WriteMarkers.
//
// # Usage
//
// The partition's append path, under its append lock, for each batch with
// ProducerID >= 0:
//
//  1. b := txn.BatchOf(rb); dup, err := state.Check(b).
//  2. err != nil: refuse the batch (the broker maps the sentinel to a Kafka
//     error code). dup != nil: do not append; answer with dup.FirstOffset
//     and no error.
//  3. Otherwise append the batch, then state.Update(b, first, last,
//     maxTimestamp, nowMs).
//
// A batch a coordinator writes (no sequence) goes through CheckCoordinator
// instead of Check. For an end-transaction marker m (MarkerOf): err :=
// state.CheckMarker(m); if nil, append the marker, then c, ok :=
// state.ApplyMarker(m, offset, nowMs); ok with c.Aborted means an aborted
// transaction to index.
//
// Recovery:
//
//  1. Recover the log; then s, off, ok, err := LoadSnapshot(fs, dir, leo).
//  2. Start from s (or NewState() if !ok, off = log start) and Replay every
//     batch with a producer id of the log at or above off, and ApplyMarker
//     every end-transaction marker.
//  3. Periodically (on segment roll) WriteSnapshot(fs, dir, leo, state)
//     and PruneSnapshots; call Expire with producer.id.expiration.ms and
//     the log start offset.
//
// On truncation to offset T: TruncateTo(T) and DeleteSnapshotsAbove(T), or
// reload from LoadSnapshot(fs, dir, T) and replay.
//
// # Transactions
//
// A transactional batch opens its producer's transaction at its first
// offset when none is open (Kafka's currentTxnFirstOffset); a COMMIT or
// ABORT marker ends it (CheckMarker on the leader, then ApplyMarker, which
// returns the CompletedTxn). FirstUnstableOffset, the first offset of the
// oldest open transaction, bounds the partition's last stable offset. A
// producer with an open transaction never expires.
//
// # Invariants
//
//   - A producer has at most WindowSize batches, oldest first, all from its
//     current epoch; their offsets increase.
//   - Within an epoch, Check accepts only the sequence after the newest
//     remembered one (wrapping MaxInt32 to 0); a new epoch or an unknown
//     producer must start at 0.
//   - A snapshot named N holds the state with every batch below offset N
//     applied and nothing at or above it.
//
// # Snapshot file
//
// Named "%020d.snapshot" after its offset, in the partition directory,
// written to "<name>.tmp", synced, renamed, and the directory synced. All
// integers are big endian.
//
//	offset  size  field
//	0       4     magic          0x53505344 ("SPSD")
//	4       2     version        2 (version 1, without the two
//	                             transaction fields below, is still read)
//	6       4     crc            CRC-32C (Castagnoli) of bytes [10, end)
//	10      4     count          number of producer entries
//	14      ...   entries, sorted by producer id, strictly increasing
//
// Producer entry (31 bytes + 32 per batch):
//
//	offset  size  field
//	0       8     producerId             >= 0
//	8       2     producerEpoch          >= 0
//	10      8     lastUpdateMs           broker wall clock of the last append
//	18      4     coordinatorEpoch       of the last marker, -1 if none
//	22      8     currentTxnFirstOffset  first offset of the open transaction, -1 if none
//	30      1     batchCount             0..5 (WindowSize)
//	31      32*n  batches, oldest first
//
// Batch (32 bytes):
//
//	offset  size  field
//	0       4     firstSeq
//	4       4     lastSeq
//	8       8     firstOffset
//	16      8     lastOffset     >= firstOffset, above the previous batch's
//	24      8     timestamp      max timestamp or LogAppendTime
//
// Any violation (length, magic, version, CRC, counts, ordering, trailing
// bytes) makes UnmarshalSnapshot fail with ErrCorruptSnapshot.
package txn
