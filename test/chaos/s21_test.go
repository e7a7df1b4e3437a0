package chaos

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"samsa/internal/group"
)

// TestS21ExactlyOncePipelineGroupCoordinatorFaults is TESTPLAN S-21: a
// consume-transform-produce pipeline of three franz-go
// GroupTransactSession workers (read_committed, offsets committed in the
// transactions) copies an input topic to an output topic while the
// coordinator of its consumer group is killed and restarted, then paused.
// When the group's committed offsets reach the input's end, every input
// record is in the output exactly once at read_committed.
func TestS21ExactlyOncePipelineGroupCoordinatorFaults(t *testing.T) {
	const (
		in, out, groupID = "s21-in", "s21-out", "s21-etl"
		partitions       = 5
	)
	n := int(pick(6000, 60000))
	c := startCluster(t)
	c.createTopic(in, partitions)
	c.createTopic(out, partitions)

	// The input, written up front with an idempotent producer.
	pcl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs()...), kgo.DefaultProduceTopic(in),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	want := make(map[string]bool, n)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	batch := make([]*kgo.Record, 0, 500)
	for i := range n {
		v := fmt.Sprintf("in-%07d", i)
		want["out-"+v] = true
		batch = append(batch, &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: []byte(v)})
		if len(batch) == cap(batch) || i == n-1 {
			if err := pcl.ProduceSync(ctx, batch...).FirstErr(); err != nil {
				t.Fatalf("input: %v", err)
			}
			batch = batch[:0]
		}
	}
	cancel()
	pcl.Close()
	ends := c.highWatermarks(in, partitions)

	var (
		mu      sync.Mutex
		commits int
		errs    []string
		wg      sync.WaitGroup
	)
	workers, stop := context.WithCancel(context.Background())
	defer stop()
	for i := range 3 {
		sess, err := kgo.NewGroupTransactSession(
			kgo.SeedBrokers(c.addrs()...),
			kgo.TransactionalID("s21-w"+strconv.Itoa(i)),
			kgo.TransactionTimeout(txnTimeout),
			kgo.ConsumerGroup(groupID),
			kgo.ConsumeTopics(in),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.FetchIsolationLevel(kgo.ReadCommitted()),
			kgo.RequireStableFetchOffsets(),
			kgo.SessionTimeout(6*time.Second),
			kgo.FetchMaxWait(200*time.Millisecond),
			kgo.MetadataMinAge(100*time.Millisecond),
			kgo.MetadataMaxAge(2*time.Second),
			kgo.RetryTimeout(30*time.Second),
		)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer sess.Close()
			for workers.Err() == nil {
				fs := sess.PollRecords(workers, 200)
				if workers.Err() != nil {
					return
				}
				if fs.NumRecords() == 0 {
					continue
				}
				if err := sess.Begin(); err != nil {
					mu.Lock()
					errs = append(errs, "begin: "+err.Error())
					if len(errs) <= 50 {
						t.Logf("%s worker %d: begin: %v", time.Now().Format("15:04:05.000"), i, err)
					}
					mu.Unlock()
					time.Sleep(100 * time.Millisecond)
					continue
				}
				fs.EachRecord(func(r *kgo.Record) {
					sess.Produce(context.Background(), &kgo.Record{Topic: out, Key: r.Key, Value: append([]byte("out-"), r.Value...)}, nil)
				})
				ok, err := sess.End(context.Background(), kgo.TryCommit)
				mu.Lock()
				if ok {
					commits++
				}
				if err != nil {
					errs = append(errs, "end: "+err.Error())
					if len(errs) <= 50 {
						t.Logf("%s worker %d: end: %v", time.Now().Format("15:04:05.000"), i, err)
					}
				}
				mu.Unlock()
			}
		}()
	}
	waitCommits := func(k int) {
		t.Helper()
		mu.Lock()
		base := commits
		mu.Unlock()
		waitFor(t, 90*time.Second, func() error {
			mu.Lock()
			defer mu.Unlock()
			if commits-base < k {
				return fmt.Errorf("%d of %d more pipeline commits", commits-base, k)
			}
			return nil
		})
	}
	waitCommits(3)

	part := group.Partition(groupID, offsetsPartitions)
	coord := func() *broker { return c.brokers[c.mustState(offsetsTopicName, part).Leader] }
	b := coord()
	t.Logf("kill the group coordinator, broker %d", b.id)
	b.kill()
	time.Sleep(pick(3*time.Second, 8*time.Second))
	c.restart(b)
	waitCommits(3)
	b = coord()
	t.Logf("pause the group coordinator, broker %d, for %s", b.id, 2*sessionTimeout)
	b.signal(syscall.SIGSTOP)
	time.Sleep(2 * sessionTimeout)
	b.signal(syscall.SIGCONT)

	// Done when the group committed the input's end on every partition.
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	waitFor(t, pick(3*time.Minute, 10*time.Minute), func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		offs, err := adm.FetchOffsets(ctx, groupID)
		if err != nil {
			return err
		}
		for p, end := range ends {
			if o, ok := offs.Lookup(in, p); !ok || o.At < end {
				return fmt.Errorf("%s-%d committed %d of %d", in, p, o.At, end)
			}
		}
		return nil
	})
	stop()
	wg.Wait()

	rd, err := kgo.NewClient(kgo.SeedBrokers(c.addrs()...), kgo.ConsumeTopics(out),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	seen := make(map[string]int, n)
	got := 0
	var quiet time.Time
	deadline := time.Now().Add(txnTimeout + 60*time.Second)
	for quiet.IsZero() || time.Now().Before(quiet) {
		pctx, pcancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		fs := rd.PollFetches(pctx)
		pcancel()
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)]++; got++ })
		if len(seen) >= n && quiet.IsZero() {
			quiet = time.Now().Add(2 * time.Second)
		}
		if time.Now().After(deadline) {
			break
		}
	}
	var lost, dups, unexpected int
	var examples []string
	for v := range want {
		if seen[v] == 0 {
			lost++
			if len(examples) < 5 {
				examples = append(examples, "lost "+v)
			}
		}
	}
	for v, k := range seen {
		if k > 1 {
			dups++
			if len(examples) < 10 {
				examples = append(examples, fmt.Sprintf("%s %d times", v, k))
			}
		}
		if !want[v] {
			unexpected++
		}
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("S-21: %d input records, %d output records read, %d pipeline commits, %d worker errors (e.g. %.3q)",
		n, got, commits, len(errs), errs)
	if lost+dups+unexpected > 0 {
		t.Fatalf("S-21 anomalies: lost %d, duplicate %d, unexpected %d: %v", lost, dups, unexpected, examples)
	}
}
