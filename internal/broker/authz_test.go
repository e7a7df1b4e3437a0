package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"samsa/internal/acl"
	"samsa/internal/record"
	"samsa/internal/testutil"
)

// aclBroker starts a broker with the samsa authorizer, a PLAINTEXT
// listener (User:ANONYMOUS) and a SASL_PLAINTEXT listener with PLAIN users
// admin (a super user), alice and bob, and then overrides.
func aclBroker(t *testing.T, overrides ...string) *testutil.Broker {
	t.Helper()
	return testutil.StartBroker(t, append([]string{
		"listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
		"inter.broker.listener.name=PLAINTEXT",
		"sasl.enabled.mechanisms=PLAIN",
		`listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="a" user_alice="a" user_bob="b";`,
		"authorizer.class.name=samsa",
		"super.users=User:admin",
		"num.partitions=1",
	}, overrides...)...)
}

// userClient is a franz-go client authenticated as user over SASL PLAIN.
func userClient(t *testing.T, b *testutil.Broker, user, pass string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	return testutil.NewClient(t, b.Node.ListenerAddr("SASL_PLAINTEXT"),
		append([]kgo.Opt{kgo.SASL(plain.Auth{User: user, Pass: pass}.AsMechanism()), kgo.RequestRetries(0)}, opts...)...)
}

// direct sends req to the seed broker itself (kgo would route a group
// request through FindCoordinator first) and returns the response.
func direct[R kmsg.Response](t *testing.T, cl *kgo.Client, req kmsg.Request) R {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cl.SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		t.Fatalf("%T: %v", req, err)
	}
	return resp.(R)
}

// grant stores bindings straight in etcd, as CreateAcls does.
func grant(t *testing.T, b *testutil.Broker, bindings ...acl.Binding) {
	t.Helper()
	m := map[string][]byte{}
	for _, bd := range bindings {
		if err := bd.Validate(); err != nil {
			t.Fatal(err)
		}
		m[bd.Key()] = bd.Marshal()
	}
	if err := b.Node.Cluster().PutACLs(context.Background(), m); err != nil {
		t.Fatal(err)
	}
}

func revoke(t *testing.T, b *testutil.Broker, bindings ...acl.Binding) {
	t.Helper()
	var ids []string
	for _, bd := range bindings {
		ids = append(ids, bd.Key())
	}
	if err := b.Node.Cluster().DeleteACLs(context.Background(), ids); err != nil {
		t.Fatal(err)
	}
}

func allow(principal string, rt kmsg.ACLResourceType, name string, pt kmsg.ACLResourcePatternType, op kmsg.ACLOperation) acl.Binding {
	return acl.Binding{ResourceType: rt, ResourceName: name, PatternType: pt, Principal: principal, Host: "*",
		Operation: op, Permission: kmsg.ACLPermissionTypeAllow}
}

func produceCode(t *testing.T, cl *kgo.Client, topic string) int16 {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = buildBatch(t, record.CodecNone, 1, time.Now().UnixMilli())
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := request[*kmsg.ProduceResponse](t, cl, req)
	return resp.Topics[0].Partitions[0].ErrorCode
}

// fetchCode fetches partition 0 of the topic whose id is id, as
// replicaID (-1: a consumer), and returns the partition's error code.
func fetchCode(t *testing.T, cl *kgo.Client, id [16]byte, replicaID int32) int16 {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.ReplicaState.ID, req.ReplicaState.Epoch = replicaID, replicaID, -1
	req.MaxBytes, req.SessionEpoch = 1<<20, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.TopicID = id
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LogStartOffset = 1<<20, -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := request[*kmsg.FetchResponse](t, cl, req)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("fetch: %d topics in response (top-level error %v)", len(resp.Topics), kerr.ErrorForCode(resp.ErrorCode))
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}

func metadataTopics(t *testing.T, cl *kgo.Client, topics ...string) map[string]int16 {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	if topics != nil {
		for _, tp := range topics {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(tp)
			req.Topics = append(req.Topics, rt)
		}
	}
	resp := request[*kmsg.MetadataResponse](t, cl, req)
	out := map[string]int16{}
	for _, tp := range resp.Topics {
		out[*tp.Topic] = tp.ErrorCode
	}
	return out
}

// TestAuthorizationFollowsACLs walks one principal through Kafka's
// authorization rules on real requests: no ACL denies (and hides the
// topic), WRITE allows produce and implies DESCRIBE but not READ, a
// PREFIXED READ allows fetch, a LITERAL DENY beats it, a deleted ACL
// stops applying at once, super users are allowed everything, and
// a client fetching as a replica needs CLUSTER_ACTION.
// Reference: Kafka docs, "Operations and Resources on Protocols".
func TestAuthorizationFollowsACLs(t *testing.T) {
	t.Parallel()
	b := aclBroker(t)
	admin := userClient(t, b, "admin", "a")
	alice := userClient(t, b, "alice", "a")
	anon := b.Client(kgo.RequestRetries(0))

	// The super user creates the topic and writes to it.
	createReq := kmsg.NewPtrCreateTopicsRequest()
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = "orders", 1, 1
	createReq.Topics = append(createReq.Topics, ct)
	createReq.TimeoutMillis = 5000
	if c := request[*kmsg.CreateTopicsResponse](t, admin, createReq).Topics[0].ErrorCode; c != 0 {
		t.Fatalf("admin CreateTopics: %v", kerr.ErrorForCode(c))
	}
	if c := produceCode(t, admin, "orders"); c != 0 {
		t.Fatalf("admin produce: %v", kerr.ErrorForCode(c))
	}
	id := topicID(t, admin, "orders")

	// No ACL: denied everywhere, the topic hidden from the listing.
	if c := produceCode(t, alice, "orders"); c != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("produce without ACL: %v", kerr.ErrorForCode(c))
	}
	if c := fetchCode(t, alice, id, -1); c != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("fetch without ACL: %v", kerr.ErrorForCode(c))
	}
	if got := metadataTopics(t, alice); len(got) != 0 {
		t.Errorf("metadata of all topics shows %v to a principal without DESCRIBE", got)
	}
	if got := metadataTopics(t, alice, "orders", "nope"); got["orders"] != kerr.TopicAuthorizationFailed.Code || got["nope"] != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("named metadata %v: want TOPIC_AUTHORIZATION_FAILED for an existing and a missing topic", got)
	}
	if c := produceCode(t, anon, "orders"); c != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("anonymous produce: %v", kerr.ErrorForCode(c))
	}
	ipr := kmsg.NewPtrInitProducerIDRequest()
	if c := request[*kmsg.InitProducerIDResponse](t, alice, ipr).ErrorCode; c != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("idempotent InitProducerId without WRITE anywhere: %v (KIP-679)", kerr.ErrorForCode(c))
	}

	// WRITE on the topic: produce works, DESCRIBE follows, READ does not.
	write := allow("User:alice", kmsg.ACLResourceTypeTopic, "orders", kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationWrite)
	grant(t, b, write)
	if c := produceCode(t, alice, "orders"); c != 0 {
		t.Errorf("produce with WRITE: %v", kerr.ErrorForCode(c))
	}
	if got := metadataTopics(t, alice); len(got) != 1 || got["orders"] != 0 {
		t.Errorf("metadata with WRITE (implies DESCRIBE): %v", got)
	}
	if c := fetchCode(t, alice, id, -1); c != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("fetch with only WRITE: %v", kerr.ErrorForCode(c))
	}
	if c := request[*kmsg.InitProducerIDResponse](t, alice, kmsg.NewPtrInitProducerIDRequest()).ErrorCode; c != 0 {
		t.Errorf("idempotent InitProducerId with WRITE on a topic: %v (KIP-679)", kerr.ErrorForCode(c))
	}

	// PREFIXED READ allows fetching; a LITERAL DENY beats it.
	read := allow("User:alice", kmsg.ACLResourceTypeTopic, "ord", kmsg.ACLResourcePatternTypePrefixed, kmsg.ACLOperationRead)
	grant(t, b, read)
	if c := fetchCode(t, alice, id, -1); c != 0 {
		t.Errorf("fetch with PREFIXED READ: %v", kerr.ErrorForCode(c))
	}
	deny := read
	deny.ResourceName, deny.PatternType, deny.Permission = "orders", kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLPermissionTypeDeny
	grant(t, b, deny)
	if c := fetchCode(t, alice, id, -1); c != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("fetch with DENY over ALLOW: %v", kerr.ErrorForCode(c))
	}

	// Deleting an ACL applies to the next request.
	revoke(t, b, write)
	if c := produceCode(t, alice, "orders"); c != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("produce after the WRITE ACL was deleted: %v", kerr.ErrorForCode(c))
	}

	// A client posing as a replica needs CLUSTER_ACTION, even
	// with READ on the topic.
	revoke(t, b, deny)
	if c := fetchCode(t, alice, id, 7); c != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("replica fetch by a client: %v", kerr.ErrorForCode(c))
	}
	if c := fetchCode(t, admin, id, -1); c != 0 {
		t.Errorf("super user fetch: %v", kerr.ErrorForCode(c))
	}
}

// TestAuthorizationOfGroupsAndAdmin: a consumer group needs READ on the
// group (GROUP_AUTHORIZATION_FAILED otherwise), admin APIs need their
// cluster or topic operation, and ListGroups shows only describable
// groups.
func TestAuthorizationOfGroupsAndAdmin(t *testing.T) {
	t.Parallel()
	b := aclBroker(t)
	bob := userClient(t, b, "bob", "b")

	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.MemberID, hb.Generation = "g1", "m", 1
	if c := direct[*kmsg.HeartbeatResponse](t, bob, hb).ErrorCode; c != kerr.GroupAuthorizationFailed.Code {
		t.Errorf("heartbeat without group READ: %v", kerr.ErrorForCode(c))
	}
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKey, fc.CoordinatorKeys = "g1", []string{"g1"}
	fcCode := func() int16 {
		resp := direct[*kmsg.FindCoordinatorResponse](t, bob, fc)
		if len(resp.Coordinators) == 1 {
			return resp.Coordinators[0].ErrorCode
		}
		return resp.ErrorCode
	}
	if c := fcCode(); c != kerr.GroupAuthorizationFailed.Code {
		t.Errorf("FindCoordinator without group DESCRIBE: %v", kerr.ErrorForCode(c))
	}
	el := kmsg.NewPtrElectLeadersRequest()
	if c := request[*kmsg.ElectLeadersResponse](t, bob, el).ErrorCode; c != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("ElectLeaders without cluster ALTER: %v", kerr.ErrorForCode(c))
	}
	ct := kmsg.NewPtrCreateTopicsRequest()
	tt := kmsg.NewCreateTopicsRequestTopic()
	tt.Topic, tt.NumPartitions, tt.ReplicationFactor = "bobs", 1, 1
	ct.Topics, ct.TimeoutMillis = append(ct.Topics, tt), 5000
	if c := request[*kmsg.CreateTopicsResponse](t, bob, ct).Topics[0].ErrorCode; c != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("CreateTopics without CREATE: %v", kerr.ErrorForCode(c))
	}
	dc := kmsg.NewPtrDescribeConfigsRequest()
	dr := kmsg.NewDescribeConfigsRequestResource()
	dr.ResourceType, dr.ResourceName = kmsg.ConfigResourceTypeBroker, "0"
	dc.Resources = append(dc.Resources, dr)
	if c := request[*kmsg.DescribeConfigsResponse](t, bob, dc).Resources[0].ErrorCode; c != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("broker DescribeConfigs without cluster DESCRIBE_CONFIGS: %v", kerr.ErrorForCode(c))
	}

	grant(t, b,
		allow("User:bob", kmsg.ACLResourceTypeGroup, "g", kmsg.ACLResourcePatternTypePrefixed, kmsg.ACLOperationRead),
		allow("User:bob", kmsg.ACLResourceTypeTopic, "bobs", kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationCreate),
		allow("User:bob", kmsg.ACLResourceTypeCluster, "kafka-cluster", kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationAlterConfigs),
	)
	if c := fcCode(); c != 0 {
		t.Errorf("FindCoordinator with group READ (implies DESCRIBE): %v", kerr.ErrorForCode(c))
	}
	if c := request[*kmsg.CreateTopicsResponse](t, bob, ct).Topics[0].ErrorCode; c != 0 {
		t.Errorf("CreateTopics with topic CREATE: %v", kerr.ErrorForCode(c))
	}
	if c := request[*kmsg.DescribeConfigsResponse](t, bob, dc).Resources[0].ErrorCode; c != 0 {
		t.Errorf("broker DescribeConfigs with ALTER_CONFIGS (implies DESCRIBE_CONFIGS): %v", kerr.ErrorForCode(c))
	}

	// A real consumer group: join, sync, commit, as bob.
	grant(t, b, allow("User:bob", kmsg.ACLResourceTypeTopic, "bobs", kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationAll))
	prod := userClient(t, b, "bob", "b", kgo.DefaultProduceTopic("bobs"))
	produceSync(t, prod, &kgo.Record{Value: []byte("x")})
	cons := userClient(t, b, "bob", "b", kgo.ConsumeTopics("bobs"), kgo.ConsumerGroup("g1"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	fs := cons.PollFetches(ctx)
	if err := fs.Err(); err != nil || fs.NumRecords() != 1 {
		t.Fatalf("group consume as bob: %d records, err %v", fs.NumRecords(), err)
	}
	if err := cons.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("commit: %v", err)
	}

	// ListGroups: bob sees g1 (DESCRIBE via READ), alice sees nothing.
	alice := userClient(t, b, "alice", "a")
	lg := kmsg.NewPtrListGroupsRequest()
	if got := direct[*kmsg.ListGroupsResponse](t, alice, lg).Groups; len(got) != 0 {
		t.Errorf("ListGroups shows %v to a principal without DESCRIBE", got)
	}
	found := false
	for _, g := range direct[*kmsg.ListGroupsResponse](t, bob, lg).Groups {
		found = found || g.Group == "g1"
	}
	if !found {
		t.Error("ListGroups does not show g1 to bob")
	}
}

// TestOffsetForLeaderEpochNeedsClusterActionOrDescribe: CLUSTER_ACTION on
// the cluster or DESCRIBE on the topic answers OffsetForLeaderEpoch,
// whatever the replica id; neither gets TOPIC_AUTHORIZATION_FAILED.
// Reference: KafkaApis.handleOffsetForLeaderEpochRequest (KIP-320).
func TestOffsetForLeaderEpochNeedsClusterActionOrDescribe(t *testing.T) {
	t.Parallel()
	b := aclBroker(t)
	admin := userClient(t, b, "admin", "a")
	alice := userClient(t, b, "alice", "a")
	testutil.CreateTopic(t, kadm.NewClient(admin), "epochs", 1)
	code := func(replicaID int32) int16 {
		t.Helper()
		req := kmsg.NewPtrOffsetForLeaderEpochRequest()
		req.ReplicaID = replicaID
		rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
		rt.Topic = "epochs"
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.CurrentLeaderEpoch, rp.LeaderEpoch = -1, 0
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := direct[*kmsg.OffsetForLeaderEpochResponse](t, alice, req)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("OffsetForLeaderEpoch: malformed response %+v", resp.Topics)
		}
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	for _, replica := range []int32{-1, 5} {
		if c := code(replica); c != kerr.TopicAuthorizationFailed.Code {
			t.Errorf("replica id %d without ACLs: %v, want TOPIC_AUTHORIZATION_FAILED", replica, kerr.ErrorForCode(c))
		}
	}
	for _, bd := range []acl.Binding{
		allow("User:alice", kmsg.ACLResourceTypeCluster, acl.ClusterName, kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationClusterAction),
		allow("User:alice", kmsg.ACLResourceTypeTopic, "epochs", kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationDescribe),
	} {
		grant(t, b, bd)
		for _, replica := range []int32{-1, 5} {
			if c := code(replica); c != 0 {
				t.Errorf("replica id %d with %v %v: %v", replica, bd.Operation, bd.ResourceType, kerr.ErrorForCode(c))
			}
		}
		revoke(t, b, bd)
	}
}

// TestTransactionalInitProducerIDAuthorizedIsNoAuthorizationError: WRITE
// on the transactional id passes authorization; the broker, which does not
// coordinate the id before a FindCoordinator created __transaction_state,
// then answers NOT_COORDINATOR rather than an authorization error. Without
// WRITE the answer is TRANSACTIONAL_ID_AUTHORIZATION_FAILED.
// Reference: KafkaApis.handleInitProducerIdRequest.
func TestTransactionalInitProducerIDAuthorizedIsNoAuthorizationError(t *testing.T) {
	t.Parallel()
	b := aclBroker(t)
	alice := userClient(t, b, "alice", "a")
	code := func() int16 {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID, req.TransactionTimeoutMillis = kmsg.StringPtr("tx"), 60000
		return direct[*kmsg.InitProducerIDResponse](t, alice, req).ErrorCode
	}
	if c := code(); c != kerr.TransactionalIDAuthorizationFailed.Code {
		t.Errorf("without WRITE on the transactional id: %v, want TRANSACTIONAL_ID_AUTHORIZATION_FAILED", kerr.ErrorForCode(c))
	}
	grant(t, b, allow("User:alice", kmsg.ACLResourceTypeTransactionalId, "tx", kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationWrite))
	if c := code(); c != kerr.NotCoordinator.Code {
		t.Errorf("with WRITE on the transactional id: %v, want NOT_COORDINATOR", kerr.ErrorForCode(c))
	}
}

// TestCreateTopicsShowsConfigsOnlyWithDescribeConfigs: CREATE lets a
// principal create a topic; the configs, partition count and replication
// factor in the response (v5+) need DESCRIBE_CONFIGS on it, else
// ConfigErrorCode is TOPIC_AUTHORIZATION_FAILED.
// Reference: ReplicationControlManager.createTopic (authorizedToReturnConfigs).
func TestCreateTopicsShowsConfigsOnlyWithDescribeConfigs(t *testing.T) {
	t.Parallel()
	b := aclBroker(t)
	alice := userClient(t, b, "alice", "a")
	grant(t, b, allow("User:alice", kmsg.ACLResourceTypeCluster, acl.ClusterName, kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationCreate))
	create := func(topic string) kmsg.CreateTopicsResponseTopic {
		t.Helper()
		req := kmsg.NewPtrCreateTopicsRequest()
		ct := kmsg.NewCreateTopicsRequestTopic()
		ct.Topic, ct.NumPartitions, ct.ReplicationFactor = topic, 1, 1
		req.Topics, req.TimeoutMillis = append(req.Topics, ct), 5000
		resp := request[*kmsg.CreateTopicsResponse](t, alice, req)
		if resp.Version < 5 || len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
			t.Fatalf("CreateTopics %s: v%d %+v", topic, resp.Version, resp.Topics)
		}
		return resp.Topics[0]
	}
	if rt := create("hidden"); rt.ConfigErrorCode != kerr.TopicAuthorizationFailed.Code || len(rt.Configs) != 0 ||
		rt.NumPartitions != -1 || rt.ReplicationFactor != -1 {
		t.Errorf("without DESCRIBE_CONFIGS: config error %v, %d configs, %d partitions, replication factor %d; want TOPIC_AUTHORIZATION_FAILED and none",
			kerr.ErrorForCode(rt.ConfigErrorCode), len(rt.Configs), rt.NumPartitions, rt.ReplicationFactor)
	}
	grant(t, b, allow("User:alice", kmsg.ACLResourceTypeTopic, "shown", kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationDescribeConfigs))
	if rt := create("shown"); rt.ConfigErrorCode != 0 || len(rt.Configs) == 0 || rt.NumPartitions != 1 || rt.ReplicationFactor != 1 {
		t.Errorf("with DESCRIBE_CONFIGS: config error %v, %d configs, %d partitions, replication factor %d",
			kerr.ErrorForCode(rt.ConfigErrorCode), len(rt.Configs), rt.NumPartitions, rt.ReplicationFactor)
	}
}

// TestClusterAuthorizedOperationsNeedDescribe: the cluster's authorized
// operations (Metadata v8-10, DescribeCluster) are 0 unless the principal
// may DESCRIBE the cluster, whatever else it may do there.
// Reference: KafkaApis.handleTopicMetadataRequest,
// AuthHelper.computeDescribeClusterResponse (KIP-430).
func TestClusterAuthorizedOperationsNeedDescribe(t *testing.T) {
	t.Parallel()
	b := aclBroker(t)
	alice := userClient(t, b, "alice", "a", kgo.MaxVersions(func() *kversion.Versions {
		v := kversion.Stable()
		v.SetMaxKeyVersion(int16(kmsg.Metadata), 10)
		return v
	}()))
	ops := func() (metadata, describeCluster int32) {
		md := kmsg.NewPtrMetadataRequest()
		md.IncludeClusterAuthorizedOperations = true
		dc := kmsg.NewPtrDescribeClusterRequest()
		dc.IncludeClusterAuthorizedOperations, dc.EndpointType = true, 1
		return direct[*kmsg.MetadataResponse](t, alice, md).AuthorizedOperations,
			direct[*kmsg.DescribeClusterResponse](t, alice, dc).ClusterAuthorizedOperations
	}
	idem := allow("User:alice", kmsg.ACLResourceTypeCluster, acl.ClusterName, kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationIdempotentWrite)
	grant(t, b, idem)
	if m, d := ops(); m != 0 || d != 0 {
		t.Errorf("with IDEMPOTENT_WRITE but not DESCRIBE: Metadata %#x, DescribeCluster %#x; want 0", m, d)
	}
	grant(t, b, allow("User:alice", kmsg.ACLResourceTypeCluster, acl.ClusterName, kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationDescribe))
	want := int32(1<<kmsg.ACLOperationDescribe | 1<<kmsg.ACLOperationIdempotentWrite)
	if m, d := ops(); m != want || d != want {
		t.Errorf("with DESCRIBE and IDEMPOTENT_WRITE: Metadata %#x, DescribeCluster %#x; want %#x", m, d, want)
	}
}

// A DENY whose host is written as Kafka's tools may write it (here the
// IPv4-mapped form of the client's address) applies to that client:
// hosts are compared in canonical form.
func TestACLHostsCompareCanonically(t *testing.T) {
	t.Parallel()
	b := aclBroker(t)
	admin := kadm.NewClient(userClient(t, b, "admin", "a"))
	alice := userClient(t, b, "alice", "a")
	ctx := ctxT(t, 10*time.Second)
	testutil.CreateTopic(t, admin, "hosts", 1)
	allowAll := kadm.NewACLs().Allow("User:alice").AllowHosts("*").Topics("hosts").Operations(kadm.OpWrite)
	denyHere := kadm.NewACLs().Deny("User:alice").DenyHosts("::FFFF:127.0.0.1").Topics("hosts").Operations(kadm.OpWrite)
	for _, a := range []*kadm.ACLBuilder{allowAll, denyHere} {
		res, err := admin.CreateACLs(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil {
				t.Fatal(r.Err)
			}
		}
	}
	if c := produceCode(t, alice, "hosts"); c != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("produce from 127.0.0.1 with a DENY for ::ffff:127.0.0.1: %v", kerr.ErrorForCode(c))
	}
}

// A stored ACL that does not decode might be a DENY: until it is deleted,
// every request but a super user's is denied.
func TestUndecodableACLFailsClosed(t *testing.T) {
	t.Parallel()
	b := aclBroker(t)
	admin := userClient(t, b, "admin", "a")
	alice := userClient(t, b, "alice", "a")
	testutil.CreateTopic(t, kadm.NewClient(admin), "closed", 1)
	grant(t, b, allow("User:alice", kmsg.ACLResourceTypeTopic, "closed", kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationWrite))
	if c := produceCode(t, alice, "closed"); c != 0 {
		t.Fatalf("produce with WRITE: %v", kerr.ErrorForCode(c))
	}
	ctx := context.Background()
	if err := b.Node.Cluster().PutACLs(ctx, map[string][]byte{"corrupt": []byte("{not json")}); err != nil {
		t.Fatal(err)
	}
	if c := produceCode(t, alice, "closed"); c != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("produce with an undecodable ACL stored: %v, want TOPIC_AUTHORIZATION_FAILED", kerr.ErrorForCode(c))
	}
	if c := produceCode(t, admin, "closed"); c != 0 {
		t.Errorf("super user produce with an undecodable ACL stored: %v", kerr.ErrorForCode(c))
	}
	if err := b.Node.Cluster().DeleteACLs(ctx, []string{"corrupt"}); err != nil {
		t.Fatal(err)
	}
	if c := produceCode(t, alice, "closed"); c != 0 {
		t.Errorf("produce after the undecodable ACL was deleted: %v", kerr.ErrorForCode(c))
	}
}
