package broker

// DescribeAcls: v0-3
//
// * v0: literal resource patterns only; the filter's pattern type is LITERAL.
// * v1: ResourcePatternType in the filter (ANY, MATCH, LITERAL, PREFIXED)
//   and in the response (KIP-290).
// * v2: flexible versions (KIP-482).
// * v3: the USER resource type (KIP-373).
//
// Requires DESCRIBE on the cluster (CLUSTER_AUTHORIZATION_FAILED). Without
// authorizer.class.name the answer is SECURITY_DISABLED, as Kafka answers
// without an Authorizer. A filter with UNKNOWN values gets INVALID_REQUEST
// with a message. Matching bindings are grouped by resource pattern; unlike
// Kafka, whose grouping follows a hash map, groups and the entries in them
// come out in a stable order (resource type, name, pattern type, then
// principal, host, operation, permission).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/acl"
	"samsa/internal/server"
)

func (b *Broker) handleDescribeACLs(c *server.Conn, req *kmsg.DescribeACLsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
	fail := func(code *kerr.Error, err error) kmsg.Response {
		resp.ErrorCode = code.Code
		resp.ErrorMessage = errMessage(err)
		return resp
	}
	if !b.authorizeCluster(c, kmsg.ACLOperationDescribe) {
		return fail(kerr.ClusterAuthorizationFailed, nil)
	}
	if !b.securityEnabled() {
		return fail(errCode(errSecurityDisabled), errSecurityDisabled)
	}
	f := acl.Filter{
		ResourceType: req.ResourceType,
		ResourceName: req.ResourceName,
		PatternType:  req.ResourcePatternType,
		Principal:    req.Principal,
		Host:         canonicalHostPtr(req.Host),
		Operation:    req.Operation,
		Permission:   req.PermissionType,
	}
	if req.Version == 0 {
		f.PatternType = kmsg.ACLResourcePatternTypeLiteral
	}
	if err := f.Validate(); err != nil {
		return fail(errCode(err), err)
	}
	resp.Resources = describeACLsResources(b.loadACLs(b.cluster.Image()).img.Matching(f))
	return resp
}

// describeACLsResources groups bindings, sorted as an acl.Image keeps them,
// by resource pattern.
func describeACLsResources(bs []acl.Binding) []kmsg.DescribeACLsResponseResource {
	var out []kmsg.DescribeACLsResponseResource
	for i, bd := range bs {
		if i == 0 || !samePattern(bs[i-1], bd) {
			r := kmsg.NewDescribeACLsResponseResource()
			r.ResourceType, r.ResourceName, r.ResourcePatternType = bd.ResourceType, bd.ResourceName, bd.PatternType
			out = append(out, r)
		}
		e := kmsg.NewDescribeACLsResponseResourceACL()
		e.Principal, e.Host, e.Operation, e.PermissionType = bd.Principal, bd.Host, bd.Operation, bd.Permission
		last := &out[len(out)-1]
		last.ACLs = append(last.ACLs, e)
	}
	return out
}

// samePattern reports whether a and b have the same resource pattern.
func samePattern(a, b acl.Binding) bool {
	return a.ResourceType == b.ResourceType && a.ResourceName == b.ResourceName && a.PatternType == b.PatternType
}
