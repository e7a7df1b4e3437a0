// Package storage is samsa's partition log: segment files in Kafka's on-disk
// format, their sparse offset and time indexes, append, read, truncation,
// rolling, retention, group-committed fsync and crash recovery.
//
// # Use
//
//  1. OpenManager(ManagerConfig{FS, Dir, ...}) opens one log dir, recovers
//     every partition found in it and starts the flusher and the retention
//     loop.
//  2. Manager.Create(tp, topicID, cfg) opens or creates a partition's log.
//  3. Log.Append(batch, leaderEpoch, logAppendTime, nowMs) writes a batch
//     that record.Batch.Validate accepted; Log.WaitDurable(ctx, lastOffset+1)
//     waits for the group-committed fsync before acknowledging.
//  4. Log.Read(offset, maxBytes, highWatermark, minOneBatch) returns file
//     regions of whole batches, readable after Read returns.
//     A follower appends what it fetched with Log.AppendReplica(batches),
//     which keeps the leader's offsets, epochs and bytes, and truncates to
//     the divergence point found with Log.EndOffsetForEpoch (KIP-101) by
//     Log.Truncate.
//  5. After appending an ABORT marker that ended a transaction, the
//     partition adds it with Log.AppendAbortedTxn; Fetch at read_committed
//     asks Log.CollectAbortedTxns(start, end) (see "Aborted transactions").
//  6. Manager.Close() flushes, checkpoints, writes the clean-shutdown marker
//     and stops everything. It is idempotent.
//
// A broker with several log dirs (log.dirs, KIP-112) opens them with
// OpenLogDirs, one Manager each, opened at once; LogDirs.Create finds a
// partition in the dir that holds it or puts a new one in the online dir
// with the fewest partitions, and a partition found in two dirs fails the
// open (ErrDuplicateLog). A failed write or sync takes only its own dir
// offline (Manager.OfflineNotify); its logs then refuse appends and reads
// with ErrLogDirOffline while the other dirs serve.
//
// # Directory layout
//
//	<dir>/
//	  .kafka_cleanshutdown               written by Close, removed at open
//	  recovery-point-offset-checkpoint   per partition: all below is fsynced
//	  log-start-offset-checkpoint        per partition: first readable offset
//	  cleaner-offset-checkpoint          per compacted partition: cleaned below
//	  <topic>-<partition>/
//	    partition.metadata               "version: 0\ntopic_id: <base64url uuid>\n"
//	    leader-epoch-checkpoint          leader epoch cache (below)
//	    00000000000000000000.log         batches, back to back
//	    00000000000000000000.index       sparse offset index
//	    00000000000000000000.timeindex   sparse time index
//	    00000000000000000000.txnindex    aborted transactions (format below); only
//	                                     segments holding an ABORT marker have one
//	    00000000000000001234.log         next segment, named by base offset
//	    ...
//	    *.deleted                        segments awaiting file.delete.delay.ms
//	    *.cleaned, *.swap                a cleaned segment being swapped in
//	  <topic>-<partition>.<hex>-delete/  a deleted partition being removed
//
// # File formats (all integers big endian)
//
// A .log file holds record batches (magic 2) exactly as the producer sent
// them; Append patches baseOffset and partitionLeaderEpoch, which the CRC
// does not cover, and with LogAppendTime the attributes and maxTimestamp
// (then the CRC is recomputed).
//
//	.index entry (8 bytes)
//	+--------------------+------------------+
//	| relative offset i32| file position i32|
//	+--------------------+------------------+
//	relative offset = last offset of the batch at that position - base offset
//
//	.timeindex entry (12 bytes)
//	+--------------+--------------------+
//	| timestamp i64| relative offset i32|
//	+--------------+--------------------+
//	timestamp = largest timestamp in the segment up to that offset
//
//	.txnindex entry (34 bytes), one per ABORT marker in the segment
//	+-------------+-----------------+------------------+-----------------+------------------------+
//	| version i16 | producer id i64 | first offset i64 | last offset i64 | last stable offset i64 |
//	+-------------+-----------------+------------------+-----------------+------------------------+
//	version = 0; first offset = the transaction's first record; last offset =
//	the ABORT marker; entries in strictly increasing last offset. Fetch at
//	read_committed returns the entries with last offset >= fetch offset and
//	first offset < upper bound. A torn tail entry is dropped on decode; a bad
//	entry ends the index there.
//
//	checkpoint file (text)
//	0                       version
//	<n>                     number of entries
//	<topic> <partition> <offset>   n lines
//
//	leader-epoch-checkpoint (text)
//	0                       version
//	<n>                     number of entries
//	<epoch> <startOffset>   n lines, epochs increasing
//
// Both text formats share one parser, which checks the count against the
// file's length before allocating. A checkpoint that does not parse is
// treated as missing: the recovery point one forces a full recovery scan,
// the leader epoch one is rebuilt from the batches.
//
// The leader epoch cache (Kafka's LeaderEpochFileCache) maps each leader
// epoch to the first offset written under it. Append and AppendReplica add
// an entry when a batch carries an epoch larger than the latest one, and
// AssignLeaderEpoch adds one at the log end for a new leader; each change
// rewrites the file (tmp, fsync, rename, dir fsync) before the batch is
// written, so the file is never behind what was acknowledged. Truncate
// removes entries starting at or after the new log end (all of them when
// the log restarts empty); a new log start offset (DeleteRecords,
// retention) drops the entries wholly below it and moves the start of the
// one covering it. At open the file is trimmed to [log start, log end) and
// rebuilt from the batches' partitionLeaderEpoch when it is missing,
// unreadable, or older than the last batch's epoch.
//
// An index entry is added before a batch when more than index.interval.bytes
// were written since the last entry, so a segment's first batch never has
// one (Kafka's rule). Time index entries are added with offset index entries
// when the largest timestamp grew, and once more when a segment is rolled.
// Both indexes are kept in memory and appended to their files; their files
// are checked at open (whole entries, strictly increasing, inside the .log
// file, last entry pointing at a batch that ends at that offset) and rebuilt
// from the .log when they fail the check.
//
// # Open files
//
// A segment keeps its .log open for its life (Read hands out regions of
// it). Its index files are opened only to be written: new entries wait in
// memory and are written 4 KiB at a time, each write opening and closing
// the file, and what is pending is written, fsynced and closed when the
// flusher syncs the segment after a roll, at Close, and by a retention
// pass that finds the log end where the previous pass left it (Kafka's
// lazy indexes and index cache do the same). Loading reads them and
// closes them. A partition thus holds one descriptor per segment, idle or
// busy, and a write of index entries that finds no descriptor free waits
// for a later one (indexFile).
//
// # Aborted transactions
//
// A segment's .txnindex lists the transactions aborted by an ABORT marker
// in that segment (Reference: Kafka TransactionIndex). The storage does not
// read markers itself: the partition (internal/replica), which tracks
// transactions in its producer state, calls AppendAbortedTxn after it
// appends the marker, with the last stable offset once that transaction
// ended. The file is created with its first entry and written at once;
// it is fsynced with a rolled segment, and by SyncAbortedTxns, which the
// partition calls before each producer snapshot. Entries above the newest
// snapshot need no fsync: at load the partition drops them
// (TruncateAbortedTxnsFrom) and adds them again while it replays the
// markers after the snapshot, so a crash never loses or doubles one.
//
// CollectAbortedTxns(start, end) walks the segments from the one holding
// start, gathering the entries with marker >= start and first offset <
// end, and stops at the first entry whose last stable offset is >= end
// (no transaction that begins below end can end later). Truncate cuts the
// entries whose marker it removes; a segment's .txnindex is deleted with
// it (retention, DeleteRecords); a cleaned segment gets the entries of the
// segments it replaces, written and fsynced as .txnindex.cleaned and
// swapped with the .log (a recovered swap renames it into place instead of
// rebuilding it, as the other indexes are). At open a torn tail or a bad
// entry is cut off the file and entries past the segment's end are
// dropped.
//
// # Checks on read
//
// Read checks every batch it returns before it returns it: the batch
// lies within the segment's published size, has magic 2, starts after
// the previous batch of the segment and not before the segment's base
// offset, ends before the next segment's base offset, and its CRC-32C
// (over attributes..end, read through a pooled 64 KiB buffer, so a bad
// length costs no allocation) matches. A bad header in a sealed segment
// (a length running past its end) is damage too; in the active segment
// Read never looks past the size Append published. The good batches
// before a bad one are returned; a read that starts at a bad one fails
// with a *CorruptBatchError, which wraps ErrCorrupt and says where the
// batch is and to which offset a log must be truncated to drop it.
// Manager.CorruptBatches counts them. Batches a read skips on its way to
// the requested offset, and lookups by timestamp, are not CRC-checked.
//
// # Invariants
//
//   - LogStartOffset <= LogEndOffset and DurableOffset <= LogEndOffset.
//     LogStartOffset may pass DurableOffset (DeleteRecords).
//   - Durable mode (flush.messages <= 1): DurableOffset only covers bytes a
//     completed fsync covered. A failed write or fsync takes the whole log
//     dir offline (ErrLogDirOffline) and nothing more is acknowledged.
//   - segments are sorted by base offset and never overlap; only the last
//     (active) one is appended to; retention never deletes it.
//   - Epoch cache entries have increasing epochs and non-decreasing start
//     offsets in [LogStartOffset, LogEndOffset].
//   - Regions returned by Read stay readable for file.delete.delay.ms after
//     their segment is deleted (files are renamed to .deleted and closed
//     later), and until Close.
//
// # Compaction (cleanup.policy=compact)
//
// The cleaner goroutine (log.cleaner.enable, every log.cleaner.backoff.ms
// when idle; Manager.RunCleaner forces a pass) cleans a log when its dirty
// ratio, bytes at or after the cleaner checkpoint over all cleanable bytes,
// reaches min.cleanable.dirty.ratio, or when its first dirty segment is
// older than max.compaction.lag.ms. Cleanable segments are the ones before
// the active segment that lie entirely below the partition's last stable
// offset (the smaller of the high watermark and the first offset of the
// oldest open transaction, which the partition gives through
// Log.SetLastStableOffsetFunc; a log without it is not cleaned) and whose
// largest timestamp is older than min.compaction.lag.ms. A cleaning:
//
//  1. maps each key of the dirty segments to its latest offset, leaving
//     out the records of aborted transactions (known from the .txnindex)
//     and control records;
//  2. rewrites all cleanable segments, in groups that fit segment.bytes,
//     walking their batches in offset order: it drops the records of
//     aborted transactions, a record when a later offset of its key is in
//     the map (committed transactional records too), and tombstones and
//     markers past their delete horizon (below). Surviving records keep
//     their offsets under their batch's original header (producer fields,
//     codec); the CRC is recomputed. A batch left empty goes, except the
//     last data batch of each producer (its last control batch if it has
//     none there) and the last batch of each group, which stay as empty
//     headers, so producer state survives and a cleaned segment ends at
//     the same offset as its sources;
//  3. swaps each group in: .cleaned files fsynced, renamed to .swap (log
//     last), directory fsynced (the commit point), old segments renamed to
//     .deleted, .swap renamed to the final names, directory fsynced, then
//     the in-memory segment list is replaced (old files are removed after
//     file.delete.delay.ms, so earlier Reads stay valid);
//  4. writes cleaner-offset-checkpoint.
//
// Transactions follow Kafka's cleaner (Reference: KIP-98, Kafka
// CleanedTransactionMetadata). The walk knows the aborted transactions
// that overlap the cleanable segments from the .txnindex: a transactional
// batch of a producer inside one of them is aborted. A COMMIT or ABORT
// marker stays while batches of its transaction are still in the log
// before it (an empty one counts, so the marker after a producer's kept
// last batch stays); once none is, it is removable. The cleaned segment's
// .txnindex keeps its sources' entries except those whose marker is
// removable: no records are left for a read_committed consumer to drop.
//
// Tombstones and removable markers go after delete.retention.ms, counted
// from a delete horizon (Reference: KIP-534): the first cleaning that
// keeps one sets the horizon, now + delete.retention.ms, as the batch's
// base timestamp with the delete horizon attribute, rebasing the records'
// timestamp deltas so no record timestamp changes; a later cleaning at or
// after the horizon removes them. A log with nothing new to clean is not
// cleaned again just for a horizon, as in Kafka.
//
// Offsets never change: Read at an offset that was cleaned away returns
// the next batch. A read_committed consumer sees the same latest value of
// every key before and after a cleaning. Retention by retention.ms
// and retention.bytes applies only with "delete" in cleanup.policy.
//
// # Recovery
//
// At OpenManager: "-delete" directories are removed; a <base>.log.swap
// that is a whole chain of batches completes its swap: every segment with
// a base offset in [base, its next offset) is removed and the swap becomes
// <base>.log, whose indexes are rebuilt; .deleted, .cleaned and .tmp files
// are removed; any other .swap file replaces its original when the
// original is missing and is removed otherwise. Without the clean-shutdown
// marker every segment that may hold offsets at or after the partition's
// recovery point is read batch by batch (length, magic, offsets, CRC-32C);
// the file is truncated at the first bad or short batch, later segments are
// deleted and the indexes are rebuilt; the truncation is logged with byte
// counts. With the marker the files are trusted, but indexes that fail the
// check are rebuilt. Recovered (scanned) segments are fsynced before the
// log opens, and the partition directory when its entries changed; a
// rebuilt index file that equals the one on disk is not rewritten. A clean
// open fsyncs nothing, since Close synced every file before it wrote the
// marker (Close fsyncs only the logs the flusher has not, 16 at once).
// Logs load on 8 goroutines at once (Kafka's
// num.recovery.threads.per.data.dir).
//
// # Concurrency and lock order
//
// Manager and Log are safe for concurrent use. One flusher goroutine per
// Manager runs the group commit: for each dirty log, a goroutine it starts
// (one per log at a time, up to 16 at once) takes the LogEndOffset, fsyncs
// the active segment and any segments rolled since the last flush without
// holding the append lock, then publishes that offset as DurableOffset and
// wakes WaitDurable callers and the log's change hook (Log.SetChangeHook,
// which appends, truncations, retention, failure and Close also run);
// appends that arrive meanwhile are covered by the next fsync of that log,
// which the same goroutine starts at once. A retention goroutine runs RunRetention every
// RetentionCheckInterval, and a cleaner goroutine runs RunCleaner; all
// three loops run through Manager.every. The cleaner reads and writes
// without the append lock and takes it only to check that its source
// segments are unchanged and swap them. Delayed file deletions are timers
// owned by the Manager; Close cancels them and deletes at once.
//
// Lock order:
//
//	Manager.cleanerMu -> Log.cleanMu -> Log.appendMu
//	LogDirs.createMu -> LogDirs.placeMu -> Manager.mu (placement reads
//	each dir's count and reserves a place under placeMu)
//	Manager.createMu -> Manager.mu
//	Manager.mu -> (released before) Log.appendMu -> Log.mu -> segment.fileMu
//	Log.chMu, Log.epochMu, Manager.flushMu, Manager.delMu, Manager.ckMu and
//	the index files' indexFile.mu are leaves.
//	Log.appendMu -> the change hook (Log.SetChangeHook), which runs with
//	no other lock of the log held.
//
// Manager.mu guards only the map of logs; Create and Delete do their
// directory IO under the partition's Manager.createMu stripe instead, so
// creations of distinct partitions run in parallel.
//
// Reads take Log.mu shared only to look up the segment and index position;
// the file reads happen without locks, bounded by the segment size that
// Append publishes after its write. A truncation cuts files under running
// reads: Truncate makes Log.truncGen odd before it touches a file and even
// after it published the new log end, and a read that saw it change waits
// for the truncation to end and starts over, so a cut is never reported as
// corruption.
//
// Truncate fsyncs the cut segment and renames the removed segments to
// .deleted followed by a directory fsync before it publishes the new log
// end, so a crash cannot bring back offsets at or beyond it.
//
// Abbreviations: leo is the log end offset, lso the log start offset.
package storage
