package admin

import (
	"runtime"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// ServerStats is the Kafka listener's counters and the fetch session
// cache that serves its Fetch requests.
type ServerStats struct {
	ConnectionsOpen, ConnectionsAccepted, ConnectionsRefused int64
	ConnectionsByListener                                    map[string]int64
	Requests                                                 map[int16]int64
	BytesIn, BytesOut, Panics, AuthenticationFailures        int64
	// FetchSessions and FetchSessionPartitions are the incremental fetch
	// sessions (KIP-227) cached now and the partitions they hold;
	// FetchSessionEvictions counts sessions evicted to make room.
	FetchSessions, FetchSessionPartitions, FetchSessionEvictions int64
	// ShareGroups, ShareSessions and SharePartitions are the share groups
	// (KIP-932) coordinated here, the share sessions open here and the
	// share-partitions led here; ShareAcknowledgedRecords counts the
	// records members acknowledged here (accept, release, reject).
	ShareGroups, ShareSessions, SharePartitions, ShareAcknowledgedRecords int64
}

// PartitionStats is one hosted partition.
type PartitionStats struct {
	Topic     string
	Partition int32
	// Leader is set when this broker leads it; Replicas, ISR and MinISR
	// are the assignment size, the ISR size and min.insync.replicas (the
	// last two known on the leader only).
	Leader                                      bool
	Replicas, ISR, MinISR                       int
	LogStartOffset, LogEndOffset, HighWatermark int64
	SizeBytes                                   int64
	Segments                                    int
	// Traffic counters.
	BytesIn, RecordsIn, ProduceRequests     int64
	BytesOut, RecordsOut, FetchRequests     int64
	ReplicationBytesIn, ReplicationBytesOut int64
}

// GroupStats is the group coordinator's state.
type GroupStats struct {
	// ByState counts groups by state name (Empty, Stable, ...).
	ByState    map[string]int
	Rebalances int64
	Lag        []GroupLag
}

// GroupLag is one group's position on one partition: its committed
// offset and the partition's log end as this broker knows it.
type GroupLag struct {
	Group, Topic string
	Partition    int32
	Committed    int64
	LogEnd       int64
}

// ClusterStats is this broker's view of the cluster.
type ClusterStats struct {
	Controller                              bool
	LeaseRenewals                           int64
	ControllerWrites, ControllerWriteErrors int64
	// OfflinePartitions counts partitions without a leader; Partitions
	// and Brokers are the cluster's totals; reported by the controller.
	OfflinePartitions, Partitions, Brokers int
	ISRShrinks, ISRExpands                 int64
	// TruncatedOffsets counts offsets followers removed to match their
	// leaders.
	TruncatedOffsets int64
	// RepairedOffsets counts offsets followers removed from their logs
	// because a stored batch there was corrupt, to fetch them again.
	RepairedOffsets int64
	// CorruptBatches counts stored batches that failed their check on a
	// read.
	CorruptBatches int64
	// LogDirs are the broker's log dirs (log.dirs), in order.
	LogDirs []LogDirStats
	// UnsyncedBytes and UnsyncedAge are the log dir's appended bytes not
	// yet fsynced and the age of the oldest of them (durable logs only);
	// HeldAcks counts acks=1 answers held until durable because the
	// flusher was behind.
	UnsyncedBytes int64
	UnsyncedAge   time.Duration
	HeldAcks      int64
}

// LogDirStats is one log dir. Offline is set once a write or fsync
// failure took it offline; Free and Size are its file system's free and
// total bytes (0 when unknown).
type LogDirStats struct {
	Dir        string
	Offline    bool
	Free, Size int64
}

// Sources is what the scrape-time collector reads. Each is asked once per
// scrape; a nil source is skipped.
type Sources struct {
	Server     interface{ ServerStats() ServerStats }
	Partitions interface{ PartitionStats() []PartitionStats }
	Groups     interface{ GroupStats() GroupStats }
	Cluster    interface{ ClusterStats() ClusterStats }
}

// CollectorConfig configures NewCollector.
type CollectorConfig struct {
	// PartitionLevel turns on the per-partition series
	// (metrics.partition.level): log size, segments and offsets by
	// partition, consumer lag by partition.
	PartitionLevel bool
	// Version and Commit label samsa_build_info.
	Version, Commit string
}

type desc struct {
	d *prometheus.Desc
	t prometheus.ValueType
}

func newDesc(name, help string, t prometheus.ValueType, labels ...string) desc {
	return desc{prometheus.NewDesc(name, help, labels, nil), t}
}

// collector reads Sources at scrape time.
type collector struct {
	src Sources
	cfg CollectorConfig
	all []desc

	build, connsOpen, connsAccepted, connsRefused, listenerConns, requests desc
	fetchSessions, fetchSessionParts, fetchSessionEvictions                desc
	shareGroups, shareSessions, shareParts, shareAcked                     desc
	bytesIn, bytesOut, panics, authFailures                                desc
	tBytesIn, tRecordsIn, tProduce, tBytesOut, tRecordsOut, tFetch         desc
	tReplIn, tReplOut, tLogSize                                            desc
	partitions, leaders, underReplicated, underMinISR                      desc
	logSize, logSegments, logStart, logEnd, hw                             desc
	groups, rebalances, lag, committed, topicLag                           desc
	controller, offline, clusterPartitions, clusterBrokers, decisions      desc
	decisionErrors, leaseRenewals, isrShrinks, isrExpands                  desc
	truncated, repaired, corruptBatches                                    desc
	logDirOffline, logDirFree, logDirSize                                  desc
	unsyncedBytes, unsyncedAge, heldAcks                                   desc
}

// NewCollector returns a prometheus.Collector over src.
func NewCollector(src Sources, cfg CollectorConfig) prometheus.Collector {
	g, c := prometheus.GaugeValue, prometheus.CounterValue
	x := &collector{src: src, cfg: cfg}
	d := func(name, help string, t prometheus.ValueType, labels ...string) desc {
		v := newDesc(name, help, t, labels...)
		x.all = append(x.all, v)
		return v
	}
	x.build = d("samsa_build_info", "Build of this broker; always 1.", g, "version", "commit", "go")
	x.connsOpen = d("samsa_connections_open", "Kafka client connections open now.", g)
	x.listenerConns = d("samsa_listener_connections", "Kafka client connections open now, by listener (Kafka connection-count).", g, "listener")
	x.connsAccepted = d("samsa_connections_accepted_total", "Kafka client connections accepted.", c)
	x.connsRefused = d("samsa_connections_refused_total", "Connections closed by the connection limits (max.connections.per.ip, connection_creation_rate).", c)
	x.requests = d("samsa_requests_total", "Kafka requests decoded, by API (Kafka RequestsPerSec).", c, "api_key", "api")
	x.bytesIn = d("samsa_request_bytes_total", "Request bytes read from clients.", c)
	x.bytesOut = d("samsa_response_bytes_total", "Response bytes written to clients.", c)
	x.panics = d("samsa_handler_panics_total", "Request handler panics recovered (each closed its connection).", c)
	x.authFailures = d("samsa_authentication_failures_total", "Failed TLS handshakes and SASL authentications.", c)
	x.fetchSessions = d("samsa_fetch_sessions", "Incremental fetch sessions (KIP-227) cached, of consumers and followers (Kafka NumIncrementalFetchSessions).", g)
	x.fetchSessionParts = d("samsa_fetch_session_partitions", "Partitions held by the cached fetch sessions (Kafka NumIncrementalFetchPartitionsCached).", g)
	x.fetchSessionEvictions = d("samsa_fetch_session_evictions_total", "Fetch sessions evicted from the cache to make room for another (Kafka IncrementalFetchSessionEvictionsPerSec).", c)
	x.shareGroups = d("samsa_share_groups", "Share groups (KIP-932) this broker coordinates.", g)
	x.shareSessions = d("samsa_share_sessions", "Share sessions (KIP-932) open on this broker.", g)
	x.shareParts = d("samsa_share_partitions", "Share-partitions (a share group's view of a partition) this broker leads and has served.", g)
	x.shareAcked = d("samsa_share_acknowledged_records_total", "Records share group members acknowledged on this broker (accept, release, reject, gap).", c)

	x.tBytesIn = d("samsa_topic_bytes_in_total", "Bytes appended by Produce requests, by topic (Kafka BytesInPerSec).", c, "topic")
	x.tRecordsIn = d("samsa_topic_records_in_total", "Records appended by Produce requests, by topic (Kafka MessagesInPerSec).", c, "topic")
	x.tProduce = d("samsa_topic_produce_requests_total", "Produce requests, counted once per topic they write (Kafka TotalProduceRequestsPerSec).", c, "topic")
	x.tBytesOut = d("samsa_topic_bytes_out_total", "Record bytes sent to consumers, by topic (Kafka BytesOutPerSec).", c, "topic")
	x.tRecordsOut = d("samsa_topic_records_out_total", "Offsets sent to consumers, by topic.", c, "topic")
	x.tFetch = d("samsa_topic_fetch_requests_total", "Consumer Fetch requests, counted once per topic they read (Kafka TotalFetchRequestsPerSec).", c, "topic")
	x.tReplIn = d("samsa_topic_replication_bytes_in_total", "Bytes a follower appended from its leader, by topic (Kafka ReplicationBytesInPerSec).", c, "topic")
	x.tReplOut = d("samsa_topic_replication_bytes_out_total", "Record bytes sent to followers, by topic (Kafka ReplicationBytesOutPerSec).", c, "topic")
	x.tLogSize = d("samsa_topic_log_size_bytes", "Bytes of the hosted logs, by topic.", g, "topic")

	x.partitions = d("samsa_partitions", "Partitions hosted by this broker, leaders and followers (Kafka PartitionCount).", g)
	x.leaders = d("samsa_leader_partitions", "Partitions this broker leads (Kafka LeaderCount).", g)
	x.underReplicated = d("samsa_under_replicated_partitions", "Partitions led here whose ISR is smaller than their replica set (Kafka UnderReplicatedPartitions).", g)
	x.underMinISR = d("samsa_under_min_isr_partitions", "Partitions led here whose ISR is below min.insync.replicas (Kafka UnderMinIsrPartitionCount).", g)
	x.isrShrinks = d("samsa_isr_shrinks_total", "ISR shrinks this broker wrote as leader (Kafka IsrShrinksPerSec).", c)
	x.isrExpands = d("samsa_isr_expands_total", "ISR expands this broker wrote as leader (Kafka IsrExpandsPerSec).", c)
	x.truncated = d("samsa_replica_truncated_offsets_total", "Offsets this broker's followers removed from their logs to match their leaders (uncommitted tails, or records lost to an unclean election).", c)
	x.repaired = d("samsa_replica_repaired_offsets_total", "Offsets this broker's followers removed from their logs at a corrupt stored batch, to fetch them again from the leader.", c)
	x.corruptBatches = d("samsa_log_corrupt_batches_total", "Stored record batches that failed their check (length, magic, offsets, CRC-32C) when read; a batch read again counts again.", c)

	x.logSize = d("samsa_log_size_bytes", "Bytes of a partition's log segments (Kafka Log Size).", g, "topic", "partition")
	x.logSegments = d("samsa_log_segments", "Segments of a partition's log (Kafka Log NumLogSegments).", g, "topic", "partition")
	x.logStart = d("samsa_log_start_offset", "A partition's log start offset (Kafka Log LogStartOffset).", g, "topic", "partition")
	x.logEnd = d("samsa_log_end_offset", "A partition's log end offset (Kafka Log LogEndOffset).", g, "topic", "partition")
	x.hw = d("samsa_log_high_watermark", "A partition's high watermark as this broker knows it.", g, "topic", "partition")

	x.groups = d("samsa_consumer_groups", "Consumer groups this broker coordinates, by state (Kafka NumGroupsStable and kin).", g, "state")
	x.rebalances = d("samsa_group_rebalances_total", "Group rebalances that ended on this coordinator.", c)
	x.lag = d("samsa_consumer_group_lag", "Log end offset minus the group's committed offset, by partition (kafka-lag-exporter's kafka_consumergroup_group_lag).", g, "group", "topic", "partition")
	x.committed = d("samsa_consumer_group_committed_offset", "A group's committed offset, by partition.", g, "group", "topic", "partition")
	x.topicLag = d("samsa_consumer_group_topic_lag", "A group's lag summed over a topic's partitions.", g, "group", "topic")

	x.controller = d("samsa_controller_active", "1 on the broker that is the active controller (Kafka ActiveControllerCount).", g)
	x.offline = d("samsa_controller_offline_partitions", "Partitions without a leader, reported by the controller (Kafka OfflinePartitionsCount).", g)
	x.clusterPartitions = d("samsa_controller_partitions", "Partitions in the cluster, reported by the controller (Kafka GlobalPartitionCount).", g)
	x.clusterBrokers = d("samsa_controller_brokers", "Registered brokers, reported by the controller (Kafka ActiveBrokerCount).", g)
	x.decisions = d("samsa_controller_decisions_total", "Partition state changes written by this broker as controller (elections, ISR removals, reassignment steps).", c)
	x.decisionErrors = d("samsa_controller_decision_errors_total", "Controller writes of partition state that failed other than by a lost compare.", c)
	x.leaseRenewals = d("samsa_etcd_lease_renewals_total", "Keepalive responses for this broker's registration lease.", c)

	x.logDirOffline = d("samsa_log_dir_offline", "1 once a write or fsync failure took the log dir offline; summed over dir, Kafka's OfflineLogDirectoryCount.", g, "dir")
	x.logDirFree = d("samsa_log_dir_free_bytes", "Free bytes of the log dir's file system.", g, "dir")
	x.logDirSize = d("samsa_log_dir_size_bytes", "Total bytes of the log dir's file system.", g, "dir")
	x.unsyncedBytes = d("samsa_log_unsynced_bytes", "Bytes appended to durable logs and not yet fsynced, so not yet visible to consumers.", g)
	x.unsyncedAge = d("samsa_log_unsynced_age_seconds", "Age of the oldest append to a durable log not yet fsynced: how long an acknowledged acks=1 record has stayed invisible so far.", g)
	x.heldAcks = d("samsa_produce_acks1_held_total", "acks=1 partition answers held until the batch was durable because the flusher was behind on the log.", c)
	return x
}

func (x *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range x.all {
		ch <- d.d
	}
}

func (x *collector) emit(ch chan<- prometheus.Metric, d desc, v float64, labels ...string) {
	ch <- prometheus.MustNewConstMetric(d.d, d.t, v, labels...)
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func (x *collector) Collect(ch chan<- prometheus.Metric) {
	x.emit(ch, x.build, 1, x.cfg.Version, x.cfg.Commit, runtime.Version())
	if s := x.src.Server; s != nil {
		st := s.ServerStats()
		x.emit(ch, x.connsOpen, float64(st.ConnectionsOpen))
		for l, n := range st.ConnectionsByListener {
			x.emit(ch, x.listenerConns, float64(n), l)
		}
		x.emit(ch, x.connsAccepted, float64(st.ConnectionsAccepted))
		x.emit(ch, x.connsRefused, float64(st.ConnectionsRefused))
		for k, n := range st.Requests {
			x.emit(ch, x.requests, float64(n), strconv.Itoa(int(k)), apiName(k))
		}
		x.emit(ch, x.bytesIn, float64(st.BytesIn))
		x.emit(ch, x.bytesOut, float64(st.BytesOut))
		x.emit(ch, x.panics, float64(st.Panics))
		x.emit(ch, x.authFailures, float64(st.AuthenticationFailures))
		x.emit(ch, x.fetchSessions, float64(st.FetchSessions))
		x.emit(ch, x.fetchSessionParts, float64(st.FetchSessionPartitions))
		x.emit(ch, x.fetchSessionEvictions, float64(st.FetchSessionEvictions))
		x.emit(ch, x.shareGroups, float64(st.ShareGroups))
		x.emit(ch, x.shareSessions, float64(st.ShareSessions))
		x.emit(ch, x.shareParts, float64(st.SharePartitions))
		x.emit(ch, x.shareAcked, float64(st.ShareAcknowledgedRecords))
	}
	if s := x.src.Partitions; s != nil {
		x.collectPartitions(ch, s.PartitionStats())
	}
	if s := x.src.Groups; s != nil {
		x.collectGroups(ch, s.GroupStats())
	}
	if s := x.src.Cluster; s != nil {
		st := s.ClusterStats()
		x.emit(ch, x.controller, b2f(st.Controller))
		if st.Controller {
			x.emit(ch, x.offline, float64(st.OfflinePartitions))
			x.emit(ch, x.clusterPartitions, float64(st.Partitions))
			x.emit(ch, x.clusterBrokers, float64(st.Brokers))
		}
		x.emit(ch, x.decisions, float64(st.ControllerWrites))
		x.emit(ch, x.decisionErrors, float64(st.ControllerWriteErrors))
		x.emit(ch, x.leaseRenewals, float64(st.LeaseRenewals))
		x.emit(ch, x.isrShrinks, float64(st.ISRShrinks))
		x.emit(ch, x.isrExpands, float64(st.ISRExpands))
		x.emit(ch, x.truncated, float64(st.TruncatedOffsets))
		x.emit(ch, x.repaired, float64(st.RepairedOffsets))
		x.emit(ch, x.corruptBatches, float64(st.CorruptBatches))
		for _, ld := range st.LogDirs {
			x.emit(ch, x.logDirOffline, b2f(ld.Offline), ld.Dir)
			if ld.Size > 0 {
				x.emit(ch, x.logDirFree, float64(ld.Free), ld.Dir)
				x.emit(ch, x.logDirSize, float64(ld.Size), ld.Dir)
			}
		}
		x.emit(ch, x.unsyncedBytes, float64(st.UnsyncedBytes))
		x.emit(ch, x.unsyncedAge, st.UnsyncedAge.Seconds())
		x.emit(ch, x.heldAcks, float64(st.HeldAcks))
	}
}

type topicTotals struct {
	bytesIn, recordsIn, produce, bytesOut, recordsOut, fetch, replIn, replOut, size int64
}

func (x *collector) collectPartitions(ch chan<- prometheus.Metric, ps []PartitionStats) {
	var leaders, under, underMin int
	topics := map[string]*topicTotals{}
	for i := range ps {
		p := &ps[i]
		if p.Leader {
			leaders++
			if p.ISR < p.Replicas {
				under++
			}
			if p.ISR < p.MinISR {
				underMin++
			}
		}
		t := topics[p.Topic]
		if t == nil {
			t = &topicTotals{}
			topics[p.Topic] = t
		}
		t.bytesIn += p.BytesIn
		t.recordsIn += p.RecordsIn
		t.produce += p.ProduceRequests
		t.bytesOut += p.BytesOut
		t.recordsOut += p.RecordsOut
		t.fetch += p.FetchRequests
		t.replIn += p.ReplicationBytesIn
		t.replOut += p.ReplicationBytesOut
		t.size += p.SizeBytes
		if x.cfg.PartitionLevel {
			part := strconv.Itoa(int(p.Partition))
			x.emit(ch, x.logSize, float64(p.SizeBytes), p.Topic, part)
			x.emit(ch, x.logSegments, float64(p.Segments), p.Topic, part)
			x.emit(ch, x.logStart, float64(p.LogStartOffset), p.Topic, part)
			x.emit(ch, x.logEnd, float64(p.LogEndOffset), p.Topic, part)
			x.emit(ch, x.hw, float64(p.HighWatermark), p.Topic, part)
		}
	}
	x.emit(ch, x.partitions, float64(len(ps)))
	x.emit(ch, x.leaders, float64(leaders))
	x.emit(ch, x.underReplicated, float64(under))
	x.emit(ch, x.underMinISR, float64(underMin))
	for name, t := range topics {
		x.emit(ch, x.tBytesIn, float64(t.bytesIn), name)
		x.emit(ch, x.tRecordsIn, float64(t.recordsIn), name)
		x.emit(ch, x.tProduce, float64(t.produce), name)
		x.emit(ch, x.tBytesOut, float64(t.bytesOut), name)
		x.emit(ch, x.tRecordsOut, float64(t.recordsOut), name)
		x.emit(ch, x.tFetch, float64(t.fetch), name)
		x.emit(ch, x.tReplIn, float64(t.replIn), name)
		x.emit(ch, x.tReplOut, float64(t.replOut), name)
		x.emit(ch, x.tLogSize, float64(t.size), name)
	}
}

// groupStates are the classic protocol's states, each always reported.
var groupStates = []string{"Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"}

func (x *collector) collectGroups(ch chan<- prometheus.Metric, st GroupStats) {
	for _, s := range groupStates {
		x.emit(ch, x.groups, float64(st.ByState[s]), s)
	}
	x.emit(ch, x.rebalances, float64(st.Rebalances))
	type gt struct{ group, topic string }
	sums := map[gt]int64{}
	for _, l := range st.Lag {
		lag := max(l.LogEnd-l.Committed, 0)
		sums[gt{l.Group, l.Topic}] += lag
		if x.cfg.PartitionLevel {
			part := strconv.Itoa(int(l.Partition))
			x.emit(ch, x.lag, float64(lag), l.Group, l.Topic, part)
			x.emit(ch, x.committed, float64(l.Committed), l.Group, l.Topic, part)
		}
	}
	for k, v := range sums {
		x.emit(ch, x.topicLag, float64(v), k.group, k.topic)
	}
}
