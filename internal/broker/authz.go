package broker

import (
	"net"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/acl"
	"samsa/internal/cluster"
	"samsa/internal/server"
)

// Authorization follows Kafka's KafkaApis: each handler asks for the
// operations acl.APIRequirements lists for its API, on the resources the
// request names. Without authorizer.class.name every request is allowed.
//
// The ACLs come from the broker's cluster image: the authorizer's index is
// rebuilt the first time a request sees a new ACL set (a new
// cluster.ACLSet pointer), so a request is always judged against the ACLs
// of the image it reads, never a more permissive older one (TESTPLAN
// X-13), and an ACL change applies on a broker as soon as its etcd watch
// delivers it. A stored binding that does not decode denies everything
// (but to super users) until it is fixed: it might have been a DENY.

// aclState caches the authorizer built for the ACL set of the newest
// image seen. Each request uses the authorizer built for the ACL set of
// the image it read, never one built for another set.
type aclState struct {
	cfg     acl.Config
	enabled bool
	// mu serialises builds; built is read without it.
	mu    sync.Mutex
	built atomic.Pointer[builtACLs]
}

// builtACLs is an authorizer over the ACLs of src, as of image revision
// rev.
type builtACLs struct {
	src *cluster.ACLSet
	rev int64
	a   *acl.Authorizer
}

// authorizerEnabled reports whether authorizer.class.name names an
// authorizer.
func authorizerEnabled(name string) bool { return name != "" }

func newACLState(cfg acl.Config, enabled bool) *aclState {
	return &aclState{cfg: cfg, enabled: enabled}
}

// denyAll is what the authorizer holds while a stored binding does not
// decode: a DENY of everything to everyone but super users. A binding
// that cannot be read may be a DENY, so it fails closed.
var denyAll = func() []acl.Binding {
	var out []acl.Binding
	for _, rt := range []kmsg.ACLResourceType{kmsg.ACLResourceTypeTopic, kmsg.ACLResourceTypeGroup,
		kmsg.ACLResourceTypeCluster, kmsg.ACLResourceTypeTransactionalId, kmsg.ACLResourceTypeDelegationToken, kmsg.ACLResourceTypeUser} {
		name := acl.WildcardResource
		if rt == kmsg.ACLResourceTypeCluster {
			name = acl.ClusterName
		}
		out = append(out, acl.Binding{ResourceType: rt, ResourceName: name, PatternType: kmsg.ACLResourcePatternTypeLiteral,
			Principal: acl.WildcardPrincipal, Host: acl.WildcardHost, Operation: kmsg.ACLOperationAll, Permission: kmsg.ACLPermissionTypeDeny})
	}
	return out
}()

// currentAuthorizer returns the authorizer over the ACLs of the broker's
// current image, building its index if this set is new. nil means
// authorization is off.
func (b *Broker) currentAuthorizer() *acl.Authorizer {
	s := b.acls
	if !s.enabled {
		return nil
	}
	img := b.cluster.Image()
	set := img.ACLs
	if cur := s.built.Load(); cur != nil && cur.src == set {
		return cur.a
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur := s.built.Load(); cur != nil && cur.src == set {
		return cur.a
	}
	bindings := make([]acl.Binding, 0, len(set.Bindings))
	for id, v := range set.Bindings {
		bd, err := acl.Unmarshal(v)
		if err != nil {
			b.log.Error("acl: a stored binding does not decode; denying every request but super users' until etcd key acls/<id> is deleted or fixed",
				"id", id, "err", err)
			bindings = denyAll
			break
		}
		bindings = append(bindings, bd)
	}
	a := acl.NewAuthorizer(s.cfg, acl.NewImage(bindings))
	// NB: only a newer image's build replaces the cache, so a request
	// that read an older image does not make the next ones rebuild.
	if cur := s.built.Load(); cur == nil || img.Revision >= cur.rev {
		s.built.Store(&builtACLs{src: set, rev: img.Revision, a: a})
	}
	return a
}

// authz answers authorization questions for one request. The zero value
// (no authorizer) allows everything.
type authz struct {
	a         *acl.Authorizer
	principal string
	host      string
}

// authzFor returns the authorization context of a request on c.
func (b *Broker) authzFor(c *server.Conn) authz {
	z := authz{a: b.currentAuthorizer()}
	if z.a == nil || c == nil {
		return z
	}
	z.principal = c.Principal
	if z.principal == "" {
		z.principal = server.Anonymous
	}
	// NB: the server formats the host once per connection; authzFor runs
	// more than once per request on the produce and fetch paths.
	if c.Host != "" {
		z.host = c.Host
	} else if c.Remote != nil {
		z.host, _, _ = net.SplitHostPort(c.Remote.String())
	}
	return z
}

func (z authz) allowed(op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	if z.a == nil {
		return true
	}
	return z.a.Authorize(z.principal, z.host, op, rt, name)
}

func (z authz) topic(op kmsg.ACLOperation, name string) bool {
	return z.allowed(op, kmsg.ACLResourceTypeTopic, name)
}

func (z authz) group(op kmsg.ACLOperation, name string) bool {
	return z.allowed(op, kmsg.ACLResourceTypeGroup, name)
}

func (z authz) cluster(op kmsg.ACLOperation) bool {
	return z.allowed(op, kmsg.ACLResourceTypeCluster, acl.ClusterName)
}

func (z authz) transactionalID(op kmsg.ACLOperation, id string) bool {
	return z.allowed(op, kmsg.ACLResourceTypeTransactionalId, id)
}

// anyTopic is Kafka's authorizeByResourceType on topics: op is allowed on
// some topic (KIP-679's fallback for IDEMPOTENT_WRITE).
func (z authz) anyTopic(op kmsg.ACLOperation) bool {
	if z.a == nil {
		return true
	}
	return z.a.AuthorizeByResourceType(z.principal, z.host, op, kmsg.ACLResourceTypeTopic)
}

// on reports whether authorization is enforced.
func (z authz) on() bool { return z.a != nil }

// canonicalHostPtr is acl.CanonicalHost for a filter's nullable host.
func canonicalHostPtr(h *string) *string {
	if h == nil {
		return nil
	}
	c := acl.CanonicalHost(*h)
	return &c
}

// authorizeCluster reports whether the principal of c may do op on the
// cluster.
func (b *Broker) authorizeCluster(c *server.Conn, op kmsg.ACLOperation) bool {
	return b.authzFor(c).cluster(op)
}

// Operations, by their Kafka names.
const (
	opRead            = kmsg.ACLOperationRead
	opWrite           = kmsg.ACLOperationWrite
	opCreate          = kmsg.ACLOperationCreate
	aclDelete         = kmsg.ACLOperationDelete
	opAlter           = kmsg.ACLOperationAlter
	opDescribe        = kmsg.ACLOperationDescribe
	opClusterAction   = kmsg.ACLOperationClusterAction
	opDescribeConfigs = kmsg.ACLOperationDescribeConfigs
	opAlterConfigs    = kmsg.ACLOperationAlterConfigs
	opIdempotentWrite = kmsg.ACLOperationIdempotentWrite
)

// authorizedOperations returns the bit field of the operations on a
// resource that the principal may do, for the AuthorizedOperations fields
// of Metadata, DescribeGroups and DescribeCluster (KIP-430): bit n is
// operation code n.
func (z authz) authorizedOperations(rt kmsg.ACLResourceType, name string, ops ...kmsg.ACLOperation) int32 {
	var bits int32
	for _, op := range ops {
		if z.allowed(op, rt, name) {
			bits |= 1 << uint(op)
		}
	}
	return bits
}

// clusterAuthorizedOperations is the cluster's AuthorizedOperations in
// Metadata (v8-10) and DescribeCluster: 0 unless the principal may
// DESCRIBE the cluster (Reference: KafkaApis.handleTopicMetadataRequest,
// AuthHelper.computeDescribeClusterResponse).
func (z authz) clusterAuthorizedOperations() int32 {
	if !z.cluster(opDescribe) {
		return 0
	}
	return z.authorizedOperations(kmsg.ACLResourceTypeCluster, acl.ClusterName, clusterOps...)
}

// The operations Kafka reports per resource type in AuthorizedOperations.
var (
	topicOps   = []kmsg.ACLOperation{opRead, opWrite, opCreate, aclDelete, opAlter, opDescribe, opDescribeConfigs, opAlterConfigs}
	groupOps   = []kmsg.ACLOperation{opRead, aclDelete, opDescribe}
	clusterOps = []kmsg.ACLOperation{opCreate, opClusterAction, opDescribeConfigs, opAlterConfigs, opIdempotentWrite, opAlter, opDescribe}
)
