package broker_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/acl"
	"samsa/internal/testutil"
)

// groupConfigOp is one IncrementalAlterConfigs operation on a group config.
type groupConfigOp struct {
	name  string
	op    kmsg.IncrementalAlterConfigOp
	value *string
}

func setGroupConfig(name, value string) groupConfigOp {
	return groupConfigOp{name, kmsg.IncrementalAlterConfigOpSet, &value}
}

// alterGroupConfigs sends IncrementalAlterConfigs for one GROUP resource
// (kadm has no group config calls) and returns the resource's error code.
func alterGroupConfigs(t *testing.T, cl *kgo.Client, group string, validateOnly bool, ops ...groupConfigOp) int16 {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.ValidateOnly = validateOnly
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	for _, o := range ops {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Op, c.Value = o.name, o.op, o.value
		r.Configs = append(r.Configs, c)
	}
	req.Resources = append(req.Resources, r)
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil || len(resp.Resources) != 1 {
		t.Fatalf("IncrementalAlterConfigs: %v %+v", err, resp)
	}
	return resp.Resources[0].ErrorCode
}

// describeGroupConfigs sends DescribeConfigs for one GROUP resource to
// broker node (-1: the seed) and returns the resource.
func describeGroupConfigs(t *testing.T, cl *kgo.Client, node int, group string, names ...string) kmsg.DescribeConfigsResponseResource {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeSynonyms, req.IncludeDocumentation = true, true
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName, r.ConfigNames = kmsg.ConfigResourceTypeGroupConfig, group, names
	req.Resources = append(req.Resources, r)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var resp kmsg.Response
	var err error
	if node < 0 {
		resp, err = cl.SeedBrokers()[0].Request(ctx, req)
	} else {
		resp, err = cl.Broker(node).Request(ctx, req)
	}
	if err != nil {
		t.Fatalf("DescribeConfigs: %v", err)
	}
	dr := resp.(*kmsg.DescribeConfigsResponse)
	if len(dr.Resources) != 1 {
		t.Fatalf("DescribeConfigs: %d resources", len(dr.Resources))
	}
	return dr.Resources[0]
}

// TestGroupConfigShareAutoOffsetResetPerGroup: a share group whose
// share.auto.offset.reset group config is earliest reads its partition
// from offset 0, while another share group on the same broker, on the
// broker's default (latest), starts at the end and gets nothing of what
// was there before it; each group's heartbeat answers carry its own
// share.heartbeat.interval.ms. DescribeConfigs shows the override as
// GROUP_CONFIG and the other group's value as DEFAULT_CONFIG.
// Reference: KIP-932 share.auto.offset.reset; Kafka ConfigHelper
// createGroupConfigEntry.
func TestGroupConfigShareAutoOffsetResetPerGroup(t *testing.T) {
	t.Parallel()
	b := testutil.StartBroker(t,
		"offsets.topic.num.partitions=4",
		"share.coordinator.state.topic.num.partitions=4",
		"group.share.heartbeat.interval.ms=1000",
		"group.share.session.timeout.ms=6000",
	)
	const topic, early, late = "gc-reset", "gc-early", "gc-late"
	testutil.CreateTopic(t, b.Admin(), topic, 1)
	cl := b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceValues(t, cl, topic, 1, 5)

	if code := alterGroupConfigs(t, cl, early, false, setGroupConfig("share.auto.offset.reset", "earliest"),
		setGroupConfig("share.heartbeat.interval.ms", "5000")); code != 0 {
		t.Fatalf("set share.auto.offset.reset: %v", kerr.ErrorForCode(code))
	}
	id := shareTopicID(t, cl, topic)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	intervals := map[string]int32{}
	fetchFirst := func(group string) (int, int64) {
		m := &rawShareMember{cl: cl, group: group, member: group + "-m", maxWait: 500}
		testutil.Eventually(t, 15*time.Second, func() error {
			resp, err := m.heartbeat(ctx, []string{topic})
			if err != nil || resp.ErrorCode != 0 {
				return fmt.Errorf("heartbeat: %v %v", err, resp)
			}
			intervals[group] = resp.HeartbeatIntervalMillis
			return nil
		})
		fr, err := m.fetch(ctx, id, 0, nil)
		if err != nil || fr.ErrorCode != 0 {
			t.Fatalf("%s: fetch: %v %+v", group, err, fr)
		}
		n, first, _ := acquiredCount(fr)
		return n, first
	}
	if n, first := fetchFirst(early); n != 5 || first != 0 {
		t.Errorf("%s (earliest) acquired %d records from %d, want 5 from 0", early, n, first)
	}
	if n, first := fetchFirst(late); n != 0 {
		t.Errorf("%s (latest) acquired %d records from %d, want none", late, n, first)
	}
	if intervals[early] != 5000 || intervals[late] != 1000 {
		t.Errorf("share heartbeat intervals %v, want %s 5000 (its own), %s 1000 (the broker's)", intervals, early, late)
	}

	for _, tc := range []struct {
		group  string
		value  string
		source kmsg.ConfigSource
	}{
		{early, "earliest", kmsg.ConfigSourceGroupConfig},
		{late, "latest", kmsg.ConfigSourceDefaultConfig},
	} {
		r := describeGroupConfigs(t, cl, -1, tc.group)
		if r.ErrorCode != 0 {
			t.Fatalf("describe %s: %v", tc.group, kerr.ErrorForCode(r.ErrorCode))
		}
		c := findConfig(t, r, "share.auto.offset.reset")
		if c.Value == nil || *c.Value != tc.value || c.Source != tc.source || c.ReadOnly || c.Documentation == nil {
			t.Errorf("%s: share.auto.offset.reset = %v source %v read-only %v", tc.group, strOf(c.Value), c.Source, c.ReadOnly)
		}
		if len(c.ConfigSynonyms) == 0 || c.ConfigSynonyms[0].Source != tc.source {
			t.Errorf("%s: synonyms %+v", tc.group, c.ConfigSynonyms)
		}
		if len(r.Configs) < 8 {
			t.Errorf("%s: %d configs described, want every group config", tc.group, len(r.Configs))
		}
	}
}

// findConfig returns config name of r, failing the test if it is absent.
func findConfig(t *testing.T, r kmsg.DescribeConfigsResponseResource, name string) kmsg.DescribeConfigsResponseResourceConfig {
	t.Helper()
	for _, c := range r.Configs {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("%s not described in %+v", name, r.Configs)
	return kmsg.DescribeConfigsResponseResourceConfig{}
}

func strOf(s *string) string {
	if s == nil {
		return "<null>"
	}
	return *s
}

// TestGroupConfigShareRecordLockDurationRedelivers: with the group's
// share.record.lock.duration.ms at 1 s (the broker's lock is 30 s), a
// member's acquisition lock says so in the ShareFetch answer, and the
// records it never acknowledges go to another member with delivery count
// 2 well before the broker's 30 s. A value below the broker's
// group.share.min.record.lock.duration.ms is refused.
// Reference: KIP-932 "Acquisition lock", GroupConfig.
func TestGroupConfigShareRecordLockDurationRedelivers(t *testing.T) {
	t.Parallel()
	b := testutil.StartBroker(t,
		"offsets.topic.num.partitions=4",
		"share.coordinator.state.topic.num.partitions=4",
		"share.auto.offset.reset=earliest",
		"group.share.min.record.lock.duration.ms=1000",
		"group.share.heartbeat.interval.ms=1000",
		"group.share.session.timeout.ms=20000",
	)
	const topic, group = "gc-lock", "gc-lock-g"
	testutil.CreateTopic(t, b.Admin(), topic, 1)
	cl := b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceValues(t, cl, topic, 1, 3)
	if code := alterGroupConfigs(t, cl, group, false, setGroupConfig("share.record.lock.duration.ms", "999")); code != kerr.InvalidConfig.Code {
		t.Fatalf("lock duration 999: %v, want INVALID_CONFIG", kerr.ErrorForCode(code))
	}
	if code := alterGroupConfigs(t, cl, group, false, setGroupConfig("share.record.lock.duration.ms", "1000")); code != 0 {
		t.Fatalf("lock duration 1000: %v", kerr.ErrorForCode(code))
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	id := shareTopicID(t, cl, topic)
	join := func(name string) *rawShareMember { return joinShareMember(ctx, t, cl, group, topic, name, 500) }
	holder, other := join("holder"), join("other")
	fr, err := holder.fetch(ctx, id, 0, nil)
	if err != nil || fr.ErrorCode != 0 {
		t.Fatalf("fetch: %v %+v", err, fr)
	}
	if n, first, _ := acquiredCount(fr); n != 3 || first != 0 {
		t.Fatalf("holder acquired %d from %d, want 3 from 0", n, first)
	}
	if fr.AcquisitionLockTimeoutMillis != 1000 {
		t.Errorf("AcquisitionLockTimeoutMillis %d, want the group's 1000", fr.AcquisitionLockTimeoutMillis)
	}
	start := time.Now()
	var counts []int16
	testutil.Eventually(t, 15*time.Second, func() error {
		fr, err := other.fetch(ctx, id, 0, nil)
		if err != nil || fr.ErrorCode != 0 {
			return fmt.Errorf("fetch: %v %+v", err, fr)
		}
		for _, tp := range fr.Topics {
			for _, p := range tp.Partitions {
				for _, a := range p.AcquiredRecords {
					for o := a.FirstOffset; o <= a.LastOffset; o++ {
						counts = append(counts, a.DeliveryCount)
					}
				}
			}
		}
		if len(counts) < 3 {
			return fmt.Errorf("redelivered %d of 3", len(counts))
		}
		return nil
	})
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("redelivered after %v", d)
	}
	for i, c := range counts {
		if c != 2 {
			t.Errorf("record %d redelivered with delivery count %d, want 2", i, c)
		}
	}
}

// TestGroupConfigConsumerHeartbeatAndSessionPerGroup: the
// ConsumerGroupHeartbeat answer carries the group's
// consumer.heartbeat.interval.ms from the heartbeat after the config is
// set, without a restart, and a member of a group whose
// consumer.session.timeout.ms is short is removed once it stops
// heartbeating while a member of a group on the broker's longer timeout
// stays. Reference: KIP-848 group configs.
func TestGroupConfigConsumerHeartbeatAndSessionPerGroup(t *testing.T) {
	t.Parallel()
	b := testutil.StartBroker(t, append(slices.Clone(groupBrokerConfig),
		"group.consumer.min.session.timeout.ms=1000",
		"group.consumer.session.timeout.ms=30000",
		"group.consumer.max.session.timeout.ms=60000",
		"group.consumer.min.heartbeat.interval.ms=100",
		"group.consumer.heartbeat.interval.ms=500",
	)...)
	const topic, short, long = "gc-cg", "gc-cg-short", "gc-cg-long"
	testutil.CreateTopic(t, b.Admin(), topic, 1)
	cl := b.Client()
	var hb *kmsg.ConsumerGroupHeartbeatResponse
	testutil.Eventually(t, 20*time.Second, func() error {
		fc := kmsg.NewPtrFindCoordinatorRequest()
		fc.CoordinatorKey, fc.CoordinatorKeys = short, []string{short, long}
		direct[*kmsg.FindCoordinatorResponse](t, cl, fc)
		hb = direct[*kmsg.ConsumerGroupHeartbeatResponse](t, cl, consumerJoin(short, "m-short", topic))
		return kerr.ErrorForCode(hb.ErrorCode)
	})
	if hb.HeartbeatIntervalMillis != 500 {
		t.Fatalf("heartbeat interval before the group config: %d, want the broker's 500", hb.HeartbeatIntervalMillis)
	}
	if code := alterGroupConfigs(t, cl, short, false,
		setGroupConfig("consumer.heartbeat.interval.ms", "700"), setGroupConfig("consumer.session.timeout.ms", "1500")); code != 0 {
		t.Fatalf("set consumer configs: %v", kerr.ErrorForCode(code))
	}
	next := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	next.Group, next.MemberID, next.MemberEpoch = short, "m-short", hb.MemberEpoch
	hb = direct[*kmsg.ConsumerGroupHeartbeatResponse](t, cl, next)
	if hb.ErrorCode != 0 || hb.HeartbeatIntervalMillis != 700 {
		t.Fatalf("heartbeat after the group config: %v interval %d, want 700", kerr.ErrorForCode(hb.ErrorCode), hb.HeartbeatIntervalMillis)
	}
	lhb := direct[*kmsg.ConsumerGroupHeartbeatResponse](t, cl, consumerJoin(long, "m-long", topic))
	if lhb.ErrorCode != 0 || lhb.HeartbeatIntervalMillis != 500 {
		t.Fatalf("other group: %v interval %d, want 500", kerr.ErrorForCode(lhb.ErrorCode), lhb.HeartbeatIntervalMillis)
	}

	// Neither member heartbeats again: the short group's goes after
	// its 1.5 s, the long group's stays for the broker's 30 s.
	members := func(group string) int {
		req := kmsg.NewPtrConsumerGroupDescribeRequest()
		req.Groups = []string{group}
		resp := direct[*kmsg.ConsumerGroupDescribeResponse](t, cl, req)
		if len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 {
			t.Fatalf("describe %s: %+v", group, resp)
		}
		return len(resp.Groups[0].Members)
	}
	testutil.Eventually(t, 10*time.Second, func() error {
		if n := members(short); n != 0 {
			return fmt.Errorf("%s has %d members", short, n)
		}
		return nil
	})
	if n := members(long); n != 1 {
		t.Errorf("%s has %d members after the short session ran out, want 1", long, n)
	}
}

// TestGroupConfigBadInputStoresNothing: unknown names, values out of the
// broker's bounds or of their type, a session timeout not above the
// heartbeat interval and APPEND on a non-list config are INVALID_CONFIG;
// an empty group id is INVALID_REQUEST; validate_only checks without
// storing; legacy AlterConfigs replaces the whole set and DELETE removes
// one. Nothing refused is stored.
// Reference: Kafka GroupConfig.validate, ControllerConfigurationValidator.
func TestGroupConfigBadInputStoresNothing(t *testing.T) {
	t.Parallel()
	b := testutil.StartBroker(t)
	cl := b.Client()
	const group = "gc-bad"
	for _, tc := range []struct {
		name string
		ops  []groupConfigOp
		want *kerr.Error
	}{
		{"unknown", []groupConfigOp{setGroupConfig("consumer.max.poll.records", "1")}, kerr.InvalidConfig},
		{"broker name", []groupConfigOp{setGroupConfig("group.consumer.heartbeat.interval.ms", "6000")}, kerr.InvalidConfig},
		{"below min", []groupConfigOp{setGroupConfig("consumer.heartbeat.interval.ms", "100")}, kerr.InvalidConfig},
		{"above max", []groupConfigOp{setGroupConfig("consumer.session.timeout.ms", "60001")}, kerr.InvalidConfig},
		{"not a number", []groupConfigOp{setGroupConfig("share.session.timeout.ms", "50s")}, kerr.InvalidConfig},
		{"by_duration", []groupConfigOp{setGroupConfig("share.auto.offset.reset", "by_duration:PT1H")}, kerr.InvalidConfig},
		{"session not above heartbeat", []groupConfigOp{
			setGroupConfig("share.heartbeat.interval.ms", "15000"), setGroupConfig("share.session.timeout.ms", "45000"),
			setGroupConfig("consumer.heartbeat.interval.ms", "15000"), setGroupConfig("consumer.session.timeout.ms", "15000"),
		}, kerr.InvalidConfig},
		{"append to a non-list", []groupConfigOp{{"share.isolation.level", kmsg.IncrementalAlterConfigOpAppend, kmsg.StringPtr("read_committed")}}, kerr.InvalidConfig},
		{"null value", []groupConfigOp{{"share.isolation.level", kmsg.IncrementalAlterConfigOpSet, nil}}, kerr.InvalidConfig},
		{"one bad of two", []groupConfigOp{setGroupConfig("share.isolation.level", "read_committed"), setGroupConfig("share.delivery.count.limit", "11")}, kerr.InvalidConfig},
	} {
		if code := alterGroupConfigs(t, cl, group, false, tc.ops...); code != tc.want.Code {
			t.Errorf("%s: %v, want %v", tc.name, kerr.ErrorForCode(code), tc.want)
		}
	}
	if code := alterGroupConfigs(t, cl, "", false, setGroupConfig("share.isolation.level", "read_committed")); code != kerr.InvalidRequest.Code {
		t.Errorf("empty group id: %v, want INVALID_REQUEST", kerr.ErrorForCode(code))
	}
	if r := describeGroupConfigs(t, cl, -1, ""); r.ErrorCode != kerr.InvalidRequest.Code {
		t.Errorf("describe empty group id: %v, want INVALID_REQUEST", kerr.ErrorForCode(r.ErrorCode))
	}
	if code := alterGroupConfigs(t, cl, group, true, setGroupConfig("share.isolation.level", "read_committed")); code != 0 {
		t.Errorf("validate only: %v", kerr.ErrorForCode(code))
	}
	overridden := func() []string {
		var out []string
		for _, c := range describeGroupConfigs(t, cl, -1, group).Configs {
			if c.Source == kmsg.ConfigSourceGroupConfig {
				out = append(out, c.Name+"="+strOf(c.Value))
			}
		}
		return out
	}
	if got := overridden(); len(got) != 0 {
		t.Fatalf("stored after refusals and validate_only: %v", got)
	}

	// Legacy AlterConfigs (33) sets the whole set.
	ac := kmsg.NewPtrAlterConfigsRequest()
	ar := kmsg.NewAlterConfigsRequestResource()
	ar.ResourceType, ar.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	for _, kv := range [][2]string{{"share.isolation.level", "read_committed"}, {"share.delivery.count.limit", "3"}} {
		c := kmsg.NewAlterConfigsRequestResourceConfig()
		c.Name, c.Value = kv[0], kmsg.StringPtr(kv[1])
		ar.Configs = append(ar.Configs, c)
	}
	ac.Resources = append(ac.Resources, ar)
	if resp, err := ac.RequestWith(context.Background(), cl); err != nil || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("AlterConfigs: %v %+v", err, resp)
	}
	if got := overridden(); fmt.Sprint(got) != "[share.delivery.count.limit=3 share.isolation.level=read_committed]" {
		t.Fatalf("after AlterConfigs: %v", got)
	}
	// Only the named config goes.
	if code := alterGroupConfigs(t, cl, group, false, groupConfigOp{"share.delivery.count.limit", kmsg.IncrementalAlterConfigOpDelete, nil}); code != 0 {
		t.Fatalf("delete: %v", kerr.ErrorForCode(code))
	}
	if got := overridden(); fmt.Sprint(got) != "[share.isolation.level=read_committed]" {
		t.Fatalf("after DELETE: %v", got)
	}
	// A name filter describes that config only.
	if r := describeGroupConfigs(t, cl, -1, group, "share.isolation.level"); len(r.Configs) != 1 || strOf(r.Configs[0].Value) != "read_committed" {
		t.Fatalf("filtered describe: %+v", r.Configs)
	}
}

// TestGroupConfigSeenByEveryBrokerAndAfterRestart: a group config set
// through one broker is described by every broker of a three-broker
// cluster (each watches the etcd keys) and still applies after the
// group's coordinator restarts and the group moves to another broker.
func TestGroupConfigSeenByEveryBrokerAndAfterRestart(t *testing.T) {
	t.Parallel()
	c := testutil.StartCluster(t, 3, append(slices.Clone(groupBrokerConfig),
		"group.consumer.min.heartbeat.interval.ms=100",
		"group.consumer.heartbeat.interval.ms=500",
		"offsets.topic.replication.factor=3",
	)...)
	cl := c.Client()
	const group, topic = "gc-moves", "gc-moves-t"
	testutil.CreateTopic(t, c.Admin(), topic, 1)
	if code := alterGroupConfigs(t, cl, group, false, setGroupConfig("consumer.heartbeat.interval.ms", "800")); code != 0 {
		t.Fatalf("set: %v", kerr.ErrorForCode(code))
	}
	for id := range c.Brokers { // node ids are the indexes
		testutil.Eventually(t, 10*time.Second, func() error {
			r := describeGroupConfigs(t, cl, id, group, "consumer.heartbeat.interval.ms")
			if len(r.Configs) != 1 || strOf(r.Configs[0].Value) != "800" || r.Configs[0].Source != kmsg.ConfigSourceGroupConfig {
				return fmt.Errorf("broker %d describes %+v", id, r.Configs)
			}
			return nil
		})
	}
	// interval joins a new member through the coordinator FindCoordinator
	// names (kgo would keep dialing a stopped coordinator it cached).
	interval := func() (int32, error) {
		coord := coordinatorOf(t, cl, group)
		if coord < 0 {
			return 0, fmt.Errorf("no coordinator")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		r, err := cl.Broker(int(coord)).Request(ctx, consumerJoin(group, "m-"+time.Now().Format("150405.000000"), topic))
		if err != nil {
			return 0, err
		}
		resp := r.(*kmsg.ConsumerGroupHeartbeatResponse)
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return 0, err
		}
		return resp.HeartbeatIntervalMillis, nil
	}
	testutil.Eventually(t, 20*time.Second, func() error {
		n, err := interval()
		if err != nil || n != 800 {
			return fmt.Errorf("interval %d: %v", n, err)
		}
		return nil
	})
	coord := coordinatorOf(t, cl, group)
	if coord < 0 {
		t.Fatal("no coordinator")
	}
	c.Stop(int(coord))
	testutil.Eventually(t, 30*time.Second, func() error {
		if now := coordinatorOf(t, cl, group); now == coord || now < 0 {
			return fmt.Errorf("coordinator %d", now)
		}
		n, err := interval()
		if err != nil || n != 800 {
			return fmt.Errorf("interval %d: %v", n, err)
		}
		return nil
	})
	// The restarted broker has it too.
	c.Start(int(coord))
	fresh := testutil.NewClient(t, c.Brokers[coord].Addr())
	testutil.Eventually(t, 10*time.Second, func() error {
		r := describeGroupConfigs(t, fresh, -1, group, "consumer.heartbeat.interval.ms")
		if len(r.Configs) != 1 || strOf(r.Configs[0].Value) != "800" {
			return fmt.Errorf("restarted broker %d describes %+v", coord, r.Configs)
		}
		return nil
	})
}

// coordinatorOf returns the node FindCoordinator names for group.
func coordinatorOf(t *testing.T, cl *kgo.Client, group string) int32 {
	t.Helper()
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorKey, req.CoordinatorKeys = group, []string{group}
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil || len(resp.Coordinators) != 1 {
		return -1
	}
	return resp.Coordinators[0].NodeID
}

// TestGroupConfigACLs: describing a group's configs needs
// DESCRIBE_CONFIGS on the group and changing them ALTER_CONFIGS on it;
// without, the resource answers GROUP_AUTHORIZATION_FAILED and nothing is
// stored. Reference: Kafka ConfigHelper.handleDescribeConfigsRequest,
// KafkaApis.handleIncrementalAlterConfigsRequest.
func TestGroupConfigACLs(t *testing.T) {
	t.Parallel()
	b := aclBroker(t)
	alice := userClient(t, b, "alice", "a")
	const group = "gc-acl"
	allow := func(op kmsg.ACLOperation) acl.Binding {
		return mxBinding(kmsg.ACLResourceTypeGroup, group, kmsg.ACLResourcePatternTypeLiteral, op, kmsg.ACLPermissionTypeAllow)
	}
	if r := describeGroupConfigs(t, alice, -1, group); r.ErrorCode != kerr.GroupAuthorizationFailed.Code || len(r.Configs) != 0 {
		t.Errorf("describe without ACLs: %v, %d configs", kerr.ErrorForCode(r.ErrorCode), len(r.Configs))
	}
	if code := alterGroupConfigs(t, alice, group, false, setGroupConfig("share.isolation.level", "read_committed")); code != kerr.GroupAuthorizationFailed.Code {
		t.Errorf("alter without ACLs: %v", kerr.ErrorForCode(code))
	}
	grant(t, b, allow(kmsg.ACLOperationDescribeConfigs))
	testutil.Eventually(t, 10*time.Second, func() error {
		if r := describeGroupConfigs(t, alice, -1, group); r.ErrorCode != 0 {
			return kerr.ErrorForCode(r.ErrorCode)
		}
		return nil
	})
	if v := strOf(findConfig(t, describeGroupConfigs(t, alice, -1, group), "share.isolation.level").Value); v != "read_uncommitted" {
		t.Errorf("denied alter stored share.isolation.level=%s", v)
	}
	if code := alterGroupConfigs(t, alice, group, false, setGroupConfig("share.isolation.level", "read_committed")); code != kerr.GroupAuthorizationFailed.Code {
		t.Errorf("alter with DESCRIBE_CONFIGS only: %v", kerr.ErrorForCode(code))
	}
	grant(t, b, allow(kmsg.ACLOperationAlterConfigs))
	testutil.Eventually(t, 10*time.Second, func() error {
		return kerr.ErrorForCode(alterGroupConfigs(t, alice, group, false, setGroupConfig("share.isolation.level", "read_committed")))
	})
	if v := strOf(findConfig(t, describeGroupConfigs(t, alice, -1, group), "share.isolation.level").Value); v != "read_committed" {
		t.Errorf("share.isolation.level=%s after the allowed alter", v)
	}
}

// TestGroupConfigShareDeliveryCountLimitArchives: with the group's
// share.delivery.count.limit at 2 (the broker's is 5), a record released
// twice is archived: a third fetch gets nothing, where the broker's
// limit would deliver it again. Reference: KIP-932 "Delivery count".
func TestGroupConfigShareDeliveryCountLimitArchives(t *testing.T) {
	t.Parallel()
	b := testutil.StartBroker(t, shareBrokerConfig...)
	const topic, group = "gc-limit", "gc-limit-g"
	testutil.CreateTopic(t, b.Admin(), topic, 1)
	cl := b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceValues(t, cl, topic, 1, 1)
	if code := alterGroupConfigs(t, cl, group, false, setGroupConfig("share.delivery.count.limit", "2")); code != 0 {
		t.Fatalf("set share.delivery.count.limit: %v", kerr.ErrorForCode(code))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	id := shareTopicID(t, cl, topic)
	m := &rawShareMember{cl: cl, group: group, member: "m", maxWait: 300}
	testutil.Eventually(t, 15*time.Second, func() error {
		if resp, err := m.heartbeat(ctx, []string{topic}); err != nil || resp.ErrorCode != 0 {
			return fmt.Errorf("heartbeat: %v %v", err, resp)
		}
		return nil
	})
	release := func() []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch {
		a := kmsg.NewShareFetchRequestTopicPartitionAcknowledgementBatch()
		a.FirstOffset, a.LastOffset, a.AcknowledgeTypes = 0, 0, []int8{2} // RELEASE
		return []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{a}
	}
	var acks []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch
	for want := int16(1); want <= 3; want++ {
		fr, err := m.fetch(ctx, id, 0, acks)
		if err != nil || fr.ErrorCode != 0 {
			t.Fatalf("fetch %d: %v %+v", want, err, fr)
		}
		n, first, _ := acquiredCount(fr)
		if want == 3 {
			if n != 0 {
				t.Fatalf("a record released twice under a limit of 2 was delivered a third time: %+v", fr.Topics)
			}
			break
		}
		if n != 1 || first != 0 || fr.Topics[0].Partitions[0].AcquiredRecords[0].DeliveryCount != want {
			t.Fatalf("fetch %d: acquired %d from %d: %+v", want, n, first, fr.Topics)
		}
		acks = release()
	}
}

// TestGroupConfigSharePartitionMaxRecordLocks: with the group's
// share.partition.max.record.locks at 100 (the broker's is 2,000), a
// member asking for 500 records of single-record batches acquires 100,
// and a second member none until they are acknowledged; a value past the
// broker's group.share.max.partition.max.record.locks is refused.
// Reference: KIP-1240.
func TestGroupConfigSharePartitionMaxRecordLocks(t *testing.T) {
	t.Parallel()
	b := testutil.StartBroker(t, shareBrokerConfig...)
	const topic, group = "gc-locks", "gc-locks-g"
	testutil.CreateTopic(t, b.Admin(), topic, 1)
	cl := b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MaxBufferedRecords(1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := 0; i < 250; i++ { // one batch each
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte{byte(i)}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if code := alterGroupConfigs(t, cl, group, false, setGroupConfig("share.partition.max.record.locks", "4001")); code != kerr.InvalidConfig.Code {
		t.Fatalf("share.partition.max.record.locks=4001: %v, want INVALID_CONFIG", kerr.ErrorForCode(code))
	}
	if code := alterGroupConfigs(t, cl, group, false, setGroupConfig("share.partition.max.record.locks", "100")); code != 0 {
		t.Fatalf("set share.partition.max.record.locks: %v", kerr.ErrorForCode(code))
	}
	id := shareTopicID(t, cl, topic)
	join := func(name string) *rawShareMember { return joinShareMember(ctx, t, cl, group, topic, name, 100) }
	m1, m2 := join("m1"), join("m2")
	fr, err := m1.fetch(ctx, id, 0, nil)
	if err != nil || fr.ErrorCode != 0 {
		t.Fatalf("fetch: %v %+v", err, fr)
	}
	if n, first, last := acquiredCount(fr); n != 100 || first != 0 || last != 99 {
		t.Fatalf("m1 acquired %d records, %d-%d; want 100, 0-99", n, first, last)
	}
	fr, err = m2.fetch(ctx, id, 0, nil)
	if err != nil || fr.ErrorCode != 0 {
		t.Fatalf("fetch: %v %+v", err, fr)
	}
	if n, _, _ := acquiredCount(fr); n != 0 {
		t.Fatalf("m2 acquired %d records past the group's limit of 100", n)
	}
	accept := kmsg.NewShareFetchRequestTopicPartitionAcknowledgementBatch()
	accept.FirstOffset, accept.LastOffset, accept.AcknowledgeTypes = 0, 99, []int8{1}
	if fr, err = m1.fetch(ctx, id, 0, []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{accept}); err != nil || fr.ErrorCode != 0 {
		t.Fatalf("fetch: %v %+v", err, fr)
	}
	if n, first, _ := acquiredCount(fr); n != 100 || first != 100 || fr.Topics[0].Partitions[0].AcknowledgeErrorCode != 0 {
		t.Fatalf("after accepting 100: acquired %d from %d: %+v", n, first, fr.Topics)
	}
}

// TestShareLockRenewalAndItsGroupConfig: a member renews the lock of a
// record it holds (ShareAcknowledge v2, IsRenewAck, type 4, KIP-1222);
// past the first lock's deadline another member still gets nothing, and
// the holder accepts it. With the group's share.renew.acknowledge.enable
// false, a renewal is INVALID_RECORD_STATE and the lock runs out on time.
func TestShareLockRenewalAndItsGroupConfig(t *testing.T) {
	t.Parallel()
	b := testutil.StartBroker(t, shareBrokerConfig...) // 2 s locks
	const topic, group = "gc-renew", "gc-renew-g"
	testutil.CreateTopic(t, b.Admin(), topic, 1)
	cl := b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceValues(t, cl, topic, 1, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	id := shareTopicID(t, cl, topic)
	join := func(name string) *rawShareMember { return joinShareMember(ctx, t, cl, group, topic, name, 100) }
	ack := func(m *rawShareMember, off int64, typ int8, renew bool) int16 {
		t.Helper()
		req := kmsg.NewPtrShareAcknowledgeRequest()
		req.Version = 2
		req.GroupID, req.MemberID, req.ShareSessionEpoch, req.IsRenewAck = &m.group, &m.member, m.session, renew
		rt := kmsg.NewShareAcknowledgeRequestTopic()
		rt.TopicID = id
		rp := kmsg.NewShareAcknowledgeRequestTopicPartition()
		rp.Partition = 0
		a := kmsg.NewShareAcknowledgeRequestTopicPartitionAcknowledgementBatch()
		a.FirstOffset, a.LastOffset, a.AcknowledgeTypes = off, off, []int8{typ}
		rp.AcknowledgementBatches = append(rp.AcknowledgementBatches, a)
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || resp.ErrorCode != 0 {
			t.Fatalf("ShareAcknowledge: %v %+v", err, resp)
		}
		m.session++
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	acquire := func(m *rawShareMember) int {
		t.Helper()
		fr, err := m.fetch(ctx, id, 0, nil)
		if err != nil || fr.ErrorCode != 0 {
			t.Fatalf("fetch: %v %+v", err, fr)
		}
		n, _, _ := acquiredCount(fr)
		return n
	}
	holder, other := join("holder"), join("other")
	if n := acquire(holder); n != 1 {
		t.Fatalf("holder acquired %d records, want 1", n)
	}
	acquired := time.Now()
	acquire(other) // opens its session
	// Renewals every 0.7 s of a 2 s lock: 1.3 s of slack each for a
	// loaded machine, and past the first deadline after the third.
	for i := 0; i < 3; i++ {
		time.Sleep(700 * time.Millisecond)
		if code := ack(holder, 0, 4, true); code != 0 {
			t.Fatalf("renewal %d: %v", i, kerr.ErrorForCode(code))
		}
	}
	if since := time.Since(acquired); since < 2*time.Second {
		t.Fatalf("only %v since the acquisition", since)
	}
	if n := acquire(other); n != 0 {
		t.Fatalf("another member acquired a record whose lock was renewed (%v after the first lock)", time.Since(acquired))
	}
	if code := ack(holder, 0, 1, false); code != 0 {
		t.Fatalf("accept after renewals: %v", kerr.ErrorForCode(code))
	}

	// Renewals off for the group.
	produceValues(t, cl, topic, 1, 1) // offset 1
	if code := alterGroupConfigs(t, cl, group, false, setGroupConfig("share.renew.acknowledge.enable", "false")); code != 0 {
		t.Fatalf("set share.renew.acknowledge.enable: %v", kerr.ErrorForCode(code))
	}
	if n := acquire(holder); n != 1 {
		t.Fatalf("holder acquired %d records, want 1", n)
	}
	if code := ack(holder, 1, 4, true); code != kerr.InvalidRecordState.Code {
		t.Fatalf("renewal with share.renew.acknowledge.enable=false: %v, want INVALID_RECORD_STATE", kerr.ErrorForCode(code))
	}
	testutil.Eventually(t, 10*time.Second, func() error {
		if n := acquire(other); n != 1 {
			return fmt.Errorf("the unrenewed record is not redelivered yet")
		}
		return nil
	})
}
