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
// it is the one that answered, zombie commits aside). Times are Unix
// nanoseconds.
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
		next  map[int32]int64 // per owned partition: last processed offset + 1
		// mid and gen are the last valid group membership seen.
		mid string
		gen int32
	}
}

// runMember runs a member until SIGTERM (nil) or a setup error.
func runMember(cfg memberConfig, w io.Writer) error {
	m := &member{cfg: cfg, out: &reporter{w: w}}
	m.mu.owned = make(map[int32]bool)
	m.mu.next = make(map[int32]int64)
	m.mu.gen = -1
	m.commitNode.Store(-1)
	opts := []kgo.Opt{
		kgo.SeedBrokers(cfg.Seeds...),
		kgo.ClientID(cfg.Name),
		kgo.ConsumerGroup(cfg.Group),
		kgo.ConsumeTopics(cfg.Topic),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.Balancers(kgo.CooperativeStickyBalancer()),
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
// revoke never commits a poll that is only half processed.
func (m *member) pollLoop(ctx context.Context) {
	for ctx.Err() == nil {
		fs := m.cl.PollRecords(ctx, 1000)
		if fs.IsClientClosed() || ctx.Err() != nil {
			return
		}
		fs.EachError(func(topic string, p int32, err error) {
			m.out.report(memberEvent{Ev: "error", P: p, Err: fmt.Sprintf("fetch %s-%d: %v", topic, p, err)})
		})
		n := 0
		fs.EachRecord(func(r *kgo.Record) {
			// Processing is reporting: the line is written before
			// anything that covers it is committed.
			m.out.report(memberEvent{Ev: "rec", P: r.Partition, O: r.Offset, V: string(r.Value)})
			m.mu.Lock()
			m.mu.next[r.Partition] = r.Offset + 1
			m.mu.Unlock()
			n++
		})
		if n > 0 {
			m.commit(ctx, "poll")
		}
		m.cl.AllowRebalance()
	}
}

// commit commits everything processed so far and reports each
// partition's answer.
func (m *member) commit(ctx context.Context, kind string) {
	offsets := m.cl.UncommittedOffsets()
	if len(offsets) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, memberCommitTimeout)
	defer cancel()
	sent := time.Now().UnixNano()
	m.cl.CommitOffsetsSync(ctx, offsets, func(_ *kgo.Client, req *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		m.reportCommit(kind, sent, req, resp, err)
	})
}

// reportCommit reports one commit event per partition of req.
func (m *member) reportCommit(kind string, sent int64, req *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
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
		return
	}
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
			}
			m.out.report(e)
		}
	}
}

// OnBrokerRead implements kgo.HookBrokerRead: it notes which broker
// answered the last OffsetCommit.
func (m *member) OnBrokerRead(meta kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if key == kmsg.OffsetCommit.Int16() && err == nil {
		m.commitNode.Store(meta.NodeID)
	}
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
func (m *member) revoked(ctx context.Context, _ *kgo.Client, gone map[string][]int32) {
	m.commit(ctx, "revoke")
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
		if o, ok := m.mu.next[p]; ok {
			offsets[p] = o
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
