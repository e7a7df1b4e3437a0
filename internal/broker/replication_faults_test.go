package broker_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/cluster"
	"samsa/internal/config"
	"samsa/internal/node"
	"samsa/internal/testutil"
)

// The tests in this file break a three-broker in-process cluster the ways
// production clusters break (crashes, controlled shutdowns, stalled
// followers, losing every in-sync replica) and check what a user of the
// cluster relies on: acknowledged records are kept once each and in order,
// nothing unacknowledged becomes visible, and replicas agree afterwards.

// faultCluster starts three brokers replicating three ways with
// min.insync.replicas=2 and a short replica.lag.time.max.ms; extra
// overrides are appended.
func faultCluster(t *testing.T, extra ...string) *testutil.Cluster {
	t.Helper()
	return testutil.StartCluster(t, 3, append([]string{
		"default.replication.factor=3",
		"min.insync.replicas=2",
		"replica.lag.time.max.ms=2000",
		"offsets.topic.num.partitions=3",
		"group.initial.rebalance.delay.ms=0",
	}, extra...)...)
}

// createReplicated creates topic with partitions replicated to all three
// brokers and configs (name=value), and waits for every ISR to be full.
func createReplicated(t *testing.T, c *testutil.Cluster, topic string, partitions int32, configs ...string) {
	t.Helper()
	cfgs := make(map[string]*string)
	for _, kv := range configs {
		k, v, _ := strings.Cut(kv, "=")
		cfgs[k] = &v
	}
	resp, err := c.Admin().CreateTopic(ctxT(t, 20*time.Second), partitions, 3, cfgs, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
	waitFullISR(t, c, topic, partitions)
}

// waitISR waits until the ISR of topic/partition is want (sorted node ids,
// space-separated).
func waitISR(t *testing.T, c *testutil.Cluster, topic string, partition int32, want string) {
	t.Helper()
	testutil.Eventually(t, 30*time.Second, func() error {
		if got := c.ISR(topic, partition); got != want {
			return fmt.Errorf("%s-%d ISR is [%s], want [%s]", topic, partition, got, want)
		}
		return nil
	})
}

// waitLeading waits until broker id answers as the leader of
// topic/partition (the metadata shows the new state before the broker has
// acted on it) and returns its address.
func waitLeading(t *testing.T, c *testutil.Cluster, topic string, partition int32, id int32) string {
	t.Helper()
	testutil.Eventually(t, 30*time.Second, func() error {
		if l := c.Leader(topic, partition); l != id {
			return fmt.Errorf("%s-%d leader is %d, want %d", topic, partition, l, id)
		}
		return nil
	})
	addr := c.Brokers[id].Addr()
	waitServing(t, addr, topic, partition)
	return addr
}

// waitServing waits until the broker at addr answers ListOffsets for
// topic/partition as its leader.
func waitServing(t *testing.T, addr, topic string, partition int32) {
	t.Helper()
	testutil.Eventually(t, 30*time.Second, func() error {
		req := kmsg.NewPtrListOffsetsRequest()
		req.Version = 7
		req.ReplicaID = -1
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = partition, -1, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := rawRequest(t, addr, req).(*kmsg.ListOffsetsResponse)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			return fmt.Errorf("list offsets: malformed response")
		}
		return kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
	})
}

// waitNewLeader waits until topic/partition has a leader other than old
// and returns it.
func waitNewLeader(t *testing.T, c *testutil.Cluster, topic string, partition int32, old int32) int32 {
	t.Helper()
	var l int32
	testutil.Eventually(t, 30*time.Second, func() error {
		if l = c.Leader(topic, partition); l < 0 || l == old {
			return fmt.Errorf("%s-%d leader is %d", topic, partition, l)
		}
		return nil
	})
	return l
}

// othersThan returns the node ids 0..2 except id, ascending.
func othersThan(id int32) []int32 {
	var out []int32
	for i := int32(0); i < 3; i++ {
		if i != id {
			out = append(out, i)
		}
	}
	return out
}

// plainBatch is a batch without a producer id of n records "<tag>-<i>".
func plainBatch(t *testing.T, tag string, n int) []byte {
	t.Helper()
	return idemBatch(t, -1, -1, -1, n, tag)
}

// highWatermark asks the broker at addr (the leader) for the partition's
// latest offset as consumers see it: the high watermark.
func highWatermark(t *testing.T, addr, topic string, partition int32) int64 {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version = 7
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = partition, -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := rawRequest(t, addr, req).(*kmsg.ListOffsetsResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("list offsets: malformed response")
	}
	p := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		t.Fatalf("list offsets %s-%d at %s: %v", topic, partition, addr, err)
	}
	return p.Offset
}

// values returns the records' values.
func values(rs []*kgo.Record) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = string(r.Value)
	}
	return out
}

// tagged returns "<tag>-0" .. "<tag>-<n-1>".
func tagged(tag string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", tag, i)
	}
	return out
}

// TestAcksAllRefusedWhileISRBelowMinInsyncReplicas kills both followers of
// a partition with min.insync.replicas=2: an acks=all produce is refused
// with NOT_ENOUGH_REPLICAS and not written, an acks=1 produce is written
// but stays invisible (the high watermark does not move while the ISR is
// below the minimum), and once a follower is back in the ISR acks=all
// works again and the acks=1 record becomes visible.
// Reference: KIP-966 (strict min ISR), Kafka's min.insync.replicas doc.
func TestAcksAllRefusedWhileISRBelowMinInsyncReplicas(t *testing.T) {
	const topic = "minisr"
	c := faultCluster(t, "auto.leader.rebalance.enable=false")
	createReplicated(t, c, topic, 1)
	leader := c.Leader(topic, 0)
	addr := waitLeading(t, c, topic, 0, leader)

	wantProduce(t, "acks=all, full ISR", produceRawAcks(t, addr, -1, topic, 0, plainBatch(t, "a", 2)), 0, 0)
	for _, f := range othersThan(leader) {
		c.Kill(int(f))
	}
	waitISR(t, c, topic, 0, itoa(leader))

	got := produceRawAcks(t, addr, -1, topic, 0, plainBatch(t, "refused", 2))
	wantProduce(t, "acks=all, ISR of one", got, kerr.NotEnoughReplicas.Code, 0)
	wantProduce(t, "acks=1, ISR of one", produceRawAcks(t, addr, 1, topic, 0, plainBatch(t, "one", 1)), 0, 2)
	if hw := highWatermark(t, addr, topic, 0); hw != 2 {
		t.Fatalf("high watermark %d with the ISR below min.insync.replicas, want 2", hw)
	}
	// What consumers see now: only the two committed records.
	if vs := values(consumeFrom(t, addr, topic, 0, 2)); !slices.Equal(vs, tagged("a", 2)) {
		t.Fatalf("consumed %q, want %q", vs, tagged("a", 2))
	}

	back := othersThan(leader)[0]
	c.Start(int(back))
	want := []string{itoa(leader), itoa(back)}
	sort.Strings(want)
	waitISR(t, c, topic, 0, strings.Join(want, " "))
	wantProduce(t, "acks=all, follower back", produceRawAcks(t, addr, -1, topic, 0, plainBatch(t, "again", 1)), 0, 3)
	if hw := highWatermark(t, addr, topic, 0); hw != 4 {
		t.Fatalf("high watermark %d after the follower rejoined, want 4", hw)
	}
	wantVals := append(append(tagged("a", 2), "one-0"), "again-0")
	if vs := values(consumeFrom(t, c.Brokers[back].Addr(), topic, 0, 4)); !slices.Equal(vs, wantVals) {
		t.Fatalf("consumed %q, want %q (a refused record must never appear)", vs, wantVals)
	}
}

// pacedProducer produces one record per partition per tick, each with the
// value "p<partition>-<seq>", and records which sequence numbers were
// acknowledged, in acknowledgement order, and the longest time between two
// acknowledgements.
type pacedProducer struct {
	cl         *kgo.Client
	topic      string
	partitions int32

	stop chan struct{}
	done chan struct{}

	mu      sync.Mutex
	acked   map[int32][]int // guarded by mu
	failed  []error         // guarded by mu
	lastAck time.Time       // guarded by mu
	maxGap  time.Duration   // guarded by mu
	count   atomic.Int64
}

func seqValue(p int32, seq int) string { return fmt.Sprintf("p%d-%09d", p, seq) }

func startPacedProducer(t *testing.T, cl *kgo.Client, topic string, partitions int32, every time.Duration) *pacedProducer {
	t.Helper()
	pp := &pacedProducer{cl: cl, topic: topic, partitions: partitions, stop: make(chan struct{}), done: make(chan struct{}),
		acked: make(map[int32][]int), lastAck: time.Now()}
	go pp.run(every)
	t.Cleanup(pp.halt)
	return pp
}

func (pp *pacedProducer) run(every time.Duration) {
	defer close(pp.done)
	tick := time.NewTicker(every)
	defer tick.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for seq := 0; ; seq++ {
		select {
		case <-pp.stop:
			if err := pp.cl.Flush(ctx); err != nil {
				pp.fail(fmt.Errorf("flush: %w", err))
			}
			return
		case <-tick.C:
		}
		for p := int32(0); p < pp.partitions; p++ {
			r := &kgo.Record{Topic: pp.topic, Partition: p, Value: []byte(seqValue(p, seq))}
			pp.cl.Produce(ctx, r, func(r *kgo.Record, err error) {
				if err != nil {
					pp.fail(fmt.Errorf("%s: %w", r.Value, err))
					return
				}
				var s int
				fmt.Sscanf(string(r.Value[strings.IndexByte(string(r.Value), '-')+1:]), "%d", &s)
				pp.mu.Lock()
				now := time.Now()
				pp.maxGap = max(pp.maxGap, now.Sub(pp.lastAck))
				pp.lastAck = now
				pp.acked[r.Partition] = append(pp.acked[r.Partition], s)
				pp.mu.Unlock()
				pp.count.Add(1)
			})
		}
	}
}

func (pp *pacedProducer) fail(err error) {
	pp.mu.Lock()
	pp.failed = append(pp.failed, err)
	pp.mu.Unlock()
}

// halt stops producing, waits for every outstanding record and is
// idempotent.
func (pp *pacedProducer) halt() {
	select {
	case <-pp.stop:
	default:
		close(pp.stop)
	}
	<-pp.done
}

// waitAcked waits until n more records are acknowledged than now.
func (pp *pacedProducer) waitAcked(t *testing.T, n int64) {
	t.Helper()
	target := pp.count.Load() + n
	testutil.Eventually(t, 30*time.Second, func() error {
		if got := pp.count.Load(); got < target {
			return fmt.Errorf("%d records acknowledged, waiting for %d", got, target)
		}
		return nil
	})
}

// check halts the producer, fails the test on any failed record, and
// checks that the topic holds, per partition, exactly the acknowledged
// sequence numbers, strictly increasing. It returns the longest gap
// between acknowledgements.
func (pp *pacedProducer) check(t *testing.T, c *testutil.Cluster) time.Duration {
	t.Helper()
	pp.halt()
	pp.mu.Lock()
	defer pp.mu.Unlock()
	if len(pp.failed) > 0 {
		t.Fatalf("%d records failed, first: %v", len(pp.failed), pp.failed[0])
	}
	total := 0
	for _, s := range pp.acked {
		total += len(s)
	}
	got := consumeCluster(t, c, pp.topic, total)
	cl := c.Client()
	for p := int32(0); p < pp.partitions; p++ {
		acked := slices.Clone(pp.acked[p])
		slices.Sort(acked)
		// Every record was acknowledged (none failed), so partition p
		// must hold exactly 0..n-1, once each, in order.
		for i, s := range acked {
			if s != i {
				t.Fatalf("partition %d: acknowledged sequence %d at position %d (a produce was acknowledged twice or skipped)", p, s, i)
			}
		}
		for i, v := range got[p] {
			if want := seqValue(p, i); v != want {
				t.Fatalf("partition %d: offset %d holds %q, want %q (duplicate, gap or reordering)", p, i, v, want)
			}
		}
		if len(got[p]) != len(acked) {
			t.Fatalf("partition %d: consumed %d records, acknowledged %d", p, len(got[p]), len(acked))
		}
		if end := logEnd(t, cl, pp.topic, p); end != int64(len(acked)) {
			t.Fatalf("partition %d: log end %d, acknowledged %d records (extra records were written)", p, end, len(acked))
		}
	}
	return pp.maxGap
}

// TestControlledShutdownMovesLeadershipBeforeExit stops (controlled
// shutdown) the leader of a partition while an idempotent acks=all producer
// writes to every partition: the leaderships move to other in-sync
// replicas, and the stopping broker leaves every ISR, while it is still
// registered; no record fails,
// and every acknowledged record is there once.
func TestControlledShutdownMovesLeadershipBeforeExit(t *testing.T) {
	const topic, partitions = "cshut", 3
	c := faultCluster(t)
	createReplicated(t, c, topic, partitions)
	victim := c.Leader(topic, 0)
	var led []int32
	for p := int32(0); p < partitions; p++ {
		if c.Leader(topic, p) == victim {
			led = append(led, p)
		}
	}
	watcher := c.Brokers[othersThan(victim)[0]].Node

	// Watch another broker's metadata: there must be a moment when none of
	// the victim's partitions is led by it while it is still registered,
	// that is, the leaderships moved before it left.
	var movedFirst atomic.Bool
	watchStop, watchDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(watchDone)
		for {
			select {
			case <-watchStop:
				return
			default:
			}
			img := watcher.Image()
			// NB: an image may lack the topic for a moment (the watcher
			// rebuilding its image); look again.
			if _, registered := img.Brokers[victim]; registered && img.Topics[topic] != nil {
				moved := true
				for _, p := range led {
					st := img.Topics[topic].Partitions[p]
					moved = moved && st.Leader >= 0 && st.Leader != victim
				}
				// It also left every ISR, so that acks=all stops
				// waiting for it before it stops fetching.
				for _, st := range img.Topics[topic].Partitions {
					moved = moved && !slices.Contains(st.ISR, victim)
				}
				if moved {
					movedFirst.Store(true)
					return
				}
			}
			time.Sleep(200 * time.Microsecond)
		}
	}()
	defer func() { close(watchStop); <-watchDone }()

	prod := c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.MetadataMinAge(50*time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 20 * time.Millisecond }))
	pp := startPacedProducer(t, prod, topic, partitions, 5*time.Millisecond)
	pp.waitAcked(t, 150)
	start := time.Now()
	c.Stop(int(victim))
	t.Logf("controlled shutdown of broker %d (leader of %v) took %v", victim, led, time.Since(start))
	if !movedFirst.Load() {
		t.Fatalf("broker %d left the cluster while still leading some of %v or in an ISR", victim, led)
	}
	pp.waitAcked(t, 150)
	gap := pp.check(t, c)
	t.Logf("longest gap between acknowledgements: %v", gap)
	if gap > 10*time.Second {
		t.Fatalf("longest gap between acknowledgements %v, want under 10s", gap)
	}
	c.Start(int(victim))
	waitFullISR(t, c, topic, partitions)
}

// TestIdempotentProducerAcrossLeaderFailovers kills the leader of each of
// three partitions in turn (and starts it again) while a franz-go
// idempotent producer writes sequence-numbered values: each partition
// holds every sequence number once, in order. Reference: TESTPLAN S-11,
// KIP-98 (retries of a batch whose answer was lost are deduplicated by the
// new leader from the producer state it replicated).
func TestIdempotentProducerAcrossLeaderFailovers(t *testing.T) {
	const topic, partitions = "s11", 3
	c := faultCluster(t)
	createReplicated(t, c, topic, partitions)
	prod := c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.MetadataMinAge(50*time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 20 * time.Millisecond }))
	pp := startPacedProducer(t, prod, topic, partitions, 2*time.Millisecond)
	for p := int32(0); p < partitions; p++ {
		pp.waitAcked(t, 100)
		victim := c.Leader(topic, p)
		c.Kill(int(victim))
		next := waitNewLeader(t, c, topic, p, victim)
		t.Logf("partition %d: killed leader %d, new leader %d", p, victim, next)
		pp.waitAcked(t, 100)
		c.Start(int(victim))
		waitFullISR(t, c, topic, partitions)
	}
	pp.waitAcked(t, 100)
	gap := pp.check(t, c)
	t.Logf("acknowledged %d records; longest gap between acknowledgements %v", pp.count.Load(), gap)
}

// TestGroupOffsetsSurviveCoordinatorFailover commits a group's offsets,
// kills the broker leading the group's __consumer_offsets partition, and
// checks that the new coordinator serves the same committed offsets and
// that the consumer goes on without processing any record twice.
// Reference: TESTPLAN S-22.
//
// A new coordinator must load its __consumer_offsets partition up to the
// log end, not its high watermark, which lags right after it is elected
// (offsetsLog.Replay); this test failed before that.
func TestGroupOffsetsSurviveCoordinatorFailover(t *testing.T) {
	const topic, group, partitions, total = "gcf", "gcf-group", 3, 300
	c := faultCluster(t)
	createReplicated(t, c, topic, partitions)
	prod := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()))
	var rs []*kgo.Record
	for i := 0; i < total; i++ {
		rs = append(rs, &kgo.Record{Topic: topic, Key: []byte(strconv.Itoa(i)), Value: []byte(strconv.Itoa(i))})
	}
	produceSync(t, prod, rs...)

	adm := c.Admin()
	coordinator := func() (int32, error) {
		resp := adm.FindGroupCoordinators(ctxT(t, 5*time.Second), group)
		r, ok := resp[group]
		if !ok {
			return -1, fmt.Errorf("no answer for %s", group)
		}
		if r.Err != nil {
			return -1, r.Err
		}
		return r.NodeID, nil
	}

	cons := c.Client(kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }))
	seen := make(map[int32]map[int64]bool)
	committed := make(map[int32]int64)
	n := 0
	process := func(ctx context.Context, limit int) {
		t.Helper()
		for n < limit {
			fs := cons.PollRecords(ctx, limit-n)
			if ctx.Err() != nil {
				t.Fatalf("processed %d of %d records: %v", n, limit, ctx.Err())
			}
			fs.EachRecord(func(r *kgo.Record) {
				if seen[r.Partition] == nil {
					seen[r.Partition] = make(map[int64]bool)
				}
				if seen[r.Partition][r.Offset] {
					t.Fatalf("partition %d offset %d processed twice", r.Partition, r.Offset)
				}
				seen[r.Partition][r.Offset] = true
				committed[r.Partition] = max(committed[r.Partition], r.Offset+1)
				n++
			})
		}
	}
	process(ctxT(t, 30*time.Second), total/2)
	if err := cons.CommitUncommittedOffsets(ctxT(t, 10*time.Second)); err != nil {
		t.Fatalf("commit: %v", err)
	}

	old, err := coordinator()
	if err != nil {
		t.Fatalf("find coordinator: %v", err)
	}
	before, err := adm.FetchOffsets(ctxT(t, 10*time.Second), group)
	if err != nil {
		t.Fatalf("fetch offsets: %v", err)
	}
	for p, off := range committed {
		if o, ok := before.Lookup(topic, p); !ok || o.At != off {
			t.Fatalf("before failover: partition %d committed at %d, want %d", p, o.At, off)
		}
	}

	c.Kill(int(old))
	// A fresh admin client: the old one keeps the dead coordinator cached.
	adm = c.Admin()
	var next int32
	testutil.Eventually(t, 30*time.Second, func() error {
		id, err := coordinator()
		if err != nil {
			return err
		}
		if id == old {
			return fmt.Errorf("coordinator is still %d", id)
		}
		next = id
		return nil
	})
	t.Logf("coordinator moved from %d to %d", old, next)
	testutil.Eventually(t, 30*time.Second, func() error {
		after, err := adm.FetchOffsets(ctxT(t, 5*time.Second), group)
		if err != nil {
			return err
		}
		if err := after.Error(); err != nil {
			return err
		}
		for p, off := range committed {
			o, ok := after.Lookup(topic, p)
			if !ok || o.At != off {
				return fmt.Errorf("after failover: partition %d committed at %d, want %d", p, o.At, off)
			}
		}
		return nil
	})

	process(ctxT(t, 60*time.Second), total)
	fresh := c.Client()
	for p := int32(0); p < partitions; p++ {
		// The killed broker's partitions may still be between leaders
		// (LEADER_NOT_AVAILABLE): ask until one answers.
		var end int64
		testutil.Eventually(t, 30*time.Second, func() error {
			req := kmsg.NewPtrListOffsetsRequest()
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = topic
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = p, -1, -1
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			resp, err := req.RequestWith(ctxT(t, 5*time.Second), fresh)
			if err != nil {
				return err
			}
			if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
				return fmt.Errorf("list offsets: malformed response")
			}
			rpp := resp.Topics[0].Partitions[0]
			if err := kerr.ErrorForCode(rpp.ErrorCode); err != nil {
				return err
			}
			end = rpp.Offset
			return nil
		})
		if int64(len(seen[p])) != end {
			t.Fatalf("partition %d: processed %d distinct offsets, log end %d", p, len(seen[p]), end)
		}
	}
}

// losePartitionISR writes to a one-partition topic until only its leader
// holds the newest records, then kills the leader too:
//
//	w: written while all three replicas are in sync
//	x: written after the first follower (stale) was killed
//	y: written after the second follower was killed, on the leader alone
//
// It returns the old leader, the stale follower (which has only w) and the
// other follower (w and x). Every broker is down when it returns.
func losePartitionISR(t *testing.T, c *testutil.Cluster, topic string) (leader, stale, other int32) {
	t.Helper()
	leader = c.Leader(topic, 0)
	fs := othersThan(leader)
	stale, other = fs[0], fs[1]
	addr := waitLeading(t, c, topic, 0, leader)
	wantProduce(t, "w", produceRawAcks(t, addr, -1, topic, 0, plainBatch(t, "w", 3)), 0, 0)
	c.Kill(int(stale))
	waitISR(t, c, topic, 0, strings.Join(sortedIDs(leader, other), " "))
	wantProduce(t, "x", produceRawAcks(t, addr, -1, topic, 0, plainBatch(t, "x", 3)), 0, 3)
	c.Kill(int(other))
	waitISR(t, c, topic, 0, itoa(leader))
	wantProduce(t, "y", produceRawAcks(t, addr, -1, topic, 0, plainBatch(t, "y", 3)), 0, 6)
	c.Kill(int(leader))
	return leader, stale, other
}

func sortedIDs(ids ...int32) []string {
	slices.Sort(ids)
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = itoa(id)
	}
	return out
}

// TestNoUncleanElectionKeepsPartitionOfflineUntilEnabled loses every
// in-sync replica of a partition and starts only an out-of-sync one: with
// unclean leader election off the partition stays without a leader and a
// produce gets a retriable error; once the topic enables
// unclean.leader.election.enable the out-of-sync replica is elected and
// serves its own, older log. Reference: TESTPLAN S-04, KIP-106.
func TestNoUncleanElectionKeepsPartitionOfflineUntilEnabled(t *testing.T) {
	const topic = "unclean"
	c := faultCluster(t, "auto.leader.rebalance.enable=false")
	createReplicated(t, c, topic, 1, "min.insync.replicas=1")
	_, stale, _ := losePartitionISR(t, c, topic)

	c.Start(int(stale))
	staleAddr := c.Brokers[stale].Addr()
	testutil.Eventually(t, 30*time.Second, func() error {
		if l := c.Leader(topic, 0); l != -1 {
			return fmt.Errorf("partition led by %d", l)
		}
		return nil
	})
	// The controller has had several chances to elect (it decides at every
	// metadata change and at least every 2 s): the partition must still
	// have no leader.
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		if l := c.Leader(topic, 0); l != -1 {
			t.Fatalf("partition led by %d with every in-sync replica down and unclean election off", l)
		}
		time.Sleep(50 * time.Millisecond)
	}
	got := produceRawAcks(t, staleAddr, -1, topic, 0, plainBatch(t, "offline", 1))
	if kerr.ErrorForCode(got.ErrorCode) == nil {
		t.Fatalf("produce to an offline partition succeeded")
	}
	if e := kerr.ErrorForCode(got.ErrorCode).(*kerr.Error); !e.Retriable {
		t.Fatalf("produce to an offline partition: %v, want a retriable error", e)
	}

	adm := c.Admin()
	on := "true"
	resps, err := adm.AlterTopicConfigs(ctxT(t, 10*time.Second), []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: "unclean.leader.election.enable", Value: &on},
	}, topic)
	if err == nil {
		_, err = resps.On(topic, nil)
	}
	if err != nil {
		t.Fatalf("enable unclean election: %v", err)
	}
	waitLeading(t, c, topic, 0, stale)
	waitISR(t, c, topic, 0, itoa(stale))
	wantProduce(t, "z after unclean election", produceRawAcks(t, staleAddr, -1, topic, 0, plainBatch(t, "z", 2)), 0, 3)
	want := append(tagged("w", 3), tagged("z", 2)...)
	if vs := values(consumeFrom(t, staleAddr, topic, 0, 5)); !slices.Equal(vs, want) {
		t.Fatalf("consumed %q from the new leader, want %q", vs, want)
	}
}

// segmentBytes returns the concatenated .log files of topic-partition in
// a broker's log dir, in file name order.
func segmentBytes(t *testing.T, dir, topic string, partition int32) []byte {
	t.Helper()
	pdir := filepath.Join(dir, fmt.Sprintf("%s-%d", topic, partition))
	names, err := filepath.Glob(filepath.Join(pdir, "*.log"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no segments in %s: %v", pdir, err)
	}
	sort.Strings(names)
	var out []byte
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b...)
	}
	return out
}

// TestOldLeaderTruncatesDivergentRecords makes a leader come back with
// records the new leader never had (written while it led alone, then lost
// by an unclean election) and checks that, as a follower, it truncates
// them and ends with a log identical byte for byte to the new leader's.
// Reference: KIP-101, KIP-279.
func TestOldLeaderTruncatesDivergentRecords(t *testing.T) {
	const topic = "diverge"
	c := faultCluster(t, "auto.leader.rebalance.enable=false")
	createReplicated(t, c, topic, 1, "min.insync.replicas=1", "unclean.leader.election.enable=true")
	oldLeader, stale, other := losePartitionISR(t, c, topic)

	c.Start(int(stale))
	staleAddr := waitLeading(t, c, topic, 0, stale)
	wantProduce(t, "z", produceRawAcks(t, staleAddr, -1, topic, 0, plainBatch(t, "z", 4)), 0, 3)

	// The old leader has w x y (offsets 0-8), the other follower w x
	// (0-5); the new leader w z (0-6). Both diverge from offset 3.
	c.Start(int(oldLeader))
	c.Start(int(other))
	waitISR(t, c, topic, 0, "0 1 2")
	wantProduce(t, "after", produceRawAcks(t, staleAddr, -1, topic, 0, plainBatch(t, "after", 1)), 0, 7)
	waitISR(t, c, topic, 0, "0 1 2")
	testutil.Eventually(t, 10*time.Second, func() error {
		if hw := highWatermark(t, staleAddr, topic, 0); hw != 8 {
			return fmt.Errorf("high watermark %d, want 8", hw)
		}
		return nil
	})
	want := append(append(tagged("w", 3), tagged("z", 4)...), "after-0")
	if vs := values(consumeFrom(t, staleAddr, topic, 0, 8)); !slices.Equal(vs, want) {
		t.Fatalf("consumed %q, want %q", vs, want)
	}

	for i := range c.Brokers {
		c.Kill(i)
	}
	lead := segmentBytes(t, c.Brokers[stale].Dir, topic, 0)
	for _, f := range []int32{oldLeader, other} {
		got := segmentBytes(t, c.Brokers[f].Dir, topic, 0)
		for _, gone := range []string{"x-", "y-"} {
			if bytes.Contains(got, []byte(gone)) {
				t.Errorf("broker %d still holds %q records after truncation", f, gone)
			}
		}
		if !bytes.Equal(got, lead) {
			t.Errorf("broker %d log (%d bytes) differs from the leader's (%d bytes)", f, len(got), len(lead))
		}
	}
}

// proxiedCluster is three brokers whose advertised addresses are fault
// proxies, so that the traffic to one broker (its followers' fetches
// included) can be cut while it stays registered and serves its own
// listener directly.
type proxiedCluster struct {
	t       *testing.T
	log     *slog.Logger
	nodes   []*node.Node
	proxies []*testutil.Proxy
	args    [][]string
	dirs    []string
	down    []bool
}

func startProxiedCluster(t *testing.T, overrides ...string) *proxiedCluster {
	t.Helper()
	ctx := ctxT(t, 30*time.Second)
	e, err := cluster.StartEmbeddedEtcd(ctx, t.TempDir())
	if err != nil {
		t.Fatalf("start etcd: %v", err)
	}
	pc := &proxiedCluster{t: t, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if os.Getenv("SAMSA_TEST_LOG") != "" {
		pc.log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	t.Cleanup(func() {
		for _, n := range pc.nodes {
			n.Close()
		}
		e.Close()
	})
	for i := 0; i < 3; i++ {
		px := testutil.NewProxy(t, "127.0.0.1:1")
		dir := t.TempDir()
		pc.args = append(pc.args, append([]string{
			"listeners=PLAINTEXT://127.0.0.1:0",
			"advertised.listeners=PLAINTEXT://" + px.Addr(),
			"log.dirs=" + dir,
			"admin.listener=",
			"node.id=" + strconv.Itoa(i),
			"etcd.endpoints=" + e.ClientURL(),
		}, overrides...))
		pc.dirs = append(pc.dirs, dir)
		pc.proxies = append(pc.proxies, px)
		pc.nodes = append(pc.nodes, nil)
		pc.down = append(pc.down, true)
		pc.start(i)
		px.SetTarget(pc.nodes[i].Addr())
	}
	return pc
}

// start starts node i (again, on its port and data dir if it ran before).
func (pc *proxiedCluster) start(i int) {
	pc.t.Helper()
	if n := pc.nodes[i]; n != nil {
		pc.args[i][0] = "listeners=PLAINTEXT://" + n.Addr()
	}
	cfg, err := config.Load("", pc.args[i])
	if err != nil {
		pc.t.Fatalf("config: %v", err)
	}
	n, err := node.Start(ctxT(pc.t, 30*time.Second), node.Config{Broker: cfg, Logger: pc.log})
	if err != nil {
		pc.t.Fatalf("start broker %d: %v", i, err)
	}
	pc.nodes[i], pc.down[i] = n, false
}

// kill closes node i at once (its registration lease is revoked).
func (pc *proxiedCluster) kill(i int) {
	pc.nodes[i].Close()
	pc.down[i] = true
}

// image is the metadata image of the first running node.
func (pc *proxiedCluster) image() *cluster.Image {
	for i, n := range pc.nodes {
		if !pc.down[i] {
			return n.Image()
		}
	}
	pc.t.Fatalf("no broker running")
	return nil
}

// isr returns the ISR of topic-partition in a running node's image,
// sorted, and how many brokers are registered.
func (pc *proxiedCluster) isr(topic string, partition int32) (string, int) {
	img := pc.image()
	t := img.Topics[topic]
	if t == nil || int(partition) >= len(t.Partitions) {
		return "?", len(img.Brokers)
	}
	return strings.Join(sortedIDs(slices.Clone(t.Partitions[partition].ISR)...), " "), len(img.Brokers)
}

// leader returns the leader of topic-partition in a running node's image.
func (pc *proxiedCluster) leader(topic string, partition int32) int32 {
	t := pc.image().Topics[topic]
	if t == nil || int(partition) >= len(t.Partitions) {
		return -1
	}
	return t.Partitions[partition].Leader
}

// waitISR waits until the ISR of topic-partition is want.
func (pc *proxiedCluster) waitISR(topic string, partition int32, want string) {
	pc.t.Helper()
	testutil.Eventually(pc.t, 30*time.Second, func() error {
		if isr, _ := pc.isr(topic, partition); isr != want {
			return fmt.Errorf("%s-%d ISR [%s], want [%s]", topic, partition, isr, want)
		}
		return nil
	})
}

// isolate makes every connection to node i's advertised address fail.
func (pc *proxiedCluster) isolate(i int) {
	pc.proxies[i].SetTarget("127.0.0.1:1")
	pc.proxies[i].DropAll()
}

// heal forwards node i's advertised address to it again.
func (pc *proxiedCluster) heal(i int) { pc.proxies[i].SetTarget(pc.nodes[i].Addr()) }

// TestLeaderWithUncommittedRecordsTruncatesAfterFailover cuts a leader off
// from its followers, lets it append acks=1 records that never reach them
// (they stay in the ISR: replica.lag.time.max.ms has not passed), then
// kills it. A follower in the ISR is elected, writes at the same offsets,
// and when the old leader comes back it truncates its uncommitted records
// and ends with a log identical byte for byte to the new leader's. No
// unclean election is involved. Reference: KIP-101, KIP-279.
func TestLeaderWithUncommittedRecordsTruncatesAfterFailover(t *testing.T) {
	const topic = "uncommitted"
	pc := startProxiedCluster(t,
		"default.replication.factor=3",
		"min.insync.replicas=2",
		"replica.lag.time.max.ms=30000",
		"offsets.topic.num.partitions=1",
		"auto.leader.rebalance.enable=false",
	)
	cl := testutil.NewClient(t, pc.nodes[0].Addr())
	// NB: the three brokers may not all be registered yet.
	testutil.Eventually(t, 10*time.Second, func() error {
		return kerr.ErrorForCode(createTopicRaw(t, cl, topic, 1, 3, false, nil))
	})
	old := pc.leader(topic, 0)
	oldAddr := pc.nodes[old].Addr()
	waitServing(t, oldAddr, topic, 0)
	wantProduce(t, "c", produceRawAcks(t, oldAddr, -1, topic, 0, plainBatch(t, "c", 3)), 0, 0)

	pc.isolate(int(old))
	wantProduce(t, "u (acks=1, cut off)", produceRawAcks(t, oldAddr, 1, topic, 0, plainBatch(t, "u", 4)), 0, 3)
	if hw := highWatermark(t, oldAddr, topic, 0); hw != 3 {
		t.Fatalf("high watermark %d with the followers cut off, want 3", hw)
	}
	if isr, _ := pc.isr(topic, 0); isr != "0 1 2" {
		t.Fatalf("ISR [%s] before replica.lag.time.max.ms, want all three", isr)
	}
	pc.kill(int(old))

	var next int32
	testutil.Eventually(t, 30*time.Second, func() error {
		if next = pc.leader(topic, 0); next < 0 || next == old {
			return fmt.Errorf("leader %d", next)
		}
		return nil
	})
	nextAddr := pc.nodes[next].Addr()
	waitServing(t, nextAddr, topic, 0)
	wantProduce(t, "n", produceRawAcks(t, nextAddr, -1, topic, 0, plainBatch(t, "n", 2)), 0, 3)

	pc.start(int(old))
	pc.heal(int(old))
	pc.waitISR(topic, 0, "0 1 2")
	wantProduce(t, "after", produceRawAcks(t, nextAddr, -1, topic, 0, plainBatch(t, "after", 1)), 0, 5)
	want := append(append(tagged("c", 3), tagged("n", 2)...), "after-0")
	if vs := values(consumeFrom(t, nextAddr, topic, 0, 6)); !slices.Equal(vs, want) {
		t.Fatalf("consumed %q, want %q", vs, want)
	}
	// The ISR is full and the last write was acks=all: every replica has
	// offsets 0-5. Stop everything and compare the files.
	for i := range pc.nodes {
		pc.kill(i)
	}
	lead := segmentBytes(t, pc.dirs[next], topic, 0)
	for i := range pc.nodes {
		if int32(i) == next {
			continue
		}
		got := segmentBytes(t, pc.dirs[i], topic, 0)
		if bytes.Contains(got, []byte("u-")) {
			t.Errorf("broker %d still holds uncommitted records", i)
		}
		if !bytes.Equal(got, lead) {
			t.Errorf("broker %d log (%d bytes) differs from the leader's (%d bytes)", i, len(got), len(lead))
		}
	}
}

// TestISRShrinksOnFollowerLagAndExpandsOnCatchUp cuts the followers off
// from a partition leader (its proxied address refuses them) while every
// broker stays registered: after replica.lag.time.max.ms the leader
// removes them from the ISR on its own, and once they can fetch again they
// catch up and rejoin it. Reference: Kafka's replica.lag.time.max.ms
// (KIP-16 semantics: a follower is out of sync when it has not caught up
// to the leader's log end within the lag time).
func TestISRShrinksOnFollowerLagAndExpandsOnCatchUp(t *testing.T) {
	const topic, lagMs = "lag", 1500
	pc := startProxiedCluster(t,
		"default.replication.factor=3",
		"min.insync.replicas=1",
		"replica.lag.time.max.ms="+strconv.Itoa(lagMs),
		"offsets.topic.num.partitions=1",
		"auto.leader.rebalance.enable=false",
	)
	cl := testutil.NewClient(t, pc.nodes[0].Addr())
	if code := createTopicRaw(t, cl, topic, 1, 3, false, nil); code != 0 {
		t.Fatalf("create topic: %v", kerr.ErrorForCode(code))
	}
	testutil.Eventually(t, 30*time.Second, func() error {
		if isr, _ := pc.isr(topic, 0); isr != "0 1 2" {
			return fmt.Errorf("ISR [%s]", isr)
		}
		return nil
	})
	leader := pc.leader(topic, 0)
	addr := pc.nodes[leader].Addr()
	waitServing(t, addr, topic, 0)
	wantProduce(t, "before", produceRawAcks(t, addr, -1, topic, 0, plainBatch(t, "before", 2)), 0, 0)

	// Refuse every connection to the leader's advertised address: its
	// followers can no longer fetch, and nothing else changes.
	pc.isolate(int(leader))
	cut := time.Now()
	wantProduce(t, "during", produceRawAcks(t, addr, 1, topic, 0, plainBatch(t, "during", 3)), 0, 2)
	testutil.Eventually(t, 20*time.Second, func() error {
		isr, registered := pc.isr(topic, 0)
		if registered != 3 {
			t.Fatalf("only %d brokers registered: the shrink must come from lag alone", registered)
		}
		if isr != itoa(leader) {
			return fmt.Errorf("ISR [%s]", isr)
		}
		return nil
	})
	shrunk := time.Since(cut)
	t.Logf("ISR shrank to [%d] %v after the followers were cut off", leader, shrunk)
	if shrunk < lagMs*time.Millisecond/2 {
		t.Fatalf("ISR shrank %v after the cut, before replica.lag.time.max.ms (%d ms) could pass", shrunk, lagMs)
	}
	// With the ISR of one, records written now are committed at once.
	wantProduce(t, "alone", produceRawAcks(t, addr, -1, topic, 0, plainBatch(t, "alone", 1)), 0, 5)

	pc.heal(int(leader))
	pc.waitISR(topic, 0, "0 1 2")
	// Back in the ISR means caught up: an acks=all write is committed by
	// all three again.
	wantProduce(t, "after", produceRawAcks(t, addr, -1, topic, 0, plainBatch(t, "after", 1)), 0, 6)
	if hw := highWatermark(t, addr, topic, 0); hw != 7 {
		t.Fatalf("high watermark %d with a full ISR, want 7", hw)
	}
	want := append(append(tagged("before", 2), tagged("during", 3)...), "alone-0", "after-0")
	if vs := values(consumeFrom(t, addr, topic, 0, 7)); !slices.Equal(vs, want) {
		t.Fatalf("consumed %q, want %q", vs, want)
	}
}
