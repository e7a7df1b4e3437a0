package storage

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"samsa/internal/record"
	"samsa/internal/vfs"
)

func TestGroupCommitSharesFsyncs(t *testing.T) {
	forEachFS(t, func(t *testing.T, base vfs.FS, dir string) {
		fs := &countingFS{FS: base, syncDelay: time.Millisecond}
		m := openManager(t, fs, dir, nil)
		defer m.Close()
		l, err := m.Create(testTP, [16]byte{}, DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		fs.logSyncs.Store(0)
		const workers, per = 16, 40
		var wg sync.WaitGroup
		errs := make(chan error, workers)
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < per; i++ {
					res, err := l.Append(makeBatch(t, w, 1, 0), 0, false, 0)
					if err != nil {
						errs <- err
						return
					}
					if err := l.WaitDurable(context.Background(), res.LastOffset+1); err != nil {
						errs <- err
						return
					}
					if d := l.DurableOffset(); d <= res.LastOffset {
						errs <- errors.New("DurableOffset behind an acknowledged append")
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		n := fs.logSyncs.Load()
		t.Logf("%d appends, %d fsyncs", workers*per, n)
		if n == 0 || n >= workers*per/2 {
			t.Fatalf("%d fsyncs for %d appends: want far fewer", n, workers*per)
		}
		if l.DurableOffset() != l.LogEndOffset() {
			t.Fatalf("DurableOffset %d, LogEndOffset %d", l.DurableOffset(), l.LogEndOffset())
		}
	})
}

func TestFailedSyncTakesLogDirOffline(t *testing.T) {
	forEachFS(t, func(t *testing.T, base vfs.FS, dir string) {
		fs := &countingFS{FS: base}
		m := openManager(t, fs, dir, nil)
		l, _ := m.Create(testTP, [16]byte{}, DefaultConfig())
		other, _ := m.Create(TopicPartition{"other", 0}, [16]byte{}, DefaultConfig())
		res, err := l.Append(makeBatch(t, 1, 3, 0), 0, false, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.WaitDurable(context.Background(), res.LastOffset+1); err != nil {
			t.Fatal(err)
		}
		fs.failSync.Store(true)
		res, err = l.Append(makeBatch(t, 2, 3, 0), 0, false, 0)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := l.WaitDurable(ctx, res.LastOffset+1); !errors.Is(err, ErrLogDirOffline) {
			t.Fatalf("WaitDurable after failed sync: %v", err)
		}
		// Never retried and acknowledged: a later good sync changes nothing.
		fs.failSync.Store(false)
		if _, err := l.Append(makeBatch(t, 3, 1, 0), 0, false, 0); !errors.Is(err, ErrLogDirOffline) {
			t.Fatalf("Append after failed sync: %v", err)
		}
		if _, err := other.Append(makeBatch(t, 3, 1, 0), 0, false, 0); !errors.Is(err, ErrLogDirOffline) {
			t.Fatalf("Append to another log of the dir: %v", err)
		}
		if err := l.WaitDurable(ctx, res.LastOffset+1); !errors.Is(err, ErrLogDirOffline) {
			t.Fatalf("second WaitDurable: %v", err)
		}
		if d := l.DurableOffset(); d > res.BaseOffset {
			t.Fatalf("DurableOffset %d covers the unsynced batch at %d", d, res.BaseOffset)
		}
		m.Close()
		if fileExists(fs, dir+"/"+cleanShutdownFile) {
			t.Fatal("clean shutdown marker written for an offline dir")
		}
	})
}

func TestPageCacheModeIsDurableAtOnce(t *testing.T) {
	forEachFS(t, func(t *testing.T, base vfs.FS, dir string) {
		fs := &countingFS{FS: base}
		m := openManager(t, fs, dir, nil)
		defer m.Close()
		cfg := DefaultConfig()
		cfg.FlushMessages = 10
		l, _ := m.Create(testTP, [16]byte{}, cfg)
		fs.logSyncs.Store(0)
		for i := 0; i < 9; i++ {
			res, err := l.Append(makeBatch(t, i, 1, 0), 0, false, 0)
			if err != nil {
				t.Fatal(err)
			}
			if l.DurableOffset() != res.LastOffset+1 {
				t.Fatalf("DurableOffset %d, want %d", l.DurableOffset(), res.LastOffset+1)
			}
			if err := l.WaitDurable(context.Background(), res.LastOffset+1); err != nil {
				t.Fatal(err)
			}
		}
		if n := fs.logSyncs.Load(); n != 0 {
			t.Fatalf("%d syncs before flush.messages", n)
		}
		l.Append(makeBatch(t, 9, 1, 0), 0, false, 0)
		waitFor(t, 5*time.Second, "flush after flush.messages", func() bool { return fs.logSyncs.Load() == 1 })
	})
}

func TestChangedFiresOnAppend(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		m := openManager(t, fs, dir, nil)
		defer m.Close()
		l, _ := m.Create(testTP, [16]byte{}, DefaultConfig())
		ch := l.Changed()
		select {
		case <-ch:
			t.Fatal("Changed closed before any change")
		default:
		}
		l.Append(makeBatch(t, 1, 1, 0), 0, false, 0)
		select {
		case <-ch:
		case <-time.After(5 * time.Second):
			t.Fatal("Changed not closed by Append")
		}
	})
}

func TestWaitDurableHonoursContextAndClose(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		m := openManager(t, fs, dir, nil)
		l, _ := m.Create(testTP, [16]byte{}, DefaultConfig())
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := l.WaitDurable(ctx, 100); !errors.Is(err, context.Canceled) {
			t.Fatalf("WaitDurable with cancelled ctx: %v", err)
		}
		done := make(chan error, 1)
		go func() { done <- l.WaitDurable(context.Background(), 100) }()
		m.Close()
		select {
		case err := <-done:
			if !errors.Is(err, ErrClosed) {
				t.Fatalf("WaitDurable after Close: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("WaitDurable not woken by Close")
		}
	})
}

// TestHoldAckWhileFlusherIsBehind checks the back-pressure bounds on
// acks=1: a durable log whose unsynced appends are older than 25 ms or
// larger than 1 MiB asks for the acknowledgement to be held, a log the
// flusher has caught up with does not, and Backlog reports what is
// unsynced and for how long.
func TestHoldAckWhileFlusherIsBehind(t *testing.T) {
	forEachFS(t, func(t *testing.T, base vfs.FS, dir string) {
		fs := &countingFS{FS: base}
		clk := newClock(1_700_000_000_000)
		m := openManager(t, fs, dir, clk)
		defer m.Close()
		l, err := m.Create(testTP, [16]byte{}, DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		if bytes, age := l.Backlog(); bytes != 0 || age != 0 || l.HoldAck() {
			t.Fatalf("empty log: backlog %d bytes, %v; HoldAck %v", bytes, age, l.HoldAck())
		}

		fs.syncMu.Lock() // the device stops answering syncs
		b := makeBatch(t, 0, 1, 0)
		size := int64(len(b))
		res, err := l.Append(b, 0, false, 0)
		if err != nil {
			t.Fatal(err)
		}
		if l.HoldAck() {
			t.Fatal("HoldAck for a fresh small backlog")
		}
		clk.advance(30)
		if bytes, age := l.Backlog(); bytes != size || age != 30*time.Millisecond {
			t.Fatalf("backlog %d bytes, %v; want %d, 30ms", bytes, age, size)
		}
		if !l.HoldAck() {
			t.Fatal("no HoldAck with an unsynced append 30 ms old")
		}
		if bytes, age := m.Backlog(); bytes != size || age != 30*time.Millisecond {
			t.Fatalf("manager backlog %d bytes, %v; want %d, 30ms", bytes, age, size)
		}
		fs.syncMu.Unlock()
		if err := l.WaitDurable(context.Background(), res.LastOffset+1); err != nil {
			t.Fatal(err)
		}
		if bytes, age := l.Backlog(); bytes != 0 || age != 0 || l.HoldAck() {
			t.Fatalf("after the flush: backlog %d bytes, %v; HoldAck %v", bytes, age, l.HoldAck())
		}

		fs.syncMu.Lock()
		big := makeBatch(t, 1, 300, 0) // makeBatch values are small: append until over 1 MiB
		var appended int64
		for appended <= 1<<20 {
			if _, err := l.Append(append(record.Batch(nil), big...), 0, false, 0); err != nil {
				t.Fatal(err)
			}
			appended += int64(len(big))
		}
		if !l.HoldAck() {
			t.Fatalf("no HoldAck with %d bytes unsynced", appended)
		}
		fs.syncMu.Unlock()
		if got := m.HeldAcks(); got != 2 {
			t.Fatalf("HeldAcks %d, want 2", got)
		}
	})
}
