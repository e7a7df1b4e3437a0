package broker_test

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"samsa/internal/acl"
	"samsa/internal/testutil"
)

var txnAuthCodes = []int16{kerr.TopicAuthorizationFailed.Code, kerr.ClusterAuthorizationFailed.Code, kerr.TransactionalIDAuthorizationFailed.Code}

// addPartitionsV3Client returns a client that sends AddPartitionsToTxn at
// v3, the client form.
func addPartitionsV3Client(t *testing.T, b *testutil.Broker, user string) *kgo.Client {
	t.Helper()
	vs := kversion.Stable()
	vs.SetMaxKeyVersion(24, 3)
	return userClient(t, b, user, "a", kgo.MaxVersions(vs))
}

func addPartitionsV3Direct(t *testing.T, cl *kgo.Client, id string, pid int64, epoch int16, topic string) int16 {
	t.Helper()
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch = id, pid, epoch
	rt := kmsg.NewAddPartitionsToTxnRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{0}
	req.Topics = append(req.Topics, rt)
	resp := direct[*kmsg.AddPartitionsToTxnResponse](t, cl, req)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("AddPartitionsToTxn v3: malformed response %+v", resp)
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}

// TestAddPartitionsToTxnV3Authorization: v0-3 need WRITE on the
// transactional id (checked first), then WRITE on each topic.
// Reference: KafkaApis.handleAddPartitionsToTxnRequest.
func TestAddPartitionsToTxnV3Authorization(t *testing.T) {
	t.Parallel()
	b := aclBroker(t)
	admin := userClient(t, b, "admin", "a")
	testutil.CreateTopic(t, kadm.NewClient(admin), "apt", 1)
	alice := addPartitionsV3Client(t, b, "alice")
	code := func() int16 { return addPartitionsV3Direct(t, alice, "apt-t", 1, 0, "apt") }
	if c := code(); c != kerr.TransactionalIDAuthorizationFailed.Code {
		t.Errorf("without WRITE on the transactional id: %v", kerr.ErrorForCode(c))
	}
	grant(t, b, allow("User:alice", kmsg.ACLResourceTypeTransactionalId, "apt-t", kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationWrite))
	if c := code(); c != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("without WRITE on the topic: %v", kerr.ErrorForCode(c))
	}
	grant(t, b, allow("User:alice", kmsg.ACLResourceTypeTopic, "apt", kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationWrite))
	if c := code(); slices.Contains(txnAuthCodes, c) {
		t.Errorf("with both: %v", kerr.ErrorForCode(c))
	}
}

// TestWriteTxnMarkersAuthorization: ALTER or CLUSTER_ACTION on the cluster.
// Reference: KafkaApis.handleWriteTxnMarkersRequest.
func TestWriteTxnMarkersAuthorization(t *testing.T) {
	t.Parallel()
	b := aclBroker(t)
	admin := userClient(t, b, "admin", "a")
	testutil.CreateTopic(t, kadm.NewClient(admin), "wtm", 1)
	alice := userClient(t, b, "alice", "a")
	code := func() int16 {
		req := kmsg.NewPtrWriteTxnMarkersRequest()
		mk := kmsg.NewWriteTxnMarkersRequestMarker()
		mk.ProducerID, mk.ProducerEpoch = 1, 0
		rt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
		rt.Topic, rt.Partitions = "wtm", []int32{0}
		mk.Topics = append(mk.Topics, rt)
		req.Markers = append(req.Markers, mk)
		resp := direct[*kmsg.WriteTxnMarkersResponse](t, alice, req)
		return resp.Markers[0].Topics[0].Partitions[0].ErrorCode
	}
	if c := code(); c != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("without ALTER or CLUSTER_ACTION: %v", kerr.ErrorForCode(c))
	}
	for _, op := range []kmsg.ACLOperation{kmsg.ACLOperationAlter, kmsg.ACLOperationClusterAction} {
		bd := allow("User:alice", kmsg.ACLResourceTypeCluster, acl.ClusterName, kmsg.ACLResourcePatternTypeLiteral, op)
		grant(t, b, bd)
		if c := code(); c != 0 {
			t.Errorf("with %v on the cluster: %v", op, kerr.ErrorForCode(c))
		}
		revoke(t, b, bd)
	}
}

// TestDescribeTransactionsLeavesOutUndescribableTopics: the partitions of
// a described transaction leave out topics the principal may not
// DESCRIBE. Reference: KafkaApis.handleDescribeTransactionsRequest.
func TestDescribeTransactionsLeavesOutUndescribableTopics(t *testing.T) {
	t.Parallel()
	b := aclBroker(t)
	admin := addPartitionsV3Client(t, b, "admin")
	testutil.CreateTopic(t, kadm.NewClient(admin), "dtt", 1)
	pid, epoch := initTxnID(t, admin, "dtt-t", 60000)
	if c := addPartitionsV3Direct(t, admin, "dtt-t", pid, epoch, "dtt"); c != 0 {
		t.Fatalf("add: %v", kerr.ErrorForCode(c))
	}
	alice := userClient(t, b, "alice", "a")
	grant(t, b, allow("User:alice", kmsg.ACLResourceTypeTransactionalId, "dtt-t", kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationDescribe))
	topics := func() []kmsg.DescribeTransactionsResponseTransactionStateTopic {
		req := kmsg.NewPtrDescribeTransactionsRequest()
		req.TransactionalIDs = []string{"dtt-t"}
		st := direct[*kmsg.DescribeTransactionsResponse](t, alice, req).TransactionStates[0]
		if st.ErrorCode != 0 || st.State != "Ongoing" {
			t.Fatalf("describe: %v %s", kerr.ErrorForCode(st.ErrorCode), st.State)
		}
		return st.Topics
	}
	if ts := topics(); len(ts) != 0 {
		t.Errorf("without DESCRIBE on the topic: %+v", ts)
	}
	grant(t, b, allow("User:alice", kmsg.ACLResourceTypeTopic, "dtt", kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationDescribe))
	if ts := topics(); len(ts) != 1 || ts[0].Topic != "dtt" {
		t.Errorf("with DESCRIBE on the topic: %+v", ts)
	}
}
