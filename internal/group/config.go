package group

import (
	"log/slog"
	"math"
	"time"

	"samsa/internal/config"
)

// Config configures a Coordinator. Field comments give the Kafka config
// names; zero values are replaced by Kafka's defaults in NewCoordinator.
type Config struct {
	MinSessionTimeout      time.Duration // group.min.session.timeout.ms (6000)
	MaxSessionTimeout      time.Duration // group.max.session.timeout.ms (1800000)
	InitialRebalanceDelay  time.Duration // group.initial.rebalance.delay.ms (3000); negative means 0
	MaxSize                int32         // group.max.size (MaxInt32)
	OffsetsRetention       time.Duration // offsets.retention.minutes (10080)
	OffsetsRetentionCheck  time.Duration // offsets.retention.check.interval.ms (600000)
	OffsetsTopicPartitions int32         // offsets.topic.num.partitions (50)
	OffsetMetadataMaxBytes int           // offset.metadata.max.bytes (4096)
	// OffsetsCommitTimeout bounds each Log.Append of the coordinator:
	// offset commits and tombstones as well as group metadata.
	OffsetsCommitTimeout time.Duration // offsets.commit.timeout.ms (5000)

	// Logger receives coordinator events; nil discards them.
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// OnRebalance, if not nil, is called with the duration of every
	// rebalance that ends, under the group's lock: it must be cheap.
	OnRebalance func(d time.Duration)
}

// ConfigFromBroker takes the group settings from a broker configuration.
func ConfigFromBroker(b *config.Broker) Config {
	ms := func(v int64) time.Duration { return time.Duration(v) * time.Millisecond }
	delay := ms(int64(b.GroupInitialRebalanceDelayMs))
	if delay == 0 {
		// The broker config says "no delay"; in Config zero means "default".
		delay = -1
	}
	return Config{
		MinSessionTimeout:      ms(int64(b.GroupMinSessionTimeoutMs)),
		MaxSessionTimeout:      ms(int64(b.GroupMaxSessionTimeoutMs)),
		InitialRebalanceDelay:  delay,
		MaxSize:                b.GroupMaxSize,
		OffsetsRetention:       time.Duration(b.OffsetsRetentionMinutes) * time.Minute,
		OffsetsTopicPartitions: b.OffsetsTopicNumPartitions,
	}
}

// withDefaults fills zero fields with Kafka's defaults.
func (c Config) withDefaults() Config {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&c.MinSessionTimeout, 6*time.Second)
	def(&c.MaxSessionTimeout, 30*time.Minute)
	if c.InitialRebalanceDelay == 0 {
		c.InitialRebalanceDelay = 3 * time.Second
	} else if c.InitialRebalanceDelay < 0 {
		c.InitialRebalanceDelay = 0
	}
	if c.MaxSize <= 0 {
		c.MaxSize = math.MaxInt32
	}
	def(&c.OffsetsRetention, 7*24*time.Hour)
	def(&c.OffsetsRetentionCheck, 10*time.Minute)
	if c.OffsetsTopicPartitions <= 0 {
		c.OffsetsTopicPartitions = 50
	}
	def(&c.OffsetsCommitTimeout, 5*time.Second)
	if c.OffsetMetadataMaxBytes <= 0 {
		c.OffsetMetadataMaxBytes = 4096
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}
