package broker_test

import (
	"encoding/pem"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"samsa/internal/testutil"
)

// idp is an identity provider's JWKS endpoint: an https server on
// 127.0.0.1 serving the JWK Set of one TokenIssuer, or failing.
type idp struct {
	srv  *httptest.Server
	url  string // of the JWKS
	ca   string // PEM file of the server's certificate, to trust it
	hits atomic.Int64

	mu     sync.Mutex
	jwks   []byte // guarded by mu
	status int    // guarded by mu
}

func newIDP(t *testing.T, iss *testutil.TokenIssuer) *idp {
	t.Helper()
	p := &idp{jwks: iss.JWKS(), status: http.StatusOK}
	p.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.hits.Add(1)
		p.mu.Lock()
		body, status := p.jwks, p.status
		p.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		w.Write(body)
	}))
	p.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	p.srv.StartTLS()
	t.Cleanup(p.srv.Close)
	p.url = p.srv.URL + "/oauth2/v1/keys"
	p.ca = filepath.Join(t.TempDir(), "idp-ca.pem")
	if err := os.WriteFile(p.ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.srv.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// serve makes the endpoint answer with iss's JWK Set.
func (p *idp) serve(iss *testutil.TokenIssuer) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.jwks, p.status = iss.JWKS(), http.StatusOK
}

// fail makes the endpoint answer 503.
func (p *idp) fail() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.jwks, p.status = []byte("unavailable"), http.StatusServiceUnavailable
}

// brokerArgs are oauthArgs with the JWKS fetched from the endpoint: the
// URL allowed, and the server's certificate trusted through the
// listener's OAUTHBEARER JAAS config, as Kafka reads it.
func (p *idp) brokerArgs(extra ...string) []string {
	return oauthArgs(p.url, append([]string{
		"sasl.oauthbearer.allowed.urls=https://elsewhere.test/jwks," + p.url,
		`listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required ssl.truststore.location="` + p.ca + `";`,
	}, extra...)...)
}

// A broker fetches its JWKS from an allowed https endpoint: a token
// signed by the served key authenticates. After the issuer rotates its
// key, a token naming the new kid authenticates on the first try, without
// a restart and long before the hourly refresh: the unknown kid makes the
// broker fetch the JWKS again, once. The retired key's tokens are then
// refused, and their unknown kid, within 10 s of the last such fetch,
// fetches nothing.
// Reference: KIP-768 (sasl.oauthbearer.jwks.endpoint.url); Kafka's
// RefreshingHttpsJwks.maybeExpediteRefresh.
func TestOAuthBearerJWKSEndpointKeysAuthenticateAndRotateWithoutRestart(t *testing.T) {
	t.Parallel()
	oldKey := testutil.NewTokenIssuer(t, "2026-01")
	newKey := testutil.NewTokenIssuer(t, "2026-02")
	p := newIDP(t, oldKey)
	b := testutil.StartBroker(t, p.brokerArgs()...)
	if n := p.hits.Load(); n != 1 {
		t.Fatalf("%d fetches at startup, want 1", n)
	}

	oldTok := oldKey.Token("svc", oauthAudience, oauthIssuer, time.Hour)
	newTok := newKey.Token("svc", oauthAudience, oauthIssuer, time.Hour)
	if err := metadataErr(oauthClient(t, b, fixedToken(oldTok))); err != nil {
		t.Fatalf("token of the served key: %v", err)
	}
	if n := p.hits.Load(); n != 1 {
		t.Fatalf("%d fetches after a token of a known kid, want still 1", n)
	}

	p.serve(newKey)
	if err := metadataErr(oauthClient(t, b, fixedToken(newTok))); err != nil {
		t.Fatalf("token of the rotated-in key: %v", err)
	}
	if n := p.hits.Load(); n != 2 {
		t.Fatalf("%d fetches after a token of an unknown kid, want 2", n)
	}
	if err := metadataErr(oauthClient(t, b, fixedToken(oldTok))); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("token of the retired key: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
	if n := p.hits.Load(); n != 2 {
		t.Fatalf("%d fetches after another unknown kid within 10 s, want still 2", n)
	}
}

// While the JWKS endpoint fails, the broker keeps the key set it last
// fetched: tokens of that key still authenticate after failed refreshes
// and failed retries, and a token of an unknown kid, whose fetch fails
// too, is refused without losing them. When the endpoint answers again
// the new key set is used.
func TestOAuthBearerJWKSEndpointFailingRefreshKeepsTheLastKeys(t *testing.T) {
	t.Parallel()
	iss := testutil.NewTokenIssuer(t, "k1")
	p := newIDP(t, iss)
	b := testutil.StartBroker(t, p.brokerArgs(
		"listener.name.sasl_plaintext.oauthbearer.sasl.oauthbearer.jwks.endpoint.refresh.ms=1000",
		"sasl.oauthbearer.jwks.endpoint.retry.backoff.ms=50",
		"sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms=200",
	)...)
	tok := iss.Token("svc", oauthAudience, oauthIssuer, time.Hour)

	p.fail()
	failedFrom := p.hits.Load()
	// The refresh a second after startup fails, then its retries.
	testutil.Eventually(t, 10*time.Second, func() error {
		if n := p.hits.Load() - failedFrom; n < 3 {
			return errors.New("fewer than 3 failed fetches")
		}
		return nil
	})
	if err := metadataErr(oauthClient(t, b, fixedToken(tok))); err != nil {
		t.Fatalf("token of the last fetched key while the endpoint fails: %v", err)
	}
	other := testutil.NewTokenIssuer(t, "k2")
	if err := metadataErr(oauthClient(t, b, fixedToken(other.Token("svc", oauthAudience, oauthIssuer, time.Hour)))); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("token of an unknown kid while the endpoint fails: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
	if err := metadataErr(oauthClient(t, b, fixedToken(tok))); err != nil {
		t.Fatalf("token of the last fetched key after a failed fetch for an unknown kid: %v", err)
	}

	p.serve(other)
	testutil.Eventually(t, 10*time.Second, func() error {
		return metadataErr(oauthClient(t, b, fixedToken(tok)))
	})
}

// The refresh goroutine belongs to the node: once the node is closed no
// fetch is made (and TestMain's goleak finds no goroutine left).
func TestOAuthBearerJWKSRefreshStopsOnClose(t *testing.T) {
	t.Parallel()
	iss := testutil.NewTokenIssuer(t, "k1")
	p := newIDP(t, iss)
	b := testutil.StartBroker(t, p.brokerArgs("sasl.oauthbearer.jwks.endpoint.refresh.ms=1000")...)
	testutil.Eventually(t, 10*time.Second, func() error {
		if p.hits.Load() < 2 {
			return errors.New("no refresh yet")
		}
		return nil
	})
	if err := b.Node.Close(); err != nil {
		t.Fatal(err)
	}
	closed := p.hits.Load()
	// NB: a wait for something not to happen: two refresh intervals.
	time.Sleep(2500 * time.Millisecond)
	if n := p.hits.Load() - closed; n != 0 {
		t.Fatalf("%d fetches after Close", n)
	}
}

// An https (or http) JWKS URL that sasl.oauthbearer.allowed.urls does not
// list stops the broker from starting, with an error naming both
// settings and the URL; the endpoint is never contacted.
// Reference: Kafka 4.0 org.apache.kafka.sasl.oauthbearer.allowed.urls
// (CVE-2025-27817).
func TestOAuthBearerJWKSURLNotAllowedFailsStartup(t *testing.T) {
	t.Parallel()
	p := newIDP(t, testutil.NewTokenIssuer(t, "k1"))
	for name, allowed := range map[string]string{
		"empty list":   "",
		"another URL":  "https://elsewhere.test/jwks",
		"another path": p.srv.URL + "/",
	} {
		_, err := testutil.TryStartBroker(t, oauthArgs(p.url, "sasl.oauthbearer.allowed.urls="+allowed)...)
		if err == nil {
			t.Fatalf("%s: broker started", name)
		}
		for _, want := range []string{"sasl.oauthbearer.jwks.endpoint.url", "sasl.oauthbearer.allowed.urls", p.url} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: error %q does not name %s", name, err, want)
			}
		}
	}
	if n := p.hits.Load(); n != 0 {
		t.Fatalf("%d fetches from a URL not allowed", n)
	}
}

// A JWKS endpoint that cannot be fetched at startup stops the broker
// from starting (as in Kafka), with an error naming the URL and the
// cause: an error status, or a certificate that the trust store (here the
// system's roots: no ssl.truststore.location) does not verify.
func TestOAuthBearerJWKSEndpointFailingAtStartupFailsStartup(t *testing.T) {
	t.Parallel()
	p := newIDP(t, testutil.NewTokenIssuer(t, "k1"))
	_, err := testutil.TryStartBroker(t, oauthArgs(p.url, "sasl.oauthbearer.allowed.urls="+p.url)...)
	if err == nil || !strings.Contains(err.Error(), p.url) || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("endpoint with an untrusted certificate: %v, want an error naming the URL and the certificate", err)
	}
	p.fail()
	_, err = testutil.TryStartBroker(t, p.brokerArgs()...)
	if err == nil || !strings.Contains(err.Error(), p.url) || !strings.Contains(err.Error(), "503") {
		t.Fatalf("endpoint answering 503: %v, want an error naming the URL and the status", err)
	}
}
