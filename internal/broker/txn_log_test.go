package broker_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/record"
	"samsa/internal/replica"
	"samsa/internal/storage"
	"samsa/internal/testutil"
)

// txnBatch returns a transactional batch of n records from producer pid
// at epoch, first sequence seq, with values "<tag>-<i>" (pid -1: a plain
// batch).
func txnBatch(t *testing.T, pid int64, epoch int16, seq int32, n int, tag string) []byte {
	t.Helper()
	bb := record.NewBuilder(record.CodecNone, time.Now().UnixMilli())
	if pid >= 0 {
		bb.ProducerID, bb.ProducerEpoch, bb.BaseSequence, bb.Transactional = pid, epoch, seq, true
	}
	for i := 0; i < n; i++ {
		bb.Add(record.Record{TimestampDelta: int64(i), Value: []byte(fmt.Sprintf("%s-%d", tag, i))})
	}
	b, err := bb.Build()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// txnEnv is a broker with one topic of one partition and the partition
// itself, whose markers a test writes as the transaction coordinator
// would (replica.Partition.AppendMarker).
type txnEnv struct {
	t     *testing.T
	b     *testutil.Broker
	cl    *kgo.Client
	topic string
	p     *replica.Partition
}

func newTxnEnv(t *testing.T, topic string) *txnEnv {
	t.Helper()
	b := testutil.StartBroker(t)
	testutil.CreateTopic(t, b.Admin(), topic, 1)
	e := &txnEnv{t: t, b: b, cl: b.Client(), topic: topic}
	testutil.Eventually(t, 10*time.Second, func() error {
		p, err := b.Node.Broker().Replicas().Leader(storage.TopicPartition{Topic: topic, Partition: 0})
		e.p = p
		return err
	})
	return e
}

func (e *txnEnv) produce(what string, records []byte, base int64) {
	e.t.Helper()
	wantProduce(e.t, what, produceRaw(e.t, e.cl, -1, e.topic, 0, records), 0, base)
}

// marker writes a COMMIT or ABORT marker for pid and waits until it is
// committed; it returns the marker's offset.
func (e *txnEnv) marker(pid int64, epoch int16, commit bool) int64 {
	e.t.Helper()
	res, err := e.p.AppendMarker(pid, epoch, commit, 0, time.Now().UnixMilli())
	if err != nil {
		e.t.Fatalf("AppendMarker: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.p.WaitCommitted(ctx, res.LastOffset+1, res.LeaderEpoch); err != nil {
		e.t.Fatalf("marker not committed: %v", err)
	}
	return res.BaseOffset
}

// listOffsetAt is ListOffsets v7 at an isolation level.
func (e *txnEnv) listOffsetAt(isolation int8, ts int64) int64 {
	e.t.Helper()
	off, err := listOffsetIsolation(e.t, e.cl, e.topic, isolation, ts)
	if err != nil {
		e.t.Fatalf("ListOffsets: %v", err)
	}
	return off
}

// listOffsetIsolation is ListOffsets v7 for partition 0 at an isolation
// level.
func listOffsetIsolation(t *testing.T, cl *kgo.Client, topic string, isolation int8, ts int64) (int64, error) {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version = 7
	req.ReplicaID = -1
	req.IsolationLevel = isolation
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp, rp.CurrentLeaderEpoch = ts, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := request[*kmsg.ListOffsetsResponse](t, cl, req)
	sp := resp.Topics[0].Partitions[0]
	return sp.Offset, kerr.ErrorForCode(sp.ErrorCode)
}

// fetchAt is a raw Fetch from offset at an isolation level.
func (e *txnEnv) fetchAt(isolation int8, offset int64) kmsg.FetchResponseTopicPartition {
	e.t.Helper()
	sp := fetchRaw(e.t, e.cl, e.topic, 0, offset, func(r *kmsg.FetchRequest) { r.IsolationLevel = isolation })
	if err := kerr.ErrorForCode(sp.ErrorCode); err != nil {
		e.t.Fatalf("Fetch: %v", err)
	}
	return sp
}

// batchesIn returns the offset ranges of the batches in a fetch response.
func batchesIn(t *testing.T, buf []byte) (firsts, lasts []int64) {
	t.Helper()
	for len(buf) > 0 {
		b, rest, err := record.Split(buf)
		if err != nil {
			t.Fatal(err)
		}
		firsts, lasts = append(firsts, b.BaseOffset()), append(lasts, b.LastOffset())
		buf = rest
	}
	return firsts, lasts
}

// consumeValues reads the partition from the start at isolation until it
// has want values, then a little longer to catch any extra record, and
// returns the values in offset order.
func consumeValues(t *testing.T, addr, topic string, committed bool, want int) []string {
	t.Helper()
	opts := []kgo.Opt{
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxWait(200 * time.Millisecond),
	}
	if committed {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	cl := testutil.NewClient(t, addr, opts...)
	defer cl.Close()
	var got []string
	deadline := time.Now().Add(15 * time.Second)
	quietUntil := time.Time{}
	for time.Now().Before(deadline) {
		if len(got) >= want && quietUntil.IsZero() {
			quietUntil = time.Now().Add(time.Second)
		}
		if !quietUntil.IsZero() && time.Now().After(quietUntil) {
			break
		}
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		fs := cl.PollFetches(ctx)
		cancel()
		fs.EachError(func(_ string, _ int32, err error) {
			if err != context.DeadlineExceeded {
				t.Errorf("consume: %v", err)
			}
		})
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	return got
}

// TestReadCommittedSeesOnlyCommittedRecords: Reference: KIP-98. A consumer
// at read_committed reads below the last stable offset only, never the
// records of an aborted transaction, and nothing from an open transaction
// on; Fetch and ListOffsets report the last stable offset; a consumer at
// read_uncommitted sees every record.
func TestReadCommittedSeesOnlyCommittedRecords(t *testing.T) {
	t.Parallel()
	e := newTxnEnv(t, "txn-rc")
	pa, pb := newProducerID(t, e.cl), newProducerID(t, e.cl)

	e.produce("A begins", txnBatch(t, pa, 0, 0, 2, "a-commit"), 0) // 0..1
	e.produce("plain", txnBatch(t, -1, 0, 0, 1, "plain"), 2)       // 2
	e.produce("B begins", txnBatch(t, pb, 0, 0, 2, "b-abort"), 3)  // 3..4
	if off := e.marker(pa, 0, true); off != 5 {
		t.Fatalf("commit marker at %d, want 5", off)
	}
	e.produce("B continues", txnBatch(t, pb, 0, 2, 1, "b-abort2"), 6) // 6
	if off := e.marker(pb, 0, false); off != 7 {
		t.Fatalf("abort marker at %d, want 7", off)
	}
	openTs := time.Now().Add(30 * time.Minute).UnixMilli() // ahead of every other record, within message.timestamp.after.max.ms
	bb := record.NewBuilder(record.CodecNone, openTs)
	bb.ProducerID, bb.ProducerEpoch, bb.BaseSequence, bb.Transactional = pa, 0, 2, true
	bb.Add(record.Record{Value: []byte("a-open-0")})
	bb.Add(record.Record{TimestampDelta: 1, Value: []byte("a-open-1")})
	open, err := bb.Build()
	if err != nil {
		t.Fatal(err)
	}
	e.produce("A begins again", open, 8)                           // 8..9, left open
	e.produce("plain after", txnBatch(t, -1, 0, 0, 1, "late"), 10) // 10

	// DescribeProducers names the open transaction that holds the last
	// stable offset.
	aps := describeProducers(t, e.cl, e.topic, 1)[0]
	if len(aps) != 2 {
		t.Fatalf("DescribeProducers: %d producers, want 2", len(aps))
	}
	for _, ap := range aps {
		want := map[int64]int64{pa: 8, pb: -1}[ap.ProducerID]
		if ap.CurrentTxnStartOffset != want {
			t.Fatalf("DescribeProducers: producer %d current transaction start %d, want %d", ap.ProducerID, ap.CurrentTxnStartOffset, want)
		}
	}

	// ListOffsets: LATEST is the last stable offset at read_committed and
	// the high watermark at read_uncommitted; a timestamp lookup at
	// read_committed finds nothing at or past the last stable offset.
	if got := e.listOffsetAt(1, -1); got != 8 {
		t.Fatalf("ListOffsets LATEST read_committed = %d, want 8 (the open transaction's start)", got)
	}
	if got := e.listOffsetAt(0, -1); got != 11 {
		t.Fatalf("ListOffsets LATEST read_uncommitted = %d, want 11", got)
	}
	if got := e.listOffsetAt(1, openTs); got != -1 {
		t.Fatalf("ListOffsets by the open transaction's timestamp at read_committed = %d, want -1", got)
	}
	if got := e.listOffsetAt(0, openTs); got != 8 {
		t.Fatalf("ListOffsets by timestamp at read_uncommitted = %d, want 8", got)
	}

	// Fetch at read_committed: up to the last stable offset, with B's
	// aborted transaction; at read_uncommitted: up to the high watermark,
	// AbortedTransactions null. Both carry the last stable offset.
	rc := e.fetchAt(1, 0)
	if rc.HighWatermark != 11 || rc.LastStableOffset != 8 {
		t.Fatalf("read_committed fetch: high watermark %d, last stable offset %d; want 11, 8", rc.HighWatermark, rc.LastStableOffset)
	}
	if _, lasts := batchesIn(t, rc.RecordBatches); len(lasts) == 0 || lasts[len(lasts)-1] != 7 {
		t.Fatalf("read_committed fetch returned batches ending %v, want the last to end at 7", lasts)
	}
	if a := rc.AbortedTransactions; len(a) != 1 || a[0].ProducerID != pb || a[0].FirstOffset != 3 {
		t.Fatalf("read_committed AbortedTransactions = %+v, want producer %d from offset 3", a, pb)
	}
	if rc := e.fetchAt(1, 5); len(rc.AbortedTransactions) != 1 {
		t.Fatalf("read_committed fetch from 5: AbortedTransactions %+v, want B's (its marker is at 7)", rc.AbortedTransactions)
	}
	if rc := e.fetchAt(1, 8); len(rc.RecordBatches) != 0 || rc.AbortedTransactions == nil || len(rc.AbortedTransactions) != 0 {
		t.Fatalf("read_committed fetch at the last stable offset: %d bytes, AbortedTransactions %#v; want none and an empty list", len(rc.RecordBatches), rc.AbortedTransactions)
	}
	ru := e.fetchAt(0, 0)
	if ru.HighWatermark != 11 || ru.LastStableOffset != 8 || ru.AbortedTransactions != nil {
		t.Fatalf("read_uncommitted fetch: high watermark %d, last stable offset %d, aborted %#v; want 11, 8, null", ru.HighWatermark, ru.LastStableOffset, ru.AbortedTransactions)
	}
	if _, lasts := batchesIn(t, ru.RecordBatches); lasts[len(lasts)-1] != 10 {
		t.Fatalf("read_uncommitted fetch ends at %d, want 10", lasts[len(lasts)-1])
	}

	// Real clients.
	committed := []string{"a-commit-0", "a-commit-1", "plain-0"}
	if got := consumeValues(t, e.b.Addr(), e.topic, true, len(committed)); !slices.Equal(got, committed) {
		t.Fatalf("read_committed consumer got %q, want %q", got, committed)
	}
	all := []string{"a-commit-0", "a-commit-1", "plain-0", "b-abort-0", "b-abort-1", "b-abort2-0", "a-open-0", "a-open-1", "late-0"}
	if got := consumeValues(t, e.b.Addr(), e.topic, false, len(all)); !slices.Equal(got, all) {
		t.Fatalf("read_uncommitted consumer got %q, want %q", got, all)
	}

	// A's commit releases the rest.
	e.marker(pa, 0, true) // 11
	if got := e.listOffsetAt(1, -1); got != 12 {
		t.Fatalf("ListOffsets LATEST read_committed after the commit = %d, want 12", got)
	}
	if got := e.listOffsetAt(1, openTs); got != 8 {
		t.Fatalf("ListOffsets by timestamp at read_committed after the commit = %d, want 8", got)
	}
	committed = append(committed, "a-open-0", "a-open-1", "late-0")
	if got := consumeValues(t, e.b.Addr(), e.topic, true, len(committed)); !slices.Equal(got, committed) {
		t.Fatalf("read_committed consumer after the commit got %q, want %q", got, committed)
	}
}

// TestReadCommittedFetchWakesWhenTransactionEnds: a read_committed fetch
// waiting at the last stable offset (min_bytes 1) is answered when the
// marker moves it, long before max_wait_ms.
func TestReadCommittedFetchWakesWhenTransactionEnds(t *testing.T) {
	t.Parallel()
	e := newTxnEnv(t, "txn-wake")
	pid := newProducerID(t, e.cl)
	e.produce("begin", txnBatch(t, pid, 0, 0, 3, "w"), 0)
	if got := e.listOffsetAt(1, -1); got != 0 {
		t.Fatalf("last stable offset %d, want 0", got)
	}
	done := make(chan kmsg.FetchResponseTopicPartition, 1)
	start := time.Now()
	go func() {
		done <- fetchRaw(t, e.cl, e.topic, 0, 0, func(r *kmsg.FetchRequest) {
			r.IsolationLevel, r.MinBytes, r.MaxWaitMillis = 1, 1, 20000
		})
	}()
	time.Sleep(300 * time.Millisecond)
	select {
	case sp := <-done:
		t.Fatalf("fetch answered before the commit with %d bytes", len(sp.RecordBatches))
	default:
	}
	e.marker(pid, 0, true)
	select {
	case sp := <-done:
		// The records are stable once the marker is appended; the marker
		// itself (3) may or may not be committed yet when the fetch wakes.
		_, lasts := batchesIn(t, sp.RecordBatches)
		if len(lasts) == 0 || lasts[0] != 2 || len(lasts) > 2 || (len(lasts) == 2 && lasts[1] != 3) || sp.LastStableOffset < 3 {
			t.Fatalf("fetch after the commit: batches ending %v, last stable offset %d; want one ending at 2 (then perhaps the marker at 3) and >= 3", lasts, sp.LastStableOffset)
		}
		if waited := time.Since(start); waited > 10*time.Second {
			t.Fatalf("fetch answered after %v", waited)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("fetch not answered after the commit")
	}
}

// TestFollowersReplayTransactionsAndTakeOver: followers replay the
// leader's transactional batches and markers, so they hold the same open
// transactions and aborted transactions; after the leader dies the new
// leader keeps the last stable offset at the open transaction and ends it
// with the next marker.
func TestFollowersReplayTransactionsAndTakeOver(t *testing.T) {
	t.Parallel()
	c := replicatedCluster(t)
	topic := "txn-rep"
	cl := c.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if resp, err := c.Admin().CreateTopic(ctx, 1, 3, nil, topic); err != nil || resp.Err != nil {
		t.Fatalf("create topic: %v %v", err, resp.Err)
	}
	waitFullISR(t, c, topic, 1)
	tp := storage.TopicPartition{Topic: topic}
	partitionOn := func(i int32) *replica.Partition {
		p := c.Brokers[i].Node.Broker().Replicas().Get(tp)
		if p == nil {
			t.Fatalf("broker %d does not host %s", i, topic)
		}
		return p
	}
	// produce retries while the client's idea of the leader is stale.
	produce := func(what string, records []byte, base int64) {
		t.Helper()
		var got kmsg.ProduceResponseTopicPartition
		testutil.Eventually(t, 20*time.Second, func() error {
			got = produceRaw(t, cl, -1, topic, 0, records)
			if got.ErrorCode == kerr.NotLeaderForPartition.Code {
				return kerr.NotLeaderForPartition
			}
			return nil
		})
		wantProduce(t, what, got, 0, base)
	}
	pa, pb := newProducerID(t, cl), newProducerID(t, cl)
	produce("A", txnBatch(t, pa, 0, 0, 2, "a"), 0) // 0..1
	leader := c.Leader(topic, 0)
	res, err := partitionOn(leader).AppendMarker(pa, 0, false, 0, time.Now().UnixMilli()) // 2
	if err != nil {
		t.Fatal(err)
	}
	if err := partitionOn(leader).WaitCommitted(ctx, res.LastOffset+1, res.LeaderEpoch); err != nil {
		t.Fatal(err)
	}
	produce("B", txnBatch(t, pb, 0, 0, 2, "b"), 3) // 3..4, open
	aborted := storage.AbortedTxn{ProducerID: pa, FirstOffset: 0, LastOffset: 2, LastStableOffset: 3}
	for i := range int32(3) {
		testutil.Eventually(t, 20*time.Second, func() error {
			p := partitionOn(i)
			if got := p.AbortedTxns(0, 5); len(got) != 1 || got[0] != aborted {
				return fmt.Errorf("broker %d: aborted transactions %+v, want %+v", i, got, aborted)
			}
			if first, _, ok := p.OngoingTxn(pb); !ok || first != 3 {
				return fmt.Errorf("broker %d: OngoingTxn(B) = %d, %v; want 3, true", i, first, ok)
			}
			if p.LogEndOffset() != 5 {
				return fmt.Errorf("broker %d: log end %d", i, p.LogEndOffset())
			}
			return nil
		})
	}

	c.Kill(int(leader))
	var next int32
	testutil.Eventually(t, 30*time.Second, func() error {
		next = c.Leader(topic, 0)
		if next < 0 || next == leader || !partitionOn(next).IsLeader() {
			return fmt.Errorf("leader is %d", next)
		}
		return nil
	})
	testutil.Eventually(t, 20*time.Second, func() error {
		off, err := listOffsetIsolation(t, cl, topic, 1, -1)
		if err != nil || off != 3 {
			return fmt.Errorf("read_committed LATEST on the new leader: %d, %v; want 3", off, err)
		}
		return nil
	})
	p := partitionOn(next)
	res, err = p.AppendMarker(pb, 0, true, 0, time.Now().UnixMilli()) // 5
	if err != nil {
		t.Fatal(err)
	}
	if err := p.WaitCommitted(ctx, res.LastOffset+1, res.LeaderEpoch); err != nil {
		t.Fatal(err)
	}
	if off, err := listOffsetIsolation(t, cl, topic, 1, -1); err != nil || off != 6 {
		t.Fatalf("read_committed LATEST after the commit: %d, %v; want 6", off, err)
	}
}
