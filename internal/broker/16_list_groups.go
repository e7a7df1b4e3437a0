package broker

// ListGroups: v0-5
//
// * v3: flexible versions.
// * v4: StatesFilter (KIP-518).
// * v5: TypesFilter and GroupType (KIP-848): "classic" or "consumer";
//   "share" for share groups (KIP-932), whose protocol type is "share".

import (
	"context"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/group"
)

func (b *Broker) handleListGroups(ctx context.Context, req *kmsg.ListGroupsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	groups, err := b.groups.ListGroups(ctx, group.ListGroupsRequest{States: req.StatesFilter, Types: req.TypesFilter})
	resp.ErrorCode = groupCode(err)
	for _, g := range groups {
		rg := kmsg.NewListGroupsResponseGroup()
		rg.Group, rg.ProtocolType, rg.GroupState = g.Group, g.ProtocolType, g.State
		rg.GroupType = g.Type
		resp.Groups = append(resp.Groups, rg)
	}
	for _, g := range b.listShareGroups() {
		if (len(req.StatesFilter) > 0 && !slices.ContainsFunc(req.StatesFilter, func(s string) bool { return strings.EqualFold(s, g.State) })) ||
			(len(req.TypesFilter) > 0 && !slices.ContainsFunc(req.TypesFilter, func(s string) bool { return strings.EqualFold(s, g.Type) })) {
			continue
		}
		rg := kmsg.NewListGroupsResponseGroup()
		rg.Group, rg.ProtocolType, rg.GroupState, rg.GroupType = g.Group, g.ProtocolType, g.State, g.Type
		resp.Groups = append(resp.Groups, rg)
	}
	return resp
}
