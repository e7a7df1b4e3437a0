package storage

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"samsa/internal/vfs"
)

// LogDirs is a broker's set of log dirs (log.dirs, KIP-112 JBOD): one
// Manager per dir, each with its own flusher, retention loop, cleaner,
// checkpoints and offline state, so a failed dir takes only its own
// partitions offline. It is safe for concurrent use.
//
// A partition lives in exactly one dir. Create finds it where it is, or
// puts a new one in the online dir that holds the fewest partitions
// (ties: the first in log.dirs order), as Kafka's LogManager does.
type LogDirs struct {
	mgrs []*Manager

	// createMu serialises Create and Delete of one partition across the
	// dirs (the lock of tp is createMu[createStripe(tp)]), so two
	// Creates of a new partition cannot put it in two dirs.
	createMu [createStripes]sync.Mutex

	// placeMu serialises placement: a new partition goes to the online
	// dir with the fewest logs plus partitions being created there
	// (Manager.numPlaced), and is reserved there before placeMu is
	// released, so partitions created at once (a broker hosting a new
	// topic creates its partitions in parallel) spread as if one after
	// the other, while their IO still runs in parallel. Taken before a
	// Manager's mu, never after.
	placeMu sync.Mutex
	// moving holds the moves in progress (StartMove), under placeMu.
	moving map[TopicPartition]*LogMove
}

// ErrDuplicateLog means a partition was found in more than one log dir at
// open.
var ErrDuplicateLog = errors.New("storage: partition in more than one log dir")

// OpenLogDirs opens every dir of dirs with cfg (cfg.Dir is ignored), at
// once: recovery of each dir runs in parallel with the others. It fails
// if a dir fails to open, or if a partition is found in two dirs (a copy
// left behind by hand, or dirs listed twice under different names): the
// error names both, and the operator removes the stale one. Each dir's
// Manager is opened with cfg; dirs must be absolute and distinct.
func OpenLogDirs(dirs []string, cfg ManagerConfig) (*LogDirs, error) {
	if len(dirs) == 0 {
		return nil, errors.New("storage: no log dir")
	}
	for i, d := range dirs {
		if slices.Contains(dirs[:i], d) {
			return nil, fmt.Errorf("storage: log dir %s listed twice", d)
		}
	}
	fs := cfg.FS
	if fs == nil {
		fs = vfs.Default
	}
	if err := resolveFutures(fs, dirs); err != nil {
		return nil, err
	}
	mgrs := make([]*Manager, len(dirs))
	errs := make([]error, len(dirs))
	ParallelEach(len(dirs), len(dirs), func(i int) {
		c := cfg
		c.Dir = dirs[i]
		if c.Logger != nil {
			c.Logger = c.Logger.With("log_dir", dirs[i])
		}
		mgrs[i], errs[i] = OpenManager(c)
	})
	ld := &LogDirs{}
	for i, m := range mgrs {
		if m != nil {
			ld.mgrs = append(ld.mgrs, m)
		}
		if errs[i] != nil {
			errs[i] = fmt.Errorf("storage: log dir %s: %w", dirs[i], errs[i])
		}
	}
	err := errors.Join(errs...)
	if err == nil {
		err = ld.checkDuplicates()
	}
	if err != nil {
		ld.Close()
		return nil, err
	}
	return ld, nil
}

// checkDuplicates fails if a partition's log was found in two dirs.
func (ld *LogDirs) checkDuplicates() error {
	where := make(map[TopicPartition]string)
	var errs []error
	for _, m := range ld.mgrs {
		for _, l := range m.Logs() {
			if other, ok := where[l.tp]; ok {
				errs = append(errs, fmt.Errorf("%w: %s-%d is in %s and in %s; remove the stale copy",
					ErrDuplicateLog, l.tp.Topic, l.tp.Partition, other, m.dir))
				continue
			}
			where[l.tp] = m.dir
		}
	}
	return errors.Join(errs...)
}

// Dirs returns the Managers, one per log dir, in log.dirs order. The
// caller owns the slice, not the Managers.
func (ld *LogDirs) Dirs() []*Manager { return slices.Clone(ld.mgrs) }

// DirOf returns the Manager holding tp's log, or nil.
func (ld *LogDirs) DirOf(tp TopicPartition) *Manager {
	for _, m := range ld.mgrs {
		if m.Log(tp) != nil {
			return m
		}
	}
	return nil
}

// Log returns tp's log, or nil.
func (ld *LogDirs) Log(tp TopicPartition) *Log {
	if m := ld.DirOf(tp); m != nil {
		return m.Log(tp)
	}
	return nil
}

// Logs returns every open log of every dir, sorted by topic and
// partition. The caller owns the returned slice.
func (ld *LogDirs) Logs() []*Log {
	var out []*Log
	for _, m := range ld.mgrs {
		out = append(out, m.logsUnordered()...)
	}
	slices.SortFunc(out, func(a, b *Log) int {
		if c := strings.Compare(a.tp.Topic, b.tp.Topic); c != 0 {
			return c
		}
		return cmp.Compare(a.tp.Partition, b.tp.Partition)
	})
	return out
}

// Create opens tp's log in the dir that holds it, or creates it in the
// online dir with the fewest partitions (Manager.Create has the rest).
// A partition whose dir is offline is not created again elsewhere: its
// records are in the failed dir, and Create returns ErrLogDirOffline
// (the controller has been told that this replica is offline). With
// every dir offline Create returns ErrLogDirOffline.
func (ld *LogDirs) Create(tp TopicPartition, topicID [16]byte, cfg Config) (*Log, error) {
	mu := &ld.createMu[createStripe(tp)]
	mu.Lock()
	defer mu.Unlock()
	if m := ld.DirOf(tp); m != nil {
		return m.Create(tp, topicID, cfg)
	}
	ld.placeMu.Lock()
	best, bestN := -1, 0
	for i, m := range ld.mgrs {
		if m.Offline() {
			continue
		}
		if n := m.numPlaced(); best < 0 || n < bestN {
			best, bestN = i, n
		}
	}
	if best < 0 {
		ld.placeMu.Unlock()
		return nil, ErrLogDirOffline
	}
	ld.mgrs[best].reserve()
	ld.placeMu.Unlock()
	return ld.mgrs[best].create(tp, topicID, cfg, true)
}

// Delete closes tp's log and removes it from the dir that holds it
// (Manager.Delete), and the copy of a move of it under way, so that no
// later open brings the partition back from that copy.
func (ld *LogDirs) Delete(tp TopicPartition) error {
	mu := &ld.createMu[createStripe(tp)]
	mu.Lock()
	defer mu.Unlock()
	// NB: a move finishing meanwhile (LogMove.Finish takes no createMu)
	// puts the log in its destination: delete it there too.
	for range len(ld.mgrs) + 1 {
		m := ld.DirOf(tp)
		if m == nil {
			break
		}
		if err := m.Delete(tp); err != nil {
			return err
		}
	}
	if mv := ld.Moving(tp); mv != nil {
		mv.Abort()
	}
	return nil
}

// Offline reports whether every log dir is offline.
func (ld *LogDirs) Offline() bool {
	for _, m := range ld.mgrs {
		if !m.Offline() {
			return false
		}
	}
	return true
}

// CorruptBatches sums Manager.CorruptBatches over the dirs.
func (ld *LogDirs) CorruptBatches() int64 {
	var n int64
	for _, m := range ld.mgrs {
		n += m.CorruptBatches()
	}
	return n
}

// HeldAcks sums Manager.HeldAcks over the dirs.
func (ld *LogDirs) HeldAcks() int64 {
	var n int64
	for _, m := range ld.mgrs {
		n += m.HeldAcks()
	}
	return n
}

// Backlog sums the dirs' unsynced bytes and returns the oldest age
// (Manager.Backlog).
func (ld *LogDirs) Backlog() (bytes int64, oldest time.Duration) {
	for _, m := range ld.mgrs {
		b, o := m.Backlog()
		bytes += b
		oldest = max(oldest, o)
	}
	return bytes, oldest
}

// RunRetention runs a retention pass in every online dir.
func (ld *LogDirs) RunRetention() {
	for _, m := range ld.mgrs {
		m.RunRetention()
	}
}

// Close closes every dir (Manager.Close) and returns their errors.
// It is idempotent.
func (ld *LogDirs) Close() error {
	errs := make([]error, len(ld.mgrs))
	ParallelEach(len(ld.mgrs), len(ld.mgrs), func(i int) { errs[i] = ld.mgrs[i].Close() })
	return errors.Join(errs...)
}
