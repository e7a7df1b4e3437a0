package group

import (
	"fmt"
	"testing"
	"time"
)

// benchHeartbeat sends a steady heartbeat of m (reporting what it owns)
// and applies the change; it reports whether the assignment changed.
func benchHeartbeat(b *testing.B, g *ConsumerGroup, topics TopicMap, now time.Time, m *ConsumerMember) {
	req := ConsumerHeartbeatRequest{Group: "g", MemberID: m.ID, MemberEpoch: m.Epoch, RebalanceTimeout: -1, Owned: m.Assigned.list()}
	if m.Epoch == 0 {
		req.RebalanceTimeout, req.SubscribedTopicNames, req.Owned = time.Minute, []string{"t"}, []TopicPartitions{}
	}
	res, ch, err := g.Heartbeat(now, topics, req, true)
	if err != nil {
		b.Fatal(err)
	}
	g.Apply(ch)
	m.Epoch = res.MemberEpoch
	if res.HasAssignment {
		m.Assigned = PartitionSet{}
		for _, tp := range res.Assignment {
			m.Assigned[tp.TopicID] = tp.Partitions
		}
	}
}

// BenchmarkConsumerGroupLeaveToStable measures the coordinator's own
// work (no IO) from a member's leave to a Stable group: 100 members, 1,000
// partitions, the uniform assignor; the other members heartbeat in rounds
// until the group is stable. Each operation is one leave and the rounds
// after it; the member then joins again, untimed.
func BenchmarkConsumerGroupLeaveToStable(b *testing.B) {
	const members, partitions = 100, 1000
	b.Run(fmt.Sprintf("members=%d/partitions=%d", members, partitions), func(b *testing.B) {
		topics := TopicMap{"t": {Name: "t", ID: TopicID{1}, Partitions: partitions}}
		g := NewConsumerGroup("g", ConsumerGroupConfig{SessionTimeout: time.Hour, HeartbeatInterval: 5 * time.Second,
			MaxSize: 1 << 20, Assignors: []string{UniformAssignor, RangeAssignor}})
		now := time.UnixMilli(0)
		ms := make([]*ConsumerMember, members)
		for i := range ms {
			ms[i] = &ConsumerMember{ID: fmt.Sprintf("m%03d", i), Assigned: PartitionSet{}}
		}
		settle := func(live []*ConsumerMember) int {
			rounds := 0
			for g.State() != ConsumerStable {
				for _, m := range live {
					benchHeartbeat(b, g, topics, now, m)
				}
				rounds++
				if rounds > 100 {
					b.Fatal("not stable after 100 rounds")
				}
			}
			return rounds
		}
		for _, m := range ms {
			benchHeartbeat(b, g, topics, now, m)
		}
		settle(ms)
		rounds := 0
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			leaver := ms[i%members]
			_, ch, err := g.Heartbeat(now, topics, ConsumerHeartbeatRequest{Group: "g", MemberID: leaver.ID, MemberEpoch: LeaveEpoch}, true)
			if err != nil {
				b.Fatal(err)
			}
			g.Apply(ch)
			live := make([]*ConsumerMember, 0, members-1)
			for _, m := range ms {
				if m != leaver {
					live = append(live, m)
				}
			}
			rounds += settle(live)
			b.StopTimer()
			leaver.Epoch, leaver.Assigned = 0, PartitionSet{}
			benchHeartbeat(b, g, topics, now, leaver)
			settle(ms)
			if err := g.CheckInvariants(); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		b.ReportMetric(float64(rounds)/float64(b.N), "rounds/op")
	})
}
