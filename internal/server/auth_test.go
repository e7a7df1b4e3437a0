package server

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"samsa/internal/sasl"
	"samsa/internal/tlsconfig"
)

// saslHandler is testHandler plus the SASL keys, which the connection
// layer answers itself; it records the principal of every request.
type saslHandler struct {
	*testHandler
	principal atomic.Pointer[string]
}

func (h *saslHandler) Versions(key int16) (int16, int16, bool) {
	switch key {
	case saslHandshakeKey:
		return 0, 1, true
	case saslAuthenticateKey:
		return 0, 2, true
	}
	return h.testHandler.Versions(key)
}

func (h *saslHandler) Handle(ctx context.Context, c *Conn, req *Request) Reply {
	p := c.Principal
	h.principal.Store(&p)
	if req.APIKey == apiVersionsKey && !req.UnsupportedVersion {
		h.handled.Add(1)
		resp := h.apiVersions(0)
		for _, k := range []int16{saslHandshakeKey, saslAuthenticateKey} {
			lo, hi, _ := h.Versions(k)
			resp.ApiKeys = append(resp.ApiKeys, kmsg.ApiVersionsResponseApiKey{ApiKey: k, MinVersion: lo, MaxVersion: hi})
		}
		return Reply{Msg: resp}
	}
	return h.testHandler.Handle(ctx, c, req)
}

// plainAuth serves PLAIN with the real sasl package.
type plainAuth struct{ users *sasl.PlainUsers }

func (a plainAuth) Mechanisms() []string { return []string{"PLAIN"} }
func (a plainAuth) NewSession(m string) (SASLSession, bool) {
	if m != "PLAIN" {
		return nil, false
	}
	return sasl.NewPlain(a.users), true
}

// startListener serves lc on a loopback listener.
func startListener(t *testing.T, lc ListenerConfig) (*saslHandler, string) {
	t.Helper()
	return startListenerWith(t, Config{}, lc)
}

func startListenerWith(t *testing.T, cfg Config, lc ListenerConfig) (*saslHandler, string) {
	t.Helper()
	h := &saslHandler{testHandler: newTestHandler()}
	ln := listen(t)
	s := New(cfg, h)
	served := make(chan error, 1)
	go func() { served <- s.ServeListener(ln, lc) }()
	t.Cleanup(func() {
		s.Close()
		if err := <-served; err != nil {
			t.Errorf("ServeListener: %v", err)
		}
	})
	return h, ln.Addr().String()
}

func saslListener(delay time.Duration) ListenerConfig {
	return ListenerConfig{
		Name: "SASL_PLAINTEXT", SecurityProtocol: ProtocolSASLPlaintext,
		SASL:            plainAuth{sasl.NewPlainUsers(map[string]string{"alice": "secret"})},
		FailedAuthDelay: delay,
	}
}

func handshake(mech string) *kmsg.SASLHandshakeRequest {
	r := kmsg.NewPtrSASLHandshakeRequest()
	r.Mechanism = mech
	return r
}

func authenticate(b []byte) *kmsg.SASLAuthenticateRequest {
	r := kmsg.NewPtrSASLAuthenticateRequest()
	r.SASLAuthBytes = b
	return r
}

func (c *client) readSASLAuthenticate(v int16) *kmsg.SASLAuthenticateResponse {
	c.t.Helper()
	_, body, err := c.readResponse(v >= 2)
	if err != nil {
		c.t.Fatalf("read SaslAuthenticate response: %v", err)
	}
	resp := kmsg.NewPtrSASLAuthenticateResponse()
	resp.SetVersion(v)
	if err := resp.ReadFrom(body); err != nil {
		c.t.Fatal(err)
	}
	return resp
}

func (c *client) readSASLHandshake() *kmsg.SASLHandshakeResponse {
	c.t.Helper()
	_, body, err := c.readResponse(false)
	if err != nil {
		c.t.Fatalf("read SaslHandshake response: %v", err)
	}
	resp := kmsg.NewPtrSASLHandshakeResponse()
	resp.SetVersion(1)
	if err := resp.ReadFrom(body); err != nil {
		c.t.Fatal(err)
	}
	return resp
}

// A franz-go client authenticates with PLAIN and its requests carry the
// principal.
func TestSASLPlainAuthenticatesAndSetsPrincipal(t *testing.T) {
	t.Parallel()
	h, addr := startListener(t, saslListener(0))
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(plain.Auth{User: "alice", Pass: "secret"}.AsMechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cl.Request(ctx, metadata("a")); err != nil {
		t.Fatal(err)
	}
	if p := h.principal.Load(); p == nil || *p != "User:alice" {
		t.Fatalf("principal %v, want User:alice", p)
	}
}

// B-19: before authentication completes, a request other than
// ApiVersions and SaslHandshake closes the connection, and so does
// SaslAuthenticate before SaslHandshake (after ILLEGAL_SASL_STATE).
func TestRequestsBeforeAuthenticationClose(t *testing.T) {
	t.Parallel()
	h, addr := startListener(t, saslListener(0))

	c := dial(t, addr)
	c.write(encode(1, metadata("a"), 9))
	c.expectClosed(5 * time.Second)

	c = dial(t, addr)
	c.write(encode(1, authenticate([]byte("\x00alice\x00secret")), 1))
	if resp := c.readSASLAuthenticate(1); resp.ErrorCode != kerr.IllegalSaslState.Code {
		t.Fatalf("SaslAuthenticate before handshake: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	c.expectClosed(5 * time.Second)

	// ApiVersions is served before authentication.
	c = dial(t, addr)
	c.write(encode(1, kmsg.NewPtrApiVersionsRequest(), 0))
	if _, _, err := c.readResponse(false); err != nil {
		t.Fatalf("ApiVersions before authentication: %v", err)
	}
	if h.handled.Load() != 1 {
		t.Fatalf("handler saw %d requests, want only the ApiVersions", h.handled.Load())
	}
}

// B-03: a frame over 512 KiB before authentication closes the connection
// before it is read.
func TestLargeFrameBeforeAuthenticationCloses(t *testing.T) {
	t.Parallel()
	_, addr := startListener(t, saslListener(0))
	c := dial(t, addr)
	c.write([]byte{0x00, 0x08, 0x00, 0x01}) // 512 KiB + 1
	c.expectClosed(5 * time.Second)
}

// a wrong password is answered SASL_AUTHENTICATION_FAILED
// after the configured delay, then the connection closes; an unknown
// mechanism gets UNSUPPORTED_SASL_MECHANISM and the enabled list.
func TestFailedAuthenticationIsDelayedAndCloses(t *testing.T) {
	t.Parallel()
	const delay = 150 * time.Millisecond
	_, addr := startListener(t, saslListener(delay))

	c := dial(t, addr)
	c.write(encode(1, handshake("SCRAM-SHA-256"), 1))
	if resp := c.readSASLHandshake(); resp.ErrorCode != kerr.UnsupportedSaslMechanism.Code || strings.Join(resp.SupportedMechanisms, ",") != "PLAIN" {
		t.Fatalf("unknown mechanism: %v %v", kerr.ErrorForCode(resp.ErrorCode), resp.SupportedMechanisms)
	}
	c.expectClosed(5 * time.Second)

	c = dial(t, addr)
	c.write(encode(1, handshake("PLAIN"), 1))
	if resp := c.readSASLHandshake(); resp.ErrorCode != 0 {
		t.Fatalf("handshake: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	start := time.Now()
	c.write(encode(2, authenticate([]byte("\x00alice\x00wrong")), 2))
	resp := c.readSASLAuthenticate(2)
	if took := time.Since(start); took < delay {
		t.Errorf("failure answered after %v, want at least %v", took, delay)
	}
	if resp.ErrorCode != kerr.SaslAuthenticationFailed.Code {
		t.Fatalf("wrong password: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	if resp.ErrorMessage == nil || strings.Contains(*resp.ErrorMessage, "wrong") {
		t.Errorf("error message %v: want one that does not echo the secret", resp.ErrorMessage)
	}
	c.expectClosed(5 * time.Second)
}

// A failed authentication is logged at WARN with the listener, the
// mechanism and the user the client named, never the password.
func TestFailedAuthenticationLogNamesUserNotPassword(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(lockedWriter{&mu, &buf}, nil))
	_, addr := startListenerWith(t, Config{Logger: log}, saslListener(0))
	c := dial(t, addr)
	c.write(encode(1, handshake("PLAIN"), 1))
	if resp := c.readSASLHandshake(); resp.ErrorCode != 0 {
		t.Fatalf("handshake: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	c.write(encode(2, authenticate([]byte("\x00alice\x00not-the-secret")), 2))
	if resp := c.readSASLAuthenticate(2); resp.ErrorCode != kerr.SaslAuthenticationFailed.Code {
		t.Fatalf("wrong password: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	c.expectClosed(5 * time.Second)
	mu.Lock()
	out := buf.String()
	mu.Unlock()
	var line map[string]any
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["msg"] == "server: authentication failed" {
			line = m
		}
	}
	if line == nil {
		t.Fatalf("no authentication failure logged: %s", out)
	}
	if line["level"] != "WARN" || line["user"] != "alice" || line["mechanism"] != "PLAIN" || line["listener"] != "SASL_PLAINTEXT" {
		t.Errorf("logged %v, want WARN with user alice, mechanism PLAIN, listener SASL_PLAINTEXT", line)
	}
	if strings.Contains(out, "not-the-secret") {
		t.Errorf("the password reached the log: %s", out)
	}
}

// lockedWriter serialises writes to w under mu.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// with connections.max.reauth.ms, the session lifetime is
// announced, and a request after it expires closes the connection unless
// the client re-authenticated.
func TestSessionExpiresWithoutReauthentication(t *testing.T) {
	t.Parallel()
	lc := saslListener(0)
	lc.MaxReauth = 300 * time.Millisecond
	_, addr := startListener(t, lc)

	login := func(c *client, corr int32) {
		c.write(encode(corr, handshake("PLAIN"), 1))
		if resp := c.readSASLHandshake(); resp.ErrorCode != 0 {
			t.Fatalf("handshake: %v", kerr.ErrorForCode(resp.ErrorCode))
		}
		c.write(encode(corr+1, authenticate([]byte("\x00alice\x00secret")), 1))
		resp := c.readSASLAuthenticate(1)
		if resp.ErrorCode != 0 || resp.SessionLifetimeMillis <= 0 || resp.SessionLifetimeMillis > 300 {
			t.Fatalf("authenticate: %v, session lifetime %d ms", kerr.ErrorForCode(resp.ErrorCode), resp.SessionLifetimeMillis)
		}
	}
	c := dial(t, addr)
	login(c, 1)
	c.write(encode(3, metadata("a"), 9))
	if _, names := c.readMetadata(9); len(names) != 1 {
		t.Fatalf("metadata after login: %v", names)
	}
	time.Sleep(200 * time.Millisecond)
	login(c, 4) // re-authentication on the same connection (KIP-368)
	time.Sleep(200 * time.Millisecond)
	c.write(encode(6, metadata("a"), 9))
	if _, names := c.readMetadata(9); len(names) != 1 {
		t.Fatalf("metadata after re-authentication: %v", names)
	}
	time.Sleep(400 * time.Millisecond)
	c.write(encode(7, metadata("a"), 9))
	c.expectClosed(5 * time.Second)
}

// tlsListener serves SSL with development certificates; it returns the
// address and a client TLS config trusting the CA.
func tlsListener(t *testing.T, timeout time.Duration) (string, *tls.Config) {
	t.Helper()
	srv, ccfg := devTLS(t)
	_, addr := startListener(t, ListenerConfig{Name: "SSL", SecurityProtocol: ProtocolSSL, TLS: srv.TLSConfig(),
		TLSPrincipal: srv.Principal, HandshakeTimeout: timeout})
	return addr, ccfg
}

// devTLS returns a TLS server with development certificates and a client
// TLS config trusting their CA.
func devTLS(t *testing.T) (*tlsconfig.Server, *tls.Config) {
	t.Helper()
	dir := t.TempDir()
	files, err := tlsconfig.GenerateDevCerts(dir, nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := tlsconfig.NewServer(tlsconfig.Config{KeystoreLocation: files.Server}, nil)
	if err != nil {
		t.Fatal(err)
	}
	pem, err := os.ReadFile(filepath.Join(dir, "ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	return srv, &tls.Config{RootCAs: pool, ServerName: "localhost"}
}

// Requests written together with the authentication, in one write, are
// all served in order: the reader holds some of them in its small
// pre-authentication buffer when the connection becomes authenticated,
// and one of them is larger than that buffer.
func TestRequestsPipelinedWithAuthenticationAreServed(t *testing.T) {
	t.Parallel()
	big := make([]string, 400) // a Metadata request of about 10 KiB
	for i := range big {
		big[i] = fmt.Sprintf("topic-%016d", i)
	}
	for _, proto := range []string{ProtocolSASLPlaintext, ProtocolSASLSSL} {
		t.Run(proto, func(t *testing.T) {
			t.Parallel()
			lc := saslListener(0)
			lc.SecurityProtocol = proto
			var ccfg *tls.Config
			if proto == ProtocolSASLSSL {
				var srv *tlsconfig.Server
				srv, ccfg = devTLS(t)
				lc.TLS = srv.TLSConfig()
			}
			h, addr := startListener(t, lc)
			c := dial(t, addr)
			if ccfg != nil {
				tc := tls.Client(c.nc, ccfg)
				c.nc, c.r = tc, bufio.NewReader(tc)
			}
			var out []byte
			out = append(out, encode(1, kmsg.NewPtrApiVersionsRequest(), 0)...)
			out = append(out, encode(2, handshake("PLAIN"), 1)...)
			out = append(out, encode(3, authenticate([]byte("\x00alice\x00secret")), 2)...)
			out = append(out, encode(4, metadata("a"), 9)...)
			out = append(out, encode(5, metadata(big...), 9)...)
			out = append(out, encode(6, metadata("b"), 9)...)
			c.write(out)

			if corr, _, err := c.readResponse(false); err != nil || corr != 1 {
				t.Fatalf("ApiVersions: correlation id %d, %v", corr, err)
			}
			if resp := c.readSASLHandshake(); resp.ErrorCode != 0 {
				t.Fatalf("SaslHandshake: %v", kerr.ErrorForCode(resp.ErrorCode))
			}
			if resp := c.readSASLAuthenticate(2); resp.ErrorCode != 0 {
				t.Fatalf("SaslAuthenticate: %v", kerr.ErrorForCode(resp.ErrorCode))
			}
			for _, want := range []struct {
				corr   int32
				topics int
			}{{4, 1}, {5, len(big)}, {6, 1}} {
				corr, names := c.readMetadata(9)
				if corr != want.corr || len(names) != want.topics {
					t.Fatalf("Metadata: correlation id %d with %d topics, want %d with %d", corr, len(names), want.corr, want.topics)
				}
			}
			if p := h.principal.Load(); p == nil || *p != "User:alice" {
				t.Fatalf("principal %v, want User:alice", p)
			}
		})
	}
}

// An SSL listener serves Kafka over TLS only: plain Kafka bytes (or any
// garbage) instead of a ClientHello close the connection, and a client
// that stops mid-handshake is dropped after the handshake timeout
// without holding up other clients.
func TestTLSListenerRefusesPlaintextAndStalledHandshakes(t *testing.T) {
	t.Parallel()
	addr, ccfg := tlsListener(t, 300*time.Millisecond)

	c := dial(t, addr)
	c.write(encode(1, metadata("a"), 9))
	c.expectClosed(5 * time.Second)

	stalled := dial(t, addr)
	stalled.write([]byte{0x16, 0x03, 0x01}) // the start of a TLS record, then nothing

	tc, err := tls.Dial("tcp", addr, ccfg)
	if err != nil {
		t.Fatalf("TLS client while another stalls: %v", err)
	}
	defer tc.Close()
	sc := &client{t: t, nc: tc, r: bufio.NewReader(tc)}
	sc.write(encode(1, metadata("a"), 9))
	if _, names := sc.readMetadata(9); len(names) != 1 {
		t.Fatalf("metadata over TLS: %v", names)
	}
	stalled.expectClosed(5 * time.Second)

	// TLS 1.1 is refused.
	if c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: ccfg.RootCAs, ServerName: "localhost", MaxVersion: tls.VersionTLS11}); err == nil {
		c.Close()
		t.Fatal("a TLS 1.1 client was served")
	}
}

// connections.max.reauth.ms set for a mechanism applies to its sessions
// in place of the listener's: here PLAIN sessions are bounded on a
// listener with no bound, and unbounded on one with a bound.
func TestMaxReauthPerMechanismOverridesTheListener(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		listener, plain time.Duration
		wantMax         int64
	}{
		{0, 300 * time.Millisecond, 300},
		{300 * time.Millisecond, 0, 0},
	} {
		lc := saslListener(0)
		lc.MaxReauth = tc.listener
		lc.MaxReauthByMechanism = map[string]time.Duration{"PLAIN": tc.plain}
		_, addr := startListener(t, lc)
		c := dial(t, addr)
		c.write(encode(1, handshake("PLAIN"), 1))
		c.readSASLHandshake()
		c.write(encode(2, authenticate([]byte("\x00alice\x00secret")), 1))
		resp := c.readSASLAuthenticate(1)
		if life := resp.SessionLifetimeMillis; resp.ErrorCode != 0 || life < 0 || life > tc.wantMax || (tc.wantMax > 0) != (life > 0) {
			t.Errorf("listener %v, PLAIN %v: %v, session lifetime %d ms, want 1..%d (0: none)",
				tc.listener, tc.plain, kerr.ErrorForCode(resp.ErrorCode), life, tc.wantMax)
		}
	}
}

// A SaslHandshake out of place on a SASL listener (a second one in the
// middle of an exchange, or after authentication with re-authentication
// off) is answered ILLEGAL_SASL_STATE and closes the connection.
func TestOutOfPlaceHandshakeCloses(t *testing.T) {
	t.Parallel()
	_, addr := startListener(t, saslListener(0))
	for _, name := range []string{"mid-exchange", "after authentication"} {
		c := dial(t, addr)
		c.write(encode(1, handshake("PLAIN"), 1))
		if resp := c.readSASLHandshake(); resp.ErrorCode != 0 {
			t.Fatalf("%s: handshake: %v", name, kerr.ErrorForCode(resp.ErrorCode))
		}
		if name == "after authentication" {
			c.write(encode(2, authenticate([]byte("\x00alice\x00secret")), 1))
			if resp := c.readSASLAuthenticate(1); resp.ErrorCode != 0 {
				t.Fatalf("authenticate: %v", kerr.ErrorForCode(resp.ErrorCode))
			}
		}
		c.write(encode(3, handshake("PLAIN"), 1))
		if resp := c.readSASLHandshake(); resp.ErrorCode != kerr.IllegalSaslState.Code {
			t.Fatalf("%s: second handshake: %v, want ILLEGAL_SASL_STATE", name, kerr.ErrorForCode(resp.ErrorCode))
		}
		c.expectClosed(5 * time.Second)
	}
}
