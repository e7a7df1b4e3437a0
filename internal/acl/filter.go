package acl

import (
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Filter selects bindings for DescribeAcls and DeleteAcls, with the
// semantics of Kafka's AclBindingFilter (a ResourcePatternFilter and an
// AccessControlEntryFilter). A nil pointer field or an ANY enum matches every
// value. A Filter is a plain value and safe to copy and share.
type Filter struct {
	// ResourceType is a concrete type or ANY.
	ResourceType kmsg.ACLResourceType
	// ResourceName is the name to match; nil matches any name.
	ResourceName *string
	// PatternType is ANY, MATCH, LITERAL or PREFIXED. With a name, LITERAL,
	// PREFIXED and ANY match bindings whose name equals it exactly (ANY of
	// either pattern type); MATCH matches every binding that would apply to
	// a resource of that name: the LITERAL name, the LITERAL wildcard "*",
	// and PREFIXED patterns the name starts with (KIP-290).
	PatternType kmsg.ACLResourcePatternType
	// Principal matches exactly; nil matches any. NB: "User:*" matches only
	// bindings for the wildcard principal, not every principal.
	Principal *string
	// Host matches exactly; nil matches any.
	Host *string
	// Operation is a concrete operation or ANY. ALL matches only bindings
	// for ALL.
	Operation kmsg.ACLOperation
	// Permission is ALLOW, DENY or ANY.
	Permission kmsg.ACLPermissionType
}

// AnyFilter matches every binding.
var AnyFilter = Filter{
	ResourceType: kmsg.ACLResourceTypeAny,
	PatternType:  kmsg.ACLResourcePatternTypeAny,
	Operation:    kmsg.ACLOperationAny,
	Permission:   kmsg.ACLPermissionTypeAny,
}

// Validate applies Kafka's filter checks (AclControlManager.validateFilter:
// neither the pattern filter nor the entry filter may be "unknown"). The
// error wraps ErrInvalidFilter. Codes this package does not know count as
// UNKNOWN, as Kafka's fromCode makes them.
func (f Filter) Validate() error {
	if !concreteResourceType(f.ResourceType) && f.ResourceType != kmsg.ACLResourceTypeAny {
		return fmt.Errorf("%w: invalid resource type %s", ErrInvalidFilter, enumString(f.ResourceType, int8(f.ResourceType)))
	}
	if f.PatternType < kmsg.ACLResourcePatternTypeAny || f.PatternType > kmsg.ACLResourcePatternTypePrefixed {
		return fmt.Errorf("%w: invalid pattern type %s", ErrInvalidFilter, enumString(f.PatternType, int8(f.PatternType)))
	}
	if !concreteOperation(f.Operation) && f.Operation != kmsg.ACLOperationAny {
		return fmt.Errorf("%w: invalid operation %s", ErrInvalidFilter, enumString(f.Operation, int8(f.Operation)))
	}
	if f.Permission < kmsg.ACLPermissionTypeAny || f.Permission > kmsg.ACLPermissionTypeAllow {
		return fmt.Errorf("%w: invalid permission type %s", ErrInvalidFilter, enumString(f.Permission, int8(f.Permission)))
	}
	return nil
}

// Matches reports whether f selects b, following Kafka's
// ResourcePatternFilter.matches and AccessControlEntryFilter.matches.
func (f Filter) Matches(b Binding) bool {
	return f.matchesPattern(b) && f.matchesEntry(b)
}

func (f Filter) matchesPattern(b Binding) bool {
	if f.ResourceType != kmsg.ACLResourceTypeAny && f.ResourceType != b.ResourceType {
		return false
	}
	if f.PatternType != kmsg.ACLResourcePatternTypeAny && f.PatternType != kmsg.ACLResourcePatternTypeMatch &&
		f.PatternType != b.PatternType {
		return false
	}
	if f.ResourceName == nil {
		return true
	}
	name := *f.ResourceName
	if f.PatternType == kmsg.ACLResourcePatternTypeAny || f.PatternType == b.PatternType {
		return name == b.ResourceName
	}
	// MATCH: every pattern that would apply to a resource called name.
	switch b.PatternType {
	case kmsg.ACLResourcePatternTypeLiteral:
		return name == b.ResourceName || b.ResourceName == WildcardResource
	case kmsg.ACLResourcePatternTypePrefixed:
		return strings.HasPrefix(name, b.ResourceName)
	}
	// Kafka throws here; a stored binding never has another pattern type.
	return false
}

func (f Filter) matchesEntry(b Binding) bool {
	if f.Principal != nil && *f.Principal != b.Principal {
		return false
	}
	if f.Host != nil && *f.Host != b.Host {
		return false
	}
	if f.Operation != kmsg.ACLOperationAny && f.Operation != b.Operation {
		return false
	}
	return f.Permission == kmsg.ACLPermissionTypeAny || f.Permission == b.Permission
}
