package broker_test

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/testutil"
)

func entity(kv ...string) kadm.ClientQuotaEntity {
	var e kadm.ClientQuotaEntity
	for i := 0; i < len(kv); i += 2 {
		c := kadm.ClientQuotaEntityComponent{Type: kv[i]}
		if kv[i+1] != "<default>" {
			c.Name = kmsg.StringPtr(kv[i+1])
		}
		e = append(e, c)
	}
	return e
}

func set(key string, v float64) kadm.AlterClientQuotaOp {
	return kadm.AlterClientQuotaOp{Key: key, Value: v}
}

// alterQuotas runs AlterClientQuotas and returns each entry's error, with
// its message, in request order ("" for success).
func alterQuotas(t *testing.T, adm *kadm.Client, validateOnly bool, entries ...kadm.AlterClientQuotaEntry) []string {
	t.Helper()
	alter := adm.AlterClientQuotas
	if validateOnly {
		alter = adm.ValidateAlterClientQuotas
	}
	rs, err := alter(ctxT(t, 30*time.Second), entries)
	if err != nil {
		t.Fatalf("alter client quotas: %v", err)
	}
	out := make([]string, len(rs))
	for i, r := range rs {
		if r.Err != nil {
			out[i] = r.Err.Error() + ": " + r.ErrMessage
		}
	}
	return out
}

// describeQuotas prints the described entities and their values, one per
// line, sorted: "user=alice client-id=<default>: request_percentage=50".
func describeQuotas(t *testing.T, adm *kadm.Client, strict bool, filter ...kadm.DescribeClientQuotaComponent) string {
	t.Helper()
	qs, err := adm.DescribeClientQuotas(ctxT(t, 30*time.Second), strict, filter)
	if err != nil {
		t.Fatalf("describe client quotas: %v", err)
	}
	var lines []string
	for _, q := range qs {
		var parts []string
		for _, c := range q.Entity {
			parts = append(parts, c.String())
		}
		var vals []string
		for _, v := range q.Values {
			vals = append(vals, fmt.Sprintf("%s=%g", v.Key, v.Value))
		}
		lines = append(lines, strings.Join(parts, " ")+": "+strings.Join(vals, " "))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func match(typ string, mt kmsg.QuotasMatchType, name string) kadm.DescribeClientQuotaComponent {
	c := kadm.DescribeClientQuotaComponent{Type: typ, MatchType: mt}
	if mt == kmsg.QuotasMatchTypeExact {
		c.MatchName = kmsg.StringPtr(name)
	}
	return c
}

// Reference: KIP-546 (DescribeClientQuotas filters and strict matching,
// AlterClientQuotas validate_only and per-entry errors).
func TestAlterClientQuotasThenDescribeFollowsKIP546(t *testing.T) {
	t.Parallel()
	b := testutil.StartBroker(t)
	adm := b.Admin()

	if errs := alterQuotas(t, adm, true, kadm.AlterClientQuotaEntry{
		Entity: entity("user", "alice"), Ops: []kadm.AlterClientQuotaOp{set("producer_byte_rate", 1024)},
	}); errs[0] != "" {
		t.Fatalf("validate only: %s", errs[0])
	}
	if got := describeQuotas(t, adm, false); got != "" {
		t.Fatalf("validate_only stored quotas:\n%s", got)
	}

	errs := alterQuotas(t, adm, false,
		kadm.AlterClientQuotaEntry{Entity: entity("user", "alice"), Ops: []kadm.AlterClientQuotaOp{
			set("producer_byte_rate", 1024), set("consumer_byte_rate", 2048)}},
		kadm.AlterClientQuotaEntry{Entity: entity("user", "alice", "client-id", "<default>"), Ops: []kadm.AlterClientQuotaOp{
			set("request_percentage", 50)}},
		kadm.AlterClientQuotaEntry{Entity: entity("client-id", "app"), Ops: []kadm.AlterClientQuotaOp{
			set("producer_byte_rate", 4096)}},
		kadm.AlterClientQuotaEntry{Entity: entity("ip", "<default>"), Ops: []kadm.AlterClientQuotaOp{
			set("connection_creation_rate", 10)}},
	)
	for i, e := range errs {
		if e != "" {
			t.Fatalf("entry %d: %s", i, e)
		}
	}

	for _, tc := range []struct {
		name   string
		strict bool
		filter []kadm.DescribeClientQuotaComponent
		want   string
	}{
		{"everything", false, nil, "client-id=app: producer_byte_rate=4096\n" +
			"ip=<default>: connection_creation_rate=10\n" +
			"user=alice client-id=<default>: request_percentage=50\n" +
			"user=alice: consumer_byte_rate=2048 producer_byte_rate=1024"},
		{"user alice", false, []kadm.DescribeClientQuotaComponent{match("user", kmsg.QuotasMatchTypeExact, "alice")},
			"user=alice client-id=<default>: request_percentage=50\nuser=alice: consumer_byte_rate=2048 producer_byte_rate=1024"},
		{"user alice strict", true, []kadm.DescribeClientQuotaComponent{match("user", kmsg.QuotasMatchTypeExact, "alice")},
			"user=alice: consumer_byte_rate=2048 producer_byte_rate=1024"},
		{"default client id", false, []kadm.DescribeClientQuotaComponent{match("client-id", kmsg.QuotasMatchTypeDefault, "")},
			"user=alice client-id=<default>: request_percentage=50"},
		{"any client id strict", true, []kadm.DescribeClientQuotaComponent{match("client-id", kmsg.QuotasMatchTypeAny, "")},
			"client-id=app: producer_byte_rate=4096"},
		{"ips", false, []kadm.DescribeClientQuotaComponent{match("ip", kmsg.QuotasMatchTypeAny, "")},
			"ip=<default>: connection_creation_rate=10"},
	} {
		if got := describeQuotas(t, adm, tc.strict, tc.filter...); got != tc.want {
			t.Errorf("%s:\n%s\nwant\n%s", tc.name, got, tc.want)
		}
	}

	// Bad entries fail alone, each with INVALID_REQUEST and a message; the
	// good one in the same request applies.
	errs = alterQuotas(t, adm, false,
		kadm.AlterClientQuotaEntry{Entity: entity("user", "alice"), Ops: []kadm.AlterClientQuotaOp{
			{Key: "consumer_byte_rate", Remove: true}, set("producer_byte_rate", 512)}},
		kadm.AlterClientQuotaEntry{Entity: entity("ip", "10.0.0.1"), Ops: []kadm.AlterClientQuotaOp{set("producer_byte_rate", 1)}},
		kadm.AlterClientQuotaEntry{Entity: entity("client-id", "x"), Ops: []kadm.AlterClientQuotaOp{set("producer_byte_rate", 1.5)}},
		kadm.AlterClientQuotaEntry{Entity: entity("group", "g"), Ops: []kadm.AlterClientQuotaOp{set("producer_byte_rate", 1)}},
		kadm.AlterClientQuotaEntry{Entity: entity("client-id", "y"), Ops: []kadm.AlterClientQuotaOp{
			set("producer_byte_rate", 1), set("producer_byte_rate", 2)}},
		kadm.AlterClientQuotaEntry{Entity: entity("user", ""), Ops: []kadm.AlterClientQuotaOp{set("producer_byte_rate", 1)}},
		kadm.AlterClientQuotaEntry{Entity: entity("user", "bob", "ip", "10.0.0.1"), Ops: []kadm.AlterClientQuotaOp{set("producer_byte_rate", 1)}},
	)
	if errs[0] != "" {
		t.Errorf("good entry: %s", errs[0])
	}
	for i, e := range errs[1:] {
		if !strings.HasPrefix(e, kerr.InvalidRequest.Error()+": ") || len(e) <= len(kerr.InvalidRequest.Error())+2 {
			t.Errorf("bad entry %d: %q, want INVALID_REQUEST with a message", i+1, e)
		}
	}
	if got, want := describeQuotas(t, adm, true, match("user", kmsg.QuotasMatchTypeAny, "")), "user=alice: producer_byte_rate=512"; got != want {
		t.Errorf("after the mixed request:\n%s\nwant %s", got, want)
	}

	// A filter Kafka refuses is INVALID_REQUEST for the whole response.
	_, err := adm.DescribeClientQuotas(ctxT(t, 30*time.Second), false, []kadm.DescribeClientQuotaComponent{
		match("user", kmsg.QuotasMatchTypeAny, ""), match("ip", kmsg.QuotasMatchTypeAny, ""),
	})
	if !errors.Is(err, kerr.InvalidRequest) {
		t.Errorf("user+ip filter: %v, want INVALID_REQUEST", err)
	}
}

// An entity named twice in one request fails in both entries and neither
// applies; the response keeps one entry per request entry.
func TestAlterClientQuotasRefusesAnEntityNamedTwice(t *testing.T) {
	t.Parallel()
	b := testutil.StartBroker(t)
	adm := b.Admin()
	errs := alterQuotas(t, adm, false,
		kadm.AlterClientQuotaEntry{Entity: entity("user", "carol"), Ops: []kadm.AlterClientQuotaOp{set("producer_byte_rate", 1024)}},
		kadm.AlterClientQuotaEntry{Entity: entity("client-id", "ok"), Ops: []kadm.AlterClientQuotaOp{set("producer_byte_rate", 1024)}},
		kadm.AlterClientQuotaEntry{Entity: entity("user", "carol"), Ops: []kadm.AlterClientQuotaOp{set("consumer_byte_rate", 1024)}},
	)
	if len(errs) != 3 || !strings.HasPrefix(errs[0], kerr.InvalidRequest.Error()) || errs[1] != "" || !strings.HasPrefix(errs[2], kerr.InvalidRequest.Error()) {
		t.Fatalf("results %q, want INVALID_REQUEST, ok, INVALID_REQUEST", errs)
	}
	if got, want := describeQuotas(t, adm, false), "client-id=ok: producer_byte_rate=1024"; got != want {
		t.Errorf("stored:\n%s\nwant %s", got, want)
	}
}

// Reference: KafkaApis: DescribeClientQuotas needs DESCRIBE_CONFIGS and
// AlterClientQuotas ALTER_CONFIGS on the cluster.
func TestClientQuotaAPIsNeedConfigOperationsOnTheCluster(t *testing.T) {
	t.Parallel()
	b := aclBroker(t)
	alice := kadm.NewClient(userClient(t, b, "alice", "a"))
	ctx := ctxT(t, 30*time.Second)
	entry := kadm.AlterClientQuotaEntry{Entity: entity("user", "alice"), Ops: []kadm.AlterClientQuotaOp{set("producer_byte_rate", 1)}}

	if _, err := alice.DescribeClientQuotas(ctx, false, nil); !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Errorf("describe without ACLs: %v, want CLUSTER_AUTHORIZATION_FAILED", err)
	}
	if errs := alterQuotas(t, alice, false, entry); !strings.HasPrefix(errs[0], kerr.ClusterAuthorizationFailed.Error()) {
		t.Errorf("alter without ACLs: %q", errs[0])
	}
	grant(t, b, allow("User:alice", kmsg.ACLResourceTypeCluster, "kafka-cluster", kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationDescribeConfigs))
	if got := describeQuotas(t, alice, false); got != "" {
		t.Errorf("describe with DESCRIBE_CONFIGS: %q", got)
	}
	if errs := alterQuotas(t, alice, false, entry); !strings.HasPrefix(errs[0], kerr.ClusterAuthorizationFailed.Error()) {
		t.Errorf("alter with DESCRIBE_CONFIGS only: %q", errs[0])
	}
	grant(t, b, allow("User:alice", kmsg.ACLResourceTypeCluster, "kafka-cluster", kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationAlterConfigs))
	if errs := alterQuotas(t, alice, false, entry); errs[0] != "" {
		t.Errorf("alter with ALTER_CONFIGS: %q", errs[0])
	}
	if got, want := describeQuotas(t, alice, false), "user=alice: producer_byte_rate=1"; got != want {
		t.Errorf("describe: %q, want %q", got, want)
	}
}
