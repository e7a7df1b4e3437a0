package acl

import (
	"strings"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Config configures an Authorizer. Field names follow Kafka's broker
// configs.
type Config struct {
	// SuperUsers is super.users: principals ("User:admin") allowed every
	// operation on every resource, whatever the ACLs say. Matching is exact;
	// "User:*" here would make everyone a super user.
	SuperUsers []string
	// AllowEveryoneIfNoACLFound is allow.everyone.if.no.acl.found: the
	// answer for a resource that no ACL applies to at all.
	AllowEveryoneIfNoACLFound bool
}

// Authorizer answers authorization questions against the current Image. It
// is safe for concurrent use: the image is held in an atomic.Pointer, so
// SetImage never blocks Authorize and each call sees one whole image.
// Neither method blocks or allocates.
type Authorizer struct {
	superUsers   map[string]struct{} // read-only after NewAuthorizer
	allowIfNoACL bool
	image        atomic.Pointer[Image]
}

// NewAuthorizer returns an Authorizer for cfg serving img. A nil img is an
// empty image. NewAuthorizer does not keep cfg.SuperUsers.
func NewAuthorizer(cfg Config, img *Image) *Authorizer {
	a := &Authorizer{
		superUsers:   make(map[string]struct{}, len(cfg.SuperUsers)),
		allowIfNoACL: cfg.AllowEveryoneIfNoACLFound,
	}
	for _, u := range cfg.SuperUsers {
		a.superUsers[u] = struct{}{}
	}
	a.SetImage(img)
	return a
}

// SetImage makes img the image later calls see; a nil img is an empty
// image. Calls already running finish on the image they started with.
func (a *Authorizer) SetImage(img *Image) {
	if img == nil {
		img = emptyImage
	}
	a.image.Store(img)
}

var emptyImage = NewImage(nil)

// Image returns the current image.
func (a *Authorizer) Image() *Image { return a.image.Load() }

// IsSuperUser reports whether principal is listed in Config.SuperUsers.
func (a *Authorizer) IsSuperUser(principal string) bool {
	_, ok := a.superUsers[principal]
	return ok
}

// Authorize reports whether principal, connecting from host, may perform op
// on the resource of type rt called name. It follows Kafka's
// StandardAuthorizerData.authorize:
//
//  1. A super user is allowed.
//  2. The ACLs that apply to the resource are those of type rt whose pattern
//     is LITERAL name, LITERAL "*", or PREFIXED with a prefix of name.
//  3. Of those, an ACL matches the request when its principal is principal
//     or "User:*", its host is host or "*", and its operation is op or ALL;
//     an ALLOW of READ, WRITE, DELETE or ALTER also matches DESCRIBE, and an
//     ALLOW of ALTER_CONFIGS also matches DESCRIBE_CONFIGS. A DENY matches
//     only its own operation (or ALL): DENY READ does not deny DESCRIBE.
//  4. Any matching DENY denies; otherwise any matching ALLOW allows.
//  5. Otherwise, if any ACL applies to the resource (for any principal, host
//     or operation), the request is denied; if none does, the answer is
//     Config.AllowEveryoneIfNoACLFound.
//
// Principals and hosts are compared as strings. host must be formatted as
// the ACLs are; NB: Kafka compares against Java's InetAddress.getHostAddress,
// which writes IPv6 addresses uncompressed ("0:0:0:0:0:0:0:1").
//
// An op of ANY or UNKNOWN, or an rt that is not a concrete type, is a
// programming error and is denied, even for a super user.
func (a *Authorizer) Authorize(principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	if !concreteOperation(op) || !concreteResourceType(rt) {
		return false
	}
	if _, ok := a.superUsers[principal]; ok {
		return true
	}
	return a.image.Load().authorize(principal, host, op, rt, name, a.allowIfNoACL)
}

// verdict accumulates the matching ACLs seen so far.
type verdict struct {
	allow, deny bool
}

func (img *Image) authorize(principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string, allowIfNoACL bool) bool {
	ti := img.types[rt]
	if ti == nil {
		return allowIfNoACL
	}
	var v verdict
	applies := false
	if p := ti.literal[name]; p != nil {
		applies = true
		p.check(principal, host, op, &v)
	}
	if ti.wildcard != nil {
		applies = true
		ti.wildcard.check(principal, host, op, &v)
	}
	for _, l := range ti.prefixLens {
		if v.deny || l > len(name) {
			break
		}
		if p := ti.prefixed[name[:l]]; p != nil {
			applies = true
			p.check(principal, host, op, &v)
		}
	}
	switch {
	case v.deny:
		return false
	case v.allow:
		return true
	case applies:
		return false
	}
	return allowIfNoACL
}

// check folds the entries of p that match the request into v.
func (p *patternACLs) check(principal, host string, op kmsg.ACLOperation, v *verdict) {
	if v.deny {
		return
	}
	checkEntries(p.byPrincipal[principal], host, op, v)
	if principal != WildcardPrincipal {
		checkEntries(p.byPrincipal[WildcardPrincipal], host, op, v)
	}
}

func checkEntries(es []entry, host string, op kmsg.ACLOperation, v *verdict) {
	for i := range es {
		e := &es[i]
		if e.host != WildcardHost && e.host != host {
			continue
		}
		if !e.matchesOp(op) {
			continue
		}
		if e.perm == kmsg.ACLPermissionTypeDeny {
			v.deny = true
			return
		}
		v.allow = true
	}
}

// matchesOp reports whether e covers op, with Kafka's implications for
// ALLOW entries (StandardAuthorizerData.findResult).
func (e *entry) matchesOp(op kmsg.ACLOperation) bool {
	if e.op == kmsg.ACLOperationAll || e.op == op {
		return true
	}
	if e.perm != kmsg.ACLPermissionTypeAllow {
		return false
	}
	return impliedBy(op, e.op)
}

// impliedBy reports whether an ALLOW of granted also allows op.
func impliedBy(op, granted kmsg.ACLOperation) bool {
	switch op {
	case kmsg.ACLOperationDescribe:
		switch granted {
		case kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationDelete, kmsg.ACLOperationAlter:
			return true
		}
	case kmsg.ACLOperationDescribeConfigs:
		return granted == kmsg.ACLOperationAlterConfigs
	}
	return false
}

// hardcodedName is the resource name Kafka's Authorizer.authorizeByResourceType
// authorizes first, "to ensure that super users are granted access
// regardless of DENY ACLs".
const hardcodedName = "hardcode"

// AuthorizeByResourceType reports whether principal, connecting from host,
// may perform op on at least one resource of type rt, as Kafka's default
// Authorizer.authorizeByResourceType (KIP-679) decides. The broker uses it
// where no resource is named: the IDEMPOTENT_WRITE fallback of
// InitProducerId (WRITE on any topic) and the like. It returns true when:
//
//  1. Authorize(principal, host, op, rt, "hardcode") is true. This is how a
//     super user is allowed; NB: it also makes a LITERAL "*" ALLOW, a
//     PREFIXED ALLOW of a prefix of "hardcode", a LITERAL "hardcode" ALLOW,
//     an implied operation (READ implies DESCRIBE) and
//     AllowEveryoneIfNoACLFound (when no ACL applies to "hardcode") count,
//     exactly as in Kafka.
//  2. Otherwise, among the bindings of type rt whose principal is principal
//     or "User:*", whose host is host or "*", and whose operation is op or
//     ALL (no implications here):
//     a. a DENY on LITERAL "*" denies;
//     b. else an ALLOW on LITERAL "*" allows;
//     c. else a LITERAL ALLOW of name n allows unless there is a LITERAL
//     DENY of n or a PREFIXED DENY of a prefix of n (n itself included);
//     d. else a PREFIXED ALLOW of p allows unless there is a PREFIXED DENY
//     of a prefix of p (p itself included). A LITERAL DENY never blocks a
//     PREFIXED ALLOW.
//  3. Otherwise it is false.
//
// Like Authorize, it denies an op of ANY or UNKNOWN or an rt that is not
// concrete (Kafka throws IllegalArgumentException). It does not allocate
// unless some PREFIXED DENY applies.
func (a *Authorizer) AuthorizeByResourceType(principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType) bool {
	if !concreteOperation(op) || !concreteResourceType(rt) {
		return false
	}
	if a.Authorize(principal, host, op, rt, hardcodedName) {
		return true
	}
	ti := a.image.Load().types[rt]
	if ti == nil {
		return false
	}
	var (
		allowWildcard bool
		denyLiteral   []string
		denyPrefixed  []string
	)
	// First pass: collect the denies, as Kafka does before deciding.
	scan := func(bs []Binding) bool {
		for i := range bs {
			b := &bs[i]
			if (b.Host != WildcardHost && b.Host != host) || (b.Operation != op && b.Operation != kmsg.ACLOperationAll) {
				continue
			}
			literal := b.PatternType == kmsg.ACLResourcePatternTypeLiteral
			switch {
			case b.Permission == kmsg.ACLPermissionTypeDeny && literal && b.ResourceName == WildcardResource:
				return true // denied outright
			case b.Permission == kmsg.ACLPermissionTypeDeny && literal:
				denyLiteral = append(denyLiteral, b.ResourceName)
			case b.Permission == kmsg.ACLPermissionTypeDeny:
				denyPrefixed = append(denyPrefixed, b.ResourceName)
			case literal && b.ResourceName == WildcardResource:
				allowWildcard = true
			}
		}
		return false
	}
	own := ti.byPrincipal[principal]
	var wild []Binding
	if principal != WildcardPrincipal {
		wild = ti.byPrincipal[WildcardPrincipal]
	}
	if scan(own) || scan(wild) {
		return false
	}
	if allowWildcard {
		return true
	}
	allowed := func(bs []Binding) bool {
		for i := range bs {
			b := &bs[i]
			if b.Permission != kmsg.ACLPermissionTypeAllow ||
				(b.Host != WildcardHost && b.Host != host) || (b.Operation != op && b.Operation != kmsg.ACLOperationAll) {
				continue
			}
			if b.PatternType == kmsg.ACLResourcePatternTypeLiteral && containsString(denyLiteral, b.ResourceName) {
				continue
			}
			if !hasPrefixIn(b.ResourceName, denyPrefixed) {
				return true
			}
		}
		return false
	}
	return allowed(own) || allowed(wild)
}

func containsString(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// hasPrefixIn reports whether some p in prefixes is a prefix of s.
func hasPrefixIn(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}
