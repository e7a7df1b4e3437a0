package broker

import (
	"errors"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"samsa/internal/cluster"
)

// TestDecideElection covers every outcome of one partition's election.
// Reference: KIP-183 (preferred), KIP-460 (unclean).
func TestDecideElection(t *testing.T) {
	brokers := func(live []int32, shutting ...int32) map[int32]cluster.Broker {
		m := map[int32]cluster.Broker{}
		for _, id := range live {
			m[id] = cluster.Broker{NodeID: id}
		}
		for _, id := range shutting {
			m[id] = cluster.Broker{NodeID: id, ShuttingDown: true}
		}
		return m
	}
	state := func(leader int32, isr ...int32) cluster.PartitionState {
		return cluster.PartitionState{Leader: leader, LeaderEpoch: 4, ISR: isr, PartitionEpoch: 9, ModRevision: 77}
	}
	tests := []struct {
		name    string
		kind    int8
		brokers map[int32]cluster.Broker
		st      cluster.PartitionState
		// want is the new leader and ISR, or wantErr the Kafka error.
		wantLeader int32
		wantISR    []int32
		wantErr    *kerr.Error
	}{
		{"preferred moves back", electionPreferred, brokers([]int32{0, 1, 2}), state(1, 1, 2, 0), 0, []int32{1, 2, 0}, nil},
		{"preferred already leads", electionPreferred, brokers([]int32{0, 1, 2}), state(0, 0, 1, 2), 0, nil, kerr.ElectionNotNeeded},
		{"preferred not in isr", electionPreferred, brokers([]int32{0, 1, 2}), state(1, 1, 2), 0, nil, kerr.PreferredLeaderNotAvailable},
		{"preferred not registered", electionPreferred, brokers([]int32{1, 2}), state(1, 1, 2, 0), 0, nil, kerr.PreferredLeaderNotAvailable},
		{"preferred shutting down", electionPreferred, brokers([]int32{1, 2}, 0), state(1, 1, 2, 0), 0, nil, kerr.PreferredLeaderNotAvailable},
		{"preferred while offline", electionPreferred, brokers([]int32{0}), state(-1, 0), 0, []int32{0}, nil},
		{"unclean with live leader", electionUnclean, brokers([]int32{0, 1, 2}), state(1, 1), 0, nil, kerr.ElectionNotNeeded},
		{"unclean prefers the isr", electionUnclean, brokers([]int32{1, 2}), state(-1, 0, 2), 2, []int32{2}, nil},
		{"unclean any live replica", electionUnclean, brokers([]int32{1, 2}), state(-1, 0), 1, []int32{1}, nil},
		{"unclean leader shutting down", electionUnclean, brokers([]int32{2}, 0), state(0, 0), 2, []int32{2}, nil},
		{"unclean nobody live", electionUnclean, brokers(nil, 1), state(-1, 0), 0, nil, kerr.EligibleLeadersNotAvailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			img := &cluster.Image{
				Brokers: tt.brokers,
				Topics: map[string]*cluster.Topic{"t": {
					Name:       "t",
					Replicas:   [][]int32{{0, 1, 2}},
					Partitions: []cluster.PartitionState{tt.st},
				}},
			}
			got, err := decideElection(img, tt.kind, "t", 0)
			if tt.wantErr != nil {
				var ee *errElection
				if !errors.As(err, &ee) || ee.code != tt.wantErr {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Leader != tt.wantLeader || !slices.Equal(got.ISR, tt.wantISR) {
				t.Fatalf("leader %d isr %v, want %d %v", got.Leader, got.ISR, tt.wantLeader, tt.wantISR)
			}
			if got.LeaderEpoch != 5 || got.PartitionEpoch != 10 || got.ModRevision != 77 {
				t.Fatalf("epochs %d/%d rev %d, want 5/10 rev 77", got.LeaderEpoch, got.PartitionEpoch, got.ModRevision)
			}
		})
	}
	img := &cluster.Image{Topics: map[string]*cluster.Topic{}}
	if _, err := decideElection(img, electionPreferred, "nope", 0); !errors.Is(err, cluster.ErrUnknownPartition) {
		t.Fatalf("unknown topic: %v", err)
	}
}
