package cluster

import (
	"fmt"
	"testing"
)

func imageWith(brokers map[int32]bool, replicas []int32, st PartitionState, configs map[string]string) *Image {
	img := &Image{Brokers: map[int32]Broker{}, Topics: map[string]*Topic{}}
	for id, shutting := range brokers {
		img.Brokers[id] = Broker{NodeID: id, ShuttingDown: shutting, Incarnation: fmt.Sprintf("i%d", id)}
	}
	img.Topics["t"] = &Topic{Name: "t", Replicas: [][]int32{replicas}, Partitions: []PartitionState{st}, Configs: configs}
	return img
}

// TestDecide covers the controller's election rules. Reference: KIP-106
// (unclean election off by default); Kafka's controller elects the first
// live in-sync replica in assignment order.
func TestDecide(t *testing.T) {
	live3 := map[int32]bool{0: false, 1: false, 2: false}
	cases := []struct {
		name    string
		brokers map[int32]bool
		st      PartitionState
		pol     ElectionPolicy
		want    string // "" = no change
	}{
		{"all live: nothing to do", live3, PartitionState{Leader: 0, ISR: []int32{0, 1, 2}}, ElectionPolicy{}, ""},
		{"leader dies: next in-sync replica in assignment order",
			map[int32]bool{1: false, 2: false}, PartitionState{Leader: 0, LeaderEpoch: 3, PartitionEpoch: 7, ISR: []int32{0, 2, 1}}, ElectionPolicy{},
			"leader=1 epoch=4 isr=[2 1] pepoch=8 inc=i1"},
		{"leader left its own ISR (corrupt log): the first other in-sync replica leads",
			live3, PartitionState{Leader: 0, LeaderEpoch: 3, PartitionEpoch: 8, ISR: []int32{2, 1}}, ElectionPolicy{},
			"leader=1 epoch=4 isr=[2 1] pepoch=9 inc=i1"},
		{"leader left its own ISR but no other member is live: it stays",
			map[int32]bool{0: false}, PartitionState{Leader: 0, LeaderEpoch: 3, PartitionEpoch: 8, ISR: []int32{1}}, ElectionPolicy{},
			""},
		{"follower dies: leaves the ISR, leader stays",
			map[int32]bool{0: false, 1: false}, PartitionState{Leader: 0, LeaderEpoch: 3, PartitionEpoch: 7, ISR: []int32{0, 1, 2}}, ElectionPolicy{},
			"leader=0 epoch=3 isr=[0 1] pepoch=8"},
		{"no live in-sync replica: offline, ISR kept",
			map[int32]bool{2: false}, PartitionState{Leader: 0, LeaderEpoch: 3, PartitionEpoch: 7, ISR: []int32{0, 1}}, ElectionPolicy{},
			"leader=-1 epoch=4 isr=[0 1] pepoch=8"},
		{"offline partition: in-sync replica returns and is elected",
			map[int32]bool{1: false}, PartitionState{Leader: -1, LeaderEpoch: 4, PartitionEpoch: 8, ISR: []int32{0, 1}}, ElectionPolicy{},
			"leader=1 epoch=5 isr=[1] pepoch=9 inc=i1"},
		{"offline, only an out-of-sync replica live, unclean off: stays offline",
			map[int32]bool{2: false}, PartitionState{Leader: -1, LeaderEpoch: 4, PartitionEpoch: 8, ISR: []int32{0, 1}}, ElectionPolicy{},
			""},
		{"unclean on: out-of-sync replica elected with an ISR of itself",
			map[int32]bool{2: false}, PartitionState{Leader: -1, LeaderEpoch: 4, PartitionEpoch: 8, ISR: []int32{0, 1}},
			ElectionPolicy{Unclean: func(string) bool { return true }},
			"leader=2 epoch=5 isr=[2] pepoch=9 inc=i2"},
		{"controlled shutdown moves leadership and leaves the ISR",
			map[int32]bool{0: true, 1: false, 2: false}, PartitionState{Leader: 0, LeaderEpoch: 1, PartitionEpoch: 1, ISR: []int32{0, 1, 2}}, ElectionPolicy{},
			"leader=1 epoch=2 isr=[1 2] pepoch=2 inc=i1"},
		{"controlled shutdown with no other in-sync replica keeps the leader",
			map[int32]bool{0: true, 1: false}, PartitionState{Leader: 0, LeaderEpoch: 1, PartitionEpoch: 1, ISR: []int32{0}}, ElectionPolicy{},
			""},
		{"controlled shutdown of a follower: it leaves the ISR, leader stays",
			map[int32]bool{0: false, 1: false, 2: true}, PartitionState{Leader: 0, LeaderEpoch: 3, PartitionEpoch: 7, ISR: []int32{0, 2, 1}}, ElectionPolicy{},
			"leader=0 epoch=3 isr=[0 1] pepoch=8"},
		{"controlled shutdown of the only follower in sync: the ISR shrinks to the leader",
			map[int32]bool{0: false, 1: true, 2: false}, PartitionState{Leader: 0, LeaderEpoch: 3, PartitionEpoch: 7, ISR: []int32{0, 1}}, ElectionPolicy{},
			"leader=0 epoch=3 isr=[0] pepoch=8"},
		{"leader and follower both shutting down: the kept leader keeps only itself",
			map[int32]bool{0: true, 1: true, 2: false}, PartitionState{Leader: 0, LeaderEpoch: 3, PartitionEpoch: 7, ISR: []int32{0, 1}}, ElectionPolicy{},
			"leader=0 epoch=3 isr=[0] pepoch=8"},
		{"offline partition: an in-sync replica shutting down is not elected",
			map[int32]bool{1: true, 2: false}, PartitionState{Leader: -1, LeaderEpoch: 4, PartitionEpoch: 8, ISR: []int32{0, 1}}, ElectionPolicy{},
			""},
		{"preferred replica back in sync takes over",
			live3, PartitionState{Leader: 1, LeaderEpoch: 4, PartitionEpoch: 9, ISR: []int32{1, 2, 0}}, ElectionPolicy{Preferred: true},
			"leader=0 epoch=5 isr=[1 2 0] pepoch=10 inc=i0"},
		{"leader restarted (new incarnation): elected again at a new epoch",
			live3, PartitionState{Leader: 0, LeaderEpoch: 3, PartitionEpoch: 7, ISR: []int32{0, 1, 2}, LeaderIncarnation: "before"}, ElectionPolicy{},
			"leader=0 epoch=4 isr=[0 1 2] pepoch=8 inc=i0"},
		{"leader restarted while a follower is gone",
			map[int32]bool{0: false, 1: false}, PartitionState{Leader: 0, LeaderEpoch: 3, PartitionEpoch: 7, ISR: []int32{0, 1, 2}, LeaderIncarnation: "before"}, ElectionPolicy{},
			"leader=0 epoch=4 isr=[0 1] pepoch=8 inc=i0"},
		{"leader's incarnation unchanged: nothing to do",
			live3, PartitionState{Leader: 0, LeaderEpoch: 3, PartitionEpoch: 7, ISR: []int32{0, 1, 2}, LeaderIncarnation: "i0"}, ElectionPolicy{},
			""},
		{"preferred replica not in sync: no move",
			live3, PartitionState{Leader: 1, LeaderEpoch: 4, PartitionEpoch: 9, ISR: []int32{1, 2}}, ElectionPolicy{Preferred: true},
			""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ups := Decide(imageWith(c.brokers, []int32{0, 1, 2}, c.st, nil), c.pol)
			got := ""
			if len(ups) > 1 {
				t.Fatalf("%d updates for one partition", len(ups))
			}
			if len(ups) == 1 {
				s := ups[0].State
				got = fmt.Sprintf("leader=%d epoch=%d isr=%v pepoch=%d", s.Leader, s.LeaderEpoch, s.ISR, s.PartitionEpoch)
				if s.LeaderIncarnation != c.st.LeaderIncarnation {
					got += " inc=" + s.LeaderIncarnation
				}
			}
			if got != c.want {
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}
}

// TestDecisionReasonNamesWhyTheControllerChangedAPartition checks the
// reason the controller logs with each decision.
func TestDecisionReasonNamesWhyTheControllerChangedAPartition(t *testing.T) {
	live3 := map[int32]bool{0: false, 1: false, 2: false}
	cases := []struct {
		name    string
		brokers map[int32]bool
		st      PartitionState
		pol     ElectionPolicy
		want    string
	}{
		{"leader dies", map[int32]bool{1: false, 2: false}, PartitionState{Leader: 0, ISR: []int32{0, 1, 2}}, ElectionPolicy{}, "leader_failed"},
		{"follower dies", map[int32]bool{0: false, 1: false}, PartitionState{Leader: 0, ISR: []int32{0, 1, 2}}, ElectionPolicy{}, "isr_shrink_unregistered"},
		{"no live in-sync replica", map[int32]bool{2: false}, PartitionState{Leader: 0, ISR: []int32{0, 1}}, ElectionPolicy{}, "leader_offline"},
		{"offline partition gets a leader", map[int32]bool{1: false}, PartitionState{Leader: -1, ISR: []int32{0, 1}}, ElectionPolicy{}, "leader_elected"},
		{"unclean", map[int32]bool{2: false}, PartitionState{Leader: -1, ISR: []int32{0, 1}}, ElectionPolicy{Unclean: func(string) bool { return true }}, "unclean_election"},
		{"controlled shutdown", map[int32]bool{0: true, 1: false, 2: false}, PartitionState{Leader: 0, ISR: []int32{0, 1, 2}}, ElectionPolicy{}, "controlled_shutdown"},
		{"preferred", live3, PartitionState{Leader: 1, ISR: []int32{1, 2, 0}}, ElectionPolicy{Preferred: true}, "preferred_leader"},
		{"restarted", live3, PartitionState{Leader: 0, ISR: []int32{0, 1, 2}, LeaderIncarnation: "before"}, ElectionPolicy{}, "leader_restarted"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			img := imageWith(c.brokers, []int32{0, 1, 2}, c.st, nil)
			ups := Decide(img, c.pol)
			if len(ups) != 1 {
				t.Fatalf("Decide gave %d updates, want 1", len(ups))
			}
			if got := decisionReason(img, ups[0]); got != c.want {
				t.Errorf("reason %q, want %q", got, c.want)
			}
		})
	}
}

// TestDecideTreatsOfflineReplicasAsGone: a replica its broker reported in
// a failed log dir (Broker.OfflineReplicas) leads nothing and leaves the
// ISR, while the broker's other replicas are untouched. Reference: KIP-112
// (the controller elects new leaders for the replicas of a failed dir and
// removes them from the ISR).
func TestDecideTreatsOfflineReplicasAsGone(t *testing.T) {
	live3 := map[int32]bool{0: false, 1: false, 2: false}
	cases := []struct {
		name    string
		brokers map[int32]bool
		offline map[int32][]int32 // broker -> offline partitions of topic t
		st      PartitionState
		want    string // "" = no change
		reason  string
	}{
		{"leader's replica offline: the next in-sync replica leads, the old one leaves the ISR",
			live3, map[int32][]int32{0: {0}}, PartitionState{Leader: 0, LeaderEpoch: 3, PartitionEpoch: 7, ISR: []int32{0, 1, 2}},
			"leader=1 epoch=4 isr=[1 2] pepoch=8 inc=i1", "log_dir_offline"},
		{"follower's replica offline: it leaves the ISR, the leader stays",
			live3, map[int32][]int32{2: {0}}, PartitionState{Leader: 0, LeaderEpoch: 3, PartitionEpoch: 7, ISR: []int32{0, 1, 2}},
			"leader=0 epoch=3 isr=[0 1] pepoch=8", "isr_shrink_log_dir_offline"},
		{"offline replica of another partition: nothing changes",
			live3, map[int32][]int32{0: {1, 2}}, PartitionState{Leader: 0, LeaderEpoch: 3, PartitionEpoch: 7, ISR: []int32{0, 1, 2}},
			"", ""},
		{"the only in-sync replica is offline: the partition goes offline keeping its ISR",
			live3, map[int32][]int32{0: {0}}, PartitionState{Leader: 0, LeaderEpoch: 3, PartitionEpoch: 7, ISR: []int32{0}},
			"leader=-1 epoch=4 isr=[0] pepoch=8", "leader_offline"},
		{"offline partition: an in-sync replica that is offline is not elected",
			map[int32]bool{1: false, 2: false}, map[int32][]int32{1: {0}}, PartitionState{Leader: -1, LeaderEpoch: 4, PartitionEpoch: 8, ISR: []int32{0, 1}},
			"", ""},
		{"offline leader while shutting down with nobody else in sync: not kept",
			map[int32]bool{0: true, 1: false}, map[int32][]int32{0: {0}}, PartitionState{Leader: 0, LeaderEpoch: 3, PartitionEpoch: 7, ISR: []int32{0}},
			"leader=-1 epoch=4 isr=[0] pepoch=8", "leader_offline"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			img := imageWith(c.brokers, []int32{0, 1, 2}, c.st, nil)
			for id, ps := range c.offline {
				br := img.Brokers[id]
				br.OfflineLogDirs = []string{"/disk2"}
				br.OfflineReplicas = map[string][]int32{"t": ps}
				img.Brokers[id] = br
			}
			ups := Decide(img, ElectionPolicy{Preferred: true})
			got, reason := "", ""
			if len(ups) > 1 {
				t.Fatalf("%d updates for one partition", len(ups))
			}
			if len(ups) == 1 {
				s := ups[0].State
				got = fmt.Sprintf("leader=%d epoch=%d isr=%v pepoch=%d", s.Leader, s.LeaderEpoch, s.ISR, s.PartitionEpoch)
				if s.LeaderIncarnation != c.st.LeaderIncarnation {
					got += " inc=" + s.LeaderIncarnation
				}
				reason = decisionReason(img, ups[0])
			}
			if got != c.want || reason != c.reason {
				t.Fatalf("got %q (%s), want %q (%s)", got, reason, c.want, c.reason)
			}
		})
	}
}
