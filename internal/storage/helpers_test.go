package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"samsa/internal/record"
	"samsa/internal/vfs"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fsCase is a file system every storage test runs on.
type fsCase struct {
	name string
	new  func(t testing.TB) (vfs.FS, string)
}

var fsCases = []fsCase{
	{"os", func(t testing.TB) (vfs.FS, string) { return vfs.Default, t.TempDir() }},
	{"mem", func(t testing.TB) (vfs.FS, string) { return vfs.NewMemFS(), "/data" }},
	// The OS with unsynced data in memory (power-loss tests across
	// processes run brokers on it).
	{"volatile", func(t testing.TB) (vfs.FS, string) { return vfs.NewVolatile(), t.TempDir() }},
}

// forEachFS runs f once per file system.
func forEachFS(t *testing.T, f func(t *testing.T, fs vfs.FS, dir string)) {
	t.Helper()
	for _, c := range fsCases {
		t.Run("fs="+c.name, func(t *testing.T) {
			fs, dir := c.new(t)
			f(t, fs, dir)
		})
	}
}

// clock is an injectable time source.
type clock struct{ ms atomic.Int64 }

func newClock(ms int64) *clock {
	c := &clock{}
	c.ms.Store(ms)
	return c
}
func (c *clock) Now() time.Time  { return time.UnixMilli(c.ms.Load()) }
func (c *clock) advance(d int64) { c.ms.Add(d) }
func (c *clock) nowMs() int64    { return c.ms.Load() }

var testTP = TopicPartition{Topic: "orders", Partition: 3}

// openManager opens a Manager with no background retention (tests call
// RunRetention).
func openManager(t testing.TB, fs vfs.FS, dir string, c *clock) *Manager {
	t.Helper()
	if c == nil {
		c = newClock(1_700_000_000_000)
	}
	m, err := OpenManager(ManagerConfig{
		FS: fs, Dir: dir, Now: c.Now,
		RetentionCheckInterval: time.Hour,
		DefaultConfig:          DefaultConfig(),
	})
	if err != nil {
		t.Fatalf("OpenManager: %v", err)
	}
	return m
}

// crash stops m's goroutines and closes its files without flushing,
// checkpointing or writing the clean-shutdown marker, as a kill -9 would
// leave the directory (for data that reached the OS).
func crash(m *Manager) {
	m.closeOnce.Do(func() {
		m.mu.Lock()
		close(m.stop)
		m.mu.Unlock()
		m.wg.Wait()
		m.cancelPendingDeletes("")
		for _, l := range m.Logs() {
			l.markClosed()
			l.closeFiles()
		}
		m.closeErr = ErrClosed
	})
}

// smallConfig makes segments and index intervals tiny.
func smallConfig() Config {
	c := DefaultConfig()
	c.SegmentBytes = 1024
	c.IndexIntervalBytes = 128
	c.FileDeleteDelayMs = 60000
	return c
}

// makeBatch builds a batch of n records with timestamps ts, ts+1, ...
// whose values name seq.
func makeBatch(t testing.TB, seq, n int, ts int64) record.Batch {
	t.Helper()
	bb := record.NewBuilder(record.CodecNone, ts)
	for i := 0; i < n; i++ {
		bb.Add(record.Record{
			TimestampDelta: int64(i),
			Key:            []byte(fmt.Sprintf("k%d", seq)),
			Value:          []byte(fmt.Sprintf("batch %d record %d %s", seq, i, bytes.Repeat([]byte{'x'}, seq%37))),
		})
	}
	b, err := bb.Build()
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return b
}

// appended remembers what was appended, as it is on disk.
type appended struct {
	base, last int64
	ts         int64 // max timestamp
	bytes      []byte
}

// appendN appends count batches of 1..4 records and returns them.
func appendN(t testing.TB, l *Log, from, count int, ts int64) []appended {
	t.Helper()
	var out []appended
	for i := from; i < from+count; i++ {
		b := makeBatch(t, i, 1+i%4, ts+int64(i)*10)
		res, err := l.Append(b, 7, false, ts)
		if err != nil {
			t.Fatalf("Append %d: %v", i, err)
		}
		if res.BaseOffset != b.BaseOffset() || res.LastOffset != b.LastOffset() {
			t.Fatalf("Append %d: result %+v, batch %d..%d", i, res, b.BaseOffset(), b.LastOffset())
		}
		out = append(out, appended{base: res.BaseOffset, last: res.LastOffset, ts: b.MaxTimestamp(), bytes: append([]byte(nil), b...)})
	}
	return out
}

// readAll reads from offset to the end in one call and returns the bytes.
func readBytes(t testing.TB, l *Log, offset, maxBytes, maxOffset int64, minOne bool) []byte {
	t.Helper()
	res, err := l.Read(offset, maxBytes, maxOffset, minOne)
	if err != nil {
		t.Fatalf("Read(%d): %v", offset, err)
	}
	buf, err := res.AppendTo(nil)
	if err != nil {
		t.Fatalf("AppendTo: %v", err)
	}
	if int64(len(buf)) != res.Size {
		t.Fatalf("Read(%d): Size %d, bytes %d", offset, res.Size, len(buf))
	}
	return buf
}

// concat joins the bytes of batches.
func concat(bs []appended) []byte {
	var out []byte
	for _, b := range bs {
		out = append(out, b.bytes...)
	}
	return out
}

// checkLog asserts every batch in want reads back exactly at every one of
// its offsets, and that the log ends after the last.
func checkLog(t testing.TB, l *Log, want []appended) {
	t.Helper()
	if len(want) == 0 {
		return
	}
	if got, exp := l.LogEndOffset(), want[len(want)-1].last+1; got != exp {
		t.Fatalf("LogEndOffset = %d, want %d", got, exp)
	}
	for i, b := range want {
		for o := b.base; o <= b.last; o++ {
			got := readBytes(t, l, o, 1, 1<<62, true)
			if !bytes.Equal(got, b.bytes) {
				t.Fatalf("Read(%d) minOneBatch: got %d bytes, want batch %d (%d bytes)", o, len(got), i, len(b.bytes))
			}
		}
	}
	all := readBytes(t, l, want[0].base, 1<<40, 1<<62, false)
	if !bytes.Equal(all, concat(want)) {
		t.Fatalf("Read all: got %d bytes, want %d", len(all), len(concat(want)))
	}
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// segmentFiles lists the names in dir with suffix.
func segmentFiles(t testing.TB, fs vfs.FS, dir, suffix string) []string {
	t.Helper()
	names, err := fs.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range names {
		if filepath.Ext(n) == suffix {
			out = append(out, n)
		}
	}
	return out
}

// countingFS counts syncs of .log files and can fail the next ones.
type countingFS struct {
	vfs.FS
	logSyncs  atomic.Int64
	failSync  atomic.Bool
	syncDelay time.Duration // emulated device latency of a .log sync
	// syncMu, while a test holds it, stalls every .log sync (a device
	// that has stopped answering).
	syncMu sync.Mutex
}

type countingFile struct {
	vfs.File
	fs    *countingFS
	isLog bool
}

var errInjected = errors.New("injected sync failure")

func (f *countingFile) Sync() error {
	if f.fs.failSync.Load() {
		return errInjected
	}
	if f.isLog {
		f.fs.logSyncs.Add(1)
		f.fs.syncMu.Lock()
		f.fs.syncMu.Unlock() //nolint:staticcheck // waits while a test stalls syncs
		time.Sleep(f.fs.syncDelay)
	}
	return f.File.Sync()
}

func (c *countingFS) wrap(f vfs.File, name string, err error) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	return &countingFile{File: f, fs: c, isLog: filepath.Ext(name) == logSuffix}, nil
}
func (c *countingFS) Create(name string) (vfs.File, error) {
	f, err := c.FS.Create(name)
	return c.wrap(f, name, err)
}
func (c *countingFS) OpenReadWrite(name string) (vfs.File, error) {
	f, err := c.FS.OpenReadWrite(name)
	return c.wrap(f, name, err)
}

// readFileBytes and writeFileBytes edit files behind the storage's back.
func readFileBytes(t testing.TB, fs vfs.FS, path string) []byte {
	t.Helper()
	b, err := readFile(fs, path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeFileBytes(t testing.TB, fs vfs.FS, path string, data []byte) {
	t.Helper()
	f, err := fs.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

var (
	_ = context.Background
	_ = os.IsNotExist
	_ sync.Mutex
)
