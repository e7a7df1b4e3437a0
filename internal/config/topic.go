package config

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// ValidateTopic checks topic-level overrides. An unknown name gives an
// error wrapping ErrUnknownConfig, a bad value one wrapping
// ErrInvalidConfig; the message names the config and the reason. Names are
// checked in sorted order, so the first error is deterministic.
func ValidateTopic(configs map[string]string) error {
	names := make([]string, 0, len(configs))
	for n := range configs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		d, ok := LookupTopic(n)
		if !ok {
			return fmt.Errorf("%w: %s", ErrUnknownConfig, n)
		}
		if err := d.Check(configs[n]); err != nil {
			return err
		}
	}
	return nil
}

// Topic is the typed, resolved configuration of one topic: its overrides
// over the broker's topic defaults.
type Topic struct {
	CleanupPolicy               string // cleanup.policy, normalised "delete", "compact" or "compact,delete"
	CompressionType             string // compression.type
	CompressionGzipLevel        int32  // compression.gzip.level
	CompressionLz4Level         int32  // compression.lz4.level
	CompressionZstdLevel        int32  // compression.zstd.level
	DeleteRetentionMs           int64  // delete.retention.ms
	FileDeleteDelayMs           int64  // file.delete.delay.ms
	FlushMessages               int64  // flush.messages
	FlushMs                     int64  // flush.ms
	IndexIntervalBytes          int32  // index.interval.bytes
	MaxCompactionLagMs          int64  // max.compaction.lag.ms
	MaxMessageBytes             int32  // max.message.bytes
	MessageTimestampType        string // message.timestamp.type
	MessageTimestampBeforeMaxMs int64  // message.timestamp.before.max.ms
	MessageTimestampAfterMaxMs  int64  // message.timestamp.after.max.ms
	MinCleanableDirtyRatio      float64
	MinCompactionLagMs          int64 // min.compaction.lag.ms
	MinInsyncReplicas           int32 // min.insync.replicas
	Preallocate                 bool  // preallocate (inert)
	RetentionBytes              int64 // retention.bytes; -1 unlimited
	RetentionMs                 int64 // retention.ms; -1 unlimited
	SegmentBytes                int64 // segment.bytes
	SegmentIndexBytes           int64 // segment.index.bytes
	SegmentJitterMs             int64 // segment.jitter.ms
	SegmentMs                   int64 // segment.ms
	UncleanLeaderElectionEnable bool  // unclean.leader.election.enable
	MessageDownconversionEnable bool  // message.downconversion.enable (inert)
	RemoteStorageEnable         bool  // remote.storage.enable (inert)
}

// Compact reports whether the cleanup policy includes compact.
func (t Topic) Compact() bool { return strings.Contains(t.CleanupPolicy, "compact") }

// Delete reports whether the cleanup policy includes delete.
func (t Topic) Delete() bool { return strings.Contains(t.CleanupPolicy, "delete") }

// ResolveTopic validates overrides (see ValidateTopic) and returns them
// applied over the broker's topic defaults.
func (b *Broker) ResolveTopic(overrides map[string]string) (Topic, error) {
	if err := ValidateTopic(overrides); err != nil {
		return Topic{}, err
	}
	vals := b.TopicDefaults()
	for n, v := range overrides {
		vals[n] = strings.TrimSpace(v)
	}
	p := topicParser{vals: vals}
	t := Topic{
		CleanupPolicy:               normalisePolicy(vals["cleanup.policy"]),
		CompressionType:             vals["compression.type"],
		CompressionGzipLevel:        int32(p.int("compression.gzip.level")),
		CompressionLz4Level:         int32(p.int("compression.lz4.level")),
		CompressionZstdLevel:        int32(p.int("compression.zstd.level")),
		DeleteRetentionMs:           p.int("delete.retention.ms"),
		FileDeleteDelayMs:           p.int("file.delete.delay.ms"),
		FlushMessages:               p.int("flush.messages"),
		FlushMs:                     p.int("flush.ms"),
		IndexIntervalBytes:          int32(p.int("index.interval.bytes")),
		MaxCompactionLagMs:          p.int("max.compaction.lag.ms"),
		MaxMessageBytes:             int32(p.int("max.message.bytes")),
		MessageTimestampType:        vals["message.timestamp.type"],
		MessageTimestampBeforeMaxMs: p.int("message.timestamp.before.max.ms"),
		MessageTimestampAfterMaxMs:  p.int("message.timestamp.after.max.ms"),
		MinCleanableDirtyRatio:      p.float("min.cleanable.dirty.ratio"),
		MinCompactionLagMs:          p.int("min.compaction.lag.ms"),
		MinInsyncReplicas:           int32(p.int("min.insync.replicas")),
		Preallocate:                 p.bool("preallocate"),
		RetentionBytes:              p.int("retention.bytes"),
		RetentionMs:                 p.int("retention.ms"),
		SegmentBytes:                p.int("segment.bytes"),
		SegmentIndexBytes:           p.int("segment.index.bytes"),
		SegmentJitterMs:             p.int("segment.jitter.ms"),
		SegmentMs:                   p.int("segment.ms"),
		UncleanLeaderElectionEnable: p.bool("unclean.leader.election.enable"),
		MessageDownconversionEnable: p.bool("message.downconversion.enable"),
		RemoteStorageEnable:         p.bool("remote.storage.enable"),
	}
	if t.RetentionMs < 0 {
		t.RetentionMs = -1
	}
	if p.err != nil {
		return Topic{}, p.err
	}
	return t, nil
}

// normalisePolicy returns the policy list sorted and without duplicates.
func normalisePolicy(v string) string {
	items := splitList(v)
	sort.Strings(items)
	out := items[:0]
	for i, it := range items {
		if i == 0 || it != items[i-1] {
			out = append(out, it)
		}
	}
	return strings.Join(out, ",")
}

type topicParser struct {
	vals map[string]string
	err  error
}

func (p *topicParser) fail(name string, err error) {
	if p.err == nil {
		p.err = fmt.Errorf("%w: %s=%q: %w", ErrInvalidConfig, name, p.vals[name], err)
	}
}

func (p *topicParser) int(name string) int64 {
	n, err := strconv.ParseInt(p.vals[name], 10, 64)
	if err != nil {
		p.fail(name, err)
	}
	return n
}

func (p *topicParser) float(name string) float64 {
	f, err := strconv.ParseFloat(p.vals[name], 64)
	if err != nil {
		p.fail(name, err)
	}
	return f
}

func (p *topicParser) bool(name string) bool {
	b, err := parseBool(p.vals[name])
	if err != nil {
		p.fail(name, err)
	}
	return b
}
