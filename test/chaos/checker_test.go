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

// sendInterval is the pause between two sends of the franz-go producer:
// 200 records/s spread over the topic's partitions.
const sendInterval = 5 * time.Millisecond

// ack is an acknowledged send. seq numbers the sends of one client stack
// (-1 for a probe); offset is -1 if the client was told of the write but
// not of its offset: librdkafka acknowledges a message implicitly when its
// request failed with an uncertain outcome and a later request of the
// partition succeeded, which proves the broker has it.
type ack struct {
	seq       int64
	partition int32
	offset    int64
	value     string
	at        time.Time
	stack     string // stackFranz or stackRdk; "" for a probe
}

// failure is a send that ended in an error.
type failure struct {
	seq       int64
	partition int32
	value     string
	err       error
	definite  bool
	stack     string
}

// workload is the TESTPLAN "safe" producer: acks=all, idempotence on,
// retries unbounded, each record a unique value sent to a chosen
// partition, at a steady rate. It runs on two client stacks at once
// (franz-go in this process, librdkafka in a subprocess: see
// librdkafka_test.go) and records every acknowledgement and every
// failure of both. Start it with startWorkload and end it with stop; its
// methods are safe for concurrent use.
//
// The progress helpers count acknowledgements as follows:
//
//	method       | counts
//	-------------+--------------------------------------------------------
//	acksOn       | every stack's acks on the partition
//	acksBetween  | every stack's acks, in arrival order (so a check that no
//	             | write was acknowledged covers both stacks)
//	waitAcks     | waits until each stack has n more acks on the partition
//	batches.by   | franz-go only: librdkafka does not say which broker acked
type workload struct {
	t          *testing.T
	topic      string
	partitions int32
	tag        string // value prefix, unique per test
	cl         *kgo.Client
	batches    *batchLog
	stacks     []string     // the client stacks running
	python     string       // interpreter for the librdkafka scripts
	rdk        *rdkProducer // nil unless stackRdk runs

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
		// rdk is what the librdkafka producer reported besides acks and
		// failures.
		rdk rdkState
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

// startWorkload starts the safe producer on every client stack
// SAMSA_CHAOS_CLIENTS names (both by default). If librdkafka is wanted
// but missing, the test fails under CI and is skipped otherwise.
func startWorkload(t *testing.T, c *testCluster, topic string, partitions int32) *workload {
	t.Helper()
	stacks := stacksWanted(t)
	var python string
	if slices.Contains(stacks, stackRdk) {
		python = requireLibrdkafka(t)
	}
	batches := &batchLog{}
	cl, err := kgo.NewClient(append(safeProducerOpts(c.addrs()), kgo.WithHooks(batches))...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := &workload{t: t, topic: topic, partitions: partitions, tag: topic, cl: cl,
		cancel: cancel, sendDone: make(chan struct{}), batches: batches, stacks: stacks, python: python}
	w.mu.probes = make(map[string]bool)
	go w.send(ctx)
	t.Cleanup(w.stopNow)
	if python != "" {
		w.rdk = startRdkProducer(t, w, python, c.addrs())
	}
	t.Logf("workload on %s: client stacks %v", topic, stacks)
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
				w.mu.failures = append(w.mu.failures, failure{seq, r.Partition, string(r.Value), err, definiteFailure(err), stackFranz})
				return
			}
			w.mu.acks = append(w.mu.acks, ack{seq, r.Partition, r.Offset, string(r.Value), time.Now(), stackFranz})
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

// acksOn returns how many sends to partition p were acknowledged so far,
// on every client stack.
func (w *workload) acksOn(p int32) int {
	n := 0
	for _, c := range w.acksOnBy(p) {
		n += c
	}
	return n
}

// acksOnBy returns how many sends to partition p each client stack had
// acknowledged so far.
func (w *workload) acksOnBy(p int32) map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := make(map[string]int)
	for _, a := range w.mu.acks {
		if a.partition == p {
			n[a.stack]++
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

// waitAcks waits until n more sends to partition p were acknowledged on
// each client stack: progress means every client made progress.
func (w *workload) waitAcks(p int32, n int, d time.Duration) {
	w.t.Helper()
	base := w.acksOnBy(p)
	waitFor(w.t, d, func() error {
		now := w.acksOnBy(p)
		for _, s := range w.stacks {
			if got := now[s] - base[s]; got < n {
				return fmt.Errorf("%s: %d of %d acks on partition %d", s, got, n, p)
			}
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
		w.mu.extra = append(w.mu.extra, ack{-1, p, offset, value, time.Now(), ""})
	} else {
		w.mu.probes[value] = true
	}
}

// stop ends the workload: no new sends, then up to d for outstanding
// sends to resolve (the cluster is healed by then), then the clients are
// closed, which fails whatever is left as indefinite. Both stacks drain
// at the same time.
func (w *workload) stop(d time.Duration) {
	w.t.Helper()
	var rdkDone sync.WaitGroup
	if w.rdk != nil {
		rdkDone.Go(func() { w.rdk.stop(d) })
	}
	w.cancel()
	<-w.sendDone
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if err := w.cl.Flush(ctx); err != nil {
		w.t.Logf("flush after %s: %v; closing the producer fails the rest", d, err)
	}
	rdkDone.Wait()
	w.stopNow()
}

// stopNow ends the workload at once; it is idempotent.
func (w *workload) stopNow() {
	w.cancel()
	<-w.sendDone
	w.cl.Close()
	w.inflight.Wait()
	if w.rdk != nil {
		w.rdk.stopNow()
	}
}

// result is what the checker found. The counts and the longest gap cover
// every client stack; stacks breaks them down per stack.
type result struct {
	sent, acked, failed, indefinite int
	lost                            []string // acked but absent
	duplicate                       []string // a value at more than one offset
	inconsistent                    []string // acked offset holds another value
	nonmonotonic                    []string // a later send got a lower offset
	unexpected                      []string // a value nobody sent, or sent to another partition
	abortedRead                     []string // a definitely failed value in the log
	readMismatch                    []string // librdkafka read back another log than franz-go
	// resent lists librdkafka values in the log twice under one producer
	// id and different producer epochs: the client's duplicates, not the
	// broker's; logged, not failed.
	resent          []string
	maxGap          time.Duration
	maxGapPartition int32
	maxGapAt        time.Time
	maxGapStack     string
	stacks          []*stackResult
	// epochAt is the leader epoch stamped on each (partition, offset)
	// read back.
	epochAt map[[2]int64]int32
}

// stackResult is one client stack's part of a result.
type stackResult struct {
	name                            string
	sent, acked, failed, indefinite int
	// noOffset counts acks without an offset (see ack).
	noOffset int
	// fatal counts librdkafka's fatal errors (each replaced the producer).
	fatal int
	// resent counts values the client wrote twice (see result.resent).
	resent          int
	maxGap          time.Duration
	maxGapPartition int32
	maxGapAt        time.Time
}

func (s *stackResult) String() string {
	out := fmt.Sprintf("%s sent %d, acked %d, failed %d (indefinite %d), longest ack gap %s on partition %d",
		s.name, s.sent, s.acked, s.failed, s.indefinite, s.maxGap.Round(time.Millisecond), s.maxGapPartition)
	if s.name == stackRdk {
		out += fmt.Sprintf(", acked without offset %d, fatal errors %d, re-sent under a new epoch %d", s.noOffset, s.fatal, s.resent)
	}
	return out
}

func (r *result) anomalies() int {
	return len(r.lost) + len(r.duplicate) + len(r.inconsistent) + len(r.nonmonotonic) +
		len(r.unexpected) + len(r.abortedRead) + len(r.readMismatch)
}

// stack returns the part of r for the named client stack, or nil.
func (r *result) stack(name string) *stackResult {
	for _, s := range r.stacks {
		if s.name == name {
			return s
		}
	}
	return nil
}

func (r *result) String() string {
	out := fmt.Sprintf("sent %d, acked %d, failed %d (indefinite %d); lost %d, duplicate %d, inconsistent %d, nonmonotonic-send %d, unexpected %d, aborted-read %d",
		r.sent, r.acked, r.failed, r.indefinite, len(r.lost), len(r.duplicate), len(r.inconsistent),
		len(r.nonmonotonic), len(r.unexpected), len(r.abortedRead))
	if r.stack(stackRdk) != nil {
		out += fmt.Sprintf(", read-mismatch %d", len(r.readMismatch))
	}
	out += fmt.Sprintf("; longest ack gap %s on partition %d", r.maxGap.Round(time.Millisecond), r.maxGapPartition)
	if len(r.stacks) > 1 {
		out += " (" + r.maxGapStack + ")"
		for _, s := range r.stacks {
			out += "; " + s.String()
		}
	}
	return out
}

// check reads every partition of the topic from the start to its end
// (assign, read_committed), compares the log with what the workload saw
// on every client stack, and fails the test on any anomaly. With
// librdkafka running, a librdkafka consumer reads the same offsets too
// and must see the same records. The workload must be stopped.
func (w *workload) check(c *testCluster) *result {
	w.t.Helper()
	logs, ends := readLogs(w.t, c, w.topic, w.partitions)

	w.mu.Lock()
	acks := append(slices.Clone(w.mu.acks), w.mu.extra...)
	failures := slices.Clone(w.mu.failures)
	probes := w.mu.probes
	rs := w.mu.rdk
	w.mu.Unlock()

	r := &result{acked: len(acks), failed: len(failures), epochAt: make(map[[2]int64]int32)}
	for _, name := range w.stacks {
		s := &stackResult{name: name}
		switch name {
		case stackFranz:
			s.sent = int(w.sent.Load())
		case stackRdk:
			s.sent = int(rs.sent)
			s.fatal = len(rs.fatal)
		}
		r.sent += s.sent
		r.stacks = append(r.stacks, s)
	}
	type at struct {
		p int32
		o int64
	}
	where := make(map[string][]at)
	valueAt := make(map[at]string)
	recAt := make(map[at]*kgo.Record)
	for p, recs := range logs {
		for _, rec := range recs {
			v := string(rec.Value)
			where[v] = append(where[v], at{p, rec.Offset})
			valueAt[at{p, rec.Offset}] = v
			recAt[at{p, rec.Offset}] = rec
			r.epochAt[[2]int64{int64(p), rec.Offset}] = rec.LeaderEpoch
		}
	}
	known := make(map[string]int32) // every value the workload sent -> its partition
	ackedAt := make(map[string]int64)
	for _, a := range acks {
		known[a.value] = a.partition
		ackedAt[a.value] = a.offset
		if s := r.stack(a.stack); s != nil {
			s.acked++
			if a.offset < 0 {
				s.noOffset++
			}
		}
		got, ok := valueAt[at{a.partition, a.offset}]
		switch {
		case len(where[a.value]) == 0:
			r.lost = append(r.lost, fmt.Sprintf("%s acked at %d/%d", a.value, a.partition, a.offset))
		case a.offset < 0 && a.seq >= 0:
			// Acknowledged without an offset: present is all that can
			// be checked.
		case !ok:
			r.inconsistent = append(r.inconsistent, fmt.Sprintf("%s acked at %d/%d, offset absent, value at %v", a.value, a.partition, a.offset, where[a.value]))
		case got != a.value:
			r.inconsistent = append(r.inconsistent, fmt.Sprintf("%s acked at %d/%d, which holds %s", a.value, a.partition, a.offset, got))
		}
	}
	for _, f := range failures {
		known[f.value] = f.partition
		s := r.stack(f.stack)
		if s != nil {
			s.failed++
		}
		if f.definite {
			if len(where[f.value]) > 0 {
				r.abortedRead = append(r.abortedRead, fmt.Sprintf("%s failed (%v) but is at %v", f.value, f.err, where[f.value]))
			}
		} else {
			r.indefinite++
			if s != nil {
				s.indefinite++
			}
		}
	}
	rdkPrefix := w.tag + "-rdk-"
	for v, locs := range where {
		if len(locs) > 1 {
			// Who wrote each copy tells a broker that failed to
			// deduplicate a retry (same producer id and epoch) from a
			// client that sent the value again as a new write.
			var copies []string
			var recs []*kgo.Record
			for _, l := range locs {
				rec := recAt[l]
				copies = append(copies, fmt.Sprintf("%d/%d (producer %d epoch %d, leader epoch %d)",
					l.p, l.o, rec.ProducerID, rec.ProducerEpoch, rec.LeaderEpoch))
				recs = append(recs, rec)
			}
			acked := "not acked"
			if o, ok := ackedAt[v]; ok {
				acked = fmt.Sprintf("acked at %d", o)
			}
			d := fmt.Sprintf("%s at %s, %s", v, strings.Join(copies, " and "), acked)
			if w.rdk != nil && strings.HasPrefix(v, rdkPrefix) && resentByClient(recs) {
				r.resent = append(r.resent, d)
			} else {
				r.duplicate = append(r.duplicate, d)
			}
		}
		p, sent := known[v]
		switch {
		case probes[v]:
		case !sent && w.rdk != nil && strings.HasPrefix(v, rdkPrefix) && !rs.done:
			// The librdkafka producer was killed before it reported
			// every outcome: the send is indefinite.
			r.indefinite++
			r.stack(stackRdk).indefinite++
		case !sent && strings.HasPrefix(v, w.tag+"-"):
			// Sent, but neither acked nor failed yet when the producer
			// closed: impossible, since closing fails every buffered
			// record (franz-go's Close, the librdkafka script's purge).
			r.unexpected = append(r.unexpected, fmt.Sprintf("%s at %v has no send outcome", v, locs))
		case !sent:
			r.unexpected = append(r.unexpected, fmt.Sprintf("%s at %v was never sent", v, locs))
		case locs[0].p != p:
			r.unexpected = append(r.unexpected, fmt.Sprintf("%s sent to partition %d found at %v", v, p, locs))
		}
	}

	// nonmonotonic-send: per stack and partition, a later send must get a
	// higher offset. Availability: the longest gap between consecutive
	// acks of a partition, per stack.
	type key struct {
		stack string
		p     int32
	}
	byPart := make(map[key][]ack)
	for _, a := range acks {
		if a.seq >= 0 {
			byPart[key{a.stack, a.partition}] = append(byPart[key{a.stack, a.partition}], a)
		}
	}
	for k, as := range byPart {
		slices.SortFunc(as, func(a, b ack) int { return int(a.seq - b.seq) })
		var prev *ack
		for i := range as {
			if as[i].offset < 0 {
				continue
			}
			if prev != nil && as[i].offset <= prev.offset {
				r.nonmonotonic = append(r.nonmonotonic, fmt.Sprintf("%s partition %d: send %d got offset %d after send %d got %d",
					k.stack, k.p, as[i].seq, as[i].offset, prev.seq, prev.offset))
			}
			prev = &as[i]
		}
		s := r.stack(k.stack)
		slices.SortFunc(as, func(a, b ack) int { return a.at.Compare(b.at) })
		for i := 1; i < len(as); i++ {
			g := as[i].at.Sub(as[i-1].at)
			if s != nil && g > s.maxGap {
				s.maxGap, s.maxGapPartition, s.maxGapAt = g, k.p, as[i-1].at
			}
			if g > r.maxGap {
				r.maxGap, r.maxGapPartition, r.maxGapAt, r.maxGapStack = g, k.p, as[i-1].at, k.stack
			}
		}
	}

	if w.rdk != nil {
		r.readMismatch = compareReads(w.partitions, logs, rdkRead(w.t, w.python, c.addrs(), w.topic, ends))
		r.stack(stackRdk).resent = len(r.resent)
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
	report("read-back mismatches (franz-go vs librdkafka)", r.readMismatch)
	if len(r.resent) > 0 {
		slices.Sort(r.resent)
		w.t.Logf("%d librdkafka values re-sent by the client under a new producer epoch (not a broker anomaly), first: %s",
			len(r.resent), strings.Join(r.resent[:min(len(r.resent), 10)], "; "))
	}
	for _, s := range r.stacks {
		if s.acked == 0 {
			w.t.Errorf("no send of %s was acknowledged", s.name)
		}
	}
	if w.rdk != nil {
		if !rs.done {
			w.t.Errorf("the librdkafka producer did not report the outcome of every send (killed?)")
		}
		for _, f := range rs.fatal {
			w.t.Logf("librdkafka fatal error: %s", f)
		}
		if len(rs.bad) > 0 {
			w.t.Errorf("librdkafka producer: %d unreadable lines, first: %s", len(rs.bad), rs.bad[0])
		}
	}
	return r
}

// resentByClient reports whether copies of one value were written by one
// producer id under a different producer epoch each: the client bumped its
// epoch and sent the value again as a new write, which no broker can
// deduplicate (KIP-360 restarts sequences with the epoch). librdkafka 2.0
// bumps the epoch on an OUT_OF_ORDER_SEQUENCE_NUMBER that follows a
// retriable error, and then re-sends messages of other partitions whose
// outcome it did not know (librdkafka issue #4953). Copies under one epoch
// are a retry the broker failed to deduplicate.
func resentByClient(copies []*kgo.Record) bool {
	if len(copies) < 2 {
		return false
	}
	epochs := make(map[int16]bool)
	for _, r := range copies {
		if r.ProducerID != copies[0].ProducerID || r.ProducerID < 0 || epochs[r.ProducerEpoch] {
			return false
		}
		epochs[r.ProducerEpoch] = true
	}
	return true
}

// compareReads returns how the librdkafka consumer's read of each
// partition differs from franz-go's: both must list the same offsets with
// the same values, in the same order.
func compareReads(partitions int32, franz map[int32][]*kgo.Record, rdk map[int32][]rdkLine) []string {
	var out []string
	for p := range partitions {
		fs, rs := franz[p], rdk[p]
		for i := range max(len(fs), len(rs)) {
			switch {
			case i >= len(fs):
				out = append(out, fmt.Sprintf("partition %d: librdkafka read %s at %d past franz-go's last record", p, rs[i].Value, rs[i].Offset))
			case i >= len(rs):
				out = append(out, fmt.Sprintf("partition %d: franz-go read %s at %d past librdkafka's last record", p, fs[i].Value, fs[i].Offset))
			case fs[i].Offset != rs[i].Offset || string(fs[i].Value) != rs[i].Value:
				out = append(out, fmt.Sprintf("partition %d record %d: franz-go read %s at %d, librdkafka %s at %d",
					p, i, fs[i].Value, fs[i].Offset, rs[i].Value, rs[i].Offset))
			default:
				continue
			}
			break // the first difference per partition is enough
		}
	}
	return out
}

// readAll reads every partition of topic from the start to its high
// watermark with a fresh consumer (assign, read_committed) and returns the
// records per partition in offset order.
func readAll(t *testing.T, c *testCluster, topic string, partitions int32) map[int32][]*kgo.Record {
	t.Helper()
	logs, _ := readLogs(t, c, topic, partitions)
	return logs
}

// readLogs is readAll that also returns the end offset each partition was
// read to, indexed by partition.
func readLogs(t *testing.T, c *testCluster, topic string, partitions int32) (map[int32][]*kgo.Record, []int64) {
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
	endList := make([]int64, partitions)
	for p := range partitions {
		offsets[p] = kgo.NewOffset().AtStart()
		l, ok := ends.Lookup(topic, p)
		if !ok {
			t.Fatalf("no end offset for %s-%d", topic, p)
		}
		want[p] = l.Offset
		endList[p] = l.Offset
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
	return out, endList
}
