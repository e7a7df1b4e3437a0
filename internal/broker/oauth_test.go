package broker_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"samsa/internal/testutil"
)

const (
	oauthAudience = "samsa-test"
	oauthIssuer   = "https://issuer.test"
)

// oauthBroker starts a broker whose SASL_PLAINTEXT listener serves
// OAUTHBEARER, with tokens checked against the JWKS file jwks (audience
// oauthAudience, issuer oauthIssuer), and PLAIN for the user admin, plus a
// PLAINTEXT listener. Failed authentications are answered at once.
func oauthBroker(t *testing.T, jwks string, extra ...string) *testutil.Broker {
	t.Helper()
	return testutil.StartBroker(t, oauthArgs("file://"+jwks, extra...)...)
}

// oauthArgs are the settings of oauthBroker with the JWKS at jwksURL.
func oauthArgs(jwksURL string, extra ...string) []string {
	return append([]string{
		"listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
		"inter.broker.listener.name=PLAINTEXT",
		"sasl.enabled.mechanisms=OAUTHBEARER,PLAIN",
		`listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="a";`,
		// One setting per listener and mechanism, the others global, so
		// that both forms are read.
		"listener.name.sasl_plaintext.oauthbearer.sasl.oauthbearer.jwks.endpoint.url=" + jwksURL,
		"sasl.oauthbearer.expected.audience=" + oauthAudience,
		"sasl.oauthbearer.expected.issuer=" + oauthIssuer,
		"connection.failed.authentication.delay.ms=0",
		"num.partitions=1",
	}, extra...)
}

// oauthClient is a franz-go client on the SASL_PLAINTEXT listener that
// authenticates with OAUTHBEARER, asking token for a token at every
// authentication and re-authentication.
func oauthClient(t *testing.T, b *testutil.Broker, token func() string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	mech := oauth.Oauth(func(context.Context) (oauth.Auth, error) { return oauth.Auth{Token: token()}, nil })
	return testutil.NewClient(t, b.Node.ListenerAddr("SASL_PLAINTEXT"),
		append([]kgo.Opt{kgo.SASL(mech), kgo.RequestRetries(0)}, opts...)...)
}

func fixedToken(tok string) func() string { return func() string { return tok } }

// metadataErr sends one Metadata request and returns its error: nil once
// the client authenticated.
func metadataErr(cl *kgo.Client) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := cl.Request(ctx, kmsg.NewPtrMetadataRequest())
	return err
}

// The principal of an OAUTHBEARER connection is User:<sub> of its token:
// an ACL for that principal alone lets a franz-go client produce and
// consume, and a valid token for another subject is denied. Tokens with a
// bad signature, another audience or issuer, or past their expiry fail
// with SASL_AUTHENTICATION_FAILED.
// Reference: KIP-255, KIP-768.
func TestOAuthBearerTokenSubjectIsThePrincipal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	jwks := filepath.Join(dir, "jwks.json")
	iss := testutil.NewTokenIssuer(t, "k1")
	iss.WriteJWKS(t, jwks)
	b := oauthBroker(t, jwks, "authorizer.class.name=samsa", "super.users=User:admin")

	admin := testutil.NewClient(t, b.Node.ListenerAddr("SASL_PLAINTEXT"), kgo.SASL(plain.Auth{User: "admin", Pass: "a"}.AsMechanism()))
	const topic = "oauth-orders"
	testutil.CreateTopic(t, kadm.NewClient(admin), topic, 1)
	grant(t, b,
		allow("User:svc-orders", kmsg.ACLResourceTypeTopic, topic, kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationWrite),
		allow("User:svc-orders", kmsg.ACLResourceTypeTopic, topic, kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationRead))

	svc := oauthClient(t, b, fixedToken(iss.Token("svc-orders", oauthAudience, oauthIssuer, time.Hour)),
		kgo.DefaultProduceTopic(topic))
	const n = 20
	for i := range n {
		produceSync(t, svc, &kgo.Record{Value: []byte("v" + strconv.Itoa(i))})
	}
	reader := oauthClient(t, b, fixedToken(iss.Token("svc-orders", oauthAudience, oauthIssuer, time.Hour)),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxWait(200*time.Millisecond))
	ctx := ctxT(t, 30*time.Second)
	var got []string
	for len(got) < n {
		fs := reader.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records: %v", len(got), n, ctx.Err())
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("consume: %v", err) })
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	for i, v := range got {
		if v != "v"+strconv.Itoa(i) {
			t.Fatalf("record %d is %q, want v%d (all: %q)", i, v, i, got)
		}
	}

	// A valid token for another subject authenticates, as that subject,
	// which no ACL names.
	other := oauthClient(t, b, fixedToken(iss.Token("svc-other", oauthAudience, oauthIssuer, time.Hour)))
	if c := produceCode(t, other, topic); c != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("produce as User:svc-other: %v, want TOPIC_AUTHORIZATION_FAILED", kerr.ErrorForCode(c))
	}

	forger := testutil.NewTokenIssuer(t, "k1") // same kid, another key
	now := time.Now()
	for name, tok := range map[string]string{
		"bad signature":  forger.Token("svc-orders", oauthAudience, oauthIssuer, time.Hour),
		"wrong audience": iss.Token("svc-orders", "another-cluster", oauthIssuer, time.Hour),
		"wrong issuer":   iss.Token("svc-orders", oauthAudience, "https://elsewhere.test", time.Hour),
		// Beyond the default 30 s of clock skew.
		"expired": iss.Sign(map[string]any{"sub": "svc-orders", "aud": oauthAudience, "iss": oauthIssuer,
			"iat": now.Add(-time.Hour).Unix(), "exp": now.Add(-time.Minute).Unix()}),
	} {
		// Kafka's message for a refused token is the RFC 7628 error.
		cl := oauthClient(t, b, fixedToken(tok))
		if err := metadataErr(cl); !errors.Is(err, kerr.SaslAuthenticationFailed) || !strings.Contains(err.Error(), `"status":"invalid_token"`) {
			t.Errorf("%s: %v, want SASL_AUTHENTICATION_FAILED with the invalid_token JSON", name, err)
		}
	}
}

// A JWKS file replaced by one with a new key applies without a restart,
// within the one-second recheck: tokens of the new key authenticate, and
// tokens of the old key, which the file no longer holds, are refused.
func TestOAuthBearerJWKSFileRotationAppliesWithoutRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	jwks := filepath.Join(dir, "jwks.json")
	oldKey := testutil.NewTokenIssuer(t, "2026-01")
	newKey := testutil.NewTokenIssuer(t, "2026-02")
	oldKey.WriteJWKS(t, jwks)
	b := oauthBroker(t, jwks)

	oldTok := oldKey.Token("svc", oauthAudience, oauthIssuer, time.Hour)
	newTok := newKey.Token("svc", oauthAudience, oauthIssuer, time.Hour)
	if err := metadataErr(oauthClient(t, b, fixedToken(oldTok))); err != nil {
		t.Fatalf("token of the configured key: %v", err)
	}
	if err := metadataErr(oauthClient(t, b, fixedToken(newTok))); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("token of a key not yet in the JWKS: %v, want SASL_AUTHENTICATION_FAILED", err)
	}

	newKey.WriteJWKS(t, jwks)
	rotated := time.Now()
	testutil.Eventually(t, 5*time.Second, func() error {
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Node.ListenerAddr("SASL_PLAINTEXT")), kgo.RequestRetries(0),
			kgo.SASL(oauth.Auth{Token: newTok}.AsMechanism()))
		if err != nil {
			return err
		}
		defer cl.Close()
		return metadataErr(cl)
	})
	took := time.Since(rotated)
	t.Logf("new key accepted %v after the file was replaced", took)
	// The file is checked at most once a second; allow for a slow machine.
	if took > 3*time.Second {
		t.Errorf("new key accepted only %v after the JWKS file changed, want about 1 s", took)
	}
	if err := metadataErr(oauthClient(t, b, fixedToken(oldTok))); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("token of the retired key: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
}

// X-07 with a real client: with connections.max.reauth.ms=2000 for
// OAUTHBEARER (set per listener and mechanism) a franz-go producer re-authenticates on its open connections (KIP-368)
// and produces for six seconds without an error, each re-authentication
// with a new token; every record is then read back once, in order.
func TestOAuthBearerReauthenticationKeepsAProducerGoing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	jwks := filepath.Join(dir, "jwks.json")
	iss := testutil.NewTokenIssuer(t, "k1")
	iss.WriteJWKS(t, jwks)
	b := oauthBroker(t, jwks, "listener.name.sasl_plaintext.oauthbearer.connections.max.reauth.ms=2000")
	const topic = "oauth-reauth"
	testutil.CreateTopic(t, b.Admin(), topic, 1)

	var tokens atomic.Int64
	token := func() string {
		tokens.Add(1)
		return iss.Token("svc", oauthAudience, oauthIssuer, time.Minute)
	}
	var conns connCounter
	cl := oauthClient(t, b, token, kgo.DefaultProduceTopic(topic), kgo.WithHooks(&conns))
	start := time.Now()
	n := 0
	for time.Since(start) < 6*time.Second {
		produceSync(t, cl, &kgo.Record{Value: []byte(strconv.Itoa(n))})
		n++
		time.Sleep(20 * time.Millisecond)
	}
	// franz-go re-authenticates a second before the 2 s lifetime ends,
	// so each connection it keeps open authenticates about six times;
	// none was closed under it.
	auths, opened, closed := tokens.Load(), conns.opened.Load(), conns.closed.Load()
	t.Logf("%d records, %d authentications on %d connections", n, auths, opened)
	if closed != 0 || auths < opened+3 {
		t.Fatalf("%d authentications on %d connections, %d closed: want re-authentications on open connections", auths, opened, closed)
	}

	got := consumeFrom(t, b.Addr(), topic, 0, n)
	for i, r := range got {
		if string(r.Value) != strconv.Itoa(i) {
			t.Fatalf("record at offset %d is %q, want %d", i, r.Value, i)
		}
	}
}

// connCounter counts a client's broker connections as kgo hooks.
type connCounter struct{ opened, closed atomic.Int64 }

var (
	_ kgo.HookBrokerConnect    = (*connCounter)(nil)
	_ kgo.HookBrokerDisconnect = (*connCounter)(nil)
)

func (h *connCounter) OnBrokerConnect(_ kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	if err == nil {
		h.opened.Add(1)
	}
}

func (h *connCounter) OnBrokerDisconnect(kgo.BrokerMetadata, net.Conn) { h.closed.Add(1) }

// X-07, seen from the wire: a token that expires in 3 s bounds the
// session even though connections.max.reauth.ms is a minute
// (SessionLifetimeMillis <= 3000); re-authenticating with a fresh token
// extends it, re-authenticating as another subject is refused, and a
// request after the session ended, without re-authentication, closes the
// connection.
// Reference: KIP-368.
func TestOAuthBearerTokenExpiryBoundsTheSession(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	jwks := filepath.Join(dir, "jwks.json")
	iss := testutil.NewTokenIssuer(t, "k1")
	iss.WriteJWKS(t, jwks)
	b := oauthBroker(t, jwks, "connections.max.reauth.ms=60000")
	addr := b.Node.ListenerAddr("SASL_PLAINTEXT")

	exp := time.Now().Add(3 * time.Second)
	tok := iss.Sign(map[string]any{"sub": "svc", "aud": oauthAudience, "iss": oauthIssuer,
		"exp": float64(exp.UnixMilli()) / 1000})

	c := dialKafka(t, addr)
	if life := c.oauthLogin(tok); life <= 0 || life > 3000 {
		t.Fatalf("SessionLifetimeMillis %d for a token expiring in 3 s, want 1..3000", life)
	}
	c.metadata()

	// A second connection re-authenticates before the first token
	// expires, with a token good for a minute (capped by the config).
	c2 := dialKafka(t, addr)
	c2.oauthLogin(tok)
	if life := c2.oauthLogin(iss.Token("svc", oauthAudience, oauthIssuer, 10*time.Minute)); life <= 50_000 || life > 60_000 {
		t.Fatalf("SessionLifetimeMillis %d after re-authentication with a 10 min token, want connections.max.reauth.ms", life)
	}

	// A third re-authenticates as someone else: refused, and closed.
	c3 := dialKafka(t, addr)
	c3.oauthLogin(tok)
	c3.handshake("OAUTHBEARER")
	if resp := c3.authenticate(bearer(iss.Token("intruder", oauthAudience, oauthIssuer, time.Minute))); resp.ErrorCode != kerr.SaslAuthenticationFailed.Code {
		t.Fatalf("re-authentication as another subject: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	c3.expectClosed()

	time.Sleep(time.Until(exp) + 200*time.Millisecond)
	c2.metadata() // re-authenticated: still served
	c.send(kmsg.NewPtrMetadataRequest(), 9)
	c.expectClosed()
}

// kafkaConn is a raw Kafka connection that sends requests at the version
// given, for checks of the SASL exchange itself.
type kafkaConn struct {
	t    *testing.T
	nc   net.Conn
	r    *bufio.Reader
	corr int32
	// last is the request last sent, whose response comes next.
	last kmsg.Request
}

func dialKafka(t *testing.T, addr string) *kafkaConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &kafkaConn{t: t, nc: nc, r: bufio.NewReader(nc)}
}

func (c *kafkaConn) send(req kmsg.Request, version int16) {
	c.t.Helper()
	req.SetVersion(version)
	c.corr++
	msg := []byte{0, 0, 0, 0}
	msg = binary.BigEndian.AppendUint16(msg, uint16(req.Key()))
	msg = binary.BigEndian.AppendUint16(msg, uint16(version))
	msg = binary.BigEndian.AppendUint32(msg, uint32(c.corr))
	msg = binary.BigEndian.AppendUint16(msg, 4)
	msg = append(msg, "test"...)
	if req.IsFlexible() {
		msg = append(msg, 0)
	}
	msg = req.AppendTo(msg)
	binary.BigEndian.PutUint32(msg, uint32(len(msg)-4))
	if _, err := c.nc.Write(msg); err != nil {
		c.t.Fatalf("write: %v", err)
	}
	c.last = req
}

// recv reads the response to the last request sent.
func (c *kafkaConn) recv() kmsg.Response {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	var size [4]byte
	if _, err := io.ReadFull(c.r, size[:]); err != nil {
		c.t.Fatalf("read %s response: %v", kmsg.NameForKey(c.last.Key()), err)
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(c.r, body); err != nil {
		c.t.Fatalf("read %s response: %v", kmsg.NameForKey(c.last.Key()), err)
	}
	if got := int32(binary.BigEndian.Uint32(body)); got != c.corr {
		c.t.Fatalf("correlation id %d, want %d", got, c.corr)
	}
	body = body[4:]
	if c.last.IsFlexible() && c.last.Key() != 18 {
		body = body[1:]
	}
	resp := c.last.ResponseKind()
	resp.SetVersion(c.last.GetVersion())
	if err := resp.ReadFrom(body); err != nil {
		c.t.Fatalf("decode %s response: %v", kmsg.NameForKey(c.last.Key()), err)
	}
	return resp
}

func (c *kafkaConn) handshake(mechanism string) {
	c.t.Helper()
	req := kmsg.NewPtrSASLHandshakeRequest()
	req.Mechanism = mechanism
	c.send(req, 1)
	if code := c.recv().(*kmsg.SASLHandshakeResponse).ErrorCode; code != 0 {
		c.t.Fatalf("SaslHandshake %s: %v", mechanism, kerr.ErrorForCode(code))
	}
}

func (c *kafkaConn) authenticate(msg []byte) *kmsg.SASLAuthenticateResponse {
	c.t.Helper()
	req := kmsg.NewPtrSASLAuthenticateRequest()
	req.SASLAuthBytes = msg
	c.send(req, 2)
	return c.recv().(*kmsg.SASLAuthenticateResponse)
}

// bearer is the RFC 7628 client initial response carrying tok.
func bearer(tok string) []byte { return []byte("n,,\x01auth=Bearer " + tok + "\x01\x01") }

// oauthLogin authenticates (or re-authenticates) with tok and returns the
// session lifetime the broker announced.
func (c *kafkaConn) oauthLogin(tok string) int64 {
	c.t.Helper()
	c.handshake("OAUTHBEARER")
	resp := c.authenticate(bearer(tok))
	if resp.ErrorCode != 0 || len(resp.SASLAuthBytes) != 0 {
		c.t.Fatalf("SaslAuthenticate: %v, server message %q", kerr.ErrorForCode(resp.ErrorCode), resp.SASLAuthBytes)
	}
	return resp.SessionLifetimeMillis
}

// metadata sends a Metadata request and fails the test unless it is
// answered.
func (c *kafkaConn) metadata() {
	c.t.Helper()
	c.send(kmsg.NewPtrMetadataRequest(), 9)
	if len(c.recv().(*kmsg.MetadataResponse).Brokers) == 0 {
		c.t.Fatal("metadata lists no brokers")
	}
}

// expectClosed fails the test unless the broker closes the connection,
// without an answer, within 5 s.
func (c *kafkaConn) expectClosed() {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err := c.r.Read(make([]byte, 1))
	var ne net.Error
	switch {
	case n > 0:
		c.t.Fatal("got an answer, want the connection closed")
	case errors.As(err, &ne) && ne.Timeout():
		c.t.Fatal("connection still open after 5 s")
	case err == nil:
		c.t.Fatal("read returned no error")
	}
}
