package storage

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"samsa/internal/vfs"
)

// Moving a log to another dir of the broker (AlterReplicaLogDirs, KIP-113).
//
// The copy is made in <dest>/<topic>-<partition>.<id>-future while the
// log keeps serving: first the sealed segments without any lock (Copy),
// then, with the log's writers held off, whatever changed and the active
// segment (Finish), after an fsync of the source. The move commits by
// renaming the source directory to <topic>-<partition>.<id>-delete; then
// the future directory is renamed to <topic>-<partition>. A crash before
// the commit leaves the source live and a -future directory, which the
// next open deletes; a crash after it leaves no live log but the
// -future one, which the next open renames into place (and the -delete
// directory goes as always). So a crash leaves the old or the new log
// live, never both.

// futureSuffix ends the directory of a log being copied to another dir.
const futureSuffix = "-future"

// ErrMoveInProgress means a partition already has a move to another dir
// running.
var ErrMoveInProgress = errors.New("storage: log move in progress")

// ErrLogDirNotFound means a dir is not one of the broker's log dirs.
var ErrLogDirNotFound = errors.New("storage: not a log dir")

// LogMove is one log's move to another dir. Copy, then Finish or Abort;
// a LogMove is used by one goroutine at a time.
type LogMove struct {
	ld       *LogDirs
	tp       TopicPartition
	old      *Log
	from, to *Manager
	future   string // the -future directory
	// gen is the log's truncation and cleaning count when the copy
	// started; if it changed, Finish copies everything again.
	gen int64
	// copied is the size of each file Copy copied, by name; copiedTo
	// the next offset after the last segment Copy copied. Under
	// ld.placeMu.
	copied   map[string]int64
	copiedTo int64
}

// StartMove prepares moving tp's log to the log dir dest: it creates the
// future directory there. It fails with ErrLogDirNotFound for a dest
// that is not a log dir, ErrLogDirOffline when either dir is offline,
// ErrMoveInProgress when tp is already moving, and returns (nil, nil)
// when tp's log is in dest already. tp must be hosted (ErrClosed
// otherwise).
func (ld *LogDirs) StartMove(tp TopicPartition, dest string) (*LogMove, error) {
	var to *Manager
	for _, m := range ld.mgrs {
		if m.dir == filepath.Clean(dest) {
			to = m
		}
	}
	if to == nil {
		return nil, fmt.Errorf("%w: %s", ErrLogDirNotFound, dest)
	}
	mu := &ld.createMu[createStripe(tp)]
	mu.Lock()
	defer mu.Unlock()
	from := ld.DirOf(tp)
	switch {
	case from == nil:
		return nil, fmt.Errorf("storage: move %s-%d: %w", tp.Topic, tp.Partition, ErrClosed)
	case from.Offline() || to.Offline():
		return nil, ErrLogDirOffline
	case from == to:
		return nil, nil
	}
	ld.placeMu.Lock()
	if ld.moving == nil {
		ld.moving = make(map[TopicPartition]*LogMove)
	}
	if ld.moving[tp] != nil {
		ld.placeMu.Unlock()
		return nil, ErrMoveInProgress
	}
	var rnd [16]byte
	rand.Read(rnd[:])
	mv := &LogMove{ld: ld, tp: tp, old: from.Log(tp), from: from, to: to, copied: make(map[string]int64),
		future: filepath.Join(to.dir, partitionDir(tp)+"."+hex.EncodeToString(rnd[:])+futureSuffix)}
	mv.gen = mv.old.truncGen.Load() + mv.old.cleanGen.Load()
	ld.moving[tp] = mv
	ld.placeMu.Unlock()
	if err := to.fs.MkdirAll(mv.future, 0o755); err != nil {
		mv.Abort()
		return nil, fmt.Errorf("storage: create %s: %w", mv.future, err)
	}
	return mv, nil
}

// Moving returns the move of tp in progress, or nil.
func (ld *LogDirs) Moving(tp TopicPartition) *LogMove {
	ld.placeMu.Lock()
	defer ld.placeMu.Unlock()
	return ld.moving[tp]
}

// Dest returns the dir the log is moving to.
func (mv *LogMove) Dest() string { return mv.to.dir }

// Copied returns the bytes copied so far and the offset the copy has
// reached (DescribeLogDirs reports the future replica's size and lag
// from them).
func (mv *LogMove) Copied() (bytes, offset int64) {
	mv.ld.placeMu.Lock()
	defer mv.ld.placeMu.Unlock()
	for _, s := range mv.copied {
		bytes += s
	}
	return bytes, mv.copiedTo
}

// Copy copies the sealed segments that are synced into the future
// directory, then the active segment's records as far as they go, without
// holding any lock of the log, so the log serves meanwhile; Finish then
// only adds what was appended since. It stops at ctx's end with its
// error.
func (mv *LogMove) Copy(ctx context.Context) error {
	l := mv.old
	l.mu.RLock()
	segs := l.segs
	unsynced := make(map[*segment]bool, len(l.unsynced))
	for _, s := range l.unsynced {
		unsynced[s] = true
	}
	l.mu.RUnlock()
	for _, s := range segs[:len(segs)-1] {
		if unsynced[s] {
			continue
		}
		for _, suf := range segmentSuffixes {
			if err := ctx.Err(); err != nil {
				return err
			}
			name := segmentName(s.baseOffset) + suf
			src := filepath.Join(l.dir, name)
			fi, err := l.fs.Stat(src)
			if err != nil {
				continue // no .txnindex, or deleted by retention meanwhile
			}
			if err := mv.copyFile(src, name, fi.Size()); err != nil {
				return err
			}
		}
		mv.ld.placeMu.Lock()
		mv.copiedTo = s.nextOffset.Load()
		mv.ld.placeMu.Unlock()
	}
	// The active segment's .log up to its published size: whole batches,
	// never one being written.
	active := segs[len(segs)-1]
	if err := ctx.Err(); err != nil {
		return err
	}
	name := segmentName(active.baseOffset) + logSuffix
	if err := mv.copyRange(filepath.Join(l.dir, name), name, 0, active.size.Load()); err != nil {
		return err
	}
	return nil
}

// copyFile copies size bytes of src to name in the future directory and
// fsyncs it.
func (mv *LogMove) copyFile(src, name string, size int64) error {
	return mv.copyRange(src, name, 0, size)
}

// copyRange copies bytes [from, to) of src to name in the future
// directory, which holds its first from bytes already (from 0: it is
// created afresh), and fsyncs it.
func (mv *LogMove) copyRange(src, name string, from, to int64) error {
	fs := mv.to.fs
	in, err := fs.Open(src)
	if err != nil {
		return fmt.Errorf("storage: move: %w", err)
	}
	defer in.Close()
	dst := filepath.Join(mv.future, name)
	var out vfs.File
	if from == 0 {
		out, err = fs.Create(dst)
	} else {
		out, err = fs.OpenReadWrite(dst) // writes go to its end
	}
	if err != nil {
		return fmt.Errorf("storage: move: create %s: %w", dst, err)
	}
	if from > 0 {
		if fi, serr := out.Stat(); serr != nil || fi.Size() != from {
			out.Close()
			return mv.copyRange(src, name, 0, to)
		}
	}
	_, err = io.Copy(out, io.NewSectionReader(in, from, to-from))
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("storage: move: copy %s to %s: %w", src, dst, err)
	}
	mv.ld.placeMu.Lock()
	mv.copied[name] = to
	mv.ld.placeMu.Unlock()
	return nil
}

// Finish completes the move: with the log's writers held off it flushes
// the log, copies what Copy did not (or all of it, if the log was
// truncated or cleaned since the move started), commits, opens the new
// log in the destination dir and returns it. The old log refuses writes
// from then on (ErrClosed) but stays readable until file.delete.delay.ms
// has passed, for reads already under way. The caller must hold off its
// own users of the log meanwhile (the partition's append lock) and switch
// them to the new log before letting them go. On an error before the
// commit the move is abandoned and the old log stays live; an error
// after it takes the source dir offline.
func (mv *LogMove) Finish() (*Log, error) {
	l := mv.old
	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.checkWritable(); err != nil {
		mv.Abort()
		return nil, err
	}
	if err := l.flush(true); err != nil {
		l.goOffline(err)
		mv.Abort()
		return nil, ErrLogDirOffline
	}
	if mv.gen != l.truncGen.Load()+l.cleanGen.Load() {
		mv.copied = make(map[string]int64)
	}
	fs := l.fs
	names, err := fs.List(l.dir)
	if err != nil {
		mv.Abort()
		return nil, fmt.Errorf("storage: move: list %s: %w", l.dir, err)
	}
	live := make(map[string]bool, len(names))
	for _, name := range names {
		if strings.HasSuffix(name, deletedSuffix) || strings.HasSuffix(name, cleanedSuffix) ||
			strings.HasSuffix(name, swapSuffix) || strings.HasSuffix(name, ".tmp") {
			continue
		}
		live[name] = true
		src := filepath.Join(l.dir, name)
		fi, err := fs.Stat(src)
		if err != nil {
			mv.Abort()
			return nil, fmt.Errorf("storage: move: %w", err)
		}
		n, ok := mv.copied[name]
		switch {
		case ok && n == fi.Size() && isSegmentFile(name):
			continue
		case ok && n > 0 && n < fi.Size() && strings.HasSuffix(name, logSuffix):
			// A .log only grows (a truncation or a cleaning made Finish
			// forget the copy): add what was appended since Copy.
			err = mv.copyRange(src, name, n, fi.Size())
		default:
			err = mv.copyFile(src, name, fi.Size())
		}
		if err != nil {
			mv.Abort()
			return nil, err
		}
	}
	// Segments retention deleted since Copy.
	copiedNames, err := fs.List(mv.future)
	if err != nil {
		mv.Abort()
		return nil, fmt.Errorf("storage: move: list %s: %w", mv.future, err)
	}
	for _, name := range copiedNames {
		if !live[name] {
			if err := fs.Remove(filepath.Join(mv.future, name)); err != nil {
				mv.Abort()
				return nil, fmt.Errorf("storage: move: %w", err)
			}
		}
	}
	if err := fs.SyncDir(mv.future); err != nil {
		mv.Abort()
		return nil, fmt.Errorf("storage: move: sync %s: %w", mv.future, err)
	}
	if err := fs.SyncDir(mv.to.dir); err != nil {
		mv.Abort()
		return nil, fmt.Errorf("storage: move: sync %s: %w", mv.to.dir, err)
	}

	// Hold the flusher off the old log, and wait out a flush under way:
	// its directory is about to be renamed.
	l.moved.Store(true)
	for l.flushing.Load() {
		time.Sleep(time.Millisecond)
	}
	leo, logStart := l.LogEndOffset(), l.LogStartOffset()
	var rnd [16]byte
	rand.Read(rnd[:])
	gone := filepath.Join(mv.from.dir, partitionDir(mv.tp)+"."+hex.EncodeToString(rnd[:])+"-delete")
	// The commit point.
	if err := fs.Rename(l.dir, gone); err != nil {
		l.moved.Store(false)
		mv.Abort()
		return nil, fmt.Errorf("storage: move: rename %s: %w", l.dir, err)
	}
	if err := fs.SyncDir(mv.from.dir); err != nil {
		l.goOffline(err)
		mv.done()
		return nil, ErrLogDirOffline
	}
	mv.from.mu.Lock()
	delete(mv.from.logs, mv.tp)
	mv.from.mu.Unlock()
	// NB: the old log's waiters are not woken: its durable offset is
	// final, and the caller wakes them once it has switched to the new
	// log (a waiter woken before would find the old log refusing
	// writes and fail an acknowledgement the new log would give).
	mv.from.retireLater(l, gone)

	dir := filepath.Join(mv.to.dir, partitionDir(mv.tp))
	nl, err := mv.openFuture(dir, leo, logStart)
	mv.done()
	if err != nil {
		mv.to.setOffline(err)
		return nil, ErrLogDirOffline
	}
	nl.SetConfig(l.Config())
	nl.cleanedTo.Store(l.cleanedTo.Load())
	mv.to.logger.Info("storage: log moved to another log dir", "topic", mv.tp.Topic, "partition", mv.tp.Partition,
		"from", mv.from.dir, "to", mv.to.dir, "log_end_offset", leo)
	return nl, nil
}

// openFuture renames the future directory to dir and opens the log in
// it, which everything below leo was fsynced into.
func (mv *LogMove) openFuture(dir string, leo, logStart int64) (*Log, error) {
	fs := mv.to.fs
	if err := fs.Rename(mv.future, dir); err != nil {
		return nil, fmt.Errorf("storage: move: rename %s: %w", mv.future, err)
	}
	if err := fs.SyncDir(mv.to.dir); err != nil {
		return nil, fmt.Errorf("storage: move: sync %s: %w", mv.to.dir, err)
	}
	nl, err := mv.to.loadLog(mv.tp, dir, leo, logStart, true)
	if err != nil {
		return nil, err
	}
	mv.to.mu.Lock()
	defer mv.to.mu.Unlock()
	if mv.to.isClosed() {
		nl.closeFiles()
		return nil, ErrClosed
	}
	mv.to.logs[mv.tp] = nl
	return nl, nil
}

// Abort abandons the move: the future directory is removed and the log
// stays where it is.
func (mv *LogMove) Abort() {
	if err := mv.to.fs.RemoveAll(mv.future); err != nil {
		mv.to.logger.Warn("storage: remove an abandoned log copy", "dir", mv.future, "err", err)
	}
	mv.done()
}

func (mv *LogMove) done() {
	mv.ld.placeMu.Lock()
	defer mv.ld.placeMu.Unlock()
	if mv.ld.moving[mv.tp] == mv {
		delete(mv.ld.moving, mv.tp)
	}
}

// isSegmentFile reports whether name is a segment's file (whose copy
// stays valid while its size does, unless a truncation or cleaning ran).
func isSegmentFile(name string) bool {
	for _, suf := range segmentSuffixes {
		if strings.HasSuffix(name, suf) {
			return true
		}
	}
	return false
}

// retireLater closes the files of a log that moved away and removes its
// old directory (renamed to gone) after file.delete.delay.ms, so that
// reads under way finish; at once when the Manager closes.
func (m *Manager) retireLater(l *Log, gone string) {
	retire := func() {
		l.closeFiles()
		if err := m.fs.RemoveAll(gone); err != nil {
			m.logger.Warn("storage: remove a moved log's old directory", "dir", gone, "err", err)
		}
	}
	delay := time.Duration(l.Config().FileDeleteDelayMs) * time.Millisecond
	m.delMu.Lock()
	defer m.delMu.Unlock()
	if m.isClosed() || delay <= 0 {
		retire()
		return
	}
	var t *time.Timer
	t = time.AfterFunc(delay, func() {
		m.delMu.Lock()
		defer m.delMu.Unlock()
		if _, ok := m.pendingRetire[t]; !ok {
			return // Close got there first
		}
		delete(m.pendingRetire, t)
		retire()
	})
	m.pendingRetire[t] = retire
}

// resolveFutures finishes or undoes the moves a crash interrupted, before
// the dirs open: a -future directory whose partition is live in some dir
// was not committed and is removed; one whose partition is live nowhere
// was committed (the source was renamed away) and is renamed into place.
func resolveFutures(fs vfs.FS, dirs []string) error {
	live := make(map[TopicPartition]bool)
	type future struct {
		tp   TopicPartition
		dir  string
		path string
	}
	var futures []future
	for _, d := range dirs {
		names, err := fs.List(d)
		if err != nil {
			continue // a missing dir: OpenManager creates it
		}
		for _, name := range names {
			if stem, ok := strings.CutSuffix(name, futureSuffix); ok {
				i := strings.LastIndexByte(stem, '.')
				if i <= 0 {
					continue
				}
				if tp, ok := parsePartitionDir(stem[:i]); ok {
					futures = append(futures, future{tp, d, filepath.Join(d, name)})
				}
				continue
			}
			if tp, ok := parsePartitionDir(name); ok {
				live[tp] = true
			}
		}
	}
	for _, f := range futures {
		if live[f.tp] {
			if err := fs.RemoveAll(f.path); err != nil {
				return fmt.Errorf("storage: remove an uncommitted log copy %s: %w", f.path, err)
			}
			continue
		}
		dst := filepath.Join(f.dir, partitionDir(f.tp))
		if err := fs.Rename(f.path, dst); err != nil {
			return fmt.Errorf("storage: finish a committed log move %s: %w", f.path, err)
		}
		if err := fs.SyncDir(f.dir); err != nil {
			return fmt.Errorf("storage: sync %s: %w", f.dir, err)
		}
		live[f.tp] = true
	}
	return nil
}
