package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// memberEnv carries a memberConfig as JSON. When it is set, the test
// binary runs TestGroupMember as one consumer group member process, so a
// scenario can kill -9, SIGSTOP and SIGCONT a member like any process.
const memberEnv = "SAMSA_CHAOS_GROUP_MEMBER"

// Member timeouts (franz-go options): the session is the broker's
// group.min.session.timeout.ms, the least a member may ask for.
const (
	memberSession   = 6 * time.Second
	memberHeartbeat = time.Second
	memberRebalance = 10 * time.Second
	// memberCommitTimeout bounds one commit; a coordinator that cannot
	// replicate answers after offsetsAppendTimeout (30 s) at the latest.
	memberCommitTimeout = 20 * time.Second
)

// memberConfig is what a member process is told by its test.
type memberConfig struct {
	Name       string   `json:"name"` // the client id, unique per process run
	Seeds      []string `json:"seeds"`
	Topic      string   `json:"topic"`
	Group      string   `json:"group"`
	InstanceID string   `json:"instance_id,omitempty"` // static membership (KIP-345) if set
	// SlowAssign is how long the member, when it leads the group, waits
	// before computing the assignment: the group stays in
	// CompletingRebalance at least that long, so that a test can act in
	// that state.
	SlowAssign time.Duration `json:"slow_assign,omitempty"`
	// AutoCommit makes the member leave committing to franz-go's
	// autocommit (every 500 ms, and before partitions are revoked), which
	// commits what the previous poll returned, as Kafka's consumer
	// commits the offsets of the poll before the last: the member only
	// processes (reports) records and never commits itself.
	AutoCommit bool `json:"auto_commit,omitempty"`
}

// memberEvent is one JSON line a member process writes on stdout, in the
// order things happened in the member:
//
//	ev       | meaning                                  | fields
//	---------+------------------------------------------+----------------------------
//	start    | the client is created                    | at
//	gen      | the client's member id or generation     | mid, gen, at
//	         | changed (polled every 50 ms)             |
//	assigned | partitions were added to the assignment  | parts, mid, gen, at
//	revoked  | partitions were revoked (after a commit) | parts, at
//	lost     | partitions were lost (no commit)         | parts, at
//	lead     | the member leads a rebalance: it is about | at
//	         | to compute the assignment (SlowAssign)   |
//	rewind   | partitions processed as an older member  | parts, mid, at
//	         | id were set back to their committed      |
//	         | offsets                                  |
//	rec      | a record was processed                   | p, o, v, at
//	commit   | one partition's commit answered          | kind, p, o, mid, gen, err,
//	         |                                          | node, sent, at (the answer)
//	error    | a fetch or client error                  | err, at
//
// Commit kinds: "poll" after processing a poll, "revoke" in
// OnPartitionsRevoked, "zombie" the commit sent on SIGCONT with the member
// id and generation the member had when it was stopped. A commit's err is
// empty when the broker accepted it; node is the broker that last answered
// an OffsetCommit of the member (commits of one member are serialised, so
// it is the one that answered, zombie commits aside); sent is when the
// request went out. Times are Unix nanoseconds.
type memberEvent struct {
	Ev    string  `json:"ev"`
	Kind  string  `json:"kind,omitempty"`
	MID   string  `json:"mid,omitempty"`
	Gen   int32   `json:"gen,omitempty"`
	Parts []int32 `json:"parts,omitempty"`
	P     int32   `json:"p"`
	O     int64   `json:"o"`
	V     string  `json:"v,omitempty"`
	Err   string  `json:"err,omitempty"`
	Node  int32   `json:"node"`
	Sent  int64   `json:"sent,omitempty"`
	At    int64   `json:"at"`
}

// TestGroupMember is not a test on its own: it is the body of a member
// process that a group scenario starts (see startMember) and skips
// otherwise. It consumes the topic in the group, processes each poll (its
// records are reported), commits what it processed, and reports every
// commit's answer. It runs until it is killed or gets SIGTERM.
func TestGroupMember(t *testing.T) {
	raw := os.Getenv(memberEnv)
	if raw == "" {
		t.Skip("runs only as a member process of a group scenario")
	}
	var cfg memberConfig
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		t.Fatalf("%s: %v", memberEnv, err)
	}
	if err := runMember(cfg, os.Stdout); err != nil {
		t.Fatal(err)
	}
}

// reporter writes memberEvents as JSON lines, one Write per line (below
// PIPE_BUF, so lines never interleave). It is safe for concurrent use.
type reporter struct {
	mu sync.Mutex
	w  io.Writer
}

func (r *reporter) report(e memberEvent) {
	if e.At == 0 {
		e.At = time.Now().UnixNano()
	}
	line, err := json.Marshal(e)
	if err != nil {
		return
	}
	line = append(line, '\n')
	r.mu.Lock()
	defer r.mu.Unlock()
	_, _ = r.w.Write(line)
}

// member is the state of a member process. mu guards the fields below it;
// the poll loop, the group callbacks and the SIGCONT handler share them.
type member struct {
	cfg memberConfig
	out *reporter
	cl  *kgo.Client
	// commitNode is the broker that last answered an OffsetCommit.
	commitNode atomic.Int32

	mu struct {
		sync.Mutex
		owned map[int32]bool
		// next is, per partition, the last processed record's offset + 1
		// and leader epoch; nextMID the member id it was polled as;
		// acked the highest offset a commit of it was accepted at.
		next    map[int32]kgo.EpochOffset
		nextMID map[int32]string
		acked   map[int32]int64
		// mid and gen are the last valid group membership seen.
		mid string
		gen int32
	}
}

// runMember runs a member until SIGTERM (nil) or a setup error.
func runMember(cfg memberConfig, w io.Writer) error {
	m := &member{cfg: cfg, out: &reporter{w: w}}
	m.mu.owned = make(map[int32]bool)
	m.mu.next = make(map[int32]kgo.EpochOffset)
	m.mu.nextMID = make(map[int32]string)
	m.mu.acked = make(map[int32]int64)
	m.mu.gen = -1
	m.commitNode.Store(-1)
	opts := []kgo.Opt{
		kgo.SeedBrokers(cfg.Seeds...),
		kgo.ClientID(cfg.Name),
		kgo.ConsumerGroup(cfg.Group),
		kgo.ConsumeTopics(cfg.Topic),
		kgo.BlockRebalanceOnPoll(),
		kgo.Balancers(leadReporter{kgo.CooperativeStickyBalancer(), m}),
		kgo.SessionTimeout(memberSession),
		kgo.HeartbeatInterval(memberHeartbeat),
		kgo.RebalanceTimeout(memberRebalance),
		// Every partition has a committed offset before members start
		// (the scenario commits 0), so a reset only happens if a commit
		// was lost; resetting to the end then skips records, which the
		// checker sees.
		kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()),
		kgo.FetchMaxWait(500 * time.Millisecond),
		kgo.MetadataMinAge(100 * time.Millisecond),
		kgo.MetadataMaxAge(2 * time.Second),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }),
		kgo.OnPartitionsAssigned(m.assigned),
		kgo.OnPartitionsRevoked(m.revoked),
		kgo.OnPartitionsLost(m.lost),
		kgo.WithHooks(m),
	}
	if cfg.InstanceID != "" {
		opts = append(opts, kgo.InstanceID(cfg.InstanceID))
	}
	if cfg.AutoCommit {
		opts = append(opts, kgo.AutoCommitInterval(500*time.Millisecond))
	} else {
		opts = append(opts, kgo.DisableAutoCommit())
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("member %s: new client: %w", cfg.Name, err)
	}
	m.cl = cl
	m.out.report(memberEvent{Ev: "start"})

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	cont := make(chan os.Signal, 1)
	signal.Notify(cont, syscall.SIGCONT)
	defer signal.Stop(cont)

	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { m.watchMembership(ctx) })
	wg.Go(func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-cont:
				m.zombieCommit(ctx)
			}
		}
	})
	m.pollLoop(ctx)
	cl.Close()
	return nil
}

// pollLoop processes polls until ctx ends. BlockRebalanceOnPoll keeps the
// group's callbacks out from between a poll and AllowRebalance, so a
// revoke never commits a poll that is only half processed. Every round
// commits whatever was processed and not yet accepted, so a failed commit
// is retried even when no new records come.
//
// When the member id changes (the member was removed from the group and
// joined again), the partitions processed as the old member id go back to
// their committed offsets (see commit for why their progress cannot be
// committed as the new member id); until that succeeds, what is processed
// is processed as no member and never committed.
func (m *member) pollLoop(ctx context.Context) {
	lastMID, rewind := "", false
	for ctx.Err() == nil {
		pollCtx, cancel := context.WithTimeout(ctx, time.Second)
		fs := m.cl.PollRecords(pollCtx, 1000)
		cancel()
		if fs.IsClientClosed() || ctx.Err() != nil {
			return
		}
		mid, _ := m.cl.GroupMetadata()
		if mid != "" && lastMID != "" && mid != lastMID && !m.cfg.AutoCommit {
			rewind = true
		}
		if mid != "" {
			lastMID = mid
		}
		var skip map[int32]bool
		if rewind && mid != "" {
			var err error
			if skip, err = m.rewind(ctx, mid); err != nil {
				m.out.report(memberEvent{Ev: "error", Err: "rewind: " + err.Error()})
			} else {
				rewind = false
			}
		}
		as := mid
		if rewind {
			as = ""
		}
		fs.EachError(func(topic string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				m.out.report(memberEvent{Ev: "error", P: p, Err: fmt.Sprintf("fetch %s-%d: %v", topic, p, err)})
			}
		})
		fs.EachRecord(func(r *kgo.Record) {
			if skip[r.Partition] {
				// Fetched before the rewind; it comes again.
				return
			}
			// Processing is reporting: the line is written before
			// anything that covers it is committed.
			m.out.report(memberEvent{Ev: "rec", P: r.Partition, O: r.Offset, V: string(r.Value)})
			m.mu.Lock()
			m.mu.next[r.Partition] = kgo.EpochOffset{Epoch: r.LeaderEpoch, Offset: r.Offset + 1}
			m.mu.nextMID[r.Partition] = as
			m.mu.Unlock()
		})
		if !m.cfg.AutoCommit {
			m.commit(ctx, "poll", mid)
		}
		m.cl.AllowRebalance()
	}
}

// rewind sets every partition processed as another member id than mid
// back to the group's committed offset and forgets its progress. It
// returns the partitions it set. It runs between a poll and
// AllowRebalance, as franz-go asks of SetOffsets in a group.
func (m *member) rewind(ctx context.Context, mid string) (map[int32]bool, error) {
	m.mu.Lock()
	var parts []int32
	for p := range m.mu.next {
		if m.mu.nextMID[p] != mid {
			parts = append(parts, p)
		}
	}
	m.mu.Unlock()
	if len(parts) == 0 {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	committed, err := kadm.NewClient(m.cl).FetchOffsets(ctx, m.cfg.Group)
	if err != nil {
		return nil, fmt.Errorf("fetch committed offsets: %w", err)
	}
	set := make(map[int32]kgo.EpochOffset)
	skip := make(map[int32]bool)
	for _, p := range parts {
		o, ok := committed.Lookup(m.cfg.Topic, p)
		if !ok || o.Err != nil || o.At < 0 {
			return nil, fmt.Errorf("no committed offset for partition %d (%v)", p, o.Err)
		}
		set[p] = kgo.EpochOffset{Epoch: -1, Offset: o.At}
		skip[p] = true
	}
	m.cl.SetOffsets(map[string]map[int32]kgo.EpochOffset{m.cfg.Topic: set})
	m.mu.Lock()
	for _, p := range parts {
		delete(m.mu.next, p)
		delete(m.mu.nextMID, p)
		delete(m.mu.acked, p)
	}
	m.mu.Unlock()
	m.out.report(memberEvent{Ev: "rewind", MID: mid, Parts: parts})
	return skip, nil
}

// errMembershipChanged aborts a commit whose request would go out as
// another member than the one its records were polled as.
var errMembershipChanged = errors.New("not sent: the member id changed after the records were polled")

// commit commits, as member mid, every partition whose records were
// polled as mid and processed past what was last accepted, and reports
// each partition's answer.
//
// NB: the member tracks its own offsets instead of franz-go's uncommitted
// ones. A paused member that was removed from the group resumes, processes
// what it still had of its old partitions (its client learns of the
// removal one heartbeat later), and rejoins with a new member id; franz-go
// then kept those partitions as owned (no OnPartitionsLost) and went on
// from its own positions, and both a revoke commit and a commit called
// before the rejoin went out under the new member id and generation,
// which the coordinator accepts: a classic group checks the member and its
// generation, not who owns the partition (Kafka's does the same). The
// committed offset then went back below the real owner's commit (seen in
// S-22 runs as commit regressions and rewinds), so offsets polled as one
// member id are only ever committed as that member id, and pollLoop
// rewinds the rest.
func (m *member) commit(ctx context.Context, kind, mid string) {
	if mid == "" {
		return
	}
	m.mu.Lock()
	offsets := make(map[int32]kgo.EpochOffset)
	for p, eo := range m.mu.next {
		if a, ok := m.mu.acked[p]; m.mu.nextMID[p] == mid && (!ok || eo.Offset > a) {
			offsets[p] = eo
		}
	}
	m.mu.Unlock()
	if len(offsets) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, memberCommitTimeout)
	defer cancel()
	sent := time.Now().UnixNano()
	ctx = kgo.PreCommitFnContext(ctx, func(req *kmsg.OffsetCommitRequest) error {
		sent = time.Now().UnixNano() // when it really goes out
		if req.MemberID != mid {
			return errMembershipChanged
		}
		return nil
	})
	m.cl.CommitOffsetsSync(ctx, map[string]map[int32]kgo.EpochOffset{m.cfg.Topic: offsets},
		func(_ *kgo.Client, req *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			for _, p := range m.reportCommit(kind, sent, req, resp, err) {
				m.mu.Lock()
				if o := offsets[p].Offset; o > m.mu.acked[p] {
					m.mu.acked[p] = o
				}
				m.mu.Unlock()
			}
		})
}

// reportCommit reports one commit event per partition of req and returns
// the partitions that were accepted.
func (m *member) reportCommit(kind string, sent int64, req *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) []int32 {
	at := time.Now().UnixNano()
	type tp struct {
		topic     string
		partition int32
	}
	codes := make(map[tp]int16)
	if err == nil && resp != nil {
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				codes[tp{t.Topic, p.Partition}] = p.ErrorCode
			}
		}
	}
	if len(req.Topics) == 0 && err != nil {
		m.out.report(memberEvent{Ev: "error", Kind: kind, Err: "commit: " + err.Error(), At: at})
		return nil
	}
	var accepted []int32
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			e := memberEvent{Ev: "commit", Kind: kind, MID: req.MemberID, Gen: req.Generation,
				P: p.Partition, O: p.Offset, Node: m.commitNode.Load(), Sent: sent, At: at}
			switch code, ok := codes[tp{t.Topic, p.Partition}]; {
			case err != nil:
				e.Err = err.Error()
			case !ok:
				e.Err = "no answer for the partition"
			case code != 0:
				e.Err = kerr.ErrorForCode(code).Error()
			default:
				accepted = append(accepted, p.Partition)
			}
			m.out.report(e)
		}
	}
	return accepted
}

// OnBrokerRead implements kgo.HookBrokerRead: it notes which broker
// answered the last OffsetCommit.
func (m *member) OnBrokerRead(meta kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if key == kmsg.OffsetCommit.Int16() && err == nil {
		m.commitNode.Store(meta.NodeID)
	}
}

// leadReporter is the member's balancer: cooperative-sticky, reporting
// when the member leads a rebalance and taking cfg.SlowAssign first.
type leadReporter struct {
	kgo.GroupBalancer
	m *member
}

// MemberBalancer runs on the group leader between its JoinGroup and its
// SyncGroup.
func (b leadReporter) MemberBalancer(members []kmsg.JoinGroupResponseMember) (kgo.GroupMemberBalancer, map[string]struct{}, error) {
	b.m.out.report(memberEvent{Ev: "lead"})
	time.Sleep(b.m.cfg.SlowAssign)
	return b.GroupBalancer.MemberBalancer(members)
}

// assigned is OnPartitionsAssigned: the partitions are added.
func (m *member) assigned(_ context.Context, cl *kgo.Client, added map[string][]int32) {
	mid, gen := cl.GroupMetadata()
	parts := added[m.cfg.Topic]
	m.mu.Lock()
	for _, p := range parts {
		m.mu.owned[p] = true
	}
	m.mu.Unlock()
	m.out.report(memberEvent{Ev: "assigned", MID: mid, Gen: gen, Parts: parts})
}

// revoked is OnPartitionsRevoked: what was processed is committed before
// the partitions go (also on leaving the group).
func (m *member) revoked(ctx context.Context, cl *kgo.Client, gone map[string][]int32) {
	if !m.cfg.AutoCommit {
		mid, _ := cl.GroupMetadata()
		m.commit(ctx, "revoke", mid)
	}
	m.drop("revoked", gone[m.cfg.Topic])
}

// lost is OnPartitionsLost: the partitions are gone without a commit (the
// member was fenced or its session ended).
func (m *member) lost(_ context.Context, _ *kgo.Client, gone map[string][]int32) {
	m.drop("lost", gone[m.cfg.Topic])
}

func (m *member) drop(ev string, parts []int32) {
	if len(parts) == 0 {
		// Cooperative members are told of every session end.
		return
	}
	m.mu.Lock()
	for _, p := range parts {
		delete(m.mu.owned, p)
		delete(m.mu.next, p)
		delete(m.mu.nextMID, p)
		delete(m.mu.acked, p)
	}
	m.mu.Unlock()
	m.out.report(memberEvent{Ev: ev, Parts: parts})
}

// watchMembership polls the client's member id and generation and keeps
// the last valid pair, so that the SIGCONT handler knows what the member
// had when it was stopped even if the client resets it first.
func (m *member) watchMembership(ctx context.Context) {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	lastMID, lastGen := "", int32(-1)
	for {
		mid, gen := m.cl.GroupMetadata()
		if mid != lastMID || gen != lastGen {
			lastMID, lastGen = mid, gen
			m.out.report(memberEvent{Ev: "gen", MID: mid, Gen: gen})
			if mid != "" && gen >= 0 {
				m.mu.Lock()
				m.mu.mid, m.mu.gen = mid, gen
				m.mu.Unlock()
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// zombieCommit runs when the member is continued after a SIGSTOP: before
// the client has learnt anything, it commits what the member processed,
// with the member id and generation the member had, as a client that was
// paused would. The broker must refuse it if the member was replaced.
func (m *member) zombieCommit(ctx context.Context) {
	m.mu.Lock()
	mid, gen := m.mu.mid, m.mu.gen
	offsets := make(map[int32]int64)
	for p := range m.mu.owned {
		if eo, ok := m.mu.next[p]; ok {
			offsets[p] = eo.Offset
		}
	}
	m.mu.Unlock()
	if len(offsets) == 0 {
		for p, eo := range m.cl.CommittedOffsets()[m.cfg.Topic] {
			offsets[p] = eo.Offset
		}
	}
	if len(offsets) == 0 {
		m.out.report(memberEvent{Ev: "error", Kind: "zombie", Err: "continued with nothing to commit"})
		return
	}
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group = m.cfg.Group
	req.MemberID = mid
	req.Generation = gen
	if m.cfg.InstanceID != "" {
		req.InstanceID = &m.cfg.InstanceID
	}
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = m.cfg.Topic
	for p, o := range offsets {
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition = p
		rp.Offset = o
		rp.LeaderEpoch = -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(ctx, memberCommitTimeout)
	defer cancel()
	sent := time.Now().UnixNano()
	resp, err := req.RequestWith(ctx, m.cl)
	if err == nil && resp == nil {
		err = errors.New("no response")
	}
	m.reportCommit("zombie", sent, req, resp, err)
}
