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
	// Reads of what was written before still work.
	checkLog(t, l, want)
}
