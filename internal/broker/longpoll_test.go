package broker_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/record"
	"samsa/internal/storage"
	"samsa/internal/testutil"
)

// TestFetchLongPollsAtScale parks 1,000 long-polling Fetches, each on its
// own connection and over ten partitions of a topic of 10,000, then
// produces one record to one partition of every other Fetch. Each of those
// must answer with that record, woken by it (its max_wait_ms is far
// beyond the test's timeout), and each of the rest must answer empty at
// its max_wait_ms. The delay queue must complete exactly one operation per
// Fetch: one woken per produced partition, one expired per idle Fetch; a
// Fetch woken by another Fetch's partition would show as an extra wake.
// One more Fetch names every partition (more than a select statement
// could watch) and must be woken by the first record.
func TestFetchLongPollsAtScale(t *testing.T) {
	partitions, fetches := 10000, 1000
	if raceEnabled {
		partitions, fetches = 2000, 200
	}
	// Three files per partition (segment, index, time index) and two
	// per connection (both ends are in this process).
	partitions = fitFileLimit(t, partitions, fetches, fetches+1, 3, 2)
	per := partitions / fetches
	const idleWait = 5 * time.Second

	b := testutil.StartBroker(t, "num.partitions=1")
	topic := "scale"
	adm := b.Admin()
	ctx := ctxT(t, 10*time.Minute)
	resp, err := adm.CreateTopic(ctx, int32(partitions), 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	// NB: the client retries a creation that outlasts its request
	// timeout; the retry finds the topic its first try created.
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		t.Fatalf("create %d partitions: %v", partitions, err)
	}
	reps := b.Node.Broker().Replicas()
	testutil.Eventually(t, 5*time.Minute, func() error {
		n := 0
		for _, p := range reps.Partitions() {
			if p.TP.Topic == topic && p.IsLeader() {
				n++
			}
		}
		if n < partitions {
			return fmt.Errorf("%d of %d partitions led", n, partitions)
		}
		return nil
	})

	conns := make([]net.Conn, fetches+1)
	for i := range conns {
		c, err := net.DialTimeout("tcp", b.Addr(), 10*time.Second)
		if err != nil {
			t.Fatalf("dial %d: %v", i, err)
		}
		conns[i] = c
		defer c.Close()
	}
	// Every even Fetch gets a record on one of its partitions.
	woken := func(i int) bool { return i%2 == 0 }
	target := func(i int) int32 { return int32(i*per + i%per) }

	before := reps.DelayedStats()
	type result struct {
		resp    *kmsg.FetchResponse
		err     error
		elapsed time.Duration
	}
	results := make([]result, fetches+1)
	var wg sync.WaitGroup
	// Fetch i reads partitions [i*per, (i+1)*per); the last, every one.
	for i := range fetches + 1 {
		first, last := i*per, (i+1)*per
		if i == fetches {
			first, last = 0, partitions
		}
		req := kmsg.NewPtrFetchRequest()
		req.Version = 11
		req.ReplicaID = -1
		req.MaxWaitMillis = int32(idleWait / time.Millisecond)
		if woken(i) || i == fetches {
			req.MaxWaitMillis = int32(time.Hour / time.Millisecond)
		}
		req.MinBytes = 1
		req.MaxBytes = 1 << 20
		req.SessionEpoch = -1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		for p := first; p < last; p++ {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition = int32(p)
			rp.PartitionMaxBytes = 1 << 20
			rp.CurrentLeaderEpoch = -1
			rp.LogStartOffset = -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			resp, err := roundTrip(conns[i], req, 5*time.Minute)
			results[i] = result{err: err, elapsed: time.Since(start)}
			if err == nil {
				results[i].resp = resp.(*kmsg.FetchResponse)
			}
		}()
	}
	// Produce only once every Fetch is parked, so that each answer with
	// data proves a wake.
	sent := time.Now()
	testutil.Eventually(t, 2*time.Minute, func() error {
		if w := reps.DelayedStats().Waiting - before.Waiting; w < fetches+1 {
			return fmt.Errorf("%d of %d fetches parked", w, fetches+1)
		}
		return nil
	})
	parked := time.Since(sent)
	cl := b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	defer cl.Close()
	var recs []*kgo.Record
	for i := range fetches {
		if woken(i) {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: target(i), Value: fmt.Appendf(nil, "for fetch %d", i)})
		}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	wg.Wait()

	for i, r := range results {
		if r.err != nil {
			t.Fatalf("fetch %d: %v", i, r.err)
		}
		var got []int32
		for _, rt := range r.resp.Topics {
			for _, rp := range rt.Partitions {
				if rp.ErrorCode != 0 {
					t.Fatalf("fetch %d partition %d: error code %d", i, rp.Partition, rp.ErrorCode)
				}
				if len(rp.RecordBatches) > 0 {
					got = append(got, rp.Partition)
				}
			}
		}
		switch {
		case i == fetches && (len(got) == 0 || r.elapsed > 4*time.Minute):
			t.Fatalf("fetch over every partition answered after %v with data on %d partitions; want woken by the first record", r.elapsed, len(got))
		case i == fetches:
		case woken(i) && (len(got) != 1 || got[0] != target(i)):
			t.Fatalf("fetch %d answered with data on partitions %v, want [%d]", i, got, target(i))
		case woken(i) && r.elapsed > 4*time.Minute:
			t.Fatalf("fetch %d answered after %v: not woken by its record", i, r.elapsed)
		case !woken(i) && len(got) != 0:
			t.Fatalf("fetch %d answered with data on partitions %v, want none", i, got)
		case !woken(i) && r.elapsed < idleWait:
			t.Fatalf("fetch %d on idle partitions answered after %v, before its max_wait_ms %v", i, r.elapsed, idleWait)
		}
	}
	after := reps.DelayedStats()
	if d := after.Satisfied - before.Satisfied; d != int64(fetches/2+1) {
		t.Errorf("%d operations woken, want %d: one per Fetch whose partition got a record", d, fetches/2+1)
	}
	if d := after.Expired - before.Expired; d != int64(fetches-fetches/2) {
		t.Errorf("%d operations expired, want %d: one per idle Fetch", d, fetches-fetches/2)
	}
	if d := (after.Changed + after.Cancelled) - (before.Changed + before.Cancelled); d != 0 {
		t.Errorf("%d operations woken by a change or cancelled, want none: no partition changed role", d)
	}
	if after.Waiting != before.Waiting {
		t.Errorf("%d operations waiting after every Fetch answered, want %d", after.Waiting, before.Waiting)
	}
	t.Logf("%d partitions, %d fetches over %d partitions each: all parked within %v", partitions, fetches, per, parked)
}

// fitFileLimit raises the open-file limit to what partitions and conns
// need, or, where the hard limit is lower and cannot be raised, returns
// the partitions that fit (a multiple of unit), so the test still runs.
func fitFileLimit(t *testing.T, partitions, unit, conns, perPartition, perConn int) int {
	t.Helper()
	need := uint64(partitions*perPartition + conns*perConn + 2048)
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatalf("getrlimit: %v", err)
	}
	if lim.Cur >= need {
		return partitions
	}
	want := lim
	want.Cur = max(need, lim.Cur)
	want.Max = max(need, lim.Max)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want); err == nil {
		t.Cleanup(func() { syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim) })
		return partitions
	}
	want.Cur, want.Max = lim.Max, lim.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want); err != nil {
		want.Cur = lim.Cur
	}
	fit := (int(want.Cur) - conns*perConn - 2048) / perPartition
	fit -= fit % unit
	if fit < unit {
		t.Fatalf("open-file limit %d too low for %d connections", want.Cur, conns)
	}
	t.Logf("open-file limit %d: %d partitions instead of %d", want.Cur, fit, partitions)
	return fit
}

// roundTrip sends req on c and decodes the answer. It is safe to call
// from any goroutine (it reports errors instead of failing the test).
func roundTrip(c net.Conn, req kmsg.Request, timeout time.Duration) (kmsg.Response, error) {
	c.SetDeadline(time.Now().Add(timeout))
	const correlationID = 5
	msg := []byte{0, 0, 0, 0}
	msg = binary.BigEndian.AppendUint16(msg, uint16(req.Key()))
	msg = binary.BigEndian.AppendUint16(msg, uint16(req.GetVersion()))
	msg = binary.BigEndian.AppendUint32(msg, correlationID)
	msg = binary.BigEndian.AppendUint16(msg, 4)
	msg = append(msg, "test"...)
	if req.IsFlexible() {
		msg = append(msg, 0)
	}
	msg = req.AppendTo(msg)
	binary.BigEndian.PutUint32(msg, uint32(len(msg)-4))
	if _, err := c.Write(msg); err != nil {
		return nil, err
	}
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		return nil, err
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(c, body); err != nil {
		return nil, err
	}
	if got := binary.BigEndian.Uint32(body); got != correlationID {
		return nil, fmt.Errorf("correlation id %d, want %d", got, correlationID)
	}
	body = body[4:]
	if req.IsFlexible() {
		body = body[1:]
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if err := resp.ReadFrom(body); err != nil {
		return nil, err
	}
	return resp, nil
}

// TestFetchLongPollSumsMinBytesAcrossPartitions parks a Fetch over three
// partitions whose min_bytes only three batches reach, then produces one
// batch to each in turn, waiting each time until it is committed. The
// Fetch must answer with all three, as one delayed operation: the bytes of
// each partition that gets data are added up while it stays parked (Kafka's
// DelayedFetch.tryComplete), not one wake-and-reregister per batch. A
// second Fetch whose min_bytes is never reached answers at max_wait_ms
// with what there is.
func TestFetchLongPollSumsMinBytesAcrossPartitions(t *testing.T) {
	b := testutil.StartBroker(t)
	topic := "minbytes"
	testutil.CreateTopic(t, b.Admin(), topic, 3)
	reps := b.Node.Broker().Replicas()
	batch := buildBatch(t, record.CodecNone, 1, time.Now().UnixMilli())
	size := int32(len(batch))

	fetchReq := func(minBytes, maxWaitMs int32) *kmsg.FetchRequest {
		req := kmsg.NewPtrFetchRequest()
		req.Version = 11
		req.ReplicaID = -1
		req.MaxWaitMillis = maxWaitMs
		req.MinBytes = minBytes
		req.MaxBytes = 1 << 20
		req.SessionEpoch = -1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		for p := range int32(3) {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition = p
			rp.PartitionMaxBytes = 1 << 20
			rp.CurrentLeaderEpoch = -1
			rp.LogStartOffset = -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		return req
	}
	type result struct {
		resp    *kmsg.FetchResponse
		err     error
		elapsed time.Duration
	}
	send := func(req *kmsg.FetchRequest) <-chan result {
		c, err := net.DialTimeout("tcp", b.Addr(), 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		done := make(chan result, 1)
		start := time.Now()
		go func() {
			resp, err := roundTrip(c, req, 2*time.Minute)
			r := result{err: err, elapsed: time.Since(start)}
			if err == nil {
				r.resp = resp.(*kmsg.FetchResponse)
			}
			done <- r
		}()
		return done
	}
	withData := func(r result) []int32 {
		t.Helper()
		if r.err != nil {
			t.Fatalf("fetch: %v", r.err)
		}
		var got []int32
		for _, rt := range r.resp.Topics {
			for _, rp := range rt.Partitions {
				if rp.ErrorCode != 0 {
					t.Fatalf("partition %d: error code %d", rp.Partition, rp.ErrorCode)
				}
				if len(rp.RecordBatches) > 0 {
					got = append(got, rp.Partition)
				}
			}
		}
		return got
	}
	parked := func(n int) {
		t.Helper()
		testutil.Eventually(t, 30*time.Second, func() error {
			if w := reps.DelayedStats().Waiting; w != n {
				return fmt.Errorf("%d operations waiting, want %d", w, n)
			}
			return nil
		})
	}

	before := reps.DelayedStats()
	done := send(fetchReq(3*size, int32(time.Hour/time.Millisecond)))
	parked(1)
	for p := range int32(3) {
		if r := produceRawAcks(t, b.Addr(), 1, topic, p, batch); r.ErrorCode != 0 {
			t.Fatalf("produce to %d: error code %d", p, r.ErrorCode)
		}
		part, err := reps.Leader(storage.TopicPartition{Topic: topic, Partition: p})
		if err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, 30*time.Second, func() error {
			if hw := part.HighWatermark(); hw != 1 {
				return fmt.Errorf("partition %d high watermark %d, want 1", p, hw)
			}
			return nil
		})
	}
	var r result
	select {
	case r = <-done:
	case <-time.After(time.Minute):
		t.Fatal("fetch not answered a minute after min_bytes were there")
	}
	if got := withData(r); fmt.Sprint(got) != "[0 1 2]" {
		t.Fatalf("fetch answered with data on partitions %v, want [0 1 2]", got)
	}
	after := reps.DelayedStats()
	if d := after.Satisfied - before.Satisfied; d != 1 {
		t.Fatalf("%d operations completed as satisfied for one Fetch, want 1", d)
	}

	// min_bytes never reached: the answer at max_wait_ms holds the three
	// batches there are.
	const maxWait = 300 * time.Millisecond
	r = <-send(fetchReq(10*size, int32(maxWait/time.Millisecond)))
	if got := withData(r); fmt.Sprint(got) != "[0 1 2]" || r.elapsed < maxWait {
		t.Fatalf("fetch answered after %v with data on partitions %v, want [0 1 2] at its max_wait_ms %v", r.elapsed, got, maxWait)
	}
	if d := reps.DelayedStats().Expired - after.Expired; d != 1 {
		t.Fatalf("%d operations expired, want 1", d)
	}
}
