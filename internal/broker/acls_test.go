package broker_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/acl"
	"samsa/internal/testutil"
)

// startSecureBroker starts a broker with the ACL authorizer on; the
// anonymous principal of its PLAINTEXT listener is a super user, so the
// tests may administer it.
func startSecureBroker(t *testing.T, overrides ...string) *testutil.Broker {
	t.Helper()
	return testutil.StartBroker(t, append([]string{
		"authorizer.class.name=samsa",
		"super.users=User:ANONYMOUS",
	}, overrides...)...)
}

// storedBindings decodes every ACL binding in the broker's metadata image.
func storedBindings(t *testing.T, b *testutil.Broker) []acl.Binding {
	t.Helper()
	img := b.Node.Image()
	var out []acl.Binding
	if img.ACLs == nil {
		return nil
	}
	for id, v := range img.ACLs.Bindings {
		bd, err := acl.Unmarshal(v)
		if err != nil {
			t.Fatalf("stored binding %s: %v", id, err)
		}
		if id != bd.Key() {
			t.Fatalf("binding %v stored under %s, want its key %s", bd, id, bd.Key())
		}
		out = append(out, bd)
	}
	slices.SortFunc(out, func(a, b acl.Binding) int { return strings.Compare(a.String(), b.String()) })
	return out
}

func describedStrings(rs kadm.DescribeACLsResults) []string {
	var out []string
	for _, r := range rs {
		for _, d := range r.Described {
			out = append(out, d.Type.String()+":"+d.Pattern.String()+":"+d.Name+" "+d.Principal+"@"+d.Host+" "+d.Permission.String()+" "+d.Operation.String())
		}
	}
	return out
}

func TestACLAPIsAnswerSecurityDisabledWithoutAuthorizer(t *testing.T) {
	t.Parallel()
	b := testutil.StartBroker(t)
	adm := b.Admin()
	ctx := ctxT(t, 30*time.Second)

	described, err := adm.DescribeACLs(ctx, kadm.NewACLs().AnyResource().ResourcePatternType(kadm.ACLPatternAny).Operations(kadm.OpAny).Allow().Deny().AllowHosts().DenyHosts())
	if err == nil && len(described) > 0 {
		err = described[0].Err
	}
	if !errors.Is(err, kerr.SecurityDisabled) {
		t.Fatalf("describe: err %v, want SECURITY_DISABLED", err)
	}
	created, err := adm.CreateACLs(ctx, kadm.NewACLs().Topics("t").Allow("User:alice").AllowHosts("*").Operations(kadm.OpRead))
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	for _, r := range created {
		if !errors.Is(r.Err, kerr.SecurityDisabled) {
			t.Fatalf("create result %+v, want SECURITY_DISABLED", r)
		}
	}
	deleted, err := adm.DeleteACLs(ctx, kadm.NewACLs().Topics("t").Allow("User:alice").AllowHosts("*").Operations(kadm.OpRead))
	if err != nil {
		t.Fatalf("delete: %v", err)
	}
	for _, r := range deleted {
		if !errors.Is(r.Err, kerr.SecurityDisabled) {
			t.Fatalf("delete result %+v, want SECURITY_DISABLED", r)
		}
	}
	if got := storedBindings(t, b); len(got) != 0 {
		t.Fatalf("stored %v without an authorizer", got)
	}
}

func TestCreateACLsStoresBindingsThatDescribeAndDeleteFind(t *testing.T) {
	t.Parallel()
	b := startSecureBroker(t)
	adm := b.Admin()
	ctx := ctxT(t, 30*time.Second)

	// alice may read and describe orders; writers of anything named
	// "orders-" (prefixed) are denied from 10.0.0.1.
	for _, builder := range []*kadm.ACLBuilder{
		kadm.NewACLs().Topics("orders").Allow("User:alice").AllowHosts("*").Operations(kadm.OpRead, kadm.OpDescribe),
		kadm.NewACLs().Topics("orders-").ResourcePatternType(kadm.ACLPatternPrefixed).Deny("User:bob").DenyHosts("10.0.0.1").Operations(kadm.OpWrite),
		kadm.NewACLs().Clusters().Allow("User:admin").AllowHosts("*").Operations(kadm.OpAlter),
	} {
		rs, err := adm.CreateACLs(ctx, builder)
		if err != nil {
			t.Fatalf("create: %v", err)
		}
		for _, r := range rs {
			if r.Err != nil {
				t.Fatalf("create %+v: %v (%s)", r, r.Err, r.ErrMessage)
			}
		}
	}
	lit := kmsg.ACLResourcePatternTypeLiteral
	want := []acl.Binding{
		{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: "orders", PatternType: lit, Principal: "User:alice", Host: "*", Operation: kmsg.ACLOperationRead, Permission: kmsg.ACLPermissionTypeAllow},
		{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: "orders", PatternType: lit, Principal: "User:alice", Host: "*", Operation: kmsg.ACLOperationDescribe, Permission: kmsg.ACLPermissionTypeAllow},
		{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: "orders-", PatternType: kmsg.ACLResourcePatternTypePrefixed, Principal: "User:bob", Host: "10.0.0.1", Operation: kmsg.ACLOperationWrite, Permission: kmsg.ACLPermissionTypeDeny},
		{ResourceType: kmsg.ACLResourceTypeCluster, ResourceName: acl.ClusterName, PatternType: lit, Principal: "User:admin", Host: "*", Operation: kmsg.ACLOperationAlter, Permission: kmsg.ACLPermissionTypeAllow},
	}
	slices.SortFunc(want, func(a, b acl.Binding) int { return strings.Compare(a.String(), b.String()) })
	if got := storedBindings(t, b); !slices.Equal(got, want) {
		t.Fatalf("stored bindings:\n%v\nwant:\n%v", got, want)
	}

	all := kadm.NewACLs().AnyResource().ResourcePatternType(kadm.ACLPatternAny).Operations(kadm.OpAny).Allow().Deny().AllowHosts().DenyHosts()
	described, err := adm.DescribeACLs(ctx, all)
	if err != nil {
		t.Fatalf("describe all: %v", err)
	}
	wantAll := []string{
		"TOPIC:LITERAL:orders User:alice@* ALLOW READ",
		"TOPIC:LITERAL:orders User:alice@* ALLOW DESCRIBE",
		"TOPIC:PREFIXED:orders- User:bob@10.0.0.1 DENY WRITE",
		"CLUSTER:LITERAL:kafka-cluster User:admin@* ALLOW ALTER",
	}
	if got := describedStrings(described); !slices.Equal(got, wantAll) {
		t.Fatalf("describe all:\n%q\nwant\n%q", got, wantAll)
	}

	// MATCH finds every binding that applies to topic orders-eu: the
	// prefixed one, not the literal "orders" (KIP-290).
	matched, err := adm.DescribeACLs(ctx, kadm.NewACLs().Topics("orders-eu").ResourcePatternType(kadm.ACLPatternMatch).Operations(kadm.OpAny).Allow().Deny().AllowHosts().DenyHosts())
	if err != nil {
		t.Fatalf("describe match: %v", err)
	}
	if got, w := describedStrings(matched), []string{"TOPIC:PREFIXED:orders- User:bob@10.0.0.1 DENY WRITE"}; !slices.Equal(got, w) {
		t.Fatalf("describe match orders-eu: %q, want %q", got, w)
	}

	// Two filters that both match alice's READ each list it.
	req := kmsg.NewPtrDeleteACLsRequest()
	for _, op := range []kmsg.ACLOperation{kmsg.ACLOperationRead, kmsg.ACLOperationAny} {
		f := kmsg.NewDeleteACLsRequestFilter()
		f.ResourceType, f.ResourceName, f.ResourcePatternType = kmsg.ACLResourceTypeTopic, kmsg.StringPtr("orders"), kmsg.ACLResourcePatternTypeLiteral
		f.Principal, f.Operation, f.PermissionType = kmsg.StringPtr("User:alice"), op, kmsg.ACLPermissionTypeAny
		req.Filters = append(req.Filters, f)
	}
	resp := request[*kmsg.DeleteACLsResponse](t, b.Client(), req)
	if len(resp.Results) != 2 {
		t.Fatalf("delete: %d results, want 2", len(resp.Results))
	}
	if r := resp.Results[0]; r.ErrorCode != 0 || len(r.MatchingACLs) != 1 || r.MatchingACLs[0].Operation != kmsg.ACLOperationRead {
		t.Fatalf("delete filter READ: %+v", r)
	}
	if r := resp.Results[1]; r.ErrorCode != 0 || len(r.MatchingACLs) != 2 {
		t.Fatalf("delete filter ANY: %+v, want READ and DESCRIBE", r)
	}
	if got := storedBindings(t, b); len(got) != 2 {
		t.Fatalf("after delete: stored %v, want bob's and admin's", got)
	}

	// kadm's delete of everything that is left.
	deleted, err := adm.DeleteACLs(ctx, all)
	if err != nil {
		t.Fatalf("delete all: %v", err)
	}
	n := 0
	for _, r := range deleted {
		if r.Err != nil {
			t.Fatalf("delete all: %v", r.Err)
		}
		n += len(r.Deleted)
	}
	if n != 2 {
		t.Fatalf("delete all matched %d bindings, want 2", n)
	}
	if got := storedBindings(t, b); len(got) != 0 {
		t.Fatalf("after delete all: stored %v", got)
	}
}

func TestCreateACLsRefusesInvalidCreationsOneByOne(t *testing.T) {
	t.Parallel()
	b := startSecureBroker(t)
	cl := b.Client()
	valid := func() kmsg.CreateACLsRequestCreation {
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceTypeTopic, "t", kmsg.ACLResourcePatternTypeLiteral
		c.Principal, c.Host = "User:alice", "*"
		c.Operation, c.PermissionType = kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow
		return c
	}
	cases := []struct {
		name    string
		mutate  func(*kmsg.CreateACLsRequestCreation)
		want    *kerr.Error
		message string // a part of the error message
	}{
		{name: "valid", mutate: func(*kmsg.CreateACLsRequestCreation) {}},
		{name: "cluster not kafka-cluster", mutate: func(c *kmsg.CreateACLsRequestCreation) {
			c.ResourceType, c.ResourceName = kmsg.ACLResourceTypeCluster, "other"
		}, want: kerr.InvalidRequest, message: "kafka-cluster"},
		{name: "empty name", mutate: func(c *kmsg.CreateACLsRequestCreation) { c.ResourceName = "" }, want: kerr.InvalidRequest, message: "empty"},
		{name: "principal without type", mutate: func(c *kmsg.CreateACLsRequestCreation) { c.Principal = "alice" }, want: kerr.InvalidRequest, message: "principal"},
		{name: "ANY operation", mutate: func(c *kmsg.CreateACLsRequestCreation) { c.Operation = kmsg.ACLOperationAny }, want: kerr.InvalidRequest, message: "operation"},
		{name: "MATCH pattern", mutate: func(c *kmsg.CreateACLsRequestCreation) { c.ResourcePatternType = kmsg.ACLResourcePatternTypeMatch }, want: kerr.InvalidRequest, message: "pattern"},
		{name: "UNKNOWN permission", mutate: func(c *kmsg.CreateACLsRequestCreation) { c.PermissionType = kmsg.ACLPermissionTypeUnknown }, want: kerr.InvalidRequest, message: "permission"},
		{name: "second valid", mutate: func(c *kmsg.CreateACLsRequestCreation) { c.ResourceName = "u" }},
	}
	req := kmsg.NewPtrCreateACLsRequest()
	for _, c := range cases {
		rc := valid()
		c.mutate(&rc)
		req.Creations = append(req.Creations, rc)
	}
	resp := request[*kmsg.CreateACLsResponse](t, cl, req)
	if len(resp.Results) != len(cases) {
		t.Fatalf("%d results for %d creations", len(resp.Results), len(cases))
	}
	for i, c := range cases {
		r := resp.Results[i]
		if err := kerr.ErrorForCode(r.ErrorCode); err != c.want && !(c.want == nil && err == nil) {
			t.Errorf("%s: error %v, want %v", c.name, err, c.want)
		}
		if c.message != "" && (r.ErrorMessage == nil || !strings.Contains(*r.ErrorMessage, c.message)) {
			t.Errorf("%s: message %v, want it to mention %q", c.name, r.ErrorMessage, c.message)
		}
	}
	got := storedBindings(t, b)
	if len(got) != 2 || got[0].ResourceName != "t" || got[1].ResourceName != "u" {
		t.Fatalf("stored %v, want the two valid creations", got)
	}
}

func TestACLFiltersWithUnknownValuesAreInvalidRequests(t *testing.T) {
	t.Parallel()
	b := startSecureBroker(t)
	cl := b.Client()

	d := kmsg.NewPtrDescribeACLsRequest()
	d.ResourceType = kmsg.ACLResourceTypeUnknown
	d.ResourcePatternType, d.Operation, d.PermissionType = kmsg.ACLResourcePatternTypeAny, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	dr := request[*kmsg.DescribeACLsResponse](t, cl, d)
	if dr.ErrorCode != kerr.InvalidRequest.Code || dr.ErrorMessage == nil || !strings.Contains(*dr.ErrorMessage, "resource type") {
		t.Fatalf("describe with UNKNOWN resource type: error %v %v, want INVALID_REQUEST naming the resource type",
			kerr.ErrorForCode(dr.ErrorCode), dr.ErrorMessage)
	}

	del := kmsg.NewPtrDeleteACLsRequest()
	bad := kmsg.NewDeleteACLsRequestFilter()
	bad.ResourceType, bad.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	bad.Operation, bad.PermissionType = kmsg.ACLOperationUnknown, kmsg.ACLPermissionTypeAny
	good := bad
	good.Operation = kmsg.ACLOperationAny
	del.Filters = append(del.Filters, bad, good)
	delr := request[*kmsg.DeleteACLsResponse](t, cl, del)
	if len(delr.Results) != 2 || delr.Results[0].ErrorCode != kerr.InvalidRequest.Code || delr.Results[1].ErrorCode != 0 {
		t.Fatalf("delete with an UNKNOWN operation filter: %+v, want INVALID_REQUEST then success", delr.Results)
	}
}

// Reference: KIP-290 (v0 requests and responses know only LITERAL patterns).
func TestDescribeACLsV0SeesOnlyLiteralBindings(t *testing.T) {
	t.Parallel()
	b := startSecureBroker(t)
	adm := b.Admin()
	ctx := ctxT(t, 30*time.Second)
	for _, p := range []kadm.ACLPattern{kadm.ACLPatternLiteral, kadm.ACLPatternPrefixed} {
		rs, err := adm.CreateACLs(ctx, kadm.NewACLs().Topics("t").ResourcePatternType(p).Allow("User:alice").AllowHosts("*").Operations(kadm.OpRead))
		if err == nil {
			err = rs[0].Err
		}
		if err != nil {
			t.Fatalf("create %s: %v", p, err)
		}
	}
	req := kmsg.NewPtrDescribeACLsRequest()
	req.Version = 0
	req.ResourceType, req.Operation, req.PermissionType = kmsg.ACLResourceTypeAny, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	resp := request[*kmsg.DescribeACLsResponse](t, b.Client(), req)
	if resp.ErrorCode != 0 || len(resp.Resources) != 1 || len(resp.Resources[0].ACLs) != 1 || resp.Resources[0].ResourceName != "t" {
		t.Fatalf("describe v0: %+v, want the literal binding only", resp)
	}
	req.Version = 1
	req.ResourcePatternType = kmsg.ACLResourcePatternTypeAny
	resp = request[*kmsg.DescribeACLsResponse](t, b.Client(), req)
	if resp.ErrorCode != 0 || len(resp.Resources) != 2 {
		t.Fatalf("describe v1: %+v, want both bindings", resp)
	}
}
