package chaos

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnTimeout is the transaction.timeout.ms of the transactional
// producers: the coordinator aborts a transaction open longer, so a
// partition's last stable offset may be held back about this long by a
// producer that died (S-20's bound adds 10 s).
const txnTimeout = 10 * time.Second

// Outcomes of a transaction as its producer saw them.
const (
	txnCommitted = "committed" // EndTransaction(TryCommit) returned nil
	txnAborted   = "aborted"   // EndTransaction(TryAbort) returned nil
	txnUnknown   = "unknown"   // the end failed: all or nothing
)

// txnRecord is one transaction the workload ran.
type txnRecord struct {
	id      string // transactional id
	n       int    // transaction number of that id
	values  []string
	outcome string
	err     error
	// began and ended are when BeginTransaction was called and when the
	// producer was done with the transaction.
	began, ended time.Time
}

// txnWorkload runs transactional producers (franz-go) that write
// transactions of txnRecords records spread over every partition of a
// topic, each record keyed by its own unique value, committing three in four and aborting the fourth, and records
// each transaction's outcome. A producer whose transaction fails aborts
// it, and when that fails too starts over with a new client (a new
// InitProducerId, which fences and aborts what the old one left open).
type txnWorkload struct {
	t          *testing.T
	c          *testCluster
	topic      string
	partitions int32
	ids        []string
	// opts are each producer's options on top of the workload's.
	opts func(id string) []kgo.Opt

	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu struct {
		sync.Mutex
		txns []txnRecord
	}
}

const txnRecords = 10

// startTxnWorkload starts one transactional producer per id.
func startTxnWorkload(t *testing.T, c *testCluster, topic string, partitions int32, ids ...string) *txnWorkload {
	t.Helper()
	return startTxnWorkloadWith(t, c, topic, partitions, nil, ids...)
}

// startTxnWorkloadWith is startTxnWorkload with opts(id) added to the
// options of id's producers (later options win).
func startTxnWorkloadWith(t *testing.T, c *testCluster, topic string, partitions int32, opts func(id string) []kgo.Opt, ids ...string) *txnWorkload {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &txnWorkload{t: t, c: c, topic: topic, partitions: partitions, ids: ids, opts: opts, cancel: cancel}
	for _, id := range ids {
		w.wg.Add(1)
		go w.run(ctx, id)
	}
	t.Cleanup(w.stop)
	return w
}

func (w *txnWorkload) client(id string) (*kgo.Client, error) {
	opts := []kgo.Opt{
		kgo.SeedBrokers(w.c.addrs()...),
		kgo.TransactionalID(id),
		kgo.TransactionTimeout(txnTimeout),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.DefaultProduceTopic(w.topic),
		kgo.ProducerLinger(2 * time.Millisecond),
		kgo.MetadataMinAge(100 * time.Millisecond),
		kgo.MetadataMaxAge(2 * time.Second),
		kgo.ProduceRequestTimeout(5 * time.Second),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }),
		kgo.RetryTimeout(30 * time.Second),
	}
	if w.opts != nil {
		opts = append(opts, w.opts(id)...)
	}
	return kgo.NewClient(opts...)
}

// run is one producer's loop until ctx ends.
func (w *txnWorkload) run(ctx context.Context, id string) {
	defer w.wg.Done()
	var cl *kgo.Client
	defer func() {
		if cl != nil {
			cl.Close()
		}
	}()
	for n := 0; ctx.Err() == nil; n++ {
		if cl == nil {
			var err error
			if cl, err = w.client(id); err != nil {
				w.t.Errorf("client %s: %v", id, err)
				return
			}
		}
		began := time.Now()
		rec, broken := w.one(ctx, cl, id, n)
		rec.began, rec.ended = began, time.Now()
		if rec.outcome != "" {
			w.mu.Lock()
			w.mu.txns = append(w.mu.txns, rec)
			w.mu.Unlock()
		}
		if broken {
			cl.Close()
			cl = nil
			time.Sleep(200 * time.Millisecond)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// one runs transaction n of id. broken asks for a new client.
func (w *txnWorkload) one(ctx context.Context, cl *kgo.Client, id string, n int) (rec txnRecord, broken bool) {
	rec = txnRecord{id: id, n: n}
	// NB: a context that is never cancelled for the transaction's
	// requests: cancelling EndTransaction leaves its outcome unknowable.
	opCtx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := cl.BeginTransaction(); err != nil {
		return txnRecord{}, true
	}
	var (
		pmu     sync.Mutex
		prodErr error
		pwg     sync.WaitGroup
	)
	for i := range txnRecords {
		v := fmt.Sprintf("%s-t%06d-%02d", id, n, i)
		rec.values = append(rec.values, v)
		pwg.Add(1)
		// Each record's key is its value: unique, so compaction (S-20's
		// topic is compacted) removes no committed record.
		cl.Produce(opCtx, &kgo.Record{Partition: int32(i) % w.partitions, Key: []byte(v), Value: []byte(v)}, func(_ *kgo.Record, err error) {
			defer pwg.Done()
			if err != nil {
				pmu.Lock()
				prodErr = errors.Join(prodErr, err)
				pmu.Unlock()
			}
		})
	}
	pwg.Wait()
	commit := n%4 != 3 && prodErr == nil
	if prodErr != nil {
		_ = cl.AbortBufferedRecords(opCtx)
	}
	err := cl.EndTransaction(opCtx, kgo.TransactionEndTry(commit))
	switch {
	case err == nil && commit:
		rec.outcome = txnCommitted
	case err == nil:
		rec.outcome = txnAborted
	case commit:
		// The commit's outcome is not known; try to abort (which fences
		// whatever is still open), but the transaction may have committed.
		rec.outcome, rec.err = txnUnknown, err
		if err2 := cl.EndTransaction(opCtx, kgo.TryAbort); err2 != nil {
			return rec, true
		}
	default:
		rec.outcome, rec.err = txnUnknown, err
		return rec, true
	}
	_ = ctx
	return rec, false
}

// stop ends the producers and waits for them.
func (w *txnWorkload) stop() {
	w.cancel()
	w.wg.Wait()
}

// counts returns how many transactions ended with each outcome.
func (w *txnWorkload) counts() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]int)
	for _, r := range w.mu.txns {
		out[r.outcome]++
	}
	return out
}

// values returns the values of every transaction that ended with outcome.
func (w *txnWorkload) values(outcome string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, r := range w.mu.txns {
		if r.outcome == outcome {
			out = append(out, r.values...)
		}
	}
	return out
}

// waitCommits waits until n more transactions committed than when called.
func (w *txnWorkload) waitCommits(n int, d time.Duration) {
	w.t.Helper()
	base := w.counts()[txnCommitted]
	waitFor(w.t, d, func() error {
		if got := w.counts()[txnCommitted] - base; got < n {
			return fmt.Errorf("%d of %d more transactions committed", got, n)
		}
		return nil
	})
}

// txnResult is what txnCheck found; every anomaly count must be zero.
type txnResult struct {
	committed, aborted, unknown int
	unknownVisible              int
	// Anomalies.
	lost, abortedRead, torn, duplicate, unexpected int
	examples                                       []string
	stableAfter                                    time.Duration
	// bad lists each transaction counted as lost, aborted-read or torn.
	bad []txnBad
	// visible holds every value seen at read_committed.
	visible map[string]bool
}

// txnBad is a transaction the checker counted as an anomaly.
type txnBad struct {
	tx   txnRecord
	kind string // "lost", "aborted-read" or "torn"
}

func (r *txnResult) anomalies() int {
	return r.lost + r.abortedRead + r.torn + r.duplicate + r.unexpected
}

func (r *txnResult) String() string {
	return fmt.Sprintf("transactions: %d committed, %d aborted, %d unknown (%d of them visible); "+
		"anomalies: lost %d, aborted-read %d, torn %d, duplicate %d, unexpected %d; last stable offset at the end %s after the producers stopped",
		r.committed, r.aborted, r.unknown, r.unknownVisible, r.lost, r.abortedRead, r.torn, r.duplicate, r.unexpected, r.stableAfter.Round(time.Millisecond))
}

// check stops the producers, writes a non-transactional end record to
// every partition, reads the topic at read_committed until every end
// record is seen (which needs every partition's last stable offset past
// all transactions: bounded by the transaction timeout plus 10 s), and
// holds what it read against the outcomes:
//
//	anomaly      | meaning
//	-------------+------------------------------------------------------------
//	lost         | a value of a committed transaction is not visible
//	aborted-read | a value of an aborted transaction is visible
//	torn         | a transaction of unknown outcome is partly visible
//	duplicate    | a value visible twice
//	unexpected   | a visible value no transaction wrote
func (w *txnWorkload) check() *txnResult {
	w.t.Helper()
	w.stop()
	stoppedAt := time.Now()
	endCl, err := kgo.NewClient(kgo.SeedBrokers(w.c.addrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.DefaultProduceTopic(w.topic))
	if err != nil {
		w.t.Fatal(err)
	}
	defer endCl.Close()
	ends := make(map[string]bool)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for p := range w.partitions {
		v := fmt.Sprintf("end-%s-%d", w.topic, p)
		ends[v] = true
		if err := endCl.ProduceSync(ctx, &kgo.Record{Partition: p, Key: []byte(v), Value: []byte(v)}).FirstErr(); err != nil {
			w.t.Fatalf("end record to %s-%d: %v", w.topic, p, err)
		}
	}
	rd, err := kgo.NewClient(kgo.SeedBrokers(w.c.addrs()...),
		kgo.ConsumeTopics(w.topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		w.t.Fatal(err)
	}
	defer rd.Close()
	seen := make(map[string]int)
	bound := txnTimeout + 10*time.Second
	readCtx, readCancel := context.WithTimeout(context.Background(), bound+60*time.Second)
	defer readCancel()
	var stableAfter time.Duration
	for len(ends) > 0 {
		fs := rd.PollFetches(readCtx)
		if readCtx.Err() != nil {
			w.t.Fatalf("read_committed: end records of %d partitions not visible after %s: last stable offsets stuck (%s)",
				len(ends), bound+60*time.Second, w.lsoReport())
		}
		fs.EachRecord(func(r *kgo.Record) {
			v := string(r.Value)
			if ends[v] {
				delete(ends, v)
				return
			}
			seen[v]++
		})
		stableAfter = time.Since(stoppedAt)
	}
	if stableAfter > bound {
		w.t.Errorf("the end records became visible %s after the producers stopped, above the bound of %s", stableAfter, bound)
	}

	r := &txnResult{stableAfter: stableAfter, visible: make(map[string]bool, len(seen))}
	for v := range seen {
		r.visible[v] = true
	}
	written := make(map[string]bool)
	w.mu.Lock()
	txns := append([]txnRecord(nil), w.mu.txns...)
	w.mu.Unlock()
	example := func(format string, args ...any) {
		if len(r.examples) < 10 {
			r.examples = append(r.examples, fmt.Sprintf(format, args...))
		}
	}
	for _, tx := range txns {
		visible := 0
		for _, v := range tx.values {
			written[v] = true
			if seen[v] > 0 {
				visible++
			}
		}
		switch tx.outcome {
		case txnCommitted:
			r.committed++
			if visible != len(tx.values) {
				r.lost += len(tx.values) - visible
				r.bad = append(r.bad, txnBad{tx, "lost"})
				example("lost: %s transaction %d committed, %d of %d values visible", tx.id, tx.n, visible, len(tx.values))
			}
		case txnAborted:
			r.aborted++
			if visible > 0 {
				r.abortedRead += visible
				r.bad = append(r.bad, txnBad{tx, "aborted-read"})
				example("aborted-read: %s transaction %d aborted, %d values visible", tx.id, tx.n, visible)
			}
		case txnUnknown:
			r.unknown++
			if visible == len(tx.values) {
				r.unknownVisible++
			} else if visible > 0 {
				r.torn++
				r.bad = append(r.bad, txnBad{tx, "torn"})
				example("torn: %s transaction %d (%v) has %d of %d values visible", tx.id, tx.n, tx.err, visible, len(tx.values))
			}
		}
	}
	var vals []string
	for v := range seen {
		vals = append(vals, v)
	}
	sort.Strings(vals)
	for _, v := range vals {
		if seen[v] > 1 {
			r.duplicate++
			example("duplicate: %s visible %d times", v, seen[v])
		}
		if !written[v] {
			// A transaction the workload began but did not record (its
			// client broke before the end) must never be visible.
			r.unexpected++
			example("unexpected: %s", v)
		}
	}
	if r.anomalies() > 0 {
		w.t.Errorf("%s\n%s", r, strings.Join(r.examples, "\n"))
	}
	return r
}

// lsoReport lists each partition's high watermark and last stable offset.
func (w *txnWorkload) lsoReport() string {
	cl, err := kgo.NewClient(kgo.SeedBrokers(w.c.addrs()...))
	if err != nil {
		return err.Error()
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	adm := kadm.NewClient(cl)
	hw, err1 := adm.ListEndOffsets(ctx, w.topic)
	lso, err2 := adm.ListCommittedOffsets(ctx, w.topic)
	if err := errors.Join(err1, err2); err != nil {
		return err.Error()
	}
	var parts []string
	hw.Each(func(o kadm.ListedOffset) {
		l, _ := lso.Lookup(w.topic, o.Partition)
		parts = append(parts, fmt.Sprintf("p%d hw %d lso %d", o.Partition, o.Offset, l.Offset))
	})
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// txnCoordinator returns the broker id FindCoordinator names for a
// transactional id.
func (c *testCluster) txnCoordinator(id string) (int32, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs()...), kgo.RequestRetries(0))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorKey, req.CoordinatorType = id, 1
	req.CoordinatorKeys = []string{id}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return 0, err
	}
	node, code := resp.NodeID, resp.ErrorCode
	if len(resp.Coordinators) == 1 {
		node, code = resp.Coordinators[0].NodeID, resp.Coordinators[0].ErrorCode
	}
	if code != 0 {
		return 0, fmt.Errorf("find coordinator of %s: error code %d", id, code)
	}
	return node, nil
}
