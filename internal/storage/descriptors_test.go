package storage

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"samsa/internal/vfs"
)

// openFilesFS counts the files open through it by suffix (".log",
// ".index", ...), the descriptors an OS FS would hold.
type openFilesFS struct {
	vfs.FS
	mu    sync.Mutex
	open  map[string]int
	syncs map[string]int
}

func newOpenFilesFS(fs vfs.FS) *openFilesFS {
	return &openFilesFS{FS: fs, open: map[string]int{}, syncs: map[string]int{}}
}

func (f *openFile) Sync() error {
	f.fs.mu.Lock()
	f.fs.syncs[f.suffix]++
	f.fs.mu.Unlock()
	return f.File.Sync()
}

// synced returns how many fsyncs files with suffix had.
func (c *openFilesFS) synced(suffix string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.syncs[suffix]
}

type openFile struct {
	vfs.File
	fs     *openFilesFS
	suffix string
	once   sync.Once
}

func (f *openFile) Close() error {
	f.once.Do(func() {
		f.fs.mu.Lock()
		f.fs.open[f.suffix]--
		f.fs.mu.Unlock()
	})
	return f.File.Close()
}

func (c *openFilesFS) wrap(f vfs.File, name string, err error) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	suffix := filepath.Ext(name)
	for _, s := range []string{cleanedSuffix, swapSuffix, deletedSuffix} {
		if suffix == s {
			suffix = filepath.Ext(strings.TrimSuffix(name, s))
		}
	}
	c.mu.Lock()
	c.open[suffix]++
	c.mu.Unlock()
	return &openFile{File: f, fs: c, suffix: suffix}, nil
}

func (c *openFilesFS) Create(name string) (vfs.File, error) {
	f, err := c.FS.Create(name)
	return c.wrap(f, name, err)
}

func (c *openFilesFS) Open(name string) (vfs.File, error) {
	f, err := c.FS.Open(name)
	return c.wrap(f, name, err)
}

func (c *openFilesFS) OpenReadWrite(name string) (vfs.File, error) {
	f, err := c.FS.OpenReadWrite(name)
	return c.wrap(f, name, err)
}

// count returns how many files with suffix are open.
func (c *openFilesFS) count(suffix string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.open[suffix]
}

// checkIndexFiles fails unless each segment's index files hold exactly
// its in-memory entries.
// checkIndexFiles checks that every segment's index files hold its
// entries: on disk, but for the active segment's entries still pending,
// which must follow what is on disk.
func checkIndexFiles(t *testing.T, fs vfs.FS, l *Log) {
	t.Helper()
	l.mu.RLock()
	defer l.mu.RUnlock()
	for i, s := range l.segs {
		active := i == len(l.segs)-1
		var want []byte
		for _, e := range s.index.entries {
			want = e.encode(want)
		}
		if got := onDisk(t, fs, &s.index.file, active); !bytes.Equal(got, want) {
			t.Fatalf("%s: %d bytes on disk and pending, %d entries in memory", s.path(indexSuffix), len(got), len(s.index.entries))
		}
		want = nil
		for _, e := range s.timeIndex.entries {
			want = e.encode(want)
		}
		if got := onDisk(t, fs, &s.timeIndex.file, active); !bytes.Equal(got, want) {
			t.Fatalf("%s: %d bytes on disk and pending, %d entries in memory", s.path(timeIndexSuffix), len(got), len(s.timeIndex.entries))
		}
	}
}

// onDisk returns an index file's bytes on disk, followed by its pending
// entries when withPending; a sealed segment must have none pending.
func onDisk(t *testing.T, fs vfs.FS, x *indexFile, withPending bool) []byte {
	t.Helper()
	got := readFileBytes(t, fs, x.path)
	x.mu.Lock()
	defer x.mu.Unlock()
	if !withPending && len(x.pending) > 0 {
		t.Fatalf("%s: %d bytes of a sealed segment's entries still pending", x.path, len(x.pending))
	}
	if len(x.pending) > pendingMax {
		t.Fatalf("%s: %d bytes pending, above pendingMax %d", x.path, len(x.pending), pendingMax)
	}
	return append(got, x.pending...)
}

// TestIdlePartitionsHoldOneDescriptorEach: a partition holds its
// segment's .log open, and its index files only for the moment a write of
// pending entries takes; a retention pass that finds it idle writes what
// is pending, and a restart opens none. Every record reads back
// throughout, and the index files match the indexes in memory. Kafka
// closes idle index files too (its index cache); without this a broker of
// 10,000 partitions needs 30,000 descriptors, and one writing to all of
// them ran out of its 20,000 in the scale run.
func TestIdlePartitionsHoldOneDescriptorEach(t *testing.T) {
	forEachFS(t, func(t *testing.T, base vfs.FS, dir string) {
		const logs, busy = 50, 5
		fs := newOpenFilesFS(base)
		c := newClock(1_700_000_000_000)
		m := openManager(t, fs, dir, c)
		cfg := DefaultConfig()
		cfg.IndexIntervalBytes = 256
		want := map[TopicPartition][]appended{}
		for p := range logs {
			tp := TopicPartition{Topic: "many", Partition: int32(p)}
			l, err := m.Create(tp, [16]byte{1}, cfg)
			if err != nil {
				t.Fatal(err)
			}
			n := 1
			if p < busy {
				n = 40 // past index.interval.bytes: index entries
			}
			want[tp] = appendN(t, l, 0, n, c.nowMs())
		}
		if got := fs.count(logSuffix); got != logs {
			t.Fatalf("%d .log files open, want %d", got, logs)
		}
		if got := fs.count(indexSuffix) + fs.count(timeIndexSuffix); got != 0 {
			t.Fatalf("%d index files open after appends, want none", got)
		}
		// The first pass notes each log end, the second finds them idle.
		m.RunRetention()
		m.RunRetention()
		if got := fs.count(indexSuffix) + fs.count(timeIndexSuffix); got != 0 {
			t.Fatalf("%d index files open after idle retention passes, want 0", got)
		}
		for tp, w := range want {
			checkLog(t, m.Log(tp), w)
			checkIndexFiles(t, base, m.Log(tp))
		}
		// Appending again keeps them right, and closed.
		busyTP := TopicPartition{Topic: "many", Partition: 0}
		want[busyTP] = append(want[busyTP], appendN(t, m.Log(busyTP), 40, 40, c.nowMs())...)
		if got := fs.count(indexSuffix); got != 0 {
			t.Fatalf("%d .index files open after appending to one log, want none", got)
		}
		checkIndexFiles(t, base, m.Log(busyTP))
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
		for suffix, n := range fs.open {
			if n != 0 {
				t.Fatalf("%d %s files open after Close", n, suffix)
			}
		}

		m = openManager(t, fs, dir, c)
		defer m.Close()
		if got := fs.count(logSuffix); got != logs {
			t.Fatalf("%d .log files open after reopening, want %d", got, logs)
		}
		if got := fs.count(indexSuffix) + fs.count(timeIndexSuffix); got != 0 {
			t.Fatalf("%d index files open after reopening, want 0", got)
		}
		for tp, w := range want {
			checkLog(t, m.Log(tp), w)
			checkIndexFiles(t, base, m.Log(tp))
		}
	})
}

// TestRolledSegmentsCloseTheirIndexFiles: once the flusher synced a
// rolled segment, its index files are closed; only the .log files stay
// open (reads need them), and every record reads back after a restart.
func TestRolledSegmentsCloseTheirIndexFiles(t *testing.T) {
	forEachFS(t, func(t *testing.T, base vfs.FS, dir string) {
		fs := newOpenFilesFS(base)
		c := newClock(1_700_000_000_000)
		m := openManager(t, fs, dir, c)
		l, err := m.Create(testTP, [16]byte{1}, smallConfig())
		if err != nil {
			t.Fatal(err)
		}
		want := appendN(t, l, 0, 60, c.nowMs())
		segs := l.SegmentCount()
		if segs < 5 {
			t.Fatalf("%d segments, want several", segs)
		}
		waitFor(t, 10*time.Second, "durable log end", func() bool { return l.DurableOffset() == l.LogEndOffset() })
		if got := fs.count(logSuffix); got != segs {
			t.Fatalf("%d .log files open, want %d", got, segs)
		}
		if got := fs.count(indexSuffix); got > 1 {
			t.Fatalf("%d .index files open with %d segments, want at most the active one's", got, segs)
		}
		checkLog(t, l, want)
		checkIndexFiles(t, base, l)
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
		m = openManager(t, fs, dir, c)
		defer m.Close()
		checkLog(t, m.Log(testTP), want)
		checkIndexFiles(t, base, m.Log(testTP))
	})
}

// TestCleanOpenSyncsNothing: opening a log dir that was closed cleanly
// fsyncs no segment (they were synced before the clean-shutdown marker),
// so a restart with many partitions costs no fsync per partition. After a
// crash only the scanned segments are fsynced.
func TestCleanOpenSyncsNothing(t *testing.T) {
	forEachFS(t, func(t *testing.T, base vfs.FS, dir string) {
		const logs = 20
		c := newClock(1_700_000_000_000)
		m := openManager(t, base, dir, c)
		want := map[TopicPartition][]appended{}
		for p := range logs {
			tp := TopicPartition{Topic: "many", Partition: int32(p)}
			l, err := m.Create(tp, [16]byte{1}, smallConfig())
			if err != nil {
				t.Fatal(err)
			}
			want[tp] = appendN(t, l, 0, 12, c.nowMs())
		}
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
		fs := &countingFS{FS: base}
		m = openManager(t, fs, dir, c)
		if got := fs.logSyncs.Load(); got != 0 {
			t.Fatalf("clean open fsynced %d .log files, want 0", got)
		}
		for tp, w := range want {
			checkLog(t, m.Log(tp), w)
		}
		crash(m)
		fs = &countingFS{FS: base}
		m = openManager(t, fs, dir, c)
		defer m.Close()
		// Each log's last segment is past its recovery point: scanned.
		if got := fs.logSyncs.Load(); got != logs {
			t.Fatalf("open after a crash fsynced %d .log files, want %d (the scanned active segments)", got, logs)
		}
		for tp, w := range want {
			checkLog(t, m.Log(tp), w)
		}
	})
}

// slowDirFS makes every directory fsync take delay and records how many
// ran at once.
type slowDirFS struct {
	vfs.FS
	delay             time.Duration
	mu                sync.Mutex
	inFlight, maxSeen int
}

func (s *slowDirFS) SyncDir(dir string) error {
	s.mu.Lock()
	s.inFlight++
	s.maxSeen = max(s.maxSeen, s.inFlight)
	s.mu.Unlock()
	time.Sleep(s.delay)
	s.mu.Lock()
	s.inFlight--
	s.mu.Unlock()
	return s.FS.SyncDir(dir)
}

// TestCreatesOfDistinctPartitionsRunInParallel: Create of different
// partitions waits for its fsyncs alongside the others (creating 10,000
// partitions one fsync after the other took a minute), and every log
// created so takes and returns records.
func TestCreatesOfDistinctPartitionsRunInParallel(t *testing.T) {
	forEachFS(t, func(t *testing.T, base vfs.FS, dir string) {
		fs := &slowDirFS{FS: base, delay: 20 * time.Millisecond}
		c := newClock(1_700_000_000_000)
		m := openManager(t, fs, dir, c)
		defer m.Close()
		const n = 16
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for p := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := m.Create(TopicPartition{Topic: "par", Partition: int32(p)}, [16]byte{2}, DefaultConfig())
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		fs.mu.Lock()
		seen := fs.maxSeen
		fs.mu.Unlock()
		if seen < 2 {
			t.Fatalf("at most %d directory fsync ran at once while %d partitions were created", seen, n)
		}
		for p := range n {
			l := m.Log(TopicPartition{Topic: "par", Partition: int32(p)})
			checkLog(t, l, appendN(t, l, 0, 3, c.nowMs()))
		}
	})
}

// TestCloseSyncsOnlyWhatTheFlusherHasNot: once the flusher made every log
// durable, Close fsyncs no .log again (one after the other, 10,000 of
// them made a clean shutdown take a minute), and the logs open cleanly
// with every record.
func TestCloseSyncsOnlyWhatTheFlusherHasNot(t *testing.T) {
	forEachFS(t, func(t *testing.T, base vfs.FS, dir string) {
		const logs = 20
		fs := newOpenFilesFS(base)
		c := newClock(1_700_000_000_000)
		m := openManager(t, fs, dir, c)
		want := map[TopicPartition][]appended{}
		for p := range logs {
			tp := TopicPartition{Topic: "many", Partition: int32(p)}
			l, err := m.Create(tp, [16]byte{1}, DefaultConfig())
			if err != nil {
				t.Fatal(err)
			}
			want[tp] = appendN(t, l, 0, 30, c.nowMs())
			waitFor(t, 10*time.Second, "durable log end", func() bool { return l.DurableOffset() == l.LogEndOffset() })
		}
		before := fs.synced(logSuffix)
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
		if got := fs.synced(logSuffix) - before; got != 0 {
			t.Fatalf("Close fsynced %d durable .log files again, want 0", got)
		}
		m = openManager(t, base, dir, c)
		defer m.Close()
		if !fileExists(base, dir) {
			t.Fatal("log dir gone")
		}
		for tp, w := range want {
			checkLog(t, m.Log(tp), w)
			checkIndexFiles(t, base, m.Log(tp))
		}
	})
}

// TestRecoveryAfterACrashLoadsLogsInParallelAndKeepsRightIndexes: after a
// crash the logs are scanned and fsynced several at a time, index files
// that were right are not rewritten (nor fsynced), and every record reads
// back.
func TestRecoveryAfterACrashLoadsLogsInParallelAndKeepsRightIndexes(t *testing.T) {
	forEachFS(t, func(t *testing.T, base vfs.FS, dir string) {
		const logs = 16
		c := newClock(1_700_000_000_000)
		m := openManager(t, base, dir, c)
		// NB: the default config, which the load scans with, so the
		// rebuilt indexes equal the written ones.
		want := map[TopicPartition][]appended{}
		for p := range logs {
			tp := TopicPartition{Topic: "many", Partition: int32(p)}
			l, err := m.Create(tp, [16]byte{1}, DefaultConfig())
			if err != nil {
				t.Fatal(err)
			}
			want[tp] = appendN(t, l, 0, 300, c.nowMs())
			if len(l.activeSegment().index.entries) == 0 {
				t.Fatal("no index entries written")
			}
		}
		crash(m)
		slow := &slowDirFS{FS: base, delay: 20 * time.Millisecond}
		fs := newOpenFilesFS(slow)
		m = openManager(t, fs, dir, c)
		defer m.Close()
		slow.mu.Lock()
		seen := slow.maxSeen
		slow.mu.Unlock()
		if seen < 2 {
			t.Fatalf("at most %d directory fsync ran at once while %d logs recovered", seen, logs)
		}
		if got := fs.synced(indexSuffix) + fs.synced(timeIndexSuffix); got != 0 {
			t.Fatalf("recovery fsynced %d index files that were right, want 0", got)
		}
		for tp, w := range want {
			checkLog(t, m.Log(tp), w)
			checkIndexFiles(t, base, m.Log(tp))
		}
	})
}

// limitFS refuses to open more than limit files at once with EMFILE, as
// an OS FS does at RLIMIT_NOFILE.
type limitFS struct {
	*openFilesFS
	limit int
}

func (l *limitFS) full(name string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, c := range l.open {
		n += c
	}
	if n >= l.limit {
		return &os.PathError{Op: "open", Path: name, Err: syscall.EMFILE}
	}
	return nil
}

func (l *limitFS) Create(name string) (vfs.File, error) {
	if err := l.full(name); err != nil {
		return nil, err
	}
	return l.openFilesFS.Create(name)
}

func (l *limitFS) Open(name string) (vfs.File, error) {
	if err := l.full(name); err != nil {
		return nil, err
	}
	return l.openFilesFS.Open(name)
}

func (l *limitFS) OpenReadWrite(name string) (vfs.File, error) {
	if err := l.full(name); err != nil {
		return nil, err
	}
	return l.openFilesFS.OpenReadWrite(name)
}

// TestIndexEntriesWaitOutADescriptorShortage: logs that take appends
// while the process has no descriptor to spare write their index entries
// in pendingMax steps, each with a descriptor for the moment of the write;
// with none to spare those writes wait, pending, and nothing fails: the
// appends succeed, the dir stays online, and once descriptors are free
// again the files catch up and match the entries, also after a restart.
func TestIndexEntriesWaitOutADescriptorShortage(t *testing.T) {
	forEachFS(t, func(t *testing.T, base vfs.FS, dir string) {
		const logs = 4
		c := newClock(1_700_000_000_000)
		lim := &limitFS{newOpenFilesFS(base), 1 << 20}
		m, err := OpenManager(ManagerConfig{FS: lim, Dir: dir, Now: c.Now,
			RetentionCheckInterval: time.Hour, DefaultConfig: DefaultConfig()})
		if err != nil {
			t.Fatal(err)
		}
		cfg := DefaultConfig()
		cfg.IndexIntervalBytes = 1 // an entry for every batch
		want := map[TopicPartition][]appended{}
		for p := range logs {
			tp := TopicPartition{Topic: "short", Partition: int32(p)}
			if _, err := m.Create(tp, [16]byte{1}, cfg); err != nil {
				t.Fatal(err)
			}
			want[tp] = appendN(t, m.Log(tp), 0, 10, c.nowMs())
		}
		// Every descriptor the process may have is taken.
		lim.mu.Lock()
		lim.limit = 0
		lim.mu.Unlock()
		for tp := range want {
			// NB: past pendingMax of offset entries, so a write is tried.
			want[tp] = append(want[tp], appendN(t, m.Log(tp), 10, pendingMax/offsetEntrySize+50, c.nowMs())...)
			if m.Log(tp).Offline() {
				t.Fatalf("%v offline after appends without descriptors", tp)
			}
		}
		lim.mu.Lock()
		lim.limit = 1 << 20
		lim.mu.Unlock()
		for tp, w := range want {
			want[tp] = append(w, appendN(t, m.Log(tp), len(w), 1, c.nowMs())...)
			checkLog(t, m.Log(tp), want[tp])
			checkIndexFiles(t, base, m.Log(tp))
		}
		if got := lim.count(indexSuffix) + lim.count(timeIndexSuffix); got != 0 {
			t.Fatalf("%d index files open after the writes, want none", got)
		}
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
		m = openManager(t, base, dir, c)
		defer m.Close()
		for tp, w := range want {
			checkLog(t, m.Log(tp), w)
			l := m.Log(tp)
			l.mu.RLock()
			for _, s := range l.segs {
				if n := len(readFileBytes(t, base, s.index.file.path)); n != len(s.index.entries)*offsetEntrySize {
					t.Errorf("%s after a clean close: %d bytes, want %d entries", s.index.file.path, n, len(s.index.entries))
				}
			}
			l.mu.RUnlock()
		}
	})
}

// TestOpenOutOfDescriptorsFailsAndChangesNothing: a log dir opened with
// fewer descriptors than its logs need fails with EMFILE (no panic), does
// not take an unreadable index for a bad one (nothing is scanned,
// rebuilt or cut), and opens whole once descriptors suffice.
func TestOpenOutOfDescriptorsFailsAndChangesNothing(t *testing.T) {
	forEachFS(t, func(t *testing.T, base vfs.FS, dir string) {
		const logs = 30
		c := newClock(1_700_000_000_000)
		m := openManager(t, base, dir, c)
		want := map[TopicPartition][]appended{}
		for p := range logs {
			tp := TopicPartition{Topic: "many", Partition: int32(p)}
			l, err := m.Create(tp, [16]byte{1}, DefaultConfig())
			if err != nil {
				t.Fatal(err)
			}
			want[tp] = appendN(t, l, 0, 150, c.nowMs())
		}
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
		for _, limit := range []int{5, 20, logs} {
			bad, err := OpenManager(ManagerConfig{FS: &limitFS{newOpenFilesFS(base), limit}, Dir: dir, Now: c.Now,
				RetentionCheckInterval: time.Hour, DefaultConfig: DefaultConfig()})
			if err == nil {
				bad.Close()
			}
			if !errors.Is(err, syscall.EMFILE) {
				t.Fatalf("open with %d descriptors for %d logs: %v, want EMFILE", limit, logs, err)
			}
		}
		fs := newOpenFilesFS(base)
		m = openManager(t, fs, dir, c)
		defer m.Close()
		for tp, w := range want {
			checkLog(t, m.Log(tp), w)
			checkIndexFiles(t, base, m.Log(tp))
		}
		if got := fs.synced(logSuffix) + fs.synced(indexSuffix); got != 0 {
			t.Fatalf("the open after the failed ones fsynced %d files: it recovered something", got)
		}
	})
}
