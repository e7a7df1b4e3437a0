package broker_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/share"
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
		"group.share.session.timeout.ms=45000", "replica.lag.time.max.ms=2000", "offsets.topic.num.partitions=3")...)
	const topic, before, after = "share-gfo", 200, 200
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	if r, err := c.Admin().CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": kmsg.StringPtr("2")}, topic); err != nil || r.Err != nil {
		t.Fatalf("create topic: %v %v", err, r.Err)
	}
	cl := c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	id := shareTopicID(t, cl, topic)

	createShareInternalTopics(t, ctx, c, cl, topic)
	group, coord, _ := pickShareGroup(t, c, topic, id, "sg-gfo", 3, func(gc, sc, leader int32) bool { return gc != leader && gc != sc })
	testutil.Eventually(t, 30*time.Second, func() error {
		if isr := c.ISR("__consumer_offsets", group_Partition(group, 3)); len(isr) < 5 {
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
		// A member moves to the group's epoch at its own heartbeat:
		// the watcher heartbeats here, the consumers on their own.
		if r, err := watcher.heartbeat(ctx, nil); err != nil || r.ErrorCode != 0 {
			return fmt.Errorf("watcher heartbeat: %v %v", err, r)
		}
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
		t.Fatalf("watcher at epoch %d, group at %d", watcher.epoch, epoch0)
	}

	t.Logf("group %s: killing group coordinator %d (partition leader %d)", group, coord, c.Leader(topic, 0))
	c.Kill(int(coord))
	testutil.Eventually(t, 30*time.Second, func() error {
		if l := c.Leader("__consumer_offsets", group_Partition(group, 3)); l < 0 || l == coord {
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

// createShareInternalTopics makes a probe group join and fetch topic, so
// that __consumer_offsets and __share_group_state exist.
func createShareInternalTopics(t *testing.T, ctx context.Context, c *testutil.Cluster, cl *kgo.Client, topic string) {
	t.Helper()
	id := shareTopicID(t, cl, topic)
	attempt := 0
	testutil.Eventually(t, 30*time.Second, func() error {
		attempt++
		probe := &rawShareMember{cl: cl, group: "sg-probe-" + topic, member: fmt.Sprintf("p%d", attempt), maxWait: 10}
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
}

// pickShareGroup returns a group id whose group coordinator gc and share
// coordinator sc (of partition 0 of the topic) make ok true with the
// partition's leader. __consumer_offsets must have offsetsPartitions
// partitions, a count other than __share_group_state's 4: with equal
// counts a group's two coordinators are tied to each other by the hash.
func pickShareGroup(t *testing.T, c *testutil.Cluster, topic string, id [16]byte, prefix string, offsetsPartitions int32,
	ok func(gc, sc, leader int32) bool) (group string, gc, sc int32) {
	t.Helper()
	testutil.Eventually(t, 30*time.Second, func() error {
		leader := c.Leader(topic, 0)
		for i := 0; i < 500; i++ {
			g := fmt.Sprintf("%s-%d", prefix, i)
			gc = c.Leader("__consumer_offsets", group_Partition(g, offsetsPartitions))
			sc = c.Leader("__share_group_state", group_Partition(fmt.Sprintf("%s:%x:%d", g, id, 0), 4))
			if leader >= 0 && gc >= 0 && sc >= 0 && ok(gc, sc, leader) {
				group = g
				return nil
			}
		}
		return fmt.Errorf("no group id with the coordinators asked for (partition leader %d)", leader)
	})
	return group, gc, sc
}

// TestShareStateDeleteFencesOldWritersAfterShareCoordinatorKill: a
// member acquires records on the partition leader, accepts half and
// leaves; the group's offsets are deleted (DeleteShareGroupOffsets) while
// the leader, another broker than the group coordinator, still holds the
// old state with records in flight; the share coordinator is killed.
// When the leader's locks expire it writes the old state at the old
// state epoch: the next share coordinator, which replayed the delete,
// fences it, and a new member starts from the log start with every
// record at delivery count 1 (the deleted state is not resurrected).
// Reference: KIP-932, "Share group state epoch".
func TestShareStateDeleteFencesOldWritersAfterShareCoordinatorKill(t *testing.T) {
	t.Parallel()
	const lock = 12 * time.Second
	c := testutil.StartClusterLogged(t, 3, append(shareBrokerConfig,
		"offsets.topic.replication.factor=3", "share.coordinator.state.topic.replication.factor=3",
		fmt.Sprintf("group.share.record.lock.duration.ms=%d", lock.Milliseconds()), "group.share.session.timeout.ms=45000",
		"replica.lag.time.max.ms=2000",
		// Not the share coordinator's 4: with equal counts, a group's
		// coordinators are tied to each other by the hash.
		"offsets.topic.num.partitions=3")...)
	const topic = "share-dfo"
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	cl := c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if r, err := c.Admin().CreateTopic(ctx, 1, 3, nil, topic+"-probe"); err != nil || r.Err != nil {
		t.Fatalf("create topic: %v %v", err, r.Err)
	}
	createShareInternalTopics(t, ctx, c, cl, topic+"-probe")
	// The topic's two replicas leave out a broker leading a
	// __share_group_state partition: the share coordinator to kill, whose
	// kill then leaves the partition and its leader epoch alone.
	var sc int32 = -1
	testutil.Eventually(t, 20*time.Second, func() error {
		if sc = c.Leader("__share_group_state", 0); sc < 0 {
			return errors.New("no __share_group_state leader")
		}
		return nil
	})
	var replicas []int32
	for i := range c.Brokers {
		if int32(i) != sc {
			replicas = append(replicas, int32(i))
		}
	}
	if r, err := c.Admin().CreateTopic(ctx, 1, 2, nil, topic); err != nil || r.Err != nil {
		t.Fatalf("create topic: %v %v", err, r.Err)
	}
	var req kadm.AlterPartitionAssignmentsReq
	req.Assign(topic, 0, replicas)
	want := fmt.Sprint(replicas[0], " ", replicas[1])
	testutil.Eventually(t, 30*time.Second, func() error {
		if isr := c.ISR(topic, 0); isr != want || c.Leader(topic, 0) < 0 {
			// Moved until the replicas are those.
			if _, err := c.Admin().AlterPartitionAssignments(ctx, req); err != nil {
				return err
			}
			return fmt.Errorf("isr %q, want %q", isr, want)
		}
		return nil
	})
	id := shareTopicID(t, cl, topic)
	group, _, _ := pickShareGroup(t, c, topic, id, "sg-dfo", 3, func(gc, s, leader int32) bool { return gc != leader && s == sc })
	produceValues(t, cl, topic, 1, 10)
	leader := c.Leader(topic, 0)

	a := &rawShareMember{cl: cl, group: group, member: "a", maxWait: 100}
	var acquiredAt time.Time
	testutil.Eventually(t, 20*time.Second, func() error {
		if r, err := a.heartbeat(ctx, []string{topic}); err != nil || r.ErrorCode != 0 {
			a.epoch = 0
			return fmt.Errorf("heartbeat: %v %v", err, r)
		}
		a.direct, a.node, a.session = true, leader, 0
		acquiredAt = time.Now()
		fr, err := a.fetch(ctx, id, 0, nil)
		if err != nil || fr.ErrorCode != 0 {
			return fmt.Errorf("fetch: %v %+v", err, fr)
		}
		if n, first, last := acquiredCount(fr); n != 10 || first != 0 || last != 9 {
			return fmt.Errorf("acquired %d (%d-%d)", n, first, last)
		}
		return nil
	})
	// Accept 0-4; 5-9 stay acquired by a.
	areq := kmsg.NewPtrShareAcknowledgeRequest()
	areq.Version = 1
	areq.GroupID, areq.MemberID, areq.ShareSessionEpoch = &a.group, &a.member, a.session
	rt := kmsg.NewShareAcknowledgeRequestTopic()
	rt.TopicID = id
	rp := kmsg.NewShareAcknowledgeRequestTopicPartition()
	ab := kmsg.NewShareAcknowledgeRequestTopicPartitionAcknowledgementBatch()
	ab.FirstOffset, ab.LastOffset, ab.AcknowledgeTypes = 0, 4, []int8{1}
	rp.AcknowledgementBatches = append(rp.AcknowledgementBatches, ab)
	rt.Partitions = append(rt.Partitions, rp)
	areq.Topics = append(areq.Topics, rt)
	r, err := cl.Broker(int(leader)).Request(ctx, areq)
	if err != nil {
		t.Fatal(err)
	}
	if ar := r.(*kmsg.ShareAcknowledgeResponse); ar.ErrorCode != 0 || ar.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("acknowledge: %+v", ar)
	}
	if start, _ := shareOffsets(t, ctx, cl, group, topic, 0); start != 5 {
		t.Fatalf("start offset %d after accepting 0-4, want 5", start)
	}
	a.epoch = -1
	if r, err := a.heartbeat(ctx, nil); err != nil || r.ErrorCode != 0 {
		t.Fatalf("leave: %v %+v", err, r)
	}
	code, topics := deleteShareOffsets(t, ctx, cl, group, topic)
	wantCode(t, "delete share group offsets", code, nil)
	wantCode(t, "delete share group offsets of the topic", topics[topic], nil)
	if start, _ := shareOffsets(t, ctx, cl, group, topic, 0); start != -1 {
		t.Fatalf("start offset %d after the delete, want -1", start)
	}

	part := group_Partition(fmt.Sprintf("%s:%x:%d", group, id, 0), 4)
	// The delete's record is the share-partition's last, so compaction,
	// which keeps the last record of each key, keeps the fence too.
	if v := lastStateRecord(t, ctx, c, part, share.EncodeKey(share.StateKey{Group: group, TopicID: id, Partition: 0})); len(v) != 6 || v[0] != 0 || v[1] != 1 {
		t.Fatalf("the share-partition's last __share_group_state record after the delete is %x; want a version 1 (deleted) value", v)
	}
	testutil.Eventually(t, 30*time.Second, func() error {
		if isr := c.ISR("__share_group_state", part); len(isr) < 5 {
			return fmt.Errorf("isr %q", isr)
		}
		return nil
	})
	t.Logf("group %s: leader %d, killing share coordinator %d", group, leader, sc)
	c.Kill(int(sc))
	testutil.Eventually(t, 30*time.Second, func() error {
		if l := c.Leader("__share_group_state", part); l < 0 || l == sc {
			return fmt.Errorf("share coordinator %d", l)
		}
		return nil
	})
	cl = c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	// Past a's locks: the leader writes the old state back.
	time.Sleep(time.Until(acquiredAt.Add(lock + 2*time.Second)))
	b := &rawShareMember{cl: cl, group: group, member: "b", maxWait: 100}
	testutil.Eventually(t, 30*time.Second, func() error {
		if r, err := b.heartbeat(ctx, []string{topic}); err != nil || r.ErrorCode != 0 {
			b.epoch = 0
			return fmt.Errorf("heartbeat: %v %v", err, r)
		}
		b.direct, b.node, b.session = true, leader, 0
		fr, err := b.fetch(ctx, id, 0, nil)
		if err != nil || fr.ErrorCode != 0 {
			return fmt.Errorf("fetch: %v %+v", err, fr)
		}
		if p := fr.Topics[0].Partitions[0]; p.ErrorCode != 0 {
			return fmt.Errorf("fetch: %v", kerr.ErrorForCode(p.ErrorCode))
		}
		ar, ok := firstAcquired(fr)
		if !ok {
			return errors.New("nothing acquired yet")
		}
		if ar.FirstOffset != 0 || ar.LastOffset != 9 || ar.DeliveryCount != 1 {
			t.Fatalf("after the delete and the share coordinator kill, b acquired %d-%d at delivery count %d; want 0-9 at 1 (the old state came back)",
				ar.FirstOffset, ar.LastOffset, ar.DeliveryCount)
		}
		return nil
	})
	if start, _ := shareOffsets(t, ctx, cl, group, topic, 0); start != 0 {
		t.Fatalf("start offset %d after b acquired, want 0", start)
	}
}

// lastStateRecord returns the value of the last record with key in
// __share_group_state partition part (nil: a tombstone, or none).
func lastStateRecord(t *testing.T, ctx context.Context, c *testutil.Cluster, part int32, key []byte) []byte {
	t.Helper()
	adm := c.Admin()
	ends, err := adm.ListEndOffsets(ctx, "__share_group_state")
	if err != nil {
		t.Fatal(err)
	}
	end, _ := ends.Lookup("__share_group_state", part)
	if end.Err != nil {
		t.Fatal(end.Err)
	}
	cl := c.Client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"__share_group_state": {part: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxWait(100*time.Millisecond))
	defer cl.Close()
	var last []byte
	for next := int64(0); next < end.Offset; {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read __share_group_state-%d: at %d of %d", part, next, end.Offset)
		}
		fs.EachRecord(func(r *kgo.Record) {
			next = r.Offset + 1
			if string(r.Key) == string(key) {
				last = r.Value
			}
		})
	}
	return last
}
