package replica

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"samsa/internal/record"
	"samsa/internal/storage"
)

// testKey is a key of a delay queue under test: a watchSet over an offset
// the test moves.
type testKey struct {
	v atomic.Int64
	s *watchSet
}

func newTestKey(v int64) *testKey {
	k := &testKey{}
	k.v.Store(v)
	k.s = newWatchSet(k.v.Load)
	return k
}

// set stores the offset and publishes it, as an event does.
func (k *testKey) set(q *delayQueue, v int64) {
	k.v.Store(v)
	q.publish(k.s)
}

func outcomeOf(op *DelayedOp) Outcome {
	select {
	case <-op.Done():
		return op.Outcome()
	default:
		return 0
	}
}

// checkEmpty fails unless no watch or deadline is left in q and keys.
func checkEmpty(t *testing.T, q *delayQueue, keys ...*testKey) {
	t.Helper()
	for i, k := range keys {
		k.s.mu.Lock()
		n, h := k.s.n.Load(), len(k.s.heap)
		k.s.mu.Unlock()
		if n != 0 || h != 0 {
			t.Errorf("key %d: %d watches counted, %d in its heap after completion; want none", i, n, h)
		}
	}
	if p := q.pending(); p != 0 {
		t.Errorf("%d deadlines left; want none", p)
	}
}

// TestDelayQueueWakesWatchesTheirOffsetReached checks that an event on a
// key completes, as Satisfied, exactly the operations waiting there for an
// offset it reached, and leaves the others and other keys' waiting.
func TestDelayQueueWakesWatchesTheirOffsetReached(t *testing.T) {
	for _, tc := range []struct {
		name  string
		at    []int64 // offsets waited for on key a, one operation each
		event int64   // a's new offset
		woken []bool
	}{
		{"none reached", []int64{5, 6, 7}, 4, []bool{false, false, false}},
		{"exactly reached", []int64{5, 6, 7}, 5, []bool{true, false, false}},
		{"some passed", []int64{7, 5, 9, 6}, 7, []bool{true, true, false, true}},
		{"all passed", []int64{3, 2, 1}, 100, []bool{true, true, true}},
		{"same offset twice", []int64{4, 4}, 4, []bool{true, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := newDelayQueue(time.Now)
			a, b := newTestKey(0), newTestKey(0)
			var ops []*DelayedOp
			for _, at := range tc.at {
				ops = append(ops, q.watch([]watchKey{{a.s, at}}, time.Time{}, false))
			}
			other := q.watch([]watchKey{{b.s, 1}}, time.Time{}, false)
			a.set(q, tc.event)
			for i, op := range ops {
				want := Outcome(0)
				if tc.woken[i] {
					want = Satisfied
				}
				if got := outcomeOf(op); got != want {
					t.Errorf("operation waiting for %d after an event at %d: outcome %v, want %v", tc.at[i], tc.event, got, want)
				}
			}
			if got := outcomeOf(other); got != 0 {
				t.Errorf("operation on another key completed (%v) by an event on a", got)
			}
			for _, op := range append(ops, other) {
				op.Cancel()
			}
			checkEmpty(t, q, a, b)
		})
	}
}

// TestDelayQueueCompletesAtRegisterWhenReached checks that an operation
// whose offset is already reached when it registers completes at once: an
// event between a caller's check and its registration is never lost.
func TestDelayQueueCompletesAtRegisterWhenReached(t *testing.T) {
	q := newDelayQueue(time.Now)
	a, b := newTestKey(10), newTestKey(0)
	op := q.watch([]watchKey{{b.s, 1}, {a.s, 10}, {b.s, 2}}, time.Now().Add(time.Hour), false)
	if got := outcomeOf(op); got != Satisfied {
		t.Fatalf("outcome %v, want Satisfied", got)
	}
	checkEmpty(t, q, a, b)
}

// TestDelayQueueMultiKeyOperationCompletesOnce checks that an operation
// watched under several keys is completed by the first event that
// reaches one of them, once: later events, its deadline and Cancel find
// it done, and it is gone from every key and from the deadline heap.
func TestDelayQueueMultiKeyOperationCompletesOnce(t *testing.T) {
	now := time.Unix(1000, 0)
	q := newDelayQueue(func() time.Time { return now })
	keys := []*testKey{newTestKey(0), newTestKey(0), newTestKey(0)}
	op := q.watch([]watchKey{{keys[0].s, 5}, {keys[1].s, 5}, {keys[2].s, 5}}, now.Add(time.Second), false)
	keys[1].set(q, 5)
	if got := outcomeOf(op); got != Satisfied {
		t.Fatalf("outcome %v after the second key reached its offset, want Satisfied", got)
	}
	checkEmpty(t, q, keys...)
	keys[0].set(q, 9)
	keys[2].set(q, 9)
	q.expire(now.Add(time.Hour))
	if got := op.Cancel(); got != Satisfied {
		t.Fatalf("Cancel after completion: %v, want Satisfied", got)
	}
	if q.complete(op, Expired) {
		t.Fatal("a completed operation completed again")
	}
}

// TestDelayQueueCompletesExactlyOnceUnderRaces races events on every key,
// wake-alls, expiry and Cancel on many operations: each completes exactly
// once and nothing is left behind.
func TestDelayQueueCompletesExactlyOnceUnderRaces(t *testing.T) {
	q := newDelayQueue(time.Now)
	keys := []*testKey{newTestKey(0), newTestKey(0), newTestKey(0), newTestKey(0)}
	const ops = 2000
	var completions atomic.Int64
	var wg sync.WaitGroup
	all := make([]*DelayedOp, ops)
	for i := range all {
		deadline := time.Time{}
		if i%3 == 0 {
			deadline = time.Now().Add(time.Duration(i%7) * time.Millisecond)
		}
		all[i] = q.watch([]watchKey{{keys[i%4].s, int64(i%50 + 1)}, {keys[(i+1)%4].s, int64(i%30 + 1)}}, deadline, false)
	}
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for v := int64(1); v <= 60; v++ {
				keys[g].set(q, v)
				if v == 40 && g == 0 {
					q.wakeAll(keys[3].s)
				}
			}
		}()
	}
	wg.Add(2)
	go func() {
		defer wg.Done()
		for range 20 {
			q.expire(time.Now())
		}
	}()
	go func() {
		defer wg.Done()
		for i := 0; i < ops; i += 5 {
			if q.complete(all[i], Cancelled) {
				completions.Add(1)
			}
		}
	}()
	wg.Wait()
	q.expire(time.Now().Add(time.Hour))
	for i, op := range all {
		select {
		case <-op.Done():
		default:
			t.Fatalf("operation %d still waiting after every key passed its offsets", i)
		}
		if q.complete(op, Cancelled) {
			t.Fatalf("operation %d completed twice", i)
		}
	}
	checkEmpty(t, q, keys...)
}

// TestDelayQueueExpiresInDeadlineOrder checks that expire completes, as
// Expired, exactly the operations whose deadline passed, and reports the
// next deadline.
func TestDelayQueueExpiresInDeadlineOrder(t *testing.T) {
	base := time.Unix(1000, 0)
	q := newDelayQueue(func() time.Time { return base })
	k := newTestKey(0)
	deadlines := []time.Duration{30, 10, 50, 20, 40}
	var ops []*DelayedOp
	for _, d := range deadlines {
		ops = append(ops, q.watch([]watchKey{{k.s, 1}}, base.Add(d*time.Millisecond), false))
	}
	for _, step := range []struct {
		at      time.Duration
		expired []bool
		next    time.Duration // 0: none
	}{
		{5, []bool{false, false, false, false, false}, 10},
		{10, []bool{false, true, false, false, false}, 20},
		{35, []bool{true, true, false, true, false}, 40},
		{100, []bool{true, true, true, true, true}, 0},
	} {
		next := q.expire(base.Add(step.at * time.Millisecond))
		for i, op := range ops {
			want := Outcome(0)
			if step.expired[i] {
				want = Expired
			}
			if got := outcomeOf(op); got != want {
				t.Errorf("at %dms: operation with deadline %dms: %v, want %v", step.at, deadlines[i], got, want)
			}
		}
		var wantNext time.Time
		if step.next != 0 {
			wantNext = base.Add(step.next * time.Millisecond)
		}
		if !next.Equal(wantNext) {
			t.Errorf("at %dms: next deadline %v, want %v", step.at, next, wantNext)
		}
	}
	k.set(q, 1)
	for i, op := range ops {
		if got := op.Outcome(); got != Expired {
			t.Errorf("operation %d: %v after its key moved; an expired operation must stay Expired", i, got)
		}
	}
	checkEmpty(t, q, k)
}

// TestDelayQueueCancelRemovesOperation checks that a cancelled operation
// is gone from its keys and the deadline heap, and that an event after
// it leaves it Cancelled.
func TestDelayQueueCancelRemovesOperation(t *testing.T) {
	q := newDelayQueue(time.Now)
	a, b := newTestKey(0), newTestKey(0)
	op := q.watch([]watchKey{{a.s, 1}, {b.s, 1}}, time.Now().Add(time.Hour), false)
	keep := q.watch([]watchKey{{a.s, 1}}, time.Time{}, false)
	if got := op.Cancel(); got != Cancelled {
		t.Fatalf("Cancel: %v, want Cancelled", got)
	}
	if q.pending() != 0 {
		t.Fatal("a cancelled operation's deadline is still queued")
	}
	a.set(q, 1)
	b.set(q, 1)
	if got := op.Outcome(); got != Cancelled {
		t.Fatalf("outcome after events: %v, want Cancelled", got)
	}
	if got := outcomeOf(keep); got != Satisfied {
		t.Fatalf("the other operation on the key: %v, want Satisfied", got)
	}
	checkEmpty(t, q, a, b)
}

// TestDelayQueueWakeAllCompletesAsChanged checks that wakeAll completes
// every operation on a key as Changed, whatever offset it waits for.
func TestDelayQueueWakeAllCompletesAsChanged(t *testing.T) {
	q := newDelayQueue(time.Now)
	a, b := newTestKey(0), newTestKey(0)
	op1 := q.watch([]watchKey{{a.s, 1}}, time.Time{}, false)
	op2 := q.watch([]watchKey{{b.s, 3}, {a.s, 1 << 40}}, time.Time{}, false)
	op3 := q.watch([]watchKey{{b.s, 3}}, time.Time{}, false)
	q.wakeAll(a.s)
	for i, op := range []*DelayedOp{op1, op2} {
		if got := outcomeOf(op); got != Changed {
			t.Errorf("operation %d on the key: %v, want Changed", i, got)
		}
	}
	if got := outcomeOf(op3); got != 0 {
		t.Errorf("operation on another key: %v, want still waiting", got)
	}
	op3.Cancel()
	checkEmpty(t, q, a, b)
}

// TestDelayQueueTimerGoroutineExpires checks that the queue's one timer
// goroutine expires an operation at its deadline, including one earlier
// than every deadline it was sleeping towards.
func TestDelayQueueTimerGoroutineExpires(t *testing.T) {
	q := newDelayQueue(time.Now)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { defer close(done); q.run(stop) }()
	defer func() { close(stop); <-done }()
	k := newTestKey(0)
	late := q.watch([]watchKey{{k.s, 1}}, time.Now().Add(time.Hour), false)
	early := q.watch([]watchKey{{k.s, 1}}, time.Now().Add(20*time.Millisecond), false)
	select {
	case <-early.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("operation not expired 10s after its 20ms deadline")
	}
	if early.Outcome() != Expired || outcomeOf(late) != 0 {
		t.Fatalf("early %v, late %v; want Expired and still waiting", early.Outcome(), outcomeOf(late))
	}
	late.Cancel()
}

// TestDelayQueueStopExpiresWaiters checks that when the timer goroutine
// stops (Manager.Close) every operation with a deadline expires, and one
// registered later expires at once: no waiter outlives its deadline.
func TestDelayQueueStopExpiresWaiters(t *testing.T) {
	q := newDelayQueue(time.Now)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { defer close(done); q.run(stop) }()
	k := newTestKey(0)
	before := q.watch([]watchKey{{k.s, 1}}, time.Now().Add(time.Hour), false)
	noDeadline := q.watch([]watchKey{{k.s, 1}}, time.Time{}, false)
	close(stop)
	<-done
	if got := outcomeOf(before); got != Expired {
		t.Fatalf("operation waiting at stop: %v, want Expired", got)
	}
	after := q.watch([]watchKey{{k.s, 1}}, time.Now().Add(time.Hour), false)
	if got := outcomeOf(after); got != Expired {
		t.Fatalf("operation registered after stop: %v, want Expired", got)
	}
	if got := outcomeOf(noDeadline); got != 0 {
		t.Fatalf("operation without deadline: %v, want still waiting for its offset", got)
	}
	k.set(q, 1)
	if got := outcomeOf(noDeadline); got != Satisfied {
		t.Fatalf("operation without deadline after its offset: %v, want Satisfied", got)
	}
	checkEmpty(t, q, k)
}

// TestDelayQueueEachFiresWatchesUntilCompleted checks an operation its
// waiter completes (a Fetch summing min_bytes): each reached watch fires
// once and waits no more until rearmed, a rearm at an offset already
// reached fires at once, the waiter's Complete ends it exactly once, and
// it is then gone from every key.
func TestDelayQueueEachFiresWatchesUntilCompleted(t *testing.T) {
	q := newDelayQueue(time.Now)
	a, b, c := newTestKey(0), newTestKey(3), newTestKey(0)
	op := q.watch([]watchKey{{a.s, 1}, {b.s, 3}, {c.s, 1}}, time.Now().Add(time.Hour), true)
	take := func(want ...int) {
		t.Helper()
		if len(want) > 0 {
			select {
			case <-op.Fired():
			default:
				t.Fatalf("no signal; want watches %v fired", want)
			}
		}
		got := op.TakeFired()
		if fmt.Sprint(got) != fmt.Sprint(want) && !(len(got) == 0 && len(want) == 0) {
			t.Fatalf("fired %v, want %v", got, want)
		}
	}
	take(1) // b was reached when registered
	a.set(q, 1)
	a.set(q, 2) // fired already: not again until rearmed
	take(0)
	if outcomeOf(op) != 0 {
		t.Fatal("a watch reaching its offset completed an operation its waiter completes")
	}
	op.Rearm(0, 5)
	a.set(q, 4)
	take()
	op.Rearm(1, 3) // b is at 3 already
	take(1)
	a.set(q, 5)
	take(0)
	if !op.Complete() || op.Complete() {
		t.Fatal("Complete did not complete the operation exactly once")
	}
	if got := outcomeOf(op); got != Satisfied {
		t.Fatalf("outcome %v, want Satisfied", got)
	}
	op.Rearm(0, 9) // after completion: nothing
	checkEmpty(t, q, a, b, c)
	changed := q.watch([]watchKey{{a.s, 100}, {c.s, 100}}, time.Time{}, true)
	q.wakeAll(c.s)
	if got := outcomeOf(changed); got != Changed {
		t.Fatalf("wakeAll on an operation its waiter completes: %v, want Changed", got)
	}
	checkEmpty(t, q, a, b, c)
}

// TestPartitionEventsWakeTheirWaits checks, on a real log, that each event
// publishes the offset it moves: an append the log end, the flusher's
// fsync the durable offset and (on a leader with an ISR of one) the high
// watermark, a follower's fetch the high watermark of a leader with two
// in-sync replicas, a COMMIT marker the last stable offset, and a change
// of leader wakes every wait on the partition.
func TestPartitionEventsWakeTheirWaits(t *testing.T) {
	m := openManager(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	wait := func(t *testing.T, op *DelayedOp, want Outcome, what string) {
		t.Helper()
		select {
		case <-op.Done():
		case <-ctx.Done():
			t.Fatalf("%s: not woken", what)
		}
		if op.Outcome() != want {
			t.Fatalf("%s: outcome %v, want %v", what, op.Outcome(), want)
		}
	}

	t.Run("append and fsync", func(t *testing.T) {
		tp := storage.TopicPartition{Topic: "events", Partition: 0}
		p, err := m.Ensure(tp, [16]byte{1}, storage.DefaultConfig(), PartitionInfo{Replicas: []int32{1}, Leader: 1, LeaderEpoch: 1, ISR: []int32{1}, PartitionEpoch: 1})
		if err != nil {
			t.Fatal(err)
		}
		leo := m.Watch([]WatchSpec{{P: p, Kind: WaitLogEnd, At: 1}}, time.Time{})
		durable := m.Watch([]WatchSpec{{P: p, Kind: WaitDurable, At: 1}}, time.Time{})
		hw := m.Watch([]WatchSpec{{P: p, Kind: WaitHighWatermark, At: 1}}, time.Time{})
		lso := m.Watch([]WatchSpec{{P: p, Kind: WaitLastStable, At: 1}}, time.Time{})
		if _, err := p.Append(oneRecord(t), false, time.Now().UnixMilli()); err != nil {
			t.Fatal(err)
		}
		wait(t, leo, Satisfied, "log end after an append")
		wait(t, durable, Satisfied, "durable offset after the fsync")
		wait(t, hw, Satisfied, "high watermark after the fsync")
		wait(t, lso, Satisfied, "last stable offset after the fsync")
		if got := p.HighWatermark(); got != 1 {
			t.Fatalf("HighWatermark %d after the fsync, want 1", got)
		}
		next := m.Watch([]WatchSpec{{P: p, Kind: WaitHighWatermark, At: 2}}, time.Time{})
		// The broker applies the same state again at every reconcile:
		// that is no change and wakes nobody.
		if _, err := m.Ensure(tp, [16]byte{1}, storage.DefaultConfig(), PartitionInfo{Replicas: []int32{1}, Leader: 1, LeaderEpoch: 1, ISR: []int32{1}, PartitionEpoch: 1}); err != nil {
			t.Fatal(err)
		}
		if got := outcomeOf(next); got != 0 {
			t.Fatalf("wait after the same partition state applied again: %v, want still waiting", got)
		}
		if _, err := m.Ensure(tp, [16]byte{1}, storage.DefaultConfig(), PartitionInfo{Replicas: []int32{1}, Leader: 1, LeaderEpoch: 2, ISR: []int32{1}, PartitionEpoch: 2}); err != nil {
			t.Fatal(err)
		}
		wait(t, next, Changed, "high watermark wait after a new leader epoch")
	})

	t.Run("follower fetch", func(t *testing.T) {
		tp := storage.TopicPartition{Topic: "events", Partition: 1}
		p, err := m.Ensure(tp, [16]byte{1}, storage.DefaultConfig(), PartitionInfo{Replicas: []int32{1, 2}, Leader: 1, LeaderEpoch: 1, ISR: []int32{1, 2}, PartitionEpoch: 1})
		if err != nil {
			t.Fatal(err)
		}
		res, err := p.Append(oneRecord(t), false, time.Now().UnixMilli())
		if err != nil {
			t.Fatal(err)
		}
		if err := p.waitDurable(ctx, res.LastOffset+1); err != nil {
			t.Fatal(err)
		}
		hw := m.Watch([]WatchSpec{{P: p, Kind: WaitHighWatermark, At: 1}}, time.Time{})
		if got := outcomeOf(hw); got != 0 || p.HighWatermark() != 0 {
			t.Fatalf("high watermark %d (wait %v) before the follower fetched; want 0, waiting", p.HighWatermark(), got)
		}
		p.FollowerFetched(2, 1)
		wait(t, hw, Satisfied, "high watermark after the follower's fetch")
		if got := p.HighWatermark(); got != 1 {
			t.Fatalf("HighWatermark %d, want 1", got)
		}
	})

	t.Run("commit marker", func(t *testing.T) {
		tp := storage.TopicPartition{Topic: "events", Partition: 2}
		p, err := m.Ensure(tp, [16]byte{1}, storage.DefaultConfig(), PartitionInfo{Replicas: []int32{1}, Leader: 1, LeaderEpoch: 1, ISR: []int32{1}, PartitionEpoch: 1})
		if err != nil {
			t.Fatal(err)
		}
		const pid, epoch = 7, 0
		bb := record.NewBuilder(record.CodecNone, time.Now().UnixMilli())
		bb.ProducerID, bb.ProducerEpoch, bb.BaseSequence, bb.Transactional = pid, epoch, 0, true
		bb.Add(record.Record{Value: []byte("v")})
		b, err := bb.Build()
		if err != nil {
			t.Fatal(err)
		}
		res, err := p.Append(b, false, time.Now().UnixMilli())
		if err != nil {
			t.Fatal(err)
		}
		if err := p.WaitCommitted(ctx, res.LastOffset+1, res.LeaderEpoch); err != nil {
			t.Fatal(err)
		}
		lso := m.Watch([]WatchSpec{{P: p, Kind: WaitLastStable, At: 1}}, time.Time{})
		if got := outcomeOf(lso); got != 0 || p.LastStableOffset() != 0 {
			t.Fatalf("last stable offset %d (wait %v) with the transaction open; want 0, waiting", p.LastStableOffset(), got)
		}
		if _, err := p.AppendMarker(pid, epoch, true, 0, time.Now().UnixMilli()); err != nil {
			t.Fatal(err)
		}
		wait(t, lso, Satisfied, "last stable offset after the COMMIT marker")
	})
}

// TestWaitCommittedSurfacesFailedLog checks that an acks=all wait ends
// with the log's error when its log dir goes offline, rather than waiting
// for its deadline.
func TestWaitCommittedSurfacesFailedLog(t *testing.T) {
	m := openManager(t)
	tp := storage.TopicPartition{Topic: "t", Partition: 0}
	p, err := m.Ensure(tp, [16]byte{1}, storage.DefaultConfig(), PartitionInfo{Replicas: []int32{1, 2}, Leader: 1, LeaderEpoch: 1, ISR: []int32{1, 2}, PartitionEpoch: 1})
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Append(oneRecord(t), false, time.Now().UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- p.WaitCommitted(ctx, res.LastOffset+1, res.LeaderEpoch) }()
	testWaitParked(t, m, 1)
	m.logs.(*storage.Manager).Close() // closing the log dir ends every wait on its logs
	select {
	case err := <-done:
		if !errors.Is(err, storage.ErrClosed) && !errors.Is(err, storage.ErrLogDirOffline) {
			t.Fatalf("WaitCommitted after its log closed: %v, want the log's error", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("WaitCommitted still waiting 20s after its log closed")
	}
}

// testWaitParked waits until n operations with a deadline are queued.
func testWaitParked(t *testing.T, m *Manager, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for m.delayed.pending() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d operations parked, want %d", m.delayed.pending(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// BenchmarkDelayQueueEvent measures one event on a key: registering the
// operations it wakes, then publishing the offset that wakes them, with
// parked operations waiting on the same key for an offset it never
// reaches, each also watched under nine other keys (a Fetch over ten
// partitions). The cost per event should not grow with parked.
func BenchmarkDelayQueueEvent(b *testing.B) {
	for _, parked := range []int{0, 1000, 100000} {
		for _, woken := range []int{0, 1, 16} {
			b.Run(fmt.Sprintf("parked=%d/woken=%d", parked, woken), func(b *testing.B) {
				q := newDelayQueue(time.Now)
				k := newTestKey(0)
				others := make([]*testKey, 9)
				for i := range others {
					others[i] = newTestKey(0)
				}
				far := time.Now().Add(time.Hour)
				for range parked {
					keys := []watchKey{{k.s, 1 << 62}}
					for _, o := range others {
						keys = append(keys, watchKey{o.s, 1 << 62})
					}
					q.watch(keys, far, false)
				}
				keys := []watchKey{{k.s, 0}}
				b.ReportAllocs()
				b.ResetTimer()
				for i := range b.N {
					v := int64(i + 1)
					for range woken {
						keys[0].at = v
						q.watch(keys, far, false)
					}
					k.set(q, v)
				}
				b.StopTimer()
				if woken > 0 {
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*woken), "ns/woken")
				}
				if got := int(k.s.n.Load()); got != parked {
					b.Fatalf("%d watches left on the key, want the %d parked", got, parked)
				}
			})
		}
	}
}
