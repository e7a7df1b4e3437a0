package share

import (
	"errors"
	"reflect"
	"testing"
	"time"
)

// replayInto encodes recs, decodes them and applies them to r, as the
// loader does with __consumer_offsets.
func replayInto(t *testing.T, r *Group, recs []GroupRecord) {
	t.Helper()
	for _, rec := range recs {
		k, v := rec.KV()
		got, err := DecodeGroupRecord(k, v)
		if err != nil {
			t.Fatalf("decode %+v: %v", rec, err)
		}
		r.ApplyRecord(got)
	}
}

// persisted is what of a member survives a reload.
func persisted(ms []Member) []Member {
	out := make([]Member, len(ms))
	for i, m := range ms {
		out[i] = Member{ID: m.ID, Epoch: m.Epoch, RackID: m.RackID, ClientID: m.ClientID, ClientHost: m.ClientHost,
			Topics: m.Topics, Assignment: m.Assignment, previousEpoch: m.previousEpoch, target: m.target}
	}
	return out
}

// TestShareGroupRecordsRebuildTheGroup runs joins, a subscription change,
// a leave and an expiry, writes the records of every change, and checks
// that a group replayed from them has the same members, epochs and
// assignments, and that its members continue at their epochs.
// Reference: Kafka GroupMetadataManager.replay (share group records).
func TestShareGroupRecordsRebuildTheGroup(t *testing.T) {
	cfg := GroupConfig{HeartbeatInterval: time.Second, SessionTimeout: 10 * time.Second}
	g := NewGroup("g", cfg)
	topics := testTopics(map[string]int32{"t": 3, "u": 1})
	now := time.UnixMilli(0)
	replica := NewGroup("g", cfg)
	rack := "r1"
	steps := []HeartbeatRequest{
		{MemberID: "a", MemberEpoch: 0, Topics: []string{"t"}, ClientID: "ca", ClientHost: "/h1", RackID: &rack},
		{MemberID: "b", MemberEpoch: 0, Topics: []string{"t", "u"}, ClientID: "cb", ClientHost: "/h2"},
		{MemberID: "c", MemberEpoch: 0, Topics: []string{"u"}},
		// b is still at its join epoch: the joins after it did not
		// move it.
		{MemberID: "b", MemberEpoch: 2, Topics: []string{"t"}},
		{MemberID: "c", MemberEpoch: -1},
		// a catches up with the target assignment, from epoch 1.
		{MemberID: "a", MemberEpoch: 1, ClientID: "ca", ClientHost: "/h1", RackID: &rack},
	}
	for i, req := range steps {
		prev := g.Clone()
		if _, err := g.Heartbeat(req, now, topics); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		recs := g.RecordsSince(prev)
		if len(recs) == 0 {
			t.Fatalf("step %d changed the group without records", i)
		}
		replayInto(t, replica, recs)
	}
	// b is behind the target (its step came before c left): it is
	// replayed so, and moves at its next heartbeat.
	if m := g.Members()[1]; m.ID != "b" || m.Epoch == g.Epoch() {
		t.Fatalf("b: %+v at group epoch %d", m, g.Epoch())
	}
	prev := g.Clone()
	if _, err := g.Heartbeat(HeartbeatRequest{MemberID: "b", MemberEpoch: g.Members()[1].Epoch, ClientID: "cb", ClientHost: "/h2"}, now, topics); err != nil {
		t.Fatal(err)
	}
	replayInto(t, replica, g.RecordsSince(prev))
	// A steady heartbeat writes nothing.
	prev = g.Clone()
	if _, err := g.Heartbeat(HeartbeatRequest{MemberID: "a", MemberEpoch: g.Epoch(), ClientID: "ca", ClientHost: "/h1", RackID: &rack}, now, topics); err != nil {
		t.Fatal(err)
	}
	if recs := g.RecordsSince(prev); len(recs) != 0 {
		t.Fatalf("a steady heartbeat wrote %+v", recs)
	}
	replica.Loaded(now, topics)
	if replica.Epoch() != g.Epoch() || !reflect.DeepEqual(persisted(replica.Members()), persisted(g.Members())) {
		t.Fatalf("replayed epoch %d members %+v, want %d %+v", replica.Epoch(), replica.Members(), g.Epoch(), g.Members())
	}
	// The whole group's records rebuild it too.
	whole := NewGroup("g", cfg)
	replayInto(t, whole, g.Records())
	whole.Loaded(now, topics)
	if whole.Epoch() != g.Epoch() || !reflect.DeepEqual(persisted(whole.Members()), persisted(g.Members())) {
		t.Fatalf("Records rebuilt %d %+v", whole.Epoch(), whole.Members())
	}
	// After the load the members continue at their epochs, and are told
	// their assignment once more; nothing is reassigned.
	for _, m := range g.Members() {
		before := replica.Clone()
		res, err := replica.Heartbeat(HeartbeatRequest{MemberID: m.ID, MemberEpoch: m.Epoch, ClientID: m.ClientID, ClientHost: m.ClientHost}, now.Add(time.Second), topics)
		if err != nil || res.MemberEpoch != m.Epoch || !res.HasAssignment || fmtAssign(res.Assignment) != fmtAssign(m.Assignment) {
			t.Fatalf("member %s after the load: %+v %v", m.ID, res, err)
		}
		if recs := replica.RecordsSince(before); len(recs) != 0 {
			t.Fatalf("a heartbeat after the load wrote %+v", recs)
		}
	}
	// The sessions restarted at the load.
	if gone := replica.Expire(now.Add(9*time.Second), topics); len(gone) != 0 {
		t.Fatalf("expired %v before the session timeout", gone)
	}
	// An epoch the member never had is still fenced.
	if _, err := replica.Heartbeat(HeartbeatRequest{MemberID: "a", MemberEpoch: replica.Epoch() + 1}, now, topics); !errors.Is(err, ErrFencedMemberEpoch) {
		t.Fatalf("stale epoch after the load: %v", err)
	}
	// Tombstones delete the group.
	replayInto(t, replica, replica.Tombstones())
	if !replica.Empty() || replica.Epoch() != 0 {
		t.Fatalf("after the tombstones: epoch %d members %+v", replica.Epoch(), replica.Members())
	}
}

// TestShareGroupLoadedReassignsWhenTopicsChanged: a partition added while
// no coordinator served the group makes the first heartbeat after the
// load reassign at a new epoch.
func TestShareGroupLoadedReassignsWhenTopicsChanged(t *testing.T) {
	cfg := GroupConfig{HeartbeatInterval: time.Second, SessionTimeout: 10 * time.Second}
	g := NewGroup("g", cfg)
	now := time.UnixMilli(0)
	if _, err := g.Heartbeat(HeartbeatRequest{MemberID: "a", Topics: []string{"t"}}, now, testTopics(map[string]int32{"t": 1})); err != nil {
		t.Fatal(err)
	}
	r := NewGroup("g", cfg)
	replayInto(t, r, g.Records())
	topics := testTopics(map[string]int32{"t": 2})
	r.Loaded(now, topics)
	res, err := r.Heartbeat(HeartbeatRequest{MemberID: "a", MemberEpoch: 1}, now, topics)
	if err != nil || res.MemberEpoch != 2 || fmtAssign(res.Assignment) != "t[0 1]" {
		t.Fatalf("after the load: %+v %v", res, err)
	}
}

func TestShareGroupRecordDecodeRefusesGarbage(t *testing.T) {
	k, v := GroupRecord{Kind: RecordMemberMetadata, Group: "g", Member: "m", ClientID: "c", Topics: []string{"t"}}.KV()
	for i := 0; i < len(v); i++ {
		if _, err := DecodeGroupRecord(k, v[:i]); err == nil {
			t.Fatalf("a value cut at %d decoded", i)
		}
	}
	if _, err := DecodeGroupRecord(k[:3], v); err == nil {
		t.Fatal("a short key decoded")
	}
	sk, sv := GroupRecord{Kind: RecordStatePartitionMetadata, Group: "g",
		Initialized: []TopicPartitions{{TopicID: [16]byte{1}, Topic: "t", Partitions: []int32{0, 1}}},
		Deleting:    []TopicPartitions{{TopicID: [16]byte{2}, Topic: "u"}}}.KV()
	got, err := DecodeGroupRecord(sk, sv)
	if err != nil || len(got.Initialized) != 1 || got.Initialized[0].Topic != "t" || len(got.Initialized[0].Partitions) != 2 ||
		len(got.Deleting) != 1 || got.Deleting[0].Topic != "u" {
		t.Fatalf("state partition metadata %+v %v", got, err)
	}
}
