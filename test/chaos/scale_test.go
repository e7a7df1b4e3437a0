package chaos

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	clientv3 "go.etcd.io/etcd/client/v3"

	"samsa/internal/testutil"
)

// TestScaleCluster is the cluster scale measurement of
// docs/performance.md; it runs only with SAMSA_SCALE=1 (make scale).
// Three brokers hold SAMSA_SCALE_PARTITIONS partitions (10,000 unless
// set) of replication factor 3, 30,000 replicas, in topics of 100
// partitions. It creates them, produces one record to every partition
// with acks=all and reads every one back, then kills a broker with
// SIGKILL (how long until none of its partitions is still led by it),
// starts it again (how long until every ISR is full), moves leadership
// back with a preferred election, and restarts the whole cluster cleanly;
// every acknowledged record must still be there. It logs memory,
// descriptors and CPU of each broker, and the etcd keys. Nothing in it
// asserts a time.
func TestScaleCluster(t *testing.T) {
	if os.Getenv("SAMSA_SCALE") == "" {
		t.Skip("scale measurement: set SAMSA_SCALE=1 (make scale)")
	}
	n := 10000
	if s := os.Getenv("SAMSA_SCALE_PARTITIONS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v <= 0 {
			t.Fatalf("SAMSA_SCALE_PARTITIONS=%q: want a positive count", s)
		}
		n = v
	}
	report := func(format string, args ...any) { t.Logf("scale: "+format, args...) }
	topics := map[string]int32{}
	var names []string
	for i := 0; i < n; i += 100 {
		name := fmt.Sprintf("scale-%03d", i/100)
		topics[name] = int32(min(100, n-i))
		names = append(names, name)
	}
	report("%d partitions of RF 3 (%d replicas) in %d topics on %d brokers, %d CPUs", n, 3*n, len(topics), numBrokers, runtime.NumCPU())

	c := startCluster(t)
	stats := func(when string) {
		t.Helper()
		var parts []string
		for _, b := range c.brokers {
			if b.running() {
				parts = append(parts, fmt.Sprintf("broker %d: %s", b.id, testutil.ReadProcStats(t, b.cmd.Process.Pid)))
			}
		}
		report("%s: %s", when, strings.Join(parts, "; "))
	}
	stats("empty")

	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Minute)
	defer cancel()

	began := time.Now()
	for i := 0; i < len(names); i += 10 {
		batch := names[i:min(i+10, len(names))]
		resps, err := adm.CreateTopics(ctx, 100, 3, nil, batch...)
		if err == nil {
			err = resps.Error()
		}
		if err != nil {
			t.Fatalf("create topics: %v", err)
		}
	}
	created := time.Since(began)
	full := waitScaleISR(t, c, adm, names, n, 3, 10*time.Minute)
	report("CreateTopics of %d partitions: %s; every ISR full after %s", n, created.Round(time.Millisecond), full.Round(time.Millisecond))
	time.Sleep(10 * time.Second)
	stats("idle")
	report("idle CPU over 10 s: %s", cpuOver(t, c, 10*time.Second))
	keys, dbBytes := etcdStats(t, c)
	report("etcd: %d keys under /samsa/, %.1f MiB", keys, float64(dbBytes)/(1<<20))

	// One record per partition, acks=all.
	var mu sync.Mutex
	acked := map[string]map[int32]string{}
	var wg sync.WaitGroup
	began = time.Now()
	for _, name := range names {
		acked[name] = map[int32]string{}
		for p := range topics[name] {
			v := fmt.Sprintf("%s/%d", name, p)
			wg.Add(1)
			cl.Produce(ctx, &kgo.Record{Topic: name, Partition: p, Value: []byte(v)}, func(r *kgo.Record, err error) {
				defer wg.Done()
				if err != nil {
					t.Errorf("produce %s: %v", v, err)
					return
				}
				mu.Lock()
				acked[name][p] = v
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	report("produced one record to each of %d partitions (acks=all) in %s", n, time.Since(began).Round(time.Millisecond))
	report("consumed them all back in %s", checkScaleRecords(t, c, names, topics, acked).Round(time.Millisecond))

	// A broker dies.
	victim := c.brokers[numBrokers-1]
	led := leadersOf(t, adm, names, victim.id)
	killedAt := time.Now()
	victim.kill()
	waitFor(t, 5*time.Minute, func() error {
		if m := leadersOf(t, adm, names, victim.id); m > 0 {
			return fmt.Errorf("broker %d still leads %d partitions", victim.id, m)
		}
		return nil
	})
	report("kill -9 of broker %d, which led %d partitions: none led by it after %s (broker.session.timeout.ms %s)",
		victim.id, led, time.Since(killedAt).Round(time.Millisecond), sessionTimeout)
	startedAt := time.Now()
	c.restart(victim)
	ready := time.Since(startedAt)
	full = waitScaleISR(t, c, adm, names, n, 3, 10*time.Minute)
	report("broker %d restarted: Metadata after %s, every ISR full after %s", victim.id, ready.Round(time.Millisecond), full.Round(time.Millisecond))

	// Leadership moves back.
	electAt := time.Now()
	set := kadm.TopicsSet{}
	for _, name := range names {
		for p := range topics[name] {
			set.Add(name, p)
		}
	}
	if _, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, set); err != nil {
		t.Fatalf("preferred election: %v", err)
	}
	waitFor(t, 5*time.Minute, func() error {
		if m := leadersOf(t, adm, names, victim.id); m < led {
			return fmt.Errorf("broker %d leads %d of its %d preferred partitions", victim.id, m, led)
		}
		return nil
	})
	report("preferred election: broker %d leads its %d partitions again after %s", victim.id, led, time.Since(electAt).Round(time.Millisecond))
	stats("after the failover")

	// A clean restart of the whole cluster.
	stopAt := time.Now()
	for _, b := range c.brokers {
		b.signal(syscall.SIGTERM)
		if st, ok := b.waitExit(2 * time.Minute); !ok || st.ExitCode() != 0 {
			t.Fatalf("broker %d after SIGTERM: %v", b.id, st)
		}
	}
	stopped := time.Since(stopAt)
	startAt := time.Now()
	for _, b := range c.brokers {
		b.start()
	}
	for _, b := range c.brokers {
		c.waitReady(b, numBrokers)
	}
	ready = time.Since(startAt)
	full = waitScaleISR(t, c, adm, names, n, 3, 10*time.Minute)
	report("clean restart of all brokers: stopped in %s, Metadata after %s, every ISR full after %s",
		stopped.Round(time.Millisecond), ready.Round(time.Millisecond), full.Round(time.Millisecond))
	report("every acknowledged record read back after the restart in %s", checkScaleRecords(t, c, names, topics, acked).Round(time.Millisecond))
	time.Sleep(10 * time.Second)
	stats("idle after the restart")
	report("idle CPU over 10 s: %s", cpuOver(t, c, 10*time.Second))
}

// waitScaleISR waits until Metadata shows every one of the n partitions
// of names led with an ISR of rf, and returns how long that took.
func waitScaleISR(t *testing.T, c *testCluster, adm *kadm.Client, names []string, n, rf int, d time.Duration) time.Duration {
	t.Helper()
	began := time.Now()
	waitFor(t, d, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		meta, err := adm.Metadata(ctx, names...)
		if err != nil {
			return err
		}
		good := 0
		for _, td := range meta.Topics {
			for _, p := range td.Partitions {
				if p.Err == nil && p.Leader >= 0 && len(p.ISR) == rf {
					good++
				}
			}
		}
		if good < n {
			return fmt.Errorf("%d of %d partitions led with a full ISR", good, n)
		}
		return nil
	})
	return time.Since(began)
}

// leadersOf counts the partitions of names that Metadata shows led by id.
func leadersOf(t *testing.T, adm *kadm.Client, names []string, id int32) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	meta, err := adm.Metadata(ctx, names...)
	if err != nil {
		t.Logf("metadata: %v", err)
		return -1
	}
	led := 0
	for _, td := range meta.Topics {
		for _, p := range td.Partitions {
			if p.Leader == id {
				led++
			}
		}
	}
	return led
}

// checkScaleRecords reads offset 0 of every partition and fails unless it
// holds the acknowledged value.
func checkScaleRecords(t *testing.T, c *testCluster, names []string, topics map[string]int32, acked map[string]map[int32]string) time.Duration {
	t.Helper()
	began := time.Now()
	offsets := map[string]map[int32]kgo.Offset{}
	remaining := 0
	for _, name := range names {
		offsets[name] = map[int32]kgo.Offset{}
		for p := range topics[name] {
			offsets[name][p] = kgo.NewOffset().At(0)
			remaining++
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs()...), kgo.ConsumePartitions(offsets), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	seen := map[string]bool{}
	for remaining > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consume: %d partitions not read back", remaining)
		}
		fs.EachRecord(func(r *kgo.Record) {
			key := fmt.Sprintf("%s/%d", r.Topic, r.Partition)
			if r.Offset != 0 || seen[key] {
				return
			}
			if want := acked[r.Topic][r.Partition]; string(r.Value) != want {
				t.Fatalf("%s offset 0: %q, acknowledged %q", key, r.Value, want)
			}
			seen[key] = true
			remaining--
		})
	}
	return time.Since(began)
}

// cpuOver returns each running broker's CPU use over d, in cores.
func cpuOver(t *testing.T, c *testCluster, d time.Duration) string {
	t.Helper()
	ticks := func(pid int) float64 {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return 0
		}
		// The fields after the command name (which may hold spaces).
		f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+2:]))
		u, _ := strconv.ParseFloat(f[11], 64)
		s, _ := strconv.ParseFloat(f[12], 64)
		return u + s
	}
	before := map[int32]float64{}
	for _, b := range c.brokers {
		if b.running() {
			before[b.id] = ticks(b.cmd.Process.Pid)
		}
	}
	time.Sleep(d)
	var parts []string
	ids := make([]int, 0, len(before))
	for id := range before {
		ids = append(ids, int(id))
	}
	sort.Ints(ids)
	for _, id := range ids {
		b := c.brokers[id]
		used := (ticks(b.cmd.Process.Pid) - before[b.id]) / 100 // USER_HZ
		parts = append(parts, fmt.Sprintf("broker %d %.2f cores", id, used/d.Seconds()))
	}
	return strings.Join(parts, ", ")
}

// etcdStats counts the keys under /samsa/ and reads etcd's database size.
func etcdStats(t *testing.T, c *testCluster) (keys, dbBytes int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := c.etcdCli.Get(ctx, "/samsa/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatalf("count etcd keys: %v", err)
	}
	st, err := c.etcdCli.Status(ctx, c.etcdURL)
	if err != nil {
		t.Logf("etcd status: %v", err)
		return resp.Count, 0
	}
	return resp.Count, st.DbSize
}
