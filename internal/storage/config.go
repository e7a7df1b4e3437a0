package storage

import (
	"errors"
	"log/slog"
	"math"
	"strings"
	"time"

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
	// ErrOffsetMismatch: AppendReplica got a batch whose base offset is not
	// where the log continues (an overlap or a gap).
	ErrOffsetMismatch = errors.New("storage: batch offset does not continue the log")
	// ErrTopicIDMismatch: Create found the partition's log on disk with
	// another topic's id: a topic of the same name that was deleted
	// (Kafka's InconsistentTopicIdException).
	ErrTopicIDMismatch = errors.New("storage: log on disk belongs to another topic id")
)

// Internal errors.
var (
	errBadIndex      = errors.New("storage: bad index")
	errBadCheckpoint = errors.New("storage: bad checkpoint")
	errBadMetadata   = errors.New("storage: bad partition.metadata")
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

	// CleanupPolicy is cleanup.policy: "delete" (the default, also when
	// empty), "compact" or "compact,delete" (either order). Retention by
	// time and size applies only with "delete"; the log cleaner only
	// touches logs with "compact".
	CleanupPolicy string
	// DeleteRetentionMs is delete.retention.ms (default 1 day): how long
	// the cleaner keeps a tombstone, or a transaction marker with no
	// records left, after the cleaning that set its delete horizon
	// (KIP-534). With 0 the next cleaning removes them.
	DeleteRetentionMs int64
	// MinCleanableDirtyRatio is min.cleanable.dirty.ratio (default 0.5).
	MinCleanableDirtyRatio float64
	// MinCompactionLagMs is min.compaction.lag.ms (default 0): a segment
	// whose largest timestamp is younger is not cleaned.
	MinCompactionLagMs int64
	// MaxCompactionLagMs is max.compaction.lag.ms (default MaxInt64; <= 0
	// means the default): a log whose first dirty segment is older is
	// cleaned whatever its dirty ratio.
	MaxCompactionLagMs int64
}

// Cleanup policies (cleanup.policy values).
const (
	CleanupPolicyDelete        = "delete"
	CleanupPolicyCompact       = "compact"
	CleanupPolicyCompactDelete = "compact,delete"
)

// policyHas reports whether the comma separated cleanup.policy p names
// want. An empty policy is "delete".
func policyHas(p, want string) bool {
	if strings.TrimSpace(p) == "" {
		return want == CleanupPolicyDelete
	}
	for _, f := range strings.Split(p, ",") {
		if strings.TrimSpace(f) == want {
			return true
		}
	}
	return false
}

// Compact reports whether cleanup.policy includes "compact".
func (c Config) Compact() bool { return policyHas(c.CleanupPolicy, CleanupPolicyCompact) }

// DeleteRetention reports whether cleanup.policy includes "delete", so that
// retention.ms and retention.bytes apply.
func (c Config) DeleteRetention() bool { return policyHas(c.CleanupPolicy, CleanupPolicyDelete) }

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

		CleanupPolicy:          CleanupPolicyDelete,
		DeleteRetentionMs:      24 * 3600 * 1000,
		MinCleanableDirtyRatio: 0.5,
		MinCompactionLagMs:     0,
		MaxCompactionLagMs:     math.MaxInt64,
	}
}

// Durable reports whether the config uses samsa's fsync-before-visible policy.
func (c Config) Durable() bool { return c.FlushMessages <= 1 }

// normalizeConfig returns DefaultConfig for a zero Config and replaces
// sizes that make no sense (<= 0) by their defaults; other fields are used
// as given.
func normalizeConfig(c Config) Config {
	d := DefaultConfig()
	if c == (Config{}) {
		return d
	}
	if c.SegmentBytes <= 0 {
		c.SegmentBytes = d.SegmentBytes
	}
	if c.SegmentIndexBytes <= 0 {
		c.SegmentIndexBytes = d.SegmentIndexBytes
	}
	if c.IndexIntervalBytes < 0 {
		c.IndexIntervalBytes = d.IndexIntervalBytes
	}
	if c.SegmentMs == 0 {
		c.SegmentMs = d.SegmentMs
	}
	if c.FileDeleteDelayMs < 0 {
		c.FileDeleteDelayMs = 0
	}
	if c.CleanupPolicy == "" {
		c.CleanupPolicy = d.CleanupPolicy
	}
	if c.DeleteRetentionMs < 0 {
		c.DeleteRetentionMs = d.DeleteRetentionMs
	}
	if c.MinCleanableDirtyRatio < 0 || c.MinCleanableDirtyRatio > 1 || c.MinCleanableDirtyRatio != c.MinCleanableDirtyRatio {
		c.MinCleanableDirtyRatio = d.MinCleanableDirtyRatio
	}
	if c.MinCompactionLagMs < 0 {
		c.MinCompactionLagMs = 0
	}
	if c.MaxCompactionLagMs <= 0 {
		c.MaxCompactionLagMs = d.MaxCompactionLagMs
	}
	return c
}

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
	// CleanerDisable turns the log cleaner goroutine off
	// (log.cleaner.enable=false; Kafka's default, enabled, is the zero
	// value). RunCleaner works either way.
	CleanerDisable bool
	// CleanerBackoff is log.cleaner.backoff.ms: how long the cleaner
	// sleeps between passes (default 15 s).
	CleanerBackoff time.Duration
	// FlushObserver, if not nil, is told of every flush of a log. It is
	// called on the flusher's goroutines, and must be cheap.
	FlushObserver FlushObserver
}

// FlushObserver receives the flusher's measurements.
type FlushObserver interface {
	// ObserveFlush is called after a log's flush succeeded. sync is the
	// time its fsyncs took; appendToDurable is the time from the oldest
	// append the flush covered to the end of the flush (how long that
	// record waited to become durable), zero when unknown.
	ObserveFlush(sync, appendToDurable time.Duration)
}
