package storage

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestParallelEachCallsEveryIndexOnceAndAtOnce: the helper of the
// recovery, the close and the broker's reconciler calls f once per index,
// several at a time, and returns only after all of them: a reconcile that
// opened 10,000 partitions one after the other would wait for each one's
// fsyncs in turn.
func TestParallelEachCallsEveryIndexOnceAndAtOnce(t *testing.T) {
	t.Parallel()
	const workers = 8
	const n = 1000
	var calls [n]atomic.Int32
	var inFlight, maxSeen atomic.Int32
	var mu sync.Mutex
	ParallelEach(n, workers, func(i int) {
		cur := inFlight.Add(1)
		mu.Lock()
		if cur > maxSeen.Load() {
			maxSeen.Store(cur)
		}
		mu.Unlock()
		if i < 2*workers {
			time.Sleep(5 * time.Millisecond) // NB: let the workers overlap
		}
		calls[i].Add(1)
		inFlight.Add(-1)
	})
	for i := range calls {
		if got := calls[i].Load(); got != 1 {
			t.Fatalf("index %d called %d times, want 1", i, got)
		}
	}
	if inFlight.Load() != 0 {
		t.Fatalf("ParallelEach returned with %d calls running", inFlight.Load())
	}
	if got := maxSeen.Load(); got < 2 || got > workers {
		t.Fatalf("%d calls ran at once, want 2 to %d", got, workers)
	}
}
