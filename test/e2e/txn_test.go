package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// readCommitted consumes every partition of topic from the start at
// isolation level read_committed until it has want records, then for one
// more second (to catch extra ones), and returns the values in the order
// each partition gave them.
func readCommitted(t *testing.T, addr, topic string, want int) []string {
	t.Helper()
	return readValues(t, addr, topic, want, kgo.ReadCommitted())
}

// readValues is readCommitted at isolation level iso.
func readValues(t *testing.T, addr, topic string, want int, iso kgo.IsolationLevel) []string {
	t.Helper()
	cl := newClient(t, addr,
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(iso),
		kgo.FetchMaxWait(200*time.Millisecond))
	var out []string
	deadline := time.Now().Add(90 * time.Second)
	var quietUntil time.Time
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		fs := cl.PollFetches(ctx)
		cancel()
		fs.EachError(func(topic string, p int32, err error) {
			if err != context.DeadlineExceeded {
				t.Fatalf("consume %s/%d: %v", topic, p, err)
			}
		})
		fs.EachRecord(func(r *kgo.Record) { out = append(out, string(r.Value)) })
		if len(out) >= want && quietUntil.IsZero() {
			quietUntil = time.Now().Add(time.Second)
		}
		if !quietUntil.IsZero() && time.Now().After(quietUntil) {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("read %s: %d records after 90s, want %d", topic, len(out), want)
		}
	}
}

// checkExactlyOnce fails unless got holds every value of want exactly once
// and nothing else.
func checkExactlyOnce(t *testing.T, what string, got []string, want map[string]bool) {
	t.Helper()
	seen := make(map[string]int, len(got))
	var dups, extra []string
	for _, v := range got {
		seen[v]++
		if seen[v] == 2 {
			dups = append(dups, v)
		}
		if !want[v] {
			extra = append(extra, v)
		}
	}
	var missing []string
	for v := range want {
		if seen[v] == 0 {
			missing = append(missing, v)
		}
	}
	if len(dups)+len(extra)+len(missing) > 0 {
		t.Fatalf("%s: %d records, want %d: %d duplicated (e.g. %q), %d unexpected (e.g. %q), %d missing (e.g. %q)",
			what, len(got), len(want), len(dups), firstFew(dups), len(extra), firstFew(extra), len(missing), firstFew(missing))
	}
}

// firstFew returns at most five elements of s, for messages.
func firstFew(s []string) []string { return s[:min(len(s), 5)] }

// produceInputs writes n records "in-%07d" round robin over topic's
// partitions and returns the transformed values the pipeline must write.
func produceInputs(t *testing.T, addr, topic string, n int) map[string]bool {
	t.Helper()
	cl := newClient(t, addr, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	want := make(map[string]bool, n)
	recs := make([]*kgo.Record, 0, 1000)
	for i := range n {
		v := fmt.Sprintf("in-%07d", i)
		want["out-"+v] = true
		recs = append(recs, &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: []byte(v)})
		if len(recs) == cap(recs) || i == n-1 {
			if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
				t.Fatalf("produce inputs: %v", err)
			}
			recs = recs[:0]
		}
	}
	return want
}

// TestTransactionalETLFranzGo runs franz-go's GroupTransactSession as a
// consume-transform-produce pipeline while workers join and leave the
// group: every input record appears exactly once in the output read at
// read_committed, and the group's committed offsets reach the input's end.
// SAMSA_LONG=1 runs 500,000 records instead of 30,000.
func TestTransactionalETLFranzGo(t *testing.T) {
	b := newBroker(t, "group.initial.rebalance.delay.ms=0")
	addr := b.addr()
	const (
		in, out, group = "etl-in", "etl-out", "etl"
		partitions     = 6
	)
	n := 30000
	if os.Getenv("SAMSA_LONG") != "" {
		n = 500000
	}
	createTopic(t, addr, in, partitions, nil)
	createTopic(t, addr, out, partitions, nil)
	want := produceInputs(t, addr, in, n)

	var (
		mu       sync.Mutex
		errs     []error
		commits  int
		workerWG sync.WaitGroup
	)
	start := func(id string) context.CancelFunc {
		ctx, cancel := context.WithCancel(context.Background())
		sess, err := kgo.NewGroupTransactSession(
			kgo.SeedBrokers(addr),
			kgo.TransactionalID(id),
			kgo.TransactionTimeout(10*time.Second),
			kgo.ConsumerGroup(group),
			kgo.ConsumeTopics(in),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.FetchIsolationLevel(kgo.ReadCommitted()),
			kgo.RequireStableFetchOffsets(),
			kgo.SessionTimeout(6*time.Second),
			kgo.FetchMaxWait(200*time.Millisecond),
		)
		if err != nil {
			t.Fatal(err)
		}
		workerWG.Add(1)
		go func() {
			defer workerWG.Done()
			defer sess.Close()
			for ctx.Err() == nil {
				fs := sess.PollFetches(ctx)
				if ctx.Err() != nil {
					return
				}
				fs.EachError(func(topic string, p int32, err error) {
					mu.Lock()
					errs = append(errs, fmt.Errorf("%s: fetch %s/%d: %w", id, topic, p, err))
					mu.Unlock()
				})
				if fs.NumRecords() == 0 {
					continue
				}
				if err := sess.Begin(); err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("%s: begin: %w", id, err))
					mu.Unlock()
					return
				}
				fs.EachRecord(func(r *kgo.Record) {
					sess.Produce(ctx, &kgo.Record{Topic: out, Key: r.Key, Value: append([]byte("out-"), r.Value...)}, nil)
				})
				committed, err := sess.End(ctx, kgo.TryCommit)
				mu.Lock()
				if committed {
					commits++
				}
				if err != nil && ctx.Err() == nil {
					errs = append(errs, fmt.Errorf("%s: end: %w", id, err))
				}
				mu.Unlock()
			}
		}()
		return cancel
	}

	stop1 := start("etl-w1")
	stop2 := start("etl-w2")
	// Membership changes while the pipeline runs: a third worker joins,
	// the first leaves, a fourth joins.
	time.Sleep(2 * time.Second)
	stop3 := start("etl-w3")
	time.Sleep(2 * time.Second)
	stop1()
	stop4 := start("etl-w4")

	adm := kadm.NewClient(newClient(t, addr))
	ends := endOffsets(t, addr, in)
	deadline := time.Now().Add(5 * time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		offs, err := adm.FetchOffsets(ctx, group)
		cancel()
		done := err == nil
		for p, end := range ends {
			o, ok := offs.Lookup(in, p)
			if !ok || o.At < end {
				done = false
			}
		}
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("group %s did not commit the input's end %v within 5 minutes: %v (err %v)", group, ends, offs, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	stop2()
	stop3()
	stop4()
	workerWG.Wait()

	got := readCommitted(t, addr, out, n)
	checkExactlyOnce(t, "etl output at read_committed", got, want)
	mu.Lock()
	defer mu.Unlock()
	if commits == 0 {
		t.Fatal("no transaction committed")
	}
	// Errors from rebalances (a revoked partition's commit is aborted) are
	// the session's business; they must not have cost a record, which the
	// check above proves. Report them for the log.
	for _, err := range errs {
		t.Logf("worker error: %v", err)
	}
	t.Logf("%d records, %d committed transactions", n, commits)
}

// txnPythonSummary is what testdata/confluent_txn.py prints.
type txnPythonSummary struct {
	Commits  int      `json:"commits"`
	Aborts   int      `json:"aborts"`
	Consumed int      `json:"consumed"`
	Errors   []string `json:"errors"`
}

// TestConfluentPythonTransactions runs confluent-kafka-python's
// transactional API (init_transactions, begin_transaction,
// send_offsets_to_transaction, commit_transaction, abort_transaction) as a
// consume-transform-produce loop that also aborts transactions of junk
// records: a read_committed consumer sees every input transformed exactly
// once and no aborted record, the aborted records are in the log (read
// uncommitted sees them), and the group's offsets are the input's end.
func TestConfluentPythonTransactions(t *testing.T) {
	python := requireConfluentPython(t)
	b := newBroker(t, "group.initial.rebalance.delay.ms=0")
	addr := b.addr()
	const (
		in, out, group = "py-txn-in", "py-txn-out", "py-txn"
		partitions     = 3
		n              = 3000
	)
	createTopic(t, addr, in, partitions, nil)
	createTopic(t, addr, out, partitions, nil)
	want := produceInputs(t, addr, in, n)

	ctx, cancel := context.WithTimeout(context.Background(), 180*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, "testdata/confluent_txn.py", addr, in, out, group, "py-txn-1", strconv.Itoa(n))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("confluent_txn.py: %v\nstderr:\n%s", err, stderr.String())
	}
	var sum txnPythonSummary
	if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil {
		t.Fatalf("summary: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	if len(sum.Errors) > 0 {
		t.Fatalf("confluent_txn.py errors: %v", sum.Errors)
	}
	if sum.Consumed != n || sum.Commits == 0 || sum.Aborts == 0 {
		t.Fatalf("script consumed %d of %d, %d commits, %d aborts", sum.Consumed, n, sum.Commits, sum.Aborts)
	}

	got := readCommitted(t, addr, out, n)
	checkExactlyOnce(t, "python output at read_committed", got, want)

	// The aborted junk is in the log: read_uncommitted sees it.
	junk := 0
	for _, v := range readValues(t, addr, out, n, kgo.ReadUncommitted()) {
		if strings.HasPrefix(v, "junk-") {
			junk++
		}
	}
	if junk == 0 {
		t.Fatal("no aborted record in the log at read_uncommitted: the aborts wrote nothing")
	}

	offs := committed(t, addr, group)
	for p, end := range endOffsets(t, addr, in) {
		if offs[p] != end {
			t.Fatalf("group %s committed %v, want the input's end %d on partition %d", group, offs, end, p)
		}
	}
	t.Logf("%d commits, %d aborts, %d aborted records in the log", sum.Commits, sum.Aborts, junk)
}

// TestKcatReadCommitted writes committed, aborted and one open transaction
// with franz-go; kcat with isolation.level=read_committed prints exactly
// the committed records, and read_uncommitted prints all of them.
func TestKcatReadCommitted(t *testing.T) {
	kcat := requireKcat(t)
	b := newBroker(t)
	addr := b.addr()
	const topic = "kcat-txn"
	createTopic(t, addr, topic, 1, nil)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// end is "commit", "abort" or "" (leave the transaction open).
	write := func(id string, values []string, end string) *kgo.Client {
		cl := newClient(t, addr, kgo.TransactionalID(id), kgo.DefaultProduceTopic(topic))
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for _, v := range values {
			if err := cl.ProduceSync(ctx, kgo.StringRecord(v)).FirstErr(); err != nil {
				t.Fatalf("produce %s: %v", v, err)
			}
		}
		if end != "" {
			if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(end == "commit")); err != nil {
				t.Fatalf("end transaction: %v", err)
			}
		}
		return cl
	}
	write("kcat-a", []string{"c1", "c2"}, "commit")
	write("kcat-b", []string{"a1", "a2"}, "abort")
	write("kcat-a", []string{"c3"}, "commit")

	got := runKcat(t, kcat, "", "-b", addr, "-C", "-t", topic, "-e", "-o", "beginning", "-q", "-f", "%s\n",
		"-X", "isolation.level=read_committed")
	checkLines(t, "kcat read_committed", got, []string{"c1", "c2", "c3"})
	all := runKcat(t, kcat, "", "-b", addr, "-C", "-t", topic, "-e", "-o", "beginning", "-q", "-f", "%s\n",
		"-X", "isolation.level=read_uncommitted")
	checkLines(t, "kcat read_uncommitted", all, []string{"c1", "c2", "a1", "a2", "c3"})

	// An open transaction holds read_committed back at its first record.
	write("kcat-c", []string{"open1"}, "")
	write("kcat-a", []string{"c4"}, "commit")
	got = runKcat(t, kcat, "", "-b", addr, "-C", "-t", topic, "-e", "-o", "beginning", "-q", "-f", "%s\n",
		"-X", "isolation.level=read_committed")
	checkLines(t, "kcat read_committed with an open transaction", got, []string{"c1", "c2", "c3"})
}
