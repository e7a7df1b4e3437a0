package broker_test

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/record"
	"samsa/internal/testutil"
)

// idemBatch returns an idempotent batch of n records from producer pid at
// epoch, first sequence seq, with values "<tag>-<i>".
func idemBatch(t *testing.T, pid int64, epoch int16, seq int32, n int, tag string) []byte {
	t.Helper()
	bb := record.NewBuilder(record.CodecNone, time.Now().UnixMilli())
	bb.ProducerID, bb.ProducerEpoch, bb.BaseSequence = pid, epoch, seq
	for i := 0; i < n; i++ {
		bb.Add(record.Record{
			TimestampDelta: int64(i),
			Key:            []byte(fmt.Sprintf("k%d", i)),
			Value:          []byte(fmt.Sprintf("%s-%d", tag, i)),
		})
	}
	b, err := bb.Build()
	if err != nil {
		t.Fatalf("build batch: %v", err)
	}
	return b
}

// initProducerID sends InitProducerId (the highest version both sides
// support, v4) with pid and epoch (-1, -1 for a new id) and returns the
// response.
func initProducerID(t *testing.T, cl *kgo.Client, pid int64, epoch int16) *kmsg.InitProducerIDResponse {
	t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.ProducerID, req.ProducerEpoch = pid, epoch
	req.TransactionTimeoutMillis = 60000
	resp := request[*kmsg.InitProducerIDResponse](t, cl, req)
	if resp.Version < 3 {
		t.Fatalf("InitProducerId sent at v%d, want v3+", resp.Version)
	}
	return resp
}

// newProducerID returns a fresh producer id at epoch 0.
func newProducerID(t *testing.T, cl *kgo.Client) int64 {
	t.Helper()
	resp := initProducerID(t, cl, -1, -1)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		t.Fatalf("InitProducerId: %v", err)
	}
	if resp.ProducerID < 0 || resp.ProducerEpoch != 0 {
		t.Fatalf("InitProducerId: id %d epoch %d, want id >= 0 epoch 0", resp.ProducerID, resp.ProducerEpoch)
	}
	return resp.ProducerID
}

// logEnd returns the log end offset of topic/partition.
func logEnd(t *testing.T, cl *kgo.Client, topic string, partition int32) int64 {
	t.Helper()
	off, _, code := listOffset(t, cl, topic, partition, -1)
	if err := kerr.ErrorForCode(code); err != nil {
		t.Fatalf("list offsets %s/%d: %v", topic, partition, err)
	}
	return off
}

// wantProduce checks a produce answer's error code and, for success, its
// base offset.
func wantProduce(t *testing.T, what string, got kmsg.ProduceResponseTopicPartition, code int16, base int64) {
	t.Helper()
	if got.ErrorCode != code {
		t.Fatalf("%s: error %v, want %v", what, kerr.ErrorForCode(got.ErrorCode), kerr.ErrorForCode(code))
	}
	if code == 0 && got.BaseOffset != base {
		t.Fatalf("%s: base offset %d, want %d", what, got.BaseOffset, base)
	}
}

// idemSetup starts a broker with topic (partitions) and returns it and a
// client.
func idemSetup(t *testing.T, topic string, partitions int32) (*testutil.Broker, *kgo.Client) {
	t.Helper()
	b := testutil.StartBroker(t)
	testutil.CreateTopic(t, b.Admin(), topic, partitions)
	return b, b.Client()
}

// TestIdempotentRetryOfLastFiveBatchesReturnsOriginalOffsets checks the
// dedupe window: a retry of each of the producer's last five batches gets
// the offset it was first written at and no error, and nothing is written
// again; a retry older than the window is out of order. Reference: KIP-98.
func TestIdempotentRetryOfLastFiveBatchesReturnsOriginalOffsets(t *testing.T) {
	const topic, per = "idem-window", 3
	_, cl := idemSetup(t, topic, 1)
	pid := newProducerID(t, cl)

	var batches [][]byte
	for i := 0; i < 8; i++ {
		bt := idemBatch(t, pid, 0, int32(i*per), per, fmt.Sprintf("b%d", i))
		batches = append(batches, bt)
		wantProduce(t, fmt.Sprintf("batch %d", i), produceRaw(t, cl, -1, topic, 0, bt), 0, int64(i*per))
	}
	end := logEnd(t, cl, topic, 0)
	if end != 8*per {
		t.Fatalf("log end %d after 8 batches, want %d", end, 8*per)
	}
	// Newest first and oldest first: each is answered on its own.
	for _, i := range []int{7, 3, 5, 4, 6} {
		got := produceRaw(t, cl, -1, topic, 0, batches[i])
		wantProduce(t, fmt.Sprintf("retry of batch %d", i), got, 0, int64(i*per))
	}
	if got := logEnd(t, cl, topic, 0); got != end {
		t.Fatalf("log end %d after retries, want %d (a retry was written again)", got, end)
	}
	// Batch 2 has left the window of five.
	got := produceRaw(t, cl, -1, topic, 0, batches[2])
	wantProduce(t, "retry of batch 2 (outside the window)", got, kerr.OutOfOrderSequenceNumber.Code, 0)
	// The producer goes on where it was.
	got = produceRaw(t, cl, -1, topic, 0, idemBatch(t, pid, 0, 8*per, per, "b8"))
	wantProduce(t, "batch 8", got, 0, end)

	vals := idemReadAll(t, cl, topic, 0, end+per)
	for i, v := range vals {
		if want := fmt.Sprintf("b%d-%d", i/per, i%per); v != want {
			t.Fatalf("offset %d holds %q, want %q", i, v, want)
		}
	}
}

// idemReadAll fetches partition from offset 0 up to end with raw Fetch
// requests and returns the values in offset order, failing on a missing
// or extra offset.
func idemReadAll(t *testing.T, cl *kgo.Client, topic string, partition int32, end int64) []string {
	t.Helper()
	var out []string
	for off := int64(0); off < end; {
		fp := fetchRaw(t, cl, topic, partition, off, nil)
		if err := kerr.ErrorForCode(fp.ErrorCode); err != nil {
			t.Fatalf("fetch %s/%d@%d: %v", topic, partition, off, err)
		}
		n := len(out)
		buf := fp.RecordBatches
		for len(buf) > 0 {
			b, rest, err := record.Split(buf)
			if err != nil {
				break // a partial batch at the end of the answer
			}
			buf = rest
			recs, err := b.Records(1 << 20)
			if err != nil {
				t.Fatalf("decode batch at %d: %v", b.BaseOffset(), err)
			}
			for i := range recs {
				o := recs[i].Offset(b)
				if o < off || o >= end {
					continue
				}
				if o != int64(len(out)) {
					t.Fatalf("record at offset %d, want %d", o, len(out))
				}
				out = append(out, string(recs[i].Value))
			}
		}
		if len(out) == n {
			t.Fatalf("fetch %s/%d@%d returned no records below %d", topic, partition, off, end)
		}
		off = int64(len(out))
	}
	return out
}

// TestIdempotentSequenceGapIsOutOfOrderAndNotWritten checks that a batch
// whose first sequence skips ahead is refused with
// OUT_OF_ORDER_SEQUENCE_NUMBER and nothing of it is written; the next
// batch in order is then accepted. Reference: KIP-98.
func TestIdempotentSequenceGapIsOutOfOrderAndNotWritten(t *testing.T) {
	const topic = "idem-gap"
	_, cl := idemSetup(t, topic, 1)
	pid := newProducerID(t, cl)
	wantProduce(t, "seq 0", produceRaw(t, cl, -1, topic, 0, idemBatch(t, pid, 0, 0, 3, "a")), 0, 0)
	for _, seq := range []int32{4, 5, 100} {
		got := produceRaw(t, cl, -1, topic, 0, idemBatch(t, pid, 0, seq, 2, "gap"))
		wantProduce(t, fmt.Sprintf("seq %d after 0..2", seq), got, kerr.OutOfOrderSequenceNumber.Code, 0)
	}
	if end := logEnd(t, cl, topic, 0); end != 3 {
		t.Fatalf("log end %d after refused batches, want 3", end)
	}
	wantProduce(t, "seq 3", produceRaw(t, cl, -1, topic, 0, idemBatch(t, pid, 0, 3, 2, "b")), 0, 3)
	if end := logEnd(t, cl, topic, 0); end != 5 {
		t.Fatalf("log end %d, want 5", end)
	}
}

// TestIdempotentProducerErrors checks the refusals for bad producer
// fields, each leaving the log as it was.
func TestIdempotentProducerErrors(t *testing.T) {
	const topic = "idem-errors"
	b, cl := idemSetup(t, topic, 4)
	pid := newProducerID(t, cl)
	other := newProducerID(t, cl)
	wantProduce(t, "seq 0", produceRaw(t, cl, -1, topic, 0, idemBatch(t, pid, 0, 0, 2, "a")), 0, 0)
	testutil.CreateTopic(t, b.Admin(), topic+"-scratch", 1)
	waitProducerIDRefused(t, b.Addr(), topic+"-scratch", idemBatch(t, 1<<40, 0, 0, 1, "x"))

	for _, tc := range []struct {
		name      string
		partition int32
		batch     []byte
		code      int16
	}{
		// Reference: KIP-98. No broker issued this id.
		{"never issued id", 1, idemBatch(t, 1<<40, 0, 0, 1, "x"), kerr.UnknownProducerID.Code},
		// An idempotent batch must carry a sequence.
		{"negative sequence", 0, idemBatch(t, pid, 0, -1, 1, "x"), kerr.InvalidRecord.Code},
		{"negative sequence, new partition", 2, idemBatch(t, pid, 0, -5, 1, "x"), kerr.InvalidRecord.Code},
		// Reference: KIP-360. An issued id the partition does not know
		// may only start at sequence 0.
		{"issued id unknown to the partition, seq > 0", 3, idemBatch(t, other, 0, 7, 1, "x"), kerr.UnknownProducerID.Code},
		{"known id, unknown partition, seq > 0", 1, idemBatch(t, pid, 0, 2, 1, "x"), kerr.UnknownProducerID.Code},
		{"gap", 0, idemBatch(t, pid, 0, 3, 1, "x"), kerr.OutOfOrderSequenceNumber.Code},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := logEnd(t, cl, topic, tc.partition)
			got := produceRaw(t, cl, -1, topic, tc.partition, tc.batch)
			wantProduce(t, tc.name, got, tc.code, 0)
			if after := logEnd(t, cl, topic, tc.partition); after != before {
				t.Fatalf("log end %d -> %d: a refused batch was written", before, after)
			}
		})
	}
}

// TestInitProducerIDBumpsEpochAndFencesTheOldOne checks KIP-360: an
// InitProducerId v3+ with the current id and epoch keeps the id and bumps
// the epoch; the producer writes at sequence 0 of the new epoch, and a
// batch at the old epoch is refused with INVALID_PRODUCER_EPOCH.
func TestInitProducerIDBumpsEpochAndFencesTheOldOne(t *testing.T) {
	const topic = "idem-epoch"
	_, cl := idemSetup(t, topic, 1)
	pid := newProducerID(t, cl)
	wantProduce(t, "e0 seq 0", produceRaw(t, cl, -1, topic, 0, idemBatch(t, pid, 0, 0, 4, "e0")), 0, 0)

	resp := initProducerID(t, cl, pid, 0)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		t.Fatalf("InitProducerId bump: %v", err)
	}
	if resp.ProducerID != pid || resp.ProducerEpoch != 1 {
		t.Fatalf("InitProducerId bump: id %d epoch %d, want id %d epoch 1", resp.ProducerID, resp.ProducerEpoch, pid)
	}
	// A new epoch restarts at sequence 0 (seq 4 would have been next).
	wantProduce(t, "e1 seq 0", produceRaw(t, cl, -1, topic, 0, idemBatch(t, pid, 1, 0, 2, "e1")), 0, 4)
	wantProduce(t, "e1 seq 2", produceRaw(t, cl, -1, topic, 0, idemBatch(t, pid, 1, 2, 2, "e1b")), 0, 6)
	// The old epoch is fenced, even with the sequence it would have used.
	got := produceRaw(t, cl, -1, topic, 0, idemBatch(t, pid, 0, 4, 1, "zombie"))
	wantProduce(t, "e0 seq 4 after bump", got, kerr.InvalidProducerEpoch.Code, 0)
	// A new epoch that does not start at 0 is out of order.
	got = produceRaw(t, cl, -1, topic, 0, idemBatch(t, pid, 2, 5, 1, "e2"))
	wantProduce(t, "e2 seq 5", got, kerr.OutOfOrderSequenceNumber.Code, 0)
	if end := logEnd(t, cl, topic, 0); end != 8 {
		t.Fatalf("log end %d, want 8", end)
	}

	dp := describeProducers(t, cl, topic, 1)[0]
	if len(dp) != 1 || dp[0].ProducerID != pid || dp[0].ProducerEpoch != 1 || dp[0].LastSequence != 3 {
		t.Fatalf("DescribeProducers: %+v, want id %d epoch 1 last sequence 3", dp, pid)
	}
}

// TestIdempotentDedupeSurvivesCleanRestart checks that producer state is
// kept across a clean shutdown: after a restart, a retry of the last batch
// is answered as a duplicate at its original offset, not written again,
// and the next sequence is accepted.
func TestIdempotentDedupeSurvivesCleanRestart(t *testing.T) {
	const topic = "idem-restart"
	b, cl := idemSetup(t, topic, 2)
	pid := newProducerID(t, cl)
	var last [2][]byte
	for p := int32(0); p < 2; p++ {
		for i := 0; i < 4; i++ {
			bt := idemBatch(t, pid, 0, int32(i*5), 5, fmt.Sprintf("p%d-b%d", p, i))
			wantProduce(t, fmt.Sprintf("p%d batch %d", p, i), produceRaw(t, cl, -1, topic, p, bt), 0, int64(i*5))
			last[p] = bt
		}
	}
	b.Restart()
	cl = b.Client()
	// The restarted process leads again only once the controller has
	// elected it at a new leader epoch (a new incarnation).
	testutil.Eventually(t, 20*time.Second, func() error {
		for p := int32(0); p < 2; p++ {
			if st, ok := b.Node.Image().Partition(topic, p); !ok || st.Leader != 0 || st.LeaderIncarnation != b.Node.Cluster().Incarnation() {
				return fmt.Errorf("partition %d: leader %d incarnation %q", p, st.Leader, st.LeaderIncarnation)
			}
		}
		return nil
	})
	for p := int32(0); p < 2; p++ {
		// A retry is a duplicate however often it is sent; the broker
		// may take a moment to act on the election it is in the image.
		got := produceRaw(t, cl, -1, topic, p, last[p])
		for deadline := time.Now().Add(10 * time.Second); got.ErrorCode == kerr.NotLeaderForPartition.Code && time.Now().Before(deadline); {
			time.Sleep(20 * time.Millisecond)
			got = produceRaw(t, cl, -1, topic, p, last[p])
		}
		wantProduce(t, fmt.Sprintf("p%d retry of the last batch after restart", p), got, 0, 15)
		if end := logEnd(t, cl, topic, p); end != 20 {
			t.Fatalf("p%d: log end %d after the retry, want 20 (the retry was written again)", p, end)
		}
	}
	got := produceRaw(t, cl, -1, topic, 0, idemBatch(t, pid, 0, 20, 1, "next"))
	wantProduce(t, "next sequence after restart", got, 0, 20)
	got = produceRaw(t, cl, -1, topic, 1, idemBatch(t, pid, 0, 21, 1, "gap"))
	wantProduce(t, "gap after restart", got, kerr.OutOfOrderSequenceNumber.Code, 0)
}

// describeProducers returns the active producers DescribeProducers lists
// for partitions 0..n-1 of topic.
func describeProducers(t *testing.T, cl *kgo.Client, topic string, n int32) [][]kmsg.DescribeProducersResponseTopicPartitionActiveProducer {
	t.Helper()
	req := kmsg.NewPtrDescribeProducersRequest()
	rt := kmsg.NewDescribeProducersRequestTopic()
	rt.Topic = topic
	for p := int32(0); p < n; p++ {
		rt.Partitions = append(rt.Partitions, p)
	}
	req.Topics = append(req.Topics, rt)
	resp := request[*kmsg.DescribeProducersResponse](t, cl, req)
	out := make([][]kmsg.DescribeProducersResponseTopicPartitionActiveProducer, n)
	seen := 0
	for _, st := range resp.Topics {
		for _, sp := range st.Partitions {
			if err := kerr.ErrorForCode(sp.ErrorCode); err != nil {
				t.Fatalf("DescribeProducers %s/%d: %v", st.Topic, sp.Partition, err)
			}
			if st.Topic != topic || sp.Partition < 0 || sp.Partition >= n {
				t.Fatalf("DescribeProducers: unexpected %s/%d", st.Topic, sp.Partition)
			}
			out[sp.Partition] = sp.ActiveProducers
			seen++
		}
	}
	if seen != int(n) {
		t.Fatalf("DescribeProducers answered %d partitions, want %d", seen, n)
	}
	return out
}

// s10Value is the value of record seq of partition p.
func s10Value(p int32, seq int) string { return fmt.Sprintf("p%d-%09d", p, seq) }

// idemConsume reads every partition of topic from 0 up to its end offset
// at the time of the call.
func idemConsume(t *testing.T, addr, topic string, partitions int32) map[int32][]*kgo.Record {
	t.Helper()
	adm := kadm.NewClient(testutil.NewClient(t, addr))
	ends, err := adm.ListEndOffsets(ctxT(t, 10*time.Second), topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		t.Fatalf("list end offsets: %v", err)
	}
	end := make(map[int32]int64)
	offs := make(map[int32]kgo.Offset)
	ends.Each(func(o kadm.ListedOffset) {
		end[o.Partition] = o.Offset
		offs[o.Partition] = kgo.NewOffset().At(0)
	})
	cl := testutil.NewClient(t, addr,
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offs}),
		kgo.FetchMaxWait(200*time.Millisecond))
	got := make(map[int32][]*kgo.Record)
	short := func() int {
		n := 0
		for p, e := range end {
			if rs := got[p]; e > 0 && (len(rs) == 0 || rs[len(rs)-1].Offset < e-1) {
				n++
			}
		}
		return n
	}
	ctx := ctxT(t, 60*time.Second)
	for short() > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consume: %d partitions short of %v", short(), end)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("consume %s/%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset < end[r.Partition] {
				got[r.Partition] = append(got[r.Partition], r)
			}
		})
	}
	if len(end) != int(partitions) {
		t.Fatalf("topic has %d partitions, want %d", len(end), partitions)
	}
	return got
}

// sequenceCheck counts, for the values of one partition in offset order,
// duplicates (a sequence seen before) and gaps (sequences skipped between
// two neighbours, or missing at the end below want).
type sequenceCheck struct {
	dups, gaps, reordered int
	firstProblem          string
}

func checkSequences(p int32, recs []*kgo.Record, want int) sequenceCheck {
	var c sequenceCheck
	seen := make(map[int]bool, len(recs))
	next := 0
	prefix := fmt.Sprintf("p%d-", p)
	note := func(format string, args ...any) {
		if c.firstProblem == "" {
			c.firstProblem = fmt.Sprintf(format, args...)
		}
	}
	for _, r := range recs {
		v := string(r.Value)
		s, err := strconv.Atoi(strings.TrimPrefix(v, prefix))
		if !strings.HasPrefix(v, prefix) || err != nil {
			c.reordered++
			note("offset %d holds %q, not a value of partition %d", r.Offset, v, p)
			continue
		}
		switch {
		case seen[s]:
			c.dups++
			note("offset %d: sequence %d again", r.Offset, s)
			continue
		case s < next:
			c.reordered++
			note("offset %d: sequence %d after %d", r.Offset, s, next-1)
		case s > next:
			c.gaps += s - next
			note("offset %d: sequence %d, expected %d", r.Offset, s, next)
		}
		seen[s] = true
		next = max(next, s+1)
	}
	if want > next {
		c.gaps += want - next
		note("last sequence %d, sent %d", next-1, want)
	}
	return c
}

// TestS10IdempotentProducerThroughFaultyProxy runs an idempotent producer
// with five produce requests in flight through a proxy that cuts
// connections right after a produce request reached the broker (the
// response is lost and the client retries a batch that was written),
// drops every connection now and then, and delays responses. Afterwards
// a direct consumer finds every record exactly once, in send order.
// Reference: KIP-98; TESTPLAN S-10.
func TestS10IdempotentProducerThroughFaultyProxy(t *testing.T) {
	const (
		topic      = "s10"
		partitions = 4
	)
	total := scaled(200_000, 10)
	b := testutil.StartBroker(t)
	testutil.CreateTopic(t, b.Admin(), topic, partitions)

	px := testutil.NewProxy(t, b.Addr())
	px.SetDropAPIKeys(0) // random cuts only after Produce requests
	px.SetDropProbability(0.3)
	px.SetResponseDelay(0, 10*time.Millisecond)

	cl := testutil.NewClient(t, px.Addr(),
		kgo.Dialer(px.Dialer()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		// NB: franz-go refuses MaxProduceRequestsInflightPerBroker with
		// idempotence; its idempotent sink always keeps up to five
		// produce requests in flight per broker, which is what this test
		// needs.
		kgo.RecordRetries(1<<30),
		kgo.ProduceRequestTimeout(5*time.Second),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchMaxBytes(16<<10),
		kgo.ProducerLinger(time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 20 * time.Millisecond }),
		// A connection cut before its first response makes franz-go
		// refresh metadata, at most once per MetadataMinAge (5 s by
		// default), and wait for it.
		kgo.MetadataMinAge(50*time.Millisecond),
	)

	// The fault loop: every 100 ms, one time in ten drop every
	// connection, and switch between short and long response delays.
	faultsDone := make(chan struct{})
	stopFaults := make(chan struct{})
	var dropAlls atomic.Int64
	go func() {
		defer close(faultsDone)
		rng := rand.New(rand.NewPCG(1, 2))
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stopFaults:
				return
			case <-tick.C:
			}
			if rng.IntN(10) == 0 {
				px.DropAll()
				dropAlls.Add(1)
			}
			if rng.IntN(2) == 0 {
				px.SetResponseDelay(20*time.Millisecond, 40*time.Millisecond)
			} else {
				px.SetResponseDelay(0, 10*time.Millisecond)
			}
		}
	}()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			close(stopFaults)
			<-faultsDone
		}
	}
	defer stop()

	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		errs     []error
		lastAck  [partitions]*kgo.Record // guarded by mu: highest acknowledged per partition
		acked    atomic.Int64
		sent     [partitions]int
		produced = ctxT(t, 120*time.Second)
	)
	began := time.Now()
	for i := 0; i < total; i++ {
		p := int32(i % partitions)
		r := &kgo.Record{Topic: topic, Partition: p, Value: []byte(s10Value(p, sent[p]))}
		sent[p]++
		wg.Add(1)
		cl.Produce(produced, r, func(r *kgo.Record, err error) {
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			acked.Add(1)
			if l := lastAck[r.Partition]; l == nil || l.Offset < r.Offset {
				lastAck[r.Partition] = r
			}
		})
	}
	wg.Wait()
	stop()
	t.Logf("%d records in %v through %d cuts after a produce request, %d drop-alls, %d connections, %d requests",
		total, time.Since(began).Round(time.Millisecond), px.Cuts(), dropAlls.Load(), px.Accepted(), px.Requests())
	if len(errs) > 0 {
		t.Fatalf("%d records failed, first: %v", len(errs), errs[0])
	}
	if px.Cuts() == 0 {
		t.Fatalf("the proxy never cut a connection after a produce request; the test proved nothing")
	}
	if n := acked.Load(); n != int64(total) {
		t.Fatalf("%d acknowledged, want %d", n, total)
	}

	got := idemConsume(t, b.Addr(), topic, partitions)
	var dups, gaps, reordered int
	for p := int32(0); p < partitions; p++ {
		c := checkSequences(p, got[p], sent[p])
		if c.firstProblem != "" {
			t.Errorf("partition %d: %d records, %d duplicates, %d gaps, %d out of order; first: %s",
				p, len(got[p]), c.dups, c.gaps, c.reordered, c.firstProblem)
		}
		dups, gaps, reordered = dups+c.dups, gaps+c.gaps, reordered+c.reordered
		if len(got[p]) != sent[p] {
			t.Errorf("partition %d: %d records in the log, %d sent", p, len(got[p]), sent[p])
		}
	}
	if dups != 0 || gaps != 0 || reordered != 0 {
		t.Fatalf("%d duplicates, %d gaps, %d out of order", dups, gaps, reordered)
	}

	// DescribeProducers lists the producer, at the epoch and id of its
	// last acknowledged record, on every partition.
	dp := describeProducers(t, testutil.NewClient(t, b.Addr()), topic, partitions)
	for p := int32(0); p < partitions; p++ {
		last := lastAck[p]
		found := false
		for _, ap := range dp[p] {
			if ap.ProducerID == last.ProducerID && ap.ProducerEpoch == int32(last.ProducerEpoch) {
				found = true
				if ap.LastSequence < 0 {
					t.Errorf("partition %d: producer %d listed with last sequence %d", p, ap.ProducerID, ap.LastSequence)
				}
			}
		}
		if !found {
			t.Errorf("partition %d: DescribeProducers lists %+v, want producer %d epoch %d",
				p, dp[p], last.ProducerID, last.ProducerEpoch)
		}
	}
}
