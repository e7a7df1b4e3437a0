package broker

// DeleteAcls: v0-3
//
// * v0: literal resource patterns only; every filter is LITERAL.
// * v1: ResourcePatternType per filter, ANY, MATCH, LITERAL or PREFIXED,
//   and in each matching ACL (KIP-290).
// * v2: flexible versions (KIP-482).
// * v3: the USER resource type (KIP-373).
//
// Requires ALTER on the cluster: without it every filter result gets
// CLUSTER_AUTHORIZATION_FAILED. Without authorizer.class.name every result
// gets SECURITY_DISABLED. A filter with UNKNOWN values gets INVALID_REQUEST
// with a message. Each valid filter is matched against the bindings of the
// current metadata image; its result lists every binding it matched
// (MatchingAcls, in the stable order of DescribeAcls), so a binding matched
// by two filters is listed in both, as in Kafka. Everything matched is
// removed in one etcd transaction; if that fails, every matched ACL carries
// the error.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/acl"
	"samsa/internal/server"
)

func (b *Broker) handleDeleteACLs(ctx context.Context, c *server.Conn, req *kmsg.DeleteACLsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	resp.Results = make([]kmsg.DeleteACLsResponseResult, len(req.Filters))
	for i := range resp.Results {
		resp.Results[i] = kmsg.NewDeleteACLsResponseResult()
	}
	failAll := func(code *kerr.Error, err error) kmsg.Response {
		for i := range resp.Results {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = code.Code, errMessage(err)
		}
		return resp
	}
	if !b.authorizeCluster(c, kmsg.ACLOperationAlter) {
		return failAll(kerr.ClusterAuthorizationFailed, nil)
	}
	if !b.securityEnabled() {
		return failAll(errCode(errSecurityDisabled), errSecurityDisabled)
	}
	stored := b.loadACLs(b.cluster.Image())
	var ids []string
	seen := make(map[string]bool)
	for i, rf := range req.Filters {
		f := acl.Filter{
			ResourceType: rf.ResourceType,
			ResourceName: rf.ResourceName,
			PatternType:  rf.ResourcePatternType,
			Principal:    rf.Principal,
			Host:         canonicalHostPtr(rf.Host),
			Operation:    rf.Operation,
			Permission:   rf.PermissionType,
		}
		if req.Version == 0 {
			f.PatternType = kmsg.ACLResourcePatternTypeLiteral
		}
		if err := f.Validate(); err != nil {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = errCode(err).Code, errMessage(err)
			continue
		}
		for _, bd := range stored.img.Matching(f) {
			m := kmsg.NewDeleteACLsResponseResultMatchingACL()
			m.ResourceType, m.ResourceName, m.ResourcePatternType = bd.ResourceType, bd.ResourceName, bd.PatternType
			m.Principal, m.Host, m.Operation, m.PermissionType = bd.Principal, bd.Host, bd.Operation, bd.Permission
			resp.Results[i].MatchingACLs = append(resp.Results[i].MatchingACLs, m)
			if id := stored.ids[bd]; !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
	}
	if err := b.cluster.DeleteACLs(ctx, ids); err != nil {
		b.log.Error("delete ACLs", "err", err)
		code, text := errCode(err).Code, errMessage(err)
		for i := range resp.Results {
			for j := range resp.Results[i].MatchingACLs {
				resp.Results[i].MatchingACLs[j].ErrorCode, resp.Results[i].MatchingACLs[j].ErrorMessage = code, text
			}
		}
	}
	return resp
}
