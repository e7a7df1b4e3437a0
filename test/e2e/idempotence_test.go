package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"samsa/internal/testutil"
)

// delayedBroker starts a broker whose advertised address is a fault proxy
// in front of it that delays every response by 20-50 ms. Every client,
// whatever it dials first, then talks to the broker through the proxy, and
// when the broker is killed the responses still on their way are lost
// with the connection: the producer must retry batches the broker had
// already written, which is what the dedupe state is for.
func delayedBroker(t *testing.T) (*broker, *testutil.Proxy) {
	t.Helper()
	px := testutil.NewProxy(t, "127.0.0.1:1") // target set once the broker has a port
	b := newBroker(t, "advertised.listeners=PLAINTEXT://"+px.Addr())
	px.SetTarget(b.addr())
	px.SetResponseDelay(20*time.Millisecond, 30*time.Millisecond)
	return b, px
}

// idemValue is the value of the seq-th record sent to partition p.
func idemValue(p int32, seq int) string { return fmt.Sprintf("p%d-%d", p, seq) }

// idemAcked records which sequence numbers of each partition were
// acknowledged. It is safe for concurrent use; mu guards acked.
type idemAcked struct {
	mu    sync.Mutex
	acked map[int32]map[int]bool
	count atomic.Int64
}

func (a *idemAcked) add(p int32, seq int) {
	a.mu.Lock()
	if a.acked == nil {
		a.acked = make(map[int32]map[int]bool)
	}
	if a.acked[p] == nil {
		a.acked[p] = make(map[int]bool)
	}
	a.acked[p][seq] = true
	a.mu.Unlock()
	a.count.Add(1)
}

// checkIdempotentLog consumes topic and checks, per partition: every
// value belongs to the partition, sequence numbers strictly increase
// (so no record is there twice and none out of send order), and every
// acknowledged sequence is present. It returns the counts it found.
func checkIdempotentLog(t *testing.T, addr, topic string, partitions int32, acked *idemAcked) (records, dups, missing int) {
	t.Helper()
	got := consumeAll(t, addr, topic)
	acked.mu.Lock()
	defer acked.mu.Unlock()
	for p := int32(0); p < partitions; p++ {
		prefix := fmt.Sprintf("p%d-", p)
		present := make(map[int]int)
		prev := -1
		reported := 0
		for _, r := range got[p] {
			records++
			v := string(r.Value)
			seq, err := strconv.Atoi(strings.TrimPrefix(v, prefix))
			if !strings.HasPrefix(v, prefix) || err != nil {
				t.Fatalf("partition %d offset %d holds %q, never sent to this partition", p, r.Offset, v)
			}
			present[seq]++
			if present[seq] > 1 {
				dups++
			}
			if seq <= prev && reported < 5 {
				reported++
				t.Errorf("partition %d offset %d: sequence %d after %d (duplicate or out of order)", p, r.Offset, seq, prev)
			}
			prev = max(prev, seq)
		}
		for seq := range acked.acked[p] {
			if present[seq] == 0 {
				if missing < 10 {
					t.Errorf("partition %d: acknowledged sequence %d missing", p, seq)
				}
				missing++
			}
		}
	}
	return records, dups, missing
}

// TestS11KillDuringIdempotentProduce runs a franz-go idempotent producer
// (acks=all) on 4 partitions while the broker is killed with SIGKILL and
// restarted twice on the same data dir, talking to it through a proxy
// that delays responses (so the kill loses answers to batches already
// written). The producer keeps its producer id
// across the restarts and retries what was in flight; the broker must
// rebuild its producer state (snapshot plus log tail) so that those
// retries are recognised. Afterwards every acknowledged record is in the
// log exactly once, and no record is there twice or out of send order.
// Reference: KIP-98, KIP-360; TESTPLAN S-11.
func TestS11KillDuringIdempotentProduce(t *testing.T) {
	const (
		topic      = "s11"
		partitions = 4
		kills      = 2
	)
	b, px := delayedBroker(t)
	createTopic(t, b.addr(), topic, partitions, nil)

	cl := newClient(t, px.Addr(),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(time.Millisecond),
		kgo.MaxBufferedRecords(5000),
		kgo.RecordRetries(1<<30),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }),
		kgo.MetadataMinAge(100*time.Millisecond),
		kgo.ProduceRequestTimeout(10*time.Second),
	)

	acked := &idemAcked{}
	var (
		failed   atomic.Int64
		firstErr atomic.Pointer[error]
		promises sync.WaitGroup
		sent     [partitions]int // only the producing goroutine touches it until produced is closed
	)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := make(chan struct{})
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			p := int32(i % partitions)
			seq := sent[p]
			sent[p]++
			promises.Add(1)
			cl.Produce(ctx, &kgo.Record{Topic: topic, Partition: p, Value: []byte(idemValue(p, seq))},
				func(r *kgo.Record, err error) {
					defer promises.Done()
					if err != nil {
						failed.Add(1)
						firstErr.CompareAndSwap(nil, &err)
						return
					}
					acked.add(r.Partition, seq)
				})
		}
	}()

	waitAcks := func(what string, n int64) {
		t.Helper()
		from := acked.count.Load()
		waitFor(t, 60*time.Second, func() error {
			if got := acked.count.Load() - from; got < n {
				return fmt.Errorf("%s: %d acks so far, want %d", what, got, n)
			}
			return nil
		})
	}
	for k := 1; k <= kills; k++ {
		waitAcks(fmt.Sprintf("before kill %d", k), 20000)
		b.kill()
		t.Logf("kill %d: %d acknowledged", k, acked.count.Load())
		b.start()
	}
	waitAcks("after the last restart", 20000)
	close(stop)
	<-produced
	flushCtx, flushCancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer flushCancel()
	if err := cl.Flush(flushCtx); err != nil {
		t.Fatalf("flush: %v", err)
	}
	promises.Wait()
	if n := failed.Load(); n > 0 {
		// With unbounded retries nothing should fail; a failure is not a
		// safety violation by itself, so report it and check the rest.
		t.Errorf("%d records failed, first: %v", n, *firstErr.Load())
	}
	total := 0
	for _, n := range sent {
		total += n
	}
	records, dups, missing := checkIdempotentLog(t, b.addr(), topic, partitions, acked)
	t.Logf("%d sent, %d acknowledged, %d in the log, %d duplicates, %d acknowledged missing",
		total, acked.count.Load(), records, dups, missing)
	if dups != 0 || missing != 0 {
		t.Fatalf("%d duplicates, %d acknowledged records missing", dups, missing)
	}
	if failed.Load() == 0 && records != total {
		t.Fatalf("%d records in the log, %d sent and all acknowledged", records, total)
	}
}

// confluentIdemSummary is what testdata/confluent_idempotent.py prints.
type confluentIdemSummary struct {
	Delivered []struct {
		I         int   `json:"i"`
		Partition int32 `json:"partition"`
		Offset    int64 `json:"offset"`
	} `json:"delivered"`
	DeliveryErrors []string `json:"delivery_errors"`
	Unflushed      int      `json:"unflushed"`
}

// TestS11ConfluentPythonIdempotentKill runs a confluent-kafka-python
// producer with enable.idempotence=True while the broker is killed with
// SIGKILL once and restarted, through the same delaying proxy. Every
// delivered record is in the log once,
// at the offset its delivery report gave, and no record is there twice.
// Reference: KIP-98; TESTPLAN S-11.
func TestS11ConfluentPythonIdempotentKill(t *testing.T) {
	python := requireConfluentPython(t)
	const (
		topic      = "s11-confluent"
		partitions = 4
		count      = 40000
	)
	b, px := delayedBroker(t)
	createTopic(t, b.addr(), topic, partitions, nil)

	ctx, cancel := context.WithTimeout(context.Background(), 180*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, "testdata/confluent_idempotent.py",
		px.Addr(), topic, strconv.Itoa(partitions), strconv.Itoa(count))
	var stdout, stderrBuf bytes.Buffer
	cmd.Stdout = &stdout
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start confluent_idempotent.py: %v", err)
	}
	// Read progress lines; kill the broker once 5000 are delivered.
	var delivered atomic.Int64
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			if n, ok := strings.CutPrefix(line, "progress "); ok {
				if v, err := strconv.ParseInt(n, 10, 64); err == nil {
					delivered.Store(v)
				}
				continue
			}
			stderrBuf.WriteString(line + "\n")
		}
	}()
	waitFor(t, 60*time.Second, func() error {
		if n := delivered.Load(); n < 5000 {
			return fmt.Errorf("%d delivered", n)
		}
		return nil
	})
	b.kill()
	t.Logf("killed after %d delivered", delivered.Load())
	b.start()
	<-scanned
	if err := cmd.Wait(); err != nil {
		t.Fatalf("confluent_idempotent.py: %v\nstderr:\n%s", err, stderrBuf.String())
	}
	var sum confluentIdemSummary
	if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil {
		t.Fatalf("summary: %v\nstdout:\n%.2000s\nstderr:\n%s", err, stdout.String(), stderrBuf.String())
	}
	t.Logf("%d delivered, %d delivery errors, %d unflushed", len(sum.Delivered), len(sum.DeliveryErrors), sum.Unflushed)
	if len(sum.DeliveryErrors) > 0 {
		t.Logf("first delivery error: %s", sum.DeliveryErrors[0])
	}

	acked := &idemAcked{}
	type pos struct {
		p int32
		o int64
	}
	at := make(map[pos]int)
	for _, d := range sum.Delivered {
		if want := int32(d.I % partitions); d.Partition != want {
			t.Fatalf("record %d delivered to partition %d, want %d", d.I, d.Partition, want)
		}
		if prev, dup := at[pos{d.Partition, d.Offset}]; dup {
			t.Fatalf("records %d and %d both delivered at %d/%d", prev, d.I, d.Partition, d.Offset)
		}
		at[pos{d.Partition, d.Offset}] = d.I
		acked.add(d.Partition, d.I/partitions)
	}
	records, dups, missing := checkIdempotentLog(t, b.addr(), topic, partitions, acked)
	t.Logf("%d records in the log, %d duplicates, %d delivered missing", records, dups, missing)
	if dups != 0 || missing != 0 {
		t.Fatalf("%d duplicates, %d delivered records missing", dups, missing)
	}
	// Each delivery report's offset holds that record.
	got := consumeAll(t, b.addr(), topic)
	for p := int32(0); p < partitions; p++ {
		for _, r := range got[p] {
			if i, ok := at[pos{p, r.Offset}]; ok {
				if want := idemValue(p, i/partitions); string(r.Value) != want {
					t.Fatalf("partition %d offset %d holds %q, delivery report said %q", p, r.Offset, r.Value, want)
				}
			}
		}
	}
	if len(sum.DeliveryErrors) == 0 && sum.Unflushed == 0 && len(sum.Delivered) != count {
		t.Fatalf("%d delivered with no errors, want %d", len(sum.Delivered), count)
	}
}
