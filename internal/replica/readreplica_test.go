package replica

import (
	"testing"
	"time"

	"samsa/internal/storage"
)

// TestSelectReadReplica covers the rack-aware selector's choices.
// Reference: KIP-392 and Kafka's RackAwareReplicaSelector.
func TestSelectReadReplica(t *testing.T) {
	racks := map[int32]string{0: "a", 1: "b", 2: "c", 3: "b"}
	rack := func(id int32) (string, bool) { r, ok := racks[id]; return r, ok }
	cands := []ReadReplica{{ID: 3, LogEndOff: 90}, {ID: 1, LogEndOff: 80}, {ID: 2, LogEndOff: 100}}
	for _, tt := range []struct {
		name               string
		client, leaderRack string
		cands              []ReadReplica
		want               int32
	}{
		{"no client rack: the leader", "", "a", cands, -1},
		{"client in the leader's rack: the leader", "a", "a", cands, -1},
		{"first candidate in the client's rack", "b", "a", cands, 3},
		{"only candidate in the client's rack", "c", "a", cands, 2},
		{"no candidate in the client's rack: the leader", "z", "a", cands, -1},
		{"no candidates: the leader", "b", "a", nil, -1},
		{"a broker without a rack is never chosen", "", "", []ReadReplica{{ID: 9}}, -1},
	} {
		if got := SelectReadReplica(tt.client, tt.leaderRack, tt.cands, rack); got != tt.want {
			t.Errorf("%s: %d, want %d", tt.name, got, tt.want)
		}
	}
}

// TestReadReplicasAreInSyncFollowersHoldingTheOffset checks the leader's
// candidates: in-sync followers whose fetch offset reaches the consumer's
// offset, the furthest first; none on a follower.
func TestReadReplicasAreInSyncFollowersHoldingTheOffset(t *testing.T) {
	m := openManager(t)
	tp := storage.TopicPartition{Topic: "rr", Partition: 0}
	lead := PartitionInfo{Replicas: []int32{1, 2, 3, 4}, Leader: 1, LeaderEpoch: 1, ISR: []int32{1, 2, 3}, PartitionEpoch: 1}
	p, err := m.Ensure(tp, [16]byte{1}, storage.DefaultConfig(), lead)
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		if _, err := p.Append(oneRecord(t), false, time.Now().UnixMilli()); err != nil {
			t.Fatal(err)
		}
	}
	p.FollowerFetched(2, 6)
	p.FollowerFetched(3, 9)
	p.FollowerFetched(4, 10) // not in the ISR
	got := p.ReadReplicas(5)
	if len(got) != 2 || got[0] != (ReadReplica{3, 9}) || got[1] != (ReadReplica{2, 6}) {
		t.Fatalf("candidates at 5: %v, want [{3 9} {2 6}]", got)
	}
	if got := p.ReadReplicas(7); len(got) != 1 || got[0].ID != 3 {
		t.Fatalf("candidates at 7: %v, want only 3", got)
	}
	follow := PartitionInfo{Replicas: []int32{1, 2, 3, 4}, Leader: 2, LeaderEpoch: 2, ISR: []int32{1, 2, 3}, PartitionEpoch: 2}
	if _, err := m.Ensure(tp, [16]byte{1}, storage.DefaultConfig(), follow); err != nil {
		t.Fatal(err)
	}
	if got := p.ReadReplicas(0); got != nil {
		t.Fatalf("candidates on a follower: %v", got)
	}
}
