package chaos

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/testutil"
)

// memberProc is one member process: this test binary run again as
// TestGroupMember (see groupmember_test.go). Its stdout events go into the
// group's history; its stderr and every event line go to logPath. It is
// used by one test goroutine.
type memberProc struct {
	name    string
	cfg     memberConfig
	logPath string
	cmd     *exec.Cmd
	done    chan struct{} // closed once stdout is drained and cmd waited for
	stopped bool          // SIGSTOPped and not yet continued
}

func (m *memberProc) running() bool {
	select {
	case <-m.done:
		return false
	default:
		return true
	}
}

// groupRun is the consumer side of a group scenario: member processes of
// one group over one topic, their merged history, and an OffsetFetch
// poller. It is used by one test goroutine; the history is safe for
// concurrent use.
type groupRun struct {
	t          *testing.T
	c          *testCluster
	topic      string
	group      string
	partitions int32
	dir        string
	// autoCommit starts members in AutoCommit mode.
	autoCommit bool
	hist       *groupHistory
	members    []*memberProc
	seq        int
	adm        *kadm.Client
	admCl      *kgo.Client
	fetchCl    *kgo.Client // the OffsetFetch poller's own client
}

// startGroupRun commits offset 0 for every partition of topic in group
// (which creates __consumer_offsets and the group before any member
// starts, so that a member that ever finds no committed offset is a
// member that lost one), waits until __consumer_offsets has its full ISR,
// and starts polling the committed offsets.
func startGroupRun(t *testing.T, c *testCluster, topic, group string, partitions int32) *groupRun {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs()...), kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }))
	if err != nil {
		t.Fatal(err)
	}
	g := &groupRun{t: t, c: c, topic: topic, group: group, partitions: partitions,
		dir: t.TempDir(), hist: newGroupHistory(), adm: kadm.NewClient(cl), admCl: cl}
	zero := make(kadm.Offsets)
	for p := range partitions {
		zero.AddOffset(topic, p, 0, -1)
	}
	waitFor(t, 30*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := g.adm.CommitOffsets(ctx, group, zero)
		if err != nil {
			return err
		}
		return resp.Error()
	})
	c.waitFullISR(offsetsTopicName, offsetsPartitions)
	hook := &offsetFetchHook{}
	hook.node.Store(-1)
	if g.fetchCl, err = kgo.NewClient(kgo.SeedBrokers(c.addrs()...), kgo.WithHooks(hook),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond })); err != nil {
		t.Fatal(err)
	}
	g.hist.startFetching(kadm.NewClient(g.fetchCl), hook, group, topic, partitions)
	t.Cleanup(func() {
		g.hist.stopFetching()
		for _, m := range g.members {
			g.kill(m)
		}
		g.admCl.Close()
		g.fetchCl.Close()
		if t.Failed() {
			for _, m := range g.members {
				g.dumpTail(m)
			}
		}
	})
	return g
}

// slowAssign is every member's SlowAssign: rebalances stay in
// CompletingRebalance for at least that long.
const slowAssign = time.Second

// Names of Kafka's offsets topic as the cluster configures it.
const (
	offsetsTopicName  = "__consumer_offsets"
	offsetsPartitions = 3 // offsets.topic.num.partitions in clusterOverrides
)

// startMember starts a member process; instanceID makes it static.
func (g *groupRun) startMember(instanceID string) *memberProc {
	g.t.Helper()
	g.seq++
	name := fmt.Sprintf("%s-m%d", g.group, g.seq)
	cfg := memberConfig{Name: name, Seeds: g.c.addrs(), Topic: g.topic, Group: g.group, InstanceID: instanceID,
		SlowAssign: slowAssign, AutoCommit: g.autoCommit}
	raw, err := json.Marshal(cfg)
	if err != nil {
		g.t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		g.t.Fatal(err)
	}
	m := &memberProc{name: name, cfg: cfg, logPath: filepath.Join(g.dir, name+".log"), done: make(chan struct{})}
	logf, err := os.Create(m.logPath)
	if err != nil {
		g.t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^TestGroupMember$", "-test.timeout=0")
	testutil.DieWithParent(cmd)
	cmd.Env = append(os.Environ(), memberEnv+"="+string(raw), "SAMSA_BIN="+samsaBin)
	cmd.Stderr = logf
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		logf.Close()
		g.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		g.t.Fatalf("start member %s: %v", name, err)
	}
	m.cmd = cmd
	g.members = append(g.members, m)
	fmt.Fprintf(logf, "==== %s started at %s, pid %d, instance id %q\n", name, time.Now().Format("15:04:05.000"), cmd.Process.Pid, instanceID)
	go func() {
		defer close(m.done)
		defer logf.Close()
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Bytes()
			fmt.Fprintf(logf, "%s\n", line)
			if len(line) == 0 || line[0] != '{' {
				continue
			}
			var e memberEvent
			if err := json.Unmarshal(line, &e); err != nil {
				// A line cut short by kill -9.
				g.hist.badLine()
				continue
			}
			g.hist.add(name, e)
		}
		_ = cmd.Wait()
		fmt.Fprintf(logf, "==== %s exited at %s: %v\n", name, time.Now().Format("15:04:05.000"), cmd.ProcessState)
	}()
	return m
}

// note appends a line to the member's log.
func (g *groupRun) note(m *memberProc, format string, args ...any) {
	f, err := os.OpenFile(m.logPath, os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "==== %s %s: %s\n", m.name, time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

// signal sends sig to a running member.
func (g *groupRun) signal(m *memberProc, sig syscall.Signal) {
	g.t.Helper()
	g.note(m, "signal %v", sig)
	if err := m.cmd.Process.Signal(sig); err != nil {
		g.t.Fatalf("member %s: signal %v: %v", m.name, sig, err)
	}
	switch sig {
	case syscall.SIGSTOP:
		m.stopped = true
	case syscall.SIGCONT:
		m.stopped = false
	}
}

// kill sends SIGKILL (after SIGCONT if stopped) and waits until the
// member's output is drained.
func (g *groupRun) kill(m *memberProc) {
	g.t.Helper()
	if !m.running() {
		return
	}
	g.note(m, "SIGKILL")
	_ = m.cmd.Process.Signal(syscall.SIGKILL)
	if m.stopped {
		_ = m.cmd.Process.Signal(syscall.SIGCONT)
		m.stopped = false
	}
	select {
	case <-m.done:
	case <-time.After(exitTimeout):
		g.t.Fatalf("member %s did not exit %s after SIGKILL", m.name, exitTimeout)
	}
}

// byName returns the member process named name, or nil.
func (g *groupRun) byName(name string) *memberProc {
	for _, m := range g.members {
		if m.name == name {
			return m
		}
	}
	return nil
}

// live returns the members that run and are not stopped.
func (g *groupRun) live() []*memberProc {
	var out []*memberProc
	for _, m := range g.members {
		if m.running() && !m.stopped {
			out = append(out, m)
		}
	}
	return out
}

func (g *groupRun) dumpTail(m *memberProc) {
	const max = 6 << 10
	data, _ := os.ReadFile(m.logPath)
	s := string(data)
	if len(s) > max {
		s = "...\n" + s[len(s)-max:]
	}
	g.t.Logf("member %s log (%s), tail:\n%s", m.name, m.logPath, s)
}

// describe returns the group as its coordinator describes it.
func (g *groupRun) describe() (kadm.DescribedGroup, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	ds, err := g.adm.DescribeGroups(ctx, g.group)
	if err != nil {
		return kadm.DescribedGroup{}, err
	}
	d, ok := ds[g.group]
	if !ok {
		return kadm.DescribedGroup{}, fmt.Errorf("group %s not described", g.group)
	}
	return d, d.Err
}

// waitSettled waits until the group is Stable with exactly the live
// members (by client id) and every partition assigned.
func (g *groupRun) waitSettled(d time.Duration) {
	g.t.Helper()
	waitFor(g.t, d, func() error {
		desc, err := g.describe()
		if err != nil {
			return err
		}
		var want, got []string
		for _, m := range g.live() {
			want = append(want, m.name)
		}
		for _, dm := range desc.Members {
			got = append(got, dm.ClientID)
		}
		slices.Sort(want)
		slices.Sort(got)
		if desc.State != "Stable" || !slices.Equal(want, got) {
			return fmt.Errorf("group %s %s with members %v, want Stable with %v", g.group, desc.State, got, want)
		}
		if n := len(desc.AssignedPartitions()[g.topic]); n != int(g.partitions) {
			return fmt.Errorf("group %s: %d of %d partitions assigned", g.group, n, g.partitions)
		}
		return nil
	})
}

// waitProgress waits until every partition has a commit accepted after
// since, which a member sends only once it processed new records there.
func (g *groupRun) waitProgress(since time.Time, d time.Duration) {
	g.t.Helper()
	waitFor(g.t, d, func() error {
		for p := range g.partitions {
			if !g.hist.committedAfter(p, since) {
				return fmt.Errorf("no commit accepted on partition %d since %s", p, since.Format("15:04:05.000"))
			}
		}
		return nil
	})
}

// waitCaughtUp waits until the committed offset of every partition is
// its end offset: the members processed and committed everything.
func (g *groupRun) waitCaughtUp(d time.Duration) map[int32]int64 {
	g.t.Helper()
	final := make(map[int32]int64)
	waitFor(g.t, d, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ends, err := g.adm.ListEndOffsets(ctx, g.topic)
		if err != nil {
			return err
		}
		if err := ends.Error(); err != nil {
			return err
		}
		committed, err := g.adm.FetchOffsets(ctx, g.group)
		if err != nil {
			return err
		}
		for p := range g.partitions {
			e, _ := ends.Lookup(g.topic, p)
			o, ok := committed.Lookup(g.topic, p)
			if !ok || o.Err != nil {
				return fmt.Errorf("partition %d: no committed offset (%v)", p, o.Err)
			}
			if o.At < e.Offset {
				return fmt.Errorf("partition %d: committed %d, end %d", p, o.At, e.Offset)
			}
			final[p] = o.At
		}
		return nil
	})
	return final
}

// consumed is a record a member processed.
type consumed struct {
	member string
	p      int32
	o      int64
	v      string
	at     time.Time
}

// commitEvent is one partition's commit answer as a member saw it.
type commitEvent struct {
	member, kind, mid string
	gen               int32
	p                 int32
	o                 int64
	err               string // empty: accepted
	node              int32  // the broker that answered
	sent, at          time.Time
}

// assignEvent is an assigned, revoked, lost or rewind event.
type assignEvent struct {
	member, ev string
	mid        string
	gen        int32
	parts      []int32
	at         time.Time
}

// fetchObs is a committed offset read by the test's OffsetFetch poller.
type fetchObs struct {
	p        int32
	o        int64
	node     int32 // the broker that answered
	sent, at time.Time
}

// offsetFetchHook is a kgo hook noting which broker answered the last
// OffsetFetch; the poller sends one at a time on its own client.
type offsetFetchHook struct{ node atomic.Int32 }

// OnBrokerRead implements kgo.HookBrokerRead.
func (h *offsetFetchHook) OnBrokerRead(meta kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if key == kmsg.OffsetFetch.Int16() && err == nil {
		h.node.Store(meta.NodeID)
	}
}

// isolation is a window in which a broker may answer OffsetFetch from the
// group state it held before it was cut off: from the cut (from) to the
// heal (healed) it cannot know that it was replaced, and after the heal it
// goes on until it has learned from etcd that another broker leads its
// __consumer_offsets partition and has dropped the groups (to, see
// resignWatch). Kafka's coordinator answers from its cache in the same
// way until it resigns.
type isolation struct {
	node             int32
	from, healed, to time.Time
}

// groupHistory is everything the members reported and the poller read.
// It is safe for concurrent use; mu guards every field below it.
type groupHistory struct {
	quit chan struct{}
	done chan struct{}
	once sync.Once

	mu       sync.Mutex
	recs     []consumed
	commits  []commitEvent
	assigns  []assignEvent
	fetches  []fetchObs
	leads    []assignEvent // lead events
	isolated []isolation
	errs     map[string]int // member-reported errors by text
	bad      int            // unparsable lines
	maxGen   int32
	lastGens map[string]int32  // member -> last generation it reported
	lastMIDs map[string]string // member -> last member id it reported
	// autoCommit: the members leave commits to franz-go, which reports
	// none of them.
	autoCommit bool
}

func newGroupHistory() *groupHistory {
	return &groupHistory{quit: make(chan struct{}), done: make(chan struct{}),
		errs: make(map[string]int), lastGens: make(map[string]int32), lastMIDs: make(map[string]string)}
}

func (h *groupHistory) badLine() {
	h.mu.Lock()
	h.bad++
	h.mu.Unlock()
}

func (h *groupHistory) add(member string, e memberEvent) {
	at := time.Unix(0, e.At)
	h.mu.Lock()
	defer h.mu.Unlock()
	switch e.Ev {
	case "rec":
		h.recs = append(h.recs, consumed{member, e.P, e.O, e.V, at})
	case "commit":
		h.commits = append(h.commits, commitEvent{member, e.Kind, e.MID, e.Gen, e.P, e.O, e.Err, e.Node, time.Unix(0, e.Sent), at})
	case "assigned", "revoked", "lost", "rewind":
		h.assigns = append(h.assigns, assignEvent{member, e.Ev, e.MID, e.Gen, e.Parts, at})
	case "lead":
		h.leads = append(h.leads, assignEvent{member: member, ev: e.Ev, at: at})
	case "gen":
		if e.Gen >= 0 && e.MID != "" {
			h.lastGens[member] = e.Gen
			h.lastMIDs[member] = e.MID
			h.maxGen = max(h.maxGen, e.Gen)
		}
	case "error":
		// Keep the error's kind, not every offset it names.
		msg := e.Err
		if i := strings.Index(msg, ": "); i > 0 && strings.HasPrefix(msg, "fetch ") {
			msg = "fetch: " + msg[i+2:]
		}
		h.errs[msg]++
	}
}

// committedAfter reports whether a commit on p sent after since was
// accepted.
func (h *groupHistory) committedAfter(p int32, since time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range slices.Backward(h.commits) {
		if c.p == p && c.err == "" && c.sent.After(since) {
			return true
		}
	}
	return false
}

// generation returns the last member id and generation member reported
// (-1 if none), and the highest generation any member reported.
func (h *groupHistory) generation(member string) (string, int32, int32) {
	h.mu.Lock()
	defer h.mu.Unlock()
	g, ok := h.lastGens[member]
	if !ok {
		g = -1
	}
	return h.lastMIDs[member], g, h.maxGen
}

// leaderSince returns the last member that reported leading a rebalance
// at or after since.
func (h *groupHistory) leaderSince(since time.Time) (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if n := len(h.leads); n > 0 && !h.leads[n-1].at.Before(since) {
		return h.leads[n-1].member, true
	}
	return "", false
}

// assignedSince reports whether member reported an assignment of at
// least one partition at or after since.
func (h *groupHistory) assignedSince(member string, since time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, a := range h.assigns {
		if a.member == member && a.ev == "assigned" && len(a.parts) > 0 && !a.at.Before(since) {
			return true
		}
	}
	return false
}

// acceptedBy returns the commits that broker node accepted in [from, to).
func (h *groupHistory) acceptedBy(node int32, from, to time.Time) []commitEvent {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []commitEvent
	for _, c := range h.commits {
		if c.err == "" && c.node == node && !c.at.Before(from) && c.at.Before(to) {
			out = append(out, c)
		}
	}
	return out
}

// zombieCommits returns member's commits of kind zombie.
func (h *groupHistory) zombieCommits(member string) []commitEvent {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []commitEvent
	for _, c := range h.commits {
		if c.member == member && c.kind == "zombie" {
			out = append(out, c)
		}
	}
	return out
}

// addIsolation records that node was cut off in [from, healed) and
// answered from its old group state until to.
func (h *groupHistory) addIsolation(node int32, from, healed, to time.Time) {
	h.mu.Lock()
	h.isolated = append(h.isolated, isolation{node, from, healed, to})
	h.mu.Unlock()
}

// resignWatch follows a coordinator that is cut off, by asking it
// directly every 50 ms (clients still reach it; no coordinator lookup):
//
//	request     | it notes                                        | field
//	------------+-------------------------------------------------+-----------
//	Metadata    | the first answer in which the broker's own view | observedAt
//	            | of its __consumer_offsets partition has another |
//	            | leader or a higher leader epoch: it has learned |
//	            | from etcd that it was replaced                  |
//	OffsetFetch | the first answer NOT_COORDINATOR or             | resignedAt
//	            | COORDINATOR_LOAD_IN_PROGRESS: it dropped the    |
//	            | group state it held                             |
//
// Start it with watchResign before the cut; end returns the end of the
// isolation window. Its methods are safe for concurrent use; mu guards seen
// and times.
type resignWatch struct {
	node  int32
	quit  chan struct{}
	done  chan struct{}
	once  sync.Once
	cl    *kgo.Client
	mu    sync.Mutex
	seen  partitionState // the partition as the broker last described it
	times struct{ observedAt, resignedAt time.Time }
}

// resignSlack is how long after a broker has learned that it no longer
// leads its __consumer_offsets partition it may still answer from the
// groups it held: resigning is a step of the broker's next reconcile pass
// after the metadata change (Kafka's resignation is asynchronous too).
const resignSlack = time.Second

// watchResign starts watching broker b, which leads __consumer_offsets
// partition part at epoch, as coordinator of group.
func (g *groupRun) watchResign(b *broker, part, epoch int32) *resignWatch {
	g.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr()), kgo.RequestRetries(0))
	if err != nil {
		g.t.Fatal(err)
	}
	rw := &resignWatch{node: b.id, quit: make(chan struct{}), done: make(chan struct{}), cl: cl}
	go rw.run(g.group, g.topic, part, epoch)
	g.t.Cleanup(rw.stop)
	return rw
}

func (rw *resignWatch) run(group, topic string, part, epoch int32) {
	defer close(rw.done)
	defer rw.cl.Close()
	seed := rw.cl.SeedBrokers()[0]
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		rw.mu.Lock()
		observed, resigned := !rw.times.observedAt.IsZero(), !rw.times.resignedAt.IsZero()
		rw.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		if !observed {
			mreq := kmsg.NewPtrMetadataRequest()
			mt := kmsg.NewMetadataRequestTopic()
			mt.Topic = kmsg.StringPtr(offsetsTopicName)
			mreq.Topics = append(mreq.Topics, mt)
			if resp, err := mreq.RequestWith(ctx, seed); err == nil {
				for _, t := range resp.Topics {
					for _, p := range t.Partitions {
						if t.Topic == nil || *t.Topic != offsetsTopicName || p.Partition != part {
							continue
						}
						now := time.Now()
						rw.mu.Lock()
						rw.seen = partitionState{Leader: p.Leader, LeaderEpoch: p.LeaderEpoch, ISR: p.ISR}
						if p.Leader != rw.node || p.LeaderEpoch > epoch {
							rw.times.observedAt = now
						}
						rw.mu.Unlock()
					}
				}
			}
		}
		if !resigned {
			if code, err := offsetFetchCode(ctx, seed, group, topic); err == nil &&
				(code == kerr.NotCoordinator.Code || code == kerr.CoordinatorLoadInProgress.Code) {
				rw.mu.Lock()
				rw.times.resignedAt = time.Now()
				rw.mu.Unlock()
			}
		}
		cancel()
		select {
		case <-rw.quit:
			return
		case <-tick.C:
		}
	}
}

// offsetFetchCode sends the group's OffsetFetch of partition 0 of topic to
// broker br itself and returns the error code of the answer (the group's,
// or else the partition's).
func offsetFetchCode(ctx context.Context, br *kgo.Broker, group, topic string) (int16, error) {
	req := kmsg.NewPtrOffsetFetchRequest()
	// Both forms: the broker reads the one of the version negotiated.
	req.Group = group
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{0}
	req.Topics = append(req.Topics, rt)
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group = group
	gt := kmsg.NewOffsetFetchRequestGroupTopic()
	gt.Topic, gt.Partitions = topic, []int32{0}
	rg.Topics = append(rg.Topics, gt)
	req.Groups = append(req.Groups, rg)
	resp, err := req.RequestWith(ctx, br)
	if err != nil {
		return 0, err
	}
	if len(resp.Groups) > 0 {
		if c := resp.Groups[0].ErrorCode; c != 0 {
			return c, nil
		}
		for _, t := range resp.Groups[0].Topics {
			for _, p := range t.Partitions {
				return p.ErrorCode, nil
			}
		}
		return 0, nil
	}
	if resp.ErrorCode != 0 {
		return resp.ErrorCode, nil
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			return p.ErrorCode, nil
		}
	}
	return 0, nil
}

func (rw *resignWatch) stop() {
	rw.once.Do(func() { close(rw.quit) })
	<-rw.done
}

// end waits up to d until the broker has resigned, or has known for
// resignSlack that it was replaced, stops watching, and returns the end
// of its isolation window: when it resigned, else resignSlack after it
// learned. It fails the test if the broker did neither within d.
func (rw *resignWatch) end(t *testing.T, d time.Duration) time.Time {
	t.Helper()
	var observedAt, resignedAt time.Time
	var seen partitionState
	err := poll(d, func() error {
		rw.mu.Lock()
		observedAt, resignedAt, seen = rw.times.observedAt, rw.times.resignedAt, rw.seen
		rw.mu.Unlock()
		switch {
		case !resignedAt.IsZero():
			return nil
		case !observedAt.IsZero() && time.Since(observedAt) >= resignSlack:
			return nil
		}
		return fmt.Errorf("broker %d still describes its partition as %v and answers as coordinator", rw.node, seen)
	})
	rw.stop()
	if err != nil {
		t.Errorf("isolated coordinator after the heal: %v", err)
		return time.Now()
	}
	if !resignedAt.IsZero() && (observedAt.IsZero() || resignedAt.Before(observedAt.Add(resignSlack))) {
		return resignedAt
	}
	return observedAt.Add(resignSlack)
}

// startFetching polls the group's committed offsets every 200 ms until
// stopFetching; hook names the broker of each answer.
func (h *groupHistory) startFetching(adm *kadm.Client, hook *offsetFetchHook, group, topic string, partitions int32) {
	go func() {
		defer close(h.done)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			sent := time.Now()
			resp, err := adm.FetchOffsets(ctx, group)
			at := time.Now()
			node := hook.node.Load()
			cancel()
			if err == nil {
				h.mu.Lock()
				for p := range partitions {
					if o, ok := resp.Lookup(topic, p); ok && o.Err == nil {
						h.fetches = append(h.fetches, fetchObs{p, o.At, node, sent, at})
					}
				}
				h.mu.Unlock()
			}
			select {
			case <-h.quit:
				return
			case <-tick.C:
			}
		}
	}()
}

func (h *groupHistory) stopFetching() {
	h.once.Do(func() { close(h.quit) })
	<-h.done
}

// groupResult is what the group checker found. Every anomaly count must
// be zero:
//
//	anomaly          | meaning
//	-----------------+------------------------------------------------------
//	regression       | an accepted commit below one accepted before it was sent
//	stale-fetch      | an OffsetFetch answer below a commit accepted before
//	                 | the fetch was sent
//	fetch-regression | an OffsetFetch answer below one received before it
//	                 | was sent
//	lost-commit      | the final committed offset below an accepted commit
//	rewind           | a member's first record after an assignment below a
//	                 | commit accepted before the assignment
//	skipped          | an offset below the final committed offset that no
//	                 | member processed
//	inconsistent     | a processed record whose value is not the log's
//	zombie-accepted  | a zombie commit that was accepted
//	unexpected-error | a commit answered with an error a coordinator does
//	                 | not send (a produce error such as NOT_LEADER_FOR_PARTITION)
//
// duplicates (records processed more than once) are allowed: delivery is
// at least once. A stale or regressing OffsetFetch that a broker answered
// inside one of its isolation windows (sent before the window's end) is
// counted apart (isolated-stale), not failed: a coordinator cut off from
// etcd cannot know it was replaced, and Kafka's answers from its cache
// the same way until it resigns. A stale answer from any other broker, or
// from the same broker after it resigned, fails.
type groupResult struct {
	records, distinct, duplicates int
	commitsOK, commitsFailed      int
	failedBy                      map[string]int
	fetches                       int
	isolatedStale                 int           // stale answers of an isolated ex-coordinator
	isolatedAfterHeal             int           // those of them sent after the heal, before it resigned
	isolatedLag                   int64         // the most it was behind
	isolatedFor                   time.Duration // the latest such answer after the window began
	maxGen                        int32
	rebalances                    int // distinct generations assigned
	memberRewinds                 int // members set back to committed offsets after joining again

	regression, staleFetch, fetchRegression []string
	lostCommit, rewind, skipped             []string
	inconsistent, zombieAccepted            []string
	unexpectedErr                           []string
}

func (r *groupResult) String() string {
	return fmt.Sprintf("processed %d records (%d distinct, %d duplicates), commits accepted %d, failed %d, %d offset fetches, generations up to %d (%d assigned), %d member rewinds; "+
		"regression %d, stale-fetch %d, fetch-regression %d, lost-commit %d, rewind %d, skipped %d, inconsistent %d, zombie-accepted %d, unexpected-error %d; "+
		"isolated-stale %d (%d sent after the heal; at most %d behind, up to %s into the isolation)",
		r.records, r.distinct, r.duplicates, r.commitsOK, r.commitsFailed, r.fetches, r.maxGen, r.rebalances, r.memberRewinds,
		len(r.regression), len(r.staleFetch), len(r.fetchRegression), len(r.lostCommit),
		len(r.rewind), len(r.skipped), len(r.inconsistent), len(r.zombieAccepted), len(r.unexpectedErr),
		r.isolatedStale, r.isolatedAfterHeal, r.isolatedLag, r.isolatedFor.Round(time.Millisecond))
}

// ackedBefore answers "the highest offset of a commit accepted before t"
// for one partition: accepted commits sorted by answer time with a
// running maximum.
type ackedBefore struct {
	at  []time.Time
	max []int64
	by  []commitEvent
}

func newAckedBefore(cs []commitEvent) *ackedBefore {
	slices.SortFunc(cs, func(a, b commitEvent) int { return a.at.Compare(b.at) })
	a := &ackedBefore{}
	for _, c := range cs {
		m := c.o
		if n := len(a.max); n > 0 && a.max[n-1] > m {
			m = a.max[n-1]
			a.by = append(a.by, a.by[n-1])
		} else {
			a.by = append(a.by, c)
		}
		a.at = append(a.at, c.at)
		a.max = append(a.max, m)
	}
	return a
}

// before returns the highest offset accepted strictly before t and the
// commit that set it; ok is false if none was.
func (a *ackedBefore) before(t time.Time) (int64, commitEvent, bool) {
	i := sort.Search(len(a.at), func(i int) bool { return !a.at[i].Before(t) })
	if i == 0 {
		return 0, commitEvent{}, false
	}
	return a.max[i-1], a.by[i-1], true
}

// check compares what the members processed and committed with the log
// and the final committed offsets, and fails the test on any anomaly.
// logs is the topic as readAll returns it; final the committed offsets
// once the members caught up. The poller must be stopped.
func (h *groupHistory) check(t *testing.T, logs map[int32][]*kgo.Record, final map[int32]int64, partitions int32) *groupResult {
	t.Helper()
	h.mu.Lock()
	recs := slices.Clone(h.recs)
	commits := slices.Clone(h.commits)
	assigns := slices.Clone(h.assigns)
	fetches := slices.Clone(h.fetches)
	isolated := slices.Clone(h.isolated)
	r := &groupResult{failedBy: make(map[string]int), fetches: len(fetches), maxGen: h.maxGen}
	for e, n := range h.errs {
		t.Logf("member errors: %d x %s", n, e)
	}
	if h.bad > 0 {
		t.Logf("%d member lines cut short", h.bad)
	}
	h.mu.Unlock()
	ts := func(x time.Time) string { return x.Format("15:04:05.000") }

	acked := make(map[int32][]commitEvent)
	for _, c := range commits {
		switch {
		case c.err == "" && c.kind == "zombie":
			r.zombieAccepted = append(r.zombieAccepted, fmt.Sprintf("%s committed %d/%d as %s gen %d at %s",
				c.member, c.p, c.o, c.mid, c.gen, ts(c.at)))
			fallthrough
		case c.err == "":
			r.commitsOK++
			acked[c.p] = append(acked[c.p], c)
		default:
			r.commitsFailed++
			r.failedBy[c.kind+": "+c.err]++
			if name, _, _ := strings.Cut(c.err, ":"); kafkaErrorNames[name] && !coordinatorErrorNames[name] {
				r.unexpectedErr = append(r.unexpectedErr, fmt.Sprintf("%s's %s commit of %d/%d answered by broker %d at %s: %s",
					c.member, c.kind, c.p, c.o, c.node, ts(c.at), c.err))
			}
		}
	}
	index := make(map[int32]*ackedBefore)
	for p := range partitions {
		index[p] = newAckedBefore(slices.Clone(acked[p]))
	}

	// Accepted commits never go below one accepted before they were sent.
	for p, cs := range acked {
		for _, c := range cs {
			if prev, by, ok := index[p].before(c.sent); ok && c.o < prev {
				r.regression = append(r.regression, fmt.Sprintf("partition %d: %s committed %d (gen %d, sent %s) after %s's %d (gen %d) was accepted at %s",
					p, c.member, c.o, c.gen, ts(c.sent), by.member, by.o, by.gen, ts(by.at)))
			}
		}
	}
	// Reads of the committed offsets: never below an accepted commit or
	// an earlier read, unless an isolated ex-coordinator answered.
	excused := func(f fetchObs, behind int64) bool {
		for _, w := range isolated {
			if w.node == f.node && !f.at.Before(w.from) && f.sent.Before(w.to) {
				r.isolatedStale++
				if !f.sent.Before(w.healed) {
					r.isolatedAfterHeal++
				}
				r.isolatedLag = max(r.isolatedLag, behind)
				r.isolatedFor = max(r.isolatedFor, f.at.Sub(w.from))
				return true
			}
		}
		return false
	}
	byPart := make(map[int32][]fetchObs)
	for _, f := range fetches {
		byPart[f.p] = append(byPart[f.p], f)
		if prev, by, ok := index[f.p].before(f.sent); ok && f.o < prev && !excused(f, prev-f.o) {
			r.staleFetch = append(r.staleFetch, fmt.Sprintf("partition %d: fetch sent %s read %d from broker %d; %s's commit of %d was accepted at %s",
				f.p, ts(f.sent), f.o, f.node, by.member, by.o, ts(by.at)))
		}
	}
	for p, fs := range byPart {
		slices.SortFunc(fs, func(a, b fetchObs) int { return a.at.Compare(b.at) })
		best := int64(-1)
		var bestAt time.Time
		j := 0
		for _, f := range fs {
			for ; j < len(fs) && fs[j].at.Before(f.sent); j++ {
				if fs[j].o > best {
					best, bestAt = fs[j].o, fs[j].at
				}
			}
			if f.o < best && !excused(f, best-f.o) {
				r.fetchRegression = append(r.fetchRegression, fmt.Sprintf("partition %d: fetch sent %s read %d from broker %d; a fetch answered %s read %d",
					p, ts(f.sent), f.o, f.node, ts(bestAt), best))
			}
		}
	}
	// Accepted commits survive.
	for p := range partitions {
		if top, by, ok := index[p].before(time.Now()); ok && final[p] < top {
			r.lostCommit = append(r.lostCommit, fmt.Sprintf("partition %d: final committed %d, %s's commit of %d was accepted at %s",
				p, final[p], by.member, top, ts(by.at)))
		}
	}
	// A member starts an assigned partition, or one it rewinds after
	// joining again, at its committed offset, which is at least every
	// commit accepted before.
	firstAfter := func(member string, p int32, from time.Time) (consumed, bool) {
		for _, c := range recs {
			if c.member == member && c.p == p && !c.at.Before(from) {
				return c, true
			}
		}
		return consumed{}, false
	}
	gens := make(map[int32]bool)
	for _, a := range assigns {
		switch a.ev {
		case "assigned":
			gens[a.gen] = true
		case "rewind":
			r.memberRewinds++
		default:
			continue
		}
		for _, p := range a.parts {
			c, ok := firstAfter(a.member, p, a.at)
			if !ok {
				continue
			}
			if prev, by, ok := index[p].before(a.at); ok && c.o < prev {
				r.rewind = append(r.rewind, fmt.Sprintf("partition %d: %s %s at %s (gen %d) began at %d; %s's commit of %d was accepted at %s",
					p, a.member, a.ev, ts(a.at), a.gen, c.o, by.member, by.o, ts(by.at)))
			}
		}
	}
	r.rebalances = len(gens)

	// Every record below the final committed offset was processed, with
	// the log's value.
	type at struct {
		p int32
		o int64
	}
	seen := make(map[at]int)
	for _, c := range recs {
		seen[at{c.p, c.o}]++
	}
	r.records = len(recs)
	r.distinct = len(seen)
	r.duplicates = r.records - r.distinct
	valueAt := make(map[at]string)
	for p, rs := range logs {
		for _, rec := range rs {
			valueAt[at{p, rec.Offset}] = string(rec.Value)
		}
	}
	for p := range partitions {
		for o := range final[p] {
			if seen[at{p, o}] == 0 {
				r.skipped = append(r.skipped, fmt.Sprintf("%d/%d", p, o))
			}
		}
	}
	for _, c := range recs {
		if v, ok := valueAt[at{c.p, c.o}]; !ok || v != c.v {
			r.inconsistent = append(r.inconsistent, fmt.Sprintf("%s processed %q at %d/%d, the log holds %q", c.member, c.v, c.p, c.o, v))
		}
	}

	t.Logf("group checker: %v", r)
	if len(r.failedBy) > 0 {
		var kinds []string
		for k, n := range r.failedBy {
			kinds = append(kinds, fmt.Sprintf("%d x %s", n, k))
		}
		slices.Sort(kinds)
		t.Logf("failed commits: %s", strings.Join(kinds, "; "))
	}
	report := func(name string, list []string) {
		if len(list) == 0 {
			return
		}
		t.Errorf("%d %s, first: %s", len(list), name, strings.Join(list[:min(len(list), 10)], "; "))
	}
	report("commit regressions", r.regression)
	report("stale offset fetches", r.staleFetch)
	report("offset fetch regressions", r.fetchRegression)
	report("lost commits", r.lostCommit)
	report("rewinds", r.rewind)
	report("skipped records", r.skipped)
	report("inconsistent records", r.inconsistent)
	report("accepted zombie commits", r.zombieAccepted)
	report("commits answered with a produce error", r.unexpectedErr)
	if r.commitsOK == 0 && !h.autoCommit {
		t.Errorf("no commit was accepted")
	}
	if h.autoCommit && len(final) > 0 {
		moved := false
		for _, o := range final {
			moved = moved || o > 0
		}
		if !moved {
			t.Errorf("autocommit committed nothing")
		}
	}
	return r
}

// kafkaErrorNames holds every Kafka error name kerr knows.
var kafkaErrorNames = func() map[string]bool {
	names := make(map[string]bool)
	for code := int16(-1); code < 200; code++ {
		if e, ok := kerr.ErrorForCode(code).(*kerr.Error); ok {
			names[e.Message] = true
		}
	}
	return names
}()

// coordinatorErrorNames are the errors a group coordinator may answer an
// OffsetCommit of an existing topic with. Kafka turns a failed write of
// __consumer_offsets into COORDINATOR_NOT_AVAILABLE or NOT_COORDINATOR
// (GroupMetadataManager.storeOffsets): a member never sees the produce
// error underneath, such as NOT_LEADER_FOR_PARTITION, which clients do not
// expect from a coordinator (Java's consumer fails the commit on it).
var coordinatorErrorNames = map[string]bool{
	kerr.NotCoordinator.Message:            true,
	kerr.CoordinatorNotAvailable.Message:   true,
	kerr.CoordinatorLoadInProgress.Message: true,
	kerr.RequestTimedOut.Message:           true,
	kerr.RebalanceInProgress.Message:       true,
	kerr.IllegalGeneration.Message:         true,
	kerr.UnknownMemberID.Message:           true,
	kerr.FencedInstanceID.Message:          true,
}
