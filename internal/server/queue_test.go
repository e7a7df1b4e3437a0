package server

import (
	"testing"
	"time"
)

func queued(id int32) pending { return pending{req: &Request{CorrelationID: id}} }

func popID(t *testing.T, q *replyQueue) int32 {
	t.Helper()
	p, ok := q.pop(nil)
	if !ok {
		t.Fatal("pop reported false")
	}
	return p.req.CorrelationID
}

func TestReplyQueuePopsInPushOrderAcrossWrapAndGrowth(t *testing.T) {
	q := newReplyQueue(100)
	next, want := int32(0), int32(0)
	// Interleave so the ring wraps before each growth.
	for round := range 6 {
		for range 3 + 2*round {
			q.push(nil, queued(next))
			next++
		}
		for range 2 + round {
			if got := popID(t, q); got != want {
				t.Fatalf("popped %d, want %d", got, want)
			}
			want++
		}
	}
	if q.len() != int(next-want) {
		t.Fatalf("len %d, want %d", q.len(), next-want)
	}
	q.close()
	for ; want < next; want++ {
		if got := popID(t, q); got != want {
			t.Fatalf("popped %d, want %d", got, want)
		}
	}
	if _, ok := q.pop(nil); ok {
		t.Fatal("pop on a closed, empty queue reported true")
	}
}

func TestReplyQueuePopClearsTheSlot(t *testing.T) {
	q := newReplyQueue(4)
	q.push(nil, queued(1))
	popID(t, q)
	for i, p := range q.mu.ring {
		if p.req != nil {
			t.Fatalf("slot %d still holds request %d", i, p.req.CorrelationID)
		}
	}
}

func TestReplyQueuePushWaitsWhileFull(t *testing.T) {
	q := newReplyQueue(2)
	q.push(nil, queued(0))
	q.push(nil, queued(1))
	pushed := make(chan bool)
	go func() { pushed <- q.push(nil, queued(2)) }()
	select {
	case <-pushed:
		t.Fatal("push returned while the queue was full")
	case <-time.After(50 * time.Millisecond):
	}
	if got := popID(t, q); got != 0 {
		t.Fatalf("popped %d, want 0", got)
	}
	if !<-pushed {
		t.Fatal("push reported false")
	}
	if q.len() != 2 {
		t.Fatalf("len %d, want 2", q.len())
	}
}

func TestReplyQueuePushGivesUpWhenDone(t *testing.T) {
	q := newReplyQueue(1)
	q.push(nil, queued(0))
	done := make(chan struct{})
	pushed := make(chan bool)
	go func() { pushed <- q.push(done, queued(1)) }()
	close(done)
	if <-pushed {
		t.Fatal("push on a full queue reported true after done")
	}
	if q.len() != 1 {
		t.Fatalf("len %d, want 1", q.len())
	}
}

func TestReplyQueuePopWaitsForPushOrClose(t *testing.T) {
	q := newReplyQueue(4)
	got := make(chan int32)
	go func() {
		for {
			p, ok := q.pop(nil)
			if !ok {
				close(got)
				return
			}
			got <- p.req.CorrelationID
		}
	}()
	for i := range int32(3) {
		q.push(nil, queued(i))
		if id := <-got; id != i {
			t.Fatalf("popped %d, want %d", id, i)
		}
	}
	q.close()
	if _, open := <-got; open {
		t.Fatal("pop returned an entry after close")
	}
}

func TestReplyQueuePopGivesUpWhenDone(t *testing.T) {
	q := newReplyQueue(4)
	done := make(chan struct{})
	popped := make(chan bool)
	go func() {
		_, ok := q.pop(done)
		popped <- ok
	}()
	close(done)
	if <-popped {
		t.Fatal("pop on an empty queue reported true after done")
	}
}
