package group

import (
	"log/slog"
	"math"
	"strings"
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

	// Consumer groups (KIP-848).
	ConsumerSessionTimeout    time.Duration // group.consumer.session.timeout.ms (45000)
	ConsumerHeartbeatInterval time.Duration // group.consumer.heartbeat.interval.ms (5000)
	ConsumerMaxSize           int32         // group.consumer.max.size (MaxInt32)
	// ConsumerAssignors are the server-side assignors, the default first
	// (group.consumer.assignors: uniform, range).
	ConsumerAssignors []string
	// ConsumerMigrationPolicy is group.consumer.migration.policy:
	// bidirectional (the default, also for ""), upgrade, downgrade or
	// disabled.
	ConsumerMigrationPolicy string
	// GroupTimeouts, when set, returns a consumer group's session
	// timeout and heartbeat interval: its group configs
	// (consumer.session.timeout.ms, consumer.heartbeat.interval.ms), else
	// the two above. It is called at every ConsumerGroupHeartbeat, so a
	// changed group config applies from the group's next heartbeat. It
	// must be cheap and safe for concurrent use; a zero result keeps the
	// broker-wide value.
	GroupTimeouts func(group string) (session, heartbeat time.Duration)
	// Topics returns the cluster's topics for consumer group
	// subscriptions; nil means none.
	Topics func() Topics

	// ShareRecords, if not nil, receives the share group (KIP-932)
	// records of a __consumer_offsets partition when it is loaded, by
	// group in log order, before its groups are served (Owns answers
	// ErrCoordinatorLoadInProgress until it returns). The coordinator
	// keeps share groups' records but not their state: the broker does.
	ShareRecords func(partition int32, groups map[string][]KV)

	// newMemberID, when set, makes the member ids of JoinGroup and of
	// ConsumerGroupHeartbeat v0 (tests); nil makes random UUIDs.
	newMemberID func() string

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

		ConsumerSessionTimeout:    ms(int64(b.GroupConsumerSessionTimeoutMs)),
		ConsumerHeartbeatInterval: ms(int64(b.GroupConsumerHeartbeatIntervalMs)),
		ConsumerMaxSize:           b.GroupConsumerMaxSize,
		ConsumerAssignors:         assignorNames(b.GroupConsumerAssignors),
		ConsumerMigrationPolicy:   b.GroupConsumerMigrationPolicy,
	}
}

// upgradeEnabled and downgradeEnabled read group.consumer.migration.policy.
func (c Config) upgradeEnabled() bool {
	return c.ConsumerMigrationPolicy == "bidirectional" || c.ConsumerMigrationPolicy == "upgrade"
}

func (c Config) downgradeEnabled() bool {
	return c.ConsumerMigrationPolicy == "bidirectional" || c.ConsumerMigrationPolicy == "downgrade"
}

// assignorNames maps group.consumer.assignors entries to assignor names,
// dropping unknown ones (the config's validation refuses them).
func assignorNames(list []string) []string {
	var out []string
	for _, s := range list {
		if n, ok := AssignorName(s); ok {
			out = append(out, n)
		}
	}
	return out
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
	def(&c.ConsumerSessionTimeout, 45*time.Second)
	def(&c.ConsumerHeartbeatInterval, 5*time.Second)
	if c.ConsumerMaxSize <= 0 {
		c.ConsumerMaxSize = math.MaxInt32
	}
	if len(c.ConsumerAssignors) == 0 {
		c.ConsumerAssignors = []string{UniformAssignor, RangeAssignor}
	}
	c.ConsumerMigrationPolicy = strings.ToLower(c.ConsumerMigrationPolicy)
	if c.ConsumerMigrationPolicy == "" {
		c.ConsumerMigrationPolicy = "bidirectional"
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}
