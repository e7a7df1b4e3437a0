package broker_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"samsa/internal/testutil"
)

// TestACLChangesReachEveryBrokerWithinASecond (TESTPLAN X-13): an ACL
// created or deleted through one broker applies on another within 1 s,
// and a request the other broker answers after the deletion is seen there
// is never allowed.
func TestACLChangesReachEveryBrokerWithinASecond(t *testing.T) {
	t.Parallel()
	c := testutil.StartCluster(t, 2,
		"listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
		"inter.broker.listener.name=PLAINTEXT",
		"sasl.enabled.mechanisms=PLAIN",
		`listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="a";`,
		"authorizer.class.name=samsa",
		"super.users=User:ANONYMOUS",
	)
	b0, b1 := c.Brokers[0], c.Brokers[1]
	alice1 := testutil.NewClient(t, b1.Node.ListenerAddr("SASL_PLAINTEXT"),
		kgo.SASL(plain.Auth{User: "alice", Pass: "a"}.AsMechanism()), kgo.RequestRetries(0))
	describe := func() int16 {
		req := kmsg.NewPtrDescribeClusterRequest()
		req.IncludeClusterAuthorizedOperations = true
		resp := direct[*kmsg.DescribeClusterResponse](t, alice1, req)
		if resp.ErrorCode != 0 {
			return resp.ErrorCode
		}
		if resp.ClusterAuthorizedOperations&(1<<uint(kmsg.ACLOperationAlter)) == 0 {
			return kerr.ClusterAuthorizationFailed.Code
		}
		return 0
	}
	if describe() == 0 {
		t.Fatal("alice may ALTER the cluster before any ACL")
	}
	b := allow("User:alice", kmsg.ACLResourceTypeCluster, "kafka-cluster", kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationAlter)
	start := time.Now()
	grant(t, b0, b)
	for describe() != 0 {
		if time.Since(start) > time.Second {
			t.Fatal("an ACL created through broker 0 did not apply on broker 1 within 1 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Logf("created ACL applied on the other broker after %v", time.Since(start))

	start = time.Now()
	revoke(t, b0, b)
	for describe() == 0 {
		if time.Since(start) > time.Second {
			t.Fatal("an ACL deleted through broker 0 still applied on broker 1 after 1 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Logf("deleted ACL stopped applying on the other broker after %v", time.Since(start))
	// Once broker 1's image has the deletion, no request is allowed.
	for i := 0; i < 20; i++ {
		if describe() == 0 {
			t.Fatal("allowed again after the deletion was seen")
		}
	}
}

// TestDynamicConfigsCannotNameCodeFilesOrURLs (TESTPLAN X-15): the
// settings that name code, files or URLs (JAAS configs, key and trust
// stores, the JWKS endpoint and the URLs allowed for it, the authorizer)
// are read-only: AlterConfigs and IncrementalAlterConfigs refuse them,
// for the cluster default and for one broker, and listener-prefixed names
// are unknown to them.
func TestDynamicConfigsCannotNameCodeFilesOrURLs(t *testing.T) {
	t.Parallel()
	b := testutil.StartBroker(t)
	adm := kadm.NewClient(b.Client())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, name := range []string{
		"sasl.jaas.config", "ssl.keystore.location", "ssl.truststore.location",
		"sasl.oauthbearer.jwks.endpoint.url", "sasl.oauthbearer.allowed.urls", "authorizer.class.name", "super.users",
		"listener.name.sasl_ssl.plain.sasl.jaas.config", "listener.name.ssl.ssl.keystore.location",
	} {
		for _, broker := range []int32{-1, 0} {
			v := "com.evil.Login required;"
			resps, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: name, Value: &v}}, broker)
			if err == nil && len(resps) > 0 {
				err = resps[0].Err
			}
			if err == nil {
				t.Errorf("%s (broker %d): accepted", name, broker)
				continue
			}
			if !strings.Contains(err.Error(), kerr.InvalidRequest.Message) && !strings.Contains(err.Error(), kerr.InvalidConfig.Message) &&
				!strings.Contains(err.Error(), kerr.PolicyViolation.Message) {
				t.Errorf("%s (broker %d): %v, want INVALID_REQUEST, INVALID_CONFIG or POLICY_VIOLATION", name, broker, err)
			}
		}
	}
	rc, err := adm.DescribeBrokerConfigs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rc {
		for _, c := range r.Configs {
			if c.Value != nil && strings.Contains(*c.Value, "com.evil") {
				t.Errorf("%s holds the refused value", c.Key)
			}
		}
	}
}
