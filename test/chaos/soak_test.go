package chaos

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	clientv3 "go.etcd.io/etcd/client/v3"

	"samsa/internal/group"
	"samsa/internal/testutil"
)

// TestSoak is TESTPLAN's soak: SAMSA_SOAK_DURATION (default 1 h) of mixed
// load on a 3-broker cluster with a fault every 30-60 s, then the full
// checks. The load: the safe producer workload (idempotent, acks=all,
// both client stacks) on soak-q, read by a consumer group of three
// franz-go members of which one is replaced every 2 minutes; an
// idempotent keyed producer on the compacted soak-kv (small segments, so
// the cleaner runs); a plain acks=1 producer on soak-ret, whose small
// segments and retention.bytes make retention delete segments all along.
// The faults, drawn with the logged seed: kill -9 of a broker (down 3-8
// s), a 6 s SIGSTOP, a controlled restart (SIGTERM), kill -9 of the
// group's coordinator. After each fault the test waits for the full ISR.
//
// At the end: the checker finds nothing acknowledged lost, duplicated or
// moved on soak-q; the group read every acknowledged record of soak-q and
// committed to its end; soak-kv holds, for every key, its last
// acknowledged value or a later one; retention moved soak-ret's log
// start. Leaks: every 30 s the test samples each broker's RSS, open
// files and goroutines (its /metrics) and the etcd key count; over the
// last third of the run none may exceed its level during the warm-up
// (the first 10 minutes, or a sixth of a shorter run) by more than
// RSS 1.5x + 32 MiB, goroutines 1.25x + 50, open files 1.25x + 30,
// etcd keys + 20.
//
// It runs only with SAMSA_SOAK set: `make soak`.
func TestSoak(t *testing.T) {
	if os.Getenv("SAMSA_SOAK") == "" {
		t.Skip("the soak runs with SAMSA_SOAK=1 (make soak)")
	}
	dur := time.Hour
	if v := os.Getenv("SAMSA_SOAK_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("SAMSA_SOAK_DURATION=%q: %v", v, err)
		}
		dur = d
	}
	warm := min(10*time.Minute, dur/6)
	seed := chaosSeed(t)
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))

	p := envProfile()
	p.overrides = []string{"admin.listener=127.0.0.1:0", "log.retention.check.interval.ms=10000"}
	c := startClusterWith(t, p)
	const (
		qTopic, kvTopic, retTopic = "soak-q", "soak-kv", "soak-ret"
		partitions                = 5
		groupID                   = "soak-g"
	)
	c.createTopic(qTopic, partitions)
	c.createTopic(kvTopic, partitions)
	c.createTopic(retTopic, partitions)
	admCl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	alter := func(topic string, kv ...string) {
		var cfgs []kadm.AlterConfig
		for i := 0; i < len(kv); i += 2 {
			v := kv[i+1]
			cfgs = append(cfgs, kadm.AlterConfig{Name: kv[i], Value: &v})
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		resp, err := adm.AlterTopicConfigs(ctx, cfgs, topic)
		if err == nil {
			_, err = resp.On(topic, nil)
		}
		if err != nil {
			t.Fatalf("alter %s: %v", topic, err)
		}
	}
	alter(kvTopic, "cleanup.policy", "compact", "segment.bytes", "65536", "min.cleanable.dirty.ratio", "0.01")
	alter(retTopic, "segment.bytes", "65536", "retention.bytes", "262144")

	w := startWorkload(t, c, qTopic, partitions)
	w.waitAcks(0, 50, 30*time.Second)
	loadCtx, stopLoad := context.WithCancel(context.Background())
	defer stopLoad()
	var loadWG sync.WaitGroup

	// The keyed producer on the compacted topic.
	var (
		kvMu     sync.Mutex
		kvAcked  = make(map[string]int) // key -> last acknowledged counter
		kvErrors int
	)
	kvCl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs()...), kgo.DefaultProduceTopic(kvTopic),
		kgo.RetryTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer kvCl.Close()
	loadWG.Go(func() {
		for n := 0; loadCtx.Err() == nil; n++ {
			batch := make([]*kgo.Record, 50)
			for i := range batch {
				key := fmt.Sprintf("k%03d", (n*50+i)%200)
				batch[i] = &kgo.Record{Key: []byte(key), Value: []byte(key + "-" + strconv.Itoa(n))}
			}
			ctx, cancel := context.WithTimeout(loadCtx, 60*time.Second)
			res := kvCl.ProduceSync(ctx, batch...)
			cancel()
			kvMu.Lock()
			for _, r := range res {
				if r.Err != nil {
					kvErrors++
					continue
				}
				kvAcked[string(r.Record.Key)] = max(kvAcked[string(r.Record.Key)], n)
			}
			kvMu.Unlock()
			time.Sleep(100 * time.Millisecond)
		}
	})

	// The plain producer on the topic retention keeps trimming.
	retCl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs()...), kgo.DefaultProduceTopic(retTopic),
		kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	if err != nil {
		t.Fatal(err)
	}
	defer retCl.Close()
	loadWG.Go(func() {
		value := make([]byte, 1024)
		for loadCtx.Err() == nil {
			for range 20 {
				retCl.Produce(loadCtx, &kgo.Record{Value: value}, nil)
			}
			time.Sleep(100 * time.Millisecond)
		}
	})

	// The consumer group on soak-q.
	var (
		seenMu sync.Mutex
		seen   = make(map[string]bool)
		churns int
	)
	newMember := func() *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs()...), kgo.ConsumerGroup(groupID),
			kgo.ConsumeTopics(qTopic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.DisableAutoCommit(), kgo.SessionTimeout(10*time.Second),
			kgo.FetchMaxWait(500*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		return cl
	}
	consume := func(cl *kgo.Client, ctx context.Context) {
		for ctx.Err() == nil {
			fs := cl.PollRecords(ctx, 1000)
			seenMu.Lock()
			fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)] = true })
			seenMu.Unlock()
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			_ = cl.CommitUncommittedOffsets(cctx)
			cancel()
		}
	}
	type member struct {
		cl     *kgo.Client
		cancel context.CancelFunc
		done   chan struct{}
	}
	start := func() *member {
		ctx, cancel := context.WithCancel(loadCtx)
		m := &member{cl: newMember(), cancel: cancel, done: make(chan struct{})}
		go func() { defer close(m.done); consume(m.cl, ctx) }()
		return m
	}
	stopMember := func(m *member) {
		m.cancel()
		<-m.done
		m.cl.Close()
	}
	members := []*member{start(), start(), start()}

	// Samples.
	type sample struct {
		at                   time.Duration
		broker               int32
		rss, fds, goroutines int
	}
	var (
		samples   []sample
		etcdKeys  []struct{ at, n int }
		began     = time.Now()
		sampleMu  sync.Mutex
		adminAddr = regexp.MustCompile(`msg="samsa broker ready".* admin=(\S+)`)
	)
	takeSamples := func() {
		at := time.Since(began)
		for _, b := range c.brokers {
			if !b.running() || b.stopped {
				continue
			}
			ps := testutil.ReadProcStats(t, b.cmd.Process.Pid)
			s := sample{at: at, broker: b.id, rss: ps.RSSKiB, fds: ps.FDs, goroutines: -1}
			if m := adminAddr.FindAllStringSubmatch(b.log(), -1); len(m) > 0 {
				s.goroutines = scrapeGoroutines(m[len(m)-1][1])
			}
			sampleMu.Lock()
			samples = append(samples, s)
			sampleMu.Unlock()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		resp, err := c.etcdCli.Get(ctx, "", clientv3.WithPrefix(), clientv3.WithCountOnly())
		cancel()
		if err == nil {
			sampleMu.Lock()
			etcdKeys = append(etcdKeys, struct{ at, n int }{int(at / time.Second), int(resp.Count)})
			sampleMu.Unlock()
		}
	}

	// Faults until the end.
	faults := map[string]int{}
	nextSample := time.Now()
	nextChurn := time.Now().Add(2 * time.Minute)
	for time.Since(began) < dur {
		wait := 30*time.Second + time.Duration(rng.Int64N(int64(30*time.Second)))
		until := time.Now().Add(wait)
		for time.Now().Before(until) && time.Since(began) < dur {
			if !time.Now().Before(nextSample) {
				takeSamples()
				nextSample = nextSample.Add(30 * time.Second)
			}
			if !time.Now().Before(nextChurn) {
				stopMember(members[0])
				members = append(members[1:], start())
				churns++
				nextChurn = nextChurn.Add(2 * time.Minute)
			}
			time.Sleep(time.Second)
		}
		if time.Since(began) >= dur {
			break
		}
		b := c.brokers[rng.IntN(len(c.brokers))]
		var kind string
		switch r := rng.IntN(4); r {
		case 0:
			kind = "kill"
			b.kill()
			time.Sleep(3*time.Second + time.Duration(rng.Int64N(int64(5*time.Second))))
			c.restart(b)
		case 1:
			kind = "pause"
			b.signal(syscall.SIGSTOP)
			time.Sleep(2 * sessionTimeout)
			b.signal(syscall.SIGCONT)
		case 2:
			kind = "restart"
			b.signal(syscall.SIGTERM)
			if st, ok := b.waitExit(40 * time.Second); !ok || st.ExitCode() != 0 {
				t.Errorf("controlled restart of broker %d: exited %v (%v)", b.id, st, ok)
				b.kill()
			}
			c.restart(b)
		default:
			kind = "kill-coordinator"
			st, err := c.state(offsetsTopicName, group.Partition(groupID, offsetsPartitions))
			if err == nil && st.Leader >= 0 {
				b = c.brokers[st.Leader]
			}
			b.kill()
			time.Sleep(5 * time.Second)
			c.restart(b)
		}
		faults[kind]++
		c.waitFullISR(qTopic, partitions)
		t.Logf("%s: %s of broker %d; full ISR again", time.Since(began).Round(time.Second), kind, b.id)
	}
	takeSamples()

	// Stop the load and check.
	for _, topic := range []string{qTopic, kvTopic, retTopic} {
		c.waitFullISR(topic, partitions)
	}
	w.stop(30 * time.Second)
	ends := c.highWatermarks(qTopic, partitions)
	waitCommitted(t, adm, groupID, qTopic, ends, 3*time.Minute)
	stopLoad()
	loadWG.Wait()
	for _, m := range members {
		stopMember(m)
	}
	r := w.check(c)

	// Every acknowledged soak-q record was read by the group.
	w.mu.Lock()
	acked := slices.Clone(w.mu.acks)
	w.mu.Unlock()
	seenMu.Lock()
	missed := 0
	var example string
	for _, a := range acked {
		if !seen[a.value] {
			missed++
			example = a.value
		}
	}
	seenMu.Unlock()
	if missed > 0 {
		t.Errorf("the group never read %d of %d acknowledged records (one: %s)", missed, len(acked), example)
	}

	// soak-kv: the last acknowledged value of every key, or a later one.
	lastInLog := make(map[string]int)
	for _, recs := range readAll(t, c, kvTopic, partitions) {
		for _, rec := range recs {
			_, n, _ := strings.Cut(string(rec.Value), "-")
			k, _ := strconv.Atoi(n)
			lastInLog[string(rec.Key)] = k
		}
	}
	kvMu.Lock()
	for key, n := range kvAcked {
		if got, ok := lastInLog[key]; !ok || got < n {
			t.Errorf("%s: key %s holds %d (present %v), last acknowledged %d", kvTopic, key, got, ok, n)
		}
	}
	kvMu.Unlock()

	// soak-ret: retention deleted segments on every partition.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	starts, err := adm.ListStartOffsets(ctx, retTopic)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	starts.Each(func(o kadm.ListedOffset) {
		if o.Offset <= 0 {
			t.Errorf("%s-%d: log start %d: retention deleted nothing", retTopic, o.Partition, o.Offset)
		}
	})

	// Leaks: the last third against the warm-up.
	sampleMu.Lock()
	defer sampleMu.Unlock()
	type level struct{ rss, fds, goroutines int }
	warmMax, lateMax := map[int32]*level{}, map[int32]*level{}
	lateFrom := dur - dur/3
	for _, s := range samples {
		var m map[int32]*level
		switch {
		case s.at <= warm:
			m = warmMax
		case s.at >= lateFrom:
			m = lateMax
		default:
			continue
		}
		l := m[s.broker]
		if l == nil {
			l = &level{}
			m[s.broker] = l
		}
		l.rss, l.fds, l.goroutines = max(l.rss, s.rss), max(l.fds, s.fds), max(l.goroutines, s.goroutines)
	}
	for id, late := range lateMax {
		wl := warmMax[id]
		if wl == nil {
			continue
		}
		t.Logf("broker %d: warm-up max RSS %.1f MiB, %d fds, %d goroutines; last third max RSS %.1f MiB, %d fds, %d goroutines",
			id, float64(wl.rss)/1024, wl.fds, wl.goroutines, float64(late.rss)/1024, late.fds, late.goroutines)
		if float64(late.rss) > 1.5*float64(wl.rss)+32*1024 {
			t.Errorf("broker %d: RSS grew from %d KiB to %d KiB", id, wl.rss, late.rss)
		}
		if wl.goroutines >= 0 && float64(late.goroutines) > 1.25*float64(wl.goroutines)+50 {
			t.Errorf("broker %d: goroutines grew from %d to %d", id, wl.goroutines, late.goroutines)
		}
		if float64(late.fds) > 1.25*float64(wl.fds)+30 {
			t.Errorf("broker %d: open files grew from %d to %d", id, wl.fds, late.fds)
		}
	}
	var warmKeys, lateKeys int
	for _, k := range etcdKeys {
		if time.Duration(k.at)*time.Second <= warm {
			warmKeys = max(warmKeys, k.n)
		} else if time.Duration(k.at)*time.Second >= lateFrom {
			lateKeys = max(lateKeys, k.n)
		}
	}
	if lateKeys > warmKeys+20 {
		t.Errorf("etcd keys grew from %d to %d", warmKeys, lateKeys)
	}
	t.Logf("soak: %s, seed %d; faults %v; %d group members replaced; etcd keys %d (warm-up) and %d (last third); soak-kv %d keys, %d failed sends; %v",
		dur, seed, faults, churns, warmKeys, lateKeys, len(lastInLog), kvErrors, r)
}

// scrapeGoroutines reads go_goroutines from the admin listener's
// /metrics, or -1.
func scrapeGoroutines(addr string) int {
	cl := http.Client{Timeout: 5 * time.Second}
	resp, err := cl.Get("http://" + addr + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go_goroutines "); ok {
			n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				return -1
			}
			return int(n)
		}
	}
	return -1
}
