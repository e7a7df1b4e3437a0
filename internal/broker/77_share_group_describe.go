package broker

// ShareGroupDescribe: v1 (KIP-932)
//
// * v1: the first version Kafka 4.1 serves.
//
// DESCRIBE on each group (else GROUP_AUTHORIZATION_FAILED for it). A group
// id that is not a share group served here is GROUP_ID_NOT_FOUND (or
// NOT_COORDINATOR). The assignor is "simple"; the assignment epoch is the
// group epoch (assignments apply at once: share groups do not revoke).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/server"
)

func (b *Broker) handleShareGroupDescribe(c *server.Conn, req *kmsg.ShareGroupDescribeRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ShareGroupDescribeResponse)
	z := b.authzFor(c)
	for _, id := range req.GroupIDs {
		g := kmsg.NewShareGroupDescribeResponseGroup()
		g.GroupID = id
		if !z.group(opDescribe, id) {
			g.ErrorCode = kerr.GroupAuthorizationFailed.Code
			resp.Groups = append(resp.Groups, g)
			continue
		}
		members, epoch, state, err := b.describeShareGroup(id)
		if err != nil {
			g.ErrorCode, g.ErrorMessage = groupCode(err), errMessage(err)
			resp.Groups = append(resp.Groups, g)
			continue
		}
		g.GroupState, g.GroupEpoch, g.AssignmentEpoch, g.Assignor = state, epoch, epoch, "simple"
		for _, m := range members {
			rm := kmsg.NewShareGroupDescribeResponseGroupMember()
			rm.MemberID, rm.MemberEpoch, rm.ClientID, rm.ClientHost = m.ID, m.Epoch, m.ClientID, m.ClientHost
			if m.RackID != "" {
				r := m.RackID
				rm.RackID = &r
			}
			rm.SubscribedTopicNames = m.Topics
			for _, tp := range m.Assignment {
				t := kmsg.NewShareGroupDescribeResponseGroupMemberAssignmentTopicPartition()
				t.TopicID, t.Topic, t.Partitions = tp.TopicID, tp.Topic, tp.Partitions
				rm.Assignment.TopicPartitions = append(rm.Assignment.TopicPartitions, t)
			}
			g.Members = append(g.Members, rm)
		}
		if req.IncludeAuthorizedOperations {
			g.AuthorizedOperations = z.authorizedOperations(kmsg.ACLResourceTypeGroup, id, groupOps...)
		}
		resp.Groups = append(resp.Groups, g)
	}
	return resp
}
