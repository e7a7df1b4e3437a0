package broker_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/testutil"
)

// groupBrokerConfig keeps group tests fast: few __consumer_offsets
// partitions, no initial rebalance delay, and sessions that may be short.
var groupBrokerConfig = []string{
	"offsets.topic.num.partitions=4",
	"group.initial.rebalance.delay.ms=0",
	"group.min.session.timeout.ms=500",
}

// groupLedger records what a set of group members did, for the
// at-least-once and exclusive-ownership checks. It is safe for concurrent
// use.
type groupLedger struct {
	t  *testing.T
	mu sync.Mutex
	// mu guards everything below.
	seq       int64
	produced  map[[2]int64]bool         // {partition, offset}
	processed map[[2]int64][]int64      // {partition, offset} -> seq of each processing
	committed map[int32][]commitEvent   // partition -> successful commits in order
	owned     map[string]map[int32]bool // live member -> partitions it holds
	dead      map[string]bool           // members closed or killed
	overlaps  []string                  // assignment to a member while another live member held it
	revokes   map[string]int            // member -> OnPartitionsRevoked/Lost calls with partitions
	assigned  map[string]map[int32]bool // member -> partitions ever assigned
}

type commitEvent struct {
	seq    int64
	offset int64 // next offset to consume
}

func newGroupLedger(t *testing.T) *groupLedger {
	return &groupLedger{
		t:         t,
		produced:  make(map[[2]int64]bool),
		processed: make(map[[2]int64][]int64),
		committed: make(map[int32][]commitEvent),
		owned:     make(map[string]map[int32]bool),
		dead:      make(map[string]bool),
		revokes:   make(map[string]int),
		assigned:  make(map[string]map[int32]bool),
	}
}

func (l *groupLedger) onAssigned(member, topic string) func(context.Context, *kgo.Client, map[string][]int32) {
	return func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.owned[member] == nil {
			l.owned[member] = make(map[int32]bool)
			l.assigned[member] = make(map[int32]bool)
		}
		for _, p := range m[topic] {
			for other, ps := range l.owned {
				if other != member && !l.dead[other] && ps[p] {
					l.overlaps = append(l.overlaps, fmt.Sprintf("partition %d assigned to %s while %s holds it", p, member, other))
				}
			}
			l.owned[member][p] = true
			l.assigned[member][p] = true
		}
	}
}

func (l *groupLedger) onRevoked(member, topic string) func(context.Context, *kgo.Client, map[string][]int32) {
	return func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
		l.mu.Lock()
		defer l.mu.Unlock()
		if len(m[topic]) > 0 {
			l.revokes[member]++
		}
		for _, p := range m[topic] {
			delete(l.owned[member], p)
		}
	}
}

func (l *groupLedger) markDead(member string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.dead[member] = true
}

func (l *groupLedger) addProduced(rs []*kgo.Record) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range rs {
		l.produced[[2]int64{int64(r.Partition), r.Offset}] = true
	}
}

func (l *groupLedger) addProcessed(rs []*kgo.Record) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range rs {
		l.seq++
		k := [2]int64{int64(r.Partition), r.Offset}
		l.processed[k] = append(l.processed[k], l.seq)
	}
}

func (l *groupLedger) addCommitted(rs []*kgo.Record) {
	l.mu.Lock()
	defer l.mu.Unlock()
	next := make(map[int32]int64)
	for _, r := range rs {
		next[r.Partition] = max(next[r.Partition], r.Offset+1)
	}
	for p, o := range next {
		l.seq++
		l.committed[p] = append(l.committed[p], commitEvent{seq: l.seq, offset: o})
	}
}

// liveOwnership returns an error unless the live members together hold
// each of partitions exactly once, and each of them holds something if
// there are enough partitions.
func (l *groupLedger) liveOwnership(members []string, partitions int32) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	owner := make(map[int32]string)
	for _, m := range members {
		for p := range l.owned[m] {
			if o, ok := owner[p]; ok {
				return fmt.Errorf("partition %d held by %s and %s", p, o, m)
			}
			owner[p] = m
		}
		if len(l.owned[m]) == 0 && int(partitions) >= len(members) {
			return fmt.Errorf("member %s holds nothing (owned %v)", m, l.owned)
		}
	}
	for p := int32(0); p < partitions; p++ {
		if _, ok := owner[p]; !ok {
			return fmt.Errorf("partition %d held by no live member (owned %v)", p, l.owned)
		}
	}
	if len(owner) != int(partitions) {
		return fmt.Errorf("%d partitions held, want %d", len(owner), partitions)
	}
	return nil
}

// allProcessed returns an error until every produced record was processed
// at least once.
func (l *groupLedger) allProcessed() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	missing := 0
	for k := range l.produced {
		if len(l.processed[k]) == 0 {
			missing++
		}
	}
	if missing > 0 {
		return fmt.Errorf("%d of %d produced records not processed yet", missing, len(l.produced))
	}
	return nil
}

// check asserts the at-least-once contract: nothing processed that was not
// produced; a record processed again only if no commit covering it had
// succeeded before the repeat; no partition ever held by two live members
// at once. It returns the number of duplicate processings.
func (l *groupLedger) check() int {
	l.t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	dups := 0
	for k, seqs := range l.processed {
		if !l.produced[k] {
			l.t.Errorf("processed %v, which was never produced", k)
		}
		for _, s := range seqs[1:] {
			dups++
			for _, c := range l.committed[int32(k[0])] {
				if c.seq < s && c.offset > k[1] {
					l.t.Errorf("partition %d offset %d processed again after a commit at %d had succeeded", k[0], k[1], c.offset)
					break
				}
			}
		}
	}
	for _, o := range l.overlaps {
		l.t.Errorf("ownership overlap: %s", o)
	}
	return dups
}

// groupMember is one consumer in the group: a kgo client and its poll
// loop, which processes each polled batch, commits it, and only then lets
// a rebalance proceed.
type groupMember struct {
	name   string
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}
	kill   chan struct{} // closed to make the loop stop before its next commit
	proxy  *testutil.Proxy
}

func startGroupMember(t *testing.T, b *testutil.Broker, l *groupLedger, name, group, topic string, balancer kgo.GroupBalancer, viaProxy bool, extra ...kgo.Opt) *groupMember {
	t.Helper()
	m := &groupMember{name: name, done: make(chan struct{}), kill: make(chan struct{})}
	opts := append(groupMemberOpts(l, name, group, topic, balancer), extra...)
	if viaProxy {
		m.proxy = testutil.NewProxy(t, b.Addr())
		opts = append(opts, kgo.Dialer(m.proxy.Dialer()), kgo.RetryTimeout(2*time.Second), kgo.RequestRetries(2))
	}
	return runGroupMember(t, m, l, b.Client, opts)
}

// groupMemberOpts are the client options of a group member: manual
// commits after processing, rebalances blocked while a poll is
// processed, the ledger told of every assignment and revocation.
func groupMemberOpts(l *groupLedger, name, group, topic string, balancer kgo.GroupBalancer) []kgo.Opt {
	return []kgo.Opt{
		kgo.ClientID(name),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.Balancers(balancer),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.SessionTimeout(1500 * time.Millisecond),
		kgo.HeartbeatInterval(150 * time.Millisecond),
		kgo.RebalanceTimeout(10 * time.Second),
		kgo.FetchMaxWait(100 * time.Millisecond),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.OnPartitionsAssigned(l.onAssigned(name, topic)),
		kgo.OnPartitionsRevoked(l.onRevoked(name, topic)),
		kgo.OnPartitionsLost(l.onRevoked(name, topic)),
	}
}

// runGroupMember makes m's client with newClient and starts its poll
// loop, stopped at the end of the test.
func runGroupMember(t *testing.T, m *groupMember, l *groupLedger, newClient func(...kgo.Opt) *kgo.Client, opts []kgo.Opt) *groupMember {
	t.Helper()
	m.cl = newClient(opts...)
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	go m.loop(ctx, l)
	t.Cleanup(m.stop)
	return m
}

func (m *groupMember) loop(ctx context.Context, l *groupLedger) {
	defer close(m.done)
	for ctx.Err() == nil {
		pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		fs := m.cl.PollRecords(pctx, 50)
		cancel()
		if fs.IsClientClosed() {
			return
		}
		rs := fs.Records()
		l.addProcessed(rs)
		select {
		case <-m.kill:
			return // killed after processing, before committing
		default:
		}
		if len(rs) > 0 {
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			err := m.cl.CommitRecords(cctx, rs...)
			cancel()
			if err == nil {
				l.addCommitted(rs)
			}
		}
		m.cl.AllowRebalance()
	}
}

// stop ends the poll loop and waits for it. It is idempotent.
func (m *groupMember) stop() {
	m.cancel()
	<-m.done
}

// leave stops polling and closes the client, which leaves the group.
func (m *groupMember) leave(l *groupLedger) {
	m.stop()
	m.cl.Close()
	l.markDead(m.name)
}

// crash stops polling before the next commit and cuts the member off from
// the broker so that it sends no LeaveGroup: only the session timeout can
// remove it.
func (m *groupMember) crash(l *groupLedger) {
	l.markDead(m.name)
	close(m.kill)
	<-m.done
	m.proxy.Close()
	// The loop ended holding the poll's rebalance block; release it so
	// that the client can later shut down (its LeaveGroup cannot reach
	// the broker any more).
	m.cl.AllowRebalance()
}

// waitGroupStable waits until the group is Stable with exactly the live
// members, and they hold every partition exactly once.
func waitGroupStable(t *testing.T, adm *kadm.Client, l *groupLedger, group string, partitions int32, live []*groupMember) {
	t.Helper()
	names := make([]string, 0, len(live))
	for _, m := range live {
		names = append(names, m.name)
	}
	testutil.Eventually(t, 30*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		dg, err := adm.DescribeGroups(ctx, group)
		if err != nil {
			return err
		}
		g := dg[group]
		if g.Err != nil {
			return g.Err
		}
		if g.State != "Stable" || len(g.Members) != len(live) {
			return fmt.Errorf("group %s with %d members, want Stable with %d", g.State, len(g.Members), len(live))
		}
		var ids, want []string
		for _, m := range g.Members {
			ids = append(ids, m.MemberID)
		}
		for _, m := range live {
			id, _ := m.cl.GroupMetadata()
			want = append(want, id)
		}
		sort.Strings(ids)
		sort.Strings(want)
		if !slices.Equal(ids, want) {
			return fmt.Errorf("members %v, want %v (%v)", ids, want, names)
		}
		if err := l.liveOwnership(names, partitions); err != nil {
			return err
		}
		// The assignment the coordinator stored for each member is what
		// the member's callbacks say it holds.
		byID := make(map[string][]int32)
		for _, m := range g.Members {
			if c, ok := m.Assigned.AsConsumer(); ok {
				for _, at := range c.Topics {
					byID[m.MemberID] = append(byID[m.MemberID], at.Partitions...)
				}
			}
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		for _, m := range live {
			id, _ := m.cl.GroupMetadata()
			stored := slices.Sorted(slices.Values(byID[id]))
			held := slices.Sorted(maps.Keys(l.owned[m.name]))
			if !slices.Equal(stored, held) {
				return fmt.Errorf("member %s: coordinator has assignment %v, member holds %v", m.name, stored, held)
			}
		}
		return nil
	})
}

// TestGroupRebalanceKeepsAtLeastOnce runs a group through growth, a clean
// leave and a crash, for the eager range and the cooperative-sticky
// protocols, while records keep arriving. After each rebalance every
// partition is held by exactly one live member; at the end every produced
// record was processed, and a record was processed twice only when no
// commit covering it had succeeded before.
func TestGroupRebalanceKeepsAtLeastOnce(t *testing.T) {
	for _, tc := range []struct {
		name     string
		balancer kgo.GroupBalancer
	}{
		{"range", kgo.RangeBalancer()},
		{"cooperative-sticky", kgo.CooperativeStickyBalancer()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const partitions = 6
			b := testutil.StartBroker(t, groupBrokerConfig...)
			adm := b.Admin()
			topic, group := "rebalance-"+tc.name, "g-"+tc.name
			testutil.CreateTopic(t, adm, topic, partitions)
			l := newGroupLedger(t)

			// The producer writes until stopped, round robin over the
			// partitions.
			stopProducer := produceUntilStopped(t, b.Client, l, topic)

			m0 := startGroupMember(t, b, l, "m0", group, topic, tc.balancer, false)
			m1 := startGroupMember(t, b, l, "m1", group, topic, tc.balancer, true)
			m2 := startGroupMember(t, b, l, "m2", group, topic, tc.balancer, false)
			waitGroupStable(t, adm, l, group, partitions, []*groupMember{m0, m1, m2})

			m3 := startGroupMember(t, b, l, "m3", group, topic, tc.balancer, false)
			waitGroupStable(t, adm, l, group, partitions, []*groupMember{m0, m1, m2, m3})

			m0.leave(l)
			waitGroupStable(t, adm, l, group, partitions, []*groupMember{m1, m2, m3})

			crashed := time.Now()
			m1.crash(l)
			waitGroupStable(t, adm, l, group, partitions, []*groupMember{m2, m3})
			if d := time.Since(crashed); d < time.Second {
				// The member sent no LeaveGroup: only its 1.5 s session
				// timeout can have removed it.
				t.Errorf("crashed member removed after %v, before its session timeout", d)
			}

			stopProducer()
			testutil.Eventually(t, 30*time.Second, l.allProcessed)
			dups := l.check()
			l.mu.Lock()
			n := len(l.produced)
			l.mu.Unlock()
			if n == 0 {
				t.Fatal("nothing produced")
			}
			t.Logf("%d records produced, %d processed twice", n, dups)
		})
	}
}

// TestGroupOffsetsSurviveRestart commits offsets, both from a consuming
// group member and as simple commits overwritten many times, restarts the
// broker, and checks that the coordinator reloaded the latest commit of
// each partition and that a rejoining consumer resumes from there.
func TestGroupOffsetsSurviveRestart(t *testing.T) {
	const partitions = 4
	b := testutil.StartBroker(t, groupBrokerConfig...)
	adm := b.Admin()
	topic := "restart-offsets"
	testutil.CreateTopic(t, adm, topic, partitions)
	var rs []*kgo.Record
	for p := int32(0); p < partitions; p++ {
		for i := 0; i < 20; i++ {
			rs = append(rs, &kgo.Record{Partition: p, Value: fmt.Appendf(nil, "p%d-%d", p, i)})
		}
	}
	prod := b.Client(kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceSync(t, prod, rs...)

	// A group member consumes and commits the first 10 records of each
	// partition.
	ctx := ctxT(t, 60*time.Second)
	cons := b.Client(
		kgo.ConsumerGroup("resume"),
		kgo.ConsumeTopics(topic),
		kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(100*time.Millisecond),
		kgo.SessionTimeout(2*time.Second),
		kgo.HeartbeatInterval(200*time.Millisecond),
	)
	got := make(map[int32]int)
	for done := 0; done < partitions; {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consume: %v (got %v)", ctx.Err(), got)
		}
		var commit []*kgo.Record
		fs.EachRecord(func(r *kgo.Record) {
			if got[r.Partition] < 10 {
				got[r.Partition]++
				commit = append(commit, r)
				if got[r.Partition] == 10 {
					done++
				}
			}
		})
		if len(commit) > 0 {
			if err := cons.CommitRecords(ctx, commit...); err != nil {
				t.Fatalf("commit: %v", err)
			}
		}
	}
	cons.Close()

	// Simple commits (empty group, generation -1) overwrite the same
	// partitions many times; the last one must win after reload.
	simple := "simple-many"
	for i := int64(0); i < 50; i++ {
		var os kadm.Offsets
		for p := int32(0); p < partitions; p++ {
			os.Add(kadm.Offset{Topic: topic, Partition: p, At: i + int64(p), LeaderEpoch: -1, Metadata: fmt.Sprintf("commit-%d", i)})
		}
		resp, err := adm.CommitOffsets(ctx, simple, os)
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			t.Fatalf("commit %d: %v", i, err)
		}
	}

	fetch := func(group string) map[int32]kadm.Offset {
		t.Helper()
		var out map[int32]kadm.Offset
		testutil.Eventually(t, 30*time.Second, func() error {
			resp, err := adm.FetchOffsets(ctx, group)
			if err == nil {
				err = resp.Error()
			}
			if err != nil {
				return err
			}
			out = make(map[int32]kadm.Offset)
			resp.Each(func(o kadm.OffsetResponse) { out[o.Partition] = o.Offset })
			return nil
		})
		return out
	}
	beforeResume, beforeSimple := fetch("resume"), fetch(simple)
	for p := int32(0); p < partitions; p++ {
		if beforeResume[p].At != 10 {
			t.Fatalf("resume partition %d committed at %d before restart, want 10", p, beforeResume[p].At)
		}
		if o := beforeSimple[p]; o.At != 49+int64(p) || o.Metadata != "commit-49" {
			t.Fatalf("simple partition %d: %+v before restart, want offset %d metadata commit-49", p, o, 49+p)
		}
	}

	b.Restart()

	afterResume, afterSimple := fetch("resume"), fetch(simple)
	if !maps.Equal(beforeResume, afterResume) {
		t.Errorf("resume offsets changed over restart:\nbefore %+v\nafter  %+v", beforeResume, afterResume)
	}
	if !maps.Equal(beforeSimple, afterSimple) {
		t.Errorf("simple offsets changed over restart (an older commit reloaded?):\nbefore %+v\nafter  %+v", beforeSimple, afterSimple)
	}

	// __consumer_offsets is compacted, as Kafka creates it.
	rc, err := adm.DescribeTopicConfigs(ctx, "__consumer_offsets")
	if err != nil {
		t.Fatalf("describe configs: %v", err)
	}
	policy, err := rc.On("__consumer_offsets", nil)
	if err != nil {
		t.Fatalf("describe configs: %v", err)
	}
	found := false
	for _, c := range policy.Configs {
		if c.Key == "cleanup.policy" {
			found = true
			if c.MaybeValue() != "compact" {
				t.Errorf("__consumer_offsets cleanup.policy = %q, want compact", c.MaybeValue())
			}
		}
	}
	if !found {
		t.Errorf("__consumer_offsets configs have no cleanup.policy: %+v", policy.Configs)
	}

	// A consumer rejoining the group starts right at the committed offsets.
	cons = b.Client(
		kgo.ConsumerGroup("resume"),
		kgo.ConsumeTopics(topic),
		kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(100*time.Millisecond),
		kgo.SessionTimeout(2*time.Second),
		kgo.HeartbeatInterval(200*time.Millisecond),
	)
	first := make(map[int32]*kgo.Record)
	for len(first) < partitions {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consume after restart: %v (first %v)", ctx.Err(), first)
		}
		fs.EachError(func(_ string, p int32, err error) { t.Fatalf("consume %d: %v", p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if first[r.Partition] == nil {
				first[r.Partition] = r
			}
		})
	}
	for p, r := range first {
		if r.Offset != 10 || string(r.Value) != fmt.Sprintf("p%d-10", p) {
			t.Errorf("partition %d resumed at offset %d (%q), want 10 (p%d-10)", p, r.Offset, r.Value, p)
		}
	}
}

// TestGroupStaticMemberRestartWithoutRebalance restarts a static member
// (KIP-345) within its session timeout: the other member sees no
// rebalance, keeps its generation, and the restarted member gets its old
// partitions back. A second client with the same group.instance.id fences
// the first.
func TestGroupStaticMemberRestartWithoutRebalance(t *testing.T) {
	const partitions = 4
	b := testutil.StartBroker(t, groupBrokerConfig...)
	adm := b.Admin()
	topic, group := "static", "g-static"
	testutil.CreateTopic(t, adm, topic, partitions)
	l := newGroupLedger(t)
	start := func(name, instance string) *kgo.Client {
		return b.Client(
			kgo.ClientID(name),
			kgo.ConsumerGroup(group),
			kgo.ConsumeTopics(topic),
			kgo.InstanceID(instance),
			kgo.Balancers(kgo.RangeBalancer()),
			kgo.SessionTimeout(20*time.Second),
			kgo.HeartbeatInterval(200*time.Millisecond),
			kgo.FetchMaxWait(100*time.Millisecond),
			kgo.OnPartitionsAssigned(l.onAssigned(name, topic)),
			kgo.OnPartitionsRevoked(l.onRevoked(name, topic)),
			kgo.OnPartitionsLost(l.onRevoked(name, topic)),
		)
	}
	// The clients join as soon as they start: their group loops run
	// without polling.
	a := start("a1", "inst-a")
	bm := start("b", "inst-b")
	members := func() map[string]string { // instance -> member id
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		dg, err := adm.DescribeGroups(ctx, group)
		if err != nil || dg[group].Err != nil {
			return nil
		}
		out := make(map[string]string)
		if dg[group].State != "Stable" {
			return nil
		}
		for _, m := range dg[group].Members {
			if m.InstanceID != nil {
				out[*m.InstanceID] = m.MemberID
			}
		}
		return out
	}
	testutil.Eventually(t, 30*time.Second, func() error {
		if ms := members(); len(ms) != 2 {
			return fmt.Errorf("members %v", ms)
		}
		return l.liveOwnership([]string{"a1", "b"}, partitions)
	})
	l.mu.Lock()
	aParts := slices.Sorted(maps.Keys(l.owned["a1"]))
	bRevokes := l.revokes["b"]
	l.mu.Unlock()
	bMember, bGen := bm.GroupMetadata()
	oldA, _ := a.GroupMetadata()

	// A static member's Close sends no LeaveGroup; a new client with the
	// same instance id takes its place.
	a.Close()
	l.markDead("a1")
	a2 := start("a2", "inst-a")
	testutil.Eventually(t, 30*time.Second, func() error {
		l.mu.Lock()
		defer l.mu.Unlock()
		got := slices.Sorted(maps.Keys(l.owned["a2"]))
		if !slices.Equal(got, aParts) {
			return fmt.Errorf("restarted member holds %v, want %v", got, aParts)
		}
		return nil
	})
	ms := members()
	if ms["inst-a"] == "" || ms["inst-a"] == oldA {
		t.Errorf("inst-a member id %q after restart, want a new one (old %q)", ms["inst-a"], oldA)
	}
	if m, g := bm.GroupMetadata(); m != bMember || g != bGen {
		t.Errorf("other member at %s generation %d after the static restart, want %s generation %d (a rebalance happened)", m, g, bMember, bGen)
	}
	l.mu.Lock()
	if l.revokes["b"] != bRevokes {
		t.Errorf("other member had partitions revoked %d times during the static restart, want 0", l.revokes["b"]-bRevokes)
	}
	l.mu.Unlock()

	// A second live client with the same instance id fences the first: its
	// old member id now gets FENCED_INSTANCE_ID.
	a2Member, a2Gen := a2.GroupMetadata()
	a3 := start("a3", "inst-a")
	testutil.Eventually(t, 30*time.Second, func() error {
		ms := members()
		if ms["inst-a"] == "" || ms["inst-a"] == a2Member {
			return fmt.Errorf("inst-a still member %q", ms["inst-a"])
		}
		return nil
	})
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.MemberID, hb.Generation = group, a2Member, a2Gen
	hb.InstanceID = kmsg.StringPtr("inst-a")
	if code := request[*kmsg.HeartbeatResponse](t, a3, hb).ErrorCode; code != kerr.FencedInstanceID.Code {
		t.Errorf("heartbeat of the fenced member: %v, want FENCED_INSTANCE_ID", kerr.ErrorForCode(code))
	}
	// The fenced client itself learns it from its own heartbeat, which
	// its poll reports.
	testutil.Eventually(t, 20*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		var fenced bool
		var errs []error
		for _, fe := range a2.PollFetches(ctx).Errors() {
			errs = append(errs, fe.Err)
			fenced = fenced || errors.Is(fe.Err, kerr.FencedInstanceID)
		}
		if !fenced {
			return fmt.Errorf("fenced client polled errors %v, want FENCED_INSTANCE_ID", errs)
		}
		return nil
	})
	a2.Close()
	bm.Close()
	a3.Close()
}

// rawJoin is one member of a group driven by hand-built requests.
type rawJoin struct {
	cl       *kgo.Client
	group    string
	memberID string
	gen      int32
	leader   string
	// protocolType is the JoinGroup's protocol type; "" is consumer.
	protocolType string
}

func consumerProtocol(topics ...string) []kmsg.JoinGroupRequestProtocol {
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Version = 0
	meta.Topics = topics
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name = "range"
	p.Metadata = meta.AppendTo(nil)
	return []kmsg.JoinGroupRequestProtocol{p}
}

func joinReq(group, memberID string, topics ...string) *kmsg.JoinGroupRequest {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Group = group
	req.MemberID = memberID
	req.SessionTimeoutMillis = 10000
	req.RebalanceTimeoutMillis = 10000
	req.ProtocolType = "consumer"
	req.Protocols = consumerProtocol(topics...)
	return req
}

// join joins with the member-id handshake of JoinGroup v4+ (KIP-394).
func (r *rawJoin) join(t *testing.T, topics ...string) *kmsg.JoinGroupResponse {
	t.Helper()
	req := func(member string) *kmsg.JoinGroupRequest {
		jr := joinReq(r.group, member, topics...)
		if r.protocolType != "" {
			jr.ProtocolType = r.protocolType
		}
		return jr
	}
	if r.memberID == "" {
		resp := request[*kmsg.JoinGroupResponse](t, r.cl, req(""))
		if resp.ErrorCode != kerr.MemberIDRequired.Code || resp.MemberID == "" {
			t.Fatalf("first join without member id: %v member %q, want MEMBER_ID_REQUIRED with an id", kerr.ErrorForCode(resp.ErrorCode), resp.MemberID)
		}
		r.memberID = resp.MemberID
	}
	resp := request[*kmsg.JoinGroupResponse](t, r.cl, req(r.memberID))
	if resp.ErrorCode != 0 {
		t.Fatalf("join with member id %s: %v", r.memberID, kerr.ErrorForCode(resp.ErrorCode))
	}
	if resp.MemberID != r.memberID {
		t.Fatalf("join returned member %q, want %q", resp.MemberID, r.memberID)
	}
	r.gen, r.leader = resp.Generation, resp.LeaderID
	return resp
}

func (r *rawJoin) sync(t *testing.T, assignments map[string][]int32, topic string) []int32 {
	t.Helper()
	req := kmsg.NewPtrSyncGroupRequest()
	req.Group, req.MemberID, req.Generation = r.group, r.memberID, r.gen
	req.ProtocolType, req.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
	for m, ps := range assignments {
		a := kmsg.NewConsumerMemberAssignment()
		at := kmsg.NewConsumerMemberAssignmentTopic()
		at.Topic, at.Partitions = topic, ps
		a.Topics = append(a.Topics, at)
		sa := kmsg.NewSyncGroupRequestGroupAssignment()
		sa.MemberID, sa.MemberAssignment = m, a.AppendTo(nil)
		req.GroupAssignment = append(req.GroupAssignment, sa)
	}
	resp := request[*kmsg.SyncGroupResponse](t, r.cl, req)
	if resp.ErrorCode != 0 {
		t.Fatalf("sync of %s: %v", r.memberID, kerr.ErrorForCode(resp.ErrorCode))
	}
	var a kmsg.ConsumerMemberAssignment
	if err := a.ReadFrom(resp.MemberAssignment); err != nil {
		t.Fatalf("sync of %s: assignment: %v", r.memberID, err)
	}
	var ps []int32
	for _, at := range a.Topics {
		ps = append(ps, at.Partitions...)
	}
	return ps
}

func (r *rawJoin) heartbeat(t *testing.T, memberID string, gen int32) int16 {
	t.Helper()
	req := kmsg.NewPtrHeartbeatRequest()
	req.Group, req.MemberID, req.Generation = r.group, memberID, gen
	return request[*kmsg.HeartbeatResponse](t, r.cl, req).ErrorCode
}

func commitReq(group, memberID string, gen int32, topic string, offsets map[int32]int64) *kmsg.OffsetCommitRequest {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.MemberID, req.Generation = group, memberID, gen
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	for p, o := range offsets {
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = p, o, -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

func commitCodes(resp *kmsg.OffsetCommitResponse) []int16 {
	var codes []int16
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			codes = append(codes, p.ErrorCode)
		}
	}
	return codes
}

// fetchCommitted returns the committed offset of each partition of topic
// in group (-1 when none).
func fetchCommitted(t *testing.T, cl *kgo.Client, group, topic string, partitions ...int32) map[int32]int64 {
	t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = group
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic, rt.Partitions = topic, partitions
	req.Topics = append(req.Topics, rt)
	resp := request[*kmsg.OffsetFetchResponse](t, cl, req)
	if resp.ErrorCode != 0 {
		t.Fatalf("offset fetch %s: %v", group, kerr.ErrorForCode(resp.ErrorCode))
	}
	out := make(map[int32]int64)
	for _, rt := range resp.Topics {
		for _, p := range rt.Partitions {
			if p.ErrorCode != 0 {
				t.Fatalf("offset fetch %s %s[%d]: %v", group, rt.Topic, p.Partition, kerr.ErrorForCode(p.ErrorCode))
			}
			out[p.Partition] = p.Offset
		}
	}
	return out
}

// TestGroupProtocolErrorCodes drives the classic group protocol with raw
// requests and checks the error code of each misuse.
func TestGroupProtocolErrorCodes(t *testing.T) {
	b := testutil.StartBroker(t, groupBrokerConfig...)
	adm := b.Admin()
	const topic, group = "raw-groups", "raw"
	testutil.CreateTopic(t, adm, topic, 2)
	cl1 := b.Client(kgo.ClientID("raw-one"))
	cl2 := b.Client(kgo.ClientID("raw-two"))
	r1 := &rawJoin{cl: cl1, group: group}
	r2 := &rawJoin{cl: cl2, group: group}

	// Reference: KIP-394: v4+ join without member id.
	r1.join(t, topic)
	if r1.gen != 1 || r1.leader != r1.memberID {
		t.Fatalf("first join: generation %d leader %q, want 1 and %q", r1.gen, r1.leader, r1.memberID)
	}
	if got := r1.sync(t, map[string][]int32{r1.memberID: {0, 1}}, topic); !slices.Equal(got, []int32{0, 1}) {
		t.Fatalf("sync assignment %v, want [0 1]", got)
	}
	if code := r1.heartbeat(t, r1.memberID, r1.gen); code != 0 {
		t.Fatalf("heartbeat: %v", kerr.ErrorForCode(code))
	}
	if code := r1.heartbeat(t, r1.memberID, r1.gen+1); code != kerr.IllegalGeneration.Code {
		t.Errorf("heartbeat with generation %d: %v, want ILLEGAL_GENERATION", r1.gen+1, kerr.ErrorForCode(code))
	}
	if code := r1.heartbeat(t, "nobody", r1.gen); code != kerr.UnknownMemberID.Code {
		t.Errorf("heartbeat of an unknown member: %v, want UNKNOWN_MEMBER_ID", kerr.ErrorForCode(code))
	}

	// A commit by the member, then OffsetDelete of its subscribed topic.
	cresp := request[*kmsg.OffsetCommitResponse](t, cl1, commitReq(group, r1.memberID, r1.gen, topic, map[int32]int64{0: 7, 1: 9}))
	if codes := commitCodes(cresp); !slices.Equal(codes, []int16{0, 0}) {
		t.Fatalf("member commit codes %v", codes)
	}
	od := kmsg.NewPtrOffsetDeleteRequest()
	od.Group = group
	odt := kmsg.NewOffsetDeleteRequestTopic()
	odt.Topic = topic
	odp := kmsg.NewOffsetDeleteRequestTopicPartition()
	odp.Partition = 0
	odt.Partitions = append(odt.Partitions, odp)
	od.Topics = append(od.Topics, odt)
	odr := request[*kmsg.OffsetDeleteResponse](t, cl1, od)
	if odr.ErrorCode != 0 || len(odr.Topics) != 1 || len(odr.Topics[0].Partitions) != 1 ||
		odr.Topics[0].Partitions[0].ErrorCode != kerr.GroupSubscribedToTopic.Code {
		t.Errorf("offset delete of a subscribed topic: %+v, want GROUP_SUBSCRIBED_TO_TOPIC on the partition", odr)
	}
	if got := fetchCommitted(t, cl1, group, topic, 0, 1); got[0] != 7 || got[1] != 9 {
		t.Errorf("offsets after refused delete %v, want 0:7 1:9", got)
	}

	// A second member joining starts a rebalance: the first member's
	// heartbeat says so, and both complete the join when it rejoins.
	var wg sync.WaitGroup
	joined2 := make(chan struct{})
	r2first := request[*kmsg.JoinGroupResponse](t, cl2, joinReq(group, "", topic))
	if r2first.ErrorCode != kerr.MemberIDRequired.Code {
		t.Fatalf("second member first join: %v", kerr.ErrorForCode(r2first.ErrorCode))
	}
	r2.memberID = r2first.MemberID
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(joined2)
		resp, err := cl2.Request(context.Background(), joinReq(group, r2.memberID, topic))
		if err != nil {
			t.Errorf("second join: %v", err)
			return
		}
		jr := resp.(*kmsg.JoinGroupResponse)
		if jr.ErrorCode != 0 {
			t.Errorf("second join: %v", kerr.ErrorForCode(jr.ErrorCode))
		}
		r2.gen = jr.Generation
	}()
	testutil.Eventually(t, 10*time.Second, func() error {
		if code := r1.heartbeat(t, r1.memberID, r1.gen); code != kerr.RebalanceInProgress.Code {
			return fmt.Errorf("heartbeat during rebalance: %v, want REBALANCE_IN_PROGRESS", kerr.ErrorForCode(code))
		}
		return nil
	})
	// A member of the current generation may still commit while the group
	// prepares a rebalance (Kafka relies on the heartbeat to tell it), but
	// not with a wrong generation.
	cresp = request[*kmsg.OffsetCommitResponse](t, cl1, commitReq(group, r1.memberID, r1.gen, topic, map[int32]int64{0: 8}))
	if codes := commitCodes(cresp); !slices.Equal(codes, []int16{0}) {
		t.Errorf("commit of the current generation during PreparingRebalance: %v, want success", codes)
	}
	cresp = request[*kmsg.OffsetCommitResponse](t, cl1, commitReq(group, r1.memberID, r1.gen+1, topic, map[int32]int64{0: 99}))
	if codes := commitCodes(cresp); !slices.Equal(codes, []int16{kerr.IllegalGeneration.Code}) {
		t.Errorf("commit with a wrong generation: %v, want ILLEGAL_GENERATION", codes)
	}
	jr1 := r1.join(t, topic)
	wg.Wait()
	<-joined2
	if r1.gen != 2 || r2.gen != 2 {
		t.Fatalf("generations after rebalance %d and %d, want 2", r1.gen, r2.gen)
	}
	if len(jr1.Members) != 2 && len(jr1.Members) != 0 {
		t.Errorf("join response lists %d members", len(jr1.Members))
	}
	leader, follower := r1, r2
	if r1.leader != r1.memberID {
		leader, follower = r2, r1
	}
	if len(jr1.Members) != 2 && leader == r1 {
		t.Errorf("leader's join response lists %d members, want 2", len(jr1.Members))
	}
	wg.Add(1)
	var followerParts []int32
	go func() {
		defer wg.Done()
		req := kmsg.NewPtrSyncGroupRequest()
		req.Group, req.MemberID, req.Generation = group, follower.memberID, follower.gen
		resp, err := follower.cl.Request(context.Background(), req)
		if err != nil {
			t.Errorf("follower sync: %v", err)
			return
		}
		sr := resp.(*kmsg.SyncGroupResponse)
		var a kmsg.ConsumerMemberAssignment
		if sr.ErrorCode != 0 || a.ReadFrom(sr.MemberAssignment) != nil || len(a.Topics) != 1 {
			t.Errorf("follower sync: %v %x", kerr.ErrorForCode(sr.ErrorCode), sr.MemberAssignment)
			return
		}
		followerParts = a.Topics[0].Partitions
	}()
	leaderParts := leader.sync(t, map[string][]int32{leader.memberID: {0}, follower.memberID: {1}}, topic)
	wg.Wait()
	if !slices.Equal(leaderParts, []int32{0}) || !slices.Equal(followerParts, []int32{1}) {
		t.Errorf("assignments leader %v follower %v, want [0] and [1]", leaderParts, followerParts)
	}

	// Simple commit: generation -1 and no member id on an empty group.
	const simple = "raw-simple"
	cresp = request[*kmsg.OffsetCommitResponse](t, cl1, commitReq(simple, "", -1, topic, map[int32]int64{0: 3, 1: 4}))
	if codes := commitCodes(cresp); !slices.Equal(codes, []int16{0, 0}) {
		t.Fatalf("simple commit codes %v", codes)
	}
	if got := fetchCommitted(t, cl1, simple, topic, 0, 1); got[0] != 3 || got[1] != 4 {
		t.Errorf("simple offsets %v, want 0:3 1:4", got)
	}

	// ListGroups with a state filter (KIP-518).
	listed := func(states ...string) []string {
		req := kmsg.NewPtrListGroupsRequest()
		req.StatesFilter = states
		resp := request[*kmsg.ListGroupsResponse](t, cl1, req)
		if resp.ErrorCode != 0 {
			t.Fatalf("list groups: %v", kerr.ErrorForCode(resp.ErrorCode))
		}
		var gs []string
		for _, g := range resp.Groups {
			gs = append(gs, g.Group+"/"+g.GroupState)
		}
		sort.Strings(gs)
		return gs
	}
	if got := listed("Stable"); !slices.Equal(got, []string{"raw/Stable"}) {
		t.Errorf("groups Stable: %v, want [raw/Stable]", got)
	}
	if got := listed("Empty"); !slices.Equal(got, []string{"raw-simple/Empty"}) {
		t.Errorf("groups Empty: %v, want [raw-simple/Empty]", got)
	}
	if got := listed(); !slices.Equal(got, []string{"raw-simple/Empty", "raw/Stable"}) {
		t.Errorf("all groups: %v", got)
	}

	// DescribeGroups names each member's client id and host.
	dreq := kmsg.NewPtrDescribeGroupsRequest()
	dreq.Groups = []string{group}
	dresp := request[*kmsg.DescribeGroupsResponse](t, cl1, dreq)
	if len(dresp.Groups) != 1 || dresp.Groups[0].ErrorCode != 0 {
		t.Fatalf("describe groups: %+v", dresp.Groups)
	}
	dg := dresp.Groups[0]
	if dg.State != "Stable" || dg.ProtocolType != "consumer" || dg.Protocol != "range" || len(dg.Members) != 2 {
		t.Errorf("described group: state %s type %s protocol %s members %d", dg.State, dg.ProtocolType, dg.Protocol, len(dg.Members))
	}
	byID := map[string]string{r1.memberID: "raw-one", r2.memberID: "raw-two"}
	for _, m := range dg.Members {
		if byID[m.MemberID] != m.ClientID {
			t.Errorf("member %s client id %q, want %q", m.MemberID, m.ClientID, byID[m.MemberID])
		}
		if !strings.Contains(m.ClientHost, "127.0.0.1") {
			t.Errorf("member %s client host %q, want 127.0.0.1", m.MemberID, m.ClientHost)
		}
		var a kmsg.ConsumerMemberAssignment
		if err := a.ReadFrom(m.MemberAssignment); err != nil || len(a.Topics) != 1 || len(a.Topics[0].Partitions) != 1 {
			t.Errorf("member %s assignment %x: %v", m.MemberID, m.MemberAssignment, err)
		}
	}

	// DeleteGroups: refused for a group with members, done for an empty
	// one, whose offsets go with it.
	delGroups := func(groups ...string) map[string]int16 {
		req := kmsg.NewPtrDeleteGroupsRequest()
		req.Groups = groups
		resp := request[*kmsg.DeleteGroupsResponse](t, cl1, req)
		out := make(map[string]int16)
		for _, g := range resp.Groups {
			out[g.Group] = g.ErrorCode
		}
		return out
	}
	codes := delGroups(group, simple)
	if codes[group] != kerr.NonEmptyGroup.Code {
		t.Errorf("delete of a group with members: %v, want NON_EMPTY_GROUP", kerr.ErrorForCode(codes[group]))
	}
	if codes[simple] != 0 {
		t.Errorf("delete of an empty group: %v", kerr.ErrorForCode(codes[simple]))
	}
	if got := fetchCommitted(t, cl1, simple, topic, 0, 1); got[0] != -1 || got[1] != -1 {
		t.Errorf("offsets of a deleted group %v, want none (-1)", got)
	}
	if got := listed(); !slices.Equal(got, []string{"raw/Stable"}) {
		t.Errorf("groups after delete: %v, want [raw/Stable]", got)
	}

	// FindCoordinator v4 (KIP-699) answers each key.
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.Version = 4
	fc.CoordinatorKeys = []string{"a", "b", "c", group}
	fresp, err := cl1.Request(ctxT(t, 10*time.Second), fc)
	if err != nil {
		t.Fatalf("find coordinator: %v", err)
	}
	fcr := fresp.(*kmsg.FindCoordinatorResponse)
	var keys []string
	for _, c := range fcr.Coordinators {
		keys = append(keys, c.Key)
		if c.ErrorCode != 0 || c.NodeID < 0 || c.Port <= 0 || c.Host == "" {
			t.Errorf("coordinator of %q: %+v", c.Key, c)
		}
		if want := strings.Split(b.Addr(), ":")[0]; c.Host != want {
			t.Errorf("coordinator of %q on host %q, want %q", c.Key, c.Host, want)
		}
	}
	sort.Strings(keys)
	if !slices.Equal(keys, []string{"a", "b", "c", group}) {
		t.Errorf("coordinator keys %v", keys)
	}

	// Leaving empties the group; the member's commits stay.
	for _, r := range []*rawJoin{r1, r2} {
		lreq := kmsg.NewPtrLeaveGroupRequest()
		lreq.Group = group
		lm := kmsg.NewLeaveGroupRequestMember()
		lm.MemberID = r.memberID
		lreq.Members = append(lreq.Members, lm)
		lresp := request[*kmsg.LeaveGroupResponse](t, r.cl, lreq)
		if lresp.ErrorCode != 0 || len(lresp.Members) != 1 || lresp.Members[0].ErrorCode != 0 {
			t.Errorf("leave of %s: %+v", r.memberID, lresp)
		}
	}
	if got := listed("Empty"); !slices.Equal(got, []string{"raw/Empty"}) {
		t.Errorf("groups Empty after leaving: %v, want [raw/Empty]", got)
	}
	if code := r1.heartbeat(t, r1.memberID, r1.gen); code != kerr.UnknownMemberID.Code {
		t.Errorf("heartbeat after leaving: %v, want UNKNOWN_MEMBER_ID", kerr.ErrorForCode(code))
	}
	if got := fetchCommitted(t, cl1, group, topic, 0, 1); got[0] != 8 || got[1] != 9 {
		t.Errorf("offsets after leaving %v, want 0:8 1:9", got)
	}
}
