package storage

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"samsa/internal/record"
	"samsa/internal/vfs"
)

// Log is one partition's log. Append is serialised internally; reads run
// concurrently with appends.
//
// Lock order: appendMu -> mu -> segment.fileMu. Changed channels have their
// own leaf lock (chMu).
type Log struct {
	m   *Manager
	fs  vfs.FS
	dir string
	tp  TopicPartition
	// topicID is the id in partition.metadata; Create sets it once on a
	// log found without one.
	topicID atomic.Pointer[[16]byte]
	logger  *slog.Logger
	now     func() time.Time // the Manager's clock (ManagerConfig.Now)

	cfg atomic.Pointer[Config]

	// appendMu serialises writers: Append, Truncate, DeleteRecordsBefore,
	// roll and retention. File writes happen under it, not under mu.
	appendMu sync.Mutex
	// idleEnd is the log end offset the last retention pass saw; guarded
	// by appendMu.
	idleEnd int64

	// mu guards segs (replaced, never modified in place, so a reader may
	// keep the slice it got), each segment's in-memory indexes and
	// counters, unsynced and pendingMsgs.
	mu   sync.RWMutex
	segs []*segment
	// unsynced holds segments rolled since the last flush; the flusher
	// syncs them with the active one.
	unsynced    []*segment
	pendingMsgs int64     // page-cache mode: messages appended since the last flush
	dirDirty    bool      // a segment file was created since the last flush: fsync the dir
	lastFlush   time.Time // page-cache mode: time of the last flush
	// backlog is what durable mode has appended and not yet fsynced
	// (flusher.go).
	backlog backlog

	// cleanMu serialises cleaning passes over this log; the swap of
	// cleaned segments also takes appendMu.
	cleanMu sync.Mutex
	// cleanedTo is the cleaner checkpoint: offsets below it were cleaned
	// with an offset map that covered them (the first dirty offset).
	cleanedTo atomic.Int64
	// lastStable returns the partition's last stable offset, which the
	// cleaner never cleans past; nil until SetLastStableOffsetFunc.
	lastStable atomic.Pointer[func() int64]

	// epochMu guards epochs, the leader epoch cache (sorted by epoch and
	// start offset; replaced, never modified in place). Writers also hold
	// appendMu, so they may read epochs without epochMu. A leaf lock.
	epochMu sync.RWMutex
	epochs  []EpochEntry

	logStart      atomic.Int64
	logEnd        atomic.Int64
	durable       atomic.Int64 // durable mode: everything below is fsynced
	recoveryPoint atomic.Int64 // everything below is fsynced, any mode
	dirty         atomic.Bool  // queued for the flusher
	dirtySince    atomic.Int64 // unix nanos of the append that queued it
	flushing      atomic.Bool  // a flusher goroutine owns the log (flushLog)
	flushAgain    atomic.Bool  // queued while flushing: flushLog goes again
	offline       atomic.Bool
	closed        atomic.Bool
	// moved is set once the log moved to another dir (LogMove.Finish):
	// it takes no more writes but serves reads until its files close.
	moved atomic.Bool
	// cleanGen counts cleaned segments swapped in (a move copies the
	// log again if it changed).
	cleanGen atomic.Int64

	// truncGen is a sequence count of truncations: odd while one runs
	// (files being cut, segments going), even otherwise. Truncate and
	// TruncateFullyAndStartAt bump it before touching a file and again
	// after publishing the new log end. A read that saw it change started
	// over (its short reads were the cut, not corruption), and a flush that
	// saw it change publishes nothing.
	truncGen atomic.Int64

	// chMu guards the channels below. A leaf lock.
	chMu      sync.Mutex
	changed   chan struct{} // closed on any offset move; nil until asked for
	durableCh chan struct{} // closed when durable moves, on offline and close
	truncDone chan struct{} // closed when the running truncation ends; nil when none runs

	// onChange is the change hook (SetChangeHook); nil until set.
	onChange atomic.Pointer[func(durable bool)]

	// skipVerify leaves out the CRC check of batches on read; only the
	// read benchmark sets it, before reading, to measure the check.
	skipVerify bool
}

// LogStartOffset returns the first offset that can be read.
func (l *Log) LogStartOffset() int64 { return l.logStart.Load() }

// LogEndOffset returns the offset the next appended record gets.
func (l *Log) LogEndOffset() int64 { return l.logEnd.Load() }

// DurableOffset is the offset below which everything is fsynced. In
// page-cache mode it equals LogEndOffset.
func (l *Log) DurableOffset() int64 {
	if !l.cfg.Load().Durable() {
		return l.logEnd.Load()
	}
	return l.durable.Load()
}

// Dir returns the log's directory.
func (l *Log) Dir() string { return l.dir }

// TopicPartition returns the partition this log holds.
func (l *Log) TopicPartition() TopicPartition { return l.tp }

// TopicID returns the topic id from partition.metadata.
// The zero id means the log has no partition.metadata (a broker killed
// while it created the partition).
func (l *Log) TopicID() [16]byte { return *l.topicID.Load() }

// Config returns the log's current configuration.
func (l *Log) Config() Config { return *l.cfg.Load() }

// SetConfig changes the log's configuration (dynamic topic configs).
func (l *Log) SetConfig(cfg Config) {
	cfg = normalizeConfig(cfg)
	old := l.cfg.Swap(&cfg)
	if old.Durable() != cfg.Durable() && l.m != nil {
		// Whatever is unsynced gets synced under the new policy.
		l.m.markDirty(l)
	}
}

// Size returns the total bytes of the log's segments.
func (l *Log) Size() int64 {
	l.mu.RLock()
	segs := l.segs
	l.mu.RUnlock()
	var n int64
	for _, s := range segs {
		n += s.size.Load()
	}
	return n
}

// SegmentCount returns the number of segments of the log.
func (l *Log) SegmentCount() int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return len(l.segs)
}

// SegmentInfo describes one segment of a log.
type SegmentInfo struct {
	BaseOffset int64
	// MaxTimestamp is the largest record timestamp in the segment, -1
	// when it is empty.
	MaxTimestamp int64
	Size         int64
}

// Segments returns the log's segments, oldest first.
func (l *Log) Segments() []SegmentInfo {
	l.mu.RLock()
	defer l.mu.RUnlock()
	out := make([]SegmentInfo, len(l.segs))
	for i, s := range l.segs {
		out[i] = SegmentInfo{BaseOffset: s.baseOffset, MaxTimestamp: s.maxTimestamp, Size: s.size.Load()}
	}
	return out
}

// Changed returns a channel that is closed the next time LogEndOffset,
// DurableOffset or LogStartOffset changes (fetch long-poll waits on it).
func (l *Log) Changed() <-chan struct{} {
	l.chMu.Lock()
	defer l.chMu.Unlock()
	if l.changed == nil {
		l.changed = make(chan struct{})
	}
	return l.changed
}

// SetChangeHook sets f to run after every change that wakes Changed
// waiters, with durable set when WaitDurable waiters are woken too: the
// durable offset may have moved (the flusher published it, an append in
// page-cache mode, a truncation) or the log went offline or closed. f runs
// on the goroutine that made the change, possibly with the log's appendMu
// held, after the new offsets are stored: it must not block or call the
// Log's writing methods; its reads (LogEndOffset, DurableOffset) see the
// change. The replica package wakes its delayed operations with it.
func (l *Log) SetChangeHook(f func(durable bool)) { l.onChange.Store(&f) }

// notify wakes Changed waiters and, when durable is set, WaitDurable
// waiters, then runs the change hook. A channel nobody asked for is not
// allocated.
func (l *Log) notify(durable bool) {
	l.chMu.Lock()
	if l.changed != nil {
		close(l.changed)
		l.changed = nil
	}
	if durable && l.durableCh != nil {
		close(l.durableCh)
		l.durableCh = nil
	}
	l.chMu.Unlock()
	if f := l.onChange.Load(); f != nil {
		(*f)(durable)
	}
}

func (l *Log) durableChan() <-chan struct{} {
	l.chMu.Lock()
	defer l.chMu.Unlock()
	if l.durableCh == nil {
		l.durableCh = make(chan struct{})
	}
	return l.durableCh
}

// WaitDurable blocks until every offset below offset is fsynced (group
// commit: one fsync serves every waiter queued at that moment), the log
// fails (ErrLogDirOffline), or ctx is done. In page-cache mode it returns
// at once.
func (l *Log) WaitDurable(ctx context.Context, offset int64) error {
	for {
		ch := l.durableChan()
		if l.offline.Load() || (l.m != nil && l.m.offline.Load()) {
			return ErrLogDirOffline
		}
		if l.DurableOffset() >= offset {
			return nil
		}
		if err := l.DurableErr(); err != nil {
			return err
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// DurableChanged returns a channel closed the next time the durable offset
// may have moved; with DurableOffset and DurableErr it lets a caller wait
// for durability together with other events.
func (l *Log) DurableChanged() <-chan struct{} { return l.durableChan() }

// DurableErr reports why the durable offset can no longer move:
// ErrLogDirOffline or ErrClosed; nil otherwise.
func (l *Log) DurableErr() error {
	if l.offline.Load() || (l.m != nil && l.m.offline.Load()) {
		return ErrLogDirOffline
	}
	if l.closed.Load() {
		return ErrClosed
	}
	return nil
}

// offlineErr returns ErrLogDirOffline once the log or its dir failed.
func (l *Log) offlineErr() error {
	if l.offline.Load() || (l.m != nil && l.m.offline.Load()) {
		return ErrLogDirOffline
	}
	return nil
}

// Offline reports whether the log's dir is offline (a write or sync in it
// failed).
func (l *Log) Offline() bool { return l.offlineErr() != nil }

func (l *Log) checkWritable() error {
	if l.closed.Load() || l.moved.Load() {
		return ErrClosed
	}
	return l.offlineErr()
}

// goOffline marks the log (and its Manager) failed after an IO error.
func (l *Log) goOffline(err error) {
	if l.offline.Swap(true) {
		return
	}
	l.logger.Error("storage: log dir offline", "dir", l.dir, "err", err)
	if l.m != nil {
		l.m.setOffline(err)
	}
	l.notify(true)
}

// AppendResult describes an appended batch.
type AppendResult struct {
	BaseOffset     int64
	LastOffset     int64
	LogAppendTime  int64 // -1 unless the batch was stamped with LogAppendTime
	LogStartOffset int64
}

// maxSegmentSize bounds a segment: index positions are int32.
const maxSegmentSize = math.MaxInt32

// Append writes a validated batch (record.Batch.Validate has passed) at the
// log end: it patches baseOffset and partitionLeaderEpoch, stamps
// LogAppendTime (nowMs) when logAppendTime is set, writes it, updates the
// indexes and rolls the segment when due. It neither blocks on fsync nor
// waits for anything: call WaitDurable for that. b is modified in place and
// may be retained until the call returns.
func (l *Log) Append(b record.Batch, leaderEpoch int32, logAppendTime bool, nowMs int64) (AppendResult, error) {
	if len(b) < record.HeaderSize {
		return AppendResult{}, fmt.Errorf("storage: append %d bytes: %w", len(b), record.ErrShortBatch)
	}
	size := int64(len(b))
	if size > maxSegmentSize {
		return AppendResult{}, fmt.Errorf("storage: append %d bytes: %w", size, ErrMessageTooLarge)
	}
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.checkWritable(); err != nil {
		return AppendResult{}, err
	}
	cfg := l.cfg.Load()
	base := l.logEnd.Load()
	b.SetBaseOffset(base)
	b.SetLeaderEpoch(leaderEpoch)
	res := AppendResult{BaseOffset: base, LastOffset: b.LastOffset(), LogAppendTime: -1}
	if logAppendTime {
		b.SetLogAppendTime(nowMs)
		res.LogAppendTime = nowMs
	}
	maxTs := b.MaxTimestamp()
	if err := l.assignEpochLocked(leaderEpoch, base); err != nil {
		l.goOffline(err)
		return AppendResult{}, ErrLogDirOffline
	}

	seg := l.activeSegment()
	if l.shouldRoll(seg, cfg, size, res.LastOffset, nowMs) {
		var err error
		if seg, err = l.rollLocked(); err != nil {
			l.goOffline(err)
			return AppendResult{}, ErrLogDirOffline
		}
	}

	pos := seg.size.Load()
	if n, err := seg.log.Write(b); err != nil || n != len(b) {
		if err == nil {
			err = fmt.Errorf("short write %d of %d", n, len(b))
		}
		l.goOffline(fmt.Errorf("storage: write %s: %w", seg.path(logSuffix), err))
		return AppendResult{}, ErrLogDirOffline
	}
	if err := l.indexBatchLocked(seg, cfg, pos, size, res.LastOffset, maxTs); err != nil {
		l.goOffline(err)
		return AppendResult{}, ErrLogDirOffline
	}

	l.mu.Lock()
	seg.size.Store(pos + size)
	seg.nextOffset.Store(res.LastOffset + 1)
	l.logEnd.Store(res.LastOffset + 1)
	if !cfg.Durable() {
		l.pendingMsgs += int64(b.NumRecords())
	} else {
		l.backlog.appendedLocked(size, l.now)
	}
	pending := l.pendingMsgs
	l.mu.Unlock()
	res.LogStartOffset = l.logStart.Load()

	l.notify(!cfg.Durable())
	if cfg.Durable() || (cfg.FlushMessages > 0 && pending >= cfg.FlushMessages) {
		if l.m != nil {
			l.m.markDirty(l)
		}
	}
	return res, nil
}

// indexBatchLocked updates seg's indexes and timestamps for a batch of size
// bytes written at pos, following Kafka's rule: an index entry when more
// than index.interval.bytes were written since the last one, so the first
// batch of a segment gets none. Called with appendMu held.
func (l *Log) indexBatchLocked(seg *segment, cfg *Config, pos, size, lastOffset, maxTs int64) error {
	var idxBuf [offsetEntrySize]byte
	var tBuf [timeEntrySize]byte
	l.mu.Lock()
	defer l.mu.Unlock()
	if seg.maxTimestamp < 0 || maxTs > seg.maxTimestamp {
		seg.maxTimestamp = maxTs
		seg.offsetOfMaxTs = lastOffset
	}
	if seg.firstBatchTs < 0 {
		seg.firstBatchTs = maxTs
	}
	if seg.bytesSinceIndex > cfg.IndexIntervalBytes {
		e := offsetEntry{rel: int32(lastOffset - seg.baseOffset), pos: int32(pos)}
		if err := seg.index.file.write(e.encode(idxBuf[:0])); err != nil {
			return err
		}
		seg.index.entries = append(seg.index.entries, e)
		if err := l.maybeTimeIndexLocked(seg, tBuf[:0]); err != nil {
			return err
		}
		seg.bytesSinceIndex = 0
	}
	seg.bytesSinceIndex += size
	return nil
}

// maybeTimeIndexLocked appends (maxTimestamp, offsetOfMaxTs) to seg's time
// index when the timestamp grew since the last entry.
func (l *Log) maybeTimeIndexLocked(seg *segment, buf []byte) error {
	if seg.maxTimestamp < 0 || seg.maxTimestamp <= seg.lastTimeIndexed {
		return nil
	}
	rel := int32(seg.offsetOfMaxTs - seg.baseOffset)
	if len(seg.timeIndex.entries) > 0 && rel <= seg.lastTimeIndexedRel {
		return nil
	}
	e := timeEntry{ts: seg.maxTimestamp, rel: rel}
	if err := seg.timeIndex.file.write(e.encode(buf)); err != nil {
		return err
	}
	seg.timeIndex.entries = append(seg.timeIndex.entries, e)
	seg.lastTimeIndexed, seg.lastTimeIndexedRel = e.ts, e.rel
	return nil
}

func (l *Log) activeSegment() *segment {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.segs[len(l.segs)-1]
}

// shouldRoll applies Kafka's roll rules to appending size bytes ending at
// lastOffset. A non-empty segment rolls when the batch would push it past
// segment.bytes, when segment.ms passed since its first batch's timestamp,
// when an index is full, or when lastOffset no longer fits a relative int32.
func (l *Log) shouldRoll(seg *segment, cfg *Config, size, lastOffset, nowMs int64) bool {
	cur := seg.size.Load()
	if cur == 0 {
		return false
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	switch {
	case cur+size > cfg.SegmentBytes || cur+size > maxSegmentSize:
		return true
	case cfg.SegmentMs >= 0 && seg.firstBatchTs >= 0 && nowMs-seg.firstBatchTs > cfg.SegmentMs:
		return true
	case seg.index.full() || seg.timeIndex.full():
		return true
	case lastOffset-seg.baseOffset > math.MaxInt32:
		return true
	}
	return false
}

// rollLocked closes the active segment for appends and starts a new one at
// the log end. Called with appendMu held.
func (l *Log) rollLocked() (*segment, error) {
	old := l.activeSegment()
	leo := l.logEnd.Load()
	cfg := l.cfg.Load()
	l.mu.Lock()
	err := l.maybeTimeIndexLocked(old, nil)
	l.mu.Unlock()
	if err != nil {
		return nil, err
	}
	seg, err := createSegment(l.fs, l.dir, leo, cfg)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	segs := make([]*segment, len(l.segs), len(l.segs)+1)
	copy(segs, l.segs)
	l.segs = append(segs, seg)
	l.unsynced = append(l.unsynced, old)
	l.dirDirty = true
	l.mu.Unlock()
	l.logger.Debug("storage: rolled segment", "dir", l.dir, "base", leo)
	if l.m != nil {
		l.m.markDirty(l)
	}
	return seg, nil
}

// createSegment creates empty files for a segment at base. The .log is
// opened in append mode (OpenReadWrite) and emptied, so that writes after a
// Truncate land at the new end; the index files are created empty and
// left closed until their first entry.
func createSegment(fs vfs.FS, dir string, base int64, cfg *Config) (*segment, error) {
	s := newSegment(fs, dir, base, cfg)
	if err := removeStaleTxnIndex(fs, s); err != nil {
		return nil, err
	}
	f, err := fs.OpenReadWrite(s.path(logSuffix))
	if err != nil {
		return nil, fmt.Errorf("storage: create segment: %w", err)
	}
	if err := f.Truncate(0); err != nil {
		f.Close()
		return nil, fmt.Errorf("storage: create segment: %w", err)
	}
	s.log = f
	for _, x := range []*indexFile{&s.index.file, &s.timeIndex.file} {
		if err := x.create(); err != nil {
			s.log.Close()
			return nil, fmt.Errorf("storage: create segment: %w", err)
		}
	}
	return s, nil
}

// newSegment returns the in-memory segment at base, with no file open.
func newSegment(fs vfs.FS, dir string, base int64, cfg *Config) *segment {
	s := &segment{
		dir:             dir,
		baseOffset:      base,
		maxTimestamp:    -1,
		offsetOfMaxTs:   -1,
		firstBatchTs:    -1,
		lastTimeIndexed: -1,
	}
	s.index.file = indexFile{fs: fs, path: s.path(indexSuffix)}
	s.timeIndex.file = indexFile{fs: fs, path: s.path(timeIndexSuffix)}
	s.nextOffset.Store(base)
	s.index.maxEntries = max(1, int(cfg.SegmentIndexBytes/offsetEntrySize))
	s.timeIndex.maxEntries = max(1, int(cfg.SegmentIndexBytes/timeEntrySize))
	return s
}

// segmentFor returns the index in segs of the segment that holds offset: the
// last one whose base offset is <= offset.
func segmentFor(segs []*segment, offset int64) int {
	i := sort.Search(len(segs), func(i int) bool { return segs[i].baseOffset > offset })
	return max(i-1, 0)
}

// closeFiles closes the log's segment files. Called by the Manager.
func (l *Log) closeFiles() error {
	l.mu.Lock()
	segs := l.segs
	l.mu.Unlock()
	var errs []error
	for _, s := range segs {
		if err := s.close(); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("storage: close %s: %w", l.dir, errs[0])
	}
	return nil
}

// fullyFlushed reports whether everything appended is fsynced: no
// rolled segment waits for its sync, no directory entry for its fsync,
// and the recovery point is the log end. Called once appends have
// stopped (markClosed).
func (l *Log) fullyFlushed() bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return len(l.unsynced) == 0 && !l.dirDirty && l.pendingMsgs == 0 && l.recoveryPoint.Load() == l.logEnd.Load()
}

// markClosed makes the log refuse further calls and wakes waiters.
func (l *Log) markClosed() {
	l.closed.Store(true)
	l.notify(true)
}

// partitionDir returns the directory name of tp.
func partitionDir(tp TopicPartition) string {
	return fmt.Sprintf("%s-%d", tp.Topic, tp.Partition)
}

// fileExists reports whether name exists on fs.
func fileExists(fs vfs.FS, name string) bool {
	_, err := fs.Stat(name)
	return err == nil
}
