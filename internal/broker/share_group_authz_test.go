package broker_test

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/testutil"
)

// TestShareGroupAuthorization: share groups need READ on the group
// (DESCRIBE to describe it), DESCRIBE on subscribed topics, and READ on
// the topics fetched or acknowledged, as Kafka checks them.
// Reference: KafkaApis.handleShareGroupHeartbeat, handleShareFetchRequest,
// handleShareAcknowledgeRequest, handleShareGroupDescribe.
func TestShareGroupAuthorization(t *testing.T) {
	t.Parallel()
	b := aclBroker(t)
	admin := userClient(t, b, "admin", "a")
	testutil.CreateTopic(t, kadm.NewClient(admin), "sa-t", 1)
	alice := userClient(t, b, "alice", "a")
	// Create __consumer_offsets: the requests below go straight to the
	// broker, without FindCoordinator.
	testutil.Eventually(t, 10e9, func() error {
		return kadm.NewClient(admin).FindGroupCoordinators(context.Background(), "sa-g").Error()
	})
	const group = "sa-g"
	hb := func() int16 {
		req := kmsg.NewPtrShareGroupHeartbeatRequest()
		req.GroupID, req.MemberID, req.SubscribedTopicNames = group, "m", []string{"sa-t"}
		return direct[*kmsg.ShareGroupHeartbeatResponse](t, alice, req).ErrorCode
	}
	describe := func() int16 {
		req := kmsg.NewPtrShareGroupDescribeRequest()
		req.GroupIDs = []string{group}
		return direct[*kmsg.ShareGroupDescribeResponse](t, alice, req).Groups[0].ErrorCode
	}
	g, m := group, "m"
	fetch := func() (int16, int16) {
		req := kmsg.NewPtrShareFetchRequest()
		req.GroupID, req.MemberID, req.MaxBytes, req.MaxRecords = &g, &m, 1<<20, 10
		rt := kmsg.NewShareFetchRequestTopic()
		rt.TopicID = shareTopicID(t, admin, "sa-t")
		rp := kmsg.NewShareFetchRequestTopicPartition()
		rp.PartitionMaxBytes = 1 << 20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := direct[*kmsg.ShareFetchResponse](t, alice, req)
		part := int16(-1)
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				part = p.ErrorCode
			}
		}
		return resp.ErrorCode, part
	}
	want := func(what string, got int16, w *kerr.Error) {
		t.Helper()
		if (w == nil && got != 0) || (w != nil && got != w.Code) {
			t.Errorf("%s: %v, want %v", what, kerr.ErrorForCode(got), w)
		}
	}
	// The share coordinator's RPCs are inter-broker: CLUSTER_ACTION.
	rs := kmsg.NewPtrReadShareGroupStateRequest()
	rs.GroupID = group
	rst := kmsg.NewReadShareGroupStateRequestTopic()
	rst.Partitions = append(rst.Partitions, kmsg.NewReadShareGroupStateRequestTopicPartition())
	rs.Topics = append(rs.Topics, rst)
	want("ReadShareGroupState without CLUSTER_ACTION", direct[*kmsg.ReadShareGroupStateResponse](t, alice, rs).Topics[0].Partitions[0].ErrorCode, kerr.ClusterAuthorizationFailed)
	ws := kmsg.NewPtrWriteShareGroupStateRequest()
	ws.GroupID = group
	wst := kmsg.NewWriteShareGroupStateRequestTopic()
	wst.Partitions = append(wst.Partitions, kmsg.NewWriteShareGroupStateRequestTopicPartition())
	ws.Topics = append(ws.Topics, wst)
	want("WriteShareGroupState without CLUSTER_ACTION", direct[*kmsg.WriteShareGroupStateResponse](t, alice, ws).Topics[0].Partitions[0].ErrorCode, kerr.ClusterAuthorizationFailed)

	want("heartbeat without READ on the group", hb(), kerr.GroupAuthorizationFailed)
	want("describe without DESCRIBE on the group", describe(), kerr.GroupAuthorizationFailed)
	oreq := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	og := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
	og.GroupID = group
	oreq.Groups = append(oreq.Groups, og)
	want("describe offsets without DESCRIBE on the group", direct[*kmsg.DescribeShareGroupOffsetsResponse](t, alice, oreq).Groups[0].ErrorCode, kerr.GroupAuthorizationFailed)
	top, _ := fetch()
	want("fetch without READ on the group", top, kerr.GroupAuthorizationFailed)
	grant(t, b, allow(mxUser, kmsg.ACLResourceTypeGroup, group, kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationRead))
	testutil.Eventually(t, 10e9, func() error {
		if c := hb(); c != kerr.TopicAuthorizationFailed.Code {
			return testutil.Errorf("ACL not applied yet: %v", kerr.ErrorForCode(c))
		}
		return nil
	})
	want("heartbeat without DESCRIBE on the topic", hb(), kerr.TopicAuthorizationFailed)
	want("describe with READ on the group", describe(), kerr.GroupIDNotFound)
	top, part := fetch()
	want("fetch with READ on the group", top, nil)
	want("fetch without READ on the topic", part, kerr.TopicAuthorizationFailed)
	grant(t, b, allow(mxUser, kmsg.ACLResourceTypeTopic, "sa-t", kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationRead))
	testutil.Eventually(t, 10e9, func() error {
		if c := hb(); c != 0 {
			return testutil.Errorf("heartbeat: %v", kerr.ErrorForCode(c))
		}
		return nil
	})
}

// TestShareGroupOffsetsAuthorization: AlterShareGroupOffsets needs READ
// on the group and on each topic (it is the share group's OffsetCommit),
// DeleteShareGroupOffsets DELETE on the group and READ on each topic, as
// Kafka checks them; a denied topic is TOPIC_AUTHORIZATION_FAILED and
// keeps its state. Reference: KafkaApis.handleAlterShareGroupOffsetsRequest,
// handleDeleteShareGroupOffsetsRequest.
func TestShareGroupOffsetsAuthorization(t *testing.T) {
	t.Parallel()
	b := aclBroker(t)
	admin := userClient(t, b, "admin", "a")
	testutil.CreateTopic(t, kadm.NewClient(admin), "sao-t", 1)
	alice := userClient(t, b, "alice", "a")
	testutil.Eventually(t, 10e9, func() error {
		return kadm.NewClient(admin).FindGroupCoordinators(context.Background(), "sao-g").Error()
	})
	const group, topic = "sao-g", "sao-t"
	alter := func() (int16, int16) {
		req := kmsg.NewPtrAlterShareGroupOffsetsRequest()
		req.GroupID = group
		rt := kmsg.NewAlterShareGroupOffsetsRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewAlterShareGroupOffsetsRequestTopicPartition()
		rp.StartOffset = 0
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := direct[*kmsg.AlterShareGroupOffsetsResponse](t, alice, req)
		part := int16(-1)
		if len(resp.Topics) == 1 && len(resp.Topics[0].Partitions) == 1 {
			part = resp.Topics[0].Partitions[0].ErrorCode
		}
		return resp.ErrorCode, part
	}
	del := func() (int16, int16) {
		req := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
		req.GroupID = group
		rt := kmsg.NewDeleteShareGroupOffsetsRequestTopic()
		rt.Topic = topic
		req.Topics = append(req.Topics, rt)
		resp := direct[*kmsg.DeleteShareGroupOffsetsResponse](t, alice, req)
		part := int16(-1)
		if len(resp.Topics) == 1 {
			part = resp.Topics[0].ErrorCode
		}
		return resp.ErrorCode, part
	}
	want := func(what string, got int16, w *kerr.Error) {
		t.Helper()
		if (w == nil && got != 0) || (w != nil && got != w.Code) {
			t.Errorf("%s: %v, want %v", what, kerr.ErrorForCode(got), w)
		}
	}
	top, _ := alter()
	want("alter without READ on the group", top, kerr.GroupAuthorizationFailed)
	top, _ = del()
	want("delete without DELETE on the group", top, kerr.GroupAuthorizationFailed)
	grant(t, b, allow(mxUser, kmsg.ACLResourceTypeGroup, group, kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationRead))
	testutil.Eventually(t, 10e9, func() error {
		if c, _ := alter(); c != 0 {
			return testutil.Errorf("ACL not applied yet: %v", kerr.ErrorForCode(c))
		}
		return nil
	})
	top, part := alter()
	want("alter with READ on the group", top, nil)
	want("alter without READ on the topic", part, kerr.TopicAuthorizationFailed)
	top, _ = del()
	want("delete with READ (not DELETE) on the group", top, kerr.GroupAuthorizationFailed)
	grant(t, b, allow(mxUser, kmsg.ACLResourceTypeGroup, group, kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationDelete))
	testutil.Eventually(t, 10e9, func() error {
		if c, _ := del(); c != 0 {
			return testutil.Errorf("ACL not applied yet: %v", kerr.ErrorForCode(c))
		}
		return nil
	})
	_, part = del()
	want("delete without READ on the topic", part, kerr.TopicAuthorizationFailed)
	grant(t, b, allow(mxUser, kmsg.ACLResourceTypeTopic, topic, kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationRead))
	testutil.Eventually(t, 10e9, func() error {
		if _, p := alter(); p != 0 {
			return testutil.Errorf("alter of the topic: %v", kerr.ErrorForCode(p))
		}
		return nil
	})
	top, part = del()
	want("delete with READ on the topic", top, nil)
	want("delete of the altered topic", part, nil)
}
