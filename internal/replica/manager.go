package replica

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"samsa/internal/storage"
	"samsa/internal/txn"
	"samsa/internal/vfs"
)

// ErrNotLeader means this broker does not lead the partition (or does not
// host it at all).
var ErrNotLeader = errors.New("replica: not the leader")

// Partition is one hosted partition. TP, TopicID, log and m are set when it
// is created and never change.
type Partition struct {
	TP      storage.TopicPartition
	TopicID [16]byte
	// log is the partition's log (lg). Only this package reaches it:
	// every reader goes through Partition's methods, so the high
	// watermark, the isolation levels and the leader checks apply to
	// all of them. It changes only when the log moves to another log
	// dir (AlterReplicaLogDirs), with appendMu and roleMu held; a reader
	// that loaded the old one may finish with it (the old log stays
	// readable for file.delete.delay.ms).
	log atomic.Pointer[storage.Log]
	m   *Manager

	leaderEpoch atomic.Int32
	leader      atomic.Bool
	// unfetched is set while this broker leads and some in-sync follower
	// may not have fetched the partition since: its appends then wake
	// that follower's parked fetches (followerNews). A hint, checked
	// under roleMu.
	unfetched atomic.Bool
	// corruptAt is 1 + the offset a read found a corrupt stored batch at
	// while this broker led, 0 when none: once it follows, the log is
	// truncated there and fetched again (repair.go).
	corruptAt atomic.Int64

	// appendMu serialises appends with the producer state checks, so a
	// check and the append it allows are atomic.
	appendMu       sync.Mutex
	producers      *txn.State // guarded by appendMu
	producersDirty bool       // guarded by appendMu; changed since the last snapshot
	// firstUnstable is producers' first unstable offset (noUnstable when
	// no transaction is open), written under appendMu and read without it
	// by LastStableOffset.
	firstUnstable atomic.Int64

	roleMu sync.Mutex
	role   roleState // guarded by roleMu
	// hw is the high watermark, stored under roleMu by refreshHWLocked
	// and read without it.
	hw atomic.Int64
	// logStart is the log start offset as of the last change hook, to
	// tell when records were deleted.
	logStart atomic.Int64
	// waits are the delay queue's keys on this partition, one per
	// WaitKind; set at creation.
	waits [numWaitKinds]*watchSet

	// Traffic counts the partition's requests and bytes (metrics).
	Traffic Traffic
}

// LeaderEpoch is the partition's current leader epoch.
func (p *Partition) LeaderEpoch() int32 { return p.leaderEpoch.Load() }

// lg returns the partition's current log.
func (p *Partition) lg() *storage.Log { return p.log.Load() }

// LogDir returns the log dir (an entry of log.dirs) holding the
// partition's log.
func (p *Partition) LogDir() string { return filepath.Dir(p.lg().Dir()) }

// Offline reports whether the partition's log dir is offline.
func (p *Partition) Offline() bool { return p.lg().Offline() }

// IsLeader reports whether this broker leads the partition.
func (p *Partition) IsLeader() bool { return p.leader.Load() }

// LogStore creates and deletes the partitions' logs: a storage.Manager
// (one log dir) or a storage.LogDirs (several).
type LogStore interface {
	Create(tp storage.TopicPartition, topicID [16]byte, cfg storage.Config) (*storage.Log, error)
	Delete(tp storage.TopicPartition) error
}

// Config configures a Manager.
type Config struct {
	Logs LogStore
	// FS is the file system of the log dir (producer state snapshots live
	// beside the logs).
	FS vfs.FS
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// Self is this broker's node id.
	Self int32
	// ISR configures the leaders' ISR and high watermark rules.
	ISR ISRConfig
	// Client fetches from leaders; nil disables following (a single
	// broker never follows).
	Client LeaderClient
	// ISRWriter writes ISR changes; nil keeps the ISR fixed.
	ISRWriter ISRWriter
	Logger    *slog.Logger
}

// Manager holds the hosted partitions, runs one fetcher per leader this
// broker follows, and ticks the leaders' ISR checks. Close stops its
// goroutines.
type Manager struct {
	cfg  Config
	logs LogStore
	fs   vfs.FS
	now  func() time.Time
	log  *slog.Logger

	ctx    context.Context // done at Close
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// delayed holds the operations waiting on the partitions' offsets;
	// its timer goroutine is owned by the Manager.
	delayed *delayQueue
	// news holds, per follower broker, the count of appends to partitions
	// it leads that the follower has not fetched yet, the key its parked
	// fetches also watch (FollowerNews).
	newsMu sync.Mutex
	news   map[int32]*followerNews // guarded by newsMu

	// isrShrinks and isrExpands count ISR changes written (metrics).
	isrShrinks, isrExpands atomic.Int64
	// truncated counts the offsets followers removed from their logs to
	// match their leader (metrics).
	truncated atomic.Int64
	// repaired counts the offsets followers removed at a corrupt stored
	// batch to fetch them again (metrics).
	repaired atomic.Int64

	// movesMu guards moves, the log moves to other log dirs under way
	// (MoveLog); it is held while a cancelled move ends, which takes no
	// lock of the Manager.
	movesMu sync.Mutex
	moves   map[storage.TopicPartition]*moveTask

	mu       sync.RWMutex
	parts    map[storage.TopicPartition]*Partition // guarded by mu
	fetchers map[int32]*fetcher                    // guarded by mu
	closed   bool                                  // guarded by mu
}

// NewManager returns a Manager and starts its ISR ticker.
func NewManager(cfg Config) *Manager {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	m := &Manager{
		cfg: cfg, logs: cfg.Logs, fs: cfg.FS, now: cfg.Now, log: cfg.Logger,
		parts:    make(map[storage.TopicPartition]*Partition),
		fetchers: make(map[int32]*fetcher),
	}
	m.delayed = newDelayQueue(cfg.Now)
	m.ctx, m.cancel = context.WithCancel(context.Background())
	m.goFunc(m.tickLoop)
	m.goFunc(func() { m.delayed.run(m.ctx.Done()) })
	return m
}

// DelayedStats returns the counts of the delay queue: the operations that
// wait with a deadline (Fetch long-polls, acks=all produces) and those
// completed, by outcome.
func (m *Manager) DelayedStats() DelayedStats { return m.delayed.stats() }

// Watch registers an operation that completes when the first of specs is
// reached (Satisfied), a partition in specs changes role, fails or is
// removed (Changed), deadline passes (Expired; zero: no deadline) or the
// caller cancels it (Cancelled). One registration serves every partition
// of specs; it never starts a goroutine. Cost: O(log n) per spec, n the
// operations waiting on that partition. It does not block.
func (m *Manager) Watch(specs []WatchSpec, deadline time.Time) *DelayedOp {
	return m.delayed.watch(m.watchKeys(specs), deadline, false)
}

// WatchEach is Watch for a waiter that decides itself when the operation
// is done, such as a Fetch summing min_bytes over its partitions: a
// reached spec fires (DelayedOp.Fired, TakeFired) and waits no more until
// DelayedOp.Rearm, and the waiter ends the operation with
// DelayedOp.Complete. A change, the deadline and Cancel complete it as
// with Watch.
func (m *Manager) WatchEach(specs []WatchSpec, deadline time.Time) *DelayedOp {
	return m.delayed.watch(m.watchKeys(specs), deadline, true)
}

func (m *Manager) watchKeys(specs []WatchSpec) []watchKey {
	keys := make([]watchKey, len(specs))
	for i, s := range specs {
		if s.news != nil {
			keys[i] = watchKey{set: s.news.set, at: s.At}
			continue
		}
		keys[i] = watchKey{set: s.P.waits[s.Kind], at: s.At}
	}
	return keys
}

// followerNews counts appends to partitions led here that follower has
// not fetched since this broker became their leader.
type followerNews struct {
	n      atomic.Int64
	lastMs atomic.Int64 // unix millis of the latest news
	set    *watchSet
}

func (m *Manager) newsOf(follower int32) *followerNews {
	m.newsMu.Lock()
	defer m.newsMu.Unlock()
	if m.news == nil {
		m.news = make(map[int32]*followerNews)
	}
	fn := m.news[follower]
	if fn == nil {
		fn = &followerNews{}
		fn.set = newWatchSet(fn.n.Load)
		m.news[follower] = fn
	}
	return fn
}

// FollowerNews is a watch for a parked fetch of follower: it is reached
// when a partition led here that the follower has not fetched yet (a new
// partition, or one this broker just became leader of) takes an append.
// A follower long-polls its leader over the partitions it already
// fetches; without this, one it starts to follow meanwhile would wait for
// that poll's max wait (replica.fetch.wait.max.ms) before its first
// fetch, and every acks=all produce to it with it. Its P is nil.
func (m *Manager) FollowerNews(follower int32) WatchSpec {
	fn := m.newsOf(follower)
	return WatchSpec{news: fn, At: fn.n.Load() + 1}
}

// NewsReached reports whether the FollowerNews watch w was reached: the
// fetch it parked should answer, for the follower to fetch again with the
// partitions it has started to follow.
func (w WatchSpec) NewsReached() bool { return w.news != nil && w.news.n.Load() >= w.At }

// RecentNews reports whether the follower of the FollowerNews watch w had
// news within the last second. A partition it has not fetched yet took an
// append, and the follower may not follow it yet (its own metadata lags the
// leader's by the time the leader's first append took): its fetch parks for
// at most a few ms then, so that it comes back soon with the partition,
// where an edge of news would have been missed.
func (w WatchSpec) RecentNews(nowMs int64) bool {
	return w.news != nil && nowMs-w.news.lastMs.Load() < 1000
}

// tellUnfetched wakes the parked fetches of the in-sync followers of p
// that have not fetched it since this broker became its leader; it
// clears p.unfetched once there are none. It takes roleMu.
func (p *Partition) tellUnfetched() {
	var buf [4]int32
	p.roleMu.Lock()
	var ids []int32
	if ls := p.role.leader; ls != nil {
		ids = ls.Unfetched(buf[:0])
	}
	if len(ids) == 0 {
		p.unfetched.Store(false)
	}
	p.roleMu.Unlock()
	nowMs := p.m.now().UnixMilli()
	for _, id := range ids {
		fn := p.m.newsOf(id)
		fn.lastMs.Store(nowMs)
		fn.n.Add(1)
		p.m.delayed.publish(fn.set)
	}
}

// goFunc runs f on a goroutine that Close waits for; after Close it runs
// nothing.
func (m *Manager) goFunc(f func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		f()
	}()
}

// goFuncLocked is goFunc with m.mu held.
func (m *Manager) goFuncLocked(f func()) {
	if m.closed {
		return
	}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		f()
	}()
}

// Close stops the fetchers, the ticker and pending ISR writes, and waits
// for them. It does not close the logs. It is idempotent.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	for id, f := range m.fetchers {
		close(f.stop)
		delete(m.fetchers, id)
	}
	m.mu.Unlock()
	m.cancel()
	m.wg.Wait()
	return nil
}

func (m *Manager) tickLoop() {
	every := time.Duration(max(m.cfg.ISR.ReplicaLagTimeMaxMs/4, 100)) * time.Millisecond
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-t.C:
			nowMs := m.now().UnixMilli()
			for _, p := range m.Partitions() {
				p.tick(nowMs)
			}
		}
	}
}

// Get returns the hosted partition tp, or nil.
func (m *Manager) Get(tp storage.TopicPartition) *Partition {
	m.mu.RLock()
	p := m.parts[tp]
	m.mu.RUnlock()
	return p
}

// Leader returns tp if this broker leads it, else ErrNotLeader; a hosted
// partition whose log dir is offline returns storage.ErrLogDirOffline
// whatever its role, as Kafka answers KAFKA_STORAGE_ERROR for every
// replica of a failed dir.
func (m *Manager) Leader(tp storage.TopicPartition) (*Partition, error) {
	p := m.Get(tp)
	if p != nil && p.lg().Offline() {
		return nil, storage.ErrLogDirOffline
	}
	if p == nil || !p.IsLeader() {
		return nil, ErrNotLeader
	}
	return p, nil
}

// Partitions returns every hosted partition.
func (m *Manager) Partitions() []*Partition {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]*Partition, 0, len(m.parts))
	for _, p := range m.parts {
		out = append(out, p)
	}
	return out
}

// Ensure makes tp hosted here in the role info gives this broker, creating
// its log if needed. Calling it again applies changes of leader, epoch,
// ISR and config. Call SyncFetchers after a batch of Ensure calls.
func (m *Manager) Ensure(tp storage.TopicPartition, topicID [16]byte, cfg storage.Config, info PartitionInfo) (*Partition, error) {
	m.mu.RLock()
	p := m.parts[tp]
	m.mu.RUnlock()
	if p != nil && p.TopicID != topicID {
		// The topic was deleted and recreated under the same name.
		if err := m.Remove(tp); err != nil {
			return nil, err
		}
		p = nil
	}
	if p == nil {
		// Opening the log and replaying producer state do IO: not under
		// m.mu, which every request takes to find its partition. Ensure
		// calls for one partition are serialised by the caller (the
		// broker's reconciler, which runs those of distinct partitions in
		// parallel), so no other Ensure creates tp meanwhile.
		l, err := m.logs.Create(tp, topicID, cfg)
		if errors.Is(err, storage.ErrTopicIDMismatch) {
			// A log left on disk by a topic of the same name that was
			// deleted while this broker was down: the cluster has a new
			// topic id for the name, so the old records are not this
			// partition's (a broker never joins another cluster's
			// metadata: meta.properties pins the cluster id).
			m.log.Warn("replica: deleting a log of a deleted topic of the same name", "topic", tp.Topic, "partition", tp.Partition)
			if err := m.logs.Delete(tp); err != nil {
				return nil, fmt.Errorf("replica: delete stale log %s-%d: %w", tp.Topic, tp.Partition, err)
			}
			l, err = m.logs.Create(tp, topicID, cfg)
		}
		if err != nil {
			return nil, fmt.Errorf("replica: create log %s-%d: %w", tp.Topic, tp.Partition, err)
		}
		np := &Partition{TP: tp, TopicID: topicID, m: m}
		np.log.Store(l)
		np.role.following = -1
		np.waits = [numWaitKinds]*watchSet{
			WaitDurable:       newWatchSet(func() int64 { return np.lg().DurableOffset() }),
			WaitHighWatermark: newWatchSet(np.HighWatermark),
			WaitLastStable:    newWatchSet(np.LastStableOffset),
			WaitLogEnd:        newWatchSet(func() int64 { return np.lg().LogEndOffset() }),
		}
		if err := np.loadProducersLocked(m, m.now().UnixMilli()); err != nil {
			return nil, err
		}
		// NB: only once the producer state is loaded does the last stable
		// offset know the open transactions; before that the cleaner
		// leaves the log alone.
		l.SetLastStableOffsetFunc(np.LastStableOffset)
		np.logStart.Store(l.LogStartOffset())
		l.SetChangeHook(np.logChanged)
		m.mu.Lock()
		if m.closed {
			m.mu.Unlock()
			return nil, storage.ErrClosed
		}
		m.parts[tp] = np
		m.mu.Unlock()
		p = np
	} else {
		p.lg().SetConfig(cfg)
	}
	p.applyInfo(info)
	return p, nil
}

// SyncFetchers starts a fetcher for every leader some hosted partition
// follows, stops those no partition follows any more, and wakes the rest
// to pick up changes.
func (m *Manager) SyncFetchers() {
	if m.cfg.Client == nil {
		return
	}
	want := make(map[int32]bool)
	for _, p := range m.Partitions() {
		p.roleMu.Lock()
		if p.role.leader == nil && p.role.following >= 0 {
			want[p.role.following] = true
		}
		p.roleMu.Unlock()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	for id, f := range m.fetchers {
		if !want[id] {
			close(f.stop)
			delete(m.fetchers, id)
		}
	}
	for id := range want {
		f := m.fetchers[id]
		if f == nil {
			f = &fetcher{m: m, leader: id, kick: make(chan struct{}, 1), stop: make(chan struct{})}
			m.fetchers[id] = f
			m.goFuncLocked(f.run)
		}
		select {
		case f.kick <- struct{}{}:
		default:
		}
	}
}

// Remove stops hosting tp and deletes its log.
func (m *Manager) Remove(tp storage.TopicPartition) error {
	m.mu.Lock()
	p := m.parts[tp]
	delete(m.parts, tp)
	m.mu.Unlock()
	if p == nil {
		return nil
	}
	p.appendMu.Lock()
	p.roleMu.Lock()
	p.role.leader = nil
	p.role.following = -1
	p.leader.Store(false)
	p.changedLocked()
	p.roleMu.Unlock()
	p.appendMu.Unlock()
	if err := m.logs.Delete(tp); err != nil {
		return fmt.Errorf("replica: delete log %s-%d: %w", tp.Topic, tp.Partition, err)
	}
	return nil
}
