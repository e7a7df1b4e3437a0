package node

import (
	"github.com/prometheus/client_golang/prometheus"

	"samsa/internal/admin"
	"samsa/internal/server"
	"samsa/internal/storage"
)

// nodeMetrics gives the admin collectors the node's state: it satisfies
// admin.Sources' interfaces by reading the server, the hosted partitions,
// the group coordinator and the cluster at scrape time.
type nodeMetrics struct{ n *Node }

func (m nodeMetrics) ServerStats() admin.ServerStats {
	st := m.n.server.Stats()
	fs := m.n.broker.FetchSessionStats()
	ss := m.n.broker.ShareStats()
	return admin.ServerStats{
		ShareGroups: ss.Groups, ShareSessions: ss.Sessions, SharePartitions: ss.Partitions, ShareAcknowledgedRecords: ss.AcknowledgedRecords,
		ConnectionsOpen: st.ConnectionsOpen, ConnectionsAccepted: st.ConnectionsAccepted,
		ConnectionsRefused: st.ConnectionsRefused, ConnectionsByListener: st.ConnectionsByListener,
		Requests: st.Requests, BytesIn: st.BytesIn, BytesOut: st.BytesOut,
		Panics: st.Panics, AuthenticationFailures: st.AuthenticationFailures,
		FetchSessions: int64(fs.Sessions), FetchSessionPartitions: fs.Partitions, FetchSessionEvictions: fs.Evictions,
	}
}

func (m nodeMetrics) PartitionStats() []admin.PartitionStats {
	parts := m.n.broker.Replicas().Partitions()
	out := make([]admin.PartitionStats, 0, len(parts))
	for _, p := range parts {
		st := p.Stats()
		t := &p.Traffic
		out = append(out, admin.PartitionStats{
			Topic: p.TP.Topic, Partition: p.TP.Partition,
			Leader: st.Leader, Replicas: st.Replicas, ISR: st.ISR, MinISR: st.MinISR,
			LogStartOffset: p.LogStartOffset(), LogEndOffset: p.LogEndOffset(), HighWatermark: st.HighWatermark,
			SizeBytes: p.Size(), Segments: p.SegmentCount(),
			BytesIn: t.BytesIn.Load(), RecordsIn: t.RecordsIn.Load(), ProduceRequests: t.ProduceRequests.Load(),
			BytesOut: t.BytesOut.Load(), RecordsOut: t.RecordsOut.Load(), FetchRequests: t.FetchRequests.Load(),
			ReplicationBytesIn: t.ReplicationBytesIn.Load(), ReplicationBytesOut: t.ReplicationBytesOut.Load(),
		})
	}
	return out
}

// GroupStats reads the coordinator's groups and computes each committed
// offset's lag against the high watermark of the partition's replica on
// this broker (leader or follower). A partition with no replica here has
// no lag series on this broker.
func (m nodeMetrics) GroupStats() admin.GroupStats {
	gc := m.n.broker.Groups()
	st := gc.Stats()
	out := admin.GroupStats{ByState: map[string]int{}, Rebalances: st.Rebalances}
	for s, n := range st.Groups {
		out.ByState[s.String()] = n
	}
	rm := m.n.broker.Replicas()
	for _, o := range gc.CommittedOffsets() {
		p := rm.Get(storage.TopicPartition{Topic: o.Topic, Partition: o.Partition})
		if p == nil {
			continue
		}
		out.Lag = append(out.Lag, admin.GroupLag{Group: o.Group, Topic: o.Topic, Partition: o.Partition,
			Committed: o.Offset, LogEnd: p.HighWatermark()})
	}
	return out
}

func (m nodeMetrics) ClusterStats() admin.ClusterStats {
	cs := m.n.cluster.Stats()
	shrinks, expands := m.n.broker.Replicas().ISRChanges()
	out := admin.ClusterStats{
		Controller: cs.Controller, LeaseRenewals: cs.LeaseRenewals,
		ControllerWrites: cs.ControllerWrites, ControllerWriteErrors: cs.ControllerWriteErrors,
		ISRShrinks: shrinks, ISRExpands: expands,
		TruncatedOffsets: m.n.broker.Replicas().TruncatedOffsets(),
		RepairedOffsets:  m.n.broker.Replicas().RepairedOffsets(),
		CorruptBatches:   m.n.logs.CorruptBatches(),
	}
	if cs.Controller {
		img := m.n.cluster.Image()
		out.Brokers = len(img.Brokers)
		for name, t := range img.Topics {
			for p := range t.Replicas {
				out.Partitions++
				if st, ok := img.Partition(name, int32(p)); !ok || st.Leader < 0 {
					out.OfflinePartitions++
				}
			}
		}
	}
	for _, d := range m.n.logs.Dirs() {
		ld := admin.LogDirStats{Dir: d.Dir(), Offline: d.Offline()}
		ld.Free, ld.Size = diskSpace(d.Dir())
		out.LogDirs = append(out.LogDirs, ld)
	}
	out.UnsyncedBytes, out.UnsyncedAge = m.n.logs.Backlog()
	out.HeldAcks = m.n.logs.HeldAcks()
	return out
}

// serverObserver passes the connection loop's measurements to the admin
// metrics.
type serverObserver struct{ m *admin.Metrics }

func (o serverObserver) ObserveRequest(key int16, t server.RequestTimes) {
	o.m.ObserveRequest(key, admin.RequestTimes(t))
}

func (o serverObserver) ObserveError(key, code int16) { o.m.ObserveError(key, code) }

// registerMetrics registers the scrape-time collectors over n.
func registerMetrics(reg *prometheus.Registry, n *Node) {
	v := n.version
	if v.Version == "" {
		v.Version = "devel"
	}
	if v.Commit == "" {
		v.Commit = "unknown"
	}
	m := nodeMetrics{n}
	reg.MustRegister(admin.NewCollector(admin.Sources{Server: m, Partitions: m, Groups: m, Cluster: m},
		admin.CollectorConfig{PartitionLevel: n.cfg.MetricsPartitionLevel, Version: v.Version, Commit: v.Commit}))
}
