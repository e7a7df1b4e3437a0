package cluster

import (
	"fmt"
	"testing"
)

// TestDecideEligibleLeaderReplicas covers KIP-966 in the controller's
// decisions: replicas [0 1 2], min.insync.replicas 2.
func TestDecideEligibleLeaderReplicas(t *testing.T) {
	type br struct {
		unclean bool  // registered after an unclean shutdown
		empty   bool  // registered on a log dir without partitions
		flush   int64 // its static log.flush.interval.messages
	}
	on := ElectionPolicy{ELR: true, MinISR: func(string) int { return 2 }}
	cases := []struct {
		name    string
		brokers map[int32]br
		configs map[string]string
		st      PartitionState
		pol     ElectionPolicy
		want    string // "" = no change
	}{
		{"ISR shrinks below min ISR: the leaver joins the ELR",
			map[int32]br{0: {}, 2: {}}, nil, PartitionState{Leader: 0, LeaderEpoch: 3, ISR: []int32{0, 1}}, on,
			"leader=0 epoch=3 isr=[0] elr=[1] lke=[]"},
		{"ISR shrinks to min ISR: no ELR",
			map[int32]br{0: {}, 1: {}}, nil, PartitionState{Leader: 0, LeaderEpoch: 3, ISR: []int32{0, 1, 2}}, on,
			"leader=0 epoch=3 isr=[0 1] elr=[] lke=[]"},
		{"two leave at once below min ISR: both join",
			map[int32]br{0: {}}, nil, PartitionState{Leader: 0, LeaderEpoch: 3, ISR: []int32{0, 1, 2}}, on,
			"leader=0 epoch=3 isr=[0] elr=[1 2] lke=[]"},
		{"no ISR member live: the live ELR member leads, the old leader joins the ELR",
			map[int32]br{1: {}}, nil, PartitionState{Leader: 0, LeaderEpoch: 3, ISR: []int32{0}, ELR: []int32{1}}, on,
			"leader=1 epoch=4 isr=[1] elr=[0] lke=[]"},
		{"same without ELR: offline",
			map[int32]br{1: {}}, nil, PartitionState{Leader: 0, LeaderEpoch: 3, ISR: []int32{0}, ELR: []int32{1}}, ElectionPolicy{},
			"leader=-1 epoch=4 isr=[0] elr=[] lke=[]"},
		{"offline partition: an ELR member returns and leads",
			map[int32]br{2: {}}, nil, PartitionState{Leader: -1, LeaderEpoch: 4, ISR: []int32{0}, ELR: []int32{1, 2}}, on,
			"leader=2 epoch=5 isr=[2] elr=[0 1] lke=[]"},
		{"an ISR member is preferred to an ELR member",
			map[int32]br{0: {}, 1: {}}, nil, PartitionState{Leader: -1, LeaderEpoch: 4, ISR: []int32{1}, ELR: []int32{0}}, on,
			"leader=1 epoch=5 isr=[1] elr=[0] lke=[]"},
		{"ELR member back after an unclean shutdown, relaxed flush: not elected, to LastKnownELR",
			map[int32]br{1: {unclean: true, flush: 10000}}, nil, PartitionState{Leader: -1, LeaderEpoch: 4, ISR: []int32{0}, ELR: []int32{1}}, on,
			"leader=-1 epoch=4 isr=[0] elr=[] lke=[1]"},
		{"ELR member back after an unclean shutdown, durable flush: it lost nothing reported, elected",
			map[int32]br{1: {unclean: true, flush: 1}}, nil, PartitionState{Leader: -1, LeaderEpoch: 4, ISR: []int32{0}, ELR: []int32{1}}, on,
			"leader=1 epoch=5 isr=[1] elr=[0] lke=[]"},
		{"topic's flush.messages makes it relaxed",
			map[int32]br{1: {unclean: true, flush: 1}}, map[string]string{"flush.messages": "500"},
			PartitionState{Leader: -1, LeaderEpoch: 4, ISR: []int32{0}, ELR: []int32{1}}, on,
			"leader=-1 epoch=4 isr=[0] elr=[] lke=[1]"},
		{"last ISR member restarted and may have lost records: a clean ELR member leads instead",
			map[int32]br{0: {unclean: true, flush: 10000}, 1: {}}, nil,
			PartitionState{Leader: 0, LeaderEpoch: 3, ISR: []int32{0}, ELR: []int32{1}, LeaderIncarnation: "before"}, on,
			"leader=1 epoch=4 isr=[1] elr=[] lke=[0]"},
		{"last ISR member restarted and may have lost records, no ELR: offline with an empty ISR",
			map[int32]br{0: {unclean: true, flush: 10000}}, nil,
			PartitionState{Leader: 0, LeaderEpoch: 3, ISR: []int32{0}, LeaderIncarnation: "before"}, on,
			"leader=-1 epoch=4 isr=[] elr=[] lke=[0]"},
		{"offline partition whose ISR member came back uncleanly, relaxed flush: stays offline, leaves the ISR",
			map[int32]br{0: {unclean: true, flush: 10000}}, nil,
			PartitionState{Leader: -1, LeaderEpoch: 4, ISR: []int32{0}}, on,
			"leader=-1 epoch=4 isr=[] elr=[] lke=[0]"},
		{"then unclean election is the operator's way out",
			map[int32]br{0: {unclean: true, flush: 10000}}, nil,
			PartitionState{Leader: -1, LeaderEpoch: 4, ISR: []int32{}, LastKnownELR: []int32{0}},
			ElectionPolicy{ELR: true, MinISR: on.MinISR, Unclean: func(string) bool { return true }},
			"leader=0 epoch=5 isr=[0] elr=[] lke=[]"},
		{"restarted leader that may have lost records, unclean election on: chosen again, at a new epoch",
			map[int32]br{0: {unclean: true, flush: 10000}, 1: {unclean: true, flush: 10000}}, map[string]string{"unclean.leader.election.enable": "true"},
			PartitionState{Leader: 0, LeaderEpoch: 3, ISR: []int32{0, 1}, LeaderIncarnation: "before"},
			ElectionPolicy{ELR: true, MinISR: on.MinISR, Unclean: func(string) bool { return true }},
			"leader=0 epoch=4 isr=[0] elr=[] lke=[1]"},
		{"last ISR member restarted uncleanly under the durable policy: elected again at a new epoch",
			map[int32]br{0: {unclean: true, flush: 1}}, nil,
			PartitionState{Leader: 0, LeaderEpoch: 3, ISR: []int32{0}, LeaderIncarnation: "before"}, on,
			"leader=0 epoch=4 isr=[0] elr=[] lke=[]"},
		{"restarted leader on a replaced disk, durable policy: another in-sync replica leads",
			map[int32]br{0: {empty: true, flush: 1}, 1: {}, 2: {}}, nil,
			PartitionState{Leader: 0, LeaderEpoch: 3, ISR: []int32{0, 1, 2}, LeaderIncarnation: "before"}, on,
			"leader=1 epoch=4 isr=[1 2] elr=[] lke=[]"},
		{"offline partition whose last ISR member is back on a replaced disk: stays offline",
			map[int32]br{0: {empty: true, flush: 1}}, nil,
			PartitionState{Leader: -1, LeaderEpoch: 4, ISR: []int32{0}, ELR: []int32{1}}, on,
			"leader=-1 epoch=4 isr=[] elr=[1] lke=[0]"},
		{"ISR back at min ISR clears the ELR",
			map[int32]br{0: {}, 1: {}, 2: {}}, nil, PartitionState{Leader: 0, LeaderEpoch: 3, ISR: []int32{0, 1}, ELR: []int32{2}}, on,
			"leader=0 epoch=3 isr=[0 1] elr=[] lke=[]"},
		{"ELR turned off: cleared",
			map[int32]br{0: {}, 1: {}, 2: {}}, nil, PartitionState{Leader: 0, LeaderEpoch: 3, ISR: []int32{0}, ELR: []int32{2}}, ElectionPolicy{},
			"leader=0 epoch=3 isr=[0] elr=[] lke=[]"},
		{"stable ELR state: nothing to do",
			map[int32]br{0: {}, 1: {}, 2: {}}, nil, PartitionState{Leader: 0, LeaderEpoch: 3, ISR: []int32{0}, ELR: []int32{1, 2}}, on,
			""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			img := &Image{Brokers: map[int32]Broker{}, Topics: map[string]*Topic{}}
			for id, b := range c.brokers {
				img.Brokers[id] = Broker{NodeID: id, Incarnation: fmt.Sprintf("i%d", id), UncleanShutdown: b.unclean || b.empty, EmptyLogDir: b.empty, FlushIntervalMessages: b.flush}
			}
			img.Topics["t"] = &Topic{Name: "t", Replicas: [][]int32{{0, 1, 2}}, Partitions: []PartitionState{c.st}, Configs: c.configs}
			ups := Decide(img, c.pol)
			got := ""
			if len(ups) > 1 {
				t.Fatalf("%d updates for one partition", len(ups))
			}
			if len(ups) == 1 {
				s := ups[0].State
				got = fmt.Sprintf("leader=%d epoch=%d isr=%v elr=%v lke=%v", s.Leader, s.LeaderEpoch, s.ISR, s.ELR, s.LastKnownELR)
				if s.Leader >= 0 && s.LeaderEpoch != c.st.LeaderEpoch && s.LeaderIncarnation != img.Brokers[s.Leader].Incarnation {
					t.Errorf("leader incarnation %q, want %q", s.LeaderIncarnation, img.Brokers[s.Leader].Incarnation)
				}
				if s.PartitionEpoch != c.st.PartitionEpoch+1 {
					t.Errorf("partition epoch %d, want %d", s.PartitionEpoch, c.st.PartitionEpoch+1)
				}
			}
			if got != c.want {
				t.Fatalf("got %q\nwant %q", got, c.want)
			}
			if len(ups) == 1 {
				// A decision is a fixed point: deciding again from
				// what was written changes nothing.
				img.Topics["t"].Partitions[0] = ups[0].State
				if again := Decide(img, c.pol); len(again) != 0 {
					s := again[0].State
					t.Fatalf("second decision changed it again: leader=%d isr=%v elr=%v lke=%v", s.Leader, s.ISR, s.ELR, s.LastKnownELR)
				}
			}
		})
	}
}

// TestUpdateELRFollowsTheISR covers the leader's ISR changes.
func TestUpdateELRFollowsTheISR(t *testing.T) {
	replicas := []int32{0, 1, 2}
	cases := []struct {
		name      string
		prev      PartitionState
		isr       []int32
		minISR    int
		elr, lkel string
	}{
		{"shrink below min ISR", PartitionState{ISR: []int32{0, 1}}, []int32{0}, 2, "[1]", "[]"},
		{"shrink with min ISR 1: never below", PartitionState{ISR: []int32{0, 1}}, []int32{0}, 1, "[]", "[]"},
		{"an ELR member rejoins the ISR", PartitionState{ISR: []int32{0}, ELR: []int32{1, 2}}, []int32{0, 2}, 3, "[1]", "[]"},
		{"expand to min ISR clears both", PartitionState{ISR: []int32{0}, ELR: []int32{1}, LastKnownELR: []int32{2}}, []int32{0, 1}, 2, "[]", "[]"},
		{"a replica no longer assigned leaves", PartitionState{ISR: []int32{0}, ELR: []int32{7}}, []int32{0}, 2, "[]", "[]"},
		{"last known kept while below min ISR", PartitionState{ISR: []int32{0}, LastKnownELR: []int32{2}}, []int32{0}, 2, "[]", "[2]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			next := c.prev
			next.ISR = c.isr
			UpdateELR(c.prev, &next, replicas, c.minISR)
			if got := fmt.Sprint(next.ELR); got != c.elr {
				t.Errorf("ELR %s, want %s", got, c.elr)
			}
			if got := fmt.Sprint(next.LastKnownELR); got != c.lkel {
				t.Errorf("LastKnownELR %s, want %s", got, c.lkel)
			}
		})
	}
}
