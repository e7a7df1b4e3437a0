package server

import "sync"

// replyQueue carries a connection's replies from its reader to its
// writer, in order, and holds at most max of them: push blocks while the
// queue is full, which is the connection's back-pressure. It acts as a
// channel of capacity max (queued.max.requests) whose storage grows with
// use: a channel allocates all of its slots at once, and 500 slots of a
// pending, which holds pointers, are about 52 KiB that every connection
// would clear and the garbage collector scan for as long as the
// connection is open, while most connections have a few requests in
// flight.
//
// A replyQueue is safe for one goroutine calling push and close and
// another calling pop; len may be called from either.
type replyQueue struct {
	max int
	// notEmpty and notFull wake a pop or a push that said, under mu, that
	// it waits; a token left over from a wait that ended otherwise only
	// makes the next wait check again.
	notEmpty, notFull chan struct{}

	// mu guards the fields in the struct below.
	mu struct {
		sync.Mutex
		// ring holds the n queued entries from head on; its length is
		// zero or a power of two.
		ring    []pending
		head, n int
		closed  bool
		// popWaits and pushWaits say that a pop or a push waits for a
		// token.
		popWaits, pushWaits bool
	}
}

func newReplyQueue(max int) *replyQueue {
	return &replyQueue{
		max:      max,
		notEmpty: make(chan struct{}, 1),
		notFull:  make(chan struct{}, 1),
	}
}

// push appends p, waiting while the queue is full. It reports false, and
// drops p, if done is closed first. push must not be called after close.
func (q *replyQueue) push(done <-chan struct{}, p pending) bool {
	q.mu.Lock()
	for q.mu.n >= q.max {
		q.mu.pushWaits = true
		q.mu.Unlock()
		select {
		case <-q.notFull:
		case <-done:
			return false
		}
		q.mu.Lock()
	}
	if q.mu.n == len(q.mu.ring) {
		q.growLocked()
	}
	q.mu.ring[(q.mu.head+q.mu.n)&(len(q.mu.ring)-1)] = p
	q.mu.n++
	wake := q.mu.popWaits
	q.mu.popWaits = false
	q.mu.Unlock()
	if wake {
		signal(q.notEmpty)
	}
	return true
}

// growLocked doubles the ring (to 4 entries at first), keeping the order
// of the entries. q.mu is held.
func (q *replyQueue) growLocked() {
	ring := make([]pending, max(4, 2*len(q.mu.ring)))
	for i := range q.mu.n {
		ring[i] = q.mu.ring[(q.mu.head+i)&(len(q.mu.ring)-1)]
	}
	q.mu.ring, q.mu.head = ring, 0
}

// pop removes and returns the oldest entry, waiting while the queue is
// empty. It reports false once the queue is closed and empty, or if done
// is closed while it waits.
func (q *replyQueue) pop(done <-chan struct{}) (pending, bool) {
	q.mu.Lock()
	for q.mu.n == 0 {
		if q.mu.closed {
			q.mu.Unlock()
			return pending{}, false
		}
		q.mu.popWaits = true
		q.mu.Unlock()
		select {
		case <-q.notEmpty:
		case <-done:
			return pending{}, false
		}
		q.mu.Lock()
	}
	p := q.mu.ring[q.mu.head]
	q.mu.ring[q.mu.head] = pending{} // the queue keeps no reference to a request
	q.mu.head = (q.mu.head + 1) & (len(q.mu.ring) - 1)
	q.mu.n--
	wake := q.mu.pushWaits
	q.mu.pushWaits = false
	q.mu.Unlock()
	if wake {
		signal(q.notFull)
	}
	return p, true
}

// len returns the number of entries queued.
func (q *replyQueue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.mu.n
}

// close marks the end of the entries: pop returns what is queued, then
// reports false.
func (q *replyQueue) close() {
	q.mu.Lock()
	q.mu.closed = true
	wake := q.mu.popWaits
	q.mu.popWaits = false
	q.mu.Unlock()
	if wake {
		signal(q.notEmpty)
	}
}

// signal leaves a token in ch, a channel of capacity 1, unless one is
// there already.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
