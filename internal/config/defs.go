package config

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Sentinel errors. Errors returned by this package wrap one of them together
// with the name of the config at fault.
var (
	// ErrUnknownConfig reports a config name that samsa does not define.
	ErrUnknownConfig = errors.New("config: unknown config")
	// ErrInvalidConfig reports a value that does not parse or is out of
	// range for its config.
	ErrInvalidConfig = errors.New("config: invalid value")
	// ErrUnsupportedConfig reports a Kafka config that samsa does not
	// implement, set to a value that would change the broker's behaviour.
	ErrUnsupportedConfig = errors.New("config: unsupported config")
)

// Type is a config's value type. The values are those of the Kafka
// protocol's DescribeConfigs ConfigType field, so a broker can put them on
// the wire unchanged.
type Type int8

// Config types, numbered as DescribeConfigs numbers them.
const (
	TypeBoolean  Type = 1
	TypeString   Type = 2
	TypeInt      Type = 3
	TypeShort    Type = 4
	TypeLong     Type = 5
	TypeDouble   Type = 6
	TypeList     Type = 7
	TypePassword Type = 9
)

// String returns the type's name as Kafka documents it.
func (t Type) String() string {
	switch t {
	case TypeBoolean:
		return "boolean"
	case TypeString:
		return "string"
	case TypeInt:
		return "int"
	case TypeShort:
		return "short"
	case TypeLong:
		return "long"
	case TypeDouble:
		return "double"
	case TypeList:
		return "list"
	case TypePassword:
		return "password"
	}
	return "unknown"
}

// Def describes one config.
type Def struct {
	Name string
	Type Type
	// Default is the default as Kafka's DescribeConfigs shows it; "" with
	// Null set for a null default.
	Default string
	Null    bool
	// Doc is one line saying what the config does.
	Doc string
	// Topic names the topic-level counterpart of a broker config
	// (log.retention.ms -> retention.ms); "" if there is none.
	Topic string
	// ReadOnly configs cannot be changed while the broker runs.
	ReadOnly  bool
	Sensitive bool
	// Validate checks a value that already passed the type check; nil
	// means the type check only.
	Validate func(string) error
}

// Check reports whether v is a valid value for the config: it must parse
// as the config's type and pass Validate. For a config with a null default
// the empty string means null and is accepted. The error wraps
// ErrInvalidConfig and names the config.
func (d Def) Check(v string) error {
	if d.Null && v == "" {
		return nil
	}
	if err := checkType(d.Type, v); err != nil {
		return fmt.Errorf("%w: %s=%q: %w", ErrInvalidConfig, d.Name, v, err)
	}
	if d.Validate != nil {
		if err := d.Validate(v); err != nil {
			return fmt.Errorf("%w: %s=%q: %w", ErrInvalidConfig, d.Name, v, err)
		}
	}
	return nil
}

func checkType(t Type, v string) error {
	switch t {
	case TypeBoolean:
		if _, err := parseBool(v); err != nil {
			return err
		}
	case TypeInt:
		if _, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32); err != nil {
			return numberError("not a 32-bit integer", v)
		}
	case TypeShort:
		if _, err := strconv.ParseInt(strings.TrimSpace(v), 10, 16); err != nil {
			return numberError("not a 16-bit integer", v)
		}
	case TypeLong:
		if _, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err != nil {
			return numberError("not a 64-bit integer", v)
		}
	case TypeDouble:
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return errors.New("not a number")
		}
	}
	return nil
}

// numberError explains a value that is not a number. Kafka reads numeric
// configs with Java's Integer.parseInt and Long.parseLong after trimming
// blanks (ConfigDef.parseType): a sign and digits, no unit. A value with a
// unit (1GB, 7d) gets that said, since sizes are given in bytes and
// durations by the config's name (log.retention.ms, .minutes, .hours).
func numberError(msg, v string) error {
	t := strings.TrimSpace(v)
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || i == 0 && (t[i] == '+' || t[i] == '-')) {
		i++
	}
	if i > 0 && i < len(t) {
		if unit := strings.TrimSpace(t[i:]); unit != "" && strings.Trim(unit, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") == "" {
			return fmt.Errorf("%s: Kafka configs take a plain number, without a unit (%q): sizes in bytes, durations in the unit the name ends in (.ms, .minutes, .hours)", msg, unit)
		}
	}
	return errors.New(msg)
}

// parseBool accepts true and false in any case, as Kafka does.
func parseBool(v string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, errors.New("not true or false")
}

// splitList splits a comma-separated list value, trimming blanks and
// dropping empty items.
func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// Validators.

func atLeast(min int64) func(string) error {
	return func(v string) error {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return errors.New("not an integer")
		}
		if n < min {
			return fmt.Errorf("must be at least %d", min)
		}
		return nil
	}
}

func between(min, max int64) func(string) error {
	return func(v string) error {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return errors.New("not an integer")
		}
		if n < min || n > max {
			return fmt.Errorf("must be between %d and %d", min, max)
		}
		return nil
	}
}

func betweenFloat(min, max float64) func(string) error {
	return func(v string) error {
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			return errors.New("not a number")
		}
		if f < min || f > max {
			return fmt.Errorf("must be between %g and %g", min, max)
		}
		return nil
	}
}

// levelOrDefault accepts -1 (the codec's default level) or min..max.
func levelOrDefault(min, max int64) func(string) error {
	return func(v string) error {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return errors.New("not an integer")
		}
		if n != -1 && (n < min || n > max) {
			return fmt.Errorf("must be -1 or between %d and %d", min, max)
		}
		return nil
	}
}

func oneOf(allowed ...string) func(string) error {
	return func(v string) error {
		v = strings.TrimSpace(v)
		for _, a := range allowed {
			if v == a {
				return nil
			}
		}
		return fmt.Errorf("must be one of %s", strings.Join(allowed, ", "))
	}
}

// oneOfFold is oneOf ignoring case, as Kafka parses enum-valued configs
// such as group.consumer.migration.policy.
func oneOfFold(allowed ...string) func(string) error {
	return func(v string) error {
		v = strings.TrimSpace(v)
		for _, a := range allowed {
			if strings.EqualFold(v, a) {
				return nil
			}
		}
		return fmt.Errorf("must be one of %s", strings.Join(allowed, ", "))
	}
}

// listOf accepts a non-empty comma-separated list of allowed items.
func listOf(allowed ...string) func(string) error {
	one := oneOf(allowed...)
	return func(v string) error {
		items := splitList(v)
		if len(items) == 0 {
			return fmt.Errorf("must list at least one of %s", strings.Join(allowed, ", "))
		}
		for _, it := range items {
			if err := one(it); err != nil {
				return fmt.Errorf("item %q: %w", it, err)
			}
		}
		return nil
	}
}

func listenersValid(v string) error {
	_, err := ParseListeners(v)
	return err
}

const (
	longMax = "9223372036854775807"
	intMax  = "2147483647"
)

var compressionTypes = []string{"uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"}

// topicDefs are the topic-level configs. Defaults are those a topic gets
// from a broker running with default broker configs.
var topicDefs = []Def{
	{Name: "cleanup.policy", Type: TypeList, Default: "delete", Validate: listOf("delete", "compact"),
		Doc: "Whether old segments are deleted (delete), keys compacted (compact), or both."},
	{Name: "compression.type", Type: TypeString, Default: "producer", Validate: oneOf(compressionTypes...),
		Doc: "Codec batches are stored with; producer keeps what the producer sent."},
	{Name: "compression.gzip.level", Type: TypeInt, Default: "-1", Validate: levelOrDefault(1, 9),
		Doc: "gzip level used when the broker compresses with gzip (-1: codec default)."},
	{Name: "compression.lz4.level", Type: TypeInt, Default: "9", Validate: between(1, 17),
		Doc: "lz4 level used when the broker compresses with lz4."},
	{Name: "compression.zstd.level", Type: TypeInt, Default: "3", Validate: between(-131072, 22),
		Doc: "zstd level used when the broker compresses with zstd."},
	{Name: "delete.retention.ms", Type: TypeLong, Default: "86400000", Validate: atLeast(0),
		Doc: "How long tombstones and transaction markers are kept in a compacted topic after the cleaning that first finds them removable (their delete horizon, KIP-534)."},
	{Name: "file.delete.delay.ms", Type: TypeLong, Default: "60000", Validate: atLeast(0),
		Doc: "Delay between a segment leaving the log and its files being deleted."},
	{Name: "flush.messages", Type: TypeLong, Default: "1", Validate: atLeast(1),
		Doc: "fsync after this many messages; 1 (samsa default) syncs before acks=all is answered, with group commit."},
	{Name: "flush.ms", Type: TypeLong, Default: longMax, Validate: atLeast(0),
		Doc: "fsync when the oldest unsynced message is this old."},
	{Name: "index.interval.bytes", Type: TypeInt, Default: "4096", Validate: atLeast(0),
		Doc: "Bytes of log between two offset index entries."},
	{Name: "local.retention.bytes", Type: TypeLong, Default: "-2", Validate: atLeast(-2),
		Doc: "Tiered storage local retention; accepted but inert (samsa has no tiered storage)."},
	{Name: "local.retention.ms", Type: TypeLong, Default: "-2", Validate: atLeast(-2),
		Doc: "Tiered storage local retention; accepted but inert (samsa has no tiered storage)."},
	{Name: "max.compaction.lag.ms", Type: TypeLong, Default: longMax, Validate: atLeast(1),
		Doc: "Longest time a record may stay uncompacted in a compacted topic."},
	{Name: "max.message.bytes", Type: TypeInt, Default: "1048588", Validate: atLeast(0),
		Doc: "Largest record batch the topic accepts, in bytes."},
	{Name: "message.downconversion.enable", Type: TypeBoolean, Default: "true",
		Doc: "Down-conversion for old fetch versions; accepted but inert (samsa serves batches as stored)."},
	{Name: "message.timestamp.after.max.ms", Type: TypeLong, Default: "3600000", Validate: atLeast(0),
		Doc: "Largest amount a CreateTime timestamp may lie ahead of the broker's clock."},
	{Name: "message.timestamp.before.max.ms", Type: TypeLong, Default: longMax, Validate: atLeast(0),
		Doc: "Largest amount a CreateTime timestamp may lie behind the broker's clock."},
	{Name: "message.timestamp.difference.max.ms", Type: TypeLong, Default: longMax, Validate: atLeast(0),
		Doc: "Deprecated form of message.timestamp.before.max.ms; accepted but inert."},
	{Name: "message.timestamp.type", Type: TypeString, Default: "CreateTime", Validate: oneOf("CreateTime", "LogAppendTime"),
		Doc: "Whether record timestamps are the producer's (CreateTime) or the broker's (LogAppendTime)."},
	{Name: "min.cleanable.dirty.ratio", Type: TypeDouble, Default: "0.5", Validate: betweenFloat(0, 1),
		Doc: "Share of uncleaned log above which the cleaner compacts a partition."},
	{Name: "min.compaction.lag.ms", Type: TypeLong, Default: "0", Validate: atLeast(0),
		Doc: "Shortest time a record stays uncompacted."},
	{Name: "min.insync.replicas", Type: TypeInt, Default: "1", Validate: atLeast(1),
		Doc: "Replicas that must be in sync for an acks=all write to succeed."},
	{Name: "preallocate", Type: TypeBoolean, Default: "false",
		Doc: "Preallocate segment files; accepted but inert."},
	{Name: "remote.storage.enable", Type: TypeBoolean, Default: "false",
		Doc: "Tiered storage; accepted but inert (samsa has no tiered storage)."},
	{Name: "retention.bytes", Type: TypeLong, Default: "-1",
		Doc: "Largest size of a partition before old segments are deleted; -1 for no limit."},
	{Name: "retention.ms", Type: TypeLong, Default: "604800000", Validate: atLeast(-1),
		Doc: "How long segments are kept before deletion; -1 for no limit."},
	{Name: "segment.bytes", Type: TypeInt, Default: "1073741824", Validate: atLeast(14),
		Doc: "Size at which a new segment is rolled."},
	{Name: "segment.index.bytes", Type: TypeInt, Default: "10485760", Validate: atLeast(4),
		Doc: "Largest size of a segment's offset index; a full index rolls the segment."},
	{Name: "segment.jitter.ms", Type: TypeLong, Default: "0", Validate: atLeast(0),
		Doc: "Random amount subtracted from segment.ms so that partitions do not roll together."},
	{Name: "segment.ms", Type: TypeLong, Default: "604800000", Validate: atLeast(1),
		Doc: "Age of a segment after which a new one is rolled even if it is not full."},
	{Name: "unclean.leader.election.enable", Type: TypeBoolean, Default: "false",
		Doc: "Allow a replica outside the ISR to become leader, losing records."},
}

// brokerDefs are the broker-level configs, each either with a real effect
// or documented as accepted but inert.
var brokerDefs = []Def{
	{Name: "admin.listener", Type: TypeString, Default: "127.0.0.1:9080", ReadOnly: true,
		Doc: "samsa: host:port of the HTTP admin listener (/metrics, /healthz, /readyz, and the web console under /console/); empty disables it."},
	{Name: "advertised.listeners", Type: TypeString, Null: true, ReadOnly: true, Validate: listenersValid,
		Doc: "Listeners given to clients in metadata, NAME://host:port; defaults to listeners."},
	{Name: "auto.create.topics.enable", Type: TypeBoolean, Default: "true", ReadOnly: true,
		Doc: "Create a topic when a client asks for metadata of a topic that does not exist."},
	{Name: "auto.leader.rebalance.enable", Type: TypeBoolean, Default: "true", ReadOnly: true,
		Doc: "Move leadership back to preferred replicas periodically."},
	{Name: "broker.heartbeat.interval.ms", Type: TypeInt, Default: "2000", ReadOnly: true, Validate: atLeast(1),
		Doc: "How often the broker renews its registration lease."},
	{Name: "broker.rack", Type: TypeString, Null: true, ReadOnly: true,
		Doc: "Rack of the broker, used for rack-aware replica placement."},
	{Name: "broker.session.timeout.ms", Type: TypeInt, Default: "6000", ReadOnly: true, Validate: between(1000, 6000),
		Doc: "TTL of the broker's registration lease; a broker silent this long is fenced (at most 6 s)."},
	{Name: "compression.gzip.level", Type: TypeInt, Default: "-1", Topic: "compression.gzip.level", Validate: levelOrDefault(1, 9),
		Doc: "Default for the topic config compression.gzip.level."},
	{Name: "compression.lz4.level", Type: TypeInt, Default: "9", Topic: "compression.lz4.level", Validate: between(1, 17),
		Doc: "Default for the topic config compression.lz4.level."},
	{Name: "compression.type", Type: TypeString, Default: "producer", Topic: "compression.type", Validate: oneOf(compressionTypes...),
		Doc: "Default for the topic config compression.type."},
	{Name: "compression.zstd.level", Type: TypeInt, Default: "3", Topic: "compression.zstd.level", Validate: between(-131072, 22),
		Doc: "Default for the topic config compression.zstd.level."},
	{Name: "connections.max.idle.ms", Type: TypeLong, Default: "600000", ReadOnly: true, Validate: atLeast(1),
		Doc: "Close a connection that sends no complete request for this long."},
	{Name: "console.enabled", Type: TypeBoolean, Null: true, ReadOnly: true,
		Doc: "samsa: serve the web console (docs/console.md); unset serves it only when its listener is on a loopback address."},
	{Name: "console.listener", Type: TypeString, Default: "", ReadOnly: true,
		Doc: "samsa: host:port of a separate HTTP listener for the web console; empty serves it on admin.listener under /console/."},
	{Name: "console.read.only", Type: TypeBoolean, Default: "false", ReadOnly: true,
		Doc: "samsa: the web console shows the cluster but refuses every change (create, delete, produce, reset, alter)."},
	{Name: "controlled.shutdown.enable", Type: TypeBoolean, Default: "true", ReadOnly: true,
		Doc: "Move leadership away from the broker before it shuts down."},
	{Name: "controller.listener.names", Type: TypeString, Null: true, ReadOnly: true,
		Doc: "KRaft controller listeners: the listeners named are not opened (samsa has no controller quorum; etcd holds the metadata)."},
	{Name: "controller.quorum.bootstrap.servers", Type: TypeList, Default: "", ReadOnly: true,
		Doc: "KRaft quorum servers; accepted but inert (samsa uses etcd)."},
	{Name: "controller.quorum.voters", Type: TypeList, Default: "", ReadOnly: true,
		Doc: "KRaft quorum voters; accepted but inert (samsa uses etcd)."},
	{Name: "default.replication.factor", Type: TypeInt, Default: "1", ReadOnly: true, Validate: atLeast(1),
		Doc: "Replication factor of automatically created topics."},
	{Name: "delete.topic.enable", Type: TypeBoolean, Default: "true", ReadOnly: true,
		Doc: "Allow DeleteTopics; when false topic deletion is refused."},
	{Name: "eligible.leader.replicas.enable", Type: TypeBoolean, Default: "true", ReadOnly: true,
		Doc: "Keep each partition's eligible leader replicas (KIP-966): replicas that left the ISR while it was below min.insync.replicas hold every committed record, and the controller elects one when no in-sync replica can lead, instead of leaving the partition offline. A replica back from an unclean shutdown under a relaxed flush policy (flush.messages above 1) is then not elected on a membership it had before: it may have lost records it had reported. Kafka 4.1 turns the feature on for new clusters (eligible.leader.replicas.version=1)."},
	{Name: "etcd.advertise.client.urls", Type: TypeList, Default: "", ReadOnly: true,
		Doc: "samsa: client URLs the embedded etcd member announces to the other members; defaults to etcd.listen.client.urls."},
	{Name: "etcd.advertise.peer.urls", Type: TypeList, Default: "", ReadOnly: true,
		Doc: "samsa: peer URLs the embedded etcd member announces; defaults to etcd.listen.peer.urls."},
	{Name: "etcd.client.ssl.ca.file", Type: TypeString, Default: "", ReadOnly: true,
		Doc: "samsa: PEM CA certificates; when set, the embedded etcd member's client URLs accept only clients whose certificate they verify (etcd --trusted-ca-file, --client-cert-auth), and with etcd authentication on, a certificate's common name is its etcd user. Needs etcd.client.ssl.cert.file."},
	{Name: "etcd.client.ssl.cert.file", Type: TypeString, Default: "", ReadOnly: true,
		Doc: "samsa: PEM certificate the embedded etcd member serves its client URLs with (etcd --cert-file); turns TLS on for them (https://, or unixs://; the default becomes https:// on a free loopback port). The broker presents it to etcd too unless etcd.ssl.cert.file is set."},
	{Name: "etcd.client.ssl.key.file", Type: TypeString, Default: "", ReadOnly: true,
		Doc: "samsa: PEM private key of etcd.client.ssl.cert.file (etcd --key-file), unencrypted."},
	{Name: "etcd.connection.timeout.ms", Type: TypeInt, Default: "18000", ReadOnly: true, Validate: atLeast(1),
		Doc: "samsa: how long startup waits for etcd's first answer before it fails, as Kafka's zookeeper.connection.timeout.ms did."},
	{Name: "etcd.endpoints", Type: TypeList, Default: "", ReadOnly: true,
		Doc: "samsa: URLs of an external etcd cluster (http://, https://, unix://, unixs://); empty runs an embedded etcd member."},
	{Name: "etcd.initial.cluster", Type: TypeString, Default: "", ReadOnly: true,
		Doc: "samsa: embedded etcd members as name=http://host:peerport,... (https:// with etcd.peer.ssl.*); empty runs a single member of its own."},
	{Name: "etcd.initial.cluster.state", Type: TypeString, Default: "new", ReadOnly: true, Validate: oneOf("new", "existing"),
		Doc: "samsa: new to form the cluster of etcd.initial.cluster, existing to join one (after etcdctl member add)."},
	{Name: "etcd.listen.client.urls", Type: TypeList, Default: "", ReadOnly: true,
		Doc: "samsa: where the embedded etcd member serves clients; empty is a unix socket in the log dir, or https:// on a free loopback port with etcd.client.ssl.*."},
	{Name: "etcd.listen.peer.urls", Type: TypeList, Default: "", ReadOnly: true,
		Doc: "samsa: where the embedded etcd member serves its peers; with etcd.initial.cluster, defaults to this member's URLs there."},
	{Name: "etcd.name", Type: TypeString, Default: "", ReadOnly: true,
		Doc: "samsa: name of the embedded etcd member, as in etcd.initial.cluster; empty is samsa-<node.id>."},
	{Name: "etcd.password", Type: TypePassword, Null: true, ReadOnly: true, Sensitive: true,
		Doc: "samsa: password of etcd.username; sensitive, never shown by DescribeConfigs."},
	{Name: "etcd.peer.ssl.ca.file", Type: TypeString, Default: "", ReadOnly: true,
		Doc: "samsa: PEM CA certificates that verify the other embedded etcd members: each member accepts and dials only peers with a certificate from them (etcd --peer-trusted-ca-file, --peer-client-cert-auth)."},
	{Name: "etcd.peer.ssl.cert.file", Type: TypeString, Default: "", ReadOnly: true,
		Doc: "samsa: PEM certificate of the embedded etcd member for its peers, presented as server and as client (etcd --peer-cert-file); with etcd.peer.ssl.key.file and etcd.peer.ssl.ca.file, turns on mutual TLS between members, whose peer URLs are then https://."},
	{Name: "etcd.peer.ssl.key.file", Type: TypeString, Default: "", ReadOnly: true,
		Doc: "samsa: PEM private key of etcd.peer.ssl.cert.file (etcd --peer-key-file), unencrypted."},
	{Name: "etcd.ssl.ca.file", Type: TypeString, Default: "", ReadOnly: true,
		Doc: "samsa: PEM file of the CA certificates that verify the etcd servers (etcdctl --cacert); empty uses the system's roots, or etcd.client.ssl.ca.file for an embedded member. Setting any etcd.ssl.* turns TLS on (with an embedded member, only together with etcd.client.ssl.*)."},
	{Name: "etcd.ssl.cert.file", Type: TypeString, Default: "", ReadOnly: true,
		Doc: "samsa: PEM client certificate for etcd's client certificate authentication (etcdctl --cert); needs etcd.ssl.key.file. Reread at each TLS handshake. With an embedded member, presented instead of etcd.client.ssl.cert.file."},
	{Name: "etcd.ssl.key.file", Type: TypeString, Default: "", ReadOnly: true,
		Doc: "samsa: PEM private key of etcd.ssl.cert.file (etcdctl --key), unencrypted."},
	{Name: "etcd.ssl.server.name", Type: TypeString, Default: "", ReadOnly: true,
		Doc: "samsa: host name expected in every etcd server's certificate; empty is each endpoint's own host."},
	{Name: "etcd.username", Type: TypeString, Default: "", ReadOnly: true,
		Doc: "samsa: etcd user the broker authenticates as (etcdctl --user), with etcd.password; empty when etcd authentication is off. External etcd only: an embedded member with etcd.client.ssl.ca.file knows the broker by its certificate's common name."},
	{Name: "fetch.max.bytes", Type: TypeInt, Default: "57671680", Validate: atLeast(1024),
		Doc: "Largest Fetch response the broker builds, over all partitions."},
	{Name: "group.consumer.assignors", Type: TypeList, Default: "uniform,range", ReadOnly: true,
		Validate: listOf("uniform", "range", "org.apache.kafka.coordinator.group.assignor.UniformAssignor", "org.apache.kafka.coordinator.group.assignor.RangeAssignor"),
		Doc:      "Server-side assignors of consumer groups (KIP-848), the default first; a member names one with its ServerAssignor."},
	{Name: "group.consumer.heartbeat.interval.ms", Type: TypeInt, Default: "5000", ReadOnly: true, Validate: atLeast(1),
		Doc: "How often consumer group members (KIP-848) heartbeat."},
	{Name: "group.consumer.max.heartbeat.interval.ms", Type: TypeInt, Default: "15000", ReadOnly: true, Validate: atLeast(1),
		Doc: "Largest group.consumer.heartbeat.interval.ms allowed."},
	{Name: "group.consumer.max.session.timeout.ms", Type: TypeInt, Default: "60000", ReadOnly: true, Validate: atLeast(1),
		Doc: "Largest group.consumer.session.timeout.ms allowed."},
	{Name: "group.consumer.max.size", Type: TypeInt, Default: intMax, ReadOnly: true, Validate: atLeast(1),
		Doc: "Most members a consumer group (KIP-848) may have."},
	{Name: "group.consumer.migration.policy", Type: TypeString, Default: "bidirectional", ReadOnly: true,
		Validate: oneOfFold("bidirectional", "upgrade", "downgrade", "disabled"),
		Doc:      "Online conversion of a non-empty group between the classic and the consumer protocol (KIP-848): upgrade converts a classic group of the consumer protocol type when a ConsumerGroupHeartbeat joins it, downgrade converts a consumer group back when its last consumer-protocol member leaves and the classic members fit group.max.size; bidirectional allows both, disabled neither (case-insensitive, as Kafka)."},
	{Name: "group.consumer.min.heartbeat.interval.ms", Type: TypeInt, Default: "5000", ReadOnly: true, Validate: atLeast(1),
		Doc: "Smallest group.consumer.heartbeat.interval.ms allowed."},
	{Name: "group.consumer.min.session.timeout.ms", Type: TypeInt, Default: "45000", ReadOnly: true, Validate: atLeast(1),
		Doc: "Smallest group.consumer.session.timeout.ms allowed."},
	{Name: "group.consumer.session.timeout.ms", Type: TypeInt, Default: "45000", ReadOnly: true, Validate: atLeast(1),
		Doc: "How long a consumer group member (KIP-848) may go without a heartbeat before it is removed."},
	{Name: "group.initial.rebalance.delay.ms", Type: TypeInt, Default: "3000", ReadOnly: true, Validate: atLeast(0),
		Doc: "How long a new group waits for more members before its first rebalance."},
	{Name: "group.max.session.timeout.ms", Type: TypeInt, Default: "1800000", ReadOnly: true, Validate: atLeast(1),
		Doc: "Largest session timeout a group member may ask for."},
	{Name: "group.share.delivery.count.limit", Type: TypeInt, Default: "5", ReadOnly: true, Validate: atLeast(2),
		Doc: "How many times a share group (KIP-932) delivers a record before it archives it instead of making it available again."},
	{Name: "group.share.heartbeat.interval.ms", Type: TypeInt, Default: "5000", ReadOnly: true, Validate: atLeast(1),
		Doc: "How often share group members (KIP-932) heartbeat."},
	{Name: "group.share.max.delivery.count.limit", Type: TypeInt, Default: "10", ReadOnly: true, Validate: atLeast(2),
		Doc: "Largest share.delivery.count.limit a share group's config may set."},
	{Name: "group.share.max.heartbeat.interval.ms", Type: TypeInt, Default: "15000", ReadOnly: true, Validate: atLeast(1),
		Doc: "Largest share.heartbeat.interval.ms a share group's config may set."},
	{Name: "group.share.max.partition.max.record.locks", Type: TypeInt, Default: "4000", ReadOnly: true, Validate: atLeast(100),
		Doc: "Largest share.partition.max.record.locks a share group's config may set."},
	{Name: "group.share.max.record.lock.duration.ms", Type: TypeInt, Default: "60000", ReadOnly: true, Validate: atLeast(1000),
		Doc: "Largest share.record.lock.duration.ms a share group's config may set."},
	{Name: "group.share.max.session.timeout.ms", Type: TypeInt, Default: "60000", ReadOnly: true, Validate: atLeast(1),
		Doc: "Largest share.session.timeout.ms a share group's config may set."},
	{Name: "group.share.max.share.sessions", Type: TypeInt, Default: "2000", ReadOnly: true, Validate: atLeast(1),
		Doc: "Most share sessions (KIP-932) a broker keeps; opening another is refused with SHARE_SESSION_LIMIT_REACHED until one closes or expires."},
	{Name: "group.share.max.size", Type: TypeInt, Default: "200", ReadOnly: true, Validate: atLeast(1),
		Doc: "Most members a share group (KIP-932) may have."},
	{Name: "group.share.min.delivery.count.limit", Type: TypeInt, Default: "2", ReadOnly: true, Validate: atLeast(2),
		Doc: "Smallest share.delivery.count.limit a share group's config may set."},
	{Name: "group.share.min.heartbeat.interval.ms", Type: TypeInt, Default: "5000", ReadOnly: true, Validate: atLeast(1),
		Doc: "Smallest share.heartbeat.interval.ms a share group's config may set."},
	{Name: "group.share.min.partition.max.record.locks", Type: TypeInt, Default: "100", ReadOnly: true, Validate: atLeast(100),
		Doc: "Smallest share.partition.max.record.locks a share group's config may set."},
	{Name: "group.share.min.record.lock.duration.ms", Type: TypeInt, Default: "15000", ReadOnly: true, Validate: atLeast(1000),
		Doc: "Smallest share.record.lock.duration.ms a share group's config may set."},
	{Name: "group.share.min.session.timeout.ms", Type: TypeInt, Default: "45000", ReadOnly: true, Validate: atLeast(1),
		Doc: "Smallest share.session.timeout.ms a share group's config may set."},
	{Name: "group.share.partition.max.record.locks", Type: TypeInt, Default: "2000", ReadOnly: true, Validate: atLeast(1),
		Doc: "Most records of one share-partition in flight (acquired or waiting for redelivery) at once."},
	{Name: "group.share.record.lock.duration.ms", Type: TypeInt, Default: "30000", ReadOnly: true, Validate: atLeast(1),
		Doc: "How long a share group member holds the records it acquired before they become available to other members again."},
	{Name: "group.share.session.timeout.ms", Type: TypeInt, Default: "45000", ReadOnly: true, Validate: atLeast(1),
		Doc: "How long a share group member (KIP-932) may go without a heartbeat before it is removed."},
	{Name: "group.max.size", Type: TypeInt, Default: intMax, ReadOnly: true, Validate: atLeast(1),
		Doc: "Most members a consumer group may have."},
	{Name: "group.min.session.timeout.ms", Type: TypeInt, Default: "6000", ReadOnly: true, Validate: atLeast(1),
		Doc: "Smallest session timeout a group member may ask for."},
	{Name: "inter.broker.listener.name", Type: TypeString, Null: true, ReadOnly: true,
		Doc: "Listener brokers use to reach each other; defaults to the first listener."},
	{Name: "leader.imbalance.check.interval.seconds", Type: TypeLong, Default: "300", ReadOnly: true, Validate: atLeast(1),
		Doc: "How often the controller checks for leaders away from their preferred replica."},
	{Name: "leader.imbalance.per.broker.percentage", Type: TypeInt, Default: "10", ReadOnly: true, Validate: atLeast(0),
		Doc: "Share of non-preferred leaders on a broker above which leadership is rebalanced."},
	{Name: "listener.security.protocol.map", Type: TypeString, Default: "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL", ReadOnly: true,
		Doc: "Security protocol of each listener name."},
	{Name: "listeners", Type: TypeString, Default: "PLAINTEXT://127.0.0.1:9092", ReadOnly: true, Validate: listenersValid,
		Doc: "Addresses the broker listens on, NAME://host:port, comma separated (loopback by default)."},
	{Name: "log.cleaner.backoff.ms", Type: TypeLong, Default: "15000", ReadOnly: true, Validate: atLeast(1),
		Doc: "How long the log cleaner sleeps when a pass found no log due for cleaning."},
	{Name: "log.cleaner.delete.retention.ms", Type: TypeLong, Default: "86400000", Topic: "delete.retention.ms", Validate: atLeast(0),
		Doc: "Default for the topic config delete.retention.ms."},
	{Name: "log.cleaner.enable", Type: TypeBoolean, Default: "true", ReadOnly: true,
		Doc: "Run the log cleaner for compacted topics."},
	{Name: "log.cleaner.max.compaction.lag.ms", Type: TypeLong, Default: longMax, Topic: "max.compaction.lag.ms", Validate: atLeast(1),
		Doc: "Default for the topic config max.compaction.lag.ms."},
	{Name: "log.cleaner.min.cleanable.ratio", Type: TypeDouble, Default: "0.5", Topic: "min.cleanable.dirty.ratio", Validate: betweenFloat(0, 1),
		Doc: "Default for the topic config min.cleanable.dirty.ratio."},
	{Name: "log.cleaner.min.compaction.lag.ms", Type: TypeLong, Default: "0", Topic: "min.compaction.lag.ms", Validate: atLeast(0),
		Doc: "Default for the topic config min.compaction.lag.ms."},
	{Name: "log.cleaner.threads", Type: TypeInt, Default: "1", Validate: atLeast(0),
		Doc: "Number of log cleaner goroutines."},
	{Name: "log.cleanup.policy", Type: TypeList, Default: "delete", Topic: "cleanup.policy", Validate: listOf("delete", "compact"),
		Doc: "Default for the topic config cleanup.policy."},
	{Name: "log.dirs", Type: TypeString, Default: "./samsa-data", ReadOnly: true,
		Doc: "Directories holding partition logs, comma separated (alias log.dir); a new partition goes to the one with the fewest partitions, the first also holds meta.properties and the embedded etcd member's data."},
	{Name: "log.flush.interval.messages", Type: TypeLong, Default: "1", Topic: "flush.messages", Validate: atLeast(1),
		Doc: "Default for flush.messages: 1 fsyncs before acks=all is answered; " + longMax + " is page-cache mode."},
	{Name: "log.flush.interval.ms", Type: TypeLong, Null: true, Topic: "flush.ms", Validate: atLeast(0),
		Doc: "Default for the topic config flush.ms; null means no time-based flush."},
	{Name: "log.format", Type: TypeString, Default: "text", ReadOnly: true, Validate: oneOf("text", "json"),
		Doc: "samsa: format of the broker's own log on stderr: text (key=value) or json (one object a line)."},
	{Name: "log.level", Type: TypeString, Default: "info", ReadOnly: true, Validate: levelValid,
		Doc: "samsa: lowest level of the broker's own log: debug, info, warn or error; serve's --log-level wins."},
	{Name: "log.level.overrides", Type: TypeList, Default: "", ReadOnly: true, Validate: levelOverridesValid,
		Doc: "samsa: per-package levels, package=level,... (replica=debug,group=warn); packages: " + logPackagesDoc + "."},
	{Name: "log.slow.request.ms", Type: TypeLong, Default: "1000", ReadOnly: true, Validate: atLeast(0),
		Doc: "samsa: a request whose broker time exceeds this is logged at WARN (long-poll waits excluded); 0 disables."},
	{Name: "log.index.interval.bytes", Type: TypeInt, Default: "4096", Topic: "index.interval.bytes", Validate: atLeast(0),
		Doc: "Default for the topic config index.interval.bytes."},
	{Name: "log.index.size.max.bytes", Type: TypeInt, Default: "10485760", Topic: "segment.index.bytes", Validate: atLeast(4),
		Doc: "Default for the topic config segment.index.bytes."},
	{Name: "log.local.retention.bytes", Type: TypeLong, Default: "-2", Topic: "local.retention.bytes", Validate: atLeast(-2),
		Doc: "Default for local.retention.bytes; accepted but inert."},
	{Name: "log.local.retention.ms", Type: TypeLong, Default: "-2", Topic: "local.retention.ms", Validate: atLeast(-2),
		Doc: "Default for local.retention.ms; accepted but inert."},
	{Name: "log.message.downconversion.enable", Type: TypeBoolean, Default: "true", Topic: "message.downconversion.enable",
		Doc: "Default for message.downconversion.enable; accepted but inert."},
	{Name: "log.message.timestamp.after.max.ms", Type: TypeLong, Default: "3600000", Topic: "message.timestamp.after.max.ms", Validate: atLeast(0),
		Doc: "Default for the topic config message.timestamp.after.max.ms."},
	{Name: "log.message.timestamp.before.max.ms", Type: TypeLong, Default: longMax, Topic: "message.timestamp.before.max.ms", Validate: atLeast(0),
		Doc: "Default for the topic config message.timestamp.before.max.ms."},
	{Name: "log.message.timestamp.difference.max.ms", Type: TypeLong, Default: longMax, Topic: "message.timestamp.difference.max.ms", Validate: atLeast(0),
		Doc: "Deprecated default for message.timestamp.difference.max.ms; accepted but inert."},
	{Name: "log.message.timestamp.type", Type: TypeString, Default: "CreateTime", Topic: "message.timestamp.type", Validate: oneOf("CreateTime", "LogAppendTime"),
		Doc: "Default for the topic config message.timestamp.type."},
	{Name: "log.preallocate", Type: TypeBoolean, Default: "false", Topic: "preallocate",
		Doc: "Default for preallocate; accepted but inert."},
	{Name: "log.retention.bytes", Type: TypeLong, Default: "-1", Topic: "retention.bytes",
		Doc: "Default for the topic config retention.bytes."},
	{Name: "log.retention.check.interval.ms", Type: TypeLong, Default: "300000", Validate: atLeast(1),
		Doc: "How often the broker looks for segments to delete."},
	{Name: "log.retention.hours", Type: TypeInt, Default: "168", Topic: "retention.ms",
		Doc: "Default retention in hours, used when log.retention.ms and log.retention.minutes are unset."},
	{Name: "log.retention.minutes", Type: TypeInt, Null: true, Topic: "retention.ms",
		Doc: "Default retention in minutes, used when log.retention.ms is unset."},
	{Name: "log.retention.ms", Type: TypeLong, Null: true, Topic: "retention.ms",
		Doc: "Default for the topic config retention.ms; -1 keeps segments forever."},
	{Name: "log.roll.hours", Type: TypeInt, Default: "168", Topic: "segment.ms", Validate: atLeast(1),
		Doc: "Default segment age in hours before a roll, used when log.roll.ms is unset."},
	{Name: "log.roll.jitter.hours", Type: TypeInt, Default: "0", Topic: "segment.jitter.ms", Validate: atLeast(0),
		Doc: "Default roll jitter in hours, used when log.roll.jitter.ms is unset."},
	{Name: "log.roll.jitter.ms", Type: TypeLong, Null: true, Topic: "segment.jitter.ms", Validate: atLeast(0),
		Doc: "Default for the topic config segment.jitter.ms."},
	{Name: "log.roll.ms", Type: TypeLong, Null: true, Topic: "segment.ms", Validate: atLeast(1),
		Doc: "Default for the topic config segment.ms."},
	{Name: "log.segment.bytes", Type: TypeInt, Default: "1073741824", Topic: "segment.bytes", Validate: atLeast(14),
		Doc: "Default for the topic config segment.bytes."},
	{Name: "log.segment.delete.delay.ms", Type: TypeLong, Default: "60000", Topic: "file.delete.delay.ms", Validate: atLeast(0),
		Doc: "Default for the topic config file.delete.delay.ms."},
	{Name: "max.incremental.fetch.session.cache.slots", Type: TypeInt, Default: "1000", ReadOnly: true, Validate: atLeast(0),
		Doc: "Most incremental fetch sessions (KIP-227) the broker keeps, for consumers and followers together; 0 creates none, and every fetch is a full one. samsa keeps them in one cache, where Kafka divides them among 8 shards."},
	{Name: "message.max.bytes", Type: TypeInt, Default: "1048588", Topic: "max.message.bytes", Validate: atLeast(0),
		Doc: "Default for the topic config max.message.bytes."},
	{Name: "metrics.partition.level", Type: TypeBoolean, Default: "true", ReadOnly: true,
		Doc: "samsa: export the per-partition series on /metrics (log size, segments and offsets, consumer lag by partition); false keeps the per-topic ones only, for brokers with many partitions."},
	{Name: "min.incremental.fetch.session.eviction.ms", Type: TypeLong, Default: "120000", ReadOnly: true, Validate: atLeast(0),
		Doc: "A fetch session unused for longer may be evicted by any new one, and one created longer ago by a larger or a follower's one (KIP-227; Kafka fixes it at 120000)."},
	{Name: "min.insync.replicas", Type: TypeInt, Default: "1", Topic: "min.insync.replicas", Validate: atLeast(1),
		Doc: "Default for the topic config min.insync.replicas."},
	{Name: "node.id", Type: TypeInt, Default: "0", ReadOnly: true, Validate: atLeast(0),
		Doc: "Id of this broker in the cluster (alias broker.id)."},
	{Name: "num.io.threads", Type: TypeInt, Default: "8", ReadOnly: true, Validate: atLeast(1),
		Doc: "Request handler threads; accepted but inert (samsa uses goroutines)."},
	{Name: "num.network.threads", Type: TypeInt, Default: "3", ReadOnly: true, Validate: atLeast(1),
		Doc: "Network threads; accepted but inert (samsa uses goroutines per connection)."},
	{Name: "num.partitions", Type: TypeInt, Default: "1", ReadOnly: true, Validate: atLeast(1),
		Doc: "Partition count of automatically created topics."},
	{Name: "num.recovery.threads.per.data.dir", Type: TypeInt, Default: "2", ReadOnly: true, Validate: atLeast(1),
		Doc: "Goroutines per log directory that recover logs at startup."},
	{Name: "num.replica.fetchers", Type: TypeInt, Default: "1", ReadOnly: true, Validate: atLeast(1),
		Doc: "Follower fetch connections per source broker."},
	{Name: "offsets.retention.minutes", Type: TypeInt, Default: "10080", ReadOnly: true, Validate: atLeast(1),
		Doc: "How long committed offsets of an empty group are kept."},
	{Name: "offsets.topic.num.partitions", Type: TypeInt, Default: "50", ReadOnly: true, Validate: atLeast(1),
		Doc: "Partition count of __consumer_offsets; do not change once the topic exists."},
	{Name: "offsets.topic.replication.factor", Type: TypeShort, Default: "3", ReadOnly: true, Validate: atLeast(1),
		Doc: "Replication factor of __consumer_offsets, clamped to the live brokers."},
	{Name: "offsets.topic.segment.bytes", Type: TypeInt, Default: "104857600", ReadOnly: true, Validate: atLeast(1),
		Doc: "segment.bytes of __consumer_offsets."},
	{Name: "process.roles", Type: TypeList, Default: "", ReadOnly: true,
		Doc: "KRaft roles; accepted but inert (every samsa process is a broker)."},
	{Name: "producer.id.expiration.ms", Type: TypeInt, Default: "86400000", Validate: atLeast(1),
		Doc: "How long an idle producer id's state is kept."},
	{Name: "queued.max.requests", Type: TypeInt, Default: "500", ReadOnly: true, Validate: atLeast(1),
		Doc: "Requests of one connection that may await their response before reading stops."},
	{Name: "replica.fetch.max.bytes", Type: TypeInt, Default: "1048576", ReadOnly: true, Validate: atLeast(0),
		Doc: "Bytes a follower asks for per partition in one fetch."},
	{Name: "replica.fetch.min.bytes", Type: TypeInt, Default: "1", ReadOnly: true, Validate: atLeast(1),
		Doc: "Bytes a follower fetch waits for."},
	{Name: "replica.fetch.response.max.bytes", Type: TypeInt, Default: "10485760", ReadOnly: true, Validate: atLeast(0),
		Doc: "Bytes a follower asks for in one fetch over all partitions."},
	{Name: "replica.fetch.wait.max.ms", Type: TypeInt, Default: "500", ReadOnly: true, Validate: atLeast(0),
		Doc: "Longest time a follower fetch waits on the leader."},
	{Name: "replica.lag.time.max.ms", Type: TypeLong, Default: "30000", ReadOnly: true, Validate: atLeast(1),
		Doc: "A follower not caught up for this long leaves the ISR."},
	{Name: "replica.selector.class", Type: TypeString, Null: true, ReadOnly: true, Validate: oneOf("", RackAwareReplicaSelector),
		Doc: "How a leader picks the replica a consumer fetches from (KIP-392): unset, always the leader; " + RackAwareReplicaSelector + ", an in-sync replica in the consumer's client.rack."},
	{Name: "share.coordinator.state.topic.min.isr", Type: TypeInt, Default: "2", ReadOnly: true, Validate: atLeast(1),
		Doc: "min.insync.replicas of __share_group_state (at most its replication factor)."},
	{Name: "share.coordinator.state.topic.num.partitions", Type: TypeInt, Default: "50", ReadOnly: true, Validate: atLeast(1),
		Doc: "Partitions of __share_group_state, the share coordinator's topic of share-partition state (KIP-932)."},
	{Name: "share.coordinator.state.topic.replication.factor", Type: TypeShort, Default: "3", ReadOnly: true, Validate: atLeast(1),
		Doc: "Replication factor of __share_group_state (at most the live brokers when it is created)."},
	{Name: "share.auto.offset.reset", Type: TypeString, Default: "latest", ReadOnly: true, Validate: oneOf("latest", "earliest"),
		Doc: "Where a share group starts reading a partition it has no state for: latest (the high watermark) or earliest (the log start). The default of the share.auto.offset.reset group config, for share groups that do not set it."},
	{Name: "share.isolation.level", Type: TypeString, Default: "read_uncommitted", ReadOnly: true, Validate: oneOf("read_uncommitted", "read_committed"),
		Doc: "Which records share groups deliver: read_uncommitted (every record up to the high watermark) or read_committed (committed records up to the last stable offset; aborted transactions' records and control batches are archived, never delivered). The default of the share.isolation.level group config, for share groups that do not set it."},
	{Name: "socket.receive.buffer.bytes", Type: TypeInt, Default: "102400", ReadOnly: true,
		Doc: "SO_RCVBUF of client sockets; -1 keeps the OS default."},
	{Name: "socket.request.max.bytes", Type: TypeInt, Default: "104857600", ReadOnly: true, Validate: atLeast(1),
		Doc: "Largest request frame; a larger one closes the connection."},
	{Name: "socket.send.buffer.bytes", Type: TypeInt, Default: "102400", ReadOnly: true,
		Doc: "SO_SNDBUF of client sockets; -1 keeps the OS default."},
	{Name: "transaction.abort.timed.out.transaction.cleanup.interval.ms", Type: TypeInt, Default: "10000", ReadOnly: true, Validate: atLeast(1),
		Doc: "How often the transaction coordinator aborts transactions past their timeout."},
	{Name: "transaction.max.timeout.ms", Type: TypeInt, Default: "900000", ReadOnly: true, Validate: atLeast(1),
		Doc: "Largest transaction timeout a producer may ask for."},
	{Name: "transaction.partition.verification.enable", Type: TypeBoolean, Default: "true", ReadOnly: true,
		Doc: "Verify with the transaction coordinator that a transactional batch's partition is in its transaction before appending it (KIP-890)."},
	{Name: "transaction.remove.expired.transaction.cleanup.interval.ms", Type: TypeInt, Default: "3600000", ReadOnly: true, Validate: atLeast(1),
		Doc: "How often the transaction coordinator removes transactional ids past transactional.id.expiration.ms."},
	{Name: "transaction.state.log.min.isr", Type: TypeInt, Default: "2", ReadOnly: true, Validate: atLeast(1),
		Doc: "min.insync.replicas of __transaction_state, clamped to its replication factor."},
	{Name: "transaction.state.log.num.partitions", Type: TypeInt, Default: "50", ReadOnly: true, Validate: atLeast(1),
		Doc: "Partition count of __transaction_state."},
	{Name: "transaction.state.log.replication.factor", Type: TypeShort, Default: "3", ReadOnly: true, Validate: atLeast(1),
		Doc: "Replication factor of __transaction_state, clamped to the live brokers."},
	{Name: "transaction.state.log.segment.bytes", Type: TypeInt, Default: "104857600", ReadOnly: true, Validate: atLeast(1),
		Doc: "segment.bytes of __transaction_state."},
	{Name: "transaction.version", Type: TypeShort, Default: "2", ReadOnly: true, Validate: between(0, 2),
		Doc: "Level of the transaction.version feature the broker advertises in ApiVersions: 2 tells clients to use transaction version 2 (KIP-890 part 2: partitions added by the first produce, the epoch bumped at every commit or abort); 0 or 1 keeps them on version 1. Requests of either version are served whatever the level."},
	{Name: "transactional.id.expiration.ms", Type: TypeInt, Default: "604800000", ReadOnly: true, Validate: atLeast(1),
		Doc: "How long an idle transactional id is kept."},
	{Name: "unclean.leader.election.enable", Type: TypeBoolean, Default: "false", Topic: "unclean.leader.election.enable",
		Doc: "Default for the topic config unclean.leader.election.enable."},
}

// aliases maps alternative broker config names to canonical ones.
var aliases = map[string]string{
	"broker.id": "node.id",
	"log.dir":   "log.dirs",
}

var (
	brokerIndex = indexBroker()
	topicIndex  = index(topicDefs)
)

// indexBroker adds the security configs to brokerDefs and indexes them.
func indexBroker() map[string]int {
	brokerDefs = append(brokerDefs, securityDefs...)
	return index(brokerDefs)
}

func index(defs []Def) map[string]int {
	sort.Slice(defs, func(i, j int) bool { return defs[i].Name < defs[j].Name })
	m := make(map[string]int, len(defs))
	for i, d := range defs {
		if _, dup := m[d.Name]; dup {
			panic("config: duplicate def " + d.Name)
		}
		m[d.Name] = i
	}
	return m
}

// BrokerDefs returns the broker configs sorted by name. The caller owns the
// returned slice.
func BrokerDefs() []Def { return append([]Def(nil), brokerDefs...) }

// TopicDefs returns the topic configs sorted by name. The caller owns the
// returned slice.
func TopicDefs() []Def { return append([]Def(nil), topicDefs...) }

// LookupBroker returns the broker config named name; aliases (broker.id,
// log.dir) resolve to their canonical def.
func LookupBroker(name string) (Def, bool) {
	if c, ok := aliases[name]; ok {
		name = c
	}
	i, ok := brokerIndex[name]
	if !ok {
		return Def{}, false
	}
	return brokerDefs[i], true
}

// LookupTopic returns the topic config named name.
func LookupTopic(name string) (Def, bool) {
	i, ok := topicIndex[name]
	if !ok {
		return Def{}, false
	}
	return topicDefs[i], true
}

// CanonicalBrokerName resolves an alias to its canonical broker config name;
// other names come back unchanged.
func CanonicalBrokerName(name string) string {
	if c, ok := aliases[name]; ok {
		return c
	}
	return name
}
