package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	clientv3 "go.etcd.io/etcd/client/v3"

	"samsa/internal/testutil"
)

// The scale measurement runs only with SAMSA_SCALE=1 (make scale): one
// broker, the binary with its default durable config, and
// SAMSA_SCALE_PARTITIONS partitions (10,000 unless set) of replication
// factor 1 in topics of 100.

// scalePartitions returns the partition count of the scale run.
func scalePartitions(t *testing.T) int {
	t.Helper()
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
	return n
}

// scaleLedger holds every acknowledged record of the scale run by
// partition, with the value it was written with.
type scaleLedger struct {
	mu    sync.Mutex
	acked map[string]map[int32]map[int64]string // topic -> partition -> offset -> value
	n     int
}

func newScaleLedger() *scaleLedger {
	return &scaleLedger{acked: map[string]map[int32]map[int64]string{}}
}

func (l *scaleLedger) add(r *kgo.Record) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ps := l.acked[r.Topic]
	if ps == nil {
		ps = map[int32]map[int64]string{}
		l.acked[r.Topic] = ps
	}
	offs := ps[r.Partition]
	if offs == nil {
		offs = map[int64]string{}
		ps[r.Partition] = offs
	}
	offs[r.Offset] = string(r.Value)
	l.n++
}

func (l *scaleLedger) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

// scaleTopics returns the topics of a run of n partitions: topics of 100
// partitions, the last one smaller when n is not a multiple of 100.
func scaleTopics(n int) map[string]int32 {
	out := map[string]int32{}
	for i := 0; n > 0; i++ {
		p := min(n, 100)
		out[fmt.Sprintf("scale-%03d", i)] = int32(p)
		n -= p
	}
	return out
}

// produceScale writes one record of round to every partition of topics
// with acks=all and records each acknowledged one. Every record must be
// acknowledged.
func produceScale(t *testing.T, addr string, topics map[string]int32, round string, l *scaleLedger) time.Duration {
	t.Helper()
	cl := newClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(5*time.Millisecond), kgo.MaxBufferedRecords(20000))
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	began := time.Now()
	var wg sync.WaitGroup
	var errMu sync.Mutex
	var firstErr error
	for topic, n := range topics {
		for p := int32(0); p < n; p++ {
			wg.Add(1)
			r := &kgo.Record{Topic: topic, Partition: p, Value: []byte(fmt.Sprintf("%s/%s/%d", round, topic, p))}
			cl.Produce(ctx, r, func(r *kgo.Record, err error) {
				defer wg.Done()
				if err != nil {
					errMu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("%s/%d: %w", r.Topic, r.Partition, err)
					}
					errMu.Unlock()
					return
				}
				l.add(r)
			})
		}
	}
	wg.Wait()
	if firstErr != nil {
		t.Fatalf("produce round %s: %v", round, firstErr)
	}
	return time.Since(began)
}

// checkScale reads every partition of topics from offset 0 to its high
// watermark and fails unless every acknowledged record comes back at its
// offset with its value.
func checkScale(t *testing.T, addr string, topics map[string]int32, l *scaleLedger) time.Duration {
	t.Helper()
	began := time.Now()
	cl := newClient(t, addr)
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	names := make([]string, 0, len(topics))
	for topic := range topics {
		names = append(names, topic)
	}
	ends, err := adm.ListEndOffsets(ctx, names...)
	if err != nil {
		t.Fatalf("list end offsets: %v", err)
	}
	if err := ends.Error(); err != nil {
		t.Fatalf("list end offsets: %v", err)
	}
	start := map[string]map[int32]kgo.Offset{}
	remaining := 0
	want := map[string]map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset == 0 {
			return
		}
		if start[o.Topic] == nil {
			start[o.Topic] = map[int32]kgo.Offset{}
			want[o.Topic] = map[int32]int64{}
		}
		start[o.Topic][o.Partition] = kgo.NewOffset().At(0)
		want[o.Topic][o.Partition] = o.Offset
		remaining++
	})
	l.mu.Lock()
	for topic, ps := range l.acked {
		for p, offs := range ps {
			for off := range offs {
				if off >= want[topic][p] {
					l.mu.Unlock()
					t.Fatalf("%s/%d: acknowledged offset %d at or above the high watermark %d", topic, p, off, want[topic][p])
				}
			}
		}
	}
	l.mu.Unlock()
	cons := newClient(t, addr, kgo.ConsumePartitions(start), kgo.FetchMaxWait(200*time.Millisecond))
	defer cons.Close()
	got := map[string]map[int32]map[int64]string{}
	done := map[string]map[int32]bool{}
	for remaining > 0 {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consume: %d partitions short of their high watermark after 5m", remaining)
		}
		fs.EachError(func(topic string, p int32, err error) {
			t.Fatalf("consume %s/%d: %v", topic, p, err)
		})
		fs.EachRecord(func(r *kgo.Record) {
			if got[r.Topic] == nil {
				got[r.Topic] = map[int32]map[int64]string{}
				done[r.Topic] = map[int32]bool{}
			}
			if got[r.Topic][r.Partition] == nil {
				got[r.Topic][r.Partition] = map[int64]string{}
			}
			got[r.Topic][r.Partition][r.Offset] = string(r.Value)
			if r.Offset == want[r.Topic][r.Partition]-1 && !done[r.Topic][r.Partition] {
				done[r.Topic][r.Partition] = true
				remaining--
			}
		})
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	lost := 0
	for topic, ps := range l.acked {
		for p, offs := range ps {
			for off, v := range offs {
				if g, ok := got[topic][p][off]; !ok || g != v {
					if lost < 10 {
						t.Errorf("%s/%d offset %d: acknowledged %q, read %q (present %v)", topic, p, off, v, g, ok)
					}
					lost++
				}
			}
		}
	}
	if lost > 0 {
		t.Fatalf("%d of %d acknowledged records lost or changed", lost, l.n)
	}
	return time.Since(began)
}

// waitAllHosted waits until every partition of topics answers ListOffsets
// without an error: the broker hosts and leads all of them.
func waitAllHosted(t *testing.T, addr string, topics map[string]int32, d time.Duration) time.Duration {
	t.Helper()
	began := time.Now()
	cl := newClient(t, addr)
	adm := kadm.NewClient(cl)
	names := make([]string, 0, len(topics))
	total := 0
	for topic, n := range topics {
		names = append(names, topic)
		total += int(n)
	}
	waitFor(t, d, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		ends, err := adm.ListEndOffsets(ctx, names...)
		if err != nil {
			return err
		}
		ok := 0
		var first error
		ends.Each(func(o kadm.ListedOffset) {
			if o.Err == nil {
				ok++
			} else if first == nil {
				first = fmt.Errorf("%s/%d: %w", o.Topic, o.Partition, o.Err)
			}
		})
		if ok < total {
			return fmt.Errorf("%d of %d partitions answer: %v", ok, total, first)
		}
		return nil
	})
	return time.Since(began)
}

// etcdKeys counts the keys under /samsa/ in the broker's embedded etcd.
func etcdKeys(t *testing.T, dir string) (keys int64, dbBytes int64) {
	t.Helper()
	cli := etcdAt(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, "/samsa/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatalf("etcd count: %v", err)
	}
	st, err := cli.Status(ctx, cli.Endpoints()[0])
	if err != nil {
		t.Fatalf("etcd status: %v", err)
	}
	return resp.Count, st.DbSize
}

// scaleDataMiB returns SAMSA_SCALE_DATA_MIB: how much data the scale run
// writes over all partitions before its kill -9 (0 unless set; make scale
// sets 10 GiB).
func scaleDataMiB(t *testing.T) int {
	t.Helper()
	s := os.Getenv("SAMSA_SCALE_DATA_MIB")
	if s == "" {
		return 0
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 0 {
		t.Fatalf("SAMSA_SCALE_DATA_MIB=%q: want a size in MiB", s)
	}
	return v
}

// fillScale writes mib MiB of 1 KiB records, acks=all, spread over every
// partition: `samsa perf produce` on each topic in turn, two at a time.
func fillScale(t *testing.T, addr string, names []string, mib int) {
	t.Helper()
	per := int64(mib) * 1024 / int64(len(names)) // 1 KiB records per topic
	if per == 0 {
		return
	}
	// NB: a producer whose broker died would retry until killed; the
	// context bounds the whole fill.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	sem := make(chan struct{}, 2)
	errs := make(chan error, len(names))
	for _, topic := range names {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			out, err := exec.CommandContext(ctx, samsaBin, "-b", addr, "perf", "produce", "--topic", topic,
				"--records", strconv.FormatInt(per, 10), "--record-size", "1024", "--acks", "all", "--json").Output()
			if err != nil {
				errs <- fmt.Errorf("fill %s: %v\n%s", topic, err, out)
			}
		}()
	}
	for range cap(sem) {
		sem <- struct{}{}
	}
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// dirBytes is the size of the files under dir.
func dirBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			n += info.Size()
		}
		return nil
	})
	if err != nil {
		t.Fatalf("size of %s: %v", dir, err)
	}
	return n
}

// perfProduce runs `samsa perf produce` on a new topic of 8 partitions and
// returns its records/s.
func perfProduce(t *testing.T, addr, topic string) float64 {
	t.Helper()
	out, err := exec.Command(samsaBin, "-b", addr, "perf", "produce", "--topic", topic,
		"--partitions", "8", "--replication-factor", "1", "--records", "200000",
		"--record-size", "1024", "--acks", "all", "--json").Output()
	if err != nil {
		t.Fatalf("samsa perf produce: %v\n%s", err, out)
	}
	var res struct {
		RecordsPerSec float64 `json:"records_per_sec"`
		Errors        int64   `json:"errors"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("samsa perf produce output %q: %v", out, err)
	}
	if res.Errors != 0 {
		t.Fatalf("samsa perf produce: %d errors", res.Errors)
	}
	return res.RecordsPerSec
}

// TestScaleManyPartitions is the scale measurement of docs/performance.md:
// a broker with 10,000 partitions (RF=1) takes a record on every one,
// serves them all back, and keeps every acknowledged record over a clean
// restart and over kill -9. It logs the resident memory, descriptors,
// CreateTopics, startup and recovery times and etcd keys.
func TestScaleManyPartitions(t *testing.T) {
	n := scalePartitions(t)
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("needs /proc")
	}
	topics := scaleTopics(n)
	names := make([]string, 0, len(topics))
	for topic := range topics {
		names = append(names, topic)
	}
	sort.Strings(names)
	report := func(format string, args ...any) { t.Logf("scale: "+format, args...) }
	report("%d partitions in %d topics, %d CPUs", n, len(topics), runtime.NumCPU())

	b := newBroker(t)
	report("startup on an empty data dir: %s", b.startup.Round(time.Millisecond))
	pid := b.cmd.Process.Pid
	base := testutil.ReadProcStats(t, pid)
	report("idle with 0 partitions: %s", base)

	// CreateTopics, 10 topics per request, as a tool creating many
	// topics would.
	adm := kadm.NewClient(newClient(t, b.addr()))
	began := time.Now()
	for i := 0; i < len(names); i += 10 {
		batch := names[i:min(i+10, len(names))]
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		resps, err := adm.CreateTopics(ctx, 100, 1, nil, batch...)
		cancel()
		if err != nil {
			t.Fatalf("create topics: %v", err)
		}
		for _, r := range resps {
			if r.Err != nil {
				t.Fatalf("create topic %s: %v", r.Topic, r.Err)
			}
		}
	}
	created := time.Since(began)
	hosted := waitAllHosted(t, b.addr(), topics, 10*time.Minute)
	report("CreateTopics of %d partitions: %s, all hosted %s later", n, created.Round(time.Millisecond), hosted.Round(time.Millisecond))

	l := newScaleLedger()
	d := produceScale(t, b.addr(), topics, "r1", l)
	report("produced one record to each of %d partitions (acks=all) in %s", l.count(), d.Round(time.Millisecond))
	d = checkScale(t, b.addr(), topics, l)
	report("consumed all %d records back in %s", l.count(), d.Round(time.Millisecond))

	time.Sleep(5 * time.Second) // NB: let the flusher and GC settle before reading RSS
	idle := testutil.ReadProcStats(t, pid)
	report("idle with %d partitions: %s; per partition %.1f KiB RSS, %.2f fds",
		n, idle, float64(idle.RSSKiB-base.RSSKiB)/float64(n), float64(idle.FDs-base.FDs)/float64(n))
	keys, dbBytes := etcdKeys(t, b.dir)
	report("etcd: %d keys under /samsa/, db %.1f MiB", keys, float64(dbBytes)/(1<<20))

	with := perfProduce(t, b.addr(), "scale-perf")
	report("perf produce, 8 partitions, 1 KiB, acks=all, with %d partitions present: %.0f records/s", n, with)

	// Clean restart.
	began = time.Now()
	b.signal(syscall.SIGTERM)
	if _, ok := b.waitExit(5 * time.Minute); !ok {
		t.Fatal("broker did not stop within 5m of SIGTERM")
	}
	report("clean shutdown: %s", time.Since(began).Round(time.Millisecond))
	began = b.launch()
	if err := b.waitReadyWithin(5 * time.Minute); err != nil {
		t.Fatalf("restart: %v", err)
	}
	ready := time.Since(began)
	waitAllHosted(t, b.addr(), topics, 5*time.Minute)
	report("clean restart: Metadata after %s, every partition served after %s",
		ready.Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
	checkScale(t, b.addr(), topics, l)

	// Data before the kill -9, so that recovery has logs to check.
	if mib := scaleDataMiB(t); mib > 0 {
		began = time.Now()
		fillScale(t, b.addr(), names, mib)
		report("wrote %d MiB of 1 KiB records (acks=all) over all partitions in %s; data dir %.1f GiB",
			mib, time.Since(began).Round(time.Millisecond), float64(dirBytes(t, b.dir))/(1<<30))
	}

	// kill -9 while a producer writes to every partition.
	produceScale(t, b.addr(), topics, "r2", l)
	stop := make(chan struct{})
	// NB: a Produce blocked on a full buffer returns only when its
	// context ends; the kill cancels it.
	pctx, pcancel := context.WithCancel(context.Background())
	defer pcancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.ProducerLinger(5*time.Millisecond), kgo.RecordRetries(0), kgo.RecordDeliveryTimeout(10*time.Second))
		if err != nil {
			return
		}
		defer cl.Close()
		for i := 0; ; i++ {
			for _, topic := range names {
				for p := int32(0); p < topics[topic]; p++ {
					select {
					case <-stop:
						return
					default:
					}
					r := &kgo.Record{Topic: topic, Partition: p, Value: []byte(fmt.Sprintf("r3-%d/%s/%d", i, topic, p))}
					cl.Produce(pctx, r, func(r *kgo.Record, err error) {
						if err == nil {
							l.add(r)
						}
					})
				}
			}
		}
	}()
	before := l.count()
	waitFor(t, 2*time.Minute, func() error {
		if l.count() < before+n/2 {
			return fmt.Errorf("%d records acknowledged since the kill producer started", l.count()-before)
		}
		return nil
	})
	b.kill()
	pcancel()
	close(stop)
	wg.Wait()
	report("killed with SIGKILL after %d acknowledged records in all", l.count())
	began = b.launch()
	if err := b.waitReadyWithin(5 * time.Minute); err != nil {
		t.Fatalf("restart after kill -9: %v", err)
	}
	ready = time.Since(began)
	waitAllHosted(t, b.addr(), topics, 5*time.Minute)
	report("restart after kill -9: Metadata after %s, every partition served after %s",
		ready.Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
	checkScale(t, b.addr(), topics, l)
	report("every one of %d acknowledged records read back after kill -9", l.count())
	after := testutil.ReadProcStats(t, b.cmd.Process.Pid)
	report("after recovery: %s", after)

	// The same produce on a broker with nothing else on it.
	fresh := newBroker(t)
	alone := perfProduce(t, fresh.addr(), "scale-perf")
	report("perf produce, 8 partitions, 1 KiB, acks=all, alone: %.0f records/s (with %d present: %.2fx)", alone, n, with/alone)
}
