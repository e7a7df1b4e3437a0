package chaos

import (
	"sync"
	"time"
)

// observed is a partition state as polled from etcd at a time.
type observed struct {
	at time.Time
	partitionState
}

// stateHistory polls the committed state of every partition of a topic
// from etcd every 20ms in its own goroutine and keeps each change. Start
// it with watchStates; stop it with stop (idempotent). Its methods are
// safe for concurrent use; mu guards changes.
type stateHistory struct {
	c          *testCluster
	topic      string
	partitions int32
	quit       chan struct{}
	done       chan struct{}
	once       sync.Once

	mu      sync.Mutex
	changes map[int32][]observed
}

func watchStates(c *testCluster, topic string, partitions int32) *stateHistory {
	h := &stateHistory{c: c, topic: topic, partitions: partitions,
		quit: make(chan struct{}), done: make(chan struct{}), changes: make(map[int32][]observed)}
	go h.run()
	c.t.Cleanup(h.stop)
	return h
}

func (h *stateHistory) run() {
	defer close(h.done)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		for p := range h.partitions {
			st, err := h.c.state(h.topic, p)
			if err != nil {
				continue
			}
			now := time.Now()
			h.mu.Lock()
			cs := h.changes[p]
			if len(cs) == 0 || cs[len(cs)-1].PartitionEpoch != st.PartitionEpoch {
				h.changes[p] = append(cs, observed{now, st})
			}
			h.mu.Unlock()
		}
		select {
		case <-h.quit:
			return
		case <-tick.C:
		}
	}
}

func (h *stateHistory) stop() {
	h.once.Do(func() { close(h.quit) })
	<-h.done
}

// firstAfter returns the first state of partition p observed at or after
// from that satisfies f.
func (h *stateHistory) firstAfter(p int32, from time.Time, f func(partitionState) bool) (observed, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, o := range h.changes[p] {
		if !o.at.Before(from) && f(o.partitionState) {
			return o, true
		}
	}
	return observed{}, false
}

// current returns the last state of partition p observed.
func (h *stateHistory) current(p int32) (observed, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	cs := h.changes[p]
	if len(cs) == 0 {
		return observed{}, false
	}
	return cs[len(cs)-1], true
}
