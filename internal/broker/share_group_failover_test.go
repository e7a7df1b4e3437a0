package broker_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/testutil"
)

// TestShareGroupSurvivesGroupCoordinatorKill: in a 3-broker cluster, the
// group coordinator of a share group with two consuming members and one
// member driven by hand is killed. The next coordinator rebuilds the
// group from __consumer_offsets: the hand-driven member's heartbeat at
// its epoch is answered at that epoch (no UNKNOWN_MEMBER_ID, no rejoin),
// the group epoch and members are unchanged, and every record produced
// before and after the kill is delivered and accepted exactly once. The
// group is chosen so that its coordinator is neither the partition's
// leader nor the share-partition's share coordinator: the kill moves
// membership only. Reference: KIP-932, "Share group membership"; Kafka
// GroupMetadataManager.replay.
func TestShareGroupSurvivesGroupCoordinatorKill(t *testing.T) {
	t.Parallel()
	c := testutil.StartClusterLogged(t, 3, append(shareBrokerConfig,
		"offsets.topic.replication.factor=3", "share.coordinator.state.topic.replication.factor=3",
		"group.share.session.timeout.ms=45000", "replica.lag.time.max.ms=2000")...)
	const topic, before, after = "share-gfo", 200, 200
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	if r, err := c.Admin().CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": kmsg.StringPtr("2")}, topic); err != nil || r.Err != nil {
		t.Fatalf("create topic: %v %v", err, r.Err)
	}
	cl := c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	id := shareTopicID(t, cl, topic)

	// A probe group creates __consumer_offsets and __share_group_state.
	attempt := 0
	testutil.Eventually(t, 30*time.Second, func() error {
		attempt++
		probe := &rawShareMember{cl: cl, group: "sg-gfo-probe", member: fmt.Sprintf("p%d", attempt), maxWait: 10}
		if r, err := probe.heartbeat(ctx, []string{topic}); err != nil || r.ErrorCode != 0 {
			return fmt.Errorf("probe heartbeat: %v %v", err, r)
		}
		probe.direct, probe.node = true, c.Leader(topic, 0)
		fr, err := probe.fetch(ctx, id, 0, nil)
		if err != nil || fr.ErrorCode != 0 || fr.Topics[0].Partitions[0].ErrorCode != 0 {
			return fmt.Errorf("probe fetch: %v %+v", err, fr)
		}
		return nil
	})
	var group string
	var coord int32
	testutil.Eventually(t, 30*time.Second, func() error {
		leader := c.Leader(topic, 0)
		for i := 0; i < 200; i++ {
			g := fmt.Sprintf("sg-gfo-%d", i)
			gc := c.Leader("__consumer_offsets", group_Partition(g, 4))
			sc := c.Leader("__share_group_state", group_Partition(fmt.Sprintf("%s:%x:%d", g, id, 0), 4))
			if leader >= 0 && gc >= 0 && sc >= 0 && gc != leader && gc != sc {
				group, coord = g, gc
				return nil
			}
		}
		return errors.New("no group id with a coordinator apart from the leaders")
	})
	testutil.Eventually(t, 30*time.Second, func() error {
		if isr := c.ISR("__consumer_offsets", group_Partition(group, 4)); len(isr) < 5 {
			return fmt.Errorf("isr %q", isr)
		}
		return nil
	})
	produceValues(t, cl, topic, 1, before)

	watcher := &rawShareMember{cl: cl, group: group, member: "watcher", maxWait: 10}
	testutil.Eventually(t, 20*time.Second, func() error {
		if r, err := watcher.heartbeat(ctx, []string{topic}); err != nil || r.ErrorCode != 0 {
			watcher.epoch = 0
			return fmt.Errorf("heartbeat: %v %v", err, r)
		}
		return nil
	})
	l := newShareLedger()
	cctx, ccancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			shareConsumer(cctx, t, c.Addrs()[int(c.Leader(topic, 0))], group, topic, func(r *kgo.Record) kgo.AckStatus {
				l.add(r)
				return kgo.AckAccept
			})
		}()
	}
	testutil.Eventually(t, 30*time.Second, func() error {
		if n := l.distinct(); n < before {
			return fmt.Errorf("%d of %d records delivered", n, before)
		}
		return nil
	})
	describe := func(cl *kgo.Client) (epoch int32, members map[string]int32, err error) {
		req := kmsg.NewPtrShareGroupDescribeRequest()
		req.GroupIDs = []string{group}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return 0, nil, err
		}
		g := resp.Groups[0]
		if g.ErrorCode != 0 {
			return 0, nil, kerr.ErrorForCode(g.ErrorCode)
		}
		members = map[string]int32{}
		for _, m := range g.Members {
			members[m.MemberID] = m.MemberEpoch
		}
		return g.GroupEpoch, members, nil
	}
	var epoch0 int32
	var members0 map[string]int32
	testutil.Eventually(t, 20*time.Second, func() error {
		var err error
		if epoch0, members0, err = describe(cl); err != nil {
			return err
		}
		if len(members0) != 3 {
			return fmt.Errorf("members %v", members0)
		}
		for m, e := range members0 {
			if e != epoch0 {
				return fmt.Errorf("member %s at epoch %d, group at %d", m, e, epoch0)
			}
		}
		return nil
	})
	if watcher.epoch != epoch0 {
		// The group epoch moved when the consumers joined: the watcher
		// rejoins with its id (which changes nothing) to learn it.
		watcher.epoch = 0
		if r, err := watcher.heartbeat(ctx, []string{topic}); err != nil || r.ErrorCode != 0 || watcher.epoch != epoch0 {
			t.Fatalf("watcher heartbeat: %v %+v, epoch %d want %d", err, r, watcher.epoch, epoch0)
		}
	}

	t.Logf("group %s: killing group coordinator %d (partition leader %d)", group, coord, c.Leader(topic, 0))
	c.Kill(int(coord))
	testutil.Eventually(t, 30*time.Second, func() error {
		if l := c.Leader("__consumer_offsets", group_Partition(group, 4)); l < 0 || l == coord {
			return fmt.Errorf("coordinator %d", l)
		}
		return nil
	})
	cl = c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner())) // the old one may keep dialing the dead broker
	watcher.cl = cl
	testutil.Eventually(t, 30*time.Second, func() error {
		r, err := watcher.heartbeat(ctx, nil)
		if err != nil {
			return err
		}
		switch err := kerr.ErrorForCode(r.ErrorCode); {
		case err == nil:
			return nil
		case errors.Is(err, kerr.UnknownMemberID), errors.Is(err, kerr.FencedMemberEpoch):
			t.Fatalf("after the coordinator moved, the watcher at epoch %d got %v", watcher.epoch, err)
		default:
			return err // the new coordinator is still loading
		}
		return nil
	})
	if watcher.epoch != epoch0 {
		t.Fatalf("after the coordinator moved, the watcher is at epoch %d, was %d", watcher.epoch, epoch0)
	}
	produceValues(t, cl, topic, 1, after)
	testutil.Eventually(t, 40*time.Second, func() error {
		if n := l.distinct(); n < before+after {
			return fmt.Errorf("%d of %d records delivered", n, before+after)
		}
		return nil
	})
	epoch1, members1, err := describe(cl)
	if err != nil || epoch1 != epoch0 || len(members1) != len(members0) {
		t.Fatalf("after the coordinator moved: epoch %d members %v (%v); before: epoch %d members %v", epoch1, members1, err, epoch0, members0)
	}
	for m, e := range members0 {
		if members1[m] != e {
			t.Fatalf("member %s at epoch %d after the coordinator moved, %d before", m, members1[m], e)
		}
	}
	// Give redeliveries a chance to show.
	time.Sleep(2500 * time.Millisecond)
	ccancel()
	wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, n := range l.delivered {
		if n != 1 {
			t.Errorf("record %s delivered %d times (counts %v)", k, n, l.counts[k])
		}
	}
	if len(l.delivered) != before+after {
		t.Errorf("%d records delivered, want %d", len(l.delivered), before+after)
	}
}
