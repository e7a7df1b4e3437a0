package broker_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/testutil"
)

// TestMixedGroupSurvivesCoordinatorKill: a consumer group with classic
// members and a consumer-protocol member (KIP-848 online migration) whose
// group coordinator is killed goes on at the new coordinator, which loads
// the converted group from __consumer_offsets: the same members, every
// partition owned by exactly one live member at each stable point and
// never by two at once, and every record produced processed, with no
// record processed again after a commit covering it. The group then
// downgrades to a classic group at the new coordinator when its
// consumer-protocol member leaves. Reference: KIP-848 "Online migration".
func TestMixedGroupSurvivesCoordinatorKill(t *testing.T) {
	t.Parallel()
	c := testutil.StartClusterLogged(t, 3, append(consumerGroupBrokerConfig,
		"offsets.topic.replication.factor=3", "replica.lag.time.max.ms=2000")...)
	const partitions = 6
	topic, group := "migrate-fo", "migrate-fo"
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	if r, err := c.Admin().CreateTopic(ctx, partitions, 3, map[string]*string{"min.insync.replicas": kmsg.StringPtr("2")}, topic); err != nil || r.Err != nil {
		t.Fatalf("create topic: %v %v", err, r.Err)
	}
	l := newGroupLedger(t)
	stopProduce := produceUntilStopped(t, c.Client, l, topic)
	member := func(name string, extra ...kgo.Opt) *groupMember {
		m := &groupMember{name: name, done: make(chan struct{}), kill: make(chan struct{})}
		opts := append(groupMemberOpts(l, name, group, topic, kgo.CooperativeStickyBalancer()), extra...)
		return runGroupMember(t, m, l, c.Client, opts)
	}
	admin := c.Client()
	c1, c2 := member("c1"), member("c2")
	waitGroupStable(t, c.Admin(), l, group, partitions, []*groupMember{c1, c2})
	n1 := member("n1", kgo.ServerSideBalancer())
	waitConsumerGroupStable(t, admin, l, group, partitions, []*groupMember{c1, c2, n1})

	coord := c.Leader("__consumer_offsets", group_Partition(group, 4))
	testutil.Eventually(t, 30*time.Second, func() error {
		if isr := c.ISR("__consumer_offsets", group_Partition(group, 4)); len(isr) < 5 {
			return fmt.Errorf("isr %q", isr)
		}
		return nil
	})
	t.Logf("killing group coordinator %d", coord)
	c.Kill(int(coord))
	testutil.Eventually(t, 30*time.Second, func() error {
		if l := c.Leader("__consumer_offsets", group_Partition(group, 4)); l < 0 || l == coord {
			return fmt.Errorf("coordinator %d", l)
		}
		return nil
	})
	admin = c.Client() // the old one may keep dialing the dead broker
	waitConsumerGroupStable(t, admin, l, group, partitions, []*groupMember{c1, c2, n1})

	// The new coordinator downgrades the group when n1 leaves.
	n1.leave(l)
	waitGroupStable(t, c.Admin(), l, group, partitions, []*groupMember{c1, c2})

	stopProduce()
	testutil.Eventually(t, 40*time.Second, l.allProcessed)
	dups := l.check()
	t.Logf("%d processed twice", dups)
}
