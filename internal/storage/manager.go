package storage

import (
	"cmp"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"samsa/internal/vfs"
)

// Manager owns every partition log in one log dir, the group-commit flusher
// and the retention loop. It is safe for concurrent use.
//
// Goroutines: the flusher, the retention loop and the log cleaner (unless
// CleanerDisable), started by OpenManager and stopped by Close (stop asks;
// Close returns once all have exited).
// Delayed file deletions are timers owned by the Manager; Close cancels them
// and deletes at once.
type Manager struct {
	fs     vfs.FS
	dir    string
	logger *slog.Logger
	now    func() time.Time
	defCfg Config
	retInt time.Duration
	obs    FlushObserver // nil: none

	// createMu serialises Create and Delete of one partition, whose
	// directory and file IO runs under it and not under mu: the lock of
	// tp is createMu[createStripe(tp)], so distinct partitions are
	// mostly created at once (a broker creating 10,000 partitions waits
	// for their fsyncs in parallel).
	createMu [createStripes]sync.Mutex

	// mu guards logs and reserved. No IO is done under it.
	mu   sync.RWMutex
	logs map[TopicPartition]*Log
	// reserved counts the partitions LogDirs has placed in this dir whose
	// Create is under way: a Create that registers its log drops its
	// reservation under the same lock, so numPlaced never counts a
	// partition twice or not at all.
	reserved int

	// flushMu guards dirty; kick wakes the flusher. flushSlots holds a
	// token per flush goroutine running (at most maxParallelSyncs).
	flushMu    sync.Mutex
	dirty      []*Log
	kick       chan struct{}
	flushSlots chan struct{}

	// delMu guards pendingDel, segments renamed to .deleted awaiting
	// file.delete.delay.ms.
	delMu      sync.Mutex
	pendingDel map[*segment]*time.Timer
	// pendingRetire (under delMu) holds the logs that moved to another
	// dir, awaiting file.delete.delay.ms to close their files and remove
	// their old directory (retireLater); the value does that.
	pendingRetire map[*time.Timer]func()

	ckMu sync.Mutex // serialises checkpoint writes

	// cleanerMu serialises cleaner passes (the goroutine and RunCleaner).
	cleanerMu      sync.Mutex
	cleanerBackoff time.Duration

	offline    atomic.Bool
	offlineErr atomic.Pointer[error]
	offlineCh  chan struct{} // closed when the log dir goes offline
	heldAcks   atomic.Int64  // Log.HoldAck answers that held an acks=1 produce
	// corruptBatches counts stored batches that failed their check on a
	// read (verify.go).
	corruptBatches atomic.Int64

	closeOnce sync.Once
	closeErr  error
	stop      chan struct{} // closed by Close to ask the goroutines to exit
	wg        sync.WaitGroup
}

// OpenManager opens the log dir, recovers every partition log found in it
// (see the package doc) and starts the background goroutines.
func OpenManager(cfg ManagerConfig) (*Manager, error) {
	if cfg.FS == nil {
		cfg.FS = vfs.Default
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.RetentionCheckInterval <= 0 {
		cfg.RetentionCheckInterval = 5 * time.Minute
	}
	if cfg.CleanerBackoff <= 0 {
		cfg.CleanerBackoff = 15 * time.Second
	}
	m := &Manager{
		fs:     cfg.FS,
		dir:    cfg.Dir,
		logger: cfg.Logger,
		now:    cfg.Now,
		defCfg: normalizeConfig(cfg.DefaultConfig),
		retInt: cfg.RetentionCheckInterval,
		obs:    cfg.FlushObserver,

		cleanerBackoff: cfg.CleanerBackoff,
		logs:           map[TopicPartition]*Log{},
		kick:           make(chan struct{}, 1),
		flushSlots:     make(chan struct{}, maxParallelSyncs),
		pendingDel:     map[*segment]*time.Timer{},
		pendingRetire:  map[*time.Timer]func(){},
		stop:           make(chan struct{}),
		offlineCh:      make(chan struct{}),
	}
	if err := m.fs.MkdirAll(m.dir, 0o755); err != nil {
		return nil, fmt.Errorf("storage: create log dir: %w", err)
	}
	if err := m.fs.SyncDir(filepath.Dir(m.dir)); err != nil {
		return nil, fmt.Errorf("storage: sync the parent of log dir %s: %w", m.dir, err)
	}
	if err := m.recoverAll(); err != nil {
		for _, l := range m.logs {
			l.closeFiles()
		}
		return nil, err
	}
	m.goFunc(m.flushLoop)
	m.goFunc(m.retentionLoop)
	if !cfg.CleanerDisable {
		m.goFunc(m.cleanerLoop)
	}
	return m, nil
}

// goFunc starts a goroutine owned by m.
func (m *Manager) goFunc(f func()) {
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		f()
	}()
}

// every runs on a goroutine owned by m (started with goFunc) until Close:
// it calls f(true) when its timer fires, first after d and then after the
// delay f returned (0: at once), and f(false) whenever kick delivers (a
// nil kick never does). A kick does not move the timer, so a steady
// stream of kicks cannot starve the timed calls. It returns when Close
// asks; f is never called once it has seen that.
func (m *Manager) every(d time.Duration, kick <-chan struct{}, f func(timer bool) time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		// NB: select picks at random among ready cases; check stop first
		// so nothing runs after Close asked.
		if m.isClosed() {
			return
		}
		select {
		case <-m.stop:
			return
		case <-kick:
			f(false)
		case <-t.C:
			t.Reset(f(true))
		}
	}
}

func (m *Manager) isClosed() bool {
	select {
	case <-m.stop:
		return true
	default:
		return false
	}
}

func (m *Manager) setOffline(err error) {
	if m.offline.CompareAndSwap(false, true) {
		m.offlineErr.Store(&err)
		m.logger.Error("storage: log dir offline", "dir", m.dir, "err", err)
		for _, l := range m.Logs() {
			l.notify(true)
		}
		close(m.offlineCh)
	}
}

// OfflineNotify returns a channel closed when the log dir goes offline.
func (m *Manager) OfflineNotify() <-chan struct{} { return m.offlineCh }

// OfflineErr returns the write or sync error that took the log dir
// offline, or nil while it is online.
func (m *Manager) OfflineErr() error {
	if e := m.offlineErr.Load(); e != nil {
		return *e
	}
	return nil
}

// Offline reports whether a write or sync failed in this log dir.
func (m *Manager) Offline() bool { return m.offline.Load() }

// Dir returns the log dir.
func (m *Manager) Dir() string { return m.dir }

// numPlaced returns the number of logs in the dir and of partitions
// placed in it whose Create is under way.
func (m *Manager) numPlaced() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.logs) + m.reserved
}

// reserve counts a partition placed in the dir until its create ends.
func (m *Manager) reserve() {
	m.mu.Lock()
	m.reserved++
	m.mu.Unlock()
}

// Log returns the log of tp, or nil.
func (m *Manager) Log(tp TopicPartition) *Log {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.logs[tp]
}

// Logs returns every open log, sorted by topic and partition. The caller
// owns the returned slice.
func (m *Manager) Logs() []*Log {
	out := m.logsUnordered()
	slices.SortFunc(out, func(a, b *Log) int {
		if c := strings.Compare(a.tp.Topic, b.tp.Topic); c != 0 {
			return c
		}
		return cmp.Compare(a.tp.Partition, b.tp.Partition)
	})
	return out
}

// logsUnordered returns every open log in no order, for the passes that
// visit them all and need none: the flusher's every 50 ms, where sorting
// 10,000 logs cost several ms a pass. The caller owns the returned slice.
func (m *Manager) logsUnordered() []*Log {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]*Log, 0, len(m.logs))
	for _, l := range m.logs {
		out = append(out, l)
	}
	return out
}

// Create opens tp's log, creating its directory if needed. Creating an
// existing log returns it (and updates its config); if it has no topic id
// (its partition.metadata was never written: the broker was killed while
// creating it) it gets topicID, and if it has another one Create fails
// with ErrTopicIDMismatch and changes nothing. The directory and file
// IO runs under tp's createMu, not under mu, so Log and Logs (every request,
// the flusher, retention) do not wait for it. It is safe for concurrent
// use.
func (m *Manager) Create(tp TopicPartition, topicID [16]byte, cfg Config) (*Log, error) {
	return m.create(tp, topicID, cfg, false)
}

// create is Create; reserved says the caller reserved the partition's
// place (reserve), released when the log is registered or create fails.
func (m *Manager) create(tp TopicPartition, topicID [16]byte, cfg Config, reserved bool) (*Log, error) {
	if reserved {
		defer func() {
			if reserved {
				m.mu.Lock()
				m.reserved--
				m.mu.Unlock()
			}
		}()
	}
	if tp.Topic == "" || tp.Partition < 0 || strings.ContainsAny(tp.Topic, "/\\") || tp.Topic == "." || tp.Topic == ".." {
		return nil, fmt.Errorf("storage: create %q-%d: invalid topic partition", tp.Topic, tp.Partition)
	}
	mu := &m.createMu[createStripe(tp)]
	mu.Lock()
	defer mu.Unlock()
	if l, err := m.existing(tp); l != nil || err != nil {
		if err != nil {
			return nil, err
		}
		switch have := l.TopicID(); {
		case have == topicID || topicID == [16]byte{}:
		case have == [16]byte{}:
			if err := writeFileAtomic(m.fs, l.dir, metadataFile, encodeMetadata(topicID)); err != nil {
				return nil, err
			}
			l.topicID.Store(&topicID)
		default:
			return nil, fmt.Errorf("storage: create %s-%d: %w", tp.Topic, tp.Partition, ErrTopicIDMismatch)
		}
		l.SetConfig(cfg)
		return l, nil
	}
	dir := filepath.Join(m.dir, partitionDir(tp))
	if err := m.fs.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("storage: create %s: %w", dir, err)
	}
	if err := writeFileAtomic(m.fs, dir, metadataFile, encodeMetadata(topicID)); err != nil {
		return nil, err
	}
	if err := m.fs.SyncDir(m.dir); err != nil {
		return nil, fmt.Errorf("storage: sync dir %s: %w", m.dir, err)
	}
	c := normalizeConfig(cfg)
	l := m.newLog(tp, topicID, dir, c)
	seg, err := createSegment(m.fs, dir, 0, &c)
	if err != nil {
		return nil, err
	}
	l.segs = []*segment{seg}
	if err := m.fs.SyncDir(dir); err != nil {
		seg.close()
		return nil, fmt.Errorf("storage: sync dir %s: %w", dir, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	// Re-check what may have changed during the IO. Only Create adds logs
	// and it holds tp's createMu, so another log for tp is a broken
	// invariant.
	switch {
	case m.isClosed():
		seg.close()
		return nil, ErrClosed
	case m.offline.Load():
		seg.close()
		return nil, ErrLogDirOffline
	case m.logs[tp] != nil:
		panic(fmt.Sprintf("storage: log %s created twice", dir))
	}
	m.logs[tp] = l
	if reserved {
		m.reserved--
		reserved = false
	}
	return l, nil
}

// createStripes is the number of Create/Delete locks.
const createStripes = 64

// createStripe returns the index of tp's Create/Delete lock.
func createStripe(tp TopicPartition) int {
	h := fnv.New32a()
	h.Write([]byte(tp.Topic))
	return int((h.Sum32() + uint32(tp.Partition)) % createStripes)
}

// existing returns tp's open log, or an error when the Manager refuses to
// create logs.
func (m *Manager) existing(tp TopicPartition) (*Log, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.isClosed() {
		return nil, ErrClosed
	}
	if m.offline.Load() {
		return nil, ErrLogDirOffline
	}
	return m.logs[tp], nil
}

func (m *Manager) newLog(tp TopicPartition, topicID [16]byte, dir string, cfg Config) *Log {
	l := &Log{m: m, fs: m.fs, dir: dir, tp: tp, logger: m.logger, now: m.now}
	l.topicID.Store(&topicID)
	l.cfg.Store(&cfg)
	l.lastFlush = m.now()
	return l
}

// encodeMetadata returns partition.metadata's contents as Kafka writes it.
func encodeMetadata(id [16]byte) []byte {
	return []byte("version: 0\ntopic_id: " + base64.RawURLEncoding.EncodeToString(id[:]) + "\n")
}

// decodeMetadata parses partition.metadata.
func decodeMetadata(data []byte) ([16]byte, error) {
	var id [16]byte
	var version, topicID string
	for _, line := range strings.Split(string(data), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case "version":
			version = strings.TrimSpace(v)
		case "topic_id":
			topicID = strings.TrimSpace(v)
		}
	}
	if version != "0" {
		return id, fmt.Errorf("%w: version %q", errBadMetadata, version)
	}
	b, err := base64.RawURLEncoding.DecodeString(topicID)
	if err != nil || len(b) != 16 {
		return id, fmt.Errorf("%w: topic_id %q", errBadMetadata, topicID)
	}
	copy(id[:], b)
	return id, nil
}

// Delete closes tp's log and removes its directory (renamed to
// <topic>-<p>.<id>-delete first, so a crash leaves no half-deleted log that
// looks live). In an offline log dir it only closes the log and forgets
// it: the files stay until a start with the dir back finds them without
// a topic (the broker deletes such stray logs).
func (m *Manager) Delete(tp TopicPartition) error {
	mu := &m.createMu[createStripe(tp)]
	mu.Lock()
	defer mu.Unlock()
	m.mu.Lock()
	l := m.logs[tp]
	delete(m.logs, tp)
	m.mu.Unlock()
	if l == nil {
		return nil
	}
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	l.markClosed()
	m.cancelPendingDeletes(l.dir)
	cerr := l.closeFiles()
	if m.offline.Load() {
		return nil
	}
	var rnd [16]byte
	rand.Read(rnd[:])
	target := filepath.Join(m.dir, fmt.Sprintf("%s.%s-delete", partitionDir(tp), hex.EncodeToString(rnd[:])))
	if err := m.fs.Rename(l.dir, target); err != nil {
		return fmt.Errorf("storage: delete %s: %w", l.dir, err)
	}
	if err := m.fs.SyncDir(m.dir); err != nil {
		return fmt.Errorf("storage: delete %s: %w", l.dir, err)
	}
	if err := m.fs.RemoveAll(target); err != nil {
		return fmt.Errorf("storage: delete %s: %w", target, err)
	}
	if cerr != nil {
		m.logger.Warn("storage: closing deleted log", "dir", l.dir, "err", cerr)
	}
	return nil
}

// Close flushes every log, writes the checkpoints and the clean-shutdown
// marker, stops the goroutines and closes the files. It is idempotent.
// The marker is not written when the log dir went offline.
func (m *Manager) Close() error {
	m.closeOnce.Do(func() { m.closeErr = m.close() })
	return m.closeErr
}

func (m *Manager) close() error {
	m.mu.Lock()
	close(m.stop)
	m.mu.Unlock()
	m.wg.Wait()
	logs := m.Logs()
	var errs []error
	for _, l := range logs {
		l.appendMu.Lock()
		l.markClosed()
		l.appendMu.Unlock()
	}
	clean := !m.offline.Load()
	if clean {
		// NB: a broker with 10,000 partitions spent a minute here
		// fsyncing one log after the other, most of them synced already
		// by the flusher: those only give back their index files, and
		// the others flush alongside each other.
		var errMu sync.Mutex
		ParallelEach(len(logs), maxParallelSyncs, func(i int) {
			l := logs[i]
			var err error
			if l.fullyFlushed() {
				err = l.activeSegment().syncIndexes()
			} else {
				err = l.flush(true)
			}
			if err != nil {
				errMu.Lock()
				errs = append(errs, err)
				clean = false
				errMu.Unlock()
			}
		})
	}
	if clean {
		if err := m.checkpoint(); err != nil {
			errs = append(errs, err)
			clean = false
		}
	}
	m.cancelPendingDeletes("")
	m.retireNow()
	for _, l := range logs {
		if err := l.closeFiles(); err != nil {
			errs = append(errs, err)
		}
	}
	if clean {
		if err := writeFileAtomic(m.fs, m.dir, cleanShutdownFile, nil); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// retireNow retires at once the moved logs waiting for their delay.
func (m *Manager) retireNow() {
	m.delMu.Lock()
	defer m.delMu.Unlock()
	for t, retire := range m.pendingRetire {
		t.Stop()
		delete(m.pendingRetire, t)
		retire()
	}
}

// removeSegmentsLater closes segs and removes their .deleted files after
// delayMs (at once when the Manager is closed or delayMs <= 0).
func (m *Manager) removeSegmentsLater(segs []*segment, delayMs int64) {
	m.delMu.Lock()
	defer m.delMu.Unlock()
	for _, s := range segs {
		if m.isClosed() || delayMs <= 0 {
			m.removeSegmentFiles(s)
			continue
		}
		m.pendingDel[s] = time.AfterFunc(time.Duration(delayMs)*time.Millisecond, func() {
			m.delMu.Lock()
			defer m.delMu.Unlock()
			if _, ok := m.pendingDel[s]; !ok {
				return // Close or Delete got there first
			}
			delete(m.pendingDel, s)
			m.removeSegmentFiles(s)
		})
	}
}

// cancelPendingDeletes removes at once the pending segments under dir (all
// when dir is empty).
func (m *Manager) cancelPendingDeletes(dir string) {
	m.delMu.Lock()
	defer m.delMu.Unlock()
	for s, t := range m.pendingDel {
		if dir != "" && s.dir != dir {
			continue
		}
		t.Stop()
		delete(m.pendingDel, s)
		m.removeSegmentFiles(s)
	}
}

func (m *Manager) removeSegmentFiles(s *segment) {
	s.close()
	for _, suf := range segmentSuffixes {
		if err := m.fs.Remove(s.path(suf) + deletedSuffix); err != nil && !os.IsNotExist(err) {
			m.logger.Warn("storage: remove deleted segment", "file", s.path(suf), "err", err)
		}
	}
}
