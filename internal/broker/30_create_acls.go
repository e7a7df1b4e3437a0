package broker

// CreateAcls: v0-3
//
// * v0: literal resource patterns only; every creation is LITERAL.
// * v1: ResourcePatternType per creation, LITERAL or PREFIXED (KIP-290).
// * v2: flexible versions (KIP-482).
// * v3: the USER resource type (KIP-373).
//
// Requires ALTER on the cluster: without it every creation gets
// CLUSTER_AUTHORIZATION_FAILED. Without authorizer.class.name every
// creation gets SECURITY_DISABLED. Each creation is checked on its own
// (acl.Binding.Validate: concrete values, a non-empty name, kafka-cluster
// for the Cluster resource, a Type:name principal, a host): an invalid one
// gets INVALID_REQUEST with a message and the others are stored. The valid
// creations of one request are written in one etcd transaction, so they
// land together or not at all; results follow request order. A binding
// that exists already is accepted again without change, as in Kafka.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/acl"
	"samsa/internal/server"
)

func (b *Broker) handleCreateACLs(ctx context.Context, c *server.Conn, req *kmsg.CreateACLsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	resp.Results = make([]kmsg.CreateACLsResponseResult, len(req.Creations))
	for i := range resp.Results {
		resp.Results[i] = kmsg.NewCreateACLsResponseResult()
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
	put := make(map[string][]byte, len(req.Creations))
	var stored []int // indexes of the creations in put
	for i, rc := range req.Creations {
		bd := acl.Binding{
			ResourceType: rc.ResourceType,
			ResourceName: rc.ResourceName,
			PatternType:  rc.ResourcePatternType,
			Principal:    rc.Principal,
			Host:         acl.CanonicalHost(rc.Host),
			Operation:    rc.Operation,
			Permission:   rc.PermissionType,
		}
		if req.Version == 0 {
			bd.PatternType = kmsg.ACLResourcePatternTypeLiteral
		}
		if err := bd.Validate(); err != nil {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = errCode(err).Code, errMessage(err)
			continue
		}
		put[bd.Key()] = bd.Marshal()
		stored = append(stored, i)
	}
	if err := b.cluster.PutACLs(ctx, put); err != nil {
		b.log.Error("create ACLs", "err", err)
		for _, i := range stored {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = errCode(err).Code, errMessage(err)
		}
	}
	return resp
}
