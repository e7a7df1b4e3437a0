package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// The tests in this file carry out the procedures of docs/operations.md
// on brokers run as processes. Those that take longer than CI allows run
// only with SAMSA_OPS=1 (make ops).

// requireOps skips a long procedure unless SAMSA_OPS is set.
func requireOps(t *testing.T) {
	t.Helper()
	if os.Getenv("SAMSA_OPS") == "" {
		t.Skip("long operations procedure: set SAMSA_OPS=1 (make ops)")
	}
}

// opsReadyTimeout bounds a broker's start in a cluster: a new etcd
// member waits for a majority, and the test machines are shared.
const opsReadyTimeout = 90 * time.Second

// opsCluster is brokers with node ids 1..n, each embedding one member of
// one etcd cluster (README's layout (a), as scripts/cluster.sh runs it),
// with replication factor 3 and min.insync.replicas=2 by default. It is
// used by one test goroutine.
type opsCluster struct {
	t         *testing.T
	brokers   map[int]*broker
	peer      map[int]int // etcd peer port by node id
	adminPort map[int]int // admin HTTP port by node id
	extra     []string    // overrides for every broker
}

func memberName(id int) string { return "samsa-" + strconv.Itoa(id) }

func (c *opsCluster) peerURL(id int) string {
	return "http://127.0.0.1:" + strconv.Itoa(c.peer[id])
}

func (c *opsCluster) adminAddr(id int) string {
	return "127.0.0.1:" + strconv.Itoa(c.adminPort[id])
}

// initialCluster is etcd.initial.cluster for the members ids.
func (c *opsCluster) initialCluster(ids ...int) string {
	var s []string
	for _, id := range ids {
		s = append(s, memberName(id)+"="+c.peerURL(id))
	}
	return strings.Join(s, ",")
}

// newOpsCluster starts brokers 1..n together and waits until each serves.
func newOpsCluster(t *testing.T, n int, extra ...string) *opsCluster {
	t.Helper()
	c := &opsCluster{t: t, brokers: map[int]*broker{}, peer: map[int]int{}, adminPort: map[int]int{}, extra: extra}
	var ids []int
	for id := 1; id <= n; id++ {
		ids = append(ids, id)
		c.peer[id], c.adminPort[id] = freePort(t), freePort(t)
	}
	ic := c.initialCluster(ids...)
	for _, id := range ids {
		c.brokers[id] = c.newProcess(id, ic, "new")
		c.brokers[id].launch()
	}
	for _, id := range ids {
		c.waitReady(id)
	}
	return c
}

// newProcess makes broker id on a fresh data dir and port, not started.
func (c *opsCluster) newProcess(id int, ic, state string) *broker {
	t := c.t
	if _, ok := c.peer[id]; !ok {
		c.peer[id], c.adminPort[id] = freePort(t), freePort(t)
	}
	b := &broker{
		t:       t,
		dir:     t.TempDir(),
		port:    freePort(t),
		logPath: filepath.Join(t.TempDir(), fmt.Sprintf("broker-%d.log", id)),
	}
	b.overrides = c.overrides(id, ic, state)
	t.Cleanup(func() {
		if b.running() {
			b.kill()
		}
		if t.Failed() {
			t.Logf("broker %d:", id)
			b.dumpLog()
		}
	})
	return b
}

func (c *opsCluster) overrides(id int, ic, state string) []string {
	return append([]string{
		"node.id=" + strconv.Itoa(id),
		"admin.listener=" + c.adminAddr(id),
		"etcd.name=" + memberName(id),
		"etcd.initial.cluster=" + ic,
		"etcd.initial.cluster.state=" + state,
		"default.replication.factor=3",
		"min.insync.replicas=2",
		"offsets.topic.num.partitions=3",
	}, c.extra...)
}

func (c *opsCluster) waitReady(id int) {
	c.t.Helper()
	if err := c.brokers[id].waitReadyWithin(opsReadyTimeout); err != nil {
		c.t.Fatalf("broker %d not ready: %v", id, err)
	}
}

// running returns the ids of the running brokers, sorted.
func (c *opsCluster) running() []int {
	var ids []int
	for id, b := range c.brokers {
		if b.running() {
			ids = append(ids, id)
		}
	}
	sort.Ints(ids)
	return ids
}

// seeds returns the Kafka addresses of the running brokers.
func (c *opsCluster) seeds() []string {
	var s []string
	for _, id := range c.running() {
		s = append(s, c.brokers[id].addr())
	}
	return s
}

// samsa runs the samsa CLI against the running brokers, as an operator
// would, and returns its combined output.
func (c *opsCluster) samsa(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, samsaBin, append([]string{"-b", strings.Join(c.seeds(), ",")}, args...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// mustSamsa is samsa that fails the test on an error.
func (c *opsCluster) mustSamsa(args ...string) string {
	c.t.Helper()
	out, err := c.samsa(args...)
	if err != nil {
		c.t.Fatalf("samsa %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	c.t.Logf("samsa %s\n%s", strings.Join(args, " "), strings.TrimRight(out, "\n"))
	return out
}

// etcd returns a client of broker id's embedded member, on its unix
// socket in the data dir (what `etcdctl --endpoints unix://...` uses).
func (c *opsCluster) etcd(id int) *clientv3.Client {
	c.t.Helper()
	return etcdAt(c.t, c.brokers[id].dir)
}

// etcdAt returns a client of the embedded etcd member of the data dir.
func etcdAt(t *testing.T, dir string) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{"unix://" + filepath.Join(dir, "etcd.sock")},
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// memberID returns the etcd member id of the member called name.
func memberID(t *testing.T, cli *clientv3.Client, name string) (uint64, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cli.MemberList(ctx)
	if err != nil {
		t.Fatalf("etcd member list: %v", err)
	}
	for _, m := range resp.Members {
		if m.Name == name {
			return m.ID, true
		}
	}
	return 0, false
}

// admin returns a kadm client of the running brokers, closed at the end.
func (c *opsCluster) admin() *kadm.Client {
	return kadm.NewClient(newClient(c.t, c.seeds()[0], kgo.SeedBrokers(c.seeds()...)))
}

// partitions returns the topic's partitions as Metadata reports them.
func partitionsOf(ctx context.Context, adm *kadm.Client, topic string) (kadm.PartitionDetails, error) {
	md, err := adm.Metadata(ctx, topic)
	if err != nil {
		return nil, err
	}
	td, ok := md.Topics[topic]
	if !ok || td.Err != nil {
		return nil, fmt.Errorf("topic %s: %v", topic, td.Err)
	}
	return td.Partitions, nil
}

// underReplicated sums samsa_under_replicated_partitions over the running
// brokers' /metrics: the number operators watch between steps.
func (c *opsCluster) underReplicated() (float64, error) {
	sum := 0.0
	for _, id := range c.running() {
		resp, err := http.Get("http://" + c.adminAddr(id) + "/metrics")
		if err != nil {
			return 0, err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return 0, err
		}
		v, err := sample(string(body), "samsa_under_replicated_partitions")
		if err != nil {
			return 0, fmt.Errorf("broker %d: %w", id, err)
		}
		sum += v
	}
	return sum, nil
}

// waitInSync waits until every partition of the topics has its full
// replica list in the ISR, no reassignment is in progress, and the
// brokers report no under-replicated partition.
func (c *opsCluster) waitInSync(d time.Duration, topics ...string) {
	c.t.Helper()
	adm := c.admin()
	waitFor(c.t, d, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for _, topic := range topics {
			ps, err := partitionsOf(ctx, adm, topic)
			if err != nil {
				return err
			}
			for _, p := range ps {
				if p.Leader < 0 || len(p.ISR) != len(p.Replicas) {
					return fmt.Errorf("%s-%d: leader %d replicas %v isr %v", topic, p.Partition, p.Leader, p.Replicas, p.ISR)
				}
			}
		}
		if n, err := c.underReplicated(); err != nil || n != 0 {
			return fmt.Errorf("under-replicated partitions %v (%v)", n, err)
		}
		return nil
	})
}

// ackLedger records what a producer had acknowledged: value by partition
// and offset. Safe for concurrent use.
type ackLedger struct {
	mu     sync.Mutex
	acked  map[int32]map[int64]string
	failed []error
	maxGap time.Duration // longest time between two acknowledgements
	last   time.Time
}

func newAckLedger() *ackLedger { return &ackLedger{acked: map[int32]map[int64]string{}} }

func (l *ackLedger) record(r *kgo.Record, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.failed = append(l.failed, fmt.Errorf("%s: %w", r.Value, err))
		return
	}
	now := time.Now()
	if !l.last.IsZero() && now.Sub(l.last) > l.maxGap {
		l.maxGap = now.Sub(l.last)
	}
	l.last = now
	if l.acked[r.Partition] == nil {
		l.acked[r.Partition] = map[int64]string{}
	}
	l.acked[r.Partition][r.Offset] = string(r.Value)
}

func (l *ackLedger) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, m := range l.acked {
		n += len(m)
	}
	return n
}

// produceN produces n records with values prefix-0..n-1 (idempotent,
// acks=all) and records them in the ledger; it fails the test if any
// record is not acknowledged.
func produceN(t *testing.T, seeds []string, topic, prefix string, n int, l *ackLedger) {
	t.Helper()
	cl := newClient(t, seeds[0], kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: []byte(fmt.Sprintf("%s-%d", prefix, i))}
	}
	for _, r := range cl.ProduceSync(ctx, recs...) {
		l.record(r.Record, r.Err)
		if r.Err != nil {
			t.Fatalf("produce %s: %v", r.Record.Value, r.Err)
		}
	}
}

// steadyProducer produces to topic at about rate records per second
// until stop is called, recording every acknowledgement and failure.
type steadyProducer struct {
	cl     *kgo.Client
	ledger *ackLedger
	stopc  chan struct{}
	done   chan struct{}
	wg     sync.WaitGroup
}

func startSteadyProducer(t *testing.T, seeds []string, topic string, rate int) *steadyProducer {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	p := &steadyProducer{cl: cl, ledger: newAckLedger(), stopc: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		tick := time.NewTicker(time.Second / time.Duration(rate))
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-p.stopc:
				return
			case <-tick.C:
			}
			r := &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: []byte(fmt.Sprintf("%s-steady-%d", topic, i))}
			p.wg.Add(1)
			cl.Produce(context.Background(), r, func(r *kgo.Record, err error) {
				defer p.wg.Done()
				p.ledger.record(r, err)
			})
		}
	}()
	return p
}

// stop stops producing, waits for every outstanding record's result and
// closes the client.
func (p *steadyProducer) stop(t *testing.T) *ackLedger {
	t.Helper()
	close(p.stopc)
	<-p.done
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := p.cl.Flush(ctx); err != nil {
		t.Errorf("flush: %v", err)
	}
	p.cl.Close()
	p.wg.Wait()
	return p.ledger
}

// checkLedger reads the topic from the start through addr and fails the
// test if any acknowledged record is missing or has another value at its
// offset. It returns the number of records checked.
func checkLedger(t *testing.T, addr, topic string, l *ackLedger) int {
	t.Helper()
	got := consumeAll(t, addr, topic)
	l.mu.Lock()
	defer l.mu.Unlock()
	lost, n := 0, 0
	for p, byOffset := range l.acked {
		have := map[int64]string{}
		for _, r := range got[p] {
			have[r.Offset] = string(r.Value)
		}
		for off, v := range byOffset {
			n++
			if have[off] != v {
				lost++
				if lost <= 5 {
					t.Errorf("%s-%d offset %d: acknowledged %q, read %q", topic, p, off, v, have[off])
				}
			}
		}
	}
	if lost > 0 {
		t.Fatalf("%d of %d acknowledged records lost", lost, n)
	}
	return n
}

// replicasArg formats broker ids for --replicas.
func replicasArg(ids []int32) string {
	var s []string
	for _, id := range ids {
		s = append(s, strconv.Itoa(int(id)))
	}
	return strings.Join(s, ",")
}

// moveReplicas reassigns every partition of topic that has a replica on
// from so that to takes its place, one `samsa topic reassign --wait` per
// partition, and returns how many partitions moved.
func (c *opsCluster) moveReplicas(topic string, from, to int32) int {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ps, err := partitionsOf(ctx, c.admin(), topic)
	if err != nil {
		c.t.Fatal(err)
	}
	moved := 0
	for _, p := range ps.Sorted() {
		i := slices.Index(p.Replicas, from)
		if i < 0 {
			continue
		}
		target := slices.Clone(p.Replicas)
		target[i] = to
		c.mustSamsa("topic", "reassign", topic, "--partition", strconv.Itoa(int(p.Partition)),
			"--replicas", replicasArg(target), "--wait")
		moved++
	}
	return moved
}

// hosts reports whether broker id holds a replica of any partition of
// the topics.
func (c *opsCluster) hosts(id int32, topics ...string) bool {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, topic := range topics {
		ps, err := partitionsOf(ctx, c.admin(), topic)
		if err != nil {
			c.t.Fatal(err)
		}
		for _, p := range ps {
			if slices.Contains(p.Replicas, id) {
				return true
			}
		}
	}
	return false
}
