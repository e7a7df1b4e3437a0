package server

import (
	"sync"
	"testing"
	"time"
)

// recordingObserver keeps what the server observed.
type recordingObserver struct {
	mu     sync.Mutex
	times  []RequestTimes
	keys   []int16
	errors map[int16]int
}

func (o *recordingObserver) ObserveRequest(key int16, t RequestTimes) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.keys = append(o.keys, key)
	o.times = append(o.times, t)
}

func (o *recordingObserver) ObserveError(key, code int16) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.errors == nil {
		o.errors = map[int16]int{}
	}
	o.errors[code]++
}

func (o *recordingObserver) snapshot() ([]int16, []RequestTimes, map[int16]int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	errs := map[int16]int{}
	for k, v := range o.errors {
		errs[k] = v
	}
	return append([]int16(nil), o.keys...), append([]RequestTimes(nil), o.times...), errs
}

func TestObserverGetsRemoteTimeAndErrorCodes(t *testing.T) {
	obs := &recordingObserver{}
	_, addr := start(t, Config{Observer: obs}, newTestHandler())
	c := dial(t, addr)
	const v = 12
	c.write(encode(1, metadata("wait-50"), v))
	c.readMetadata(v)
	c.write(encode(2, metadata("err-3"), v))
	c.readMetadata(v)
	waitFor(t, 5*time.Second, "two observations", func() bool {
		keys, _, _ := obs.snapshot()
		return len(keys) == 2
	})
	keys, times, errs := obs.snapshot()
	if keys[0] != 3 || keys[1] != 3 {
		t.Fatalf("keys %v, want Metadata (3) twice", keys)
	}
	w := times[0]
	if w.Remote < 50*time.Millisecond {
		t.Errorf("remote %v, want at least the 50ms Wait", w.Remote)
	}
	if sum := w.Queue + w.Local + w.ResponseQueue + w.Remote + w.Send; sum > w.Total || w.Total-sum > 5*time.Millisecond {
		t.Errorf("phases %+v do not add up to total %v", w, w.Total)
	}
	for _, d := range []time.Duration{w.Queue, w.Local, w.ResponseQueue, w.Send} {
		if d < 0 {
			t.Errorf("negative phase in %+v", w)
		}
	}
	if times[1].Remote != 0 {
		t.Errorf("remote %v for a reply without Wait", times[1].Remote)
	}
	if errs[3] != 1 || len(errs) != 1 {
		t.Errorf("errors %v, want code 3 once", errs)
	}
}

func TestStatsCountsConnectionsByListener(t *testing.T) {
	s, addr := start(t, Config{}, newTestHandler())
	dial(t, addr)
	waitFor(t, 5*time.Second, "one connection", func() bool { return s.Stats().ConnectionsByListener[""] == 1 })
}
