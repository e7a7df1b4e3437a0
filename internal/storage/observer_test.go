package storage

import (
	"context"
	"sync"
	"testing"
	"time"

	"samsa/internal/vfs"
)

type flushRecorder struct {
	mu    sync.Mutex
	syncs []time.Duration
	waits []time.Duration
}

func (r *flushRecorder) ObserveFlush(sync, wait time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.syncs = append(r.syncs, sync)
	r.waits = append(r.waits, wait)
}

func (r *flushRecorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.syncs)
}

func TestFlushObserverSeesEveryDurableAppendAndSegmentCountGrows(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		rec := &flushRecorder{}
		m, err := OpenManager(ManagerConfig{
			FS: fs, Dir: dir, RetentionCheckInterval: time.Hour,
			DefaultConfig: DefaultConfig(), FlushObserver: rec,
		})
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		l, err := m.Create(testTP, [16]byte{1}, smallConfig())
		if err != nil {
			t.Fatal(err)
		}
		if n := l.SegmentCount(); n != 1 {
			t.Fatalf("segments %d, want 1", n)
		}
		for i := range 20 {
			res, err := l.Append(makeBatch(t, i, 4, 1000), 0, false, 1000)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if err := l.WaitDurable(ctx, res.LastOffset+1); err != nil {
				t.Fatal(err)
			}
			cancel()
		}
		if rec.count() == 0 {
			t.Fatal("no flush observed")
		}
		rec.mu.Lock()
		for i, w := range rec.waits {
			if w <= 0 || rec.syncs[i] < 0 || w < rec.syncs[i] {
				t.Errorf("flush %d: sync %v, append to durable %v", i, rec.syncs[i], w)
			}
		}
		rec.mu.Unlock()
		if n := l.SegmentCount(); n < 2 {
			t.Errorf("segments %d after 20 batches into 1 KiB segments, want more than 1", n)
		}
	})
}
