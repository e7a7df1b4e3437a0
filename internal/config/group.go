package config

import (
	"fmt"
	"strconv"
	"strings"
)

// Group configs are the configs of the GROUP config resource (KIP-848,
// KIP-932, Kafka's GroupConfig): per-group overrides of broker group
// configs, set with IncrementalAlterConfigs on resource type GROUP. A
// group that does not set one takes the broker config it falls back to
// (Fallback), and a value must lie within the broker's bounds for it
// (Min, Max: group.consumer.min/max.*, group.share.min/max.*).
//
// samsa serves the group configs of Kafka 4.2 whose feature it has.
// Kafka's streams.* group configs are unknown names here
// (INVALID_CONFIG), and share.auto.offset.reset takes latest and earliest
// but not by_duration. share.renew.acknowledge.enable has no broker
// config to fall back to (Fallback ""), as in Kafka: its default is the
// group config's own.
var groupDefs = []groupDef{
	{Def: Def{Name: "consumer.heartbeat.interval.ms", Type: TypeInt, Default: "5000", Validate: atLeast(1),
		Doc: "How often the members of this consumer group (KIP-848) heartbeat."},
		Fallback: "group.consumer.heartbeat.interval.ms",
		Min:      "group.consumer.min.heartbeat.interval.ms", Max: "group.consumer.max.heartbeat.interval.ms"},
	{Def: Def{Name: "consumer.session.timeout.ms", Type: TypeInt, Default: "45000", Validate: atLeast(1),
		Doc: "How long a member of this consumer group (KIP-848) may go without a heartbeat before it is removed."},
		Fallback: "group.consumer.session.timeout.ms",
		Min:      "group.consumer.min.session.timeout.ms", Max: "group.consumer.max.session.timeout.ms"},
	{Def: Def{Name: "share.auto.offset.reset", Type: TypeString, Default: "latest", Validate: oneOf("latest", "earliest"),
		Doc: "Where this share group starts reading a partition it has no state for: latest (the high watermark) or earliest (the log start)."},
		Fallback: "share.auto.offset.reset"},
	{Def: Def{Name: "share.delivery.count.limit", Type: TypeInt, Default: "5", Validate: atLeast(2),
		Doc: "How many times this share group delivers a record before it archives it instead of making it available again."},
		Fallback: "group.share.delivery.count.limit",
		Min:      "group.share.min.delivery.count.limit", Max: "group.share.max.delivery.count.limit"},
	{Def: Def{Name: "share.heartbeat.interval.ms", Type: TypeInt, Default: "5000", Validate: atLeast(1),
		Doc: "How often the members of this share group (KIP-932) heartbeat."},
		Fallback: "group.share.heartbeat.interval.ms",
		Min:      "group.share.min.heartbeat.interval.ms", Max: "group.share.max.heartbeat.interval.ms"},
	{Def: Def{Name: "share.isolation.level", Type: TypeString, Default: "read_uncommitted", Validate: oneOf("read_uncommitted", "read_committed"),
		Doc: "Which records this share group delivers: read_uncommitted (every record up to the high watermark) or read_committed (committed records up to the last stable offset)."},
		Fallback: "share.isolation.level"},
	{Def: Def{Name: "share.partition.max.record.locks", Type: TypeInt, Default: "2000", Validate: atLeast(100),
		Doc: "Most records of one of this share group's share-partitions in flight (acquired or waiting for redelivery) at once."},
		Fallback: "group.share.partition.max.record.locks",
		Min:      "group.share.min.partition.max.record.locks", Max: "group.share.max.partition.max.record.locks"},
	{Def: Def{Name: "share.record.lock.duration.ms", Type: TypeInt, Default: "30000", Validate: atLeast(1000),
		Doc: "How long a member of this share group holds the records it acquired before they become available to other members again."},
		Fallback: "group.share.record.lock.duration.ms",
		Min:      "group.share.min.record.lock.duration.ms", Max: "group.share.max.record.lock.duration.ms"},
	{Def: Def{Name: "share.renew.acknowledge.enable", Type: TypeBoolean, Default: "true",
		Doc: "Whether the members of this share group may renew the locks of the records they hold (KIP-1222 RENEW acknowledgements); when false a renewal is INVALID_RECORD_STATE."}},
	{Def: Def{Name: "share.session.timeout.ms", Type: TypeInt, Default: "45000", Validate: atLeast(1),
		Doc: "How long a member of this share group (KIP-932) may go without a heartbeat before it is removed."},
		Fallback: "group.share.session.timeout.ms",
		Min:      "group.share.min.session.timeout.ms", Max: "group.share.max.session.timeout.ms"},
}

// groupDef is a group config with the broker configs it relates to.
type groupDef struct {
	Def
	// Fallback is the broker config whose value a group without the
	// override takes; "" for a config whose default is its own.
	Fallback string
	// Min and Max name the broker configs that bound the value; "" for
	// configs without bounds.
	Min, Max string
}

// GroupDefs returns the group configs sorted by name. The caller owns the
// slice.
func GroupDefs() []Def {
	out := make([]Def, len(groupDefs))
	for i, d := range groupDefs {
		out[i] = d.Def
	}
	return out
}

// LookupGroup returns the group config called name.
func LookupGroup(name string) (Def, bool) {
	if d, ok := lookupGroup(name); ok {
		return d.Def, true
	}
	return Def{}, false
}

func lookupGroup(name string) (groupDef, bool) {
	for _, d := range groupDefs {
		if d.Name == name {
			return d, true
		}
	}
	return groupDef{}, false
}

// GroupFallback returns the broker config a group config falls back to,
// and its bounds ("" when unbounded). ok is false for an unknown name.
func GroupFallback(name string) (fallback, lo, hi string, ok bool) {
	d, ok := lookupGroup(name)
	return d.Fallback, d.Min, d.Max, ok
}

// Group is the effective configuration of one group: its overrides, else
// the broker's configs.
type Group struct {
	ConsumerHeartbeatIntervalMs  int32  // consumer.heartbeat.interval.ms
	ConsumerSessionTimeoutMs     int32  // consumer.session.timeout.ms
	ShareAutoOffsetReset         string // share.auto.offset.reset
	ShareDeliveryCountLimit      int32  // share.delivery.count.limit
	ShareHeartbeatIntervalMs     int32  // share.heartbeat.interval.ms
	ShareIsolationLevel          string // share.isolation.level
	SharePartitionMaxRecordLocks int32  // share.partition.max.record.locks
	ShareRenewAcknowledgeEnable  bool   // share.renew.acknowledge.enable
	ShareRecordLockDurationMs    int32  // share.record.lock.duration.ms
	ShareSessionTimeoutMs        int32  // share.session.timeout.ms
}

// GroupDefaults returns the value every group config takes in a group
// that does not set it: the broker config it falls back to. The caller
// owns the map.
func (b *Broker) GroupDefaults() map[string]string {
	g := b.groupDefaults()
	i := func(n int32) string { return strconv.Itoa(int(n)) }
	return map[string]string{
		"consumer.heartbeat.interval.ms":   i(g.ConsumerHeartbeatIntervalMs),
		"consumer.session.timeout.ms":      i(g.ConsumerSessionTimeoutMs),
		"share.auto.offset.reset":          g.ShareAutoOffsetReset,
		"share.delivery.count.limit":       i(g.ShareDeliveryCountLimit),
		"share.heartbeat.interval.ms":      i(g.ShareHeartbeatIntervalMs),
		"share.isolation.level":            g.ShareIsolationLevel,
		"share.partition.max.record.locks": i(g.SharePartitionMaxRecordLocks),
		"share.renew.acknowledge.enable":   strconv.FormatBool(g.ShareRenewAcknowledgeEnable),
		"share.record.lock.duration.ms":    i(g.ShareRecordLockDurationMs),
		"share.session.timeout.ms":         i(g.ShareSessionTimeoutMs),
	}
}

func (b *Broker) groupDefaults() Group {
	return Group{
		ConsumerHeartbeatIntervalMs:  b.GroupConsumerHeartbeatIntervalMs,
		ConsumerSessionTimeoutMs:     b.GroupConsumerSessionTimeoutMs,
		ShareAutoOffsetReset:         b.ShareAutoOffsetReset,
		ShareDeliveryCountLimit:      b.GroupShareDeliveryCountLimit,
		ShareHeartbeatIntervalMs:     b.GroupShareHeartbeatIntervalMs,
		ShareIsolationLevel:          b.ShareIsolationLevel,
		SharePartitionMaxRecordLocks: b.GroupSharePartitionMaxRecordLocks,
		ShareRenewAcknowledgeEnable:  true,
		ShareRecordLockDurationMs:    b.GroupShareRecordLockDurationMs,
		ShareSessionTimeoutMs:        b.GroupShareSessionTimeoutMs,
	}
}

// groupBounds returns the broker's bounds of a bounded group config.
func (b *Broker) groupBounds(name string) (min, max int32, ok bool) {
	switch name {
	case "consumer.heartbeat.interval.ms":
		return b.GroupConsumerMinHeartbeatIntervalMs, b.GroupConsumerMaxHeartbeatIntervalMs, true
	case "consumer.session.timeout.ms":
		return b.GroupConsumerMinSessionTimeoutMs, b.GroupConsumerMaxSessionTimeoutMs, true
	case "share.delivery.count.limit":
		return b.GroupShareMinDeliveryCountLimit, b.GroupShareMaxDeliveryCountLimit, true
	case "share.heartbeat.interval.ms":
		return b.GroupShareMinHeartbeatIntervalMs, b.GroupShareMaxHeartbeatIntervalMs, true
	case "share.partition.max.record.locks":
		return b.GroupShareMinPartitionMaxRecordLocks, b.GroupShareMaxPartitionMaxRecordLocks, true
	case "share.record.lock.duration.ms":
		return b.GroupShareMinRecordLockDurationMs, b.GroupShareMaxRecordLockDurationMs, true
	case "share.session.timeout.ms":
		return b.GroupShareMinSessionTimeoutMs, b.GroupShareMaxSessionTimeoutMs, true
	}
	return 0, 0, false
}

// ValidateGroup checks overrides as the complete set of overrides of one
// group, as Kafka's GroupConfig.validate does: every name is a group
// config, every value parses and passes its config's check and lies
// within the broker's bounds for it, and, with the broker's values for
// what overrides leaves unset, each session timeout is greater than its
// heartbeat interval. An unknown name is an error wrapping
// ErrUnknownConfig; anything else one wrapping ErrInvalidConfig. Both
// name the config.
func (b *Broker) ValidateGroup(overrides map[string]string) error {
	for _, d := range groupDefs {
		v, ok := overrides[d.Name]
		if !ok {
			continue
		}
		if err := d.Check(v); err != nil {
			return err
		}
		if min, max, ok := b.groupBounds(d.Name); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
			if n < int64(min) {
				return fmt.Errorf("%w: %s=%q: must be greater than or equal to %s (%d)", ErrInvalidConfig, d.Name, v, d.Min, min)
			}
			if n > int64(max) {
				return fmt.Errorf("%w: %s=%q: must be less than or equal to %s (%d)", ErrInvalidConfig, d.Name, v, d.Max, max)
			}
		}
	}
	for k := range overrides {
		if _, ok := lookupGroup(k); !ok {
			return fmt.Errorf("%w: %s is not a group config", ErrUnknownConfig, k)
		}
	}
	g := b.resolveGroup(overrides, false)
	if g.ConsumerSessionTimeoutMs <= g.ConsumerHeartbeatIntervalMs {
		return fmt.Errorf("%w: consumer.session.timeout.ms (%d) must be greater than consumer.heartbeat.interval.ms (%d)",
			ErrInvalidConfig, g.ConsumerSessionTimeoutMs, g.ConsumerHeartbeatIntervalMs)
	}
	if g.ShareSessionTimeoutMs <= g.ShareHeartbeatIntervalMs {
		return fmt.Errorf("%w: share.session.timeout.ms (%d) must be greater than share.heartbeat.interval.ms (%d)",
			ErrInvalidConfig, g.ShareSessionTimeoutMs, g.ShareHeartbeatIntervalMs)
	}
	return nil
}

// ResolveGroup returns a group's effective configuration: each override
// in overrides, else the broker's value. Overrides stored before the
// broker's bounds narrowed are clamped into them, as Kafka evaluates
// stored group configs; values that do not parse (never stored by
// samsa) are ignored. It never fails.
func (b *Broker) ResolveGroup(overrides map[string]string) Group {
	return b.resolveGroup(overrides, true)
}

func (b *Broker) resolveGroup(overrides map[string]string, clamp bool) Group {
	g := b.groupDefaults()
	if len(overrides) == 0 {
		return g
	}
	num := func(name string, dst *int32) {
		v, ok := overrides[name]
		if !ok {
			return
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
		if err != nil {
			return
		}
		if lo, hi, ok := b.groupBounds(name); ok && clamp {
			n = max(int64(lo), min(n, int64(hi)))
		}
		*dst = int32(n)
	}
	str := func(name string, dst *string) {
		if v, ok := overrides[name]; ok {
			if d, _ := lookupGroup(name); d.Check(v) == nil {
				*dst = strings.TrimSpace(v)
			}
		}
	}
	num("consumer.heartbeat.interval.ms", &g.ConsumerHeartbeatIntervalMs)
	num("consumer.session.timeout.ms", &g.ConsumerSessionTimeoutMs)
	str("share.auto.offset.reset", &g.ShareAutoOffsetReset)
	num("share.delivery.count.limit", &g.ShareDeliveryCountLimit)
	num("share.heartbeat.interval.ms", &g.ShareHeartbeatIntervalMs)
	str("share.isolation.level", &g.ShareIsolationLevel)
	num("share.partition.max.record.locks", &g.SharePartitionMaxRecordLocks)
	if v, ok := overrides["share.renew.acknowledge.enable"]; ok {
		if t, err := parseBool(v); err == nil {
			g.ShareRenewAcknowledgeEnable = t
		}
	}
	num("share.record.lock.duration.ms", &g.ShareRecordLockDurationMs)
	num("share.session.timeout.ms", &g.ShareSessionTimeoutMs)
	return g
}
