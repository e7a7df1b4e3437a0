package cluster

import (
	"errors"
	"fmt"
	"slices"
	"testing"
)

// reassignImage is an image with brokers 0..n-1 live and topic "t" of one
// partition with replicas and state st.
func reassignImage(n int32, replicas []int32, st PartitionState) *Image {
	img := &Image{Brokers: map[int32]Broker{}, Topics: map[string]*Topic{}}
	for id := range n {
		img.Brokers[id] = Broker{NodeID: id}
	}
	img.Topics["t"] = &Topic{Name: "t", Replicas: [][]int32{replicas}, Partitions: []PartitionState{st}, ModRevision: 42}
	return img
}

func fmtUpdate(u PartitionUpdate) string {
	s := u.State
	return fmt.Sprintf("replicas=%v adding=%v removing=%v leader=%d epoch=%d isr=%v pepoch=%d",
		u.Replicas, s.AddingReplicas, s.RemovingReplicas, s.Leader, s.LeaderEpoch, s.ISR, s.PartitionEpoch)
}

// TestPlanReassignment covers starting, changing and cancelling a
// reassignment. Reference: KIP-455 (replicas = target + removing; a new
// target is relative to the original replicas; cancel restores them).
func TestPlanReassignment(t *testing.T) {
	cases := []struct {
		name     string
		brokers  int32
		replicas []int32
		st       PartitionState
		target   []int32
		want     string // "" = no change
		err      error
	}{
		{"move one replica", 3, []int32{0, 1}, PartitionState{Leader: 0, LeaderEpoch: 2, ISR: []int32{0, 1}, PartitionEpoch: 5},
			[]int32{1, 2}, "replicas=[1 2 0] adding=[2] removing=[0] leader=0 epoch=3 isr=[0 1] pepoch=6", nil},
		{"grow the replication factor", 3, []int32{0}, PartitionState{Leader: 0, ISR: []int32{0}},
			[]int32{0, 1, 2}, "replicas=[0 1 2] adding=[1 2] removing=[] leader=0 epoch=1 isr=[0] pepoch=1", nil},
		{"shrink: nothing to add", 3, []int32{0, 1, 2}, PartitionState{Leader: 1, ISR: []int32{0, 1, 2}},
			[]int32{1}, "replicas=[1 0 2] adding=[] removing=[0 2] leader=1 epoch=0 isr=[0 1 2] pepoch=1", nil},
		{"reorder only: done at once", 3, []int32{0, 1}, PartitionState{Leader: 0, LeaderEpoch: 4, ISR: []int32{0, 1}, PartitionEpoch: 2},
			[]int32{1, 0}, "replicas=[1 0] adding=[] removing=[] leader=0 epoch=4 isr=[0 1] pepoch=3", nil},
		{"same as now: no change", 3, []int32{0, 1}, PartitionState{Leader: 0, ISR: []int32{0, 1}},
			[]int32{0, 1}, "", nil},
		{"new target replaces the one in progress", 4,
			[]int32{1, 2, 0}, PartitionState{Leader: 0, LeaderEpoch: 3, ISR: []int32{0, 1, 2}, PartitionEpoch: 6, AddingReplicas: []int32{2}, RemovingReplicas: []int32{0}},
			[]int32{1, 3}, "replicas=[1 3 0] adding=[3] removing=[0] leader=0 epoch=4 isr=[0 1] pepoch=7", nil},
		{"cancel restores the original replicas", 3,
			[]int32{1, 2, 0}, PartitionState{Leader: 0, LeaderEpoch: 3, ISR: []int32{0, 1}, PartitionEpoch: 6, AddingReplicas: []int32{2}, RemovingReplicas: []int32{0}},
			nil, "replicas=[1 0] adding=[] removing=[] leader=0 epoch=4 isr=[0 1] pepoch=7", nil},
		{"cancel moves a leader that was being added", 3,
			[]int32{2, 0}, PartitionState{Leader: 2, LeaderEpoch: 3, ISR: []int32{0, 2}, PartitionEpoch: 6, AddingReplicas: []int32{2}, RemovingReplicas: []int32{0}},
			nil, "replicas=[0] adding=[] removing=[] leader=0 epoch=4 isr=[0] pepoch=7", nil},
		{"cancel of none", 3, []int32{0, 1}, PartitionState{Leader: 0, ISR: []int32{0, 1}}, nil, "", ErrNoReassignmentInProgress},
		{"empty target", 3, []int32{0, 1}, PartitionState{Leader: 0, ISR: []int32{0, 1}}, []int32{}, "", ErrInvalidReplicaAssignment},
		{"duplicate broker", 3, []int32{0, 1}, PartitionState{Leader: 0, ISR: []int32{0, 1}}, []int32{1, 2, 1}, "", ErrInvalidReplicaAssignment},
		{"unknown broker", 3, []int32{0, 1}, PartitionState{Leader: 0, ISR: []int32{0, 1}}, []int32{1, 7}, "", ErrInvalidReplicaAssignment},
		{"a current replica that is down may stay", 2, []int32{0, 5}, PartitionState{Leader: 0, ISR: []int32{0}},
			[]int32{5, 1}, "replicas=[5 1 0] adding=[1] removing=[0] leader=0 epoch=1 isr=[0] pepoch=1", nil},
		{"cancel that leaves no in-sync replica", 3,
			[]int32{2, 0}, PartitionState{Leader: 2, ISR: []int32{2}, AddingReplicas: []int32{2}, RemovingReplicas: []int32{0}},
			nil, "", ErrInvalidReplicaAssignment},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			img := reassignImage(c.brokers, c.replicas, c.st)
			u, changed, err := PlanReassignment(img, "t", 0, c.target)
			if !errors.Is(err, c.err) || (c.err != nil && err == nil) {
				t.Fatalf("err %v, want %v", err, c.err)
			}
			got := ""
			if changed {
				got = fmtUpdate(u)
				if u.TopicRevision != 42 || u.Topic != "t" || u.Partition != 0 {
					t.Fatalf("update for %s-%d at topic revision %d", u.Topic, u.Partition, u.TopicRevision)
				}
			}
			if got != c.want {
				t.Fatalf("got  %q\nwant %q", got, c.want)
			}
		})
	}
	if _, _, err := PlanReassignment(reassignImage(3, []int32{0}, PartitionState{}), "t", 1, []int32{1}); !errors.Is(err, ErrUnknownPartition) {
		t.Fatalf("unknown partition: %v", err)
	}
}

// TestDecideFinishesReassignment covers the controller's completion of a
// reassignment: only once every adding replica is in the ISR; the ISR
// loses the removed replicas; a removed leader hands over.
func TestDecideFinishesReassignment(t *testing.T) {
	cases := []struct {
		name     string
		brokers  int32
		replicas []int32
		st       PartitionState
		shutting int32  // a broker in controlled shutdown, or -1
		want     string // "" = no change
	}{
		{"adding replica not in sync yet: wait", 3,
			[]int32{1, 2, 0}, PartitionState{Leader: 0, LeaderEpoch: 3, ISR: []int32{0, 1}, PartitionEpoch: 6, AddingReplicas: []int32{2}, RemovingReplicas: []int32{0}},
			-1, ""},
		{"adding replica in sync: done, removed leader hands over", 3,
			[]int32{1, 2, 0}, PartitionState{Leader: 0, LeaderEpoch: 3, ISR: []int32{0, 1, 2}, PartitionEpoch: 7, AddingReplicas: []int32{2}, RemovingReplicas: []int32{0}}, -1,
			"replicas=[1 2] adding=[] removing=[] leader=1 epoch=4 isr=[1 2] pepoch=8"},
		{"leader stays when it is a target replica", 3,
			[]int32{1, 2, 0}, PartitionState{Leader: 1, LeaderEpoch: 3, ISR: []int32{0, 1, 2}, PartitionEpoch: 7, AddingReplicas: []int32{2}, RemovingReplicas: []int32{0}}, -1,
			"replicas=[1 2] adding=[] removing=[] leader=1 epoch=4 isr=[1 2] pepoch=8"},
		{"shrink with nothing to add finishes at once", 3,
			[]int32{1, 0, 2}, PartitionState{Leader: 1, ISR: []int32{0, 1, 2}, RemovingReplicas: []int32{0, 2}}, -1,
			"replicas=[1] adding=[] removing=[] leader=1 epoch=1 isr=[1] pepoch=1"},
		{"growth keeps the leader", 3,
			[]int32{0, 1, 2}, PartitionState{Leader: 0, LeaderEpoch: 1, ISR: []int32{0, 1, 2}, PartitionEpoch: 2, AddingReplicas: []int32{1, 2}}, -1,
			"replicas=[0 1 2] adding=[] removing=[] leader=0 epoch=1 isr=[0 1 2] pepoch=3"},
		{"one of two adding replicas in sync: wait", 4,
			[]int32{2, 3, 0}, PartitionState{Leader: 0, ISR: []int32{0, 2}, AddingReplicas: []int32{2, 3}, RemovingReplicas: []int32{0}}, -1,
			""},
		{"removed leader with no live target in sync: wait, the target in controlled shutdown leaves the ISR", 3,
			[]int32{1, 0}, PartitionState{Leader: 0, ISR: []int32{0, 1}, RemovingReplicas: []int32{0}},
			1, "replicas=[] adding=[] removing=[0] leader=0 epoch=0 isr=[0] pepoch=1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			img := reassignImage(c.brokers, c.replicas, c.st)
			if c.shutting >= 0 {
				img.Brokers[c.shutting] = Broker{NodeID: c.shutting, ShuttingDown: true}
			}
			ups := Decide(img, ElectionPolicy{})
			got := ""
			if len(ups) > 1 {
				t.Fatalf("%d updates for one partition", len(ups))
			}
			if len(ups) == 1 {
				got = fmtUpdate(ups[0])
				if ups[0].Replicas != nil && ups[0].TopicRevision != 42 {
					t.Fatalf("topic revision %d, want 42", ups[0].TopicRevision)
				}
			}
			if got != c.want {
				t.Fatalf("got  %q\nwant %q", got, c.want)
			}
		})
	}
}

// TestReassignPartitionAgainstEtcd runs a reassignment through etcd: the
// topic's replicas and the partition state change in one write, the
// controller finishes it once the adding replica is in the ISR, and a
// cancel restores the original replicas.
func TestReassignPartitionAgainstEtcd(t *testing.T) {
	ctx := testCtx(t)
	c0 := openTest(t, 0, t.TempDir())
	c1 := openTest(t, 1, t.TempDir(), c0.ClientURL())
	waitImage(t, c0, "both brokers", func(img *Image) bool { return len(img.Brokers) == 2 })
	waitImage(t, c1, "both brokers", func(img *Image) bool { return len(img.Brokers) == 2 })
	if _, err := c0.CreateTopic(ctx, "mv", 1, 1, nil); err != nil {
		t.Fatal(err)
	}
	from := c0.Image().Topics["mv"].Replicas[0][0]
	to := 1 - from
	waitImage(t, c1, "the topic", func(img *Image) bool { return img.Topics["mv"] != nil })

	if err := c1.ReassignPartition(ctx, "mv", 0, []int32{to}); err != nil {
		t.Fatal(err)
	}
	img := c1.Image()
	tp := img.Topics["mv"]
	st := tp.Partitions[0]
	if !slices.Equal(tp.Replicas[0], []int32{to, from}) || !slices.Equal(st.AddingReplicas, []int32{to}) ||
		!slices.Equal(st.RemovingReplicas, []int32{from}) || st.LeaderEpoch != 1 || st.Leader != from {
		t.Fatalf("after reassign: replicas %v state %+v", tp.Replicas[0], st)
	}
	if rs := img.Reassignments(); len(rs) != 1 || rs[0].Topic != "mv" || !slices.Equal(rs[0].AddingReplicas, []int32{to}) {
		t.Fatalf("Reassignments() = %+v", rs)
	}
	// No replica manager runs here, so nothing joins the ISR: the
	// controller waits. Cancel restores the original replicas.
	if err := c1.ReassignPartition(ctx, "mv", 0, nil); err != nil {
		t.Fatal(err)
	}
	tp = c1.Image().Topics["mv"]
	if st := tp.Partitions[0]; !slices.Equal(tp.Replicas[0], []int32{from}) || st.Reassigning() || st.LeaderEpoch != 2 {
		t.Fatalf("after cancel: replicas %v state %+v", tp.Replicas[0], st)
	}
	if err := c1.ReassignPartition(ctx, "mv", 0, nil); !errors.Is(err, ErrNoReassignmentInProgress) {
		t.Fatalf("second cancel: %v", err)
	}

	// Start again, then put the new replica in the ISR as its leader
	// would: the controller finishes the reassignment.
	if err := c1.ReassignPartition(ctx, "mv", 0, []int32{to}); err != nil {
		t.Fatal(err)
	}
	st, _ = c1.Image().Partition("mv", 0)
	st.ISR = []int32{from, to}
	st.PartitionEpoch++
	if _, err := c1.AlterPartition(ctx, "mv", 0, st); err != nil {
		t.Fatal(err)
	}
	img = waitImage(t, c1, "the reassignment to finish", func(img *Image) bool {
		st, _ := img.Partition("mv", 0)
		return !st.Reassigning()
	})
	tp = img.Topics["mv"]
	if st := tp.Partitions[0]; !slices.Equal(tp.Replicas[0], []int32{to}) || st.Leader != to ||
		!slices.Equal(st.ISR, []int32{to}) || st.LeaderEpoch != 4 {
		t.Fatalf("after completion: replicas %v state %+v", tp.Replicas[0], st)
	}
	if len(img.Reassignments()) != 0 {
		t.Fatalf("Reassignments() = %+v after completion", img.Reassignments())
	}

	// A write based on a stale topic revision loses.
	u, changed, err := PlanReassignment(img, "mv", 0, []int32{from})
	if err != nil || !changed {
		t.Fatal(changed, err)
	}
	u.TopicRevision--
	if _, err := c1.AlterReplicas(ctx, u); !errors.Is(err, ErrInvalidUpdateVersion) {
		t.Fatalf("stale AlterReplicas: %v", err)
	}
}
