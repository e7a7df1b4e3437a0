package acl

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestValidateAcceptsWhatCreateAclsAccepts(t *testing.T) {
	good := lit(topic, "orders", alice, "*", read, allow)
	cases := []struct {
		name   string
		ref    string
		mutate func(*Binding)
		ok     bool
	}{
		{name: "literal topic", ref: "validateNewAcl", mutate: func(*Binding) {}, ok: true},
		{name: "prefixed deny from an IP", ref: "validateNewAcl", mutate: func(b *Binding) { b.PatternType, b.Permission, b.Host = prefixed, deny, h1 }, ok: true},
		{name: "wildcard resource and principal", ref: "validateNewAcl", mutate: func(b *Binding) { b.ResourceName, b.Principal = "*", "User:*" }, ok: true},
		{name: "op not supported by type is accepted", ref: "AclEntry.supportedOperations is enforced only by AclCommand", mutate: func(b *Binding) { b.Operation = kmsg.ACLOperationClusterAction }, ok: true},
		{name: "cluster named kafka-cluster", ref: "AclApis.handleCreateAcls", mutate: func(b *Binding) { b.ResourceType, b.ResourceName, b.Operation = cluster, ClusterName, idemWrite }, ok: true},
		{name: "principal name with colon", ref: "SecurityUtils.parseKafkaPrincipal splits at the first colon", mutate: func(b *Binding) { b.Principal = "User:CN=a:b" }, ok: true},
		{name: "resource type UNKNOWN", ref: "validateNewAcl", mutate: func(b *Binding) { b.ResourceType = kmsg.ACLResourceTypeUnknown }},
		{name: "resource type ANY", ref: "validateNewAcl", mutate: func(b *Binding) { b.ResourceType = kmsg.ACLResourceTypeAny }},
		{name: "resource type out of range", ref: "ResourceType.fromCode", mutate: func(b *Binding) { b.ResourceType = 42 }},
		{name: "pattern MATCH", ref: "validateNewAcl", mutate: func(b *Binding) { b.PatternType = kmsg.ACLResourcePatternTypeMatch }},
		{name: "pattern ANY", ref: "validateNewAcl", mutate: func(b *Binding) { b.PatternType = kmsg.ACLResourcePatternTypeAny }},
		{name: "pattern UNKNOWN", ref: "validateNewAcl", mutate: func(b *Binding) { b.PatternType = kmsg.ACLResourcePatternTypeUnknown }},
		{name: "operation ANY", ref: "validateNewAcl", mutate: func(b *Binding) { b.Operation = kmsg.ACLOperationAny }},
		{name: "operation UNKNOWN", ref: "validateNewAcl", mutate: func(b *Binding) { b.Operation = kmsg.ACLOperationUnknown }},
		{name: "operation out of range", ref: "AclOperation.fromCode", mutate: func(b *Binding) { b.Operation = 15 }},
		{name: "permission ANY", ref: "validateNewAcl", mutate: func(b *Binding) { b.Permission = kmsg.ACLPermissionTypeAny }},
		{name: "permission UNKNOWN", ref: "validateNewAcl", mutate: func(b *Binding) { b.Permission = kmsg.ACLPermissionTypeUnknown }},
		{name: "empty resource name", ref: "validateNewAcl", mutate: func(b *Binding) { b.ResourceName = "" }},
		{name: "cluster with another name", ref: "AclApis.handleCreateAcls", mutate: func(b *Binding) { b.ResourceType, b.ResourceName = cluster, "orders" }},
		{name: "prefixed cluster", ref: "AclApis.handleCreateAcls", mutate: func(b *Binding) { b.ResourceType, b.ResourceName, b.PatternType = cluster, "kafka-", prefixed }},
		{name: "principal without colon", ref: "StandardAcl.kafkaPrincipal", mutate: func(b *Binding) { b.Principal = "alice" }},
		{name: "principal with empty name", ref: "principalType:principalName", mutate: func(b *Binding) { b.Principal = "User:" }},
		{name: "principal with empty type", ref: "principalType:principalName", mutate: func(b *Binding) { b.Principal = ":alice" }},
		{name: "empty host", ref: "host", mutate: func(b *Binding) { b.Host = "" }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// Reference: Kafka AclControlManager.validateNewAcl, AclApis.handleCreateAcls.
			b := good
			c.mutate(&b)
			err := b.Validate()
			if c.ok && err != nil {
				t.Fatalf("%s: Validate(%v) = %v, want nil", c.ref, b, err)
			}
			if !c.ok && !errors.Is(err, ErrInvalidBinding) {
				t.Fatalf("%s: Validate(%v) = %v, want ErrInvalidBinding", c.ref, b, err)
			}
			if _, err := Unmarshal(b.Marshal()); (err == nil) != c.ok {
				t.Fatalf("Unmarshal(Marshal(%v)) = %v, want ok=%v", b, err, c.ok)
			}
		})
	}
}

func TestMarshalRoundTripsAndIsStable(t *testing.T) {
	b := pre(txnID, `tx-"quoted"-ü`, "User:CN=a,O=b", h1, write, deny)
	data := b.Marshal()
	const want = `{"v":1,"resourceType":5,"resourceName":"tx-\"quoted\"-ü","patternType":4,"principal":"User:CN=a,O=b","host":"10.0.0.1","operation":4,"permission":2}`
	if string(data) != want {
		t.Fatalf("Marshal = %s\nwant      %s", data, want)
	}
	got, err := Unmarshal(data)
	if err != nil {
		t.Fatal(err)
	}
	if got != b {
		t.Fatalf("Unmarshal(Marshal(b)) = %v, want %v", got, b)
	}
}

func TestUnmarshalRefusesCorruptData(t *testing.T) {
	for _, in := range []string{
		``,
		`{`,
		`[]`,
		`{"v":2,"resourceType":2,"resourceName":"a","patternType":3,"principal":"User:a","host":"*","operation":3,"permission":3}`,
		`{"v":1,"resourceType":2,"resourceName":"a","patternType":3,"principal":"User:a","host":"*","operation":3,"permission":3,"extra":1}`,
		`{"v":1,"resourceType":2,"resourceName":"a","patternType":3,"principal":"User:a","host":"*","operation":3,"permission":3} {}`,
		`{"v":1,"resourceType":2000,"resourceName":"a","patternType":3,"principal":"User:a","host":"*","operation":3,"permission":3}`,
	} {
		if _, err := Unmarshal([]byte(in)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("Unmarshal(%q) = %v, want ErrCorrupt", in, err)
		}
	}
}

func TestKeyIsStableAndDistinct(t *testing.T) {
	b := lit(topic, "orders", alice, "*", read, allow)
	// The key names the binding in storage: it must never change.
	const want = "88d7a0dbe86bd899da6af801502ded5ea4b6d9a38cc48bb98ded63042385d038"
	if k := b.Key(); k != want {
		t.Fatalf("Key = %q, want %q: a changed key orphans every stored binding", k, want)
	}
	distinct := []Binding{
		b,
		lit(topic, "orders", alice, "*", read, deny),
		lit(topic, "orders", alice, "*", write, allow),
		lit(topic, "orders", alice, h1, read, allow),
		lit(topic, "orders", bob, "*", read, allow),
		pre(topic, "orders", alice, "*", read, allow),
		lit(group, "orders", alice, "*", read, allow),
		lit(topic, "order", alice, "*", read, allow),
		// Field boundaries must not be ambiguous.
		lit(topic, "ab", "User:c", "*", read, allow),
		lit(topic, "a", "bUser:c", "*", read, allow),
		lit(topic, "a|1:b", "User:c", "*", read, allow),
	}
	seen := map[string]Binding{}
	for _, d := range distinct {
		k := d.Key()
		if prev, ok := seen[k]; ok {
			t.Fatalf("Key(%v) == Key(%v)", d, prev)
		}
		seen[k] = d
	}
}
