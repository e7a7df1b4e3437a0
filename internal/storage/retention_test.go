package storage

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"samsa/internal/record"
	"samsa/internal/vfs"
)

// batchSize is the size of makeBatch(t, 3, 2, ts).
const batchSize = 119

func TestRollRules(t *testing.T) {
	tests := []struct {
		name     string
		cfg      func(c *Config)
		advance  int64 // ms added to the clock (and batch timestamps) per append
		appends  int
		wantSegs int
	}{
		{"size", func(c *Config) { c.SegmentBytes = 3*batchSize + 10 }, 0, 12, 4},
		{"time", func(c *Config) { c.SegmentMs = 1000 }, 400, 9, 3},
		{"indexFull", func(c *Config) { c.IndexIntervalBytes = 0; c.SegmentIndexBytes = 3 * 12 }, 0, 12, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
				c := newClock(1_000_000)
				m := openManager(t, fs, dir, c)
				defer m.Close()
				cfg := DefaultConfig()
				tc.cfg(&cfg)
				l, err := m.Create(testTP, [16]byte{}, cfg)
				if err != nil {
					t.Fatal(err)
				}
				var want []appended
				for i := 0; i < tc.appends; i++ {
					b := makeBatch(t, 3, 2, c.nowMs())
					if len(b) != batchSize {
						t.Fatalf("batch size %d, want %d", len(b), batchSize)
					}
					if _, err := l.Append(b, 1, false, c.nowMs()); err != nil {
						t.Fatal(err)
					}
					want = append(want, appended{base: b.BaseOffset(), last: b.LastOffset(), bytes: append([]byte(nil), b...)})
					c.advance(tc.advance)
				}
				if got := len(segmentFiles(t, fs, l.Dir(), ".log")); got != tc.wantSegs {
					t.Fatalf("%d segments, want %d", got, tc.wantSegs)
				}
				checkLog(t, l, want)
			})
		})
	}
}

func TestOversizedBatchGoesIntoEmptySegment(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		m := openManager(t, fs, dir, nil)
		defer m.Close()
		cfg := DefaultConfig()
		cfg.SegmentBytes = 100
		l, _ := m.Create(testTP, [16]byte{}, cfg)
		want := appendN(t, l, 0, 5, 0)
		if got := len(segmentFiles(t, fs, l.Dir(), ".log")); got != 5 {
			t.Fatalf("%d segments, want one per batch", got)
		}
		checkLog(t, l, want)
	})
}

func TestRetentionMovesLogStartOffset(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		t.Run("time", func(t *testing.T) {
			c := newClock(1_000_000)
			m := openManager(t, fs, dir+"/time", c)
			defer m.Close()
			cfg := smallConfig()
			cfg.RetentionMs = 5000
			l, _ := m.Create(testTP, [16]byte{}, cfg)
			old := appendN(t, l, 0, 40, c.nowMs())
			c.advance(10_000)
			recent := appendN(t, l, 40, 40, c.nowMs())
			// A read taken before retention stays readable after it.
			before, err := l.Read(0, 1<<40, 1<<62, false)
			if err != nil {
				t.Fatal(err)
			}
			m.RunRetention()
			lso := l.LogStartOffset()
			if lso <= old[0].base || lso > recent[0].base {
				t.Fatalf("LogStartOffset %d, want in (0, %d]", lso, recent[0].base)
			}
			got, err := before.AppendTo(nil)
			if err != nil || !bytes.Equal(got, concat(append(old, recent...))) {
				t.Fatalf("read before retention: %d bytes, err %v", len(got), err)
			}
			// Every recent batch remains.
			var keep []appended
			for _, b := range append(old, recent...) {
				if b.base >= lso {
					keep = append(keep, b)
				}
			}
			checkLog(t, l, keep)
			if _, err := l.Read(lso-1, 100, 1<<62, true); err == nil {
				t.Fatal("read below LogStartOffset succeeded")
			}
			// The deleted files are renamed, not yet removed.
			if n := len(segmentFiles(t, fs, l.Dir(), ".deleted")); n == 0 {
				t.Fatal("no .deleted files pending")
			}
		})
		t.Run("bytes", func(t *testing.T) {
			m := openManager(t, fs, dir+"/bytes", nil)
			defer m.Close()
			cfg := smallConfig()
			cfg.RetentionBytes = 3000
			l, _ := m.Create(testTP, [16]byte{}, cfg)
			appendN(t, l, 0, 100, 1_700_000_000_000)
			m.RunRetention()
			if s := l.Size(); s > 3000+cfg.SegmentBytes || s < 3000-cfg.SegmentBytes {
				t.Fatalf("Size %d after retention.bytes 3000", s)
			}
			if l.LogStartOffset() == 0 {
				t.Fatal("LogStartOffset did not move")
			}
			if _, err := l.Read(l.LogStartOffset(), 100, 1<<62, true); err != nil {
				t.Fatal(err)
			}
		})
	})
}

func TestDeleteRecordsBefore(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		m := openManager(t, fs, dir, nil)
		l, _ := m.Create(testTP, [16]byte{}, smallConfig())
		want := appendN(t, l, 0, 60, 0)
		target := want[30].base + 1 // inside a batch
		segsBefore := len(segmentFiles(t, fs, l.Dir(), ".log"))
		lso, err := l.DeleteRecordsBefore(target)
		if err != nil || lso != target {
			t.Fatalf("DeleteRecordsBefore = %d, %v", lso, err)
		}
		if got := len(segmentFiles(t, fs, l.Dir(), ".log")); got >= segsBefore {
			t.Fatalf("segments %d -> %d, want fewer", segsBefore, got)
		}
		// The batch holding target is still returned whole.
		if got := readBytes(t, l, target, 1, 1<<62, true); !bytes.Equal(got, want[30].bytes) {
			t.Fatalf("read at new log start: %d bytes", len(got))
		}
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
		// The log start offset survives a restart via the checkpoint.
		m = openManager(t, fs, dir, nil)
		defer m.Close()
		if got := m.Log(testTP).LogStartOffset(); got != target {
			t.Fatalf("LogStartOffset after reopen = %d, want %d", got, target)
		}
	})
}

func TestTruncate(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		m := openManager(t, fs, dir, nil)
		defer m.Close()
		l, _ := m.Create(testTP, [16]byte{}, smallConfig())
		want := appendN(t, l, 0, 80, 0)
		for _, cut := range []int{70, 41, 12} {
			if err := l.Truncate(want[cut].base); err != nil {
				t.Fatal(err)
			}
			checkLog(t, l, want[:cut])
			if _, err := l.Read(want[cut].base+1, 10, 1<<62, true); err == nil {
				t.Fatal("read past truncation succeeded")
			}
		}
		// Appends continue at the new end.
		more := appendN(t, l, 200, 30, 0)
		if more[0].base != want[12].base {
			t.Fatalf("append after truncate at %d, want %d", more[0].base, want[12].base)
		}
		checkLog(t, l, append(append([]appended(nil), want[:12]...), more...))
	})
}

// Reads racing Truncate never report corruption: a read that meets a file
// cut under it starts over and sees the log as it is after the cut.
func TestReadRacingTruncateIsNotCorrupt(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		m := openManager(t, fs, dir, nil)
		defer m.Close()
		cfg := smallConfig()
		cfg.FileDeleteDelayMs = 0 // deleted segments close at once
		l, _ := m.Create(testTP, [16]byte{}, cfg)
		appendN(t, l, 0, 30, 0)

		stop := make(chan struct{})
		errs := make(chan error, 4)
		var reads atomic.Int64
		var wg sync.WaitGroup
		for r := 0; r < 4; r++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := int64(r); ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					off := i % (l.LogEndOffset() + 1)
					if _, err := l.Read(off, 1<<20, 1<<62, true); err != nil && !errors.Is(err, ErrOffsetOutOfRange) {
						errs <- fmt.Errorf("Read(%d): %w", off, err)
						return
					}
					if i%3 == 0 {
						if _, _, _, err := l.OffsetForTimestamp(i % 400); err != nil {
							errs <- fmt.Errorf("OffsetForTimestamp: %w", err)
							return
						}
					}
					reads.Add(1)
				}
			}()
		}
		for round := 0; round < 150; round++ {
			leo := l.LogEndOffset()
			if err := l.Truncate(leo/2 + int64(round%5)); err != nil {
				t.Fatal(err)
			}
			appendN(t, l, round, 6, int64(round))
		}
		close(stop)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("%v (corrupt: %v)", err, record.IsCorrupt(err))
		}
		if reads.Load() == 0 {
			t.Fatal("no reads ran")
		}
	})
}

// epochWritesFS counts rewrites of leader epoch checkpoints.
type epochWritesFS struct {
	vfs.FS
	writes atomic.Int64
}

func (e *epochWritesFS) Create(name string) (vfs.File, error) {
	if strings.HasSuffix(name, leaderEpochFile+".tmp") {
		e.writes.Add(1)
	}
	return e.FS.Create(name)
}

// DeleteRecordsBefore that deletes segments rewrites the epoch checkpoint
// once, with the first epoch moved to the new log start.
func TestDeleteRecordsRewritesEpochCheckpointOnce(t *testing.T) {
	fs := &epochWritesFS{FS: vfs.NewMemFS()}
	m := openManager(t, fs, "/data", nil)
	defer m.Close()
	l, _ := m.Create(testTP, [16]byte{}, smallConfig())
	var want []appended
	for i := 0; i < 40; i++ {
		b := makeBatch(t, i, 2, 0)
		res, err := l.Append(b, int32(i/4), false, 0)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, appended{base: res.BaseOffset, last: res.LastOffset, bytes: append([]byte(nil), b...)})
	}
	segsBefore := len(segmentFiles(t, fs, l.Dir(), logSuffix))
	cut := want[25].base + 1 // inside batch 25, epoch 6
	before := fs.writes.Load()
	lso, err := l.DeleteRecordsBefore(cut)
	if err != nil || lso != cut {
		t.Fatalf("DeleteRecordsBefore(%d) = %d, %v", cut, lso, err)
	}
	if n := fs.writes.Load() - before; n != 1 {
		t.Fatalf("%d epoch checkpoint writes, want 1", n)
	}
	if segs := len(segmentFiles(t, fs, l.Dir(), logSuffix)); segs >= segsBefore {
		t.Fatalf("%d segments after DeleteRecordsBefore, had %d", segs, segsBefore)
	}
	if e := l.EpochEntries(); len(e) == 0 || e[0] != (EpochEntry{Epoch: 6, StartOffset: cut}) {
		t.Fatalf("epoch cache %v, want first {6 %d}", e, cut)
	}
	// Nothing to change: no write.
	before = fs.writes.Load()
	if _, err := l.DeleteRecordsBefore(cut); err != nil {
		t.Fatal(err)
	}
	if n := fs.writes.Load() - before; n != 0 {
		t.Fatalf("%d epoch checkpoint writes for a no-op, want 0", n)
	}
}
