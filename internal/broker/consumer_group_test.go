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

			// The producer writes until stopped, round robin over the
			// partitions.
			stopProducer := produceUntilStopped(t, b.Client, l, topic)

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

			stopProducer()
			testutil.Eventually(t, 30*time.Second, l.allProcessed)
			dups := l.check()
			l.mu.Lock()
			n := len(l.produced)
			l.mu.Unlock()
			if n == 0 {
				t.Fatal("nothing produced")
			}
			t.Logf("%d records produced, %d processed twice", n, dups)

			// The group is a consumer group for ListGroups, and a
			// classic member of another protocol type cannot join it.
			lg := kmsg.NewPtrListGroupsRequest()
			lg.TypesFilter = []string{"consumer"}
			resp, err := lg.RequestWith(context.Background(), admin)
			if err != nil || len(resp.Groups) != 1 || resp.Groups[0].Group != group || resp.Groups[0].GroupType != "consumer" ||
				resp.Groups[0].GroupState != "Stable" {
				t.Fatalf("ListGroups consumer: %+v %v", resp, err)
			}
			jr := joinReq(group, "", topic)
			jr.ProtocolType = "connect"
			jresp := request[*kmsg.JoinGroupResponse](t, admin, jr)
			if jresp.ErrorCode != kerr.InconsistentGroupProtocol.Code {
				t.Fatalf("classic JoinGroup of a consumer group: %v", kerr.ErrorForCode(jresp.ErrorCode))
			}
		})
	}
}

// consumerJoin is a raw first ConsumerGroupHeartbeat (v1) of member id.
func consumerJoin(group, id string, topics ...string) *kmsg.ConsumerGroupHeartbeatRequest {
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch = group, id, 0
	req.RebalanceTimeoutMillis = 30000
	req.SubscribedTopicNames = topics
	req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	return req
}

// TestConsumerGroupErrorCodes checks, request by request, the codes
// Kafka answers: invalid heartbeats, epochs that fence, commits and
// fetches at a stale epoch or of an unknown member, a classic group
// asked as a consumer group and the other way round, and deletion.
func TestConsumerGroupErrorCodes(t *testing.T) {
	b := testutil.StartBroker(t, consumerGroupBrokerConfig...)
	adm := b.Admin()
	testutil.CreateTopic(t, adm, "codes", 2)
	cl := b.Client()
	hb := func(req *kmsg.ConsumerGroupHeartbeatRequest) *kmsg.ConsumerGroupHeartbeatResponse {
		t.Helper()
		var resp *kmsg.ConsumerGroupHeartbeatResponse
		testutil.Eventually(t, 20*time.Second, func() error {
			resp = request[*kmsg.ConsumerGroupHeartbeatResponse](t, cl, req)
			if c := resp.ErrorCode; c == kerr.NotCoordinator.Code || c == kerr.CoordinatorLoadInProgress.Code || c == kerr.CoordinatorNotAvailable.Code {
				return kerr.ErrorForCode(c)
			}
			return nil
		})
		return resp
	}
	code := func(c int16) string {
		if c == 0 {
			return "OK"
		}
		return kerr.ErrorForCode(c).(*kerr.Error).Message
	}

	// A member joins; the coordinator answers with its epoch and all
	// partitions.
	join := hb(consumerJoin("cg-codes", "m1", "codes"))
	if join.ErrorCode != 0 || join.MemberEpoch != 1 || join.MemberID == nil || *join.MemberID != "m1" ||
		join.Assignment == nil || len(join.Assignment.Topics) != 1 || len(join.Assignment.Topics[0].Partitions) != 2 ||
		join.HeartbeatIntervalMillis != 150 {
		t.Fatalf("join: %+v", join)
	}

	bad := func(mut func(*kmsg.ConsumerGroupHeartbeatRequest)) *kmsg.ConsumerGroupHeartbeatRequest {
		req := consumerJoin("cg-codes", "m2", "codes")
		mut(req)
		return req
	}
	for _, tc := range []struct {
		name string
		req  *kmsg.ConsumerGroupHeartbeatRequest
		want *kerr.Error
	}{
		{"no member id at v1", bad(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberID = "" }), kerr.InvalidRequest},
		{"owned partitions on join", bad(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.Topics = nil }), kerr.InvalidRequest},
		{"no rebalance timeout on join", bad(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.RebalanceTimeoutMillis = -1 }), kerr.InvalidRequest},
		{"no subscription on join", bad(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.SubscribedTopicNames = nil }), kerr.InvalidRequest},
		{"epoch -3", bad(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = -3 }), kerr.InvalidRequest},
		{"unknown assignor", bad(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.ServerAssignor = kmsg.StringPtr("sticky") }), kerr.UnsupportedAssignor},
		{"bad regex", bad(func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.SubscribedTopicNames, r.SubscribedTopicRegex = nil, kmsg.StringPtr("co(des")
		}), kerr.InvalidRegularExpression},
		{"unknown member", bad(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = 1 }), kerr.UnknownMemberID},
		{"epoch ahead", bad(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberID, r.MemberEpoch = "m1", 5 }), kerr.FencedMemberEpoch},
		{"unknown group", bad(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.Group, r.MemberEpoch = "cg-none", 1 }), kerr.GroupIDNotFound},
	} {
		resp := hb(tc.req)
		if resp.ErrorCode != tc.want.Code {
			t.Errorf("%s: %s, want %s", tc.name, code(resp.ErrorCode), tc.want.Message)
		}
		if resp.ErrorCode == kerr.InvalidRequest.Code && (resp.ErrorMessage == nil || *resp.ErrorMessage == "") {
			t.Errorf("%s: INVALID_REQUEST without a message", tc.name)
		}
	}

	// OffsetCommit v9 carries the member epoch.
	v8 := pinned(t, b, 8, 8)
	commit := func(version int16, member string, epoch int32) int16 {
		req := commitReq("cg-codes", member, epoch, "codes", map[int32]int64{0: 5})
		c := cl
		if version < 9 {
			c = v8
		}
		resp := request[*kmsg.OffsetCommitResponse](t, c, req)
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	for _, tc := range []struct {
		name    string
		version int16
		member  string
		epoch   int32
		want    int16
	}{
		{"current epoch", 9, "m1", 1, 0},
		{"stale epoch", 9, "m1", 2, kerr.StaleMemberEpoch.Code},
		{"unknown member", 9, "m9", 1, kerr.UnknownMemberID.Code},
		{"below v9", 8, "m1", 1, kerr.UnsupportedVersion.Code},
		{"admin commit to a group with members", 9, "", -1, kerr.UnknownMemberID.Code},
	} {
		if got := commit(tc.version, tc.member, tc.epoch); got != tc.want {
			t.Errorf("commit %s: %s, want %s", tc.name, code(got), code(tc.want))
		}
	}
	fetch := func(member *string, epoch int32) (int16, int64) {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version = 9
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group, g.MemberID, g.MemberEpoch = "cg-codes", member, epoch
		ft := kmsg.NewOffsetFetchRequestGroupTopic()
		ft.Topic, ft.Partitions = "codes", []int32{0}
		g.Topics = append(g.Topics, ft)
		req.Groups = append(req.Groups, g)
		resp := request[*kmsg.OffsetFetchResponse](t, cl, req)
		rg := resp.Groups[0]
		if rg.ErrorCode != 0 || len(rg.Topics) == 0 {
			return rg.ErrorCode, -1
		}
		return 0, rg.Topics[0].Partitions[0].Offset
	}
	if c, off := fetch(kmsg.StringPtr("m1"), 1); c != 0 || off != 5 {
		t.Errorf("fetch at the member's epoch: %s offset %d, want offset 5", code(c), off)
	}
	if c, _ := fetch(kmsg.StringPtr("m1"), 7); c != kerr.StaleMemberEpoch.Code {
		t.Errorf("fetch at another epoch: %s", code(c))
	}
	if c, _ := fetch(kmsg.StringPtr("m9"), 1); c != kerr.UnknownMemberID.Code {
		t.Errorf("fetch of an unknown member: %s", code(c))
	}
	if c, off := fetch(nil, -1); c != 0 || off != 5 {
		t.Errorf("admin fetch: %s offset %d", code(c), off)
	}

	// DescribeGroups v5 describes a consumer group as Dead (Kafka before
	// v6); ConsumerGroupDescribe does not know a classic group.
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups = []string{"cg-codes"}
	if resp := request[*kmsg.DescribeGroupsResponse](t, cl, dg); resp.Groups[0].ErrorCode != 0 || resp.Groups[0].State != "Dead" {
		t.Errorf("DescribeGroups of a consumer group: %+v", resp.Groups[0])
	}
	// A classic group of another protocol type than consumer cannot be
	// upgraded (Kafka's validateOnlineUpgrade).
	r := &rawJoin{cl: cl, group: "classic-codes", protocolType: "connect"}
	r.join(t, "codes")
	classic := hb(bad(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.Group = "classic-codes" }))
	if classic.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Errorf("heartbeat to a classic group with members: %s", code(classic.ErrorCode))
	}
	if _, err := describeConsumerGroup(context.Background(), cl, "classic-codes"); !errorsIs(err, kerr.GroupIDNotFound) {
		t.Errorf("ConsumerGroupDescribe of a classic group: %v", err)
	}

	// A consumer group with members is not deleted; once its last member
	// leaves, it is, and its offsets with it.
	del := func() int16 {
		req := kmsg.NewPtrDeleteGroupsRequest()
		req.Groups = []string{"cg-codes"}
		return request[*kmsg.DeleteGroupsResponse](t, cl, req).Groups[0].ErrorCode
	}
	if c := del(); c != kerr.NonEmptyGroup.Code {
		t.Errorf("delete with a member: %s", code(c))
	}
	leave := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	leave.Group, leave.MemberID, leave.MemberEpoch = "cg-codes", "m1", -1
	if resp := hb(leave); resp.ErrorCode != 0 || resp.MemberEpoch != -1 {
		t.Fatalf("leave: %+v", resp)
	}
	g, err := describeConsumerGroup(context.Background(), cl, "cg-codes")
	if err != nil || g.State != "Empty" || len(g.Members) != 0 {
		t.Fatalf("after leave: %+v %v", g, err)
	}
	if c := del(); c != 0 {
		t.Errorf("delete empty: %s", code(c))
	}
	if _, err := describeConsumerGroup(context.Background(), cl, "cg-codes"); !errorsIs(err, kerr.GroupIDNotFound) {
		t.Errorf("deleted group described: %v", err)
	}
	if c, off := fetch(nil, -1); c != 0 || off != -1 {
		t.Errorf("offsets of the deleted group: %s offset %d", code(c), off)
	}
}

// TestConsumerGroupSurvivesBrokerRestart restarts the broker under a
// consuming KIP-848 group: the coordinator rebuilds the group from
// __consumer_offsets (members, epochs, assignments), the members go on
// without rejoining, and consumption resumes from the committed offsets.
func TestConsumerGroupSurvivesBrokerRestart(t *testing.T) {
	const partitions = 4
	b := testutil.StartBroker(t, consumerGroupBrokerConfig...)
	adm := b.Admin()
	topic, group := "cg-restart", "cg-restart"
	testutil.CreateTopic(t, adm, topic, partitions)
	l := newGroupLedger(t)
	admin := b.Client()
	prod := b.Client(kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.DefaultProduceTopic(topic))
	produce := func(n int, tag string) {
		rs := make([]*kgo.Record, n)
		for i := range rs {
			rs[i] = kgo.StringRecord(fmt.Sprintf("%s-%d", tag, i))
		}
		produceSync(t, prod, rs...)
		l.addProduced(rs)
	}
	produce(40, "before")
	start := func(name string) *groupMember {
		// NB: a session longer than the restart, so that the members are
		// still in the reloaded group when they come back.
		return startGroupMember(t, b, l, name, group, topic, kgo.CooperativeStickyBalancer(), false, kgo.ServerSideBalancer())
	}
	m0, m1 := start("m0"), start("m1")
	waitConsumerGroupStable(t, admin, l, group, partitions, []*groupMember{m0, m1})
	testutil.Eventually(t, 30*time.Second, l.allProcessed)
	before, err := describeConsumerGroup(context.Background(), admin, group)
	if err != nil {
		t.Fatal(err)
	}

	b.Restart()

	// Right after the load, before any member heartbeats again.
	var after kmsg.ConsumerGroupDescribeResponseGroup
	testutil.Eventually(t, 20*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		after, err = describeConsumerGroup(ctx, admin, group)
		return err
	})
	if after.Epoch < before.Epoch || len(after.Members) != 2 {
		t.Fatalf("reloaded group %+v, before restart %+v", after, before)
	}
	ids := func(g kmsg.ConsumerGroupDescribeResponseGroup) []string {
		var out []string
		for _, m := range g.Members {
			out = append(out, m.MemberID)
		}
		sort.Strings(out)
		return out
	}
	if !slices.Equal(ids(before), ids(after)) {
		t.Fatalf("members %v after restart, %v before", ids(after), ids(before))
	}
	produce(40, "after")
	testutil.Eventually(t, 30*time.Second, l.allProcessed)
	waitConsumerGroupStable(t, admin, l, group, partitions, []*groupMember{m0, m1})
	final, err := describeConsumerGroup(context.Background(), admin, group)
	if err != nil || !slices.Equal(ids(final), ids(before)) {
		t.Fatalf("members %v after restart (%v), want the same %v: a member had to rejoin", ids(final), err, ids(before))
	}
	dups := l.check()
	t.Logf("%d processed twice", dups)
}

// TestConsumerGroupRegexPicksUpNewTopic: a member subscribed by regular
// expression (the broker matches it, SubscribedTopicRegex) gets the
// partitions of a matching topic created after it joined, and not those
// of a topic that does not match.
func TestConsumerGroupRegexPicksUpNewTopic(t *testing.T) {
	b := testutil.StartBroker(t, consumerGroupBrokerConfig...)
	adm := b.Admin()
	testutil.CreateTopic(t, adm, "rx-a", 2)
	testutil.CreateTopic(t, adm, "other-rx", 1)
	cons := b.Client(
		kgo.ConsumerGroup("cg-regex"),
		kgo.ConsumeRegex(),
		kgo.ConsumeTopics("^rx-.*"),
		kgo.ServerSideBalancer(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(100*time.Millisecond),
		kgo.MetadataMinAge(100*time.Millisecond),
		kgo.MetadataMaxAge(500*time.Millisecond),
	)
	prod := b.Client(kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	ctx := ctxT(t, 60*time.Second)
	got := map[string]int{}
	consume := func(topic string, want int) {
		t.Helper()
		for got[topic] < want {
			fs := cons.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("consume %s: %v (got %v)", topic, ctx.Err(), got)
			}
			fs.EachRecord(func(r *kgo.Record) { got[r.Topic]++ })
		}
	}
	produceSync(t, prod, &kgo.Record{Topic: "rx-a", Value: []byte("1")}, &kgo.Record{Topic: "rx-a", Value: []byte("2")},
		&kgo.Record{Topic: "other-rx", Value: []byte("x")})
	consume("rx-a", 2)

	testutil.CreateTopic(t, adm, "rx-b", 3)
	produceSync(t, prod, &kgo.Record{Topic: "rx-b", Value: []byte("3")}, &kgo.Record{Topic: "rx-b", Value: []byte("4")},
		&kgo.Record{Topic: "rx-b", Value: []byte("5")})
	consume("rx-b", 3)
	if got["other-rx"] != 0 {
		t.Errorf("consumed %d records of other-rx, which the regex does not match", got["other-rx"])
	}
	g, err := describeConsumerGroup(ctx, cons, "cg-regex")
	if err != nil || len(g.Members) != 1 || g.Members[0].SubscribedTopicRegex == nil {
		t.Fatalf("group %+v %v", g, err)
	}
	n := 0
	for _, tp := range g.Members[0].Assignment.TopicPartitions {
		n += len(tp.Partitions)
		if tp.Topic == "other-rx" {
			t.Errorf("assigned other-rx")
		}
	}
	if n != 5 {
		t.Errorf("member assigned %d partitions, want 5 (rx-a and rx-b)", n)
	}
}

// TestConsumerGroupStaticMemberRestart restarts a static member
// (group.instance.id) of a KIP-848 group within its session: it leaves
// with epoch -2, keeps its partitions meanwhile, and comes back with a
// new member id to the same partitions without a new group epoch, so the
// other member is not disturbed.
func TestConsumerGroupStaticMemberRestart(t *testing.T) {
	const partitions = 4
	b := testutil.StartBroker(t, append(slices.Clone(consumerGroupBrokerConfig), "group.consumer.session.timeout.ms=10000",
		"group.consumer.max.session.timeout.ms=10000")...)
	adm := b.Admin()
	topic, group := "cg-static", "cg-static"
	testutil.CreateTopic(t, adm, topic, partitions)
	l := newGroupLedger(t)
	admin := b.Client()
	start := func(name, instance string) *groupMember {
		return startGroupMember(t, b, l, name, group, topic, kgo.CooperativeStickyBalancer(), false,
			kgo.ServerSideBalancer(), kgo.InstanceID(instance))
	}
	a, other := start("a1", "a"), start("b", "b")
	waitConsumerGroupStable(t, admin, l, group, partitions, []*groupMember{a, other})
	before, err := describeConsumerGroup(context.Background(), admin, group)
	if err != nil {
		t.Fatal(err)
	}
	l.mu.Lock()
	held := slices.Sorted(maps.Keys(l.owned["a1"]))
	revokesBefore := l.revokes["b"]
	l.mu.Unlock()

	a.leave(l)
	g, err := describeConsumerGroup(context.Background(), admin, group)
	if err != nil || len(g.Members) != 2 {
		t.Fatalf("after the static leave: %+v %v", g, err)
	}
	for _, m := range g.Members {
		if m.InstanceID != nil && *m.InstanceID == "a" && (m.MemberEpoch != -2 || len(m.Assignment.TopicPartitions) == 0) {
			t.Fatalf("static member after leaving: epoch %d assignment %v, want -2 keeping its partitions", m.MemberEpoch, m.Assignment)
		}
	}

	a2 := start("a2", "a")
	waitConsumerGroupStable(t, admin, l, group, partitions, []*groupMember{a2, other})
	after, err := describeConsumerGroup(context.Background(), admin, group)
	if err != nil {
		t.Fatal(err)
	}
	if after.Epoch != before.Epoch {
		t.Errorf("group epoch %d after the static restart, %d before: the restart rebalanced", after.Epoch, before.Epoch)
	}
	l.mu.Lock()
	got := slices.Sorted(maps.Keys(l.owned["a2"]))
	revokes := l.revokes["b"]
	l.mu.Unlock()
	if !slices.Equal(got, held) {
		t.Errorf("restarted static member holds %v, held %v before", got, held)
	}
	if revokes != revokesBefore {
		t.Errorf("the other member revoked partitions %d times during the restart", revokes-revokesBefore)
	}
	l.check()
}
