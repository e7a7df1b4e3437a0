package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"samsa/internal/testutil"
)

// oauthSummary is what testdata/confluent_oauth.py prints.
type oauthSummary struct {
	Delivered []struct {
		I         int   `json:"i"`
		Partition int32 `json:"partition"`
		Offset    int64 `json:"offset"`
	} `json:"delivered"`
	DeliveryErrors []string `json:"delivery_errors"`
	Unflushed      int      `json:"unflushed"`
	Consumed       []struct {
		Partition int32  `json:"partition"`
		Offset    int64  `json:"offset"`
		Key       string `json:"key"`
		Value     string `json:"value"`
	} `json:"consumed"`
	Errors     []string `json:"errors"`
	TokenCalls int      `json:"token_calls"`
}

// runOAuthPython runs confluent_oauth.py against the SASL_SSL listener
// with tok (expiring at exp) and returns its summary.
func runOAuthPython(t *testing.T, python string, s *secureBroker, tok string, exp time.Time, topic string, count int) oauthSummary {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, "testdata/confluent_oauth.py",
		"localhost:"+strconv.Itoa(s.saslPort), filepath.Join(s.certs, "ca.pem"), topic, strconv.Itoa(count))
	cmd.Env = append(os.Environ(), "SAMSA_OAUTH_TOKEN="+tok,
		fmt.Sprintf("SAMSA_OAUTH_TOKEN_EXP=%d", exp.Unix()))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("confluent_oauth.py: %v\nstderr:\n%s", err, stderr.String())
	}
	var sum oauthSummary
	if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil {
		t.Fatalf("summary: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	return sum
}

// TestConfluentPythonOAuthBearerOverTLS: confluent-kafka-python
// (librdkafka) authenticates with OAUTHBEARER over SASL_SSL, its token a
// JWT signed here and handed over through oauth_cb, and produces 100
// records idempotently and reads each back exactly once in a consumer
// group, at the offset its delivery report gave. A token signed by a key
// the broker's JWKS lacks is refused: nothing is delivered and librdkafka
// reports an authentication error.
// Reference: KIP-255, KIP-768.
func TestConfluentPythonOAuthBearerOverTLS(t *testing.T) {
	python := requireConfluentPython(t)
	jwks := filepath.Join(t.TempDir(), "jwks.json")
	iss := testutil.NewTokenIssuer(t, "e2e")
	iss.WriteJWKS(t, jwks)
	s := newSecureBroker(t,
		"listener.name.sasl_ssl.sasl.enabled.mechanisms=SCRAM-SHA-512,PLAIN,OAUTHBEARER",
		"listener.name.sasl_ssl.oauthbearer.sasl.oauthbearer.jwks.endpoint.url=file://"+jwks,
		"listener.name.sasl_ssl.oauthbearer.sasl.oauthbearer.expected.audience=samsa-e2e",
	)
	const (
		topic = "py-oauth"
		count = 100
	)
	createTopic(t, s.addr(), topic, 3, nil)

	exp := time.Now().Add(time.Hour)
	tok := iss.Token("py-client", "samsa-e2e", "", time.Hour)
	sum := runOAuthPython(t, python, s, tok, exp, topic, count)
	if len(sum.DeliveryErrors) > 0 || sum.Unflushed != 0 || len(sum.Delivered) != count {
		t.Fatalf("producer: %d delivered, errors %v, %d unflushed (client errors %v)",
			len(sum.Delivered), sum.DeliveryErrors, sum.Unflushed, sum.Errors)
	}
	if sum.TokenCalls < 1 {
		t.Errorf("oauth_cb was never called")
	}
	type pos struct {
		p int32
		o int64
	}
	at := make(map[pos]int, count)
	for _, d := range sum.Delivered {
		if prev, dup := at[pos{d.Partition, d.Offset}]; dup {
			t.Fatalf("records %d and %d both delivered at %d/%d", prev, d.I, d.Partition, d.Offset)
		}
		at[pos{d.Partition, d.Offset}] = d.I
	}
	seen := make(map[string]int, count)
	for _, c := range sum.Consumed {
		seen[c.Value]++
		i, ok := at[pos{c.Partition, c.Offset}]
		if !ok || c.Value != "v"+strconv.Itoa(i) || c.Key != c.Value {
			t.Errorf("read %s=%s at %d/%d, where delivery reported record %d (found %v)", c.Key, c.Value, c.Partition, c.Offset, i, ok)
		}
	}
	for i := range count {
		if n := seen["v"+strconv.Itoa(i)]; n != 1 {
			t.Errorf("record v%d read %d times, want exactly once", i, n)
		}
	}
	if len(sum.Consumed) != count {
		t.Errorf("read %d records, want %d", len(sum.Consumed), count)
	}

	forged := testutil.NewTokenIssuer(t, "e2e").Token("py-client", "samsa-e2e", "", time.Hour)
	bad := runOAuthPython(t, python, s, forged, exp, topic, 0)
	if len(bad.Delivered) != 0 {
		t.Fatalf("a forged token delivered %d records", len(bad.Delivered))
	}
	if errs := strings.Join(bad.Errors, "\n"); !strings.Contains(errs, "SASL authentication error") || !strings.Contains(errs, "invalid_token") {
		t.Errorf("forged token: client errors %q lack the broker's invalid_token refusal", bad.Errors)
	}
	t.Logf("forged token: delivery errors %q, client errors %q", bad.DeliveryErrors, bad.Errors)
}
