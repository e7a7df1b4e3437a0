package broker_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/testutil"
)

// TestConsumerGroupMigratesBothWays restarts the members of a consuming
// group one by one with the other protocol: classic (franz-go's
// cooperative-sticky, client-side) to consumer (KIP-848, server-side)
// and back, with group.consumer.migration.policy at its default
// (bidirectional). The first consumer-protocol member upgrades the
// classic group; the classic members are then served by the consumer
// group through JoinGroup/SyncGroup/Heartbeat; the last consumer-protocol
// member leaving downgrades it. No partition is ever held by two live
// members, every record is processed, and a record is processed again
// only if no commit covering it had succeeded: the committed offsets are
// carried across both conversions.
//
// Reference: KIP-848, "Online migration".
func TestConsumerGroupMigratesBothWays(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		balancer func() kgo.GroupBalancer
	}{
		// Cooperative classic members keep what they keep across a
		// rebalance; eager ones (range) give everything up first.
		{"cooperative-sticky", kgo.CooperativeStickyBalancer},
		{"range", func() kgo.GroupBalancer { return kgo.RangeBalancer() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			testMigratesBothWays(t, tc.balancer)
		})
	}
}

func testMigratesBothWays(t *testing.T, balancer func() kgo.GroupBalancer) {
	const partitions = 6
	b := testutil.StartBroker(t, consumerGroupBrokerConfig...)
	adm := b.Admin()
	topic, group := "migrate", "migrate"
	testutil.CreateTopic(t, adm, topic, partitions)
	l := newGroupLedger(t)
	admin := b.Client()
	stopProduce := produceUntilStopped(t, b.Client, l, topic)

	classic := func(name string) *groupMember {
		return startGroupMember(t, b, l, name, group, topic, balancer(), false)
	}
	consumer := func(name string) *groupMember {
		return startGroupMember(t, b, l, name, group, topic, balancer(), false, kgo.ServerSideBalancer())
	}
	groupType := func(want string) {
		t.Helper()
		testutil.Eventually(t, 10*time.Second, func() error {
			lg, err := adm.ListGroups(context.Background())
			if err != nil {
				return err
			}
			if g, ok := lg[group]; !ok || g.GroupType != want {
				return fmt.Errorf("group %+v, want type %s", g, want)
			}
			return nil
		})
	}

	c0, c1, c2 := classic("c0"), classic("c1"), classic("c2")
	waitGroupStable(t, adm, l, group, partitions, []*groupMember{c0, c1, c2})
	groupType("classic")

	// Upgrade: the first member of the consumer protocol converts the
	// group; the other two stay classic members of the consumer group.
	c0.leave(l)
	n0 := consumer("n0")
	waitConsumerGroupStable(t, admin, l, group, partitions, []*groupMember{c1, c2, n0})
	groupType("consumer")
	if g, err := describeConsumerGroup(context.Background(), admin, group); err != nil {
		t.Fatalf("describe: %v", err)
	} else {
		classicMembers := 0
		for _, m := range g.Members {
			if m.MemberType == 0 {
				classicMembers++
			}
		}
		if classicMembers != 2 {
			t.Errorf("%d members described as classic (MemberType 0), want 2 (c1, c2)", classicMembers)
		}
	}
	c1.leave(l)
	n1 := consumer("n1")
	waitConsumerGroupStable(t, admin, l, group, partitions, []*groupMember{c2, n0, n1})
	c2.leave(l)
	n2 := consumer("n2")
	waitConsumerGroupStable(t, admin, l, group, partitions, []*groupMember{n0, n1, n2})

	// Downgrade: classic members join the consumer group; once the last
	// consumer-protocol member leaves, it is a classic group again.
	n0.leave(l)
	d0 := classic("d0")
	waitConsumerGroupStable(t, admin, l, group, partitions, []*groupMember{n1, n2, d0})
	n1.leave(l)
	d1 := classic("d1")
	waitConsumerGroupStable(t, admin, l, group, partitions, []*groupMember{n2, d0, d1})
	n2.leave(l)
	waitGroupStable(t, adm, l, group, partitions, []*groupMember{d0, d1})
	groupType("classic")
	d2 := classic("d2")
	waitGroupStable(t, adm, l, group, partitions, []*groupMember{d0, d1, d2})

	stopProduce()
	testutil.Eventually(t, 30*time.Second, l.allProcessed)
	dups := l.check()
	t.Logf("%d processed twice", dups)
}

// produceUntilStopped produces small batches round robin to topic, with
// a client newClient makes, until
// the returned function is called; that function waits for the producer
// and fails the test on a produce error.
func produceUntilStopped(t *testing.T, newClient func(...kgo.Opt) *kgo.Client, l *groupLedger, topic string) func() {
	t.Helper()
	prod := newClient(kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.DefaultProduceTopic(topic))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		var err error
		defer func() { done <- err }()
		for i := 0; ctx.Err() == nil; i++ {
			rs := make([]*kgo.Record, 12)
			for j := range rs {
				rs[j] = kgo.StringRecord(fmt.Sprintf("r%d-%d", i, j))
			}
			res := prod.ProduceSync(ctx, rs...)
			if ctx.Err() != nil {
				for _, r := range res {
					if r.Err == nil {
						l.addProduced([]*kgo.Record{r.Record})
					}
				}
				return
			}
			if err = res.FirstErr(); err != nil {
				return
			}
			l.addProduced(rs)
			time.Sleep(20 * time.Millisecond)
		}
	}()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("produce: %v", err)
		}
	}
	t.Cleanup(stop)
	return stop
}

// TestGroupConversionsSurviveRestart restarts the broker right after each
// conversion, so that the coordinator loads __consumer_offsets from the
// records the conversion wrote: after the upgrade it serves a consumer
// group (its classic member described with MemberType 0), after the
// downgrade a classic group with the classic member and its target; the
// committed offset is kept across both.
func TestGroupConversionsSurviveRestart(t *testing.T) {
	t.Parallel()
	const topic, group = "conv-restart", "conv-restart"
	b := testutil.StartBroker(t, consumerGroupBrokerConfig...)
	testutil.CreateTopic(t, b.Admin(), topic, 2)
	cl := b.Client()

	r := &rawJoin{cl: cl, group: group}
	r.join(t, topic)
	r.sync(t, map[string][]int32{r.memberID: {0, 1}}, topic)
	if codes := commitCodes(request[*kmsg.OffsetCommitResponse](t, cl, commitReq(group, r.memberID, r.gen, topic, map[int32]int64{0: 11}))); codes[0] != 0 {
		t.Fatalf("commit: %v", kerr.ErrorForCode(codes[0]))
	}
	if resp := request[*kmsg.ConsumerGroupHeartbeatResponse](t, cl, consumerJoin(group, "n1", topic)); resp.ErrorCode != 0 {
		t.Fatalf("heartbeat that upgrades: %v", kerr.ErrorForCode(resp.ErrorCode))
	}

	b.Restart()
	var g kmsg.ConsumerGroupDescribeResponseGroup
	testutil.Eventually(t, 30*time.Second, func() error {
		var err error
		g, err = describeConsumerGroup(context.Background(), cl, group)
		return err
	})
	types := map[string]int8{}
	for _, m := range g.Members {
		types[m.MemberID] = m.MemberType
	}
	if len(types) != 2 || types[r.memberID] != 0 || types["n1"] != 1 {
		t.Fatalf("after the upgrade and a restart: members %v (classic %s), want the classic one with MemberType 0 and n1", types, r.memberID)
	}
	if off := fetchCommitted(t, cl, group, topic, 0); off[0] != 11 {
		t.Fatalf("offset after the upgrade: %d, want 11", off[0])
	}

	leave := consumerJoin(group, "n1")
	leave.MemberEpoch, leave.SubscribedTopicNames, leave.Topics = -1, nil, nil
	if resp := request[*kmsg.ConsumerGroupHeartbeatResponse](t, cl, leave); resp.ErrorCode != 0 {
		t.Fatalf("leave that downgrades: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	b.Restart()
	adm := b.Admin()
	testutil.Eventually(t, 30*time.Second, func() error {
		dg, err := adm.DescribeGroups(context.Background(), group)
		if err != nil {
			return err
		}
		d := dg[group]
		if d.Err != nil {
			return d.Err
		}
		if d.ProtocolType != "consumer" || len(d.Members) != 1 || d.Members[0].MemberID != r.memberID {
			return fmt.Errorf("after the downgrade and a restart: %+v", d)
		}
		// Its assignment is its target in the consumer group, which
		// gave n1 the other partition.
		c, ok := d.Members[0].Assigned.AsConsumer()
		if !ok || len(c.Topics) != 1 || len(c.Topics[0].Partitions) != 1 {
			return fmt.Errorf("classic member's assignment %+v, want one partition", d.Members[0].Assigned)
		}
		return nil
	})
	if off := fetchCommitted(t, cl, group, topic, 0); off[0] != 11 {
		t.Fatalf("offset after the downgrade: %d, want 11", off[0])
	}
}
