package acl

import (
	"cmp"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Image is an immutable set of bindings indexed for authorization. It is
// safe for concurrent use: nothing changes it after NewImage returns. A new
// set of ACLs is a new Image, swapped in with Authorizer.SetImage.
//
// The index answers "which ACLs apply to resource (type, name)" without
// scanning all bindings. Per resource type it keeps
//
//	literal   map from LITERAL name to that pattern's entries (one lookup)
//	wildcard  the entries of the LITERAL "*" pattern
//	prefixed  map from PREFIXED name to that pattern's entries, and the
//	          sorted distinct lengths of those names
//
// A PREFIXED pattern p applies to name n when n starts with p, that is when
// p == n[:len(p)]. So the lookup probes the prefixed map with n[:l] for each
// distinct prefix length l <= len(n). This costs one map lookup per distinct
// length rather than per pattern, slices n without allocating, and real ACL
// sets have few distinct prefix lengths. A byte trie would cost a pointer hop
// per byte of the name whatever the ACLs; a sorted slice with binary search
// needs one search per candidate length as well, with worse constants.
//
// Within a pattern, entries are grouped by principal, so a pattern shared by
// thousands of principals (e.g. the "*" topic) costs two map lookups: the
// request's principal and "User:*".
type Image struct {
	bindings []Binding     // sorted by compareBindings, no duplicates
	types    [8]*typeIndex // by kmsg.ACLResourceType; nil if no ACLs
}

// typeIndex holds the ACLs of one resource type.
type typeIndex struct {
	literal    map[string]*patternACLs
	wildcard   *patternACLs // LITERAL "*"; nil if none
	prefixed   map[string]*patternACLs
	prefixLens []int // distinct len of prefixed keys, ascending

	// byPrincipal lists this type's bindings per principal, for
	// AuthorizeByResourceType.
	byPrincipal map[string][]Binding
}

// patternACLs holds the entries of one resource pattern. It is never empty.
type patternACLs struct {
	byPrincipal map[string][]entry
}

// entry is the part of an access control entry that is left to match once
// the resource pattern and principal have.
type entry struct {
	host string
	op   kmsg.ACLOperation
	perm kmsg.ACLPermissionType
}

// NewImage returns an Image of bindings. Bindings that fail Validate are
// left out (they can never be created, and Kafka's authorizer would fail on
// some of them); duplicates are kept once. NewImage does not keep or modify
// the bindings slice.
func NewImage(bindings []Binding) *Image {
	bs := make([]Binding, 0, len(bindings))
	for _, b := range bindings {
		if b.Validate() == nil {
			bs = append(bs, b)
		}
	}
	slices.SortFunc(bs, compareBindings)
	bs = slices.Compact(bs)
	img := &Image{bindings: slices.Clip(bs)}
	for _, b := range bs {
		ti := img.types[b.ResourceType]
		if ti == nil {
			ti = &typeIndex{
				literal:     make(map[string]*patternACLs),
				prefixed:    make(map[string]*patternACLs),
				byPrincipal: make(map[string][]Binding),
			}
			img.types[b.ResourceType] = ti
		}
		ti.byPrincipal[b.Principal] = append(ti.byPrincipal[b.Principal], b)
		var p *patternACLs
		switch {
		case b.PatternType == kmsg.ACLResourcePatternTypeLiteral && b.ResourceName == WildcardResource:
			if ti.wildcard == nil {
				ti.wildcard = &patternACLs{byPrincipal: make(map[string][]entry)}
			}
			p = ti.wildcard
		case b.PatternType == kmsg.ACLResourcePatternTypeLiteral:
			p = ti.literal[b.ResourceName]
			if p == nil {
				p = &patternACLs{byPrincipal: make(map[string][]entry)}
				ti.literal[b.ResourceName] = p
			}
		default: // PREFIXED
			p = ti.prefixed[b.ResourceName]
			if p == nil {
				p = &patternACLs{byPrincipal: make(map[string][]entry)}
				ti.prefixed[b.ResourceName] = p
				ti.prefixLens = append(ti.prefixLens, len(b.ResourceName))
			}
		}
		p.byPrincipal[b.Principal] = append(p.byPrincipal[b.Principal], entry{host: b.Host, op: b.Operation, perm: b.Permission})
	}
	for _, ti := range img.types {
		if ti != nil {
			slices.Sort(ti.prefixLens)
			ti.prefixLens = slices.Compact(ti.prefixLens)
		}
	}
	return img
}

// compareBindings orders bindings by resource type, name, pattern type,
// principal, host, operation and permission.
func compareBindings(a, b Binding) int {
	return cmp.Or(
		cmp.Compare(a.ResourceType, b.ResourceType),
		strings.Compare(a.ResourceName, b.ResourceName),
		cmp.Compare(a.PatternType, b.PatternType),
		strings.Compare(a.Principal, b.Principal),
		strings.Compare(a.Host, b.Host),
		cmp.Compare(a.Operation, b.Operation),
		cmp.Compare(a.Permission, b.Permission),
	)
}

// Len returns the number of bindings in img.
func (img *Image) Len() int { return len(img.bindings) }

// Bindings returns the bindings of img, sorted by resource type, resource
// name, pattern type, principal, host, operation and permission. The caller
// owns the returned slice.
func (img *Image) Bindings() []Binding { return slices.Clone(img.bindings) }

// Matching returns the bindings f selects, in the order of Bindings, for
// DescribeAcls and DeleteAcls. It does not validate f. The caller owns the
// returned slice.
func (img *Image) Matching(f Filter) []Binding {
	var out []Binding
	for _, b := range img.bindings {
		if f.Matches(b) {
			out = append(out, b)
		}
	}
	return out
}

// Contains reports whether img holds b.
func (img *Image) Contains(b Binding) bool {
	_, ok := slices.BinarySearchFunc(img.bindings, b, compareBindings)
	return ok
}
