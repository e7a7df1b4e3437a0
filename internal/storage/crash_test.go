package storage

import (
	"context"
	"errors"
	"testing"

	"samsa/internal/vfs"
)

// After a power cut (MemFS.CrashClone keeps only synced data) every
// acknowledged offset reads back and no unsynced batch is half there.
func TestPowerCutKeepsAcknowledgedBatches(t *testing.T) {
	for _, ackEvery := range []int{1, 3, 7} {
		t.Run("ackEvery="+itoa(int64(ackEvery)), func(t *testing.T) {
			fs := vfs.NewMemFS()
			m := openManager(t, fs, "/data", nil)
			cfg := smallConfig()
			l, _ := m.Create(testTP, [16]byte{9}, cfg)
			var acked []appended
			var pending []appended
			for i := 0; i < 120; i++ {
				pending = append(pending, appendN(t, l, i, 1, 1000)...)
				if i%ackEvery == 0 {
					if err := l.WaitDurable(context.Background(), pending[len(pending)-1].last+1); err != nil {
						t.Fatal(err)
					}
					acked = append(acked, pending...)
					pending = nil
				}
			}
			clone := fs.CrashClone()
			m.Close()

			m2 := openManager(t, clone, "/data", nil)
			defer m2.Close()
			l2 := m2.Log(testTP)
			if l2 == nil {
				t.Fatal("log lost")
			}
			if l2.TopicID() != [16]byte{9} {
				t.Fatalf("topic id %x", l2.TopicID())
			}
			l2.SetConfig(cfg)
			if l2.LogEndOffset() < acked[len(acked)-1].last+1 {
				t.Fatalf("LogEndOffset %d below acknowledged %d", l2.LogEndOffset(), acked[len(acked)-1].last+1)
			}
			// Whatever survives beyond the acknowledged batches is whole.
			all := append(acked, pending...)
			n := 0
			for n < len(all) && all[n].last < l2.LogEndOffset() {
				n++
			}
			checkLog(t, l2, all[:n])
		})
	}
}

func TestShortWriteTakesLogDirOffline(t *testing.T) {
	inj := vfs.NewInjector()
	fs := vfs.WithErrors(vfs.NewMemFS(), inj)
	m := openManager(t, fs, "/data", nil)
	defer m.Close()
	l, _ := m.Create(testTP, [16]byte{}, smallConfig())
	want := appendN(t, l, 0, 5, 0)
	if err := l.WaitDurable(context.Background(), l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	inj.ShortWriteAfter(0, 10)
	if _, err := l.Append(makeBatch(t, 9, 2, 0), 0, false, 0); !errors.Is(err, ErrLogDirOffline) {
		t.Fatalf("Append with short write: %v", err)
	}
	if l.LogEndOffset() != want[len(want)-1].last+1 {
		t.Fatalf("LogEndOffset moved to %d", l.LogEndOffset())
	}
	if err := l.WaitDurable(context.Background(), l.LogEndOffset()+1); !errors.Is(err, ErrLogDirOffline) {
		t.Fatalf("WaitDurable: %v", err)
	}
	// An offline log serves no reads (Kafka answers KAFKA_STORAGE_ERROR
	// for every replica of a failed dir); once the disk is back, what was
	// written before reads back and the torn write is gone.
	if _, err := l.Read(0, 1<<20, 1<<62, true); !errors.Is(err, ErrLogDirOffline) {
		t.Fatalf("Read of an offline log: %v", err)
	}
	m.Close()
	inj.Reset()
	m = openManager(t, fs, "/data", nil)
	defer m.Close()
	checkLog(t, m.Log(testTP), want)
}

// A power cut right after Truncate brings back nothing at or beyond the
// truncation point: neither the removed segments nor the removed tail of
// the segment that was cut.
func TestPowerCutAfterTruncateKeepsTruncation(t *testing.T) {
	for _, tc := range []struct {
		name string
		cut  int // index of the first batch removed
	}{
		{"cut in first segment", 3},
		{"cut at second segment", -1},
		{"cut in last segment", -2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := vfs.NewMemFS()
			m := openManager(t, fs, "/data", nil)
			cfg := smallConfig()
			l, _ := m.Create(testTP, [16]byte{9}, cfg)
			want := appendN(t, l, 0, 60, 1000)
			if err := l.WaitDurable(context.Background(), l.LogEndOffset()); err != nil {
				t.Fatal(err)
			}
			if n := len(segmentFiles(t, fs, l.Dir(), logSuffix)); n < 4 {
				t.Fatalf("%d segments, want at least 4", n)
			}
			cut := tc.cut
			switch cut {
			case -1: // the first batch of the second segment
				l.mu.RLock()
				base := l.segs[1].baseOffset
				l.mu.RUnlock()
				for cut = 0; want[cut].base != base; cut++ {
				}
			case -2:
				cut = len(want) - 2
			}
			if err := l.Truncate(want[cut].base); err != nil {
				t.Fatal(err)
			}
			if got := l.LogEndOffset(); got != want[cut].base {
				t.Fatalf("LogEndOffset after Truncate = %d, want %d", got, want[cut].base)
			}
			clone := fs.CrashClone()
			crash(m)

			m2 := openManager(t, clone, "/data", nil)
			defer m2.Close()
			l2 := m2.Log(testTP)
			if l2 == nil {
				t.Fatal("log lost")
			}
			l2.SetConfig(cfg)
			if got := l2.LogEndOffset(); got != want[cut].base {
				t.Fatalf("LogEndOffset after power cut = %d, want %d (the truncation point)", got, want[cut].base)
			}
			checkLog(t, l2, want[:cut])
			// The log continues at the truncation point.
			more := appendN(t, l2, 100, 3, 2000)
			if more[0].base != want[cut].base {
				t.Fatalf("next append at %d, want %d", more[0].base, want[cut].base)
			}
			checkLog(t, l2, append(append([]appended(nil), want[:cut]...), more...))
		})
	}
}

// A power cut right after TruncateFullyAndStartAt leaves the empty log at
// its new start: none of the old segments come back.
func TestPowerCutAfterTruncateFullyKeepsEmptyLog(t *testing.T) {
	fs := vfs.NewMemFS()
	m := openManager(t, fs, "/data", nil)
	cfg := smallConfig()
	l, _ := m.Create(testTP, [16]byte{9}, cfg)
	// No leader epoch: the epoch checkpoint is not rewritten (which would
	// fsync the directory too).
	for i := 0; i < 40; i++ {
		if _, err := l.Append(makeBatch(t, i, 2, 1000), -1, false, 1000); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.WaitDurable(context.Background(), l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	const start = 500
	if err := l.TruncateFullyAndStartAt(start); err != nil {
		t.Fatal(err)
	}
	clone := fs.CrashClone()
	crash(m)

	m2 := openManager(t, clone, "/data", nil)
	defer m2.Close()
	l2 := m2.Log(testTP)
	if l2 == nil {
		t.Fatal("log lost")
	}
	l2.SetConfig(cfg)
	if lso, leo := l2.LogStartOffset(), l2.LogEndOffset(); lso != start || leo != start {
		t.Fatalf("log %d..%d after power cut, want %d..%d", lso, leo, start, start)
	}
	if names := segmentFiles(t, clone, l2.Dir(), logSuffix); len(names) != 1 {
		t.Fatalf("segments after power cut: %v", names)
	}
}
