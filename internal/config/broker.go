package config

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
)

// Listener is one entry of listeners or advertised.listeners,
// written NAME://host:port. Name is the listener name (PLAINTEXT unless
// named otherwise); an empty Host means every interface.
type Listener struct {
	Name string
	Host string
	Port int
}

// String returns the listener as NAME://host:port.
func (l Listener) String() string {
	return l.Name + "://" + net.JoinHostPort(l.Host, strconv.Itoa(l.Port))
}

// Addr returns host:port, suitable for net.Listen.
func (l Listener) Addr() string { return net.JoinHostPort(l.Host, strconv.Itoa(l.Port)) }

// ParseListeners parses a comma-separated list of NAME://host:port
// entries. Names are upper-cased and must be unique; ports must lie in
// 0..65535. An IPv6 host is written in brackets.
func ParseListeners(v string) ([]Listener, error) {
	items := splitList(v)
	if len(items) == 0 {
		return nil, errors.New("no listener")
	}
	seen := make(map[string]bool, len(items))
	out := make([]Listener, 0, len(items))
	for _, it := range items {
		name, addr, ok := strings.Cut(it, "://")
		if !ok || name == "" {
			return nil, fmt.Errorf("listener %q: want NAME://host:port", it)
		}
		for _, c := range name {
			if !(c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
				return nil, fmt.Errorf("listener %q: bad name", it)
			}
		}
		host, portStr, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("listener %q: %w", it, err)
		}
		port, err := strconv.Atoi(portStr)
		if err != nil || port < 0 || port > 65535 {
			return nil, fmt.Errorf("listener %q: bad port", it)
		}
		name = strings.ToUpper(name)
		if seen[name] {
			return nil, fmt.Errorf("listener %q: duplicate name %s", it, name)
		}
		seen[name] = true
		out = append(out, Listener{Name: name, Host: host, Port: port})
	}
	return out, nil
}

// Broker is the typed broker configuration. Fields carry Kafka's config
// names in their comments; see BrokerDefs for defaults and meaning.
type Broker struct {
	NodeID                  int32      // node.id (alias broker.id)
	Listeners               []Listener // listeners
	AdvertisedListeners     []Listener // advertised.listeners, default listeners
	InterBrokerListenerName string     // inter.broker.listener.name, else security.inter.broker.protocol, else the first listener's name
	// SecureListeners are Listeners with their security protocol from
	// listener.security.protocol.map (ListenerProtocols).
	SecureListeners                             []ListenerSecurity
	ListenerProtocols                           map[string]string // listener.security.protocol.map
	SecurityInterBrokerProtocol                 string            // security.inter.broker.protocol; "" if unset
	SASLMechanismInterBroker                    string            // sasl.mechanism.inter.broker.protocol
	ConnectionsMaxReauthMs                      int64             // connections.max.reauth.ms
	ConnectionFailedAuthDelayMs                 int32             // connection.failed.authentication.delay.ms
	SASLOAuthBearerAllowedURLs                  []string          // sasl.oauthbearer.allowed.urls
	AuthorizerClassName                         string            // authorizer.class.name
	SuperUsers                                  []string          // super.users
	AllowEveryoneIfNoACLFound                   bool              // allow.everyone.if.no.acl.found
	QuotaWindowNum                              int32             // quota.window.num
	QuotaWindowSizeSeconds                      int32             // quota.window.size.seconds
	MaxConnections                              int32             // max.connections; per listener: ListenerInt64
	MaxConnectionsPerIP                         int32             // max.connections.per.ip
	MaxConnectionsPerIPOverrides                string            // max.connections.per.ip.overrides, ip:count,...
	MaxConnectionCreationRate                   int32             // max.connection.creation.rate; per listener: ListenerInt64
	LogDirs                                     []string          // log.dirs (alias log.dir)
	NumPartitions                               int32             // num.partitions
	DefaultReplicationFactor                    int16             // default.replication.factor
	AutoCreateTopics                            bool              // auto.create.topics.enable
	DeleteTopicEnable                           bool              // delete.topic.enable
	MessageMaxBytes                             int32             // message.max.bytes
	FetchMaxBytes                               int32             // fetch.max.bytes
	SocketRequestMaxBytes                       int32             // socket.request.max.bytes
	SocketSendBufferBytes                       int32             // socket.send.buffer.bytes
	SocketReceiveBufferBytes                    int32             // socket.receive.buffer.bytes
	ConnectionsMaxIdleMs                        int64             // connections.max.idle.ms
	QueuedMaxRequests                           int32             // queued.max.requests
	LogSegmentBytes                             int64             // log.segment.bytes
	LogRollMs                                   int64             // log.roll.ms, else log.roll.hours
	LogRollJitterMs                             int64             // log.roll.jitter.ms, else log.roll.jitter.hours
	LogRetentionMs                              int64             // log.retention.ms, else .minutes, else .hours; -1 unlimited
	LogRetentionBytes                           int64             // log.retention.bytes
	LogRetentionCheckIntervalMs                 int64             // log.retention.check.interval.ms
	LogIndexIntervalBytes                       int32             // log.index.interval.bytes
	LogIndexSizeMaxBytes                        int32             // log.index.size.max.bytes
	LogFlushIntervalMessages                    int64             // log.flush.interval.messages
	LogFlushIntervalMs                          int64             // log.flush.interval.ms; -1 when null
	LogCleanupPolicy                            string            // log.cleanup.policy
	LogCleanerEnable                            bool              // log.cleaner.enable
	LogCleanerBackoffMs                         int64             // log.cleaner.backoff.ms
	MetricsPartitionLevel                       bool              // metrics.partition.level
	LogCleanerThreads                           int32             // log.cleaner.threads
	LogMessageTimestampType                     string            // log.message.timestamp.type
	LogSegmentDeleteDelayMs                     int64             // log.segment.delete.delay.ms
	NumRecoveryThreadsPerDataDir                int32             // num.recovery.threads.per.data.dir
	CompressionType                             string            // compression.type
	MinInsyncReplicas                           int32             // min.insync.replicas
	UncleanLeaderElectionEnable                 bool              // unclean.leader.election.enable
	EligibleLeaderReplicasEnable                bool              // eligible.leader.replicas.enable
	OffsetsTopicNumPartitions                   int32             // offsets.topic.num.partitions
	OffsetsTopicReplicationFactor               int16             // offsets.topic.replication.factor
	OffsetsTopicSegmentBytes                    int32             // offsets.topic.segment.bytes
	OffsetsRetentionMinutes                     int32             // offsets.retention.minutes
	GroupInitialRebalanceDelayMs                int32             // group.initial.rebalance.delay.ms
	GroupMinSessionTimeoutMs                    int32             // group.min.session.timeout.ms
	GroupMaxSessionTimeoutMs                    int32             // group.max.session.timeout.ms
	GroupMaxSize                                int32             // group.max.size
	GroupConsumerSessionTimeoutMs               int32             // group.consumer.session.timeout.ms
	GroupConsumerMinSessionTimeoutMs            int32             // group.consumer.min.session.timeout.ms
	GroupConsumerMaxSessionTimeoutMs            int32             // group.consumer.max.session.timeout.ms
	GroupConsumerHeartbeatIntervalMs            int32             // group.consumer.heartbeat.interval.ms
	GroupConsumerMinHeartbeatIntervalMs         int32             // group.consumer.min.heartbeat.interval.ms
	GroupConsumerMaxHeartbeatIntervalMs         int32             // group.consumer.max.heartbeat.interval.ms
	GroupConsumerMaxSize                        int32             // group.consumer.max.size
	GroupShareDeliveryCountLimit                int32             // group.share.delivery.count.limit
	GroupShareHeartbeatIntervalMs               int32             // group.share.heartbeat.interval.ms
	GroupShareMaxShareSessions                  int32             // group.share.max.share.sessions
	GroupShareMinDeliveryCountLimit             int32             // group.share.min.delivery.count.limit
	GroupShareMaxDeliveryCountLimit             int32             // group.share.max.delivery.count.limit
	GroupShareMinHeartbeatIntervalMs            int32             // group.share.min.heartbeat.interval.ms
	GroupShareMaxHeartbeatIntervalMs            int32             // group.share.max.heartbeat.interval.ms
	GroupShareMinRecordLockDurationMs           int32             // group.share.min.record.lock.duration.ms
	GroupShareMaxRecordLockDurationMs           int32             // group.share.max.record.lock.duration.ms
	GroupShareMinSessionTimeoutMs               int32             // group.share.min.session.timeout.ms
	GroupShareMaxSessionTimeoutMs               int32             // group.share.max.session.timeout.ms
	GroupShareMaxSize                           int32             // group.share.max.size
	GroupSharePartitionMaxRecordLocks           int32             // group.share.partition.max.record.locks
	GroupShareMinPartitionMaxRecordLocks        int32             // group.share.min.partition.max.record.locks
	GroupShareMaxPartitionMaxRecordLocks        int32             // group.share.max.partition.max.record.locks
	GroupShareRecordLockDurationMs              int32             // group.share.record.lock.duration.ms
	GroupShareSessionTimeoutMs                  int32             // group.share.session.timeout.ms
	ShareAutoOffsetReset                        string            // share.auto.offset.reset
	ShareCoordinatorStateTopicMinISR            int32             // share.coordinator.state.topic.min.isr
	ShareCoordinatorStateTopicNumPartitions     int32             // share.coordinator.state.topic.num.partitions
	ShareCoordinatorStateTopicReplicationFactor int16             // share.coordinator.state.topic.replication.factor
	ShareIsolationLevel                         string            // share.isolation.level
	GroupConsumerAssignors                      []string          // group.consumer.assignors
	TransactionStateLogNumParts                 int32             // transaction.state.log.num.partitions
	TransactionStateLogRF                       int16             // transaction.state.log.replication.factor
	TransactionStateLogMinISR                   int32             // transaction.state.log.min.isr
	TransactionMaxTimeoutMs                     int32             // transaction.max.timeout.ms
	TransactionalIDExpirationMs                 int32             // transactional.id.expiration.ms
	TransactionStateLogSegmentBytes             int32             // transaction.state.log.segment.bytes
	TransactionAbortTimedOutCleanupIntervalMs   int32             // transaction.abort.timed.out.transaction.cleanup.interval.ms
	TransactionRemoveExpiredCleanupIntervalMs   int32             // transaction.remove.expired.transaction.cleanup.interval.ms
	TransactionPartitionVerificationEnable      bool              // transaction.partition.verification.enable
	TransactionVersion                          int16             // transaction.version
	ProducerIDExpirationMs                      int32             // producer.id.expiration.ms
	ReplicaLagTimeMaxMs                         int64             // replica.lag.time.max.ms
	ReplicaSelectorClass                        string            // replica.selector.class; "" or RackAwareReplicaSelector
	ReplicaFetchMaxBytes                        int32             // replica.fetch.max.bytes
	ReplicaFetchMinBytes                        int32             // replica.fetch.min.bytes
	ReplicaFetchResponseMaxBytes                int32             // replica.fetch.response.max.bytes
	ReplicaFetchWaitMaxMs                       int32             // replica.fetch.wait.max.ms
	MaxIncrementalFetchSessionCacheSlots        int32             // max.incremental.fetch.session.cache.slots
	MinIncrementalFetchSessionEvictionMs        int64             // min.incremental.fetch.session.eviction.ms
	NumReplicaFetchers                          int32             // num.replica.fetchers
	AutoLeaderRebalanceEnable                   bool              // auto.leader.rebalance.enable
	LeaderImbalanceCheckIntervalS               int64             // leader.imbalance.check.interval.seconds
	LeaderImbalancePerBrokerPct                 int32             // leader.imbalance.per.broker.percentage
	ControlledShutdownEnable                    bool              // controlled.shutdown.enable
	BrokerRack                                  string            // broker.rack; "" when unset
	BrokerSessionTimeoutMs                      int64             // broker.session.timeout.ms
	BrokerHeartbeatIntervalMs                   int64             // broker.heartbeat.interval.ms
	EtcdEndpoints                               []string          // etcd.endpoints; empty runs an embedded etcd
	EtcdName                                    string            // etcd.name; "" is samsa-<node.id>
	EtcdInitialCluster                          string            // etcd.initial.cluster; "" is a single member
	EtcdInitialClusterState                     string            // etcd.initial.cluster.state: new or existing
	EtcdListenPeerURLs                          []string          // etcd.listen.peer.urls
	EtcdAdvertisePeerURLs                       []string          // etcd.advertise.peer.urls
	EtcdListenClientURLs                        []string          // etcd.listen.client.urls
	EtcdAdvertiseClientURLs                     []string          // etcd.advertise.client.urls
	EtcdSSLCAFile                               string            // etcd.ssl.ca.file; see EtcdTLS
	EtcdSSLCertFile                             string            // etcd.ssl.cert.file
	EtcdSSLKeyFile                              string            // etcd.ssl.key.file
	EtcdSSLServerName                           string            // etcd.ssl.server.name
	EtcdPeerSSLCertFile                         string            // etcd.peer.ssl.cert.file; see checkEmbeddedEtcd
	EtcdPeerSSLKeyFile                          string            // etcd.peer.ssl.key.file
	EtcdPeerSSLCAFile                           string            // etcd.peer.ssl.ca.file
	EtcdClientSSLCertFile                       string            // etcd.client.ssl.cert.file
	EtcdClientSSLKeyFile                        string            // etcd.client.ssl.key.file
	EtcdClientSSLCAFile                         string            // etcd.client.ssl.ca.file
	EtcdUsername                                string            // etcd.username; "" without etcd authentication
	EtcdPassword                                string            // etcd.password (sensitive)
	EtcdConnectionTimeoutMs                     int32             // etcd.connection.timeout.ms
	AdminListener                               string            // admin.listener; "" disables it
	ConsoleEnabled                              *bool             // console.enabled; nil: on when its listener is loopback
	ConsoleListener                             string            // console.listener; "" serves the console on admin.listener
	ConsoleReadOnly                             bool              // console.read.only
	GroupConsumerMigrationPolicy                string            // group.consumer.migration.policy, lower case

	// The broker's own log (not a partition log).
	LogFormat         string                // log.format: text or json
	LogLevel          slog.Level            // log.level
	LogLevelOverrides map[string]slog.Level // log.level.overrides, package=level
	LogSlowRequestMs  int64                 // log.slow.request.ms; 0 disables

	// Raw holds every value set explicitly (file, then overrides), by
	// canonical name.
	Raw map[string]string

	// Warnings are what Load accepted without applying: Kafka configs
	// that have no meaning in samsa, KRaft controller listeners. samsa
	// serve logs each; config validate prints them.
	Warnings []string
}

// Load reads a Kafka-style properties file (path may be "" for none) and
// then applies overrides, each "name=value", which win over the file.
// Aliases (broker.id, log.dir) resolve to their canonical names. An unknown
// name is an error wrapping ErrUnknownConfig; a bad value one wrapping
// ErrInvalidConfig; both contain the name.
func Load(path string, overrides []string) (*Broker, error) {
	raw := make(map[string]string)
	notes := &loadNotes{}
	if path != "" {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("config: %w", err)
		}
		props, err := ParseProperties(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("config: %s: %w", path, err)
		}
		// Apply in name order so that errors are deterministic.
		names := make([]string, 0, len(props))
		for n := range props {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			if err := setRaw(raw, n, props[n], notes); err != nil {
				return nil, fmt.Errorf("config: %s: %w", path, err)
			}
		}
	}
	for _, o := range overrides {
		n, v, ok := strings.Cut(o, "=")
		if !ok {
			return nil, fmt.Errorf("%w: override %q: want name=value", ErrInvalidConfig, o)
		}
		if err := setRaw(raw, strings.TrimSpace(n), strings.TrimSpace(v), notes); err != nil {
			return nil, err
		}
	}
	b, err := FromRaw(raw)
	if err != nil {
		return nil, err
	}
	b.Warnings = append(notes.warnings(), b.Warnings...)
	return b, nil
}

// setRaw checks value and stores it under name's canonical name. A Kafka
// name samsa does not define is noted in notes (which may be nil) when it
// is inert, and an error otherwise; see checkKafkaName.
func setRaw(raw map[string]string, name, value string, notes *loadNotes) error {
	d, ok := LookupBroker(name)
	if !ok {
		if d, ok = lookupScoped(name); ok {
			if err := d.Check(value); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			raw[name] = value
			return nil
		}
		return checkKafkaName(name, value, notes)
	}
	if err := d.Check(value); err != nil {
		return err
	}
	raw[d.Name] = value
	return nil
}

// FromRaw builds a Broker from explicitly set values keyed by broker config
// name (aliases allowed); every other config takes its default.
func FromRaw(set map[string]string) (*Broker, error) {
	raw := make(map[string]string, len(set))
	for n, v := range set {
		if err := setRaw(raw, n, v, nil); err != nil {
			return nil, err
		}
	}
	r := resolver{raw: raw}
	b := &Broker{Raw: raw}
	b.NodeID = r.int32("node.id")
	b.Listeners = r.listeners("listeners")
	if r.isNull("advertised.listeners") {
		b.AdvertisedListeners = append([]Listener(nil), b.Listeners...)
	} else {
		b.AdvertisedListeners = r.listeners("advertised.listeners")
	}
	if err := b.dropControllerListeners(splitList(r.str("controller.listener.names"))); err != nil {
		return nil, err
	}
	b.InterBrokerListenerName = strings.ToUpper(r.str("inter.broker.listener.name"))
	if b.InterBrokerListenerName == "" {
		b.InterBrokerListenerName = strings.ToUpper(strings.TrimSpace(r.str("security.inter.broker.protocol")))
	}
	if b.InterBrokerListenerName == "" && len(b.Listeners) > 0 {
		b.InterBrokerListenerName = b.Listeners[0].Name
	}
	b.LogDirs = splitList(r.str("log.dirs"))
	b.NumPartitions = r.int32("num.partitions")
	b.DefaultReplicationFactor = int16(min(r.int64("default.replication.factor"), math.MaxInt16))
	b.AutoCreateTopics = r.bool("auto.create.topics.enable")
	b.DeleteTopicEnable = r.bool("delete.topic.enable")
	b.MessageMaxBytes = r.int32("message.max.bytes")
	b.FetchMaxBytes = r.int32("fetch.max.bytes")
	b.SocketRequestMaxBytes = r.int32("socket.request.max.bytes")
	b.SocketSendBufferBytes = r.int32("socket.send.buffer.bytes")
	b.SocketReceiveBufferBytes = r.int32("socket.receive.buffer.bytes")
	b.ConnectionsMaxIdleMs = r.int64("connections.max.idle.ms")
	b.QueuedMaxRequests = r.int32("queued.max.requests")
	b.LogSegmentBytes = r.int64("log.segment.bytes")
	b.LogRollMs = r.msOr("log.roll.ms", "", "log.roll.hours")
	b.LogRollJitterMs = r.msOr("log.roll.jitter.ms", "", "log.roll.jitter.hours")
	b.LogRetentionMs = r.msOr("log.retention.ms", "log.retention.minutes", "log.retention.hours")
	if b.LogRetentionMs < 0 {
		b.LogRetentionMs = -1
	}
	b.LogRetentionBytes = r.int64("log.retention.bytes")
	b.LogRetentionCheckIntervalMs = r.int64("log.retention.check.interval.ms")
	b.LogIndexIntervalBytes = r.int32("log.index.interval.bytes")
	b.LogIndexSizeMaxBytes = r.int32("log.index.size.max.bytes")
	b.LogFlushIntervalMessages = r.int64("log.flush.interval.messages")
	b.LogFlushIntervalMs = -1
	if !r.isNull("log.flush.interval.ms") {
		b.LogFlushIntervalMs = r.int64("log.flush.interval.ms")
	}
	b.LogCleanupPolicy = strings.Join(splitList(r.str("log.cleanup.policy")), ",")
	b.LogCleanerEnable = r.bool("log.cleaner.enable")
	b.LogCleanerBackoffMs = r.int64("log.cleaner.backoff.ms")
	b.MetricsPartitionLevel = r.bool("metrics.partition.level")
	b.LogCleanerThreads = r.int32("log.cleaner.threads")
	b.LogMessageTimestampType = strings.TrimSpace(r.str("log.message.timestamp.type"))
	b.LogSegmentDeleteDelayMs = r.int64("log.segment.delete.delay.ms")
	b.NumRecoveryThreadsPerDataDir = r.int32("num.recovery.threads.per.data.dir")
	b.CompressionType = strings.TrimSpace(r.str("compression.type"))
	b.MinInsyncReplicas = r.int32("min.insync.replicas")
	b.UncleanLeaderElectionEnable = r.bool("unclean.leader.election.enable")
	b.EligibleLeaderReplicasEnable = r.bool("eligible.leader.replicas.enable")
	b.OffsetsTopicNumPartitions = r.int32("offsets.topic.num.partitions")
	b.OffsetsTopicReplicationFactor = int16(r.int64("offsets.topic.replication.factor"))
	b.OffsetsTopicSegmentBytes = r.int32("offsets.topic.segment.bytes")
	b.OffsetsRetentionMinutes = r.int32("offsets.retention.minutes")
	b.GroupInitialRebalanceDelayMs = r.int32("group.initial.rebalance.delay.ms")
	b.GroupMinSessionTimeoutMs = r.int32("group.min.session.timeout.ms")
	b.GroupMaxSessionTimeoutMs = r.int32("group.max.session.timeout.ms")
	b.GroupMaxSize = r.int32("group.max.size")
	b.GroupConsumerSessionTimeoutMs = r.int32("group.consumer.session.timeout.ms")
	b.GroupConsumerMinSessionTimeoutMs = r.int32("group.consumer.min.session.timeout.ms")
	b.GroupConsumerMaxSessionTimeoutMs = r.int32("group.consumer.max.session.timeout.ms")
	b.GroupConsumerHeartbeatIntervalMs = r.int32("group.consumer.heartbeat.interval.ms")
	b.GroupConsumerMinHeartbeatIntervalMs = r.int32("group.consumer.min.heartbeat.interval.ms")
	b.GroupConsumerMaxHeartbeatIntervalMs = r.int32("group.consumer.max.heartbeat.interval.ms")
	b.GroupConsumerMaxSize = r.int32("group.consumer.max.size")
	b.GroupShareDeliveryCountLimit = r.int32("group.share.delivery.count.limit")
	b.GroupShareHeartbeatIntervalMs = r.int32("group.share.heartbeat.interval.ms")
	b.GroupShareMaxShareSessions = r.int32("group.share.max.share.sessions")
	b.GroupShareMinDeliveryCountLimit = r.int32("group.share.min.delivery.count.limit")
	b.GroupShareMaxDeliveryCountLimit = r.int32("group.share.max.delivery.count.limit")
	b.GroupShareMinHeartbeatIntervalMs = r.int32("group.share.min.heartbeat.interval.ms")
	b.GroupShareMaxHeartbeatIntervalMs = r.int32("group.share.max.heartbeat.interval.ms")
	b.GroupShareMinRecordLockDurationMs = r.int32("group.share.min.record.lock.duration.ms")
	b.GroupShareMaxRecordLockDurationMs = r.int32("group.share.max.record.lock.duration.ms")
	b.GroupShareMinSessionTimeoutMs = r.int32("group.share.min.session.timeout.ms")
	b.GroupShareMaxSessionTimeoutMs = r.int32("group.share.max.session.timeout.ms")
	b.GroupShareMaxSize = r.int32("group.share.max.size")
	b.GroupSharePartitionMaxRecordLocks = r.int32("group.share.partition.max.record.locks")
	b.GroupShareMinPartitionMaxRecordLocks = r.int32("group.share.min.partition.max.record.locks")
	b.GroupShareMaxPartitionMaxRecordLocks = r.int32("group.share.max.partition.max.record.locks")
	b.GroupShareRecordLockDurationMs = r.int32("group.share.record.lock.duration.ms")
	b.GroupShareSessionTimeoutMs = r.int32("group.share.session.timeout.ms")
	b.ShareAutoOffsetReset = strings.TrimSpace(r.str("share.auto.offset.reset"))
	b.ShareCoordinatorStateTopicMinISR = r.int32("share.coordinator.state.topic.min.isr")
	b.ShareCoordinatorStateTopicNumPartitions = r.int32("share.coordinator.state.topic.num.partitions")
	b.ShareCoordinatorStateTopicReplicationFactor = int16(r.int64("share.coordinator.state.topic.replication.factor"))
	b.ShareIsolationLevel = strings.TrimSpace(r.str("share.isolation.level"))
	b.GroupConsumerMigrationPolicy = strings.ToLower(strings.TrimSpace(r.str("group.consumer.migration.policy")))
	for _, a := range strings.Split(r.str("group.consumer.assignors"), ",") {
		if a = strings.TrimSpace(a); a != "" {
			b.GroupConsumerAssignors = append(b.GroupConsumerAssignors, a)
		}
	}
	b.TransactionStateLogNumParts = r.int32("transaction.state.log.num.partitions")
	b.TransactionStateLogRF = int16(r.int64("transaction.state.log.replication.factor"))
	b.TransactionStateLogMinISR = r.int32("transaction.state.log.min.isr")
	b.TransactionMaxTimeoutMs = r.int32("transaction.max.timeout.ms")
	b.TransactionalIDExpirationMs = r.int32("transactional.id.expiration.ms")
	b.TransactionStateLogSegmentBytes = r.int32("transaction.state.log.segment.bytes")
	b.TransactionAbortTimedOutCleanupIntervalMs = r.int32("transaction.abort.timed.out.transaction.cleanup.interval.ms")
	b.TransactionRemoveExpiredCleanupIntervalMs = r.int32("transaction.remove.expired.transaction.cleanup.interval.ms")
	b.TransactionPartitionVerificationEnable = r.bool("transaction.partition.verification.enable")
	b.TransactionVersion = int16(r.int64("transaction.version"))
	b.ProducerIDExpirationMs = r.int32("producer.id.expiration.ms")
	b.ReplicaLagTimeMaxMs = r.int64("replica.lag.time.max.ms")
	b.ReplicaSelectorClass = r.str("replica.selector.class")
	b.ReplicaFetchMaxBytes = r.int32("replica.fetch.max.bytes")
	b.ReplicaFetchMinBytes = r.int32("replica.fetch.min.bytes")
	b.ReplicaFetchResponseMaxBytes = r.int32("replica.fetch.response.max.bytes")
	b.ReplicaFetchWaitMaxMs = r.int32("replica.fetch.wait.max.ms")
	b.MaxIncrementalFetchSessionCacheSlots = r.int32("max.incremental.fetch.session.cache.slots")
	b.MinIncrementalFetchSessionEvictionMs = r.int64("min.incremental.fetch.session.eviction.ms")
	b.NumReplicaFetchers = r.int32("num.replica.fetchers")
	b.AutoLeaderRebalanceEnable = r.bool("auto.leader.rebalance.enable")
	b.LeaderImbalanceCheckIntervalS = r.int64("leader.imbalance.check.interval.seconds")
	b.LeaderImbalancePerBrokerPct = r.int32("leader.imbalance.per.broker.percentage")
	b.ControlledShutdownEnable = r.bool("controlled.shutdown.enable")
	b.BrokerRack = r.str("broker.rack")
	b.BrokerSessionTimeoutMs = r.int64("broker.session.timeout.ms")
	b.BrokerHeartbeatIntervalMs = r.int64("broker.heartbeat.interval.ms")
	b.EtcdEndpoints = splitList(r.str("etcd.endpoints"))
	b.EtcdName = strings.TrimSpace(r.str("etcd.name"))
	b.EtcdInitialCluster = strings.TrimSpace(r.str("etcd.initial.cluster"))
	b.EtcdInitialClusterState = strings.TrimSpace(r.str("etcd.initial.cluster.state"))
	b.EtcdListenPeerURLs = splitList(r.str("etcd.listen.peer.urls"))
	b.EtcdAdvertisePeerURLs = splitList(r.str("etcd.advertise.peer.urls"))
	b.EtcdListenClientURLs = splitList(r.str("etcd.listen.client.urls"))
	b.EtcdAdvertiseClientURLs = splitList(r.str("etcd.advertise.client.urls"))
	b.EtcdSSLCAFile = strings.TrimSpace(r.str("etcd.ssl.ca.file"))
	b.EtcdSSLCertFile = strings.TrimSpace(r.str("etcd.ssl.cert.file"))
	b.EtcdSSLKeyFile = strings.TrimSpace(r.str("etcd.ssl.key.file"))
	b.EtcdSSLServerName = strings.TrimSpace(r.str("etcd.ssl.server.name"))
	b.EtcdPeerSSLCertFile = strings.TrimSpace(r.str("etcd.peer.ssl.cert.file"))
	b.EtcdPeerSSLKeyFile = strings.TrimSpace(r.str("etcd.peer.ssl.key.file"))
	b.EtcdPeerSSLCAFile = strings.TrimSpace(r.str("etcd.peer.ssl.ca.file"))
	b.EtcdClientSSLCertFile = strings.TrimSpace(r.str("etcd.client.ssl.cert.file"))
	b.EtcdClientSSLKeyFile = strings.TrimSpace(r.str("etcd.client.ssl.key.file"))
	b.EtcdClientSSLCAFile = strings.TrimSpace(r.str("etcd.client.ssl.ca.file"))
	b.EtcdUsername = strings.TrimSpace(r.str("etcd.username"))
	b.EtcdPassword = r.str("etcd.password")
	b.EtcdConnectionTimeoutMs = r.int32("etcd.connection.timeout.ms")
	b.AdminListener = strings.TrimSpace(r.str("admin.listener"))
	if !r.isNull("console.enabled") {
		on := r.bool("console.enabled")
		b.ConsoleEnabled = &on
	}
	b.ConsoleListener = strings.TrimSpace(r.str("console.listener"))
	b.ConsoleReadOnly = r.bool("console.read.only")
	b.resolveLogging(&r)
	b.resolveSecurity(&r)
	if r.err != nil {
		return nil, r.err
	}
	if err := b.check(); err != nil {
		return nil, err
	}
	return b, nil
}

// dropControllerListeners removes the listeners named in
// controller.listener.names from listeners and advertised.listeners, with
// a warning: in KRaft they serve the controller quorum, which samsa does
// not have (etcd holds the metadata), so opening them as Kafka ports would
// serve clients where the file meant controllers.
func (b *Broker) dropControllerListeners(names []string) error {
	if len(names) == 0 {
		return nil
	}
	ctl := make(map[string]bool, len(names))
	for _, n := range names {
		ctl[strings.ToUpper(n)] = true
	}
	keep := func(ls []Listener) (kept []Listener, dropped []string) {
		for _, l := range ls {
			if ctl[l.Name] {
				dropped = append(dropped, l.String())
			} else {
				kept = append(kept, l)
			}
		}
		return kept, dropped
	}
	var dropped []string
	b.Listeners, dropped = keep(b.Listeners)
	b.AdvertisedListeners, _ = keep(b.AdvertisedListeners)
	if len(dropped) > 0 {
		b.Warnings = append(b.Warnings, fmt.Sprintf("not opening %s: a KRaft controller listener (controller.listener.names); samsa has no controller quorum, etcd holds the metadata",
			strings.Join(dropped, ", ")))
	}
	if len(b.Listeners) == 0 {
		return fmt.Errorf("%w: listeners: every listener is a controller listener (controller.listener.names); give a broker listener", ErrInvalidConfig)
	}
	return nil
}

// check enforces rules that span several configs.
func (b *Broker) check() error {
	if len(b.LogDirs) == 0 {
		return fmt.Errorf("%w: log.dirs: empty", ErrInvalidConfig)
	}
	if b.BrokerHeartbeatIntervalMs >= b.BrokerSessionTimeoutMs {
		return fmt.Errorf("%w: broker.heartbeat.interval.ms (%d) must be below broker.session.timeout.ms (%d)",
			ErrInvalidConfig, b.BrokerHeartbeatIntervalMs, b.BrokerSessionTimeoutMs)
	}
	if b.GroupMinSessionTimeoutMs > b.GroupMaxSessionTimeoutMs {
		return fmt.Errorf("%w: group.min.session.timeout.ms (%d) above group.max.session.timeout.ms (%d)",
			ErrInvalidConfig, b.GroupMinSessionTimeoutMs, b.GroupMaxSessionTimeoutMs)
	}
	// Reference: Kafka GroupCoordinatorConfig: the session timeout and
	// the heartbeat interval within their bounds, the interval below the
	// timeout.
	if b.GroupConsumerSessionTimeoutMs < b.GroupConsumerMinSessionTimeoutMs || b.GroupConsumerSessionTimeoutMs > b.GroupConsumerMaxSessionTimeoutMs {
		return fmt.Errorf("%w: group.consumer.session.timeout.ms (%d) outside group.consumer.min.session.timeout.ms (%d) and group.consumer.max.session.timeout.ms (%d)",
			ErrInvalidConfig, b.GroupConsumerSessionTimeoutMs, b.GroupConsumerMinSessionTimeoutMs, b.GroupConsumerMaxSessionTimeoutMs)
	}
	if b.GroupConsumerHeartbeatIntervalMs < b.GroupConsumerMinHeartbeatIntervalMs || b.GroupConsumerHeartbeatIntervalMs > b.GroupConsumerMaxHeartbeatIntervalMs {
		return fmt.Errorf("%w: group.consumer.heartbeat.interval.ms (%d) outside group.consumer.min.heartbeat.interval.ms (%d) and group.consumer.max.heartbeat.interval.ms (%d)",
			ErrInvalidConfig, b.GroupConsumerHeartbeatIntervalMs, b.GroupConsumerMinHeartbeatIntervalMs, b.GroupConsumerMaxHeartbeatIntervalMs)
	}
	if b.GroupConsumerHeartbeatIntervalMs >= b.GroupConsumerSessionTimeoutMs {
		return fmt.Errorf("%w: group.consumer.heartbeat.interval.ms (%d) must be below group.consumer.session.timeout.ms (%d)",
			ErrInvalidConfig, b.GroupConsumerHeartbeatIntervalMs, b.GroupConsumerSessionTimeoutMs)
	}
	if len(b.EtcdEndpoints) > 0 && b.EtcdInitialCluster != "" {
		return fmt.Errorf("%w: etcd.endpoints and etcd.initial.cluster: set one (an external etcd, or embedded members)", ErrInvalidConfig)
	}
	if err := b.checkEtcd(); err != nil {
		return err
	}
	names := make(map[string]bool, len(b.Listeners))
	for _, l := range b.Listeners {
		names[l.Name] = true
	}
	for _, l := range b.AdvertisedListeners {
		if !names[l.Name] {
			return fmt.Errorf("%w: advertised.listeners: %s is not in listeners", ErrInvalidConfig, l.Name)
		}
	}
	if !names[b.InterBrokerListenerName] {
		return fmt.Errorf("%w: inter.broker.listener.name: %s is not in listeners", ErrInvalidConfig, b.InterBrokerListenerName)
	}
	return b.checkSecurity()
}

// resolver reads typed values from explicitly set values and defaults.
// Values were checked on the way in, so a parse failure is an invariant
// breach; it is still reported rather than ignored.
type resolver struct {
	raw map[string]string
	err error
}

func (r *resolver) str(name string) string {
	if v, ok := r.raw[name]; ok {
		return v
	}
	d, ok := LookupBroker(name)
	if !ok {
		r.fail(fmt.Errorf("%w: %s", ErrUnknownConfig, name))
		return ""
	}
	return d.Default
}

// isNull reports whether name is unset (or set to "") and has a null default.
func (r *resolver) isNull(name string) bool {
	d, _ := LookupBroker(name)
	if v, ok := r.raw[name]; ok {
		return d.Null && v == ""
	}
	return d.Null
}

func (r *resolver) fail(err error) {
	if r.err == nil {
		r.err = err
	}
}

func (r *resolver) int64(name string) int64 {
	v := strings.TrimSpace(r.str(name))
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		r.fail(fmt.Errorf("%w: %s=%q", ErrInvalidConfig, name, v))
	}
	return n
}

func (r *resolver) int32(name string) int32 {
	n := r.int64(name)
	if n < math.MinInt32 || n > math.MaxInt32 {
		r.fail(fmt.Errorf("%w: %s=%d out of range", ErrInvalidConfig, name, n))
	}
	return int32(n)
}

func (r *resolver) bool(name string) bool {
	v, err := parseBool(r.str(name))
	if err != nil {
		r.fail(fmt.Errorf("%w: %s: %w", ErrInvalidConfig, name, err))
	}
	return v
}

func (r *resolver) listeners(name string) []Listener {
	ls, err := ParseListeners(r.str(name))
	if err != nil {
		r.fail(fmt.Errorf("%w: %s: %w", ErrInvalidConfig, name, err))
	}
	return ls
}

// msOr resolves a duration given in ms, else minutes, else hours, the
// precedence Kafka uses for log.retention.* and log.roll.*. minutes may be
// "" when there is no minutes form. Products saturate instead of
// overflowing.
func (r *resolver) msOr(ms, minutes, hours string) int64 {
	if !r.isNull(ms) {
		return r.int64(ms)
	}
	if minutes != "" && !r.isNull(minutes) {
		return mulSat(r.int64(minutes), 60_000)
	}
	return mulSat(r.int64(hours), 3_600_000)
}

func mulSat(a, b int64) int64 {
	if a > 0 && a > math.MaxInt64/b {
		return math.MaxInt64
	}
	if a < 0 && a < math.MinInt64/b {
		return math.MinInt64
	}
	return a * b
}

// TopicDefaults returns every topic-level config as it follows from this
// broker's configs (retention.ms from log.retention.*, segment.bytes from
// log.segment.bytes, ...), keyed by topic config name. Topic configs with
// no broker counterpart have their topic default. The caller owns the map.
func (b *Broker) TopicDefaults() map[string]string {
	out := make(map[string]string, len(topicDefs))
	for _, d := range topicDefs {
		out[d.Name] = d.Default
	}
	r := resolver{raw: b.Raw}
	for _, d := range brokerDefs {
		if d.Topic == "" {
			continue
		}
		if _, set := b.Raw[d.Name]; set && !r.isNull(d.Name) {
			out[d.Topic] = strings.TrimSpace(b.Raw[d.Name])
		}
	}
	// Typed fields win over Raw so that a Broker adjusted in code (tests,
	// the CLI) yields matching topic defaults.
	i64 := func(n int64) string { return strconv.FormatInt(n, 10) }
	out["retention.ms"] = i64(b.LogRetentionMs)
	out["retention.bytes"] = i64(b.LogRetentionBytes)
	out["segment.ms"] = i64(b.LogRollMs)
	out["segment.jitter.ms"] = i64(b.LogRollJitterMs)
	out["segment.bytes"] = i64(b.LogSegmentBytes)
	out["segment.index.bytes"] = i64(int64(b.LogIndexSizeMaxBytes))
	out["index.interval.bytes"] = i64(int64(b.LogIndexIntervalBytes))
	out["flush.messages"] = i64(b.LogFlushIntervalMessages)
	if b.LogFlushIntervalMs >= 0 {
		out["flush.ms"] = i64(b.LogFlushIntervalMs)
	}
	out["file.delete.delay.ms"] = i64(b.LogSegmentDeleteDelayMs)
	out["max.message.bytes"] = i64(int64(b.MessageMaxBytes))
	out["min.insync.replicas"] = i64(int64(b.MinInsyncReplicas))
	out["unclean.leader.election.enable"] = strconv.FormatBool(b.UncleanLeaderElectionEnable)
	if b.LogCleanupPolicy != "" {
		out["cleanup.policy"] = b.LogCleanupPolicy
	}
	if b.LogMessageTimestampType != "" {
		out["message.timestamp.type"] = b.LogMessageTimestampType
	}
	if b.CompressionType != "" {
		out["compression.type"] = b.CompressionType
	}
	return out
}

// Default returns the configuration of a broker with no config set.
func Default() *Broker {
	b, err := FromRaw(nil)
	if err != nil {
		panic("config: defaults do not load: " + err.Error())
	}
	return b
}

// RackAwareReplicaSelector is the replica.selector.class value that lets
// consumers fetch from an in-sync replica in their rack (KIP-392), Kafka's
// class name for it.
const RackAwareReplicaSelector = "org.apache.kafka.common.replica.RackAwareReplicaSelector"

// ConsoleAddr returns the host:port the web console is served on, and
// whether it is served at all: console.listener, else admin.listener
// (under /console/). With console.enabled unset the console is served only
// when that address is a loopback one (127.0.0.0/8, ::1, localhost), so a
// broker whose admin listener faces a network does not show its cluster
// there until an operator asks for it with console.enabled=true.
func (b *Broker) ConsoleAddr() (addr string, on bool) {
	addr = b.ConsoleListener
	if addr == "" {
		addr = b.AdminListener
	}
	if addr == "" {
		return "", false
	}
	if b.ConsoleEnabled != nil {
		return addr, *b.ConsoleEnabled
	}
	return addr, isLoopbackAddr(addr)
}

// isLoopbackAddr reports whether a host:port listens on loopback only.
func isLoopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
