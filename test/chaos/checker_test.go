package chaos

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// sendInterval is the pause between two sends of the workload: 200
// records/s spread over the topic's partitions.
const sendInterval = 5 * time.Millisecond

// ack is an acknowledged send.
type ack struct {
	seq       int64
	partition int32
	offset    int64
	value     string
	at        time.Time
}

// failure is a send that ended in an error.
type failure struct {
	seq       int64
	partition int32
	value     string
	err       error
	definite  bool
}

// workload is the TESTPLAN "safe" producer: acks=all, idempotence on,
// retries unbounded, each record a unique value sent to a chosen
// partition, at a steady rate. It records every acknowledgement and
// every failure. Start it with startWorkload and end it with stop; its
// methods are safe for concurrent use.
type workload struct {
	t          *testing.T
	topic      string
	partitions int32
	tag        string // value prefix, unique per test
	cl         *kgo.Client
	batches    *batchLog

	cancel   context.CancelFunc
	sendDone chan struct{}
	inflight sync.WaitGroup
	sent     atomic.Int64
	ackCount atomic.Int64

	mu struct {
		sync.Mutex
		acks     []ack
		failures []failure
		// extra are values written outside the workload (probes) that
		// were acknowledged; the checker treats them as acks.
		extra []ack
		// probes are values written outside the workload whose outcome
		// is not known; the checker allows them in the log.
		probes map[string]bool
	}
}

// batchWrite is one produce batch a broker acknowledged.
type batchWrite struct {
	node      int32
	partition int32
	records   int
	at        time.Time
}

// batchLog is a kgo hook recording which broker acknowledged each batch.
// It is safe for concurrent use; mu guards writes.
type batchLog struct {
	mu     sync.Mutex
	writes []batchWrite
}

// OnProduceBatchWritten implements kgo.HookProduceBatchWritten.
func (l *batchLog) OnProduceBatchWritten(meta kgo.BrokerMetadata, _ string, partition int32, m kgo.ProduceBatchMetrics) {
	l.mu.Lock()
	l.writes = append(l.writes, batchWrite{meta.NodeID, partition, m.NumRecords, time.Now()})
	l.mu.Unlock()
}

// by returns the batches node acknowledged on partition in [from, to).
func (l *batchLog) by(node, partition int32, from, to time.Time) []batchWrite {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []batchWrite
	for _, w := range l.writes {
		if w.node == node && w.partition == partition && !w.at.Before(from) && w.at.Before(to) {
			out = append(out, w)
		}
	}
	return out
}

// safeProducerOpts is the producer half of TESTPLAN's safe profile.
func safeProducerOpts(seeds []string) []kgo.Opt {
	return []kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		// Idempotence is franz-go's default; retries are unbounded.
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(2 * time.Millisecond),
		kgo.MetadataMinAge(100 * time.Millisecond),
		kgo.MetadataMaxAge(2 * time.Second),
		kgo.ProduceRequestTimeout(5 * time.Second),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }),
		kgo.MaxBufferedRecords(100_000),
	}
}

func startWorkload(t *testing.T, c *testCluster, topic string, partitions int32) *workload {
	t.Helper()
	batches := &batchLog{}
	cl, err := kgo.NewClient(append(safeProducerOpts(c.addrs()), kgo.WithHooks(batches))...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := &workload{t: t, topic: topic, partitions: partitions, tag: topic, cl: cl,
		cancel: cancel, sendDone: make(chan struct{}), batches: batches}
	w.mu.probes = make(map[string]bool)
	go w.send(ctx)
	t.Cleanup(w.stopNow)
	return w
}

// value is the unique value of the workload's send number seq.
func (w *workload) value(p int32, seq int64) string {
	return fmt.Sprintf("%s-p%d-%08d", w.tag, p, seq)
}

// send is the producing goroutine; it ends when ctx ends.
func (w *workload) send(ctx context.Context) {
	defer close(w.sendDone)
	tick := time.NewTicker(sendInterval)
	defer tick.Stop()
	for seq := int64(0); ; seq++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		p := int32(seq % int64(w.partitions))
		r := &kgo.Record{Topic: w.topic, Partition: p, Value: []byte(w.value(p, seq))}
		w.inflight.Add(1)
		w.sent.Add(1)
		// NB: the record's context is not ctx: ending the workload must not
		// fail records that may already be on the wire.
		w.cl.Produce(context.Background(), r, func(r *kgo.Record, err error) {
			defer w.inflight.Done()
			w.mu.Lock()
			defer w.mu.Unlock()
			if err != nil {
				w.mu.failures = append(w.mu.failures, failure{seq, r.Partition, string(r.Value), err, definiteFailure(err)})
				return
			}
			w.mu.acks = append(w.mu.acks, ack{seq, r.Partition, r.Offset, string(r.Value), time.Now()})
			w.ackCount.Add(1)
		})
	}
}

// definiteFailure classifies a produce error as TESTPLAN's safe profile
// does: these errors mean the write did not happen; every other error
// (not leader, timeouts, disconnects, the client closing) is indefinite.
func definiteFailure(err error) bool {
	return errors.Is(err, kerr.OutOfOrderSequenceNumber) ||
		errors.Is(err, kerr.ProducerFenced) ||
		errors.Is(err, kerr.InvalidProducerEpoch)
}

// acksOn returns how many sends to partition p were acknowledged so far.
func (w *workload) acksOn(p int32) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, a := range w.mu.acks {
		if a.partition == p {
			n++
		}
	}
	return n
}

// acksBetween returns the acknowledgements on partition p (all partitions
// if p < 0) that arrived in [from, to).
func (w *workload) acksBetween(p int32, from, to time.Time) []ack {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []ack
	for _, a := range w.mu.acks {
		if (p < 0 || a.partition == p) && !a.at.Before(from) && a.at.Before(to) {
			out = append(out, a)
		}
	}
	return out
}

// waitAcks waits until n more sends to partition p were acknowledged.
func (w *workload) waitAcks(p int32, n int, d time.Duration) {
	w.t.Helper()
	base := w.acksOn(p)
	waitFor(w.t, d, func() error {
		if got := w.acksOn(p) - base; got < n {
			return fmt.Errorf("%d of %d acks on partition %d", got, n, p)
		}
		return nil
	})
}

// addProbe records a value written outside the workload: acknowledged at
// (p, offset) if ok, of unknown outcome otherwise.
func (w *workload) addProbe(p int32, offset int64, value string, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if ok {
		w.mu.extra = append(w.mu.extra, ack{-1, p, offset, value, time.Now()})
	} else {
		w.mu.probes[value] = true
	}
}

// stop ends the workload: no new sends, then up to d for outstanding
// sends to resolve (the cluster is healed by then), then the client is
// closed, which fails whatever is left as indefinite.
func (w *workload) stop(d time.Duration) {
	w.t.Helper()
	w.cancel()
	<-w.sendDone
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if err := w.cl.Flush(ctx); err != nil {
		w.t.Logf("flush after %s: %v; closing the producer fails the rest", d, err)
	}
	w.stopNow()
}

// stopNow ends the workload at once; it is idempotent.
func (w *workload) stopNow() {
	w.cancel()
	<-w.sendDone
	w.cl.Close()
	w.inflight.Wait()
}

// result is what the checker found.
type result struct {
	sent, acked, failed, indefinite int
	lost                            []string // acked but absent
	duplicate                       []string // a value at more than one offset
	inconsistent                    []string // acked offset holds another value
	nonmonotonic                    []string // a later send got a lower offset
	unexpected                      []string // a value nobody sent, or sent to another partition
	abortedRead                     []string // a definitely failed value in the log
	maxGap                          time.Duration
	maxGapPartition                 int32
	maxGapAt                        time.Time
	// epochAt is the leader epoch stamped on each (partition, offset)
	// read back.
	epochAt map[[2]int64]int32
}

func (r *result) anomalies() int {
	return len(r.lost) + len(r.duplicate) + len(r.inconsistent) + len(r.nonmonotonic) +
		len(r.unexpected) + len(r.abortedRead)
}

func (r *result) String() string {
	return fmt.Sprintf("sent %d, acked %d, failed %d (indefinite %d); lost %d, duplicate %d, inconsistent %d, nonmonotonic-send %d, unexpected %d, aborted-read %d; longest ack gap %s on partition %d",
		r.sent, r.acked, r.failed, r.indefinite, len(r.lost), len(r.duplicate), len(r.inconsistent),
		len(r.nonmonotonic), len(r.unexpected), len(r.abortedRead), r.maxGap.Round(time.Millisecond), r.maxGapPartition)
}

// check reads every partition of the topic from the start to its end
// (assign, read_committed), compares the log with what the workload saw,
// and fails the test on any anomaly. The workload must be stopped.
func (w *workload) check(c *testCluster) *result {
	w.t.Helper()
	logs := readAll(w.t, c, w.topic, w.partitions)

	w.mu.Lock()
	acks := append(slices.Clone(w.mu.acks), w.mu.extra...)
	failures := slices.Clone(w.mu.failures)
	probes := w.mu.probes
	w.mu.Unlock()

	r := &result{sent: int(w.sent.Load()), acked: len(acks), failed: len(failures),
		epochAt: make(map[[2]int64]int32)}
	type at struct {
		p int32
		o int64
	}
	where := make(map[string][]at)
	valueAt := make(map[at]string)
	for p, recs := range logs {
		for _, rec := range recs {
			v := string(rec.Value)
			where[v] = append(where[v], at{p, rec.Offset})
			valueAt[at{p, rec.Offset}] = v
			r.epochAt[[2]int64{int64(p), rec.Offset}] = rec.LeaderEpoch
		}
	}
	known := make(map[string]int32) // every value the workload sent -> its partition
	for _, a := range acks {
		known[a.value] = a.partition
		got, ok := valueAt[at{a.partition, a.offset}]
		switch {
		case len(where[a.value]) == 0:
			r.lost = append(r.lost, fmt.Sprintf("%s acked at %d/%d", a.value, a.partition, a.offset))
		case !ok:
			r.inconsistent = append(r.inconsistent, fmt.Sprintf("%s acked at %d/%d, offset absent, value at %v", a.value, a.partition, a.offset, where[a.value]))
		case got != a.value:
			r.inconsistent = append(r.inconsistent, fmt.Sprintf("%s acked at %d/%d, which holds %s", a.value, a.partition, a.offset, got))
		}
	}
	for _, f := range failures {
		known[f.value] = f.partition
		if f.definite {
			if len(where[f.value]) > 0 {
				r.abortedRead = append(r.abortedRead, fmt.Sprintf("%s failed (%v) but is at %v", f.value, f.err, where[f.value]))
			}
		} else {
			r.indefinite++
		}
	}
	for v, locs := range where {
		if len(locs) > 1 {
			r.duplicate = append(r.duplicate, fmt.Sprintf("%s at %v", v, locs))
		}
		p, sent := known[v]
		switch {
		case probes[v]:
		case !sent && strings.HasPrefix(v, w.tag+"-"):
			// Sent, but neither acked nor failed yet when the producer
			// closed: impossible, since Close fails every buffered record.
			r.unexpected = append(r.unexpected, fmt.Sprintf("%s at %v has no send outcome", v, locs))
		case !sent:
			r.unexpected = append(r.unexpected, fmt.Sprintf("%s at %v was never sent", v, locs))
		case locs[0].p != p:
			r.unexpected = append(r.unexpected, fmt.Sprintf("%s sent to partition %d found at %v", v, p, locs))
		}
	}

	// nonmonotonic-send: per partition, a later send must get a higher
	// offset. Availability: the longest gap between consecutive acks of
	// a partition.
	byPart := make(map[int32][]ack)
	for _, a := range acks {
		if a.seq >= 0 {
			byPart[a.partition] = append(byPart[a.partition], a)
		}
	}
	for p, as := range byPart {
		slices.SortFunc(as, func(a, b ack) int { return int(a.seq - b.seq) })
		for i := 1; i < len(as); i++ {
			if as[i].offset <= as[i-1].offset {
				r.nonmonotonic = append(r.nonmonotonic, fmt.Sprintf("partition %d: send %d got offset %d after send %d got %d",
					p, as[i].seq, as[i].offset, as[i-1].seq, as[i-1].offset))
			}
		}
		slices.SortFunc(as, func(a, b ack) int { return a.at.Compare(b.at) })
		for i := 1; i < len(as); i++ {
			if g := as[i].at.Sub(as[i-1].at); g > r.maxGap {
				r.maxGap, r.maxGapPartition, r.maxGapAt = g, p, as[i-1].at
			}
		}
	}

	w.t.Logf("checker: %v", r)
	report := func(name string, list []string) {
		if len(list) == 0 {
			return
		}
		slices.Sort(list)
		w.t.Errorf("%d %s, first: %s", len(list), name, strings.Join(list[:min(len(list), 10)], "; "))
	}
	report("lost", r.lost)
	report("duplicate", r.duplicate)
	report("inconsistent-offsets", r.inconsistent)
	report("nonmonotonic-send", r.nonmonotonic)
	report("unexpected values", r.unexpected)
	report("aborted reads", r.abortedRead)
	if r.acked == 0 {
		w.t.Errorf("no send was acknowledged")
	}
	return r
}

// readAll reads every partition of topic from the start to its high
// watermark with a fresh consumer (assign, read_committed) and returns the
// records per partition in offset order.
func readAll(t *testing.T, c *testCluster, topic string, partitions int32) map[int32][]*kgo.Record {
	t.Helper()
	adm, err := kgo.NewClient(kgo.SeedBrokers(c.addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	var ends kadm.ListedOffsets
	waitFor(t, 30*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var err error
		if ends, err = kadm.NewClient(adm).ListEndOffsets(ctx, topic); err != nil {
			return err
		}
		return ends.Error()
	})
	offsets := make(map[int32]kgo.Offset)
	want := make(map[int32]int64)
	for p := range partitions {
		offsets[p] = kgo.NewOffset().AtStart()
		l, ok := ends.Lookup(topic, p)
		if !ok {
			t.Fatalf("no end offset for %s-%d", topic, p)
		}
		want[p] = l.Offset
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs()...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	out := make(map[int32][]*kgo.Record)
	next := make(map[int32]int64)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	done := func() bool {
		for p, end := range want {
			if next[p] < end {
				return false
			}
		}
		return true
	}
	for !done() {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read back: stopped at %v, ends %v", next, want)
		}
		fs.EachError(func(topic string, p int32, err error) {
			t.Logf("read back %s-%d: %v", topic, p, err)
		})
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset < next[r.Partition] {
				t.Errorf("read back %s-%d: offset %d after %d (nonmonotonic-poll with assign)", topic, r.Partition, r.Offset, next[r.Partition])
				return
			}
			next[r.Partition] = r.Offset + 1
			if r.Offset < want[r.Partition] {
				out[r.Partition] = append(out[r.Partition], r)
			}
		})
	}
	return out
}
