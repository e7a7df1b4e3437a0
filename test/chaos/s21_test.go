package chaos

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
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
// coordinator of its consumer group is killed and restarted, then paused
// (the long profile repeats the two faults for 5 minutes). When the
// group's committed offsets reach the input's end, every input record is
// in the output exactly once at read_committed.
func TestS21ExactlyOncePipelineGroupCoordinatorFaults(t *testing.T) {
	const (
		in, out, groupID = "s21-in", "s21-out", "s21-etl"
		partitions       = 5
	)
	c := startCluster(t)
	c.createTopic(in, partitions)
	c.createTopic(out, partitions)

	// The input: an idempotent producer writes batches of 100 records
	// until the faults are over. want holds the transformed values of the
	// acknowledged ones; a failed batch may or may not be in the input, so
	// its values are allowed in the output (once) but not required.
	pcl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs()...), kgo.DefaultProduceTopic(in),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer pcl.Close()
	var (
		inMu  sync.Mutex
		want  = make(map[string]bool)
		maybe = make(map[string]bool)
		inWG  sync.WaitGroup
	)
	inCtx, stopInput := context.WithCancel(context.Background())
	defer stopInput()
	inWG.Add(1)
	go func() {
		defer inWG.Done()
		for i := 0; inCtx.Err() == nil; {
			batch := make([]*kgo.Record, 100)
			for j := range batch {
				v := fmt.Sprintf("in-%07d", i)
				batch[j] = &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: []byte(v)}
				i++
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			err := pcl.ProduceSync(ctx, batch...).FirstErr()
			cancel()
			inMu.Lock()
			for _, r := range batch {
				if err == nil {
					want["out-"+string(r.Value)] = true
				} else {
					maybe["out-"+string(r.Value)] = true
				}
			}
			inMu.Unlock()
			// The next batch 50 ms (long: 200 ms) after this one is
			// acknowledged: tens of records/s under these faults.
			time.Sleep(pick(50*time.Millisecond, 200*time.Millisecond))
		}
	}()

	var (
		mu       sync.Mutex
		commits  int
		sessions int
		errs     []string
		wg       sync.WaitGroup
	)
	logErr := func(i int, what string, err error) {
		mu.Lock()
		defer mu.Unlock()
		errs = append(errs, what+": "+err.Error())
		if len(errs) <= 30 {
			t.Logf("%s worker %d: %s: %v", time.Now().Format("15:04:05.000"), i, what, err)
		}
	}
	workers, stop := context.WithCancel(context.Background())
	defer stop()
	// worker runs sessions of one transactional id until stopped: a
	// session whose producer became unusable (fenced after its
	// transaction timed out while a coordinator was away) is closed and a
	// new one started, as an application does.
	worker := func(i int) {
		defer wg.Done()
		for workers.Err() == nil {
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
				logErr(i, "session", err)
				return
			}
			mu.Lock()
			sessions++
			mu.Unlock()
			for workers.Err() == nil {
				fs := sess.PollRecords(workers, 200)
				if workers.Err() != nil {
					break
				}
				if fs.NumRecords() == 0 {
					continue
				}
				if err := sess.Begin(); err != nil {
					logErr(i, "begin (new session)", err)
					break
				}
				// franz-go commits what was produced even when a
				// produce failed (Java refuses to): an application
				// that wants every input in the output aborts the
				// transaction when any of its produces failed, so its
				// offsets are not committed and the records are read
				// again.
				var (
					pmu      sync.Mutex
					produced error
				)
				fs.EachRecord(func(r *kgo.Record) {
					sess.Produce(context.Background(), &kgo.Record{Topic: out, Key: r.Key, Value: append([]byte("out-"), r.Value...)},
						func(_ *kgo.Record, err error) {
							if err != nil {
								pmu.Lock()
								if produced == nil {
									produced = err
								}
								pmu.Unlock()
							}
						})
				})
				if err := sess.Client().Flush(context.Background()); err != nil {
					logErr(i, "flush", err)
				}
				end := kgo.TryCommit
				pmu.Lock()
				if produced != nil {
					logErr(i, "produce (aborting)", produced)
					end = kgo.TryAbort
				}
				pmu.Unlock()
				ok, err := sess.End(context.Background(), end)
				mu.Lock()
				if ok {
					commits++
				}
				mu.Unlock()
				if err != nil {
					logErr(i, "end", err)
				}
			}
			sess.Close()
		}
	}
	for i := range 3 {
		wg.Add(1)
		go worker(i)
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
	faultsEnd := time.Now().Add(pick(0, 5*time.Minute))
	rounds := 0
	for ; rounds == 0 || time.Now().Before(faultsEnd); rounds++ {
		if rounds > 0 {
			waitCommits(3)
		}
		b := coord()
		t.Logf("round %d: kill the group coordinator, broker %d", rounds, b.id)
		b.kill()
		time.Sleep(pick(3*time.Second, 8*time.Second))
		c.restart(b)
		waitCommits(3)
		b = coord()
		t.Logf("round %d: pause the group coordinator, broker %d, for %s", rounds, b.id, 2*sessionTimeout)
		b.signal(syscall.SIGSTOP)
		time.Sleep(2 * sessionTimeout)
		b.signal(syscall.SIGCONT)
	}

	stopInput()
	inWG.Wait()
	ends := c.highWatermarks(in, partitions)

	// Done when the group committed the input's end on every partition.
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	waitCommitted(t, adm, groupID, in, ends, pick(3*time.Minute, 10*time.Minute))
	stop()
	wg.Wait()

	rd, err := kgo.NewClient(kgo.SeedBrokers(c.addrs()...), kgo.ConsumeTopics(out),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	seen := make(map[string]int, len(want))
	got := 0
	var quiet time.Time
	deadline := time.Now().Add(txnTimeout + 60*time.Second)
	for quiet.IsZero() || time.Now().Before(quiet) {
		pctx, pcancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		fs := rd.PollFetches(pctx)
		pcancel()
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)]++; got++ })
		if len(seen) >= len(want) && quiet.IsZero() {
			quiet = time.Now().Add(2 * time.Second)
		}
		if time.Now().After(deadline) {
			break
		}
	}
	var lost, dups, unexpected int
	var examples, lostValues []string
	inMu.Lock()
	defer inMu.Unlock()
	for v := range want {
		if seen[v] == 0 {
			lost++
			lostValues = append(lostValues, v)
			if len(examples) < 5 {
				examples = append(examples, "lost "+v)
			}
		}
	}
	if lost > 0 {
		explainLost(t, c, in, out, lostValues)
	}
	for v, k := range seen {
		if k > 1 {
			dups++
			if len(examples) < 10 {
				examples = append(examples, fmt.Sprintf("%s %d times", v, k))
			}
		}
		if !want[v] && !maybe[v] {
			unexpected++
		}
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("S-21: %d rounds of faults; %d input records acknowledged (%d unknown), %d output records read, %d pipeline commits in %d sessions, %d worker errors",
		rounds, len(want), len(maybe), got, commits, sessions, len(errs))
	if lost+dups+unexpected > 0 {
		t.Fatalf("S-21 anomalies: lost %d, duplicate %d, unexpected %d: %v", lost, dups, unexpected, examples)
	}
}

// explainLost logs, for each input value whose output is not visible at
// read_committed, where the input record is and every copy of its output
// at read_uncommitted (partition, offset, producer id and epoch), so that
// a lost input (replication), an aborted output (transactions) and an
// output never written (offsets committed past unprocessed records) can
// be told apart.
func explainLost(t *testing.T, c *testCluster, in, out string, lost []string) {
	t.Helper()
	sort.Strings(lost)
	where := func(topic string) map[string][]string {
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs()...), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadUncommitted()),
			kgo.FetchMaxWait(200*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		got := make(map[string][]string)
		idle := 0
		for idle < 6 {
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			fs := cl.PollFetches(ctx)
			cancel()
			if fs.NumRecords() == 0 {
				idle++
				continue
			}
			idle = 0
			fs.EachRecord(func(r *kgo.Record) {
				got[string(r.Value)] = append(got[string(r.Value)], fmt.Sprintf("%s-%d@%d (producer %d epoch %d, %s)",
					r.Topic, r.Partition, r.Offset, r.ProducerID, r.ProducerEpoch, r.Timestamp.Format("15:04:05.000")))
			})
		}
		return got
	}
	inputs, outputs := where(in), where(out)
	for _, v := range lost {
		src := strings.TrimPrefix(v, "out-")
		t.Logf("lost %s: input %v; output at read_uncommitted %v", v, inputs[src], outputs[v])
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs()...))
	if err != nil {
		return
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	adm := kadm.NewClient(cl)
	if offs, err := adm.FetchOffsets(ctx, "s21-etl"); err == nil {
		offs.Each(func(o kadm.OffsetResponse) { t.Logf("committed %s-%d: %d", o.Topic, o.Partition, o.At) })
	}
}
