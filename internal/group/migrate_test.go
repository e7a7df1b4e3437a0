package group

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// migrateEnv drives a Coordinator over a memLog with a test clock from a
// datadriven script: classic JoinGroup/SyncGroup/Heartbeat/LeaveGroup,
// ConsumerGroupHeartbeat, timers and reloads of the partition, so that
// the conversions between the protocols (KIP-848 online migration) are
// checked on the runtime's own code path, records and replay included.
// Members are named by alias; the coordinator's member ids are mapped
// back for the trace.
type migrateEnv struct {
	t      *testing.T
	clock  *testClock
	log    *memLog
	topics TopicMap
	cfg    Config
	c      *Coordinator
	ids    map[string]string // alias -> member id
	gen    map[string]int32  // alias -> generation of its last join
	parked map[string]chan joinOut
}

type joinOut struct {
	res JoinGroupResult
	err error
}

func newMigrateEnv(t *testing.T) *migrateEnv {
	e := &migrateEnv{t: t, clock: newTestClock(), log: &memLog{}, ids: map[string]string{}, gen: map[string]int32{},
		parked: map[string]chan joinOut{}}
	e.topics = TopicMap{
		"t": {Name: "t", ID: TopicID{'t', 15: 1}, Partitions: 4},
		"u": {Name: "u", ID: TopicID{'u', 15: 1}, Partitions: 2},
	}
	e.cfg = consumerTestConfig(e.topics)
	e.cfg.Now = e.clock.Now
	e.cfg.ConsumerSessionTimeout = 45 * time.Second
	e.cfg.MaxSessionTimeout = time.Minute
	ids := 0
	e.cfg.newMemberID = func() string { ids++; return fmt.Sprintf("id%02d", ids) }
	e.c = newLoaded(t, e.cfg, e.log)
	t.Cleanup(func() { e.c.Close() })
	return e
}

func (e *migrateEnv) alias(id string) string {
	for a, x := range e.ids {
		if x == id {
			return a
		}
	}
	return id
}

// classicSub encodes a version 1 consumer subscription with owned
// partitions ("t:0,1;u:0").
func (e *migrateEnv) classicSub(topics, owned string) []byte {
	s := kmsgSubscription(strings.Split(topics, ","), e.parseOwned(owned))
	return s
}

func (e *migrateEnv) parseOwned(s string) map[string][]int32 {
	out := map[string][]int32{}
	if s == "" {
		return out
	}
	for _, tp := range strings.Split(s, ";") {
		name, ps, _ := strings.Cut(tp, ":")
		for _, p := range strings.Split(ps, ",") {
			var n int32
			fmt.Sscan(p, &n)
			out[name] = append(out[name], n)
		}
	}
	return out
}

func (e *migrateEnv) fmtAssignment(b []byte) string {
	if len(b) == 0 {
		return "-"
	}
	a, err := parseAssignment(b)
	if err != nil {
		return "malformed"
	}
	var parts []string
	for _, t := range a.Topics {
		var ps []string
		for _, p := range t.Partitions {
			ps = append(ps, fmt.Sprint(p))
		}
		parts = append(parts, t.Topic+":"+strings.Join(ps, ","))
	}
	sort.Strings(parts)
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " ")
}

func (e *migrateEnv) fmtSet(a PartitionSet) string {
	var parts []string
	for t, ps := range a {
		name := "?"
		if info, ok := e.topics.TopicByID(t); ok {
			name = info.Name
		}
		var s []string
		for _, p := range ps {
			s = append(s, fmt.Sprint(p))
		}
		parts = append(parts, name+":"+strings.Join(s, ","))
	}
	sort.Strings(parts)
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " ")
}

// state prints the group as the coordinator holds it.
func (e *migrateEnv) state() string {
	en, err := e.c.locked("g", false)
	if err != nil || en == nil {
		return fmt.Sprintf("no group (%v)\n", err)
	}
	defer en.mu.Unlock()
	var sb strings.Builder
	if cg := en.cg; cg != nil {
		if err := cg.CheckInvariants(); err != nil {
			e.t.Fatalf("invariant: %v", err)
		}
		fmt.Fprintf(&sb, "consumer group epoch=%d assignment-epoch=%d state=%s\n", cg.epoch, cg.assignmentEpoch, cg.State())
		ids := cg.sortedMemberIDs()
		sort.Slice(ids, func(i, j int) bool { return e.alias(ids[i]) < e.alias(ids[j]) })
		for _, id := range ids {
			m := cg.members[id]
			kind := "consumer"
			if m.useClassic() {
				kind = "classic"
			}
			fmt.Fprintf(&sb, "  %s %s epoch=%d %s assigned=%s", e.alias(id), kind, m.Epoch, m.State, e.fmtSet(m.Assigned))
			if len(m.PendingRevocation) > 0 {
				fmt.Fprintf(&sb, " revoking=%s", e.fmtSet(m.PendingRevocation))
			}
			fmt.Fprintf(&sb, " target=%s\n", e.fmtSet(cg.target[id]))
		}
		return sb.String()
	}
	g := en.g
	fmt.Fprintf(&sb, "classic group state=%s generation=%d protocol=%s leader=%s\n", g.state, g.generation, g.protocol, e.alias(g.leader))
	ms := g.sortedMembers()
	sort.Slice(ms, func(i, j int) bool { return e.alias(ms[i].id) < e.alias(ms[j].id) })
	for _, m := range ms {
		fmt.Fprintf(&sb, "  %s assignment=%s\n", e.alias(m.id), e.fmtAssignment(m.assignment))
	}
	return sb.String()
}

func TestMigrationScripts(t *testing.T) {
	datadriven.Walk(t, "testdata/migrate", func(t *testing.T, path string) {
		e := newMigrateEnv(t)
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			return e.run(t, d)
		})
	})
}

func (e *migrateEnv) joinReq(t *testing.T, d *datadriven.TestData, alias string) JoinGroupRequest {
	topics, owned, protocol := "t", "", "cooperative-sticky"
	d.MaybeScanArgs(t, "topics", &topics)
	d.MaybeScanArgs(t, "owned", &owned)
	d.MaybeScanArgs(t, "protocol", &protocol)
	req := JoinGroupRequest{Group: "g", MemberID: e.ids[alias], ProtocolType: "consumer", ClientID: alias, ClientHost: "/h",
		Protocols:      []Protocol{{Name: protocol, Metadata: e.classicSub(topics, owned)}},
		SessionTimeout: 10 * time.Second, RebalanceTimeout: 20 * time.Second}
	var inst string
	if d.MaybeScanArgs(t, "instance", &inst) {
		req.InstanceID = &inst
		if d.HasArg("new-id") {
			req.MemberID = ""
		}
	}
	if d.HasArg("bad-metadata") {
		req.Protocols[0].Metadata = []byte{0, 1, 0, 0, 0, 9}
	}
	var pt string
	if d.MaybeScanArgs(t, "protocol-type", &pt) {
		req.ProtocolType = pt
	}
	return req
}

// errShort is the sentinel's name of err, without the message (which
// may hold generated member ids).
func errShort(err error) string {
	s, _, _ := strings.Cut(errName(err), ":")
	return s
}

func (e *migrateEnv) joined(alias string, o joinOut) string {
	if o.err != nil {
		return fmt.Sprintf("%s: join %s\n", alias, errShort(o.err))
	}
	e.ids[alias] = o.res.MemberID
	e.gen[alias] = o.res.Generation
	leader := ""
	if o.res.LeaderID != "" {
		leader = " leader=" + e.alias(o.res.LeaderID)
	}
	return fmt.Sprintf("%s: joined generation=%d protocol=%s%s members=%d\n", alias, o.res.Generation, o.res.Protocol, leader, len(o.res.Members))
}

func (e *migrateEnv) run(t *testing.T, d *datadriven.TestData) string {
	ctx := context.Background()
	var alias string
	d.MaybeScanArgs(t, "alias", &alias)
	switch d.Cmd {
	case "policy":
		// Restart the coordinator with another configuration.
		d.ScanArgs(t, "value", &e.cfg.ConsumerMigrationPolicy)
		var n int
		if d.MaybeScanArgs(t, "classic-max-size", &n) {
			e.cfg.MaxSize = int32(n)
		}
		return e.reload()
	case "join":
		req := e.joinReq(t, d, alias)
		out := make(chan joinOut, 1)
		before := e.waiters()
		go func() {
			res, err := e.c.JoinGroup(ctx, req)
			out <- joinOut{res, err}
		}()
		if d.HasArg("async") {
			e.parked[alias] = out
			checkFor(t, 5*time.Second, func() error {
				if e.waiters() == before && len(out) == 0 {
					return fmt.Errorf("join of %s not parked", alias)
				}
				return nil
			})
			return alias + ": parked\n"
		}
		return e.joined(alias, recv(t, out, 5*time.Second, "join answer")) + e.state()
	case "await":
		var sb strings.Builder
		for _, a := range strings.Split(alias, ",") {
			sb.WriteString(e.joined(a, recv(t, e.parked[a], 5*time.Second, "join answer")))
			delete(e.parked, a)
		}
		return sb.String() + e.state()
	case "sync":
		req := SyncGroupRequest{Group: "g", MemberID: e.ids[alias], Generation: e.gen[alias]}
		var gen int
		if d.MaybeScanArgs(t, "gen", &gen) {
			req.Generation = int32(gen)
		}
		var assign string
		if d.MaybeScanArgs(t, "assign", &assign) {
			// "a=t:0,1 b=t:2,3"
			for _, f := range strings.Fields(strings.ReplaceAll(assign, "/", " ")) {
				who, set, _ := strings.Cut(f, "=")
				var tps []TopicPartitions
				for name, ps := range e.parseOwned(set) {
					tps = append(tps, TopicPartitions{TopicID: e.topics[name].ID, Partitions: ps})
				}
				req.Assignments = append(req.Assignments, Assignment{MemberID: e.ids[who], Assignment: encodeAssignment(e.topics, assignmentOf(tps), 1)})
			}
		}
		res, err := e.c.SyncGroup(ctx, req)
		if err != nil {
			return fmt.Sprintf("%s: sync %s\n", alias, errShort(err))
		}
		return fmt.Sprintf("%s: synced assignment=%s\n", alias, e.fmtAssignment(res.Assignment)) + e.state()
	case "heartbeat":
		req := HeartbeatRequest{Group: "g", MemberID: e.ids[alias], Generation: e.gen[alias]}
		var gen int
		if d.MaybeScanArgs(t, "gen", &gen) {
			req.Generation = int32(gen)
		}
		err := e.c.Heartbeat(ctx, req)
		if err != nil {
			return fmt.Sprintf("%s: heartbeat %s\n", alias, errShort(err))
		}
		return alias + ": heartbeat ok\n"
	case "leave":
		res, err := e.c.LeaveGroup(ctx, LeaveGroupRequest{Group: "g", Members: []LeaveMember{{MemberID: e.ids[alias]}}})
		if err != nil {
			return fmt.Sprintf("%s: leave %s\n", alias, errShort(err))
		}
		if res.Members[0].Err != nil {
			return fmt.Sprintf("%s: leave %s\n", alias, errShort(res.Members[0].Err))
		}
		return alias + ": left\n" + e.state()
	case "hb":
		// id-of=x sends the member id of x (a classic member) instead of
		// the alias; x's alias then names the member.
		memberID := alias
		var of string
		if d.MaybeScanArgs(t, "id-of", &of) {
			memberID = e.ids[of]
		} else {
			e.ids[alias] = alias
		}
		req := ConsumerHeartbeatRequest{Group: "g", MemberID: memberID, RebalanceTimeout: -1, ClientID: alias, ClientHost: "/h"}
		var epoch int
		d.ScanArgs(t, "epoch", &epoch)
		req.MemberEpoch = int32(epoch)
		var s string
		if d.MaybeScanArgs(t, "topics", &s) {
			req.SubscribedTopicNames = strings.Split(s, ",")
		}
		if epoch == 0 {
			req.RebalanceTimeout = time.Minute
			req.Owned = []TopicPartitions{}
		}
		if d.MaybeScanArgs(t, "instance", &s) {
			v := s
			req.InstanceID = &v
		}
		if d.MaybeScanArgs(t, "owned", &s) {
			req.Owned = []TopicPartitions{}
			for name, ps := range e.parseOwned(s) {
				req.Owned = append(req.Owned, TopicPartitions{TopicID: e.topics[name].ID, Partitions: ps})
			}
		}
		res, err := e.c.ConsumerGroupHeartbeat(ctx, req, true)
		if err != nil {
			return fmt.Sprintf("%s: hb %s\n", alias, errShort(err))
		}
		e.gen[alias] = res.MemberEpoch
		out := fmt.Sprintf("%s: hb epoch=%d", alias, res.MemberEpoch)
		if res.HasAssignment {
			a := PartitionSet{}
			for _, tp := range res.Assignment {
				a[tp.TopicID] = tp.Partitions
			}
			out += " assignment=" + e.fmtSet(a)
		}
		return out + "\n" + e.state()
	case "commit":
		var off int
		d.ScanArgs(t, "offset", &off)
		req := commit("g", e.ids[alias], e.gen[alias], "t", 0, int64(off))
		req.Version = 8
		if e.ids[alias] == alias {
			req.Version = 9 // a consumer-protocol member
		}
		if _, err := e.c.OffsetCommit(ctx, req); err != nil {
			return fmt.Sprintf("%s: commit %s\n", alias, errShort(err))
		}
		return alias + ": committed\n"
	case "offset":
		f := fetchOne(t, e.c, "g", "t", 0)
		return fmt.Sprintf("t-0 offset=%d\n", f.Offset)
	case "advance":
		var ms int
		d.ScanArgs(t, "ms", &ms)
		e.clock.advance(time.Duration(ms) * time.Millisecond)
		e.c.fireTimers(e.clock.Now())
		return e.state()
	case "fail-next-append":
		e.log.mu.Lock()
		e.log.failErr = fmt.Errorf("memlog: injected failure: %w", ErrNotCoordinator)
		e.log.mu.Unlock()
		return ""
	case "state":
		return e.state()
	case "reload":
		return e.reload()
	case "log":
		// The group records written so far, by kind (offsets left out).
		var sb strings.Builder
		var from int
		d.MaybeScanArgs(t, "from", &from)
		e.log.mu.Lock()
		entries := append([]Entry(nil), e.log.entries...)
		e.log.mu.Unlock()
		for _, en := range entries[min(from, len(entries)):] {
			k, err := parseKey(en.Key)
			if err != nil {
				t.Fatal(err)
			}
			switch k.kind {
			case kindGroup:
				if en.Value == nil {
					sb.WriteString("classic-metadata tombstone\n")
				} else {
					sb.WriteString("classic-metadata\n")
				}
			case kindConsumer:
				r, err := parseCGRecord(en.Key, en.Value)
				if err != nil {
					t.Fatal(err)
				}
				name := recordName(r)
				if r.Member != "" {
					name = strings.Replace(name, r.Member, e.alias(r.Member), 1)
				}
				if r.Metadata != nil && r.Metadata.Classic != nil {
					name += " (classic)"
				}
				sb.WriteString(name + "\n")
			}
		}
		fmt.Fprintf(&sb, "(%d entries)\n", len(entries))
		return sb.String()
	}
	t.Fatalf("unknown command %s", d.Cmd)
	return ""
}

// waiters counts the parked calls of the group.
func (e *migrateEnv) waiters() int {
	en, err := e.c.locked("g", false)
	if err != nil || en == nil {
		return 0
	}
	defer en.mu.Unlock()
	return len(en.waiters)
}

// reload loads the partition into a new coordinator, as a failover does.
func (e *migrateEnv) reload() string {
	e.c.Close()
	e.c = newLoaded(e.t, e.cfg, e.log)
	return "reloaded\n" + e.state()
}

// kmsgSubscription encodes a version 1 consumer protocol subscription.
func kmsgSubscription(topics []string, owned map[string][]int32) []byte {
	s := kmsg.NewConsumerMemberMetadata()
	s.Version = 1
	s.Topics = topics
	names := make([]string, 0, len(owned))
	for n := range owned {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		s.OwnedPartitions = append(s.OwnedPartitions, kmsg.ConsumerMemberMetadataOwnedPartition{Topic: n, Partitions: owned[n]})
	}
	return s.AppendTo(nil)
}
