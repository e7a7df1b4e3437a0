package acl

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// naiveAuthorize is a full-scan reference for Authorize, written from the
// rules in Kafka's StandardAuthorizerData without the index.
func naiveAuthorize(cfg Config, bs []Binding, principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	if op <= kmsg.ACLOperationAny || op > kmsg.ACLOperationDescribeTokens || rt <= kmsg.ACLResourceTypeAny || rt > kmsg.ACLResourceTypeUser {
		return false
	}
	for _, s := range cfg.SuperUsers {
		if s == principal {
			return true
		}
	}
	applies, allowed, denied := false, false, false
	for _, b := range bs {
		if b.ResourceType != rt {
			continue
		}
		switch {
		case b.PatternType == literal && (b.ResourceName == name || b.ResourceName == "*"):
		case b.PatternType == prefixed && strings.HasPrefix(name, b.ResourceName):
		default:
			continue
		}
		applies = true
		if b.Principal != principal && b.Principal != "User:*" {
			continue
		}
		if b.Host != "*" && b.Host != host {
			continue
		}
		opOK := b.Operation == all || b.Operation == op
		if !opOK && b.Permission == allow {
			switch op {
			case describe:
				opOK = b.Operation == read || b.Operation == write || b.Operation == del || b.Operation == alter
			case describeCfgs:
				opOK = b.Operation == alterCfgs
			}
		}
		if !opOK {
			continue
		}
		if b.Permission == deny {
			denied = true
		} else {
			allowed = true
		}
	}
	switch {
	case denied:
		return false
	case allowed:
		return true
	case applies:
		return false
	}
	return cfg.AllowEveryoneIfNoACLFound
}

// naiveAuthorizeByResourceType is a direct transcription of the steps of
// Kafka's default Authorizer.authorizeByResourceType, over all bindings.
func naiveAuthorizeByResourceType(cfg Config, bs []Binding, principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType) bool {
	if naiveAuthorize(cfg, bs, principal, host, op, rt, "hardcode") {
		return true
	}
	denyLit, denyPre, allowLit, allowPre := map[string]bool{}, map[string]bool{}, map[string]bool{}, map[string]bool{}
	wildAllow := false
	for _, b := range bs {
		if b.ResourceType != rt || (b.Host != host && b.Host != "*") || (b.Principal != principal && b.Principal != "User:*") ||
			(b.Operation != op && b.Operation != all) {
			continue
		}
		switch {
		case b.Permission == deny && b.PatternType == literal && b.ResourceName == "*":
			return false
		case b.Permission == deny && b.PatternType == literal:
			denyLit[b.ResourceName] = true
		case b.Permission == deny:
			denyPre[b.ResourceName] = true
		case b.PatternType == literal && b.ResourceName == "*":
			wildAllow = true
		case b.PatternType == literal:
			allowLit[b.ResourceName] = true
		default:
			allowPre[b.ResourceName] = true
		}
	}
	if wildAllow {
		return true
	}
	dominated := func(s string) bool {
		for i := 1; i <= len(s); i++ {
			if denyPre[s[:i]] {
				return true
			}
		}
		return false
	}
	for s := range allowLit {
		if !denyLit[s] && !dominated(s) {
			return true
		}
	}
	for s := range allowPre {
		if !dominated(s) {
			return true
		}
	}
	return false
}

func randomBinding(r *rand.Rand, names, principals, hosts []string) Binding {
	ops := []kmsg.ACLOperation{all, read, write, create, del, alter, describe, describeCfgs, alterCfgs}
	b := Binding{
		ResourceType: []kmsg.ACLResourceType{topic, topic, topic, group}[r.IntN(4)],
		ResourceName: names[r.IntN(len(names))],
		PatternType:  []kmsg.ACLResourcePatternType{literal, prefixed}[r.IntN(2)],
		Principal:    principals[r.IntN(len(principals))],
		Host:         hosts[r.IntN(len(hosts))],
		Operation:    ops[r.IntN(len(ops))],
		Permission:   []kmsg.ACLPermissionType{allow, deny}[r.IntN(2)],
	}
	return b
}

func TestAuthorizeEqualsFullScanReference(t *testing.T) {
	names := []string{"*", "a", "ab", "abc", "abd", "b", "ba", "hard", "hardcode", "h"}
	reqNames := append([]string{"abcd", "x", "abdc", "bab"}, names...)
	principals := []string{alice, bob, "User:*", "Group:*"}
	hosts := []string{"*", h1, h2}
	ops := []kmsg.ACLOperation{all, read, write, create, del, alter, describe, describeCfgs, alterCfgs, idemWrite, kmsg.ACLOperationAny}
	iterations := 3000
	if testing.Short() {
		iterations = 300
	}
	for i := range iterations {
		r := rand.New(rand.NewPCG(uint64(i), 7))
		bs := make([]Binding, r.IntN(12))
		for j := range bs {
			bs[j] = randomBinding(r, names, principals, hosts)
		}
		cfg := Config{AllowEveryoneIfNoACLFound: r.IntN(2) == 0}
		if r.IntN(8) == 0 {
			cfg.SuperUsers = []string{bob}
		}
		a := NewAuthorizer(cfg, NewImage(bs))
		for range 20 {
			prin := []string{alice, bob}[r.IntN(2)]
			host := []string{h1, h2}[r.IntN(2)]
			op := ops[r.IntN(len(ops))]
			rt := []kmsg.ACLResourceType{topic, group}[r.IntN(2)]
			name := reqNames[r.IntN(len(reqNames))]
			if got, want := a.Authorize(prin, host, op, rt, name), naiveAuthorize(cfg, bs, prin, host, op, rt, name); got != want {
				t.Fatalf("seed %d: Authorize(%s, %s, %s, %s, %q) = %v, reference %v\ncfg %+v\nacls:\n%s", i, prin, host, op, rt, name, got, want, cfg, fmtBindings(bs))
			}
			if got, want := a.AuthorizeByResourceType(prin, host, op, rt), naiveAuthorizeByResourceType(cfg, bs, prin, host, op, rt); got != want && op != kmsg.ACLOperationAny {
				t.Fatalf("seed %d: AuthorizeByResourceType(%s, %s, %s, %s) = %v, reference %v\ncfg %+v\nacls:\n%s", i, prin, host, op, rt, got, want, cfg, fmtBindings(bs))
			}
		}
	}
}

func fmtBindings(bs []Binding) string {
	var sb strings.Builder
	for _, b := range bs {
		fmt.Fprintln(&sb, b)
	}
	return sb.String()
}
