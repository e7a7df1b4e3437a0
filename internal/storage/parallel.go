package storage

import (
	"sync"
	"sync/atomic"
)

// ParallelEach calls f(0) ... f(n-1) on up to workers goroutines and
// returns when every call has. The goroutines are the caller's: none
// outlives the call. With n or workers at most 1 it calls f in turn on
// the caller's goroutine.
func ParallelEach(n, workers int, f func(i int)) {
	if n <= 1 || workers <= 1 {
		for i := range n {
			f(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				f(i)
			}
		}()
	}
	wg.Wait()
}
