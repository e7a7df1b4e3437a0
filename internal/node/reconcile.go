package node

import (
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"samsa/internal/broker"
	"samsa/internal/cluster"
	"samsa/internal/config"
	"samsa/internal/replica"
	"samsa/internal/storage"
)

// reconciler makes the partitions hosted here follow the cluster image:
// after every image change (and every 5 s, to retry after errors) it
// creates the logs of partitions assigned here and applies their role,
// removes the partitions that moved away or were deleted, deletes logs on
// disk of partitions of live topics not assigned here, and then lets the
// broker load or unload its coordinators (broker.ApplyImage). Handlers run
// a pass too (broker.Config.Reconcile), so a topic they create is hosted
// before they answer.
//
// A log on disk whose topic the image does not know at all (deleted while
// the broker was down, or an etcd that was wiped or replaced) is kept and
// reported once, never deleted: an empty etcd must not make brokers
// destroy their data.
//
// Lock order: reconciler.mu -> broker's reconcileMu -> replica.Manager.mu.
type reconciler struct {
	cluster  *cluster.Cluster
	replicas *replica.Manager
	logs     *storage.LogDirs
	broker   *broker.Broker // set before the first pass
	cfg      *config.Broker
	log      *slog.Logger

	// mu serialises passes (the goroutine's and the handlers').
	mu      sync.Mutex
	stopped bool // guarded by mu; no pass starts once set
	started bool // guarded by mu; the goroutine runs
	// strays are logs on disk whose topic the image lacks, already
	// reported; guarded by mu.
	strays map[storage.TopicPartition]bool

	stop chan struct{} // closed by close to end run
	done chan struct{} // closed when run returns
}

func newReconciler(cl *cluster.Cluster, replicas *replica.Manager, logs *storage.LogDirs, cfg *config.Broker, log *slog.Logger) *reconciler {
	return &reconciler{
		cluster: cl, replicas: replicas, logs: logs, cfg: cfg, log: log,
		strays: make(map[storage.TopicPartition]bool),
		stop:   make(chan struct{}), done: make(chan struct{}),
	}
}

// reconcileWorkers bounds the partitions one pass opens or moves at once.
const reconcileWorkers = 8

// start runs passes in a goroutine until close: after each image change,
// every 5 s, and at each MaintenanceInterval, when it also expires and
// snapshots producer state and lets the broker expire its quota state.
func (r *reconciler) start() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return
	}
	r.started = true
	go func() {
		defer close(r.done)
		maintain := time.NewTicker(broker.MaintenanceInterval)
		defer maintain.Stop()
		for {
			changed := r.cluster.Changed()
			if err := r.reconcile(); err != nil {
				r.log.Error("reconcile partitions", "err", err)
			}
			select {
			case <-r.stop:
				return
			case <-changed:
			case <-maintain.C:
				if err := r.maintainProducers(); err != nil {
					r.log.Error("producer state maintenance", "err", err)
				}
				r.broker.Maintain(time.Now())
			case <-time.After(5 * time.Second):
				// Retry after errors even when nothing changes.
			}
		}
	}()
}

// close stops the goroutine and every later pass, and waits for the pass
// under way. It is idempotent.
func (r *reconciler) close() {
	r.mu.Lock()
	already, started := r.stopped, r.started
	r.stopped = true
	r.mu.Unlock()
	if already {
		return
	}
	close(r.stop)
	if started {
		<-r.done
	}
}

// maintainProducers expires and snapshots the producer state of every
// hosted partition.
func (r *reconciler) maintainProducers() error {
	return r.replicas.MaintainProducers(time.Now().UnixMilli(), int64(r.cfg.ProducerIDExpirationMs))
}

// reconcile is one pass: a log for every partition with a replica here in
// the role the image gives it, none for partitions that are gone, then
// broker.ApplyImage. It returns the first error, having done what it
// could of the rest.
func (r *reconciler) reconcile() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return nil // closing: start nothing new
	}
	img := r.cluster.Image()
	self := r.cfg.NodeID
	want := make(map[storage.TopicPartition]bool)
	var firstErr error
	type ensure struct {
		tp   storage.TopicPartition
		id   [16]byte
		cfg  storage.Config
		info replica.PartitionInfo
	}
	var ensures []ensure
	for _, t := range img.Topics {
		minISR := int(r.cfg.MinInsyncReplicas)
		cfg := storage.DefaultConfig()
		if tc, err := r.broker.TopicConfig(img, t); err != nil {
			r.log.Error("topic config", "topic", t.Name, "err", err)
		} else {
			cfg, minISR = StorageConfig(tc), int(tc.MinInsyncReplicas)
		}
		for p, replicas := range t.Replicas {
			if !contains(replicas, self) {
				continue
			}
			tp := storage.TopicPartition{Topic: t.Name, Partition: int32(p)}
			want[tp] = true
			info := replica.PartitionInfo{Replicas: replicas, Leader: -1, MinInsyncReplicas: minISR}
			if p < len(t.Partitions) {
				st := t.Partitions[p]
				info.Leader, info.LeaderEpoch, info.ISR, info.PartitionEpoch = st.Leader, st.LeaderEpoch, st.ISR, st.PartitionEpoch
				if st.Leader == self && st.LeaderIncarnation != "" && st.LeaderIncarnation != r.cluster.Incarnation() {
					// Elected in an earlier process of this node: wait
					// for the controller to elect this one at a new epoch
					// (cluster.Decide) rather than lead at the old one.
					info.Leader = -1
				}
			}
			ensures = append(ensures, ensure{tp, t.ID, cfg, info})
		}
	}
	// NB: opening a log and taking leadership each do a few fsyncs (the
	// log's directory, the leader epoch checkpoint); one partition after
	// the other, a broker with 10,000 partitions took 40 s to lead them
	// all after a restart. Ensure calls of distinct partitions are
	// independent, so a few run at once.
	var errMu sync.Mutex
	storage.ParallelEach(len(ensures), reconcileWorkers, func(i int) {
		e := ensures[i]
		if _, err := r.replicas.Ensure(e.tp, e.id, e.cfg, e.info); err != nil {
			errMu.Lock()
			if firstErr == nil {
				firstErr = err
			}
			errMu.Unlock()
		}
	})
	for _, p := range r.replicas.Partitions() {
		if !want[p.TP] {
			if err := r.replicas.Remove(p.TP); err != nil && firstErr == nil {
				firstErr = err
			}
		}
	}
	r.replicas.SyncFetchers()
	r.broker.ApplyImage()
	// Logs on disk that the image does not assign here: a partition of a
	// live topic that moved away is deleted (also when the log has no
	// topic id: the broker was killed while it created it); a log whose
	// topic the image does not know, or knows under another id, is left
	// alone (logged once), because an empty or replaced etcd must never
	// make a broker delete its data.
	for _, l := range r.logs.Logs() {
		tp, ok := parseLogDir(l.Dir())
		if !ok || want[tp] {
			continue
		}
		if t := img.Topics[tp.Topic]; t != nil && (t.ID == l.TopicID() || l.TopicID() == [16]byte{}) {
			if err := r.logs.Delete(tp); err != nil && firstErr == nil {
				firstErr = err
			}
			continue
		}
		if !r.strays[tp] {
			r.strays[tp] = true
			r.log.Warn("log on disk for a topic the cluster metadata does not have; leaving it in place",
				"topic", tp.Topic, "partition", tp.Partition, "dir", l.Dir())
		}
	}
	return firstErr
}

// parseLogDir extracts the partition from a log directory path
// (<dir>/<topic>-<partition>).
func parseLogDir(dir string) (storage.TopicPartition, bool) {
	base := filepath.Base(dir)
	i := strings.LastIndexByte(base, '-')
	if i <= 0 {
		return storage.TopicPartition{}, false
	}
	p, err := strconv.ParseInt(base[i+1:], 10, 32)
	if err != nil || p < 0 {
		return storage.TopicPartition{}, false
	}
	return storage.TopicPartition{Topic: base[:i], Partition: int32(p)}, true
}

func contains(s []int32, v int32) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// StorageConfig returns the log configuration of a resolved topic config.
func StorageConfig(t config.Topic) storage.Config {
	return storage.Config{
		SegmentBytes:       t.SegmentBytes,
		SegmentMs:          t.SegmentMs,
		SegmentIndexBytes:  t.SegmentIndexBytes,
		IndexIntervalBytes: int64(t.IndexIntervalBytes),
		RetentionMs:        t.RetentionMs,
		RetentionBytes:     t.RetentionBytes,
		FlushMessages:      t.FlushMessages,
		FlushMs:            t.FlushMs,
		FileDeleteDelayMs:  t.FileDeleteDelayMs,

		CleanupPolicy:          t.CleanupPolicy,
		DeleteRetentionMs:      t.DeleteRetentionMs,
		MinCleanableDirtyRatio: t.MinCleanableDirtyRatio,
		MinCompactionLagMs:     t.MinCompactionLagMs,
		MaxCompactionLagMs:     t.MaxCompactionLagMs,
	}
}
