package share

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

func testTopics(parts map[string]int32) Topics {
	return func(name string) (TopicInfo, bool) {
		n, ok := parts[name]
		if !ok {
			return TopicInfo{}, false
		}
		return TopicInfo{ID: [16]byte{name[0]}, Name: name, Partitions: n}, true
	}
}

func fmtAssign(a []TopicPartitions) string {
	s := ""
	for _, tp := range a {
		s += fmt.Sprintf("%s%v", tp.Topic, tp.Partitions)
	}
	return s
}

// TestShareGroupMembership walks a share group through joins, a full
// heartbeat, a stale epoch, a leave and a session expiry.
// Reference: KIP-932, "Share group membership".
func TestShareGroupMembership(t *testing.T) {
	g := NewGroup("g", GroupConfig{HeartbeatInterval: 5 * time.Second, SessionTimeout: 45 * time.Second})
	parts := map[string]int32{"t": 2}
	topics := testTopics(parts)
	now := time.UnixMilli(0)
	hb := func(id string, epoch int32, subs []string) (HeartbeatResult, error) {
		return g.Heartbeat(HeartbeatRequest{MemberID: id, MemberEpoch: epoch, Topics: subs}, now, topics)
	}
	a, err := hb("a", 0, []string{"t"})
	if err != nil || a.MemberEpoch != 1 || !a.HasAssignment || fmtAssign(a.Assignment) != "t[0 1]" {
		t.Fatalf("join a: %+v %v", a, err)
	}
	if r, err := hb("a", 1, nil); err != nil || r.HasAssignment {
		t.Fatalf("steady heartbeat: %+v %v", r, err)
	}
	b, err := hb("b", 0, []string{"t"})
	if err != nil || b.MemberEpoch != 2 || fmtAssign(b.Assignment) != "t[1]" {
		t.Fatalf("join b: %+v %v", b, err)
	}
	// a, still at its previous epoch, learns the new one and its
	// smaller assignment.
	if r, err := hb("a", 1, nil); err != nil || r.MemberEpoch != 2 || !r.HasAssignment || fmtAssign(r.Assignment) != "t[0]" {
		t.Fatalf("a at its previous epoch: %+v %v", r, err)
	}
	// An epoch ahead of the member's is fenced.
	if _, err := hb("a", 3, nil); !errors.Is(err, ErrFencedMemberEpoch) {
		t.Fatalf("a ahead of its epoch: %v", err)
	}
	// A heartbeat at epoch 0 rejoins with the same id.
	if r, err := hb("a", 0, []string{"t"}); err != nil || r.MemberEpoch != 2 || fmtAssign(r.Assignment) != "t[0]" {
		t.Fatalf("rejoin a: %+v %v", r, err)
	}
	// Three members on two partitions: partition 0 is shared.
	if r, err := hb("c", 0, []string{"t"}); err != nil || fmtAssign(r.Assignment) != "t[0]" || r.MemberEpoch != 3 {
		t.Fatalf("join c: %+v %v", r, err)
	}
	if _, err := hb("zz", 5, nil); !errors.Is(err, ErrUnknownMemberID) {
		t.Fatalf("unknown member: %v", err)
	}
	// The joins after b did not move it: it is still at 2, and moves to
	// the group's epoch at its own heartbeat.
	if r, err := hb("b", 2, nil); err != nil || r.MemberEpoch != 3 || r.HasAssignment {
		t.Fatalf("b behind the target: %+v %v", r, err)
	}
	if r, err := hb("d", 0, []string{"t"}); err != nil || r.MemberEpoch != 4 {
		t.Fatalf("join d: %+v %v", r, err)
	}
	if r, err := hb("b", 3, nil); err != nil || r.MemberEpoch != 4 {
		t.Fatalf("b at its epoch: %+v %v", r, err)
	}
	// The answer was lost: b comes again with its previous epoch.
	if r, err := hb("b", 3, nil); err != nil || r.MemberEpoch != 4 || !r.HasAssignment {
		t.Fatalf("b at its previous epoch: %+v %v", r, err)
	}
	// a moves from 2 to 4; 1 is then neither its epoch nor its
	// previous one.
	if r, err := hb("a", 2, nil); err != nil || r.MemberEpoch != 4 {
		t.Fatalf("a from 2: %+v %v", r, err)
	}
	if _, err := hb("a", 1, nil); !errors.Is(err, ErrFencedMemberEpoch) {
		t.Fatalf("a two epochs behind: %v", err)
	}
	if _, err := hb("d", -1, nil); err != nil {
		t.Fatal(err)
	}
	if r, err := hb("c", -1, nil); err != nil || r.MemberEpoch != -1 {
		t.Fatalf("leave: %+v %v", r, err)
	}
	// More partitions: a new epoch and assignment.
	parts["t"] = 4
	g.Refresh(topics)
	r, err := hb("a", 4, nil)
	if err != nil || r.MemberEpoch != g.Epoch() || fmtAssign(r.Assignment) != "t[0 2]" {
		t.Fatalf("after partitions added: %+v %v (epoch %d)", r, err, g.Epoch())
	}
	now = now.Add(40 * time.Second)
	if _, err := hb("a", r.MemberEpoch, nil); err != nil {
		t.Fatal(err)
	}
	now = now.Add(10 * time.Second)
	if gone := g.Expire(now, topics); fmt.Sprint(gone) != "[b]" {
		t.Fatalf("expired %v", gone)
	}
	if r, err := hb("a", 0, []string{"t"}); err != nil || fmtAssign(r.Assignment) != "t[0 1 2 3]" {
		t.Fatalf("alone: %+v %v", r, err)
	}
}

func TestSimpleAssignGivesEveryPartitionAndEveryMember(t *testing.T) {
	for _, tc := range []struct {
		members int
		parts   int32
		want    string
	}{
		{1, 3, "m0:t[0 1 2]"},
		{2, 3, "m0:t[0 2] m1:t[1]"},
		{4, 2, "m0:t[0] m1:t[1] m2:t[0] m3:t[1]"},
		{3, 1, "m0:t[0] m1:t[0] m2:t[0]"},
	} {
		var ms []string
		for i := 0; i < tc.members; i++ {
			ms = append(ms, fmt.Sprintf("m%d", i))
		}
		got := SimpleAssign(ms, func(string) []string { return []string{"t"} }, map[string]TopicInfo{"t": {Name: "t", Partitions: tc.parts}})
		s := ""
		for i, m := range ms {
			if i > 0 {
				s += " "
			}
			s += m + ":" + fmtAssign(got[m])
		}
		if s != tc.want {
			t.Errorf("%d members, %d partitions: %s, want %s", tc.members, tc.parts, s, tc.want)
		}
	}
}
