package acl

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	alice = "User:alice"
	bob   = "User:bob"
	h1    = "10.0.0.1"
	h2    = "10.0.0.2"
)

type authCase struct {
	name     string
	ref      string // the Kafka rule checked
	acls     []Binding
	cfg      Config
	prin     string
	host     string
	op       kmsg.ACLOperation
	rt       kmsg.ACLResourceType
	resource string
	want     bool
}

func TestAuthorizeFollowsKafkaRules(t *testing.T) {
	const sad = "StandardAuthorizerData.findAclRule/checkSection"
	const fr = "StandardAuthorizerData.findResult"
	everyone := Config{AllowEveryoneIfNoACLFound: true}
	cases := []authCase{
		{name: "literal allow", ref: sad, acls: []Binding{lit(topic, "orders", alice, "*", read, allow)},
			prin: alice, host: h1, op: read, rt: topic, resource: "orders", want: true},
		{name: "literal names another topic: no ACL, default deny", ref: "allow.everyone.if.no.acl.found=false",
			acls: []Binding{lit(topic, "payments", alice, "*", read, allow)},
			prin: alice, host: h1, op: read, rt: topic, resource: "orders", want: false},
		{name: "no ACL for resource, allow everyone", ref: "allow.everyone.if.no.acl.found=true", cfg: everyone,
			acls: []Binding{lit(topic, "payments", alice, "*", read, allow)},
			prin: bob, host: h1, op: write, rt: topic, resource: "orders", want: true},
		{name: "empty image, allow everyone", ref: "allow.everyone.if.no.acl.found=true", cfg: everyone,
			prin: bob, host: h1, op: write, rt: topic, resource: "orders", want: true},
		{name: "empty image, default deny", ref: "allow.everyone.if.no.acl.found=false",
			prin: bob, host: h1, op: write, rt: topic, resource: "orders", want: false},
		{name: "ACLs only for another principal deny even with allow everyone", ref: "MatchingRuleBuilder.build: hasResourceAcls", cfg: everyone,
			acls: []Binding{lit(topic, "orders", alice, "*", read, allow)},
			prin: bob, host: h1, op: read, rt: topic, resource: "orders", want: false},
		{name: "ACL for another operation denies even with allow everyone", ref: "MatchingRuleBuilder.build: hasResourceAcls", cfg: everyone,
			acls: []Binding{lit(topic, "orders", alice, "*", write, allow)},
			prin: alice, host: h1, op: read, rt: topic, resource: "orders", want: false},
		{name: "ACL on another resource type does not apply", ref: sad, cfg: everyone,
			acls: []Binding{lit(group, "orders", alice, "*", read, deny)},
			prin: alice, host: h1, op: read, rt: topic, resource: "orders", want: true},
		{name: "literal wildcard resource applies to every name", ref: "ResourcePattern.WILDCARD_RESOURCE",
			acls: []Binding{lit(topic, "*", alice, "*", read, allow)},
			prin: alice, host: h1, op: read, rt: topic, resource: "orders", want: true},
		{name: "prefixed star is not a wildcard", ref: "KIP-290", cfg: everyone,
			acls: []Binding{pre(topic, "*", alice, "*", read, deny)},
			prin: alice, host: h1, op: read, rt: topic, resource: "orders", want: true},
		{name: "wildcard principal User:*", ref: "WILDCARD_KAFKA_PRINCIPAL",
			acls: []Binding{lit(topic, "orders", "User:*", "*", read, allow)},
			prin: bob, host: h1, op: read, rt: topic, resource: "orders", want: true},
		{name: "Group:* is not a wildcard principal", ref: "StandardAuthorizerData.matchingPrincipals",
			acls: []Binding{lit(topic, "orders", "Group:*", "*", read, allow)},
			prin: bob, host: h1, op: read, rt: topic, resource: "orders", want: false},
		{name: "host must match", ref: fr, cfg: everyone,
			acls: []Binding{lit(topic, "orders", alice, h2, read, allow)},
			prin: alice, host: h1, op: read, rt: topic, resource: "orders", want: false},
		{name: "exact host matches", ref: fr,
			acls: []Binding{lit(topic, "orders", alice, h1, read, allow)},
			prin: alice, host: h1, op: read, rt: topic, resource: "orders", want: true},
		{name: "prefixed applies to longer name", ref: "KIP-290",
			acls: []Binding{pre(topic, "orders-", alice, "*", read, allow)},
			prin: alice, host: h1, op: read, rt: topic, resource: "orders-eu", want: true},
		{name: "prefixed equal to name applies", ref: "KIP-290",
			acls: []Binding{pre(topic, "orders", alice, "*", read, allow)},
			prin: alice, host: h1, op: read, rt: topic, resource: "orders", want: true},
		{name: "prefixed longer than name does not apply", ref: "KIP-290", cfg: everyone,
			acls: []Binding{pre(topic, "orders-eu-1", alice, "*", read, deny)},
			prin: alice, host: h1, op: read, rt: topic, resource: "orders-eu", want: true},
		{name: "short prefix applies", ref: "KIP-290",
			acls: []Binding{pre(topic, "o", alice, "*", read, allow), pre(topic, "orders-eu-1", alice, "*", read, deny)},
			prin: alice, host: h1, op: read, rt: topic, resource: "orders-eu", want: true},
		{name: "literal is not a prefix", ref: sad, cfg: everyone,
			acls: []Binding{lit(topic, "orders", alice, "*", read, deny)},
			prin: alice, host: h1, op: read, rt: topic, resource: "orders-eu", want: true},
		{name: "prefixed deny beats literal allow", ref: "StandardAuthorizerData.authorize: any DENY wins",
			acls: []Binding{lit(topic, "orders-eu", alice, "*", read, allow), pre(topic, "orders", alice, "*", read, deny)},
			prin: alice, host: h1, op: read, rt: topic, resource: "orders-eu", want: false},
		{name: "wildcard deny beats prefixed allow", ref: "StandardAuthorizerData.authorize: any DENY wins",
			acls: []Binding{pre(topic, "orders", alice, "*", read, allow), lit(topic, "*", alice, "*", read, deny)},
			prin: alice, host: h1, op: read, rt: topic, resource: "orders-eu", want: false},
		{name: "literal deny beats wildcard allow", ref: "StandardAuthorizerData.authorize: any DENY wins",
			acls: []Binding{lit(topic, "*", alice, "*", all, allow), lit(topic, "orders", alice, "*", read, deny)},
			prin: alice, host: h1, op: read, rt: topic, resource: "orders", want: false},
		{name: "deny for User:* beats allow for the principal", ref: "StandardAuthorizerData.authorize: any DENY wins",
			acls: []Binding{lit(topic, "orders", alice, h1, read, allow), lit(topic, "orders", "User:*", "*", read, deny)},
			prin: alice, host: h1, op: read, rt: topic, resource: "orders", want: false},
		{name: "deny from another host does not apply", ref: fr,
			acls: []Binding{lit(topic, "orders", alice, "*", read, allow), lit(topic, "orders", alice, h2, read, deny)},
			prin: alice, host: h1, op: read, rt: topic, resource: "orders", want: true},
		{name: "deny for another principal does not apply", ref: fr,
			acls: []Binding{lit(topic, "orders", alice, "*", read, allow), lit(topic, "orders", bob, "*", read, deny)},
			prin: alice, host: h1, op: read, rt: topic, resource: "orders", want: true},
		{name: "ALL allows any operation", ref: fr,
			acls: []Binding{pre(topic, "ord", alice, "*", all, allow)},
			prin: alice, host: h1, op: alterCfgs, rt: topic, resource: "orders", want: true},
		{name: "DENY ALL beats ALLOW READ", ref: fr,
			acls: []Binding{lit(topic, "orders", alice, "*", read, allow), lit(topic, "orders", alice, "*", all, deny)},
			prin: alice, host: h1, op: read, rt: topic, resource: "orders", want: false},
		{name: "READ implies DESCRIBE", ref: fr + " IMPLIES_DESCRIBE",
			acls: []Binding{lit(topic, "orders", alice, "*", read, allow)},
			prin: alice, host: h1, op: describe, rt: topic, resource: "orders", want: true},
		{name: "WRITE implies DESCRIBE", ref: fr + " IMPLIES_DESCRIBE",
			acls: []Binding{lit(topic, "orders", alice, "*", write, allow)},
			prin: alice, host: h1, op: describe, rt: topic, resource: "orders", want: true},
		{name: "DELETE implies DESCRIBE", ref: fr + " IMPLIES_DESCRIBE",
			acls: []Binding{lit(topic, "orders", alice, "*", del, allow)},
			prin: alice, host: h1, op: describe, rt: topic, resource: "orders", want: true},
		{name: "ALTER implies DESCRIBE", ref: fr + " IMPLIES_DESCRIBE",
			acls: []Binding{lit(topic, "orders", alice, "*", alter, allow)},
			prin: alice, host: h1, op: describe, rt: topic, resource: "orders", want: true},
		{name: "CREATE does not imply DESCRIBE", ref: fr + " IMPLIES_DESCRIBE",
			acls: []Binding{lit(topic, "orders", alice, "*", create, allow)},
			prin: alice, host: h1, op: describe, rt: topic, resource: "orders", want: false},
		{name: "DESCRIBE does not imply READ", ref: fr,
			acls: []Binding{lit(topic, "orders", alice, "*", describe, allow)},
			prin: alice, host: h1, op: read, rt: topic, resource: "orders", want: false},
		{name: "ALTER_CONFIGS implies DESCRIBE_CONFIGS", ref: fr + " IMPLIES_DESCRIBE_CONFIGS",
			acls: []Binding{lit(topic, "orders", alice, "*", alterCfgs, allow)},
			prin: alice, host: h1, op: describeCfgs, rt: topic, resource: "orders", want: true},
		{name: "DESCRIBE_CONFIGS does not imply ALTER_CONFIGS", ref: fr,
			acls: []Binding{lit(topic, "orders", alice, "*", describeCfgs, allow)},
			prin: alice, host: h1, op: alterCfgs, rt: topic, resource: "orders", want: false},
		{name: "ALTER does not imply DESCRIBE_CONFIGS", ref: fr,
			acls: []Binding{lit(topic, "orders", alice, "*", alter, allow)},
			prin: alice, host: h1, op: describeCfgs, rt: topic, resource: "orders", want: false},
		{name: "DENY READ does not deny DESCRIBE", ref: fr + ": implications apply to ALLOW only",
			acls: []Binding{lit(topic, "orders", alice, "*", describe, allow), lit(topic, "orders", alice, "*", read, deny)},
			prin: alice, host: h1, op: describe, rt: topic, resource: "orders", want: true},
		{name: "DENY ALTER_CONFIGS does not deny DESCRIBE_CONFIGS", ref: fr + ": implications apply to ALLOW only",
			acls: []Binding{lit(topic, "orders", alice, "*", describeCfgs, allow), lit(topic, "orders", alice, "*", alterCfgs, deny)},
			prin: alice, host: h1, op: describeCfgs, rt: topic, resource: "orders", want: true},
		{name: "super user beats DENY", ref: "super.users", cfg: Config{SuperUsers: []string{"User:admin"}},
			acls: []Binding{lit(topic, "*", "User:*", "*", all, deny)},
			prin: "User:admin", host: h1, op: read, rt: topic, resource: "orders", want: true},
		{name: "super user match is exact", ref: "super.users", cfg: Config{SuperUsers: []string{"User:admin"}},
			prin: "User:admin2", host: h1, op: read, rt: topic, resource: "orders", want: false},
		{name: "operation ANY is refused", ref: "programming error", cfg: everyone,
			prin: alice, host: h1, op: kmsg.ACLOperationAny, rt: topic, resource: "orders", want: false},
		{name: "operation UNKNOWN is refused even for a super user", ref: "programming error",
			cfg:  Config{SuperUsers: []string{alice}, AllowEveryoneIfNoACLFound: true},
			prin: alice, host: h1, op: kmsg.ACLOperationUnknown, rt: topic, resource: "orders", want: false},
		{name: "resource type ANY is refused", ref: "programming error", cfg: everyone,
			prin: alice, host: h1, op: read, rt: kmsg.ACLResourceTypeAny, resource: "orders", want: false},
		{name: "cluster CREATE", ref: "Operations and Resources on Protocols: CreateTopics",
			acls: []Binding{lit(cluster, ClusterName, alice, "*", create, allow)},
			prin: alice, host: h1, op: create, rt: cluster, resource: ClusterName, want: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// Reference: Kafka StandardAuthorizerData (rule named in c.ref).
			a := NewAuthorizer(c.cfg, NewImage(c.acls))
			if got := a.Authorize(c.prin, c.host, c.op, c.rt, c.resource); got != c.want {
				t.Fatalf("%s: Authorize(%s, %s, %s, %s, %q) = %v, want %v; acls %v", c.ref, c.prin, c.host, c.op, c.rt, c.resource, got, c.want, c.acls)
			}
		})
	}
}

func TestAuthorizeByResourceTypeFollowsKafkaDefault(t *testing.T) {
	// Reference: Kafka Authorizer.authorizeByResourceType (KIP-679).
	const ref = "Authorizer.authorizeByResourceType"
	cases := []struct {
		name string
		acls []Binding
		cfg  Config
		prin string
		op   kmsg.ACLOperation
		want bool
	}{
		{name: "no ACLs, default deny", prin: alice, op: write, want: false},
		{name: "no ACLs, allow everyone via the hardcode resource", cfg: Config{AllowEveryoneIfNoACLFound: true}, prin: alice, op: write, want: true},
		{name: "super user", cfg: Config{SuperUsers: []string{alice}}, acls: []Binding{lit(topic, "*", alice, "*", all, deny)}, prin: alice, op: write, want: true},
		{name: "literal allow on some topic", acls: []Binding{lit(topic, "a", alice, "*", write, allow)}, prin: alice, op: write, want: true},
		{name: "ALL allow counts", acls: []Binding{lit(topic, "a", alice, "*", all, allow)}, prin: alice, op: write, want: true},
		{name: "User:* allow counts", acls: []Binding{lit(topic, "a", "User:*", "*", write, allow)}, prin: alice, op: write, want: true},
		{name: "allow for another principal", acls: []Binding{lit(topic, "a", bob, "*", write, allow)}, prin: alice, op: write, want: false},
		{name: "allow from another host", acls: []Binding{lit(topic, "a", alice, h2, write, allow)}, prin: alice, op: write, want: false},
		{name: "allow on another resource type", acls: []Binding{lit(group, "a", alice, "*", all, allow)}, prin: alice, op: write, want: false},
		{name: "literal deny of the same name", acls: []Binding{lit(topic, "a", alice, "*", write, allow), lit(topic, "a", alice, "*", write, deny)}, prin: alice, op: write, want: false},
		{name: "literal deny of another name", acls: []Binding{lit(topic, "a", alice, "*", write, allow), lit(topic, "b", alice, "*", write, deny)}, prin: alice, op: write, want: true},
		{name: "prefixed deny covering literal allow", acls: []Binding{lit(topic, "abc", alice, "*", write, allow), pre(topic, "ab", "User:*", "*", write, deny)}, prin: alice, op: write, want: false},
		{name: "prefixed deny equal to literal allow", acls: []Binding{lit(topic, "abc", alice, "*", write, allow), pre(topic, "abc", alice, "*", write, deny)}, prin: alice, op: write, want: false},
		{name: "prefixed deny longer than literal allow", acls: []Binding{lit(topic, "abc", alice, "*", write, allow), pre(topic, "abcd", alice, "*", write, deny)}, prin: alice, op: write, want: true},
		{name: "prefixed deny covering prefixed allow", acls: []Binding{pre(topic, "ab", alice, "*", write, allow), pre(topic, "a", alice, "*", write, deny)}, prin: alice, op: write, want: false},
		{name: "literal deny does not block prefixed allow", acls: []Binding{pre(topic, "ab", alice, "*", write, allow), lit(topic, "ab", alice, "*", write, deny)}, prin: alice, op: write, want: true},
		{name: "wildcard deny beats any allow", acls: []Binding{lit(topic, "a", alice, "*", write, allow), lit(topic, "*", "User:*", "*", all, deny)}, prin: alice, op: write, want: false},
		{name: "wildcard allow beats literal deny", acls: []Binding{lit(topic, "*", alice, "*", write, allow), lit(topic, "a", alice, "*", write, deny)}, prin: alice, op: write, want: true},
		{name: "one of two allows survives", acls: []Binding{lit(topic, "a", alice, "*", write, allow), lit(topic, "a", alice, "*", write, deny), pre(topic, "b", alice, "*", write, allow)}, prin: alice, op: write, want: true},
		{name: "no implication in the scan", acls: []Binding{lit(topic, "a", alice, "*", read, allow)}, prin: alice, op: describe, want: false},
		{name: "implication through the hardcode resource", acls: []Binding{lit(topic, "*", alice, "*", read, allow)}, prin: alice, op: describe, want: true},
		{name: "prefix of hardcode counts through Authorize", acls: []Binding{pre(topic, "hard", alice, "*", read, allow)}, prin: alice, op: describe, want: true},
		{name: "deny for another operation does not count", acls: []Binding{lit(topic, "a", alice, "*", write, allow), lit(topic, "*", alice, "*", read, deny)}, prin: alice, op: write, want: true},
		{name: "operation ANY is refused", cfg: Config{AllowEveryoneIfNoACLFound: true}, prin: alice, op: kmsg.ACLOperationAny, want: false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := NewAuthorizer(c.cfg, NewImage(c.acls))
			if got := a.AuthorizeByResourceType(c.prin, h1, c.op, topic); got != c.want {
				t.Fatalf("%s: AuthorizeByResourceType(%s, %s, %s, TOPIC) = %v, want %v; acls %v", ref, c.prin, h1, c.op, got, c.want, c.acls)
			}
		})
	}
}

func TestIdempotentWriteFallbackToWriteOnAnyTopic(t *testing.T) {
	// Reference: KIP-679; KafkaApis.handleInitProducerIdRequest.
	a := NewAuthorizer(Config{}, NewImage([]Binding{lit(topic, "orders", alice, "*", write, allow)}))
	if a.Authorize(alice, h1, idemWrite, cluster, ClusterName) {
		t.Fatal("IDEMPOTENT_WRITE on the cluster allowed without an ACL")
	}
	if !a.AuthorizeByResourceType(alice, h1, write, topic) {
		t.Fatal("WRITE on some topic not found")
	}
}

func TestSetImageUnderConcurrentAuthorize(t *testing.T) {
	allowAll := NewImage([]Binding{lit(topic, "orders", alice, "*", read, allow)})
	denyAll := NewImage([]Binding{lit(topic, "orders", alice, "*", read, allow), lit(topic, "*", "User:*", "*", all, deny)})
	a := NewAuthorizer(Config{}, allowAll)
	var (
		wg      sync.WaitGroup
		stop    atomic.Bool
		allowed atomic.Int64
		denied  atomic.Int64
	)
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				if a.Authorize(alice, h1, read, topic, "orders") {
					allowed.Add(1)
				} else {
					denied.Add(1)
				}
				if img := a.Image(); img != allowAll && img != denyAll && img != emptyImage {
					t.Errorf("Image() = %p, not one of the images set", img)
					return
				}
			}
		}()
	}
	for i := range 2000 {
		if i%2 == 0 {
			a.SetImage(denyAll)
		} else {
			a.SetImage(allowAll)
		}
	}
	a.SetImage(nil)
	if a.Image().Len() != 0 {
		t.Errorf("SetImage(nil) left %d bindings", a.Image().Len())
	}
	a.SetImage(denyAll)
	stop.Store(true)
	wg.Wait()
	if a.Authorize(alice, h1, read, topic, "orders") {
		t.Fatal("allowed after the deny image was set")
	}
	t.Logf("allowed %d, denied %d", allowed.Load(), denied.Load())
}

func TestCanonicalHost(t *testing.T) {
	for in, want := range map[string]string{
		"0:0:0:0:0:0:0:1":    "::1",
		"::FFFF:127.0.0.1":   "127.0.0.1",
		"FE80:0:0:0:0:0:0:1": "fe80::1",
		"10.0.0.7":           "10.0.0.7",
		"*":                  "*",
		"host.example":       "host.example",
	} {
		if got := CanonicalHost(in); got != want {
			t.Errorf("CanonicalHost(%q) = %q, want %q", in, got, want)
		}
	}
}
