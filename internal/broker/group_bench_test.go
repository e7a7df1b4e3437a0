package broker_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"samsa/internal/testutil"
)

// benchGroupCoverage reports whether group is Stable with exactly members
// members whose consumer assignments cover partitions 0..partitions-1 of
// topic once each.
func benchGroupCoverage(ctx context.Context, adm *kadm.Client, group, topic string, members int, partitions int32) (bool, error) {
	ds, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		return false, err
	}
	d, ok := ds[group]
	if !ok || d.Err != nil || d.State != "Stable" || len(d.Members) != members {
		return false, nil
	}
	owned := make(map[int32]int)
	for _, m := range d.Members {
		ca, ok := m.Assigned.AsConsumer()
		if !ok {
			return false, nil
		}
		for _, t := range ca.Topics {
			if t.Topic != topic {
				return false, fmt.Errorf("member %s assigned topic %s", m.MemberID, t.Topic)
			}
			for _, p := range t.Partitions {
				owned[p]++
			}
		}
	}
	if int32(len(owned)) != partitions {
		return false, nil
	}
	for p, n := range owned {
		if n != 1 || p < 0 || p >= partitions {
			return false, nil
		}
	}
	return true, nil
}

// benchWaitCoverage polls benchGroupCoverage every millisecond until it
// holds, failing the benchmark after a minute.
func benchWaitCoverage(b *testing.B, adm *kadm.Client, group, topic string, members int, partitions int32) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		ok, err := benchGroupCoverage(ctx, adm, group, topic, members, partitions)
		if err != nil {
			b.Fatalf("describe group %s: %v", group, err)
		}
		if ok {
			return
		}
		if ctx.Err() != nil {
			b.Fatalf("group %s never Stable with %d members covering %d partitions", group, members, partitions)
		}
		time.Sleep(time.Millisecond)
	}
}

// BenchmarkRebalanceAfterLeave measures the time from one of three
// members leaving a group (kgo Client.Close, which sends LeaveGroup) to
// the group being Stable again with the two remaining members owning
// every partition, as DescribeGroups reports it. Members heartbeat every
// 100ms, so an eager rebalance is noticed within one heartbeat; the
// initial rebalance delay is 0. Each iteration uses a new group, set up
// outside the timer.
func BenchmarkRebalanceAfterLeave(b *testing.B) {
	const (
		partitions = 12
		members    = 3
	)
	br := testutil.StartBroker(b, "group.initial.rebalance.delay.ms=0")
	adm := br.Admin()
	const topic = "bench-rebalance"
	testutil.CreateTopic(b, adm, topic, partitions)
	balancers := []struct {
		name string
		bal  kgo.GroupBalancer
	}{
		{"eager", kgo.RangeBalancer()},
		{"cooperative", kgo.CooperativeStickyBalancer()},
	}
	run := 0
	for _, bc := range balancers {
		b.Run(bc.name, func(b *testing.B) {
			var total time.Duration
			b.ResetTimer()
			b.StopTimer()
			for i := 0; i < b.N; i++ {
				run++
				group := fmt.Sprintf("bench-rebalance-%d", run)
				cls := make([]*kgo.Client, members)
				for m := range cls {
					cl, err := kgo.NewClient(kgo.SeedBrokers(br.Addr()),
						kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
						kgo.Balancers(bc.bal), kgo.HeartbeatInterval(100*time.Millisecond),
						kgo.DisableAutoCommit())
					if err != nil {
						b.Fatal(err)
					}
					cls[m] = cl
				}
				benchWaitCoverage(b, adm, group, topic, members, partitions)

				b.StartTimer()
				began := time.Now()
				cls[0].Close()
				benchWaitCoverage(b, adm, group, topic, members-1, partitions)
				total += time.Since(began)
				b.StopTimer()

				for _, cl := range cls[1:] {
					cl.Close()
				}
			}
			b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/rebalance")
		})
	}
}

// BenchmarkOffsetCommit measures OffsetCommit throughput: each operation
// is one kadm CommitOffsets of 10 partitions for a group without members
// (generation -1), acknowledged once the commit is in __consumer_offsets.
func BenchmarkOffsetCommit(b *testing.B) {
	const partitions = 10
	br := testutil.StartBroker(b)
	adm := br.Admin()
	const topic, group = "bench-commit", "bench-commit-group"
	testutil.CreateTopic(b, adm, topic, partitions)
	ctx := ctxB(b)
	commit := func(at int64) {
		os := make(kadm.Offsets)
		for p := int32(0); p < partitions; p++ {
			os.Add(kadm.Offset{Topic: topic, Partition: p, At: at, LeaderEpoch: -1})
		}
		resp, err := adm.CommitOffsets(ctx, group, os)
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			b.Fatalf("commit %d: %v", at, err)
		}
	}
	commit(0) // warm up: coordinator lookup, connections
	b.ReportAllocs()
	b.ResetTimer()
	began := time.Now()
	for i := 0; i < b.N; i++ {
		commit(int64(i + 1))
	}
	elapsed := time.Since(began)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "commits/s")

	// Every partition holds the last commit.
	got, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		b.Fatal(err)
	}
	for p := int32(0); p < partitions; p++ {
		o, ok := got.Lookup(topic, p)
		if !ok || o.Err != nil || o.At != int64(b.N) {
			b.Fatalf("partition %d: committed %+v (found %v), want %d", p, o, ok, b.N)
		}
	}
}
