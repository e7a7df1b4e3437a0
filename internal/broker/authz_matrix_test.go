package broker_test

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/acl"
	"samsa/internal/record"
	"samsa/internal/testutil"
)

// The authorization matrix (TESTPLAN X-08): every API the broker serves
// that Kafka authorizes, sent by one principal under a series of ACL sets,
// each compared with what Kafka answers.
//
// Where the expected behaviour comes from:
//
//   - Which operation on which resource an API needs, and in which order
//     the checks run: acl.APIRequirements, which transcribes the table
//     "Operations and Resources on Protocols" of Kafka's security
//     documentation as Kafka's broker applies it (KafkaApis, AuthHelper,
//     ConfigHelper, AclApis). mxAPIs picks, per request shape, the checks
//     of that table the request meets; TestAuthorizationMatrix fails if a
//     served API or one of its checks is neither exercised nor listed in
//     mxSkipped with a reason.
//   - Which error a denied request gets, and in which field: the handler in
//     Kafka's KafkaApis named on each row of mxAPIs. By default a failed
//     check answers the authorization error of its resource type
//     (TOPIC_/GROUP_/CLUSTER_/TRANSACTIONAL_ID_AUTHORIZATION_FAILED); a
//     check that Kafka answers otherwise says so on its row.
//   - How ACLs combine: Kafka's StandardAuthorizer. A LITERAL name, a
//     PREFIXED prefix and the LITERAL wildcard "*" all match; a matching
//     DENY beats any ALLOW; READ, WRITE, DELETE and ALTER imply DESCRIBE
//     and ALTER_CONFIGS implies DESCRIBE_CONFIGS; super.users need no ACL;
//     without a matching ALLOW the answer is no. Where no resource is named
//     (KIP-679's WRITE on any topic), Kafka's
//     Authorizer.authorizeByResourceType decides: there a LITERAL DENY of
//     one topic only cancels a LITERAL ALLOW of the same topic.
//
// Every cell is one request on one broker. Its ACLs are written to etcd
// before the request and deleted after it; on a single broker an ACL
// change applies to the next request once PutACLs or DeleteACLs returns.

// mxNoEntry is the code reported when the response has no entry for the
// resource the request named.
const mxNoEntry int16 = math.MinInt16

// mxOutcome is what a cell expects, as far as authorization goes: an
// authorization error code, the resource left out of a listing (hidden),
// or neither (allowed).
type mxOutcome struct {
	code   int16
	hidden bool
}

var (
	mxAllowed = mxOutcome{}
	mxHidden  = mxOutcome{hidden: true}
)

func mxDenied(e *kerr.Error) mxOutcome { return mxOutcome{code: e.Code} }

func (o mxOutcome) String() string {
	switch {
	case o.hidden:
		return "left out of the listing"
	case o.code == 0:
		return "allowed"
	}
	return kerr.ErrorForCode(o.code).(*kerr.Error).Message
}

// mxGot is what a response says about the resource a cell's request
// named: the error code of its entry (0 if none applies) and, for a
// listing, whether it is in the list. Extractors of APIs that do not list
// set listed.
type mxGot struct {
	code   int16
	listed bool
}

func (g mxGot) String() string {
	switch {
	case !g.listed:
		return "left out of the listing"
	case g.code == mxNoEntry:
		return "no entry for the resource in the response"
	case g.code == 0:
		return "no error"
	}
	return kerr.ErrorForCode(g.code).Error()
}

// mxAuthCodes are the errors that mean "not authorized".
var mxAuthCodes = []int16{
	kerr.TopicAuthorizationFailed.Code,
	kerr.GroupAuthorizationFailed.Code,
	kerr.ClusterAuthorizationFailed.Code,
	kerr.TransactionalIDAuthorizationFailed.Code,
	kerr.DelegationTokenAuthorizationFailed.Code,
}

// matches reports whether got is what want expects.
func (want mxOutcome) matches(got mxGot) bool {
	switch {
	case want.hidden:
		return !got.listed
	case want.code != 0:
		return got.listed && got.code == want.code
	}
	return got.listed && got.code != mxNoEntry && !slices.Contains(mxAuthCodes, got.code)
}

// mxCheck selects check index of acl.APIRequirements[key].Checks.
type mxCheck struct {
	index int
	// denied is what Kafka answers when the check fails. The zero value
	// means the authorization error of the check's resource type, which
	// only a check with one alternative may rely on.
	denied mxOutcome
}

// mxAPI is one request shape of one API.
type mxAPI struct {
	key     int16
	variant string
	// checks are the checks the request meets, in the order Kafka runs
	// them.
	checks []mxCheck
	// ref names Kafka's handler the denial codes come from.
	ref string
	// topic names the topic of a cell; nil means "mx-<key>", which the
	// test creates first unless noTopic.
	topic   func(e *mxEnv) string
	noTopic bool
	// setup runs as the super user before each cell.
	setup func(e *mxEnv, t *testing.T, topic string)
	build func(e *mxEnv, t *testing.T, topic string) kmsg.Request
	got   func(resp kmsg.Response, topic string) mxGot
}

func (a *mxAPI) name() string {
	n := acl.APIRequirements[a.key].Name
	if a.variant != "" {
		n += "/" + a.variant
	}
	return n
}

// mxSkipped lists the checks of served APIs that the matrix does not
// exercise, and why. Checks marked DocumentedOnly (rows of Kafka's
// documentation that its broker no longer checks) are skipped as well.
var mxSkipped = map[int16]map[int]string{
	10: {2: "key type SHARE needs FindCoordinator v6; samsa serves v0-4"},
	76: {0: "share group rows are not in the matrix yet; TestShareGroupAuthorization covers them",
		1: "share group rows are not in the matrix yet; TestShareGroupAuthorization covers them"},
	77: {0: "share group rows are not in the matrix yet; TestShareGroupAuthorization covers them"},
	78: {0: "share group rows are not in the matrix yet; TestShareGroupAuthorization covers them",
		1: "share group rows are not in the matrix yet; TestShareGroupAuthorization covers them"},
	79: {0: "share group rows are not in the matrix yet; TestShareGroupAuthorization covers them",
		1: "share group rows are not in the matrix yet; TestShareGroupAuthorization covers them"},
	90: {0: "share group rows are not in the matrix yet; TestShareGroupAuthorization covers the group check",
		1: "share group rows are not in the matrix yet; the handler checks DESCRIBE per topic (90_describe_share_group_offsets.go)"},
	91: {0: "share group rows are not in the matrix yet; TestShareGroupOffsetsAuthorization covers them",
		1: "share group rows are not in the matrix yet; TestShareGroupOffsetsAuthorization covers them"},
	92: {0: "share group rows are not in the matrix yet; TestShareGroupOffsetsAuthorization covers them",
		1: "share group rows are not in the matrix yet; TestShareGroupOffsetsAuthorization covers them"},
	83: {0: "inter-broker share coordinator RPC; TestShareGroupAuthorization checks CLUSTER_ACTION"},
	84: {0: "inter-broker share coordinator RPC; TestShareGroupAuthorization checks CLUSTER_ACTION"},
	85: {0: "inter-broker share coordinator RPC; TestShareGroupAuthorization checks CLUSTER_ACTION"},
	86: {0: "inter-broker share coordinator RPC; TestShareGroupAuthorization checks CLUSTER_ACTION"},
	87: {0: "inter-broker share coordinator RPC; TestShareGroupAuthorization checks CLUSTER_ACTION"},
	69: {1: "needs a consumer group with members named mx-g, which the classic rows use; TestConsumerGroupDescribeTopicAuthorization covers it"},
	24: {0: "kgo sends v4+ (the broker form); TestAddPartitionsToTxnV3Authorization covers v0-3",
		1: "kgo sends v4+ (the broker form); TestAddPartitionsToTxnV3Authorization covers v0-3"},
	27: {0: "both alternatives are on the cluster, so the matrix's cells for other operations would deny one alternative for lacking the other; TestWriteTxnMarkersAuthorization covers it"},
	65: {1: "needs an ongoing transaction on the topic; TestDescribeTransactionsLeavesOutUndescribableTopics covers it"},
	20: {0: "DELETE implies DESCRIBE, so no request lacks DESCRIBE alone; Kafka checks it only to hide the name of a topic given by id"},
	32: {3: "CLIENT_METRICS config resources are not served (INVALID_REQUEST for every principal)"},
	44: {3: "CLIENT_METRICS config resources are not served (INVALID_REQUEST for every principal)"},
}

// mxEnv is the broker and clients the matrix runs on.
type mxEnv struct {
	b        *testutil.Broker
	admin    *kgo.Client
	alice    *kgo.Client
	nodeID   int32
	topicIDs map[string][16]byte
	count    int // cells run, which also numbers fresh topics
}

const (
	mxUser   = "User:alice"
	mxGroup  = "mx-g"
	mxTxnID  = "mx-t"
	mxPrefix = "mx-"
)

func mxTopic(key int16) string { return "mx-" + strconv.Itoa(int(key)) }

// TestAuthorizationMatrix runs the X-08 matrix and, on the same broker,
// the cases.
func TestAuthorizationMatrix(t *testing.T) {
	t.Parallel()
	b := aclBroker(t, "ssl.key.password="+mxSecret)
	e := &mxEnv{
		b:        b,
		admin:    userClient(t, b, "admin", "a"),
		alice:    userClient(t, b, "alice", "a"),
		topicIDs: map[string][16]byte{},
	}
	e.prepare(t)

	t.Run("X-08", func(t *testing.T) { e.matrix(t) })
	t.Run("X-09", func(t *testing.T) { e.replicaOnlyAPIs(t) })
	t.Run("X-10", func(t *testing.T) { e.producerIdentity(t) })
	t.Run("X-11", func(t *testing.T) { e.listingsShowOnlyDescribable(t) })
}

// prepare creates, as the super user, the topics and the group the cells
// name.
func (e *mxEnv) prepare(t *testing.T) {
	t.Helper()
	md := direct[*kmsg.MetadataResponse](t, e.admin, kmsg.NewPtrMetadataRequest())
	if len(md.Brokers) != 1 {
		t.Fatalf("metadata lists %d brokers", len(md.Brokers))
	}
	e.nodeID = md.Brokers[0].NodeID
	for _, a := range mxAPIs {
		if a.topic == nil && !a.noTopic {
			e.ensureTopic(t, mxTopic(a.key))
		}
	}
	// The group coordinator's topic, and a group with a committed offset.
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKey, fc.CoordinatorKeys = mxGroup, []string{mxGroup}
	testutil.Eventually(t, 20*time.Second, func() error {
		if g := mxFindCoordinatorCode(direct[*kmsg.FindCoordinatorResponse](t, e.admin, fc), ""); g.code != 0 {
			return testutil.Errorf("FindCoordinator %s: %v", mxGroup, g)
		}
		return nil
	})
	e.ensureGroup(t)
}

// ensureTopic creates topic unless it exists and waits until its
// partition has a leader.
func (e *mxEnv) ensureTopic(t *testing.T, topic string) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = topic, 1, 1
	req.Topics, req.TimeoutMillis = append(req.Topics, ct), 5000
	testutil.Eventually(t, 20*time.Second, func() error {
		if c := direct[*kmsg.CreateTopicsResponse](t, e.admin, req).Topics[0].ErrorCode; c != 0 && c != kerr.TopicAlreadyExists.Code {
			return testutil.Errorf("create %s: %v", topic, kerr.ErrorForCode(c))
		}
		return nil
	})
	md := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	md.Topics = append(md.Topics, mt)
	testutil.Eventually(t, 20*time.Second, func() error {
		resp := direct[*kmsg.MetadataResponse](t, e.admin, md)
		if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 || len(resp.Topics[0].Partitions) != 1 ||
			resp.Topics[0].Partitions[0].Leader < 0 {
			return testutil.Errorf("no leader for %s yet", topic)
		}
		e.topicIDs[topic] = resp.Topics[0].TopicID
		// The leader serves once ListOffsets answers.
		lo := kmsg.NewPtrListOffsetsRequest()
		lt := kmsg.NewListOffsetsRequestTopic()
		lt.Topic = topic
		lp := kmsg.NewListOffsetsRequestTopicPartition()
		lp.Timestamp = -1
		lt.Partitions = append(lt.Partitions, lp)
		lo.Topics = append(lo.Topics, lt)
		lr := direct[*kmsg.ListOffsetsResponse](t, e.admin, lo)
		if len(lr.Topics) != 1 || lr.Topics[0].Partitions[0].ErrorCode != 0 {
			return testutil.Errorf("ListOffsets of %s: %+v", topic, lr.Topics)
		}
		return nil
	})
}

// ensureGroup commits offset 0 of mx-9 in group mx-g, so that the group
// exists and lists that topic.
// ensureTxnID makes mxTxnID known to its coordinator.
func (e *mxEnv) ensureTxnID(t *testing.T) {
	t.Helper()
	testutil.Eventually(t, 20*time.Second, func() error {
		fc := kmsg.NewPtrFindCoordinatorRequest()
		fc.CoordinatorType, fc.CoordinatorKey = 1, mxTxnID
		direct[*kmsg.FindCoordinatorResponse](t, e.admin, fc)
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID, req.TransactionTimeoutMillis = kmsg.StringPtr(mxTxnID), 60000
		if c := direct[*kmsg.InitProducerIDResponse](t, e.admin, req).ErrorCode; c != 0 {
			return testutil.Errorf("InitProducerId %s: %v", mxTxnID, kerr.ErrorForCode(c))
		}
		return nil
	})
}

func (e *mxEnv) ensureGroup(t *testing.T) {
	t.Helper()
	req := mxOffsetCommit(mxTopic(9))
	testutil.Eventually(t, 20*time.Second, func() error {
		resp := direct[*kmsg.OffsetCommitResponse](t, e.admin, req)
		if len(resp.Topics) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
			return testutil.Errorf("commit to %s: %+v", mxGroup, resp.Topics)
		}
		return nil
	})
}

// mxCell is one request under one set of ACLs.
type mxCell struct {
	name  string
	super bool // sent by the super user
	acls  []acl.Binding
	want  mxOutcome
}

func mxBinding(rt kmsg.ACLResourceType, name string, pt kmsg.ACLResourcePatternType, op kmsg.ACLOperation, perm kmsg.ACLPermissionType) acl.Binding {
	return acl.Binding{ResourceType: rt, ResourceName: name, PatternType: pt, Principal: mxUser, Host: "*",
		Operation: op, Permission: perm}
}

// mxPattern is one way to name a resource in an ACL.
type mxPattern struct {
	label string
	pt    kmsg.ACLResourcePatternType
	name  string
}

// mxPatterns are the patterns that match the resource rt/name: LITERAL,
// PREFIXED "mx-" and the LITERAL wildcard. The cluster resource has one
// name: Kafka refuses Cluster ACLs of any other name, "*" included.
func mxPatterns(rt kmsg.ACLResourceType, name string) []mxPattern {
	lit, pre := kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLResourcePatternTypePrefixed
	if rt == kmsg.ACLResourceTypeCluster {
		return []mxPattern{{"LITERAL", lit, acl.ClusterName}, {"PREFIXED", pre, acl.ClusterName}}
	}
	return []mxPattern{{"LITERAL", lit, name}, {"PREFIXED", pre, mxPrefix}, {"wildcard", lit, acl.WildcardResource}}
}

// mxImplying returns the operations whose ALLOW also allows op on rt:
// Kafka's implications (StandardAuthorizerData) and ALL.
func mxImplying(op kmsg.ACLOperation, rt kmsg.ACLResourceType) []kmsg.ACLOperation {
	var ops []kmsg.ACLOperation
	switch op {
	case kmsg.ACLOperationDescribe:
		ops = []kmsg.ACLOperation{kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationDelete, kmsg.ACLOperationAlter}
	case kmsg.ACLOperationDescribeConfigs:
		ops = []kmsg.ACLOperation{kmsg.ACLOperationAlterConfigs}
	}
	ops = append(ops, kmsg.ACLOperationAll)
	supported := acl.SupportedOperations(rt)
	return slices.DeleteFunc(ops, func(o kmsg.ACLOperation) bool { return !slices.Contains(supported, o) })
}

// mxInsufficient returns the operations on rt that do not allow op.
func mxInsufficient(op kmsg.ACLOperation, rt kmsg.ACLResourceType) []kmsg.ACLOperation {
	implying := mxImplying(op, rt)
	var ops []kmsg.ACLOperation
	for _, o := range acl.SupportedOperations(rt) {
		if o != op && !slices.Contains(implying, o) {
			ops = append(ops, o)
		}
	}
	return ops
}

func mxResourceName(t *testing.T, r acl.Requirement, topic string) string {
	switch r.ResourceType {
	case kmsg.ACLResourceTypeTopic:
		return topic
	case kmsg.ACLResourceTypeGroup:
		return mxGroup
	case kmsg.ACLResourceTypeTransactionalId:
		return mxTxnID
	case kmsg.ACLResourceTypeCluster:
		return acl.ClusterName
	}
	t.Fatalf("no resource of type %v in the matrix", r.ResourceType)
	return ""
}

// mxDenial returns what a failed check answers.
func mxDenial(t *testing.T, a *mxAPI, ck mxCheck) mxOutcome {
	if ck.denied != mxAllowed {
		return ck.denied
	}
	c := acl.APIRequirements[a.key].Checks[ck.index]
	if len(c.AnyOf) != 1 {
		t.Fatalf("%s: check %d has %d alternatives: its row must say what Kafka answers", a.name(), ck.index, len(c.AnyOf))
	}
	r := c.AnyOf[0]
	switch r.Scope {
	case acl.ScopeEachListedGroup, acl.ScopeEachListedTransactionalID:
		return mxHidden
	}
	switch r.ResourceType {
	case kmsg.ACLResourceTypeTopic:
		return mxDenied(kerr.TopicAuthorizationFailed)
	case kmsg.ACLResourceTypeGroup:
		return mxDenied(kerr.GroupAuthorizationFailed)
	case kmsg.ACLResourceTypeCluster:
		return mxDenied(kerr.ClusterAuthorizationFailed)
	case kmsg.ACLResourceTypeTransactionalId:
		return mxDenied(kerr.TransactionalIDAuthorizationFailed)
	}
	t.Fatalf("%s: no denial known for resource type %v", a.name(), r.ResourceType)
	return mxAllowed
}

func mxOpName(op kmsg.ACLOperation) string { return strings.ToUpper(op.String()) }

func mxReqName(r acl.Requirement) string {
	return mxOpName(r.Operation) + " " + strings.ToUpper(r.ResourceType.String())
}

// mxCells lists the cells of a for a request naming topic.
func mxCells(t *testing.T, a *mxAPI, topic string) []mxCell {
	lit := kmsg.ACLResourcePatternTypeLiteral
	allow, deny := kmsg.ACLPermissionTypeAllow, kmsg.ACLPermissionTypeDeny
	checks := acl.APIRequirements[a.key].Checks
	cells := []mxCell{
		{name: "super user, no ACLs", super: true, want: mxAllowed},
		{name: "no ACLs", want: mxDenial(t, a, a.checks[0])},
	}
	for i, ck := range a.checks {
		// The other checks pass: ALLOW of their first alternative.
		var others []acl.Binding
		for j, o := range a.checks {
			if j != i {
				r := checks[o.index].AnyOf[0]
				others = append(others, mxBinding(r.ResourceType, mxResourceName(t, r, topic), lit, r.Operation, allow))
			}
		}
		with := func(bs ...acl.Binding) []acl.Binding { return append(slices.Clone(others), bs...) }
		denied := mxDenial(t, a, ck)
		prefix := fmt.Sprintf("check %d", ck.index)
		cells = append(cells, mxCell{name: prefix + ": missing", acls: with(), want: denied})
		for _, r := range checks[ck.index].AnyOf {
			rt, name := r.ResourceType, mxResourceName(t, r, topic)
			rn := mxReqName(r)
			for _, p := range mxPatterns(rt, name) {
				ok := mxBinding(rt, p.name, p.pt, r.Operation, allow)
				cells = append(cells, mxCell{name: fmt.Sprintf("%s: ALLOW %s %s", prefix, rn, p.label), acls: with(ok), want: mxAllowed})
				// DENY beats ALLOW, except that by resource type (no
				// topic named) a LITERAL DENY of one topic cancels only
				// a LITERAL ALLOW of that topic.
				want := denied
				if r.Scope == acl.ScopeAnyTopic && !(p.pt == lit && p.name == name) {
					want = mxAllowed
				}
				no := mxBinding(rt, name, lit, r.Operation, deny)
				cells = append(cells, mxCell{name: fmt.Sprintf("%s: ALLOW %s %s, DENY LITERAL", prefix, rn, p.label), acls: with(ok, no), want: want})
			}
			for _, op := range mxImplying(r.Operation, rt) {
				if r.Scope == acl.ScopeAnyTopic && op != kmsg.ACLOperationAll {
					continue // no implications by resource type
				}
				cells = append(cells, mxCell{name: fmt.Sprintf("%s: ALLOW %s %s implies %s", prefix, mxOpName(op), strings.ToUpper(rt.String()), mxOpName(r.Operation)),
					acls: with(mxBinding(rt, name, lit, op, allow)), want: mxAllowed})
			}
			for _, op := range mxInsufficient(r.Operation, rt) {
				cells = append(cells, mxCell{name: fmt.Sprintf("%s: ALLOW %s %s is not %s", prefix, mxOpName(op), strings.ToUpper(rt.String()), mxOpName(r.Operation)),
					acls: with(mxBinding(rt, name, lit, op, allow)), want: denied})
			}
		}
	}
	return cells
}

// run sends a's request as the cell says and returns what came back.
func (e *mxEnv) run(t *testing.T, a *mxAPI, topic string, c mxCell) mxGot {
	t.Helper()
	if a.setup != nil {
		a.setup(e, t, topic)
	}
	acls := slices.CompactFunc(slices.Clone(c.acls), func(x, y acl.Binding) bool { return x == y })
	if len(acls) > 0 {
		grant(t, e.b, acls...)
		defer revoke(t, e.b, acls...)
	}
	cl := e.alice
	if c.super {
		cl = e.admin
	}
	return a.got(direct[kmsg.Response](t, cl, a.build(e, t, topic)), topic)
}

func (e *mxEnv) matrix(t *testing.T) {
	e.checkCoverage(t)
	mismatches := 0
	for i := range mxAPIs {
		a := &mxAPIs[i]
		t.Run(a.name(), func(t *testing.T) {
			topic := mxTopic(a.key)
			n := len(mxCells(t, a, topic))
			for i := range n {
				if a.topic != nil {
					topic = a.topic(e)
				}
				c := mxCells(t, a, topic)[i]
				e.count++
				if got := e.run(t, a, topic, c); !c.want.matches(got) {
					mismatches++
					t.Errorf("mismatch: %s: %s: got %v, want %v (%s)", a.name(), c.name, got, c.want, a.ref)
				}
			}
		})
	}
	t.Logf("X-08: %d cells checked, %d mismatches", e.count, mismatches)
}

// checkCoverage fails unless every served API with authorization checks
// has rows in mxAPIs, and each of its checks is exercised or skipped with
// a reason.
func (e *mxEnv) checkCoverage(t *testing.T) {
	t.Helper()
	served := direct[*kmsg.ApiVersionsResponse](t, e.alice, kmsg.NewPtrApiVersionsRequest())
	for _, k := range served.ApiKeys {
		req, ok := acl.APIRequirements[k.ApiKey]
		if !ok {
			t.Errorf("API key %d is served but acl.APIRequirements has no row for it", k.ApiKey)
			continue
		}
		covered := map[int]bool{}
		for _, a := range mxAPIs {
			if a.key == k.ApiKey {
				for _, ck := range a.checks {
					covered[ck.index] = true
				}
			}
		}
		for i, c := range req.Checks {
			if !covered[i] && !c.DocumentedOnly && mxSkipped[k.ApiKey][i] == "" {
				t.Errorf("%s: check %d (%s) is neither in the matrix nor skipped with a reason", req.Name, i, c.When)
			}
		}
	}
}

// Requests. Each names partition 0 of its topic.

func mxProduce(topic string, txnID *string, batch record.Batch) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis, req.TransactionID = 1, 5000, txnID
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func mxProduceCode(m kmsg.Response, topic string) mxGot {
	for _, rt := range m.(*kmsg.ProduceResponse).Topics {
		if rt.Topic == topic && len(rt.Partitions) == 1 {
			return mxGot{code: rt.Partitions[0].ErrorCode, listed: true}
		}
	}
	return mxGot{code: mxNoEntry, listed: true}
}

func (e *mxEnv) fetch(topic string, replicaID int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.ReplicaState.ID, req.ReplicaState.Epoch = replicaID, replicaID, -1
	req.MaxBytes, req.SessionEpoch, req.MaxWaitMillis = 1<<20, -1, 0
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, e.topicIDs[topic]
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LogStartOffset = 1<<20, -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func mxFetchCode(m kmsg.Response, _ string) mxGot {
	resp := m.(*kmsg.FetchResponse)
	if resp.ErrorCode != 0 {
		return mxGot{code: resp.ErrorCode, listed: true}
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return mxGot{code: mxNoEntry, listed: true}
	}
	return mxGot{code: resp.Topics[0].Partitions[0].ErrorCode, listed: true}
}

func mxOffsetForLeaderEpoch(topic string, replicaID int32) *kmsg.OffsetForLeaderEpochRequest {
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.ReplicaID = replicaID
	rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	rp.CurrentLeaderEpoch, rp.LeaderEpoch = -1, 0
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func mxOffsetForLeaderEpochCode(m kmsg.Response, topic string) mxGot {
	for _, rt := range m.(*kmsg.OffsetForLeaderEpochResponse).Topics {
		if rt.Topic == topic && len(rt.Partitions) == 1 {
			return mxGot{code: rt.Partitions[0].ErrorCode, listed: true}
		}
	}
	return mxGot{code: mxNoEntry, listed: true}
}

func mxMetadata(topics ...string) *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	for _, tp := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(tp)
		req.Topics = append(req.Topics, rt)
	}
	return req
}

func mxMetadataCode(m kmsg.Response, topic string) mxGot {
	for _, rt := range m.(*kmsg.MetadataResponse).Topics {
		if rt.Topic != nil && *rt.Topic == topic {
			return mxGot{code: rt.ErrorCode, listed: true}
		}
	}
	return mxGot{code: mxNoEntry, listed: true}
}

// mxListed reports whether a listing shows name.
func mxListed(found bool) mxGot { return mxGot{listed: found} }

func mxOffsetCommit(topic string) *kmsg.OffsetCommitRequest {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation, req.MemberID = mxGroup, -1, ""
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Offset, rp.LeaderEpoch = 0, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func mxOffsetFetch(topic *string) *kmsg.OffsetFetchRequest {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = mxGroup
	g := kmsg.NewOffsetFetchRequestGroup()
	g.Group = mxGroup
	if topic != nil {
		rt := kmsg.NewOffsetFetchRequestTopic()
		rt.Topic, rt.Partitions = *topic, []int32{0}
		req.Topics = append(req.Topics, rt)
		gt := kmsg.NewOffsetFetchRequestGroupTopic()
		gt.Topic, gt.Partitions = *topic, []int32{0}
		g.Topics = append(g.Topics, gt)
	}
	req.Groups = append(req.Groups, g)
	return req
}

// mxOffsetFetchCode returns the group's error, else the partition's; the
// partition is listed when the response has it.
func mxOffsetFetchCode(m kmsg.Response, topic string) mxGot {
	resp := m.(*kmsg.OffsetFetchResponse)
	if resp.Version < 8 {
		if resp.ErrorCode != 0 {
			return mxGot{code: resp.ErrorCode, listed: true}
		}
		for _, rt := range resp.Topics {
			if rt.Topic == topic && len(rt.Partitions) == 1 {
				return mxGot{code: rt.Partitions[0].ErrorCode, listed: true}
			}
		}
		return mxGot{code: mxNoEntry}
	}
	if len(resp.Groups) != 1 {
		return mxGot{code: mxNoEntry, listed: true}
	}
	g := resp.Groups[0]
	if g.ErrorCode != 0 {
		return mxGot{code: g.ErrorCode, listed: true}
	}
	for _, rt := range g.Topics {
		if rt.Topic == topic && len(rt.Partitions) == 1 {
			return mxGot{code: rt.Partitions[0].ErrorCode, listed: true}
		}
	}
	return mxGot{code: mxNoEntry}
}

func mxFindCoordinator(typ int8, key string) *kmsg.FindCoordinatorRequest {
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorType, req.CoordinatorKey, req.CoordinatorKeys = typ, key, []string{key}
	return req
}

func mxFindCoordinatorCode(m kmsg.Response, _ string) mxGot {
	resp := m.(*kmsg.FindCoordinatorResponse)
	if len(resp.Coordinators) == 1 {
		return mxGot{code: resp.Coordinators[0].ErrorCode, listed: true}
	}
	return mxGot{code: resp.ErrorCode, listed: true}
}

// mxConfigResource returns the resource of DescribeConfigs or
// AlterConfigs cells: a topic or this broker.
func (e *mxEnv) configResource(broker bool, topic string) (kmsg.ConfigResourceType, string) {
	if broker {
		return kmsg.ConfigResourceTypeBroker, strconv.Itoa(int(e.nodeID))
	}
	return kmsg.ConfigResourceTypeTopic, topic
}

// mxPinned caps the version kgo negotiates for a request.
type mxPinned struct {
	kmsg.Request
	max int16
}

func (p mxPinned) MaxVersion() int16 { return min(p.max, p.Request.MaxVersion()) }

func mxCode(c int16) mxGot { return mxGot{code: c, listed: true} }

// mxAPIs is the matrix: one row per request shape, in API key order.
var mxAPIs = []mxAPI{
	{key: 0, variant: "plain", checks: []mxCheck{{index: 2}},
		ref: "KafkaApis.handleProduceRequest",
		build: func(e *mxEnv, t *testing.T, topic string) kmsg.Request {
			return mxProduce(topic, nil, buildBatch(t, record.CodecNone, 1, time.Now().UnixMilli()))
		},
		got: mxProduceCode},
	{key: 0, variant: "transactional id", checks: []mxCheck{{index: 0}, {index: 2}},
		ref: "KafkaApis.handleProduceRequest: the transactional id first, in every partition",
		build: func(e *mxEnv, t *testing.T, topic string) kmsg.Request {
			return mxProduce(topic, kmsg.StringPtr(mxTxnID), buildBatch(t, record.CodecNone, 1, time.Now().UnixMilli()))
		},
		got: mxProduceCode},
	{key: 1, variant: "consumer", checks: []mxCheck{{index: 1}},
		ref:   "KafkaApis.handleFetchRequest",
		build: func(e *mxEnv, t *testing.T, topic string) kmsg.Request { return e.fetch(topic, -1) },
		got:   mxFetchCode},
	{key: 1, variant: "replica id >= 0",
		checks: []mxCheck{{index: 0, denied: mxDenied(kerr.TopicAuthorizationFailed)}},
		ref:    "KafkaApis.handleFetchRequest: a follower without CLUSTER_ACTION gets TOPIC_AUTHORIZATION_FAILED per partition",
		build:  func(e *mxEnv, t *testing.T, topic string) kmsg.Request { return e.fetch(topic, e.nodeID+100) },
		got:    mxFetchCode},
	{key: 2, checks: []mxCheck{{index: 0}},
		ref: "KafkaApis.handleListOffsetRequest",
		build: func(e *mxEnv, t *testing.T, topic string) kmsg.Request {
			req := kmsg.NewPtrListOffsetsRequest()
			req.ReplicaID = -1
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = topic
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Timestamp, rp.CurrentLeaderEpoch = -1, -1
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			return req
		},
		got: func(m kmsg.Response, topic string) mxGot {
			for _, rt := range m.(*kmsg.ListOffsetsResponse).Topics {
				if rt.Topic == topic && len(rt.Partitions) == 1 {
					return mxCode(rt.Partitions[0].ErrorCode)
				}
			}
			return mxCode(mxNoEntry)
		}},
	{key: 3, variant: "named topic", checks: []mxCheck{{index: 0}},
		ref:   "KafkaApis.handleTopicMetadataRequest",
		build: func(e *mxEnv, t *testing.T, topic string) kmsg.Request { return mxMetadata(topic) },
		got:   mxMetadataCode},
	{key: 3, variant: "all topics", checks: []mxCheck{{index: 0, denied: mxHidden}},
		ref:   "KafkaApis.handleTopicMetadataRequest: all topics leave out those the principal may not describe",
		build: func(e *mxEnv, t *testing.T, topic string) kmsg.Request { return kmsg.NewPtrMetadataRequest() },
		got: func(m kmsg.Response, topic string) mxGot {
			g := mxMetadataCode(m, topic)
			if g.code == mxNoEntry {
				return mxListed(false)
			}
			return g
		}},
	{key: 3, variant: "auto-created topic",
		checks: []mxCheck{{index: 0}, {index: 1, denied: mxDenied(kerr.TopicAuthorizationFailed)}},
		ref:    "KafkaApis.handleTopicMetadataRequest: a missing topic without CREATE gets TOPIC_AUTHORIZATION_FAILED",
		topic: func(e *mxEnv) string {
			return fmt.Sprintf("mx-3-new-%d", e.count)
		},
		build: func(e *mxEnv, t *testing.T, topic string) kmsg.Request {
			req := mxMetadata(topic)
			req.AllowAutoTopicCreation = true
			return req
		},
		got: mxMetadataCode},
	{key: 3, variant: "cluster authorized operations (v8-10)", noTopic: true,
		checks: []mxCheck{{index: 2, denied: mxHidden}},
		ref:    "KafkaApis.handleTopicMetadataRequest: without DESCRIBE on the cluster its authorized operations are 0",
		build: func(e *mxEnv, t *testing.T, topic string) kmsg.Request {
			req := mxMetadata()
			req.IncludeClusterAuthorizedOperations = true
			return mxPinned{req, 10}
		},
		got: func(m kmsg.Response, _ string) mxGot {
			ops := m.(*kmsg.MetadataResponse).AuthorizedOperations
			return mxListed(ops != 0 && ops != math.MinInt32)
		}},
	{key: 8, checks: []mxCheck{{index: 0}, {index: 1}},
		ref:   "KafkaApis.handleOffsetCommitRequest: the group's error in every partition",
		build: func(e *mxEnv, t *testing.T, topic string) kmsg.Request { return mxOffsetCommit(topic) },
		got: func(m kmsg.Response, topic string) mxGot {
			for _, rt := range m.(*kmsg.OffsetCommitResponse).Topics {
				if rt.Topic == topic && len(rt.Partitions) == 1 {
					return mxCode(rt.Partitions[0].ErrorCode)
				}
			}
			return mxCode(mxNoEntry)
		}},
	{key: 9, variant: "named topic", checks: []mxCheck{{index: 0}, {index: 1}},
		ref:   "KafkaApis.handleOffsetFetchRequest",
		build: func(e *mxEnv, t *testing.T, topic string) kmsg.Request { return mxOffsetFetch(&topic) },
		got:   mxOffsetFetchCode},
	{key: 9, variant: "all topics", checks: []mxCheck{{index: 0}, {index: 1, denied: mxHidden}},
		ref:   "KafkaApis.handleOffsetFetchRequest: all topics leave out those the principal may not describe",
		setup: func(e *mxEnv, t *testing.T, _ string) { e.ensureGroup(t) },
		build: func(e *mxEnv, t *testing.T, _ string) kmsg.Request { return mxOffsetFetch(nil) },
		got:   mxOffsetFetchCode},
	{key: 10, variant: "group", checks: []mxCheck{{index: 0}}, noTopic: true,
		ref:   "KafkaApis.handleFindCoordinatorRequest",
		build: func(e *mxEnv, t *testing.T, _ string) kmsg.Request { return mxFindCoordinator(0, mxGroup) },
		got:   mxFindCoordinatorCode},
	{key: 10, variant: "transaction", checks: []mxCheck{{index: 1}}, noTopic: true,
		ref:   "KafkaApis.handleFindCoordinatorRequest",
		build: func(e *mxEnv, t *testing.T, _ string) kmsg.Request { return mxFindCoordinator(1, mxTxnID) },
		got:   mxFindCoordinatorCode},
	{key: 11, checks: []mxCheck{{index: 0}}, noTopic: true,
		ref: "KafkaApis.handleJoinGroupRequest",
		build: func(e *mxEnv, t *testing.T, _ string) kmsg.Request {
			req := kmsg.NewPtrJoinGroupRequest()
			req.Group, req.MemberID, req.ProtocolType = mxGroup, "mx-member", "consumer"
			req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 10000, 10000
			p := kmsg.NewJoinGroupRequestProtocol()
			p.Name, p.Metadata = "range", []byte{0, 0}
			req.Protocols = append(req.Protocols, p)
			return req
		},
		got: func(m kmsg.Response, _ string) mxGot { return mxCode(m.(*kmsg.JoinGroupResponse).ErrorCode) }},
	{key: 12, checks: []mxCheck{{index: 0}}, noTopic: true,
		ref: "KafkaApis.handleHeartbeatRequest",
		build: func(e *mxEnv, t *testing.T, _ string) kmsg.Request {
			req := kmsg.NewPtrHeartbeatRequest()
			req.Group, req.MemberID, req.Generation = mxGroup, "mx-member", 1
			return req
		},
		got: func(m kmsg.Response, _ string) mxGot { return mxCode(m.(*kmsg.HeartbeatResponse).ErrorCode) }},
	{key: 13, checks: []mxCheck{{index: 0}}, noTopic: true,
		ref: "KafkaApis.handleLeaveGroupRequest",
		build: func(e *mxEnv, t *testing.T, _ string) kmsg.Request {
			req := kmsg.NewPtrLeaveGroupRequest()
			req.Group, req.MemberID = mxGroup, "mx-member"
			mb := kmsg.NewLeaveGroupRequestMember()
			mb.MemberID = "mx-member"
			req.Members = append(req.Members, mb)
			return req
		},
		got: func(m kmsg.Response, _ string) mxGot { return mxCode(m.(*kmsg.LeaveGroupResponse).ErrorCode) }},
	{key: 14, checks: []mxCheck{{index: 0}}, noTopic: true,
		ref: "KafkaApis.handleSyncGroupRequest",
		build: func(e *mxEnv, t *testing.T, _ string) kmsg.Request {
			req := kmsg.NewPtrSyncGroupRequest()
			req.Group, req.MemberID, req.Generation = mxGroup, "mx-member", 1
			req.ProtocolType, req.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
			return req
		},
		got: func(m kmsg.Response, _ string) mxGot { return mxCode(m.(*kmsg.SyncGroupResponse).ErrorCode) }},
	{key: 15, checks: []mxCheck{{index: 0}}, noTopic: true,
		ref: "KafkaApis.handleDescribeGroupsRequest",
		build: func(e *mxEnv, t *testing.T, _ string) kmsg.Request {
			req := kmsg.NewPtrDescribeGroupsRequest()
			req.Groups = []string{mxGroup}
			return req
		},
		got: func(m kmsg.Response, _ string) mxGot {
			for _, g := range m.(*kmsg.DescribeGroupsResponse).Groups {
				if g.Group == mxGroup {
					return mxCode(g.ErrorCode)
				}
			}
			return mxCode(mxNoEntry)
		}},
	{key: 16, checks: []mxCheck{{index: 0, denied: mxHidden}}, noTopic: true,
		ref:   "KafkaApis.handleListGroupsRequest: without DESCRIBE on the cluster, only the groups the principal may describe",
		setup: func(e *mxEnv, t *testing.T, _ string) { e.ensureGroup(t) },
		build: func(e *mxEnv, t *testing.T, _ string) kmsg.Request { return kmsg.NewPtrListGroupsRequest() },
		got: func(m kmsg.Response, _ string) mxGot {
			resp := m.(*kmsg.ListGroupsResponse)
			if resp.ErrorCode != 0 {
				return mxCode(resp.ErrorCode)
			}
			return mxListed(slices.ContainsFunc(resp.Groups, func(g kmsg.ListGroupsResponseGroup) bool { return g.Group == mxGroup }))
		}},
	{key: 19, variant: "creation", noTopic: true,
		checks: []mxCheck{{index: 0, denied: mxDenied(kerr.TopicAuthorizationFailed)}},
		ref:    "KafkaApis.handleCreateTopicsRequest: CREATE on the cluster, else on the topic, else TOPIC_AUTHORIZATION_FAILED",
		build:  func(e *mxEnv, t *testing.T, topic string) kmsg.Request { return mxCreateTopics(topic) },
		got: func(m kmsg.Response, topic string) mxGot {
			for _, rt := range m.(*kmsg.CreateTopicsResponse).Topics {
				if rt.Topic == topic {
					return mxCode(rt.ErrorCode)
				}
			}
			return mxCode(mxNoEntry)
		}},
	{key: 19, variant: "configs in the response (v5+)", noTopic: true,
		checks: []mxCheck{{index: 0, denied: mxDenied(kerr.TopicAuthorizationFailed)}, {index: 1}},
		ref:    "ReplicationControlManager.createTopic: without DESCRIBE_CONFIGS, TopicConfigErrorCode and no configs, partitions or replication factor",
		build:  func(e *mxEnv, t *testing.T, topic string) kmsg.Request { return mxCreateTopics(topic) },
		got: func(m kmsg.Response, topic string) mxGot {
			for _, rt := range m.(*kmsg.CreateTopicsResponse).Topics {
				if rt.Topic != topic {
					continue
				}
				if rt.ErrorCode != 0 {
					return mxCode(rt.ErrorCode)
				}
				if rt.ConfigErrorCode != 0 && (len(rt.Configs) > 0 || rt.NumPartitions != -1 || rt.ReplicationFactor != -1) {
					return mxCode(0) // the configs leak whatever the code says
				}
				return mxCode(rt.ConfigErrorCode)
			}
			return mxCode(mxNoEntry)
		}},
	{key: 20, checks: []mxCheck{{index: 1}},
		ref:   "KafkaApis.handleDeleteTopicsRequest",
		setup: func(e *mxEnv, t *testing.T, topic string) { e.ensureTopic(t, topic) },
		build: func(e *mxEnv, t *testing.T, topic string) kmsg.Request {
			req := kmsg.NewPtrDeleteTopicsRequest()
			req.TimeoutMillis, req.TopicNames = 5000, []string{topic}
			dt := kmsg.NewDeleteTopicsRequestTopic()
			dt.Topic = kmsg.StringPtr(topic)
			req.Topics = append(req.Topics, dt)
			return req
		},
		got: func(m kmsg.Response, topic string) mxGot {
			for _, rt := range m.(*kmsg.DeleteTopicsResponse).Topics {
				if rt.Topic != nil && *rt.Topic == topic {
					return mxCode(rt.ErrorCode)
				}
			}
			return mxCode(mxNoEntry)
		}},
	{key: 21, checks: []mxCheck{{index: 0}},
		ref: "KafkaApis.handleDeleteRecordsRequest",
		build: func(e *mxEnv, t *testing.T, topic string) kmsg.Request {
			req := kmsg.NewPtrDeleteRecordsRequest()
			req.TimeoutMillis = 5000
			rt := kmsg.NewDeleteRecordsRequestTopic()
			rt.Topic = topic
			rp := kmsg.NewDeleteRecordsRequestTopicPartition()
			rp.Offset = -1
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			return req
		},
		got: func(m kmsg.Response, topic string) mxGot {
			for _, rt := range m.(*kmsg.DeleteRecordsResponse).Topics {
				if rt.Topic == topic && len(rt.Partitions) == 1 {
					return mxCode(rt.Partitions[0].ErrorCode)
				}
			}
			return mxCode(mxNoEntry)
		}},
	{key: 22, variant: "transactional", checks: []mxCheck{{index: 0}}, noTopic: true,
		ref: "KafkaApis.handleInitProducerIdRequest",
		build: func(e *mxEnv, t *testing.T, _ string) kmsg.Request {
			req := kmsg.NewPtrInitProducerIDRequest()
			req.TransactionalID, req.TransactionTimeoutMillis = kmsg.StringPtr(mxTxnID), 60000
			return req
		},
		got: func(m kmsg.Response, _ string) mxGot { return mxCode(m.(*kmsg.InitProducerIDResponse).ErrorCode) }},
	{key: 22, variant: "idempotent", noTopic: true,
		checks: []mxCheck{{index: 1, denied: mxDenied(kerr.ClusterAuthorizationFailed)}},
		ref:    "KafkaApis.handleInitProducerIdRequest (KIP-679): IDEMPOTENT_WRITE on the cluster, else WRITE on any topic, else CLUSTER_AUTHORIZATION_FAILED",
		build:  func(e *mxEnv, t *testing.T, _ string) kmsg.Request { return kmsg.NewPtrInitProducerIDRequest() },
		got:    func(m kmsg.Response, _ string) mxGot { return mxCode(m.(*kmsg.InitProducerIDResponse).ErrorCode) }},
	{key: 23, variant: "consumer",
		checks: []mxCheck{{index: 0, denied: mxDenied(kerr.TopicAuthorizationFailed)}},
		ref:    "KafkaApis.handleOffsetForLeaderEpochRequest: CLUSTER_ACTION, else DESCRIBE on each topic, else TOPIC_AUTHORIZATION_FAILED",
		build:  func(e *mxEnv, t *testing.T, topic string) kmsg.Request { return mxOffsetForLeaderEpoch(topic, -1) },
		got:    mxOffsetForLeaderEpochCode},
	{key: 23, variant: "replica id >= 0",
		checks: []mxCheck{{index: 0, denied: mxDenied(kerr.TopicAuthorizationFailed)}},
		ref:    "KafkaApis.handleOffsetForLeaderEpochRequest: the same checks whatever the replica id",
		build: func(e *mxEnv, t *testing.T, topic string) kmsg.Request {
			return mxOffsetForLeaderEpoch(topic, e.nodeID+100)
		},
		got: mxOffsetForLeaderEpochCode},
	{key: 24, variant: "v4", checks: []mxCheck{{index: 2}},
		ref: "KafkaApis.handleAddPartitionsToTxnRequest: v4+ needs CLUSTER_ACTION",
		build: func(e *mxEnv, t *testing.T, topic string) kmsg.Request {
			req := kmsg.NewPtrAddPartitionsToTxnRequest()
			req.Version = 4
			tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
			tx.TransactionalID, tx.ProducerID, tx.VerifyOnly = mxTxnID, 1, true
			rt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
			rt.Topic, rt.Partitions = topic, []int32{0}
			tx.Topics = append(tx.Topics, rt)
			req.Transactions = append(req.Transactions, tx)
			return req
		},
		got: func(m kmsg.Response, _ string) mxGot { return mxCode(m.(*kmsg.AddPartitionsToTxnResponse).ErrorCode) }},
	{key: 25, checks: []mxCheck{{index: 0}, {index: 1}}, noTopic: true,
		ref: "KafkaApis.handleAddOffsetsToTxnRequest: WRITE on the transactional id, then READ on the group",
		build: func(e *mxEnv, t *testing.T, _ string) kmsg.Request {
			req := kmsg.NewPtrAddOffsetsToTxnRequest()
			req.TransactionalID, req.ProducerID, req.Group = mxTxnID, 1, mxGroup
			return req
		},
		got: func(m kmsg.Response, _ string) mxGot { return mxCode(m.(*kmsg.AddOffsetsToTxnResponse).ErrorCode) }},
	{key: 26, checks: []mxCheck{{index: 0}}, noTopic: true,
		ref: "KafkaApis.handleEndTxnRequest",
		build: func(e *mxEnv, t *testing.T, _ string) kmsg.Request {
			req := kmsg.NewPtrEndTxnRequest()
			req.TransactionalID, req.ProducerID = mxTxnID, 1
			return req
		},
		got: func(m kmsg.Response, _ string) mxGot { return mxCode(m.(*kmsg.EndTxnResponse).ErrorCode) }},
	{key: 28, checks: []mxCheck{{index: 0}, {index: 1}, {index: 2}},
		ref: "KafkaApis.handleTxnOffsetCommitRequest: the transactional id, then the group, in every partition; then each topic",
		build: func(e *mxEnv, t *testing.T, topic string) kmsg.Request {
			req := kmsg.NewPtrTxnOffsetCommitRequest()
			req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = mxTxnID, mxGroup, 1, 0
			rt := kmsg.NewTxnOffsetCommitRequestTopic()
			rt.Topic = topic
			rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
			rp.Offset, rp.LeaderEpoch = 0, -1
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			return req
		},
		got: func(m kmsg.Response, topic string) mxGot {
			for _, rt := range m.(*kmsg.TxnOffsetCommitResponse).Topics {
				if rt.Topic == topic && len(rt.Partitions) == 1 {
					return mxCode(rt.Partitions[0].ErrorCode)
				}
			}
			return mxCode(mxNoEntry)
		}},
	{key: 29, checks: []mxCheck{{index: 0}}, noTopic: true,
		ref: "AclApis.handleDescribeAcls",
		build: func(e *mxEnv, t *testing.T, _ string) kmsg.Request {
			req := kmsg.NewPtrDescribeACLsRequest()
			req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
			req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
			return req
		},
		got: func(m kmsg.Response, _ string) mxGot { return mxCode(m.(*kmsg.DescribeACLsResponse).ErrorCode) }},
	{key: 30, checks: []mxCheck{{index: 0}}, noTopic: true,
		ref: "AclApis.handleCreateAcls: every creation fails",
		build: func(e *mxEnv, t *testing.T, topic string) kmsg.Request {
			req := kmsg.NewPtrCreateACLsRequest()
			c := kmsg.NewCreateACLsRequestCreation()
			c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceTypeTopic, topic, kmsg.ACLResourcePatternTypeLiteral
			c.Principal, c.Host = "User:mx-nobody", "*"
			c.Operation, c.PermissionType = kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow
			req.Creations = append(req.Creations, c)
			return req
		},
		got: func(m kmsg.Response, _ string) mxGot {
			rs := m.(*kmsg.CreateACLsResponse).Results
			if len(rs) != 1 {
				return mxCode(mxNoEntry)
			}
			return mxCode(rs[0].ErrorCode)
		}},
	{key: 31, checks: []mxCheck{{index: 0}}, noTopic: true,
		ref: "AclApis.handleDeleteAcls: every filter fails",
		build: func(e *mxEnv, t *testing.T, topic string) kmsg.Request {
			req := kmsg.NewPtrDeleteACLsRequest()
			f := kmsg.NewDeleteACLsRequestFilter()
			f.ResourceType, f.ResourceName, f.ResourcePatternType = kmsg.ACLResourceTypeTopic, kmsg.StringPtr(mxTopic(30)), kmsg.ACLResourcePatternTypeLiteral
			f.Principal, f.Host = kmsg.StringPtr("User:mx-nobody"), kmsg.StringPtr("*")
			f.Operation, f.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
			req.Filters = append(req.Filters, f)
			return req
		},
		got: func(m kmsg.Response, _ string) mxGot {
			rs := m.(*kmsg.DeleteACLsResponse).Results
			if len(rs) != 1 {
				return mxCode(mxNoEntry)
			}
			return mxCode(rs[0].ErrorCode)
		}},
	{key: 32, variant: "broker", checks: []mxCheck{{index: 0}},
		ref:   "ConfigHelper.handleDescribeConfigsRequest",
		build: func(e *mxEnv, t *testing.T, topic string) kmsg.Request { return e.describeConfigs(true, topic) },
		got:   mxDescribeConfigsCode},
	{key: 32, variant: "topic", checks: []mxCheck{{index: 1}},
		ref:   "ConfigHelper.handleDescribeConfigsRequest",
		build: func(e *mxEnv, t *testing.T, topic string) kmsg.Request { return e.describeConfigs(false, topic) },
		got:   mxDescribeConfigsCode},
	{key: 32, variant: "group", checks: []mxCheck{{index: 2}}, noTopic: true,
		ref: "ConfigHelper.handleDescribeConfigsRequest",
		build: func(e *mxEnv, t *testing.T, _ string) kmsg.Request {
			req := kmsg.NewPtrDescribeConfigsRequest()
			rr := kmsg.NewDescribeConfigsRequestResource()
			rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, mxGroup
			req.Resources = append(req.Resources, rr)
			return req
		},
		got: mxDescribeConfigsCode},
	{key: 33, variant: "broker", checks: []mxCheck{{index: 0}},
		ref:   "KafkaApis.handleAlterConfigsRequest",
		build: func(e *mxEnv, t *testing.T, topic string) kmsg.Request { return e.alterConfigs(true, topic) },
		got:   mxAlterConfigsCode},
	{key: 33, variant: "topic", checks: []mxCheck{{index: 1}},
		ref:   "KafkaApis.handleAlterConfigsRequest",
		build: func(e *mxEnv, t *testing.T, topic string) kmsg.Request { return e.alterConfigs(false, topic) },
		got:   mxAlterConfigsCode},
	{key: 34, checks: []mxCheck{{index: 0}},
		ref: "KafkaApis.handleAlterReplicaLogDirsRequest",
		build: func(e *mxEnv, t *testing.T, topic string) kmsg.Request {
			// A dir that is not a log dir: allowed, it is answered
			// LOG_DIR_NOT_FOUND and nothing moves.
			req := kmsg.NewPtrAlterReplicaLogDirsRequest()
			rd := kmsg.NewAlterReplicaLogDirsRequestDir()
			rd.Dir = "/nonexistent-log-dir"
			rt := kmsg.NewAlterReplicaLogDirsRequestDirTopic()
			rt.Topic, rt.Partitions = topic, []int32{0}
			rd.Topics = append(rd.Topics, rt)
			req.Dirs = append(req.Dirs, rd)
			return req
		},
		got: func(m kmsg.Response, _ string) mxGot {
			r := m.(*kmsg.AlterReplicaLogDirsResponse)
			if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
				return mxGot{}
			}
			return mxCode(r.Topics[0].Partitions[0].ErrorCode)
		}},
	{key: 35, checks: []mxCheck{{index: 0}}, noTopic: true,
		ref:   "KafkaApis.handleDescribeLogDirsRequest",
		build: func(e *mxEnv, t *testing.T, _ string) kmsg.Request { return kmsg.NewPtrDescribeLogDirsRequest() },
		got:   func(m kmsg.Response, _ string) mxGot { return mxCode(m.(*kmsg.DescribeLogDirsResponse).ErrorCode) }},
	{key: 37, checks: []mxCheck{{index: 0}},
		ref: "KafkaApis.handleCreatePartitionsRequest",
		build: func(e *mxEnv, t *testing.T, topic string) kmsg.Request {
			req := kmsg.NewPtrCreatePartitionsRequest()
			req.TimeoutMillis, req.ValidateOnly = 5000, true
			rt := kmsg.NewCreatePartitionsRequestTopic()
			rt.Topic, rt.Count = topic, 2
			req.Topics = append(req.Topics, rt)
			return req
		},
		got: func(m kmsg.Response, topic string) mxGot {
			for _, rt := range m.(*kmsg.CreatePartitionsResponse).Topics {
				if rt.Topic == topic {
					return mxCode(rt.ErrorCode)
				}
			}
			return mxCode(mxNoEntry)
		}},
	{key: 42, checks: []mxCheck{{index: 0}}, noTopic: true,
		ref:   "KafkaApis.handleDeleteGroupsRequest",
		setup: func(e *mxEnv, t *testing.T, _ string) { e.ensureGroup(t) },
		build: func(e *mxEnv, t *testing.T, _ string) kmsg.Request {
			req := kmsg.NewPtrDeleteGroupsRequest()
			req.Groups = []string{mxGroup}
			return req
		},
		got: func(m kmsg.Response, _ string) mxGot {
			for _, g := range m.(*kmsg.DeleteGroupsResponse).Groups {
				if g.Group == mxGroup {
					return mxCode(g.ErrorCode)
				}
			}
			return mxCode(mxNoEntry)
		}},
	{key: 33, variant: "group", checks: []mxCheck{{index: 2}}, noTopic: true,
		ref: "KafkaApis.handleAlterConfigsRequest",
		build: func(e *mxEnv, t *testing.T, _ string) kmsg.Request {
			req := kmsg.NewPtrAlterConfigsRequest()
			req.ValidateOnly = true
			rr := kmsg.NewAlterConfigsRequestResource()
			rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, mxGroup
			c := kmsg.NewAlterConfigsRequestResourceConfig()
			c.Name, c.Value = "share.isolation.level", kmsg.StringPtr("read_committed")
			rr.Configs = append(rr.Configs, c)
			req.Resources = append(req.Resources, rr)
			return req
		},
		got: mxAlterConfigsCode},
	{key: 43, checks: []mxCheck{{index: 0}},
		ref: "KafkaApis.handleElectLeaders",
		build: func(e *mxEnv, t *testing.T, topic string) kmsg.Request {
			req := kmsg.NewPtrElectLeadersRequest()
			req.TimeoutMillis = 5000
			rt := kmsg.NewElectLeadersRequestTopic()
			rt.Topic, rt.Partitions = topic, []int32{0}
			req.Topics = append(req.Topics, rt)
			return req
		},
		got: func(m kmsg.Response, _ string) mxGot { return mxCode(m.(*kmsg.ElectLeadersResponse).ErrorCode) }},
	{key: 44, variant: "broker", checks: []mxCheck{{index: 0}},
		ref:   "KafkaApis.handleIncrementalAlterConfigsRequest",
		build: func(e *mxEnv, t *testing.T, topic string) kmsg.Request { return e.incrementalAlterConfigs(true, topic) },
		got:   mxIncrementalAlterConfigsCode},
	{key: 44, variant: "topic", checks: []mxCheck{{index: 1}},
		ref: "KafkaApis.handleIncrementalAlterConfigsRequest",
		build: func(e *mxEnv, t *testing.T, topic string) kmsg.Request {
			return e.incrementalAlterConfigs(false, topic)
		},
		got: mxIncrementalAlterConfigsCode},
	{key: 44, variant: "group", checks: []mxCheck{{index: 2}}, noTopic: true,
		ref: "KafkaApis.handleIncrementalAlterConfigsRequest",
		build: func(e *mxEnv, t *testing.T, _ string) kmsg.Request {
			req := kmsg.NewPtrIncrementalAlterConfigsRequest()
			req.ValidateOnly = true
			rr := kmsg.NewIncrementalAlterConfigsRequestResource()
			rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, mxGroup
			c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			c.Name, c.Op, c.Value = "share.isolation.level", kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr("read_committed")
			rr.Configs = append(rr.Configs, c)
			req.Resources = append(req.Resources, rr)
			return req
		},
		got: mxIncrementalAlterConfigsCode},
	{key: 45, checks: []mxCheck{{index: 0}},
		ref: "KafkaApis.handleAlterPartitionReassignmentsRequest",
		build: func(e *mxEnv, t *testing.T, topic string) kmsg.Request {
			req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
			req.TimeoutMillis = 5000
			rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
			rt.Topic = topic
			rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
			rp.Replicas = nil // cancel: nothing is in progress
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			return req
		},
		got: func(m kmsg.Response, _ string) mxGot {
			return mxCode(m.(*kmsg.AlterPartitionAssignmentsResponse).ErrorCode)
		}},
	{key: 46, checks: []mxCheck{{index: 0}}, noTopic: true,
		ref: "KafkaApis.handleListPartitionReassignmentsRequest",
		build: func(e *mxEnv, t *testing.T, _ string) kmsg.Request {
			return kmsg.NewPtrListPartitionReassignmentsRequest()
		},
		got: func(m kmsg.Response, _ string) mxGot {
			return mxCode(m.(*kmsg.ListPartitionReassignmentsResponse).ErrorCode)
		}},
	{key: 57, checks: []mxCheck{{index: 0}}, noTopic: true,
		ref: "ControllerApis.handleUpdateFeatures",
		build: func(e *mxEnv, t *testing.T, _ string) kmsg.Request {
			req := kmsg.NewPtrUpdateFeaturesRequest()
			req.ValidateOnly = true
			return req
		},
		got: func(m kmsg.Response, _ string) mxGot {
			return mxCode(m.(*kmsg.UpdateFeaturesResponse).ErrorCode)
		}},
	{key: 74, checks: []mxCheck{{index: 0}}, noTopic: true,
		ref: "KafkaApis.handleListConfigResources",
		build: func(e *mxEnv, t *testing.T, _ string) kmsg.Request {
			return kmsg.NewPtrListConfigResourcesRequest()
		},
		got: func(m kmsg.Response, _ string) mxGot {
			return mxCode(m.(*kmsg.ListConfigResourcesResponse).ErrorCode)
		}},
	{key: 48, checks: []mxCheck{{index: 0}}, noTopic: true,
		ref: "KafkaApis.handleDescribeClientQuotasRequest",
		build: func(e *mxEnv, t *testing.T, _ string) kmsg.Request {
			return kmsg.NewPtrDescribeClientQuotasRequest()
		},
		got: func(m kmsg.Response, _ string) mxGot {
			return mxCode(m.(*kmsg.DescribeClientQuotasResponse).ErrorCode)
		}},
	{key: 49, checks: []mxCheck{{index: 0}}, noTopic: true,
		ref: "KafkaApis.handleAlterClientQuotasRequest",
		build: func(e *mxEnv, t *testing.T, _ string) kmsg.Request {
			req := kmsg.NewPtrAlterClientQuotasRequest()
			req.ValidateOnly = true
			en := kmsg.NewAlterClientQuotasRequestEntry()
			ec := kmsg.NewAlterClientQuotasRequestEntryEntity()
			ec.Type, ec.Name = "user", kmsg.StringPtr("mx-user")
			en.Entity = append(en.Entity, ec)
			op := kmsg.NewAlterClientQuotasRequestEntryOp()
			op.Key, op.Value = "producer_byte_rate", 1024
			en.Ops = append(en.Ops, op)
			req.Entries = append(req.Entries, en)
			return req
		},
		got: func(m kmsg.Response, _ string) mxGot {
			return mxCode(m.(*kmsg.AlterClientQuotasResponse).Entries[0].ErrorCode)
		}},
	{key: 47, checks: []mxCheck{{index: 0}, {index: 1}},
		ref: "KafkaApis.handleOffsetDeleteRequest",
		build: func(e *mxEnv, t *testing.T, topic string) kmsg.Request {
			req := kmsg.NewPtrOffsetDeleteRequest()
			req.Group = mxGroup
			rt := kmsg.NewOffsetDeleteRequestTopic()
			rt.Topic = topic
			rp := kmsg.NewOffsetDeleteRequestTopicPartition()
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			return req
		},
		got: func(m kmsg.Response, topic string) mxGot {
			resp := m.(*kmsg.OffsetDeleteResponse)
			if resp.ErrorCode != 0 {
				return mxCode(resp.ErrorCode)
			}
			for _, rt := range resp.Topics {
				if rt.Topic == topic && len(rt.Partitions) == 1 {
					return mxCode(rt.Partitions[0].ErrorCode)
				}
			}
			return mxCode(mxNoEntry)
		}},
	{key: 50, checks: []mxCheck{{index: 0}}, noTopic: true,
		ref: "KafkaApis.handleDescribeUserScramCredentialsRequest",
		build: func(e *mxEnv, t *testing.T, _ string) kmsg.Request {
			return kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
		},
		got: func(m kmsg.Response, _ string) mxGot {
			return mxCode(m.(*kmsg.DescribeUserSCRAMCredentialsResponse).ErrorCode)
		}},
	{key: 51, checks: []mxCheck{{index: 0}}, noTopic: true,
		ref: "KafkaApis.handleAlterUserScramCredentialsRequest: every user fails",
		build: func(e *mxEnv, t *testing.T, _ string) kmsg.Request {
			req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
			d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
			d.Name, d.Mechanism = "mx-nobody", 1
			req.Deletions = append(req.Deletions, d)
			return req
		},
		got: func(m kmsg.Response, _ string) mxGot {
			rs := m.(*kmsg.AlterUserSCRAMCredentialsResponse).Results
			if len(rs) != 1 {
				return mxCode(mxNoEntry)
			}
			return mxCode(rs[0].ErrorCode)
		}},
	{key: 60, variant: "cluster authorized operations", noTopic: true,
		checks: []mxCheck{{index: 0, denied: mxHidden}},
		ref:    "AuthHelper.computeDescribeClusterResponse: without DESCRIBE on the cluster its authorized operations are 0",
		build: func(e *mxEnv, t *testing.T, _ string) kmsg.Request {
			req := kmsg.NewPtrDescribeClusterRequest()
			req.IncludeClusterAuthorizedOperations, req.EndpointType = true, 1
			return req
		},
		got: func(m kmsg.Response, _ string) mxGot {
			resp := m.(*kmsg.DescribeClusterResponse)
			if resp.ErrorCode != 0 {
				return mxCode(resp.ErrorCode)
			}
			return mxListed(resp.ClusterAuthorizedOperations != 0 && resp.ClusterAuthorizedOperations != math.MinInt32)
		}},
	{key: 61, checks: []mxCheck{{index: 0}},
		ref: "KafkaApis.handleDescribeProducersRequest",
		build: func(e *mxEnv, t *testing.T, topic string) kmsg.Request {
			req := kmsg.NewPtrDescribeProducersRequest()
			rt := kmsg.NewDescribeProducersRequestTopic()
			rt.Topic, rt.Partitions = topic, []int32{0}
			req.Topics = append(req.Topics, rt)
			return req
		},
		got: func(m kmsg.Response, topic string) mxGot {
			for _, rt := range m.(*kmsg.DescribeProducersResponse).Topics {
				if rt.Topic == topic && len(rt.Partitions) == 1 {
					return mxCode(rt.Partitions[0].ErrorCode)
				}
			}
			return mxCode(mxNoEntry)
		}},
	{key: 68, checks: []mxCheck{{index: 0}, {index: 1}},
		ref: "KafkaApis.handleConsumerGroupHeartbeat: READ on the group, then DESCRIBE on each subscribed topic",
		build: func(e *mxEnv, t *testing.T, topic string) kmsg.Request {
			// NB: epoch 1 of an unknown member changes no group: the
			// classic group mx-g answers GROUP_ID_NOT_FOUND once allowed.
			req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
			req.Group, req.MemberID, req.MemberEpoch = mxGroup, "mx-member", 1
			req.RebalanceTimeoutMillis, req.SubscribedTopicNames = -1, []string{topic}
			return req
		},
		got: func(m kmsg.Response, _ string) mxGot {
			return mxCode(m.(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode)
		}},
	{key: 69, checks: []mxCheck{{index: 0}}, noTopic: true,
		ref: "KafkaApis.handleConsumerGroupDescribe",
		build: func(e *mxEnv, t *testing.T, _ string) kmsg.Request {
			req := kmsg.NewPtrConsumerGroupDescribeRequest()
			req.Groups = []string{mxGroup}
			return req
		},
		got: func(m kmsg.Response, _ string) mxGot {
			for _, g := range m.(*kmsg.ConsumerGroupDescribeResponse).Groups {
				if g.Group == mxGroup {
					return mxCode(g.ErrorCode)
				}
			}
			return mxCode(mxNoEntry)
		}},
	{key: 75, checks: []mxCheck{{index: 0}},
		ref: "DescribeTopicPartitionsRequestHandler: a named topic the principal may not describe",
		build: func(e *mxEnv, t *testing.T, topic string) kmsg.Request {
			req := kmsg.NewPtrDescribeTopicPartitionsRequest()
			rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
			rt.Topic = topic
			req.Topics = append(req.Topics, rt)
			return req
		},
		got: func(m kmsg.Response, topic string) mxGot {
			for _, rt := range m.(*kmsg.DescribeTopicPartitionsResponse).Topics {
				if rt.Topic != nil && *rt.Topic == topic {
					return mxCode(rt.ErrorCode)
				}
			}
			return mxCode(mxNoEntry)
		}},
	{key: 65, checks: []mxCheck{{index: 0}}, noTopic: true,
		ref: "KafkaApis.handleDescribeTransactionsRequest",
		build: func(e *mxEnv, t *testing.T, _ string) kmsg.Request {
			req := kmsg.NewPtrDescribeTransactionsRequest()
			req.TransactionalIDs = []string{mxTxnID}
			return req
		},
		got: func(m kmsg.Response, _ string) mxGot {
			for _, st := range m.(*kmsg.DescribeTransactionsResponse).TransactionStates {
				if st.TransactionalID == mxTxnID {
					return mxCode(st.ErrorCode)
				}
			}
			return mxCode(mxNoEntry)
		}},
	{key: 66, checks: []mxCheck{{index: 0, denied: mxHidden}}, noTopic: true,
		ref:   "KafkaApis.handleListTransactionsRequest: only the ids the principal may describe",
		setup: func(e *mxEnv, t *testing.T, _ string) { e.ensureTxnID(t) },
		build: func(e *mxEnv, t *testing.T, _ string) kmsg.Request { return kmsg.NewPtrListTransactionsRequest() },
		got: func(m kmsg.Response, _ string) mxGot {
			resp := m.(*kmsg.ListTransactionsResponse)
			if resp.ErrorCode != 0 {
				return mxCode(resp.ErrorCode)
			}
			return mxListed(slices.ContainsFunc(resp.TransactionStates, func(s kmsg.ListTransactionsResponseTransactionState) bool {
				return s.TransactionalID == mxTxnID
			}))
		}},
}

func mxCreateTopics(topic string) *kmsg.CreateTopicsRequest {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis, req.ValidateOnly = 5000, true
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = topic, 1, 1
	req.Topics = append(req.Topics, ct)
	return req
}

func (e *mxEnv) describeConfigs(broker bool, topic string) *kmsg.DescribeConfigsRequest {
	req := kmsg.NewPtrDescribeConfigsRequest()
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = e.configResource(broker, topic)
	req.Resources = append(req.Resources, rr)
	return req
}

// mxDescribeConfigsCode also reports configs shown with an error as a
// leak (no error).
func mxDescribeConfigsCode(m kmsg.Response, _ string) mxGot {
	rs := m.(*kmsg.DescribeConfigsResponse).Resources
	if len(rs) != 1 {
		return mxCode(mxNoEntry)
	}
	if rs[0].ErrorCode != 0 && len(rs[0].Configs) > 0 {
		return mxCode(0)
	}
	return mxCode(rs[0].ErrorCode)
}

func (e *mxEnv) alterConfigs(broker bool, topic string) *kmsg.AlterConfigsRequest {
	req := kmsg.NewPtrAlterConfigsRequest()
	req.ValidateOnly = true
	rr := kmsg.NewAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = e.configResource(broker, topic)
	if !broker {
		c := kmsg.NewAlterConfigsRequestResourceConfig()
		c.Name, c.Value = "retention.ms", kmsg.StringPtr("86400000")
		rr.Configs = append(rr.Configs, c)
	}
	req.Resources = append(req.Resources, rr)
	return req
}

func mxAlterConfigsCode(m kmsg.Response, _ string) mxGot {
	rs := m.(*kmsg.AlterConfigsResponse).Resources
	if len(rs) != 1 {
		return mxCode(mxNoEntry)
	}
	return mxCode(rs[0].ErrorCode)
}

func (e *mxEnv) incrementalAlterConfigs(broker bool, topic string) *kmsg.IncrementalAlterConfigsRequest {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.ValidateOnly = true
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = e.configResource(broker, topic)
	if !broker {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Op, c.Value = "retention.ms", kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr("86400000")
		rr.Configs = append(rr.Configs, c)
	}
	req.Resources = append(req.Resources, rr)
	return req
}

func mxIncrementalAlterConfigsCode(m kmsg.Response, _ string) mxGot {
	rs := m.(*kmsg.IncrementalAlterConfigsResponse).Resources
	if len(rs) != 1 {
		return mxCode(mxNoEntry)
	}
	return mxCode(rs[0].ErrorCode)
}

// mxSecret is the value of a sensitive config the matrix broker starts
// with; no response may carry it.
const mxSecret = "mx-secret-key-password"

// replicaOnlyAPIs: a client posing as a replica (replica id >= 0) needs
// CLUSTER_ACTION to fetch, even with READ on the topic; OffsetForLeaderEpoch
// needs CLUSTER_ACTION or DESCRIBE on the topic whatever the replica id
// (TESTPLAN X-09, CVE-2018-1288).
// Reference: KafkaApis.handleFetchRequest, handleOffsetForLeaderEpochRequest.
func (e *mxEnv) replicaOnlyAPIs(t *testing.T) {
	topic := mxTopic(1)
	read := allow(mxUser, kmsg.ACLResourceTypeTopic, topic, kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationRead)
	grant(t, e.b, read)
	defer revoke(t, e.b, read)
	replica := e.nodeID + 100
	if got := mxFetchCode(direct[*kmsg.FetchResponse](t, e.alice, e.fetch(topic, replica)), topic); got.code != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("Fetch as replica %d with READ but no CLUSTER_ACTION: %v, want TOPIC_AUTHORIZATION_FAILED", replica, got)
	}
	if got := mxFetchCode(direct[*kmsg.FetchResponse](t, e.alice, e.fetch(topic, -1)), topic); got.code != 0 {
		t.Errorf("Fetch as a consumer with READ: %v", got)
	}
	other := mxTopic(23)
	if got := mxOffsetForLeaderEpochCode(direct[*kmsg.OffsetForLeaderEpochResponse](t, e.alice, mxOffsetForLeaderEpoch(other, replica)), other); got.code != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("OffsetForLeaderEpoch as replica %d without CLUSTER_ACTION or DESCRIBE: %v, want TOPIC_AUTHORIZATION_FAILED", replica, got)
	}
	ca := allow(mxUser, kmsg.ACLResourceTypeCluster, acl.ClusterName, kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationClusterAction)
	grant(t, e.b, ca)
	defer revoke(t, e.b, ca)
	if got := mxOffsetForLeaderEpochCode(direct[*kmsg.OffsetForLeaderEpochResponse](t, e.alice, mxOffsetForLeaderEpoch(other, replica)), other); slices.Contains(mxAuthCodes, got.code) {
		t.Errorf("OffsetForLeaderEpoch as replica %d with CLUSTER_ACTION: %v", replica, got)
	}
}

// producerIdentity: an idempotent producer needs IDEMPOTENT_WRITE on the
// cluster or WRITE on some topic (KIP-679); a transactional one WRITE on
// its transactional id, both at InitProducerId and at Produce (TESTPLAN
// X-10, CVE-2018-17196).
// Reference: KafkaApis.handleInitProducerIdRequest, handleProduceRequest.
func (e *mxEnv) producerIdentity(t *testing.T) {
	initPID := func(txnID *string) int16 {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID, req.TransactionTimeoutMillis = txnID, 60000
		return direct[*kmsg.InitProducerIDResponse](t, e.alice, req).ErrorCode
	}
	if c := initPID(nil); c != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("idempotent InitProducerId without WRITE on any topic or IDEMPOTENT_WRITE: %v, want CLUSTER_AUTHORIZATION_FAILED", kerr.ErrorForCode(c))
	}
	// READ and DESCRIBE everywhere do not make a producer.
	read := allow(mxUser, kmsg.ACLResourceTypeTopic, acl.WildcardResource, kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationRead)
	grant(t, e.b, read)
	if c := initPID(nil); c != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("idempotent InitProducerId with READ on every topic: %v, want CLUSTER_AUTHORIZATION_FAILED", kerr.ErrorForCode(c))
	}
	revoke(t, e.b, read)
	iw := allow(mxUser, kmsg.ACLResourceTypeCluster, acl.ClusterName, kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationIdempotentWrite)
	grant(t, e.b, iw)
	if c := initPID(nil); c != 0 {
		t.Errorf("idempotent InitProducerId with IDEMPOTENT_WRITE: %v", kerr.ErrorForCode(c))
	}
	// IDEMPOTENT_WRITE is no transactional id.
	if c := initPID(kmsg.StringPtr(mxTxnID)); c != kerr.TransactionalIDAuthorizationFailed.Code {
		t.Errorf("transactional InitProducerId without WRITE on the transactional id: %v, want TRANSACTIONAL_ID_AUTHORIZATION_FAILED", kerr.ErrorForCode(c))
	}
	revoke(t, e.b, iw)

	// A produce naming a transactional id the principal may not WRITE
	// fails every partition, even with WRITE on the topic.
	topic := mxTopic(0)
	write := allow(mxUser, kmsg.ACLResourceTypeTopic, topic, kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationWrite)
	describeTxn := allow(mxUser, kmsg.ACLResourceTypeTransactionalId, mxTxnID, kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationDescribe)
	grant(t, e.b, write, describeTxn)
	defer revoke(t, e.b, write, describeTxn)
	produce := func(txnID *string) int16 {
		return mxProduceCode(direct[*kmsg.ProduceResponse](t, e.alice, mxProduce(topic, txnID, buildBatch(t, record.CodecNone, 1, time.Now().UnixMilli()))), topic).code
	}
	if c := produce(kmsg.StringPtr(mxTxnID)); c != kerr.TransactionalIDAuthorizationFailed.Code {
		t.Errorf("produce with a transactional id without WRITE on it: %v, want TRANSACTIONAL_ID_AUTHORIZATION_FAILED", kerr.ErrorForCode(c))
	}
	if c := produce(nil); c != 0 {
		t.Errorf("produce without a transactional id, with WRITE on the topic: %v", kerr.ErrorForCode(c))
	}
}

// listingsShowOnlyDescribable: Metadata of all topics, ListGroups and
// DescribeConfigs show a principal only what it may describe, and
// DescribeConfigs never shows a sensitive value, even to a super user
// (TESTPLAN X-11).
// Reference: KafkaApis.handleTopicMetadataRequest, handleListGroupsRequest;
// ConfigHelper (sensitive values are null with IsSensitive set).
func (e *mxEnv) listingsShowOnlyDescribable(t *testing.T) {
	lit := kmsg.ACLResourcePatternTypeLiteral
	shown, hidden := mxTopic(2), mxTopic(21)

	// No ACLs: nothing is listed.
	md := direct[*kmsg.MetadataResponse](t, e.alice, kmsg.NewPtrMetadataRequest())
	if len(md.Topics) != 0 {
		t.Errorf("Metadata of all topics without ACLs lists %d topics", len(md.Topics))
	}
	if gs := direct[*kmsg.ListGroupsResponse](t, e.alice, kmsg.NewPtrListGroupsRequest()).Groups; len(gs) != 0 {
		t.Errorf("ListGroups without ACLs lists %v", gs)
	}

	acls := []acl.Binding{
		allow(mxUser, kmsg.ACLResourceTypeTopic, shown, lit, kmsg.ACLOperationDescribe),
		allow(mxUser, kmsg.ACLResourceTypeTopic, shown, lit, kmsg.ACLOperationDescribeConfigs),
		allow(mxUser, kmsg.ACLResourceTypeGroup, mxGroup, lit, kmsg.ACLOperationDescribe),
	}
	e.ensureGroup(t)
	grant(t, e.b, acls...)
	defer revoke(t, e.b, acls...)
	md = direct[*kmsg.MetadataResponse](t, e.alice, kmsg.NewPtrMetadataRequest())
	if len(md.Topics) != 1 || *md.Topics[0].Topic != shown {
		var names []string
		for _, tp := range md.Topics {
			names = append(names, *tp.Topic)
		}
		t.Errorf("Metadata of all topics lists %v, want only %s", names, shown)
	}
	gs := direct[*kmsg.ListGroupsResponse](t, e.alice, kmsg.NewPtrListGroupsRequest()).Groups
	if len(gs) != 1 || gs[0].Group != mxGroup {
		t.Errorf("ListGroups lists %v, want only %s", gs, mxGroup)
	}

	req := kmsg.NewPtrDescribeConfigsRequest()
	for _, r := range []struct {
		rt   kmsg.ConfigResourceType
		name string
	}{{kmsg.ConfigResourceTypeTopic, shown}, {kmsg.ConfigResourceTypeTopic, hidden}, {kmsg.ConfigResourceTypeBroker, strconv.Itoa(int(e.nodeID))}} {
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = r.rt, r.name
		req.Resources = append(req.Resources, rr)
	}
	req.IncludeSynonyms = true
	want := map[string]int16{shown: 0, hidden: kerr.TopicAuthorizationFailed.Code, strconv.Itoa(int(e.nodeID)): kerr.ClusterAuthorizationFailed.Code}
	for _, r := range direct[*kmsg.DescribeConfigsResponse](t, e.alice, req).Resources {
		if r.ErrorCode != want[r.ResourceName] {
			t.Errorf("DescribeConfigs of %s: %v, want %v", r.ResourceName, kerr.ErrorForCode(r.ErrorCode), kerr.ErrorForCode(want[r.ResourceName]))
		}
		if r.ErrorCode != 0 && len(r.Configs) > 0 {
			t.Errorf("DescribeConfigs of %s shows %d configs with %v", r.ResourceName, len(r.Configs), kerr.ErrorForCode(r.ErrorCode))
		}
		if r.ErrorCode == 0 && len(r.Configs) == 0 {
			t.Errorf("DescribeConfigs of %s shows no configs", r.ResourceName)
		}
	}

	// Sensitive values: null and marked, synonyms too, for the super user.
	req = e.describeConfigs(true, "")
	req.IncludeSynonyms = true
	resp := direct[*kmsg.DescribeConfigsResponse](t, e.admin, req)
	if len(resp.Resources) != 1 || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("super user DescribeConfigs of the broker: %+v", resp.Resources)
	}
	found := false
	for _, c := range resp.Resources[0].Configs {
		if c.Name == "ssl.key.password" {
			found = true
			if c.Value != nil || !c.IsSensitive {
				t.Errorf("ssl.key.password: value %v, sensitive %v; want null and sensitive", c.Value, c.IsSensitive)
			}
			if c.Source != 4 { // STATIC_BROKER_CONFIG: it is set, only hidden
				t.Errorf("ssl.key.password: source %d, want STATIC_BROKER_CONFIG (4)", c.Source)
			}
		}
	}
	if !found {
		t.Error("DescribeConfigs of the broker does not list ssl.key.password")
	}
	for _, c := range resp.Resources[0].Configs {
		values := []*string{c.Value}
		for _, syn := range c.ConfigSynonyms {
			values = append(values, syn.Value)
		}
		for _, v := range values {
			if v != nil && (strings.Contains(*v, mxSecret) || strings.Contains(*v, `user_alice="a"`)) {
				t.Errorf("DescribeConfigs of the broker shows a secret in %s", c.Name)
			}
		}
	}
}
