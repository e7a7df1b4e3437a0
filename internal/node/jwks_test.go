package node

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// testJWKS returns a JWK Set of n fresh EC P-256 keys named k0, k1, ...
func testJWKS(t *testing.T, n int) []byte {
	t.Helper()
	b64 := base64.RawURLEncoding.EncodeToString
	var keys []map[string]string
	for i := range n {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		pt, err := k.PublicKey.Bytes() // 0x04 || x || y
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, map[string]string{"kty": "EC", "crv": "P-256", "kid": "k" + string(rune('0'+i)),
			"x": b64(pt[1:33]), "y": b64(pt[33:])})
	}
	out, err := json.Marshal(map[string]any{"keys": keys})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// jwksServer is an https JWKS endpoint on 127.0.0.1 whose answer a test
// changes: a body, or a status code.
type jwksServer struct {
	*httptest.Server
	mu     sync.Mutex
	body   []byte
	status int
	hits   atomic.Int64
}

func newJWKSServer(t *testing.T, body []byte) *jwksServer {
	t.Helper()
	s := &jwksServer{body: body, status: http.StatusOK}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		s.mu.Lock()
		body, status := s.body, s.status
		s.mu.Unlock()
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, "/jwks", http.StatusFound)
			return
		}
		w.WriteHeader(status)
		w.Write(body)
	}))
	// The handshakes that the test makes fail are expected.
	s.Config.ErrorLog = log.New(io.Discard, "", 0)
	s.StartTLS()
	t.Cleanup(s.Close)
	return s
}

func (s *jwksServer) serve(status int, body []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status, s.body = status, body
}

// trust returns a TLS config that trusts the server's certificate.
func (s *jwksServer) trust() *tls.Config {
	pool := x509.NewCertPool()
	pool.AddCert(s.Certificate())
	return &tls.Config{RootCAs: pool}
}

func TestJWKSBackoffDoublesUpToTheMaximum(t *testing.T) {
	const ms = time.Millisecond
	for _, tc := range []struct {
		failures  int
		base, max time.Duration
		want      time.Duration
	}{
		{0, 100 * ms, 10000 * ms, 100 * ms},
		{1, 100 * ms, 10000 * ms, 200 * ms},
		{6, 100 * ms, 10000 * ms, 6400 * ms},
		{7, 100 * ms, 10000 * ms, 10000 * ms},
		{1000, 100 * ms, 10000 * ms, 10000 * ms},
		{3, 100 * ms, 100 * ms, 100 * ms},
	} {
		if got := jwksBackoff(tc.failures, tc.base, tc.max); got != tc.want {
			t.Errorf("jwksBackoff(%d, %v, %v) = %v, want %v", tc.failures, tc.base, tc.max, got, tc.want)
		}
	}
}

// A JWKS that cannot be fetched and used fails the open with an error
// naming the URL and the cause: an untrusted certificate (only the
// system's roots are trusted by default), an error status, a redirect
// (not followed: the allowlist names the URL fetched), a body over 1 MiB,
// one that does not parse, and one without a usable key.
func TestJWKSEndpointOpenFailsNamingURLAndCause(t *testing.T) {
	srv := newJWKSServer(t, testJWKS(t, 1))
	ctx := context.Background()
	open := func(path string, tlsCfg *tls.Config) error {
		t.Helper()
		ep, err := openJWKSEndpoint(ctx, jwksEndpointConfig{URL: srv.URL + path, TLS: tlsCfg})
		if err == nil && ep.keys().Len() != 1 {
			t.Fatalf("%d keys, want 1", ep.keys().Len())
		}
		return err
	}
	if err := open("/jwks", srv.trust()); err != nil {
		t.Fatalf("trusted server: %v", err)
	}
	check := func(name string, err error, want string) {
		t.Helper()
		if err == nil {
			t.Errorf("%s: opened", name)
			return
		}
		if !strings.Contains(err.Error(), srv.URL) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %q, want the URL and %q", name, err, want)
		}
	}
	check("system roots", open("/jwks", nil), "certificate")
	check("redirect", open("/redirect", srv.trust()), "302")
	for _, tc := range []struct {
		name   string
		status int
		body   []byte
		want   string
	}{
		{"error status", http.StatusServiceUnavailable, nil, "503"},
		{"too large", http.StatusOK, []byte(`{"keys":[],"pad":"` + strings.Repeat("x", jwksMaxBytes) + `"}`), "larger than"},
		{"not JSON", http.StatusOK, []byte("<html>"), "jwks"},
		{"no usable key", http.StatusOK, []byte(`{"keys":[{"kty":"oct","k":"c2VjcmV0"}]}`), "no usable keys"},
	} {
		srv.serve(tc.status, tc.body)
		check(tc.name, open("/jwks", srv.trust()), tc.want)
	}
}

// waitFor polls cond every 10 ms until it holds, failing the test after
// d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// startRun runs ep until the test ends, and checks that run returns
// once its context is cancelled.
func startRun(t *testing.T, ep *jwksEndpoint) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	go ep.run(ctx)
	t.Cleanup(func() {
		cancel()
		select {
		case <-ep.done:
		case <-time.After(5 * time.Second):
			t.Error("run did not return after its context was cancelled")
		}
	})
}

// The JWKS is fetched again every refresh interval. While the endpoint
// fails, the last good key set stays in use and the fetch is retried
// with a doubling backoff (not every refresh interval); once the endpoint
// answers again the new set is used.
// Reference: Kafka's sasl.oauthbearer.jwks.endpoint.retry.backoff.ms and
// retry.backoff.max.ms.
func TestJWKSEndpointKeepsLastGoodKeysWhileFetchesFail(t *testing.T) {
	srv := newJWKSServer(t, testJWKS(t, 1))
	ep, err := openJWKSEndpoint(context.Background(), jwksEndpointConfig{URL: srv.URL + "/jwks", TLS: srv.trust(),
		Refresh: 200 * time.Millisecond, Backoff: 20 * time.Millisecond, BackoffMax: 80 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	startRun(t, ep)

	srv.serve(http.StatusOK, testJWKS(t, 2))
	waitFor(t, 5*time.Second, "the refreshed set of 2 keys is not in use", func() bool { return ep.keys().Len() == 2 })

	srv.serve(http.StatusInternalServerError, []byte("down"))
	before := srv.hits.Load()
	time.Sleep(time.Second)
	// 20, 40, 80, 80, ... ms after the first failure: about a dozen
	// tries in a second, against 5 at the refresh interval alone.
	if n := srv.hits.Load() - before; n < 7 {
		t.Errorf("%d fetches in 1 s of failures, want retries with backoff", n)
	}
	if n := ep.keys().Len(); n != 2 {
		t.Fatalf("%d keys while the endpoint fails, want the last good 2", n)
	}

	srv.serve(http.StatusOK, testJWKS(t, 3))
	waitFor(t, 5*time.Second, "the set of 3 keys is not in use after the endpoint recovered", func() bool { return ep.keys().Len() == 3 })
}

// A token naming a kid the set lacks makes missingKey fetch the JWKS at
// once and return the new set; callers at the same time share one fetch,
// and another unknown kid within 10 s gets the current set without a
// fetch (Kafka's RefreshingHttpsJwks limits these by kid; one limit for
// all kids also bounds made-up ones).
func TestJWKSEndpointMissingKidFetchesAtMostEveryTenSeconds(t *testing.T) {
	srv := newJWKSServer(t, testJWKS(t, 1))
	var mu sync.Mutex
	now := time.Unix(1_700_000_000, 0)
	ep, err := openJWKSEndpoint(context.Background(), jwksEndpointConfig{URL: srv.URL + "/jwks", TLS: srv.trust(),
		Now: func() time.Time { mu.Lock(); defer mu.Unlock(); return now }})
	if err != nil {
		t.Fatal(err)
	}
	startRun(t, ep)
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }

	srv.serve(http.StatusOK, testJWKS(t, 2))
	before := srv.hits.Load()
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if n := ep.missingKey("rotated").Len(); n != 2 {
				t.Errorf("missingKey returned %d keys, want the fetched 2", n)
			}
		})
	}
	wg.Wait()
	if n := srv.hits.Load() - before; n != 1 {
		t.Errorf("%d fetches for 4 concurrent unknown kids, want 1", n)
	}

	srv.serve(http.StatusOK, testJWKS(t, 3))
	advance(9 * time.Second)
	if n := ep.missingKey("made-up").Len(); n != 2 {
		t.Errorf("9 s later: %d keys, want the current 2 without a fetch", n)
	}
	if n := srv.hits.Load() - before; n != 1 {
		t.Errorf("%d fetches, want still 1", n)
	}
	advance(time.Second)
	if n := ep.missingKey("rotated-again").Len(); n != 3 {
		t.Errorf("10 s later: %d keys, want the fetched 3", n)
	}
}

// missingKey does not wait for a run that has stopped.
func TestJWKSEndpointMissingKidAfterStopReturnsAtOnce(t *testing.T) {
	srv := newJWKSServer(t, testJWKS(t, 1))
	ep, err := openJWKSEndpoint(context.Background(), jwksEndpointConfig{URL: srv.URL + "/jwks", TLS: srv.trust()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ep.run(ctx)
	start := time.Now()
	if n := ep.missingKey("k9").Len(); n != 1 {
		t.Errorf("%d keys, want the 1 fetched at open", n)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("missingKey took %v after run stopped", d)
	}
}

// The JWKS endpoint's trust store comes from the ssl.truststore.* options
// of the listener's OAUTHBEARER JAAS config, as in Kafka; without them the
// system's roots are used. Other ssl.* options are refused, not ignored.
func TestJWKSTLSReadsTruststoreFromJAASOptions(t *testing.T) {
	srv := newJWKSServer(t, testJWKS(t, 1))
	ca := t.TempDir() + "/idp-ca.pem"
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	const module = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required"
	for _, tc := range []struct {
		name, jaas string
		want       string // "" for success
	}{
		{"none", "", ""},
		{"no ssl options", module + ";", ""},
		{"truststore", module + ` ssl.truststore.type="PEM" ssl.truststore.location="` + ca + `";`, ""},
		{"keystore", module + ` ssl.keystore.location="/k.pem";`, "ssl.keystore.location is not supported"},
		{"missing file", module + ` ssl.truststore.location="/nonexistent.pem";`, "ssl.truststore.location"},
		{"other module", "org.apache.kafka.common.security.plain.PlainLoginModule required;", "login module"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := jwksTLS(tc.jaas)
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("error %v, want %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			_, err = openJWKSEndpoint(context.Background(), jwksEndpointConfig{URL: srv.URL, TLS: c})
			if trusted := strings.Contains(tc.jaas, "truststore"); trusted != (err == nil) {
				t.Fatalf("fetch with trust store %v: %v", trusted, err)
			}
		})
	}
}
