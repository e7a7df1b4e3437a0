package broker_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/testutil"
)

// benchMember is a KIP-848 member driven by raw ConsumerGroupHeartbeats
// over real TCP, reconciling as a client does without any processing:
// it gives up revoked partitions at once and reports what it owns in
// every heartbeat.
type benchMember struct {
	id    string
	epoch int32
	owned []kmsg.ConsumerGroupHeartbeatRequestTopic
}

func (m *benchMember) heartbeat(ctx context.Context, cl *kgo.Client, group, topic string) (time.Duration, error) {
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch = group, m.id, m.epoch
	req.RebalanceTimeoutMillis = -1
	if m.epoch == 0 {
		req.RebalanceTimeoutMillis, req.SubscribedTopicNames = 60000, []string{topic}
		m.owned = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	}
	req.Topics = m.owned
	start := time.Now()
	resp, err := req.RequestWith(ctx, cl)
	took := time.Since(start)
	if err != nil {
		return took, err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return took, fmt.Errorf("member %s at epoch %d: %w", m.id, m.epoch, err)
	}
	m.epoch = resp.MemberEpoch
	if resp.Assignment != nil {
		m.owned = m.owned[:0:0]
		for _, t := range resp.Assignment.Topics {
			rt := kmsg.NewConsumerGroupHeartbeatRequestTopic()
			rt.TopicID, rt.Partitions = t.TopicID, slices.Clone(t.Partitions)
			m.owned = append(m.owned, rt)
		}
	}
	return took, nil
}

// benchRound heartbeats every member once, spread over the clients by 8
// goroutines, and returns each heartbeat's latency.
func benchRound(ctx context.Context, b *testing.B, cls []*kgo.Client, members []*benchMember, group, topic string) []time.Duration {
	lat := make([]time.Duration, len(members))
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	const workers = 8
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(members); i += workers {
				d, err := members[i].heartbeat(ctx, cls[i%len(cls)], group, topic)
				lat[i] = d
				if err != nil {
					mu.Lock()
					firstErr = err
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		b.Fatal(firstErr)
	}
	return lat
}

// benchStable reports whether the group is Stable and its members' owned
// partitions cover the topic once each.
func benchStable(ctx context.Context, b *testing.B, cl *kgo.Client, group string, members []*benchMember, partitions int32) bool {
	g, err := describeConsumerGroup(ctx, cl, group)
	if err != nil {
		b.Fatal(err)
	}
	if g.State != "Stable" {
		return false
	}
	seen := make(map[int32]bool)
	for _, m := range members {
		for _, t := range m.owned {
			for _, p := range t.Partitions {
				if seen[p] {
					return false
				}
				seen[p] = true
			}
		}
	}
	return int32(len(seen)) == partitions
}

// benchConsumerGroup starts a broker, a topic and members joined members
// of a stable group.
func benchConsumerGroup(b *testing.B, group, topic string, members int, partitions int32) (*testutil.Broker, []*kgo.Client, []*benchMember) {
	br := testutil.StartBroker(b, "group.consumer.session.timeout.ms=60000", "group.consumer.max.session.timeout.ms=60000")
	testutil.CreateTopic(b, br.Admin(), topic, partitions)
	cls := make([]*kgo.Client, 4)
	for i := range cls {
		cls[i] = br.Client()
	}
	ms := make([]*benchMember, members)
	for i := range ms {
		ms[i] = &benchMember{id: fmt.Sprintf("member-%04d", i)}
	}
	ctx := context.Background()
	// The coordinator is ready once it answers for the group.
	testutil.Eventually(b, 30*time.Second, func() error {
		_, err := describeConsumerGroup(ctx, cls[0], group)
		if errorsIs(err, kerr.GroupIDNotFound) {
			return nil
		}
		return fmt.Errorf("coordinator not ready: %v", err)
	})
	// Join in waves of 50 so that the setup does not recompute the target
	// once per member.
	for i := 0; i < members; i += 50 {
		benchRound(ctx, b, cls, ms[i:min(i+50, members)], group, topic)
	}
	for round := 0; !benchStable(ctx, b, cls[0], group, ms, partitions); round++ {
		if round > 100 {
			b.Fatal("group not stable after 100 rounds")
		}
		benchRound(ctx, b, cls, ms, group, topic)
	}
	return br, cls, ms
}

// BenchmarkConsumerGroupRebalanceAfterLeave measures, over real TCP, the
// time from a member's leave (epoch -1) to a Stable group whose members
// own every partition once, with members that heartbeat back to back (a
// real member heartbeats every group.consumer.heartbeat.interval.ms: add
// up to one interval, as it learns its new assignment only then). Each
// operation: one member leaves, the others heartbeat in rounds until the
// group is stable, then the member joins again (untimed).
func BenchmarkConsumerGroupRebalanceAfterLeave(b *testing.B) {
	const (
		members    = 100
		partitions = 1000
	)
	b.Run(fmt.Sprintf("members=%d/partitions=%d", members, partitions), func(b *testing.B) {
		group, topic := "bench-cg-leave", "bench-cg-leave"
		_, cls, ms := benchConsumerGroup(b, group, topic, members, partitions)
		ctx := context.Background()
		var total time.Duration
		rounds := 0
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			leaver := ms[i%members]
			began := time.Now()
			req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
			req.Group, req.MemberID, req.MemberEpoch = group, leaver.id, -1
			if resp, err := req.RequestWith(ctx, cls[0]); err != nil || resp.ErrorCode != 0 {
				b.Fatalf("leave: %v %v", err, resp)
			}
			rest := slices.DeleteFunc(slices.Clone(ms), func(m *benchMember) bool { return m == leaver })
			for !benchStable(ctx, b, cls[0], group, rest, partitions) {
				benchRound(ctx, b, cls, rest, group, topic)
				rounds++
			}
			total += time.Since(began)
			b.StopTimer()
			leaver.epoch, leaver.owned = 0, nil
			for !benchStable(ctx, b, cls[0], group, ms, partitions) {
				benchRound(ctx, b, cls, ms, group, topic)
			}
			b.StartTimer()
		}
		b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms/rebalance")
		b.ReportMetric(float64(rounds)/float64(b.N), "rounds/rebalance")
	})
}

// BenchmarkConsumerGroupHeartbeat measures the latency of steady-state
// ConsumerGroupHeartbeats (members at their epoch, reporting what they
// own) from 8 concurrent senders over 4 connections, with 1,000 members in
// the group: each operation is one heartbeat; p50 and p99 are reported.
func BenchmarkConsumerGroupHeartbeat(b *testing.B) {
	const (
		members    = 1000
		partitions = 1000
	)
	b.Run(fmt.Sprintf("members=%d", members), func(b *testing.B) {
		group, topic := "bench-cg-hb", "bench-cg-hb"
		_, cls, ms := benchConsumerGroup(b, group, topic, members, partitions)
		ctx := context.Background()
		var lat []time.Duration
		b.ResetTimer()
		for done := 0; done < b.N; {
			n := min(b.N-done, members)
			lat = append(lat, benchRound(ctx, b, cls, ms[:n], group, topic)...)
			done += n
		}
		b.StopTimer()
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		q := func(f float64) float64 { return float64(lat[int(f*float64(len(lat)-1))].Microseconds()) / 1000 }
		b.ReportMetric(q(0.50), "p50-ms")
		b.ReportMetric(q(0.99), "p99-ms")
	})
}
