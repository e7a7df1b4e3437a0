package replica

import (
	"container/heap"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// WaitKind is what a delayed operation waits for on one partition.
type WaitKind uint8

// The offsets of a partition a delayed operation can wait for. Each is
// published by the events that move it.
const (
	// WaitDurable: the log's durable offset (the flusher's fsync
	// completion, or an append in page-cache mode).
	WaitDurable WaitKind = iota
	// WaitHighWatermark: the high watermark (fsync completion on the
	// leader, a follower's fetch position, an ISR change, the leader's
	// high watermark fetched by a follower).
	WaitHighWatermark
	// WaitLastStable: the last stable offset (a high watermark move, or
	// the end of the oldest open transaction).
	WaitLastStable
	// WaitLogEnd: the log end offset (an append).
	WaitLogEnd
	numWaitKinds
)

// Outcome is how a delayed operation completed.
type Outcome uint8

const (
	// Satisfied: one of its watches reached its offset.
	Satisfied Outcome = iota + 1
	// Changed: a partition it watches changed role, failed or went away;
	// the waiter re-checks and may wait again.
	Changed
	// Expired: its deadline passed.
	Expired
	// Cancelled: its waiter gave up (Cancel).
	Cancelled
)

// watchSet holds the watches on one offset of one partition (a key of the
// delay queue): a min-heap on the offset each awaits. value reads the
// offset; it must be a plain atomic read, as it runs under mu.
//
// The fast path of publish reads n without mu. This is safe because a
// register increments n before it reads value and a publisher stores the
// new offset before it reads n (sequentially consistent atomics): either
// the publisher sees the watch, or the register sees the new offset.
type watchSet struct {
	value func() int64
	n     atomic.Int64 // watches in heap, for the lock-free fast path

	mu   sync.Mutex
	heap watchHeap // guarded by mu
}

func newWatchSet(value func() int64) *watchSet { return &watchSet{value: value} }

// watch is one (key, offset) an operation waits for. idx is its position
// in set.heap, -1 when not in it; guarded by set.mu.
type watch struct {
	set *watchSet
	op  *DelayedOp
	at  int64 // guarded by set.mu once registered
	idx int
	i   int // its index in op.watches
}

// WatchSpec names one offset a delayed operation waits for: it is
// satisfied once the partition's offset of that kind is at least At.
type WatchSpec struct {
	P    *Partition
	Kind WaitKind
	At   int64

	news *followerNews // a FollowerNews watch: P is nil
}

// DelayedOp is an operation waiting in the delay queue: an acks=all
// produce, a Fetch long-poll, a follower waiting for its own fsync. It
// completes exactly once, by the first of: a watch satisfied, a watched
// partition changed, its deadline, Cancel. Done is closed then and Outcome
// says which. It is safe for concurrent use.
type DelayedOp struct {
	q        *delayQueue
	state    atomic.Bool // completed
	outcome  Outcome     // written before done is closed
	done     chan struct{}
	watches  []watch
	deadline int64 // unix nanos; 0: none
	didx     int   // in q.deadlines, -1 when not in it; guarded by q.mu

	// each is set for an operation its waiter completes (WatchEach): a
	// reached watch is added to fired and signalled on firedCh instead
	// of completing the operation.
	each    bool
	firedCh chan struct{} // cap 1
	firedMu sync.Mutex
	fired   []int // guarded by firedMu
}

// Done returns a channel closed when the operation completes.
func (op *DelayedOp) Done() <-chan struct{} { return op.done }

// Outcome says how the operation completed; only valid after Done is
// closed.
func (op *DelayedOp) Outcome() Outcome { return op.outcome }

// Fired returns a channel that receives after one or more watches of an
// operation made with WatchEach reached their offset; TakeFired says
// which. It is nil for other operations.
func (op *DelayedOp) Fired() <-chan struct{} { return op.firedCh }

// TakeFired returns the indexes (in the specs it was made with) of the
// watches that reached their offset since the last call, and forgets them.
// A fired watch waits no more until Rearm. The caller owns the slice.
func (op *DelayedOp) TakeFired() []int {
	op.firedMu.Lock()
	defer op.firedMu.Unlock()
	f := op.fired
	op.fired = nil
	return f
}

// Rearm makes fired watch i wait again, for offset at. If the offset is
// already reached it fires again at once. It does nothing once the
// operation completed, or for a watch that did not fire.
func (op *DelayedOp) Rearm(i int, at int64) {
	w := &op.watches[i]
	s := w.set
	s.mu.Lock()
	if op.state.Load() || w.idx >= 0 {
		s.mu.Unlock()
		return
	}
	w.at = at
	s.n.Add(1)
	if s.value() >= at {
		s.n.Add(-1)
		s.mu.Unlock()
		op.fire(i)
		return
	}
	heap.Push(&s.heap, w)
	s.mu.Unlock()
}

// Complete completes the operation as Satisfied unless it already
// completed, and reports whether this call did. It is how the waiter of
// an operation made with WatchEach ends it.
func (op *DelayedOp) Complete() bool { return op.q.complete(op, Satisfied) }

// fire records that watch i reached its offset and signals the waiter.
func (op *DelayedOp) fire(i int) {
	op.firedMu.Lock()
	op.fired = append(op.fired, i)
	op.firedMu.Unlock()
	select {
	case op.firedCh <- struct{}{}:
	default:
	}
}

// reached is what a watch of op reaching its offset does: complete op, or
// fire the watch for an operation its waiter completes.
func (q *delayQueue) reached(w *watch) {
	if w.op.each {
		w.op.fire(w.i)
		return
	}
	q.complete(w.op, Satisfied)
}

// Cancel completes the operation as Cancelled unless it already completed,
// and returns its outcome. It does not block beyond the queue's locks.
func (op *DelayedOp) Cancel() Outcome {
	if !op.q.complete(op, Cancelled) {
		<-op.done // the completer is closing it
	}
	return op.outcome
}

// delayQueue is the purgatory: delayed operations watched under one or
// more keys (watchSet, one per partition and WaitKind) and held in a
// deadline heap that one timer goroutine expires. An event on a key wakes
// only the watches whose offset it reached, in O(log n) each; an
// operation that completes is removed from all its keys and from the
// deadline heap at once. It is safe for concurrent use.
//
// Lock order: watchSet.mu and q.mu are leaves, never held together.
type delayQueue struct {
	now  func() time.Time
	kick chan struct{} // cap 1: the earliest deadline changed

	// completed counts completions by Outcome (metrics, tests).
	completed [Cancelled + 1]atomic.Int64

	mu        sync.Mutex
	deadlines deadlineHeap // guarded by mu
	closed    bool         // guarded by mu; run has returned
}

func newDelayQueue(now func() time.Time) *delayQueue {
	return &delayQueue{now: now, kick: make(chan struct{}, 1)}
}

// watchKey is one offset of one key an operation waits for.
type watchKey struct {
	set *watchSet
	at  int64
}

// watch registers an operation waiting for any of keys until deadline
// (zero: none). If a key is already satisfied the operation completes
// before watch returns.
//
// With each, a reached watch fires (DelayedOp.Fired) instead, and the
// waiter completes the operation (DelayedOp.Complete).
func (q *delayQueue) watch(keys []watchKey, deadline time.Time, each bool) *DelayedOp {
	op := &DelayedOp{q: q, done: make(chan struct{}), didx: -1, watches: make([]watch, len(keys)), each: each}
	if each {
		op.firedCh = make(chan struct{}, 1)
	}
	// NB: every watch is filled in before any is registered: a
	// completion that races the registration reads them.
	for i, k := range keys {
		op.watches[i] = watch{set: k.set, op: op, at: k.at, idx: -1, i: i}
	}
	if !deadline.IsZero() {
		op.deadline = deadline.UnixNano()
		q.mu.Lock()
		if q.closed {
			// No timer goroutine any more to expire it.
			q.mu.Unlock()
			q.complete(op, Expired)
			return op
		}
		heap.Push(&q.deadlines, op)
		first := op.didx == 0
		q.mu.Unlock()
		if first {
			select {
			case q.kick <- struct{}{}:
			default:
			}
		}
	}
	for i := range op.watches {
		w := &op.watches[i]
		s := w.set
		s.mu.Lock()
		if op.state.Load() {
			// Completed meanwhile (its deadline, or a wake of an
			// earlier watch): register nothing more.
			s.mu.Unlock()
			return op
		}
		s.n.Add(1)
		if s.value() >= w.at {
			s.n.Add(-1)
			s.mu.Unlock()
			q.reached(w)
			if !each {
				return op
			}
			continue
		}
		heap.Push(&s.heap, w)
		s.mu.Unlock()
	}
	return op
}

// publish wakes the watches of s that its current value satisfies. The
// caller has stored the new value first. Cost: an atomic load when nobody
// waits, else O(log n) per woken watch.
func (q *delayQueue) publish(s *watchSet) {
	if s.n.Load() == 0 {
		return
	}
	var woken []*watch
	s.mu.Lock()
	v := s.value()
	for len(s.heap) > 0 && s.heap[0].at <= v {
		w := heap.Pop(&s.heap).(*watch)
		s.n.Add(-1)
		woken = append(woken, w)
	}
	s.mu.Unlock()
	for _, w := range woken {
		q.reached(w)
	}
}

// wakeAll completes every operation watching s as Changed: the partition
// changed in a way no offset says (role, failure, removal).
func (q *delayQueue) wakeAll(s *watchSet) {
	if s.n.Load() == 0 {
		return
	}
	s.mu.Lock()
	woken := make([]*DelayedOp, 0, len(s.heap))
	for len(s.heap) > 0 {
		w := heap.Pop(&s.heap).(*watch)
		s.n.Add(-1)
		woken = append(woken, w.op)
	}
	s.mu.Unlock()
	for _, op := range woken {
		q.complete(op, Changed)
	}
}

// complete completes op with outcome unless it already completed, and
// reports whether this call did. It removes op's remaining watches and
// its deadline, then closes done.
func (q *delayQueue) complete(op *DelayedOp, outcome Outcome) bool {
	if !op.state.CompareAndSwap(false, true) {
		return false
	}
	op.outcome = outcome
	q.completed[outcome].Add(1)
	for i := range op.watches {
		w := &op.watches[i]
		w.set.mu.Lock()
		if w.idx >= 0 {
			heap.Remove(&w.set.heap, w.idx)
			w.set.n.Add(-1)
		}
		w.set.mu.Unlock()
	}
	if op.deadline != 0 {
		q.mu.Lock()
		if op.didx >= 0 {
			heap.Remove(&q.deadlines, op.didx)
		}
		q.mu.Unlock()
	}
	close(op.done)
	return true
}

// expire completes, as Expired, every operation whose deadline is at or
// before now, earliest first, and returns the next deadline (zero: none).
func (q *delayQueue) expire(now time.Time) time.Time {
	n := now.UnixNano()
	var due []*DelayedOp
	q.mu.Lock()
	for len(q.deadlines) > 0 && q.deadlines[0].deadline <= n {
		due = append(due, heap.Pop(&q.deadlines).(*DelayedOp))
	}
	var next time.Time
	if len(q.deadlines) > 0 {
		next = time.Unix(0, q.deadlines[0].deadline)
	}
	q.mu.Unlock()
	for _, op := range due {
		q.complete(op, Expired)
	}
	return next
}

// DelayedStats counts the delay queue's operations.
type DelayedStats struct {
	// Waiting is how many operations with a deadline wait now.
	Waiting int
	// Satisfied, Changed, Expired and Cancelled count the operations
	// completed so, since the Manager started.
	Satisfied, Changed, Expired, Cancelled int64
}

func (q *delayQueue) stats() DelayedStats {
	return DelayedStats{
		Waiting:   q.pending(),
		Satisfied: q.completed[Satisfied].Load(),
		Changed:   q.completed[Changed].Load(),
		Expired:   q.completed[Expired].Load(),
		Cancelled: q.completed[Cancelled].Load(),
	}
}

// pending returns how many operations have a deadline and have not
// completed.
func (q *delayQueue) pending() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.deadlines)
}

// run is the queue's timer goroutine: it sleeps until the earliest
// deadline (or a new earlier one) and expires what is due, until stop is
// closed. Then it expires every operation with a deadline, and so does
// watch for those registered later: a waiter is never left without its
// deadline.
func (q *delayQueue) run(stop <-chan struct{}) {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	defer func() {
		q.mu.Lock()
		q.closed = true
		q.mu.Unlock()
		q.expire(time.Unix(0, math.MaxInt64))
	}()
	for {
		next := q.expire(q.now())
		d := time.Hour
		if !next.IsZero() {
			d = max(next.Sub(q.now()), 0)
		}
		t.Reset(d)
		select {
		case <-stop:
			return
		case <-t.C:
		case <-q.kick:
			if !t.Stop() {
				select {
				case <-t.C:
				default:
				}
			}
		}
	}
}

// watchHeap is a min-heap of watches on their offset.
type watchHeap []*watch

func (h watchHeap) Len() int           { return len(h) }
func (h watchHeap) Less(i, j int) bool { return h[i].at < h[j].at }
func (h watchHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].idx, h[j].idx = i, j
}
func (h *watchHeap) Push(x any) {
	w := x.(*watch)
	w.idx = len(*h)
	*h = append(*h, w)
}
func (h *watchHeap) Pop() any {
	old := *h
	w := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	w.idx = -1
	return w
}

// deadlineHeap is a min-heap of operations on their deadline.
type deadlineHeap []*DelayedOp

func (h deadlineHeap) Len() int           { return len(h) }
func (h deadlineHeap) Less(i, j int) bool { return h[i].deadline < h[j].deadline }
func (h deadlineHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].didx, h[j].didx = i, j
}
func (h *deadlineHeap) Push(x any) {
	op := x.(*DelayedOp)
	op.didx = len(*h)
	*h = append(*h, op)
}
func (h *deadlineHeap) Pop() any {
	old := *h
	op := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	op.didx = -1
	return op
}
