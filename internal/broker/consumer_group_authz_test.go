package broker_test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/acl"
	"samsa/internal/testutil"
)

// TestConsumerGroupDescribeTopicAuthorization: ConsumerGroupDescribe
// needs DESCRIBE on the group, and answers TOPIC_AUTHORIZATION_FAILED for
// a group whose member subscribes to, or is assigned, a topic the
// principal may not describe; ConsumerGroupHeartbeat needs READ on the
// group and DESCRIBE on every subscribed topic name.
func TestConsumerGroupDescribeTopicAuthorization(t *testing.T) {
	b := aclBroker(t)
	admin := userClient(t, b, "admin", "a")
	alice := userClient(t, b, "alice", "a")
	adm := kadm.NewClient(admin)
	testutil.CreateTopic(t, adm, "cga-pub", 1)
	testutil.CreateTopic(t, adm, "cga-secret", 1)
	const group = "cga-g"
	testutil.Eventually(t, 20*time.Second, func() error {
		// FindCoordinator creates __consumer_offsets.
		fc := kmsg.NewPtrFindCoordinatorRequest()
		fc.CoordinatorKey, fc.CoordinatorKeys = group, []string{group}
		direct[*kmsg.FindCoordinatorResponse](t, admin, fc)
		resp := direct[*kmsg.ConsumerGroupHeartbeatResponse](t, admin, consumerJoin(group, "m1", "cga-pub", "cga-secret"))
		return kerr.ErrorForCode(resp.ErrorCode)
	})
	describe := func() int16 {
		req := kmsg.NewPtrConsumerGroupDescribeRequest()
		req.Groups = []string{group}
		resp := direct[*kmsg.ConsumerGroupDescribeResponse](t, alice, req)
		if len(resp.Groups) != 1 {
			t.Fatalf("%d groups described", len(resp.Groups))
		}
		g := resp.Groups[0]
		if g.ErrorCode != 0 && len(g.Members) != 0 {
			t.Fatalf("denied group described with members: %+v", g)
		}
		return g.ErrorCode
	}
	allow := func(rt kmsg.ACLResourceType, name string, op kmsg.ACLOperation) acl.Binding {
		return mxBinding(rt, name, kmsg.ACLResourcePatternTypeLiteral, op, kmsg.ACLPermissionTypeAllow)
	}
	if c := describe(); c != kerr.GroupAuthorizationFailed.Code {
		t.Errorf("no ACLs: %v", kerr.ErrorForCode(c))
	}
	grant(t, b, allow(kmsg.ACLResourceTypeGroup, group, kmsg.ACLOperationDescribe), allow(kmsg.ACLResourceTypeTopic, "cga-pub", kmsg.ACLOperationDescribe))
	if c := describe(); c != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("group and one of the two topics: %v, want TOPIC_AUTHORIZATION_FAILED", kerr.ErrorForCode(c))
	}
	grant(t, b, allow(kmsg.ACLResourceTypeTopic, "cga-secret", kmsg.ACLOperationDescribe))
	if c := describe(); c != 0 {
		t.Errorf("group and both topics: %v", kerr.ErrorForCode(c))
	}

	// A heartbeat subscribing to a topic alice may not describe.
	grant(t, b, allow(kmsg.ACLResourceTypeGroup, group, kmsg.ACLOperationRead))
	revoke(t, b, allow(kmsg.ACLResourceTypeTopic, "cga-secret", kmsg.ACLOperationDescribe))
	hb := direct[*kmsg.ConsumerGroupHeartbeatResponse](t, alice, consumerJoin(group, "m2", "cga-pub", "cga-secret"))
	if hb.ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("heartbeat subscribing to an undescribable topic: %v", kerr.ErrorForCode(hb.ErrorCode))
	}
	hb = direct[*kmsg.ConsumerGroupHeartbeatResponse](t, alice, consumerJoin(group, "m2", "cga-pub"))
	if hb.ErrorCode != 0 {
		t.Errorf("heartbeat subscribing to a describable topic: %v", kerr.ErrorForCode(hb.ErrorCode))
	}
}
