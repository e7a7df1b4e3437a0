package group

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
)

// groupEnv drives one Group from a datadriven script with a fake clock.
// Waiters are named in the script (w=name) and printed by name.
type groupEnv struct {
	g     *Group
	now   time.Time
	ids   int
	names map[Waiter]string
	nextW Waiter
	// logEnd numbers the offset records of the script, as their offsets
	// in __consumer_offsets would.
	logEnd int64
}

func newGroupEnv(d *datadriven.TestData, t *testing.T) *groupEnv {
	e := &groupEnv{now: time.UnixMilli(0), names: map[Waiter]string{}}
	cfg := GroupConfig{
		MinSessionTimeout:     time.Second,
		MaxSessionTimeout:     time.Minute,
		InitialRebalanceDelay: 3 * time.Second,
		MaxSize:               1000,
		NewMemberID: func(clientID string) string {
			e.ids++
			return fmt.Sprintf("%s-%d", clientID, e.ids)
		},
	}
	var delay, maxSize int
	if d.MaybeScanArgs(t, "initial-delay", &delay) {
		cfg.InitialRebalanceDelay = time.Duration(delay) * time.Millisecond
	}
	if d.MaybeScanArgs(t, "max-size", &maxSize) {
		cfg.MaxSize = int32(maxSize)
	}
	e.g = NewGroup("g", cfg, e.now)
	return e
}

func (e *groupEnv) waiter(t *testing.T, d *datadriven.TestData) Waiter {
	var name string
	d.ScanArgs(t, "w", &name)
	e.nextW++
	e.names[e.nextW] = name
	return e.nextW
}

func errName(err error) string {
	if err == nil {
		return "ok"
	}
	return "err=" + strings.TrimPrefix(err.Error(), "group: ")
}

func (e *groupEnv) effects(eff Effects) string {
	var sb strings.Builder
	if eff.Store {
		fmt.Fprintf(&sb, "store group gen=%d state=%s\n", e.g.generation, e.g.state)
	}
	for _, j := range eff.Joins {
		r := j.Result
		fmt.Fprintf(&sb, "join %s -> %s member=%s", e.names[j.Waiter], errName(j.Err), r.MemberID)
		if j.Err == nil {
			fmt.Fprintf(&sb, " gen=%d protocol=%s leader=%s", r.Generation, r.Protocol, r.LeaderID)
			if r.Members != nil {
				var ms []string
				for _, m := range r.Members {
					s := m.MemberID
					if m.InstanceID != nil {
						s += "(" + *m.InstanceID + ")"
					}
					ms = append(ms, s+":"+string(m.Metadata))
				}
				fmt.Fprintf(&sb, " members=[%s]", strings.Join(ms, " "))
			}
		}
		sb.WriteString("\n")
	}
	for _, s := range eff.Syncs {
		fmt.Fprintf(&sb, "sync %s -> %s", e.names[s.Waiter], errName(s.Err))
		if s.Err == nil {
			fmt.Fprintf(&sb, " assignment=%q", s.Result.Assignment)
		}
		sb.WriteString("\n")
	}
	return sb.String()
}

func (e *groupEnv) stateLine() string {
	g := e.g
	var ms []string
	for _, m := range g.sortedMembers() {
		ms = append(ms, m.id)
	}
	return fmt.Sprintf("> %s gen=%d leader=%s protocol=%s members=[%s]\n", g.state, g.generation, g.leader, g.protocol, strings.Join(ms, " "))
}

func (e *groupEnv) advance(t *testing.T, d *datadriven.TestData) {
	var ms int
	if d.MaybeScanArgs(t, "after", &ms) {
		e.now = e.now.Add(time.Duration(ms) * time.Millisecond)
	}
}

func optString(t *testing.T, d *datadriven.TestData, key string) *string {
	if !d.HasArg(key) {
		return nil
	}
	var s string
	d.ScanArgs(t, key, &s)
	return &s
}

func (e *groupEnv) handle(t *testing.T, d *datadriven.TestData) string {
	e.advance(t, d)
	switch d.Cmd {
	case "join":
		req := JoinGroupRequest{Group: "g", ProtocolType: "consumer", SessionTimeout: 10 * time.Second, RebalanceTimeout: 30 * time.Second}
		d.MaybeScanArgs(t, "member", &req.MemberID)
		d.ScanArgs(t, "client", &req.ClientID)
		req.InstanceID = optString(t, d, "instance")
		d.MaybeScanArgs(t, "type", &req.ProtocolType)
		req.RequireKnownMemberID = d.HasArg("require-known")
		var session, rebalance int
		if d.MaybeScanArgs(t, "session", &session) {
			req.SessionTimeout = time.Duration(session) * time.Millisecond
		}
		if d.MaybeScanArgs(t, "rebalance", &rebalance) {
			req.RebalanceTimeout = time.Duration(rebalance) * time.Millisecond
		}
		protos := []string{"range"}
		d.MaybeScanArgs(t, "protocols", &protos)
		for _, p := range protos {
			req.Protocols = append(req.Protocols, Protocol{Name: p, Metadata: []byte(p + "@" + req.ClientID)})
		}
		return e.effects(e.g.Join(e.now, req, e.waiter(t, d))) + e.stateLine()
	case "sync":
		req := SyncGroupRequest{Group: "g"}
		d.ScanArgs(t, "member", &req.MemberID)
		d.ScanArgs(t, "gen", &req.Generation)
		req.InstanceID = optString(t, d, "instance")
		req.Protocol = optString(t, d, "protocol")
		var assign []string
		d.MaybeScanArgs(t, "assign", &assign)
		for _, a := range assign {
			m, v, _ := strings.Cut(a, "=")
			req.Assignments = append(req.Assignments, Assignment{MemberID: m, Assignment: []byte(v)})
		}
		return e.effects(e.g.Sync(e.now, req, e.waiter(t, d))) + e.stateLine()
	case "heartbeat":
		req := HeartbeatRequest{Group: "g"}
		d.ScanArgs(t, "member", &req.MemberID)
		d.ScanArgs(t, "gen", &req.Generation)
		req.InstanceID = optString(t, d, "instance")
		return "heartbeat -> " + errName(e.g.Heartbeat(e.now, req)) + "\n" + e.stateLine()
	case "leave":
		req := LeaveGroupRequest{Group: "g"}
		var members, instances []string
		d.MaybeScanArgs(t, "members", &members)
		d.MaybeScanArgs(t, "instances", &instances)
		for _, m := range members {
			id, inst, ok := strings.Cut(m, "/")
			lm := LeaveMember{MemberID: id}
			if ok {
				lm.InstanceID = &inst
			}
			req.Members = append(req.Members, lm)
		}
		for _, i := range instances {
			req.Members = append(req.Members, LeaveMember{InstanceID: &i})
		}
		res, eff, err := e.g.Leave(e.now, req)
		var sb strings.Builder
		if err != nil {
			fmt.Fprintf(&sb, "leave -> %s\n", errName(err))
		}
		for _, r := range res.Members {
			fmt.Fprintf(&sb, "leave %s -> %s\n", r.MemberID, errName(r.Err))
		}
		return sb.String() + e.effects(eff) + e.stateLine()
	case "tick":
		return e.effects(e.g.Tick(e.now)) + e.stateLine()
	case "commit":
		req := OffsetCommitRequest{Group: "g", Generation: -1}
		d.MaybeScanArgs(t, "member", &req.MemberID)
		d.MaybeScanArgs(t, "gen", &req.Generation)
		req.InstanceID = optString(t, d, "instance")
		err := e.g.ValidateCommit(e.now, req)
		if err == nil {
			var offset int64
			d.ScanArgs(t, "offset", &offset)
			var partition int32
			d.MaybeScanArgs(t, "partition", &partition)
			e.g.CommitOffset("t", partition, Offset{Offset: offset, LeaderEpoch: -1, CommitTime: e.now, RecordOffset: e.logEnd})
			e.logEnd++
		}
		return "commit -> " + errName(err) + "\n"
	case "txn-commit":
		req := TxnOffsetCommitRequest{Group: "g", Generation: -1}
		d.ScanArgs(t, "pid", &req.ProducerID)
		d.MaybeScanArgs(t, "member", &req.MemberID)
		d.MaybeScanArgs(t, "gen", &req.Generation)
		req.InstanceID = optString(t, d, "instance")
		err := e.g.ValidateTxnCommit(req)
		if err == nil {
			var offset int64
			var partition int32
			d.ScanArgs(t, "offset", &offset)
			d.MaybeScanArgs(t, "partition", &partition)
			e.g.AddTxnOffset(req.ProducerID, "t", partition, Offset{Offset: offset, LeaderEpoch: -1, CommitTime: e.now, RecordOffset: e.logEnd})
			e.logEnd++
		}
		return "txn-commit -> " + errName(err) + "\n"
	case "end":
		var pid int64
		d.ScanArgs(t, "pid", &pid)
		commit := d.HasArg("commit")
		marker := e.logEnd
		e.logEnd++ // the marker
		return fmt.Sprintf("end -> had-pending=%t\n", e.g.CompleteTxn(pid, commit, marker))
	case "delete-offset":
		var partition int32
		d.MaybeScanArgs(t, "partition", &partition)
		e.logEnd++ // the tombstone
		return fmt.Sprintf("delete-offset -> had-committed=%t\n", e.g.DeleteOffset("t", partition))
	case "fetch":
		// Partitions 0 and 1 of t, as a consumer asks for them.
		req := OffsetFetchRequest{Group: "g", Topics: []OffsetFetchTopic{{Topic: "t", Partitions: []int32{0, 1}}}, RequireStable: d.HasArg("stable")}
		var sb strings.Builder
		for _, ft := range e.g.FetchOffsets(req).Topics {
			for _, p := range ft.Partitions {
				fmt.Fprintf(&sb, "%s/%d=%d %s\n", ft.Topic, p.Partition, p.Offset, errName(p.Err))
			}
		}
		return sb.String()
	case "offsets":
		var sb strings.Builder
		for _, ft := range e.g.FetchOffsets(OffsetFetchRequest{}).Topics {
			for _, p := range ft.Partitions {
				fmt.Fprintf(&sb, "%s/%d=%d\n", ft.Topic, p.Partition, p.Offset)
			}
		}
		return sb.String()
	case "expire":
		var retention int
		d.ScanArgs(t, "retention", &retention)
		exp := e.g.ExpiredOffsets(e.now, time.Duration(retention)*time.Millisecond)
		var out []string
		for _, tp := range exp {
			out = append(out, fmt.Sprintf("%s/%d", tp.Topic, tp.Partition))
		}
		sort.Strings(out)
		return fmt.Sprintf("expired=[%s]\n", strings.Join(out, " "))
	case "deadline":
		dl := e.g.Deadline()
		if dl.IsZero() {
			return "none\n"
		}
		return fmt.Sprintf("%d\n", dl.UnixMilli())
	case "describe":
		desc := e.g.Describe()
		var sb strings.Builder
		fmt.Fprintf(&sb, "state=%s type=%s protocol=%s\n", desc.State, desc.ProtocolType, desc.Protocol)
		for _, m := range desc.Members {
			fmt.Fprintf(&sb, "  %s client=%s metadata=%q assignment=%q\n", m.MemberID, m.ClientID, m.Metadata, m.Assignment)
		}
		return sb.String()
	}
	t.Fatalf("unknown command %s", d.Cmd)
	return ""
}

// TestGroupScripts runs testdata/*.txt; each file starts with "new".
func TestGroupScripts(t *testing.T) {
	datadriven.Walk(t, "testdata/classic", func(t *testing.T, path string) {
		var env *groupEnv
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			if d.Cmd == "new" {
				env = newGroupEnv(d, t)
				return env.stateLine()
			}
			return env.handle(t, d)
		})
	})
}

// TestRequestsToDeadGroupFail checks that every member request to a Dead
// group (deleted, expired or unloaded under the caller) gets
// ErrCoordinatorNotAvailable, before any member or generation check.
func TestRequestsToDeadGroupFail(t *testing.T) {
	now := time.UnixMilli(0)
	cfg := GroupConfig{MinSessionTimeout: time.Second, MaxSessionTimeout: time.Minute, MaxSize: 10,
		NewMemberID: func(clientID string) string { return clientID + "-1" }}
	instance := "i"
	for _, tc := range []struct {
		name string
		call func(g *Group) error
	}{
		{"heartbeat", func(g *Group) error {
			return g.Heartbeat(now, HeartbeatRequest{Group: "g", MemberID: "c-1", Generation: 1})
		}},
		{"heartbeat static", func(g *Group) error {
			return g.Heartbeat(now, HeartbeatRequest{Group: "g", MemberID: "x", InstanceID: &instance, Generation: 9})
		}},
		{"member commit", func(g *Group) error {
			return g.ValidateCommit(now, OffsetCommitRequest{Group: "g", MemberID: "c-1", Generation: 1})
		}},
		{"simple commit", func(g *Group) error {
			return g.ValidateCommit(now, OffsetCommitRequest{Group: "g", Generation: -1})
		}},
		{"sync", func(g *Group) error {
			eff := g.Sync(now, SyncGroupRequest{Group: "g", MemberID: "c-1", Generation: 1}, 7)
			if len(eff.Syncs) != 1 || eff.Syncs[0].Waiter != 7 {
				return fmt.Errorf("sync effects %+v, want one answer for waiter 7", eff)
			}
			return eff.Syncs[0].Err
		}},
		{"join known member", func(g *Group) error {
			eff := g.Join(now, JoinGroupRequest{Group: "g", MemberID: "c-1", ClientID: "c", ProtocolType: "consumer",
				Protocols: []Protocol{{Name: "range"}}, SessionTimeout: 10 * time.Second, RebalanceTimeout: 10 * time.Second}, 7)
			if len(eff.Joins) != 1 || eff.Joins[0].Waiter != 7 {
				return fmt.Errorf("join effects %+v, want one answer for waiter 7", eff)
			}
			return eff.Joins[0].Err
		}},
		{"leave", func(g *Group) error {
			_, _, err := g.Leave(now, LeaveGroupRequest{Group: "g", Members: []LeaveMember{{MemberID: "c-1"}}})
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewGroup("g", cfg, now)
			g.MarkDead(now)
			if err := tc.call(g); !errors.Is(err, ErrCoordinatorNotAvailable) {
				t.Fatalf("got %v, want %v", err, ErrCoordinatorNotAvailable)
			}
		})
	}
}
