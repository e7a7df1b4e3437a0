package broker

// DescribeGroups: v0-5
//
// * v3: AuthorizedOperations when asked for and an authorizer is set
//   (KIP-430, authz_apis.go); -2147483648 ("not requested") otherwise.
// * v4: InstanceID per member (KIP-345).
// * v5: flexible versions.
//
// An unknown group, and a consumer group (KIP-848: ConsumerGroupDescribe
// describes it), is described as Dead with no error, as Kafka does before
// v6.

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/group"
)

func (b *Broker) handleDescribeGroups(ctx context.Context, req *kmsg.DescribeGroupsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	for _, name := range req.Groups {
		rg := kmsg.NewDescribeGroupsResponseGroup()
		rg.Group = name
		rg.AuthorizedOperations = -2147483648
		d, err := b.groups.DescribeGroup(ctx, name)
		if errors.Is(err, group.ErrGroupIDNotFound) {
			err = nil
			d.State = "Dead"
		}
		rg.ErrorCode = groupCode(err)
		rg.State, rg.ProtocolType, rg.Protocol = d.State, d.ProtocolType, d.Protocol
		for _, m := range d.Members {
			rm := kmsg.NewDescribeGroupsResponseGroupMember()
			rm.MemberID, rm.InstanceID, rm.ClientID, rm.ClientHost = m.MemberID, m.InstanceID, m.ClientID, m.ClientHost
			rm.ProtocolMetadata, rm.MemberAssignment = m.Metadata, m.Assignment
			rg.Members = append(rg.Members, rm)
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp
}
