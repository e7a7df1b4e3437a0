package storage

// This file holds the API contract of package storage that is not yet
// implemented. Replace each stub by its real implementation in a file named
// for its concern and delete this file once it is empty.

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"samsa/internal/record"
	"samsa/internal/vfs"
)

// Sentinel errors. The broker maps them to Kafka error codes.
var (
	// ErrOffsetOutOfRange: a read or lookup below the log start offset or
	// above the log end offset (OFFSET_OUT_OF_RANGE).
	ErrOffsetOutOfRange = errors.New("storage: offset out of range")
	// ErrClosed: the log or manager was closed (or deleted).
	ErrClosed = errors.New("storage: log closed")
	// ErrLogDirOffline: a write or sync failed; the log dir is offline and
	// nothing more is acknowledged from it (KAFKA_STORAGE_ERROR).
	ErrLogDirOffline = errors.New("storage: log dir offline")
	// ErrMessageTooLarge: batch larger than the segment can ever hold.
	ErrMessageTooLarge = errors.New("storage: batch too large")
)

// TopicPartition names a partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// Config is a log's configuration under Kafka's topic config names.
type Config struct {
	SegmentBytes       int64 // segment.bytes, default 1 GiB
	SegmentMs          int64 // segment.ms, default 7 days
	SegmentIndexBytes  int64 // segment.index.bytes, default 10 MiB
	IndexIntervalBytes int64 // index.interval.bytes, default 4096
	RetentionMs        int64 // retention.ms, default 7 days; -1 unlimited
	RetentionBytes     int64 // retention.bytes, default -1 (unlimited)
	// FlushMessages is flush.messages. 1 (samsa's default) means every
	// record is fsynced before it counts as durable: appends are group
	// committed and DurableOffset trails LogEndOffset by at most one fsync.
	// Larger values give Kafka's page-cache mode: a background flush after
	// that many messages or FlushMs, and DurableOffset is not waited for.
	FlushMessages     int64
	FlushMs           int64 // flush.ms; -1 never
	FileDeleteDelayMs int64 // file.delete.delay.ms, default 60000
}

// DefaultConfig returns Kafka's defaults (and samsa's durable flush policy).
func DefaultConfig() Config {
	return Config{
		SegmentBytes:       1 << 30,
		SegmentMs:          7 * 24 * 3600 * 1000,
		SegmentIndexBytes:  10 << 20,
		IndexIntervalBytes: 4096,
		RetentionMs:        7 * 24 * 3600 * 1000,
		RetentionBytes:     -1,
		FlushMessages:      1,
		FlushMs:            -1,
		FileDeleteDelayMs:  60000,
	}
}

// Durable reports whether the config uses samsa's fsync-before-visible policy.
func (c Config) Durable() bool { return c.FlushMessages <= 1 }

// ManagerConfig configures a Manager.
type ManagerConfig struct {
	FS     vfs.FS
	Dir    string // the log dir (log.dirs; one per Manager)
	Logger *slog.Logger
	// RetentionCheckInterval is log.retention.check.interval.ms.
	RetentionCheckInterval time.Duration
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// DefaultConfig is used for logs found on disk at open; the broker
	// calls Log.SetConfig once it knows the topic's configs.
	DefaultConfig Config
}

// Manager owns every partition log in one log dir, the group-commit flusher
// and the retention loop. It is safe for concurrent use.
type Manager struct{}

// OpenManager opens the log dir, recovers every partition log found in it
// (see the package doc) and starts the background goroutines.
func OpenManager(cfg ManagerConfig) (*Manager, error) { panic("unimplemented") }

// Log returns the log of tp, or nil.
func (m *Manager) Log(tp TopicPartition) *Log { panic("unimplemented") }

// Logs returns every open log.
func (m *Manager) Logs() []*Log { panic("unimplemented") }

// Create opens tp's log, creating its directory if needed. Creating an
// existing log returns it (and updates its config).
func (m *Manager) Create(tp TopicPartition, topicID [16]byte, cfg Config) (*Log, error) {
	panic("unimplemented")
}

// Delete closes tp's log and removes its directory (renamed to
// <topic>-<p>.<id>-delete first, so a crash leaves no half-deleted log that
// looks live).
func (m *Manager) Delete(tp TopicPartition) error { panic("unimplemented") }

// Close flushes every log, writes the checkpoints and the clean-shutdown
// marker, stops the goroutines and closes the files. It is idempotent.
func (m *Manager) Close() error { panic("unimplemented") }

// Log is one partition's log. Append is serialised internally; reads run
// concurrently with appends.
type Log struct{}

// AppendResult describes an appended batch.
type AppendResult struct {
	BaseOffset     int64
	LastOffset     int64
	LogAppendTime  int64 // -1 unless the batch was stamped with LogAppendTime
	LogStartOffset int64
}

// Append writes a validated batch (record.Batch.Validate has passed) at the
// log end: it patches baseOffset and partitionLeaderEpoch, stamps
// LogAppendTime (nowMs) when logAppendTime is set, writes it, updates the
// indexes and rolls the segment when due. It neither blocks on fsync nor
// waits for anything: call WaitDurable for that. b is modified in place and
// may be retained until the call returns.
func (l *Log) Append(b record.Batch, leaderEpoch int32, logAppendTime bool, nowMs int64) (AppendResult, error) {
	panic("unimplemented")
}

// WaitDurable blocks until every offset below offset is fsynced (group
// commit: one fsync serves every waiter queued at that moment), the log
// fails (ErrLogDirOffline), or ctx is done. In page-cache mode it returns
// at once.
func (l *Log) WaitDurable(ctx context.Context, offset int64) error { panic("unimplemented") }

// LogStartOffset, LogEndOffset and DurableOffset are safe to call at any time.
func (l *Log) LogStartOffset() int64 { panic("unimplemented") }
func (l *Log) LogEndOffset() int64   { panic("unimplemented") }

// DurableOffset is the offset below which everything is fsynced. In
// page-cache mode it equals LogEndOffset.
func (l *Log) DurableOffset() int64 { panic("unimplemented") }

// Changed returns a channel that is closed the next time LogEndOffset,
// DurableOffset or LogStartOffset changes (fetch long-poll waits on it).
func (l *Log) Changed() <-chan struct{} { panic("unimplemented") }

// Region is a byte range of a segment file holding whole batches.
type Region struct {
	File vfs.File
	Pos  int64
	Size int64
}

// ReadResult is the result of Read.
type ReadResult struct {
	Regions []Region
	Size    int64
}

// AppendTo reads the regions' bytes and appends them to dst.
func (r ReadResult) AppendTo(dst []byte) ([]byte, error) { panic("unimplemented") }

// Read returns whole batches starting with the one that contains offset and
// ending before maxOffset (exclusive; callers pass the high watermark),
// totalling at most maxBytes, except that when minOneBatch is set the first
// batch is returned even if it is larger. It returns ErrOffsetOutOfRange
// when offset < LogStartOffset or offset > LogEndOffset. Files referenced by
// the result stay open for at least FileDeleteDelayMs after a segment is
// deleted, so callers may read them after Read returns.
func (l *Log) Read(offset int64, maxBytes int64, maxOffset int64, minOneBatch bool) (ReadResult, error) {
	panic("unimplemented")
}

// OffsetForTimestamp returns the first offset whose record timestamp is >=
// ts, with that record's timestamp; ok is false if there is none.
func (l *Log) OffsetForTimestamp(ts int64) (offset, timestamp int64, ok bool, err error) {
	panic("unimplemented")
}

// MaxTimestamp returns the largest timestamp in the log and the offset of the
// first record that has it; ok is false for an empty log.
func (l *Log) MaxTimestamp() (timestamp, offset int64, ok bool, err error) { panic("unimplemented") }

// DeleteRecordsBefore advances the log start offset to offset (DeleteRecords)
// and deletes segments wholly below it. offset must be <= the high
// watermark, which the caller checks. It returns the new log start offset.
func (l *Log) DeleteRecordsBefore(offset int64) (int64, error) { panic("unimplemented") }

// Truncate removes every batch at or above offset (follower truncation).
func (l *Log) Truncate(offset int64) error { panic("unimplemented") }

// SetConfig changes the log's configuration (dynamic topic configs).
func (l *Log) SetConfig(cfg Config) { panic("unimplemented") }

// Size returns the total bytes of the log's segments.
func (l *Log) Size() int64 { panic("unimplemented") }

// Dir returns the log's directory.
func (l *Log) Dir() string { panic("unimplemented") }
