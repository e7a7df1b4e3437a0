package group

import (
	"context"
	"errors"
	"testing"
	"time"
)

func consumerTestConfig(topics TopicMap) Config {
	cfg := testConfig()
	cfg.Topics = func() Topics { return topics }
	return cfg
}

func cgJoin(member string, topics ...string) ConsumerHeartbeatRequest {
	return ConsumerHeartbeatRequest{Group: "cg", MemberID: member, MemberEpoch: 0, RebalanceTimeout: time.Minute,
		SubscribedTopicNames: topics, Owned: []TopicPartitions{}, ClientID: "c", ClientHost: "/h"}
}

// TestConsumerGroupSurvivesReload: a consumer group's members, epochs,
// assignments and offsets are all back after the partition is loaded
// again from __consumer_offsets, and the members go on heartbeating at
// their epochs.
func TestConsumerGroupSurvivesReload(t *testing.T) {
	ctx := context.Background()
	topics := TopicMap{"t": {Name: "t", ID: TopicID{9}, Partitions: 4}}
	log := &memLog{}
	c := newLoaded(t, consumerTestConfig(topics), log)
	r1, err := c.ConsumerGroupHeartbeat(ctx, cgJoin("m1", "t"), true)
	if err != nil || r1.MemberEpoch != 1 || len(r1.Assignment) != 1 || len(r1.Assignment[0].Partitions) != 4 {
		t.Fatalf("join m1: %+v %v", r1, err)
	}
	if _, err := c.OffsetCommit(ctx, OffsetCommitRequest{Group: "cg", MemberID: "m1", Generation: 1, Version: 9,
		Topics: []OffsetCommitTopic{{Topic: "t", Partitions: []OffsetCommitPartition{{Partition: 0, Offset: 42, LeaderEpoch: -1}}}}}); err != nil {
		t.Fatalf("commit: %v", err)
	}
	// A commit at another epoch is stale; below v9 it is refused.
	for _, tt := range []struct {
		epoch   int32
		version int16
		want    error
	}{{2, 9, ErrStaleMemberEpoch}, {1, 8, ErrUnsupportedVersion}} {
		_, err := c.OffsetCommit(ctx, OffsetCommitRequest{Group: "cg", MemberID: "m1", Generation: tt.epoch, Version: tt.version,
			Topics: []OffsetCommitTopic{{Topic: "t", Partitions: []OffsetCommitPartition{{Partition: 0, Offset: 1}}}}})
		if !errors.Is(err, tt.want) {
			t.Fatalf("commit epoch %d v%d: %v, want %v", tt.epoch, tt.version, err, tt.want)
		}
	}
	r2, err := c.ConsumerGroupHeartbeat(ctx, cgJoin("m2", "t"), true)
	if err != nil || r2.MemberEpoch != 2 {
		t.Fatalf("join m2: %+v %v", r2, err)
	}
	before, _ := c.ConsumerGroupDescribe(ctx, "cg")
	c.Close()

	c2 := newLoaded(t, consumerTestConfig(topics), log)
	after, err := c2.ConsumerGroupDescribe(ctx, "cg")
	if err != nil {
		t.Fatal(err)
	}
	if after.Epoch != before.Epoch || after.AssignmentEpoch != before.AssignmentEpoch || len(after.Members) != 2 ||
		after.State != "Reconciling" {
		t.Fatalf("after reload %+v, before %+v", after, before)
	}
	for i := range after.Members {
		a, b := after.Members[i], before.Members[i]
		if a.MemberID != b.MemberID || a.MemberEpoch != b.MemberEpoch || len(a.Assignment) != len(b.Assignment) || len(a.TargetAssignment) != len(b.TargetAssignment) {
			t.Fatalf("member %d after reload %+v, before %+v", i, a, b)
		}
	}
	if got := fetchOne(t, c2, "cg", "t", 0); got.Offset != 42 {
		t.Fatalf("offset after reload %+v", got)
	}
	// m1 revokes what m2 gets; both reach the same epoch, and m2 gets
	// only partitions m1 gave up.
	h, err := c2.ConsumerGroupHeartbeat(ctx, ConsumerHeartbeatRequest{Group: "cg", MemberID: "m1", MemberEpoch: 1, RebalanceTimeout: -1}, true)
	if err != nil || !h.HasAssignment {
		t.Fatalf("m1 after reload: %+v %v", h, err)
	}
	kept := h.Assignment
	h, err = c2.ConsumerGroupHeartbeat(ctx, ConsumerHeartbeatRequest{Group: "cg", MemberID: "m1", MemberEpoch: 1, RebalanceTimeout: -1, Owned: kept}, true)
	if err != nil || h.MemberEpoch != 2 {
		t.Fatalf("m1 revoked: %+v %v", h, err)
	}
	h, err = c2.ConsumerGroupHeartbeat(ctx, ConsumerHeartbeatRequest{Group: "cg", MemberID: "m2", MemberEpoch: 2, RebalanceTimeout: -1}, true)
	if err != nil || !h.HasAssignment || len(h.Assignment) != 1 || len(h.Assignment[0].Partitions)+len(kept[0].Partitions) != 4 {
		t.Fatalf("m2: %+v %v (m1 kept %v)", h, err, kept)
	}
	d, _ := c2.ConsumerGroupDescribe(ctx, "cg")
	if d.State != "Stable" {
		t.Fatalf("state %s", d.State)
	}
	// A classic member of another protocol type cannot join it;
	// DescribeGroups does not know it.
	connect := joinReq("cg", "", "c")
	connect.ProtocolType = "connect"
	if _, err := c2.JoinGroup(ctx, connect); !errors.Is(err, ErrInconsistentGroupProtocol) {
		t.Fatalf("classic join: %v", err)
	}
	if _, err := c2.DescribeGroup(ctx, "cg"); !errors.Is(err, ErrGroupIDNotFound) {
		t.Fatalf("describe: %v", err)
	}
	if l, _ := c2.ListGroups(ctx, ListGroupsRequest{Types: []string{"consumer"}}); len(l) != 1 || l[0].Type != "consumer" || l[0].State != "Stable" {
		t.Fatalf("list consumer: %+v", l)
	}
	if l, _ := c2.ListGroups(ctx, ListGroupsRequest{Types: []string{"classic"}}); len(l) != 0 {
		t.Fatalf("list classic: %+v", l)
	}
	if errs := c2.DeleteGroups(ctx, []string{"cg"}); !errors.Is(errs[0], ErrNonEmptyGroup) {
		t.Fatalf("delete non-empty: %v", errs[0])
	}
	// Both leave; the group is deleted with all its records.
	for _, m := range []string{"m1", "m2"} {
		if _, err := c2.ConsumerGroupHeartbeat(ctx, ConsumerHeartbeatRequest{Group: "cg", MemberID: m, MemberEpoch: LeaveEpoch}, true); err != nil {
			t.Fatalf("leave %s: %v", m, err)
		}
	}
	if errs := c2.DeleteGroups(ctx, []string{"cg"}); errs[0] != nil {
		t.Fatalf("delete: %v", errs[0])
	}
	c2.Close()
	c3 := newLoaded(t, consumerTestConfig(topics), log)
	if _, err := c3.ConsumerGroupDescribe(ctx, "cg"); !errors.Is(err, ErrGroupIDNotFound) {
		t.Fatalf("deleted group after reload: %v", err)
	}
	if l, _ := c3.ListGroups(ctx, ListGroupsRequest{}); len(l) != 0 {
		t.Fatalf("groups after delete and reload: %+v", l)
	}
}

// TestConsumerHeartbeatToClassicGroup: without online upgrade
// (group.consumer.migration.policy=downgrade), a classic group with
// members is not a consumer group.
func TestConsumerHeartbeatToClassicGroup(t *testing.T) {
	ctx := context.Background()
	topics := TopicMap{"t": {Name: "t", ID: TopicID{9}, Partitions: 1}}
	cfg := consumerTestConfig(topics)
	cfg.ConsumerMigrationPolicy = "downgrade"
	c := newLoaded(t, cfg, &memLog{})
	joinAndSync(t, c, "classic")
	req := cgJoin("m1", "t")
	req.Group = "classic"
	if _, err := c.ConsumerGroupHeartbeat(ctx, req, true); !errors.Is(err, ErrGroupIDNotFound) {
		t.Fatalf("heartbeat to a classic group: %v", err)
	}
	req.Group, req.MemberEpoch = "unknown", 3
	if _, err := c.ConsumerGroupHeartbeat(ctx, req, true); !errors.Is(err, ErrGroupIDNotFound) {
		t.Fatalf("heartbeat to an unknown group: %v", err)
	}
	if l, _ := c.ListGroups(ctx, ListGroupsRequest{}); len(l) != 1 {
		t.Fatalf("groups: %+v", l)
	}
}

// TestConsumerSessionExpires: the coordinator's timer removes a member
// that stops heartbeating after group.consumer.session.timeout.ms.
func TestConsumerSessionExpires(t *testing.T) {
	ctx := context.Background()
	topics := TopicMap{"t": {Name: "t", ID: TopicID{9}, Partitions: 2}}
	cfg := consumerTestConfig(topics)
	cfg.ConsumerSessionTimeout = 100 * time.Millisecond
	c := newLoaded(t, cfg, &memLog{})
	if _, err := c.ConsumerGroupHeartbeat(ctx, cgJoin("m1", "t"), true); err != nil {
		t.Fatal(err)
	}
	checkFor(t, 5*time.Second, func() error {
		d, err := c.ConsumerGroupDescribe(ctx, "cg")
		if err != nil {
			return err
		}
		if len(d.Members) != 0 || d.State != "Empty" {
			return errors.New("member still there: " + d.State)
		}
		return nil
	})
}

// TestConsumerGroupOffsetsExpire: as Kafka's consumer groups, offsets
// expire offsets.retention.minutes after their commit, except those of a
// topic the group subscribes to; the group goes once it is empty and has
// no offsets left.
func TestConsumerGroupOffsetsExpire(t *testing.T) {
	ctx := context.Background()
	clock := newTestClock()
	topics := TopicMap{"t": {Name: "t", ID: TopicID{9}, Partitions: 1}, "old": {Name: "old", ID: TopicID{8}, Partitions: 1}}
	cfg := consumerTestConfig(topics)
	cfg.Now = clock.Now
	cfg.OffsetsRetention = time.Hour
	cfg.OffsetsRetentionCheck = 10 * time.Millisecond
	cfg.ConsumerSessionTimeout = 100 * time.Hour
	c := newLoaded(t, cfg, &memLog{})
	if _, err := c.ConsumerGroupHeartbeat(ctx, cgJoin("m1", "t"), true); err != nil {
		t.Fatal(err)
	}
	for _, topic := range []string{"t", "old"} {
		if _, err := c.OffsetCommit(ctx, OffsetCommitRequest{Group: "cg", MemberID: "m1", Generation: 1, Version: 9,
			Topics: []OffsetCommitTopic{{Topic: topic, Partitions: []OffsetCommitPartition{{Partition: 0, Offset: 7, LeaderEpoch: -1}}}}}); err != nil {
			t.Fatal(err)
		}
	}
	clock.advance(3 * time.Hour)
	checkFor(t, 5*time.Second, func() error {
		if got := fetchOne(t, c, "cg", "old", 0); got.Offset != -1 {
			return errors.New("offset of an unsubscribed topic not expired yet")
		}
		return nil
	})
	if got := fetchOne(t, c, "cg", "t", 0); got.Offset != 7 {
		t.Fatalf("offset of a subscribed topic expired: %+v", got)
	}
	if l, _ := c.ListGroups(ctx, ListGroupsRequest{}); len(l) != 1 {
		t.Fatalf("groups %+v", l)
	}
	if _, err := c.ConsumerGroupHeartbeat(ctx, ConsumerHeartbeatRequest{Group: "cg", MemberID: "m1", MemberEpoch: LeaveEpoch}, true); err != nil {
		t.Fatal(err)
	}
	checkFor(t, 5*time.Second, func() error {
		if l, _ := c.ListGroups(ctx, ListGroupsRequest{}); len(l) != 0 {
			return errors.New("empty group with expired offsets still listed")
		}
		return nil
	})
	if got := fetchOne(t, c, "cg", "t", 0); got.Offset != -1 {
		t.Fatalf("offset after expiry: %+v", got)
	}
}
