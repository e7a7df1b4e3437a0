package acl

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestFilterMatchesLikeAclBindingFilter(t *testing.T) {
	const (
		anyPattern = kmsg.ACLResourcePatternTypeAny
		match      = kmsg.ACLResourcePatternTypeMatch
		anyType    = kmsg.ACLResourceTypeAny
		anyOp      = kmsg.ACLOperationAny
		anyPerm    = kmsg.ACLPermissionTypeAny
	)
	f := func(rt kmsg.ACLResourceType, name *string, pt kmsg.ACLResourcePatternType) Filter {
		return Filter{ResourceType: rt, ResourceName: name, PatternType: pt, Operation: anyOp, Permission: anyPerm}
	}
	ordersLit := lit(topic, "orders", alice, h1, read, allow)
	starLit := lit(topic, "*", alice, h1, read, allow)
	ordPre := pre(topic, "ord", alice, h1, read, allow)
	ordersEUPre := pre(topic, "orders-eu", alice, h1, read, allow)
	cases := []struct {
		name   string
		ref    string
		filter Filter
		b      Binding
		want   bool
	}{
		{name: "AnyFilter", ref: "AclBindingFilter.ANY", filter: AnyFilter, b: ordPre, want: true},
		{name: "type ANY", ref: "ResourcePatternFilter.matches", filter: f(anyType, nil, anyPattern), b: lit(group, "g", bob, "*", read, deny), want: true},
		{name: "type differs", ref: "ResourcePatternFilter.matches", filter: f(group, nil, anyPattern), b: ordersLit, want: false},
		{name: "LITERAL filter, exact name", ref: "ResourcePatternFilter.matches", filter: f(topic, ptr("orders"), literal), b: ordersLit, want: true},
		{name: "LITERAL filter skips prefixed of same name", ref: "ResourcePatternFilter.matches", filter: f(topic, ptr("ord"), literal), b: ordPre, want: false},
		{name: "LITERAL filter does not expand wildcard", ref: "ResourcePatternFilter.matches", filter: f(topic, ptr("orders"), literal), b: starLit, want: false},
		{name: "PREFIXED filter is exact on the prefix", ref: "ResourcePatternFilter.matches", filter: f(topic, ptr("orders"), prefixed), b: ordPre, want: false},
		{name: "PREFIXED filter same prefix", ref: "ResourcePatternFilter.matches", filter: f(topic, ptr("ord"), prefixed), b: ordPre, want: true},
		{name: "ANY pattern with name is exact", ref: "ResourcePatternFilter.matches", filter: f(topic, ptr("ord"), anyPattern), b: ordPre, want: true},
		{name: "ANY pattern with name does not expand", ref: "ResourcePatternFilter.matches", filter: f(topic, ptr("orders"), anyPattern), b: ordPre, want: false},
		{name: "MATCH literal same name", ref: "KIP-290 MATCH", filter: f(topic, ptr("orders"), match), b: ordersLit, want: true},
		{name: "MATCH literal wildcard", ref: "KIP-290 MATCH", filter: f(topic, ptr("orders"), match), b: starLit, want: true},
		{name: "MATCH prefixed the name starts with", ref: "KIP-290 MATCH", filter: f(topic, ptr("orders"), match), b: ordPre, want: true},
		{name: "MATCH prefixed longer than name", ref: "KIP-290 MATCH", filter: f(topic, ptr("orders"), match), b: ordersEUPre, want: false},
		{name: "MATCH literal other name", ref: "KIP-290 MATCH", filter: f(topic, ptr("orders"), match), b: lit(topic, "order", alice, h1, read, allow), want: false},
		{name: "MATCH without name", ref: "KIP-290 MATCH", filter: f(topic, nil, match), b: ordersEUPre, want: true},
		{name: "principal exact", ref: "AccessControlEntryFilter.matches", filter: Filter{ResourceType: anyType, PatternType: anyPattern, Principal: ptr(alice), Operation: anyOp, Permission: anyPerm}, b: ordersLit, want: true},
		{name: "User:* filter is not a wildcard", ref: "AccessControlEntryFilter.matches", filter: Filter{ResourceType: anyType, PatternType: anyPattern, Principal: ptr("User:*"), Operation: anyOp, Permission: anyPerm}, b: ordersLit, want: false},
		{name: "host differs", ref: "AccessControlEntryFilter.matches", filter: Filter{ResourceType: anyType, PatternType: anyPattern, Host: ptr("*"), Operation: anyOp, Permission: anyPerm}, b: ordersLit, want: false},
		{name: "operation ALL matches only ALL", ref: "AccessControlEntryFilter.matches", filter: Filter{ResourceType: anyType, PatternType: anyPattern, Operation: all, Permission: anyPerm}, b: ordersLit, want: false},
		{name: "operation exact", ref: "AccessControlEntryFilter.matches", filter: Filter{ResourceType: anyType, PatternType: anyPattern, Operation: read, Permission: anyPerm}, b: ordersLit, want: true},
		{name: "permission differs", ref: "AccessControlEntryFilter.matches", filter: Filter{ResourceType: anyType, PatternType: anyPattern, Operation: anyOp, Permission: deny}, b: ordersLit, want: false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// Reference: Kafka AclBindingFilter.matches (rule named in c.ref).
			if err := c.filter.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if got := c.filter.Matches(c.b); got != c.want {
				t.Fatalf("%s: %+v.Matches(%v) = %v, want %v", c.ref, c.filter, c.b, got, c.want)
			}
		})
	}
}

func TestFilterValidateRefusesUnknown(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*Filter)
	}{
		{"resource type UNKNOWN", func(f *Filter) { f.ResourceType = kmsg.ACLResourceTypeUnknown }},
		{"resource type out of range", func(f *Filter) { f.ResourceType = 9 }},
		{"pattern type UNKNOWN", func(f *Filter) { f.PatternType = kmsg.ACLResourcePatternTypeUnknown }},
		{"pattern type out of range", func(f *Filter) { f.PatternType = 5 }},
		{"operation UNKNOWN", func(f *Filter) { f.Operation = kmsg.ACLOperationUnknown }},
		{"permission UNKNOWN", func(f *Filter) { f.Permission = kmsg.ACLPermissionTypeUnknown }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// Reference: Kafka AclControlManager.validateFilter (isUnknown).
			f := AnyFilter
			c.mutate(&f)
			if err := f.Validate(); !errors.Is(err, ErrInvalidFilter) {
				t.Fatalf("Validate(%+v) = %v, want ErrInvalidFilter", f, err)
			}
		})
	}
}

func TestImageMatchingAndBindings(t *testing.T) {
	bs := []Binding{
		lit(topic, "b", alice, "*", read, allow),
		lit(topic, "a", alice, "*", read, allow),
		lit(topic, "a", alice, "*", read, allow), // duplicate
		{ResourceType: topic, ResourceName: "", PatternType: literal, Principal: alice, Host: "*", Operation: read, Permission: allow}, // invalid
	}
	img := NewImage(bs)
	if img.Len() != 2 {
		t.Fatalf("Len = %d, want 2 (duplicate and invalid binding dropped)", img.Len())
	}
	got := img.Bindings()
	if got[0].ResourceName != "a" || got[1].ResourceName != "b" {
		t.Fatalf("Bindings = %v, want sorted by name", got)
	}
	got[0].ResourceName = "mutated"
	if img.Bindings()[0].ResourceName != "a" {
		t.Fatal("Bindings returned the image's own slice")
	}
	if !img.Contains(bs[0]) || img.Contains(bs[3]) {
		t.Fatal("Contains wrong")
	}
	m := img.Matching(Filter{ResourceType: topic, ResourceName: ptr("b"), PatternType: kmsg.ACLResourcePatternTypeMatch, Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny})
	if len(m) != 1 || m[0] != bs[0] {
		t.Fatalf("Matching = %v", m)
	}
}
