package broker

// ConsumerGroupDescribe: v0-1 (KIP-848)
//
// * v1: MemberType in each member: 0 for a classic member (one that
//   joined with JoinGroup, KIP-848's online migration), 1 for the
//   consumer protocol.
//
// A classic or unknown group is GROUP_ID_NOT_FOUND, as Kafka answers.
// AuthorizedOperations when asked (authz_apis.go).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/group"
)

func (b *Broker) handleConsumerGroupDescribe(ctx context.Context, req *kmsg.ConsumerGroupDescribeRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
	img := b.cluster.Image()
	assignment := func(l []group.TopicPartitions) kmsg.Assignment {
		a := kmsg.Assignment{TopicPartitions: []kmsg.AssignmentTopicPartition{}}
		for _, tp := range l {
			t := kmsg.NewAssignmentTopicPartition()
			t.TopicID, t.Partitions = tp.TopicID, tp.Partitions
			if topic := img.TopicIDs[tp.TopicID]; topic != nil {
				t.Topic = topic.Name
			}
			a.TopicPartitions = append(a.TopicPartitions, t)
		}
		return a
	}
	for _, id := range req.Groups {
		rg := kmsg.NewConsumerGroupDescribeResponseGroup()
		rg.Group = id
		d, err := b.groups.ConsumerGroupDescribe(ctx, id)
		if id == "" {
			err = group.ErrInvalidGroupID
		}
		rg.ErrorCode = groupCode(err)
		if err != nil {
			if m := group.ErrorMessage(err); m != "" {
				rg.ErrorMessage = &m
			}
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		rg.State, rg.Epoch, rg.AssignmentEpoch, rg.AssignorName = d.State, d.Epoch, d.AssignmentEpoch, d.AssignorName
		for _, m := range d.Members {
			rm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
			rm.MemberID, rm.InstanceID, rm.RackID, rm.MemberEpoch = m.MemberID, m.InstanceID, m.RackID, m.MemberEpoch
			rm.ClientID, rm.ClientHost = m.ClientID, m.ClientHost
			rm.SubscribedTopics, rm.SubscribedTopicRegex = m.SubscribedTopicNames, m.SubscribedTopicRegex
			rm.Assignment, rm.TargetAssignment = assignment(m.Assignment), assignment(m.TargetAssignment)
			rm.MemberType = 1
			if m.Classic {
				rm.MemberType = 0
			}
			rg.Members = append(rg.Members, rm)
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp
}
