package broker_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/testutil"
)

// consumerGroupBrokerConfig makes KIP-848 sessions short enough for a
// crashed member to be removed within a test.
var consumerGroupBrokerConfig = append(slices.Clone(groupBrokerConfig),
	"group.consumer.min.session.timeout.ms=1000",
	"group.consumer.session.timeout.ms=1500",
	"group.consumer.min.heartbeat.interval.ms=100",
	"group.consumer.heartbeat.interval.ms=150",
)

// describeConsumerGroup sends ConsumerGroupDescribe for one group.
func describeConsumerGroup(ctx context.Context, cl *kgo.Client, group string) (kmsg.ConsumerGroupDescribeResponseGroup, error) {
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{group}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return kmsg.ConsumerGroupDescribeResponseGroup{}, err
	}
	if len(resp.Groups) != 1 {
		return kmsg.ConsumerGroupDescribeResponseGroup{}, fmt.Errorf("%d groups described", len(resp.Groups))
	}
	g := resp.Groups[0]
	return g, kerr.ErrorForCode(g.ErrorCode)
}

// waitConsumerGroupStable waits until the consumer group is Stable with
// exactly the live members, they hold every partition exactly once, and
// each holds what the coordinator says is its assignment.
func waitConsumerGroupStable(t *testing.T, cl *kgo.Client, l *groupLedger, group string, partitions int32, live []*groupMember) {
	t.Helper()
	names := make([]string, 0, len(live))
	for _, m := range live {
		names = append(names, m.name)
	}
	testutil.Eventually(t, 30*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		g, err := describeConsumerGroup(ctx, cl, group)
		if err != nil {
			return err
		}
		if g.State != "Stable" || len(g.Members) != len(live) {
			return fmt.Errorf("group %s with %d members, want Stable with %d", g.State, len(g.Members), len(live))
		}
		byID := map[string][]int32{}
		for _, m := range g.Members {
			if m.MemberEpoch != g.Epoch {
				return fmt.Errorf("member %s at epoch %d, group at %d", m.MemberID, m.MemberEpoch, g.Epoch)
			}
			for _, tp := range m.Assignment.TopicPartitions {
				byID[m.MemberID] = append(byID[m.MemberID], tp.Partitions...)
			}
		}
		var ids, want []string
		for id := range byID {
			ids = append(ids, id)
		}
		for _, m := range g.Members {
			if _, ok := byID[m.MemberID]; !ok {
				ids = append(ids, m.MemberID)
			}
		}
		for _, m := range live {
			id, _ := m.cl.GroupMetadata()
			want = append(want, id)
		}
		sort.Strings(ids)
		sort.Strings(want)
		if !slices.Equal(ids, want) {
			return fmt.Errorf("members %v, want %v (%v)", ids, want, names)
		}
		if err := l.liveOwnership(names, partitions); err != nil {
			return err
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		for _, m := range live {
			id, _ := m.cl.GroupMetadata()
			stored := slices.Sorted(slices.Values(byID[id]))
			held := slices.Sorted(maps.Keys(l.owned[m.name]))
			if !slices.Equal(stored, held) {
				return fmt.Errorf("member %s: coordinator has assignment %v, member holds %v", m.name, stored, held)
			}
		}
		return nil
	})
}

// TestConsumerGroupKeepsAtLeastOnce runs a KIP-848 consumer group
// (franz-go's next-gen consumer, unchanged) through growth, a clean leave
// and a crash, with the uniform and the range server-side assignors,
// while records keep arriving. No partition is ever held by two live
// members (the callbacks' shared ledger fails on an overlap); after each
// change the members hold every partition once, as the coordinator's
// assignment says; every produced record is processed, and again only if
// no commit covering it had succeeded.
func TestConsumerGroupKeepsAtLeastOnce(t *testing.T) {
	for _, tc := range []struct {
		name     string
		balancer kgo.GroupBalancer // picks the server assignor
		assignor string
	}{
		{"uniform", kgo.CooperativeStickyBalancer(), "uniform"},
		{"range", kgo.RangeBalancer(), "range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const partitions = 6
			b := testutil.StartBroker(t, consumerGroupBrokerConfig...)
			adm := b.Admin()
			topic, group := "cg-"+tc.name, "cg-"+tc.name
			testutil.CreateTopic(t, adm, topic, partitions)
			l := newGroupLedger(t)
			admin := b.Client()

			prod := b.Client(kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.DefaultProduceTopic(topic))
			pctx, pcancel := context.WithCancel(context.Background())
			pdone := make(chan error, 1)
			go func() {
				var err error
				defer func() { pdone <- err }()
				for i := 0; pctx.Err() == nil; i++ {
					rs := make([]*kgo.Record, 12)
					for j := range rs {
						rs[j] = kgo.StringRecord(fmt.Sprintf("r%d-%d", i, j))
					}
					res := prod.ProduceSync(pctx, rs...)
					if pctx.Err() != nil {
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
			t.Cleanup(pcancel)

			start := func(name string, proxy bool) *groupMember {
				return startGroupMember(t, b, l, name, group, topic, tc.balancer, proxy, kgo.ServerSideBalancer())
			}
			m0 := start("m0", false)
			m1 := start("m1", true)
			m2 := start("m2", false)
			waitConsumerGroupStable(t, admin, l, group, partitions, []*groupMember{m0, m1, m2})
			g, err := describeConsumerGroup(context.Background(), admin, group)
			if err != nil || g.AssignorName != tc.assignor {
				t.Fatalf("group assignor %q (%v), want %q", g.AssignorName, err, tc.assignor)
			}

			m3 := start("m3", false)
			waitConsumerGroupStable(t, admin, l, group, partitions, []*groupMember{m0, m1, m2, m3})

			m0.leave(l)
			waitConsumerGroupStable(t, admin, l, group, partitions, []*groupMember{m1, m2, m3})

			crashed := time.Now()
			m1.crash(l)
			waitConsumerGroupStable(t, admin, l, group, partitions, []*groupMember{m2, m3})
			if d := time.Since(crashed); d < time.Second {
				t.Errorf("crashed member removed after %v, before its 1.5 s session timeout", d)
			}

			pcancel()
			if err := <-pdone; err != nil {
				t.Fatalf("produce: %v", err)
			}
			testutil.Eventually(t, 30*time.Second, l.allProcessed)
			dups := l.check()
			l.mu.Lock()
			n := len(l.produced)
			l.mu.Unlock()
			if n == 0 {
				t.Fatal("nothing produced")
			}
			t.Logf("%d records produced, %d processed twice", n, dups)

			// The group is a consumer group for ListGroups, and the
			// classic protocol cannot join it.
			lg := kmsg.NewPtrListGroupsRequest()
			lg.TypesFilter = []string{"consumer"}
			resp, err := lg.RequestWith(context.Background(), admin)
			if err != nil || len(resp.Groups) != 1 || resp.Groups[0].Group != group || resp.Groups[0].GroupType != "consumer" ||
				resp.Groups[0].GroupState != "Stable" {
				t.Fatalf("ListGroups consumer: %+v %v", resp, err)
			}
			jr := joinReq(group, "", topic)
			jresp := request[*kmsg.JoinGroupResponse](t, admin, jr)
			if jresp.ErrorCode != kerr.InconsistentGroupProtocol.Code {
				t.Fatalf("classic JoinGroup of a consumer group: %v", kerr.ErrorForCode(jresp.ErrorCode))
			}
		})
	}
}
