package broker_test

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/testutil"
)

// shareOffsets is DescribeShareGroupOffsets v1 of one partition: its
// start offset and lag.
func shareOffsets(t *testing.T, ctx context.Context, cl *kgo.Client, group, topic string, partition int32) (start, lag int64) {
	t.Helper()
	req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	req.Version = 1
	g := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
	g.GroupID = group
	rt := kmsg.NewDescribeShareGroupOffsetsRequestGroupTopic()
	rt.Topic, rt.Partitions = topic, []int32{partition}
	g.Topics = append(g.Topics, rt)
	req.Groups = append(req.Groups, g)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	rg := resp.Groups[0]
	if err := kerr.ErrorForCode(rg.ErrorCode); err != nil {
		t.Fatalf("describe share group offsets: %v", err)
	}
	p := rg.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		t.Fatalf("describe share group offsets of %s-%d: %v", topic, partition, err)
	}
	return p.StartOffset, p.Lag
}

// alterShareOffsets sends AlterShareGroupOffsets and returns the top-level
// error code and each partition's, by "topic/partition".
func alterShareOffsets(t *testing.T, ctx context.Context, cl *kgo.Client, group string, offsets map[string]map[int32]int64) (int16, map[string]int16) {
	t.Helper()
	req := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	req.GroupID = group
	for topic, ps := range offsets {
		rt := kmsg.NewAlterShareGroupOffsetsRequestTopic()
		rt.Topic = topic
		for p, o := range ps {
			rp := kmsg.NewAlterShareGroupOffsetsRequestTopicPartition()
			rp.Partition, rp.StartOffset = p, o
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	parts := map[string]int16{}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			parts[fmt.Sprintf("%s/%d", rt.Topic, rp.Partition)] = rp.ErrorCode
		}
	}
	return resp.ErrorCode, parts
}

// deleteShareOffsets sends DeleteShareGroupOffsets and returns the
// top-level error code and each topic's.
func deleteShareOffsets(t *testing.T, ctx context.Context, cl *kgo.Client, group string, topics ...string) (int16, map[string]int16) {
	t.Helper()
	req := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
	req.GroupID = group
	for _, topic := range topics {
		rt := kmsg.NewDeleteShareGroupOffsetsRequestTopic()
		rt.Topic = topic
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int16{}
	for _, rt := range resp.Topics {
		out[rt.Topic] = rt.ErrorCode
	}
	return resp.ErrorCode, out
}

func wantCode(t *testing.T, what string, got int16, want *kerr.Error) {
	t.Helper()
	if (want == nil && got != 0) || (want != nil && got != want.Code) {
		t.Fatalf("%s: %v, want %v", what, kerr.ErrorForCode(got), want)
	}
}

// acceptAll has a raw member acquire and accept records of one partition
// until it accepted n, and returns the offsets it acquired, in order,
// with their delivery counts.
func acceptAll(t *testing.T, ctx context.Context, m *rawShareMember, id [16]byte, n int) ([]int64, []int16) {
	t.Helper()
	var offs []int64
	var counts []int16
	var acks []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch
	deadline := time.Now().Add(20 * time.Second)
	for len(offs) < n && time.Now().Before(deadline) {
		fr, err := m.fetch(ctx, id, 0, acks)
		if err != nil || fr.ErrorCode != 0 {
			t.Fatalf("fetch: %v %+v", err, fr)
		}
		acks = nil
		for _, tp := range fr.Topics {
			for _, p := range tp.Partitions {
				if p.ErrorCode != 0 || p.AcknowledgeErrorCode != 0 {
					t.Fatalf("fetch partition: %v, acknowledge: %v", kerr.ErrorForCode(p.ErrorCode), kerr.ErrorForCode(p.AcknowledgeErrorCode))
				}
				for _, a := range p.AcquiredRecords {
					for o := a.FirstOffset; o <= a.LastOffset; o++ {
						offs = append(offs, o)
						counts = append(counts, a.DeliveryCount)
					}
					b := kmsg.NewShareFetchRequestTopicPartitionAcknowledgementBatch()
					b.FirstOffset, b.LastOffset, b.AcknowledgeTypes = a.FirstOffset, a.LastOffset, []int8{1}
					acks = append(acks, b)
				}
			}
		}
	}
	if len(acks) > 0 {
		// Deliver the last acknowledgements, waiting briefly for more.
		m.maxWait = 50
		if fr, err := m.fetch(ctx, id, 0, acks); err != nil || fr.ErrorCode != 0 {
			t.Fatalf("fetch: %v %+v", err, fr)
		} else if n, _, _ := acquiredCount(fr); n != 0 {
			t.Fatalf("acquired %d records past the %d expected", n, len(offs))
		}
	}
	return offs, counts
}

// leave makes a raw member leave its share group and close its share
// session.
func (m *rawShareMember) leave(t *testing.T, ctx context.Context, id [16]byte) {
	t.Helper()
	m.epoch = -1
	if r, err := m.heartbeat(ctx, nil); err != nil || r.ErrorCode != 0 {
		t.Fatalf("leave: %v %+v", err, r)
	}
	m.session = -1
	if _, err := m.fetch(ctx, id, 0, nil); err != nil {
		t.Fatal(err)
	}
	m.epoch, m.session = 0, 0
}

// TestShareGroupOffsetsAlterDeleteAndLag: AlterShareGroupOffsets moves an
// empty share group's start offset, after which the group gets every
// record from there once, with delivery count 1; DescribeShareGroupOffsets
// v1 reports the start offset and the lag; DeleteShareGroupOffsets makes
// the group start over at share.auto.offset.reset; both refuse a group
// with members (NON_EMPTY_GROUP) and answer bad input with Kafka's codes;
// a partition leader's write from the state before an alter is fenced.
// Reference: KIP-932 "Administration", KIP-1226 (lag).
func TestShareGroupOffsetsAlterDeleteAndLag(t *testing.T) {
	t.Parallel()
	b := testutil.StartBroker(t, shareBrokerConfig...)
	const topic, group = "share-alter", "sg-alter"
	testutil.CreateTopic(t, b.Admin(), topic, 1)
	cl := b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	produceValues(t, cl, topic, 1, 10)
	id := shareTopicID(t, cl, topic)

	a := &rawShareMember{cl: cl, group: group, member: "a", maxWait: 200}
	testutil.Eventually(t, 10*time.Second, func() error {
		if r, err := a.heartbeat(ctx, []string{topic}); err != nil || r.ErrorCode != 0 {
			return fmt.Errorf("heartbeat: %v %v", err, r)
		}
		return nil
	})
	if offs, _ := acceptAll(t, ctx, a, id, 10); len(offs) != 10 {
		t.Fatalf("a accepted %v", offs)
	}
	if start, lag := shareOffsets(t, ctx, cl, group, topic, 0); start != 10 || lag != 0 {
		t.Fatalf("after accepting 0-9: start %d lag %d, want 10 and 0", start, lag)
	}
	produceValues(t, cl, topic, 1, 5) // offsets 10-14
	if start, lag := shareOffsets(t, ctx, cl, group, topic, 0); start != 10 || lag != 5 {
		t.Fatalf("after 5 more records: start %d lag %d, want 10 and 5", start, lag)
	}

	// With a member: refused, nothing changed.
	top, _ := alterShareOffsets(t, ctx, cl, group, map[string]map[int32]int64{topic: {0: 3}})
	wantCode(t, "alter with a member", top, kerr.NonEmptyGroup)
	top, _ = deleteShareOffsets(t, ctx, cl, group, topic)
	wantCode(t, "delete with a member", top, kerr.NonEmptyGroup)
	if start, _ := shareOffsets(t, ctx, cl, group, topic, 0); start != 10 {
		t.Fatalf("a refused alter moved the start offset to %d", start)
	}

	a.leave(t, ctx, id)
	top, parts := alterShareOffsets(t, ctx, cl, group, map[string]map[int32]int64{topic: {0: 3, 1: 0, -1: 0}, "no-such-topic": {0: 0}})
	wantCode(t, "alter of an empty group", top, nil)
	wantCode(t, "alter of partition 0", parts[topic+"/0"], nil)
	wantCode(t, "alter of partition 1 of a 1-partition topic", parts[topic+"/1"], kerr.UnknownTopicOrPartition)
	wantCode(t, "alter of partition -1", parts[topic+"/-1"], kerr.UnknownTopicOrPartition)
	wantCode(t, "alter of an unknown topic", parts["no-such-topic/0"], kerr.UnknownTopicOrPartition)
	_, parts = alterShareOffsets(t, ctx, cl, group, map[string]map[int32]int64{topic: {0: -5}})
	wantCode(t, "alter to a negative offset", parts[topic+"/0"], kerr.InvalidRequest)
	if start, lag := shareOffsets(t, ctx, cl, group, topic, 0); start != 3 || lag != 12 {
		t.Fatalf("after the alter to 3: start %d lag %d, want 3 and 12", start, lag)
	}

	// The state epoch moved: a write of a leader that read the state
	// before the alter (state epoch 0) is fenced.
	rs := kmsg.NewPtrReadShareGroupStateRequest()
	rs.GroupID = group
	rst := kmsg.NewReadShareGroupStateRequestTopic()
	rst.TopicID = id
	rsp := kmsg.NewReadShareGroupStateRequestTopicPartition()
	rsp.LeaderEpoch = -1
	rst.Partitions = append(rst.Partitions, rsp)
	rs.Topics = append(rs.Topics, rst)
	// One broker: every coordinator is here.
	rr, err := rs.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	st := rr.Topics[0].Partitions[0]
	if st.ErrorCode != 0 || st.StateEpoch < 1 || st.StartOffset != 3 || len(st.StateBatches) != 0 {
		t.Fatalf("state after the alter: %+v", st)
	}
	ws := kmsg.NewPtrWriteShareGroupStateRequest()
	ws.GroupID = group
	wst := kmsg.NewWriteShareGroupStateRequestTopic()
	wst.TopicID = id
	wsp := kmsg.NewWriteShareGroupStateRequestTopicPartition()
	wsp.StateEpoch, wsp.LeaderEpoch, wsp.StartOffset = st.StateEpoch-1, -1, 10
	wst.Partitions = append(wst.Partitions, wsp)
	ws.Topics = append(ws.Topics, wst)
	wr, err := ws.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, "a write from the state before the alter", wr.Topics[0].Partitions[0].ErrorCode, kerr.FencedStateEpoch)

	// A new member gets 3-14 once each, as first deliveries.
	c := &rawShareMember{cl: cl, group: group, member: "c", maxWait: 200}
	if r, err := c.heartbeat(ctx, []string{topic}); err != nil || r.ErrorCode != 0 {
		t.Fatalf("heartbeat: %v %+v", err, r)
	}
	offs, counts := acceptAll(t, ctx, c, id, 12)
	if fmt.Sprint(offs) != "[3 4 5 6 7 8 9 10 11 12 13 14]" {
		t.Fatalf("after the alter to 3, c acquired %v", offs)
	}
	for i, n := range counts {
		if n != 1 {
			t.Errorf("offset %d delivered with count %d, want 1 (the alter starts over)", offs[i], n)
		}
	}
	c.leave(t, ctx, id)

	// Delete: the group starts again at share.auto.offset.reset
	// (earliest here), so 0-14 come again.
	top, topics := deleteShareOffsets(t, ctx, cl, group, topic, "no-such-topic")
	wantCode(t, "delete", top, nil)
	wantCode(t, "delete of the topic", topics[topic], nil)
	wantCode(t, "delete of an unknown topic", topics["no-such-topic"], kerr.UnknownTopicOrPartition)
	if start, lag := shareOffsets(t, ctx, cl, group, topic, 0); start != -1 || lag != -1 {
		t.Fatalf("after the delete: start %d lag %d, want -1 and -1", start, lag)
	}
	_, topics = deleteShareOffsets(t, ctx, cl, group, topic)
	wantCode(t, "a second delete", topics[topic], kerr.UnknownTopicOrPartition)
	d := &rawShareMember{cl: cl, group: group, member: "d", maxWait: 200}
	if r, err := d.heartbeat(ctx, []string{topic}); err != nil || r.ErrorCode != 0 {
		t.Fatalf("heartbeat: %v %+v", err, r)
	}
	if offs, _ := acceptAll(t, ctx, d, id, 15); len(offs) != 15 || offs[0] != 0 || !sort.SliceIsSorted(offs, func(i, j int) bool { return offs[i] < offs[j] }) {
		t.Fatalf("after the delete, d acquired %v; want 0-14", offs)
	}
	d.leave(t, ctx, id)

	// Group ids: unknown for delete, created by alter, another type for
	// both.
	top, _ = deleteShareOffsets(t, ctx, cl, "sg-never", topic)
	wantCode(t, "delete of an unknown group", top, kerr.GroupIDNotFound)
	top, _ = alterShareOffsets(t, ctx, cl, "sg-new", map[string]map[int32]int64{topic: {0: 12}})
	wantCode(t, "alter of a new group", top, nil)
	n := &rawShareMember{cl: cl, group: "sg-new", member: "n", maxWait: 200}
	if r, err := n.heartbeat(ctx, []string{topic}); err != nil || r.ErrorCode != 0 {
		t.Fatalf("heartbeat: %v %+v", err, r)
	}
	if offs, _ := acceptAll(t, ctx, n, id, 3); fmt.Sprint(offs) != "[12 13 14]" {
		t.Fatalf("a group created by the alter to 12 acquired %v", offs)
	}
	n.leave(t, ctx, id)
	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: topic, Partition: 0, At: 1, LeaderEpoch: -1})
	if r, err := b.Admin().CommitOffsets(ctx, "classic-g", os); err != nil || r.Error() != nil {
		t.Fatalf("commit: %v %v", err, r.Error())
	}
	top, _ = alterShareOffsets(t, ctx, cl, "classic-g", map[string]map[int32]int64{topic: {0: 0}})
	wantCode(t, "alter of a classic group", top, kerr.GroupIDNotFound)
	top, _ = deleteShareOffsets(t, ctx, cl, "classic-g", topic)
	wantCode(t, "delete of a classic group", top, kerr.GroupIDNotFound)
}

// TestShareGroupAlteredOffsetSurvivesShareCoordinatorKill: the start
// offset set by AlterShareGroupOffsets is committed by the share
// coordinator, so after that broker is killed the new coordinator answers
// it and the group starts there. Reference: KIP-932 "Administration".
func TestShareGroupAlteredOffsetSurvivesShareCoordinatorKill(t *testing.T) {
	t.Parallel()
	c := testutil.StartClusterLogged(t, 3, append(shareBrokerConfig,
		"offsets.topic.replication.factor=3", "share.coordinator.state.topic.replication.factor=3",
		"replica.lag.time.max.ms=2000")...)
	const topic, group = "share-alter-fo", "sg-alter-fo"
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if r, err := c.Admin().CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": kmsg.StringPtr("2")}, topic); err != nil || r.Err != nil {
		t.Fatalf("create topic: %v %v", err, r.Err)
	}
	cl := c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceValues(t, cl, topic, 1, 10)
	id := shareTopicID(t, cl, topic)
	testutil.Eventually(t, 30*time.Second, func() error {
		top, parts := alterShareOffsets(t, ctx, cl, group, map[string]map[int32]int64{topic: {0: 6}})
		if err := kerr.ErrorForCode(top); err != nil {
			return err
		}
		return kerr.ErrorForCode(parts[topic+"/0"])
	})
	key := fmt.Sprintf("%s:%x:%d", group, id, 0)
	coord := c.Leader("__share_group_state", group_Partition(key, 4))
	testutil.Eventually(t, 30*time.Second, func() error {
		if isr := c.ISR("__share_group_state", group_Partition(key, 4)); len(isr) < 5 {
			return fmt.Errorf("isr %q", isr)
		}
		return nil
	})
	t.Logf("killing share coordinator %d", coord)
	c.Kill(int(coord))
	cl = c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	testutil.Eventually(t, 40*time.Second, func() error {
		if start, _ := shareOffsetsErr(ctx, cl, group, topic, 0); start != 6 {
			return fmt.Errorf("start offset %d after the kill, want 6", start)
		}
		return nil
	})
	m := &rawShareMember{cl: cl, group: group, member: "m", maxWait: 200}
	var got string
	testutil.Eventually(t, 40*time.Second, func() error {
		if r, err := m.heartbeat(ctx, []string{topic}); err != nil || r.ErrorCode != 0 {
			m.epoch = 0
			return fmt.Errorf("heartbeat: %v %v", err, r)
		}
		m.direct, m.node, m.session = true, c.Leader(topic, 0), 0
		fr, err := m.fetch(ctx, id, 0, nil)
		if err != nil {
			return err
		}
		n, first, last := acquiredCount(fr)
		if n == 0 {
			return fmt.Errorf("nothing acquired: %+v", fr)
		}
		got = fmt.Sprintf("%d-%d", first, last)
		return nil
	})
	if got != "6-9" {
		t.Fatalf("after the alter to 6 and the coordinator kill, the group acquired %s", got)
	}
}

// shareOffsetsErr is shareOffsets that returns -1 on any error.
func shareOffsetsErr(ctx context.Context, cl *kgo.Client, group, topic string, partition int32) (start, lag int64) {
	req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	req.Version = 1
	g := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
	g.GroupID = group
	rt := kmsg.NewDescribeShareGroupOffsetsRequestGroupTopic()
	rt.Topic, rt.Partitions = topic, []int32{partition}
	g.Topics = append(g.Topics, rt)
	req.Groups = append(req.Groups, g)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || resp.Groups[0].ErrorCode != 0 || len(resp.Groups[0].Topics) == 0 || resp.Groups[0].Topics[0].Partitions[0].ErrorCode != 0 {
		return -1, -1
	}
	p := resp.Groups[0].Topics[0].Partitions[0]
	return p.StartOffset, p.Lag
}
