package console_test

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"samsa/internal/testutil"
	"samsa/internal/tlsconfig"
)

// hostile is markup that would run script if a page put it in the
// document unescaped.
const hostile = `"><script>alert(1)</script><img src=x onerror=alert(2)>`

// assertEscaped checks that body holds the hostile string only as text.
func assertEscaped(t *testing.T, what, body string) {
	t.Helper()
	for _, raw := range []string{"<script>alert(1)</script>", "<img src=x onerror=alert(2)>"} {
		if strings.Contains(body, raw) {
			t.Errorf("%s: the page holds %q unescaped", what, raw)
		}
	}
	if !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Errorf("%s: the page does not show the hostile text escaped", what)
	}
}

func TestConsoleShowsHostileNamesKeysValuesAndHeadersAsText(t *testing.T) {
	t.Parallel()
	b, w := startConsole(t)
	adm := b.Admin()
	testutil.CreateTopic(t, adm, "xss", 1)
	produce(t, b.Client(), &kgo.Record{Topic: "xss", Key: []byte(hostile), Value: []byte(hostile),
		Headers: []kgo.RecordHeader{{Key: hostile, Value: []byte(hostile)}}})
	body := w.mustGet("/console/messages?topic=xss")
	assertEscaped(t, "messages", body)
	rs := rows(t, body, "records")
	if len(rs) != 1 || rs[0][3] != hostile || rs[0][4] != hostile || rs[0][5] != hostile+": "+hostile {
		t.Errorf("the record shows as %q, want its key, value and header as they are", rs)
	}

	// Group ids may hold anything; a group named with markup.
	group := "g" + hostile
	os := kadm.Offsets{}
	os.Add(kadm.Offset{Topic: "xss", Partition: 0, At: 0, LeaderEpoch: -1})
	if err := adm.CommitAllOffsets(ctxT(t, 10*time.Second), group, os); err != nil {
		t.Fatal(err)
	}
	body = w.mustGet("/console/groups")
	assertEscaped(t, "groups", body)
	if list := rows(t, body, "groups"); len(list) != 1 || list[0][0] != group {
		t.Errorf("groups %q, want %q", list, group)
	}
	body = w.mustGet("/console/group?name=" + url.QueryEscape(group))
	assertEscaped(t, "group page", body)
	if got := byID(t, body, "group-name"); got != group {
		t.Errorf("group page title %q, want %q", got, group)
	}
	assertEscaped(t, "topic page", w.mustGet("/console/topic?name=xss"))

	// A topic name with markup is refused by the broker; the refusal
	// quotes the name as text.
	_, body = w.post("/console/topics", url.Values{"name": {hostile}})
	assertEscaped(t, "create topic refusal", body)
	if msg, ok := flash(t, body); ok || !strings.Contains(msg, "INVALID_TOPIC_EXCEPTION") {
		t.Errorf("create topic %q: flash %q", hostile, msg)
	}
	// A hostile query string is echoed as text too.
	assertEscaped(t, "topics search", w.mustGet("/console/topics?q="+url.QueryEscape(hostile)))
	_, body = w.get("/console/messages?topic=xss&seek=" + url.QueryEscape(hostile))
	assertEscaped(t, "bad seek", body)
}

func TestConsoleRefusesPostsWithoutTheSessionsCSRFToken(t *testing.T) {
	t.Parallel()
	b, w := startConsole(t)
	adm := b.Admin()
	tok := w.csrf("/console/topics")
	created := func(name string) bool {
		td, err := adm.ListTopics(ctxT(t, 10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		_, ok := td[name]
		return ok
	}
	for _, tc := range []struct {
		name   string
		form   url.Values
		header http.Header
	}{
		{"no token", url.Values{"name": {"t1"}}, nil},
		{"wrong token", url.Values{"name": {"t2"}, "csrf": {strings.Repeat("0", 64)}}, nil},
		{"another origin", url.Values{"name": {"t3"}, "csrf": {tok}}, http.Header{"Origin": {"http://evil.example"}}},
	} {
		st, body := w.postRaw("/console/topics", tc.form, tc.header)
		if st != http.StatusForbidden || !strings.Contains(body, "CSRF") {
			t.Errorf("%s: status %d, want 403 naming CSRF", tc.name, st)
		}
		if created(tc.form.Get("name")) {
			t.Errorf("%s: topic %s was created", tc.name, tc.form.Get("name"))
		}
	}
	// A browser of another session (no cookie) with a stolen token.
	other := newWeb(t, b.Node.ConsoleURL())
	if st, _ := other.postRaw("/console/topics", url.Values{"name": {"t4"}, "csrf": {tok}}, nil); st != http.StatusForbidden || created("t4") {
		t.Errorf("another session with this session's token: status %d", st)
	}
	// The same form with the token works.
	if st, body := w.postRaw("/console/topics", url.Values{"name": {"t5"}, "csrf": {tok}},
		http.Header{"Origin": {w.base}}); st != http.StatusOK || byID(t, body, "topic-name") != "t5" {
		t.Errorf("with the token: status %d\n%s", st, body)
	}
	testutil.Eventually(t, 10*time.Second, func() error {
		if !created("t5") {
			return fmt.Errorf("t5 not listed")
		}
		return nil
	})
}

func TestConsoleSetsSecurityHeadersAndStrictCookie(t *testing.T) {
	t.Parallel()
	_, w := startConsole(t)
	resp, err := w.c.Get(w.base + "/console/topics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	csp := resp.Header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "script-src 'self'", "frame-ancestors 'none'", "form-action 'self'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("Content-Security-Policy %q lacks %q", csp, want)
		}
	}
	if strings.Contains(csp, "unsafe-inline") {
		t.Errorf("Content-Security-Policy %q allows inline script", csp)
	}
	if got := resp.Header.Get("X-Content-Type-Options"); got != "nosniff" {
		t.Errorf("X-Content-Type-Options %q", got)
	}
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == "samsa_console" {
			cookie = c
		}
	}
	if cookie == nil || !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode || cookie.Path != "/console/" {
		t.Errorf("session cookie %+v, want HttpOnly, SameSite=Strict, Path=/console/", cookie)
	}
	// The pages hold no inline script: every script is the console's file.
	body := w.mustGet("/console/topics")
	if strings.Count(body, "<script") != 1 || !strings.Contains(body, `<script src="/console/static/console.js"`) {
		t.Errorf("the page has scripts other than console.js")
	}
	if st, _ := w.get("/console/static/console.js"); st != http.StatusOK {
		t.Errorf("console.js: status %d", st)
	}
}

func TestConsoleReadOnlyRefusesEveryChange(t *testing.T) {
	t.Parallel()
	b, w := startConsole(t, "console.read.only=true")
	adm := b.Admin()
	testutil.CreateTopic(t, adm, "keep", 1)
	body := w.mustGet("/console/topics")
	if strings.Contains(body, `id="create-topic"`) {
		t.Error("a read-only console shows the create form")
	}
	if rows := rows(t, body, "topics"); len(rows) != 1 {
		t.Errorf("read-only topics list %q", rows)
	}
	tok := csrfRE.FindStringSubmatch(body)[1]
	for path, form := range map[string]url.Values{
		"/console/topics":        {"name": {"new"}},
		"/console/topic/delete":  {"name": {"keep"}, "confirm": {"keep"}},
		"/console/messages":      {"topic": {"keep"}, "value": {"v"}},
		"/console/group/reset":   {"name": {"g"}, "topic": {"keep"}, "strategy": {"earliest"}, "action": {"apply"}},
		"/console/brokers/elect": {},
		"/console/security/acls": {"principal": {"User:x"}},
	} {
		form.Set("csrf", tok)
		st, body := w.postRaw(path, form, nil)
		if st != http.StatusForbidden || !strings.Contains(body, "read-only") {
			t.Errorf("POST %s: status %d, want 403 read-only", path, st)
		}
	}
	td, err := adm.ListTopics(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := td["keep"]; !ok || len(td) != 1 {
		t.Errorf("topics after the refused changes: %v", td.Names())
	}
	ends, err := adm.ListEndOffsets(ctxT(t, 10*time.Second), "keep")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := ends.Lookup("keep", 0); o.Offset != 0 {
		t.Errorf("keep has %d records after a refused produce", o.Offset)
	}
}

func TestConsoleIsOffOnANonLoopbackAdminListenerUnlessEnabled(t *testing.T) {
	t.Parallel()
	b := testutil.StartBroker(t, "admin.listener=0.0.0.0:0")
	if u := b.Node.ConsoleURL(); u != "" {
		t.Errorf("console served at %s on 0.0.0.0 without console.enabled", u)
	}
	resp, err := http.Get("http://" + b.Node.AdminAddr() + "/console/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /console/ on the admin listener: %d, want 404", resp.StatusCode)
	}
	b2 := testutil.StartBroker(t, "admin.listener=0.0.0.0:0", "console.enabled=true")
	w := newWeb(t, b2.Node.ConsoleURL())
	w.mustGet("/console/")
	// Its own listener, with the admin one off.
	b3 := testutil.StartBroker(t, "console.listener=127.0.0.1:0")
	w3 := newWeb(t, b3.Node.ConsoleURL())
	w3.mustGet("/console/topics")
	if st, _ := w3.get("/metrics"); st != http.StatusNotFound {
		t.Errorf("/metrics on the console's own listener: %d, want 404", st)
	}
}

func TestConsoleLoginActsAsTheUserUnderACLs(t *testing.T) {
	t.Parallel()
	b, w := startConsole(t,
		"authorizer.class.name=samsa", "super.users=User:ANONYMOUS;User:admin",
		"listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
		"inter.broker.listener.name=PLAINTEXT",
	)
	adm := b.Admin()
	ctx := ctxT(t, 30*time.Second)
	if _, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: "alice", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "alice-secret"},
	}); err != nil {
		t.Fatal(err)
	}
	testutil.CreateTopic(t, adm, "orders", 1)
	testutil.CreateTopic(t, adm, "secret", 1)
	if _, err := adm.CreateACLs(ctx, kadm.NewACLs().Topics("orders").Allow("User:alice").AllowHosts("*").Operations(kadm.OpRead, kadm.OpDescribe)); err != nil {
		t.Fatal(err)
	}
	// Without a login every page goes to the login form.
	body := w.mustGet("/console/topics")
	if !strings.Contains(body, `id="login"`) {
		t.Fatalf("no login form before login:\n%s", body)
	}
	tok := csrfRE.FindStringSubmatch(body)[1]
	st, body := w.postRaw("/console/login", url.Values{"csrf": {tok}, "username": {"alice"}, "password": {"wrong"}, "mechanism": {"SCRAM-SHA-512"}}, nil)
	if st != http.StatusUnauthorized || !strings.Contains(byID(t, body, "login-error"), "SASL_AUTHENTICATION_FAILED") {
		t.Errorf("wrong password: status %d, error %q", st, byID(t, body, "login-error"))
	}
	st, body = w.postRaw("/console/login", url.Values{"csrf": {tok}, "username": {"alice"}, "password": {"alice-secret"},
		"mechanism": {"SCRAM-SHA-512"}, "next": {"/console/topics"}}, nil)
	if st != http.StatusOK {
		t.Fatalf("login: status %d\n%s", st, body)
	}
	// Alice sees the topic her ACLs let her describe, and not the other.
	if got := column(rows(t, body, "topics"), 0); fmt.Sprint(got) != "[orders]" {
		t.Errorf("alice's topics %q, want only orders", got)
	}
	if got := byID(t, body, "user"); got != "alice" {
		t.Errorf("the page names the user %q, want alice", got)
	}
	// She may not create topics: the broker says so.
	_, body = w.post("/console/topics", url.Values{"name": {"alices"}})
	if msg, ok := flash(t, body); ok || !strings.Contains(msg, "AUTHORIZATION_FAILED") {
		t.Errorf("alice creates a topic: flash %q, want an authorization failure", msg)
	}
	// She may not write to orders either: with no WRITE on any topic
	// and no IDEMPOTENT_WRITE her producer id is refused (KIP-679).
	_, body = w.post("/console/messages", url.Values{"topic": {"orders"}, "value": {"x"}})
	if msg, ok := flash(t, body); ok || !strings.Contains(msg, "AUTHORIZATION_FAILED") {
		t.Errorf("alice produces: flash %q, want an authorization failure", msg)
	}
	if ends, err := adm.ListEndOffsets(ctx, "orders"); err != nil {
		t.Fatal(err)
	} else if o, _ := ends.Lookup("orders", 0); o.Offset != 0 {
		t.Errorf("orders has %d records after alice's refused produce", o.Offset)
	}
	// The lag history a super user's view recorded is not handed to
	// alice, who may not read the group.
	if _, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: "admin", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "admin-secret"},
	}); err != nil {
		t.Fatal(err)
	}
	os := kadm.Offsets{}
	os.Add(kadm.Offset{Topic: "secret", Partition: 0, At: 0, LeaderEpoch: -1})
	if err := adm.CommitAllOffsets(ctx, "hidden", os); err != nil {
		t.Fatal(err)
	}
	root := newWeb(t, b.Node.ConsoleURL())
	rtok := csrfRE.FindStringSubmatch(root.mustGet("/console/login"))[1]
	if st, body := root.postRaw("/console/login", url.Values{"csrf": {rtok}, "username": {"admin"}, "password": {"admin-secret"}, "mechanism": {"SCRAM-SHA-512"}}, nil); st != http.StatusOK {
		t.Fatalf("admin login: %d\n%s", st, body)
	}
	if _, js := root.get("/console/api/group-lag?name=hidden"); !strings.Contains(js, `"history":[[`) {
		t.Fatalf("admin's lag JSON %s, want a history", js)
	}
	if _, js := w.get("/console/api/group-lag?name=hidden"); !strings.Contains(js, `"history":[]`) {
		t.Errorf("alice's lag JSON of a group she may not read %s, want no history", js)
	}
	// Logging out ends the session.
	st, _ = w.post("/console/logout", url.Values{})
	if body := w.mustGet("/console/topics"); st != http.StatusOK || !strings.Contains(body, `id="login"`) {
		t.Errorf("after logout: status %d, the login form not shown", st)
	}
}

// Reference: KIP-255 (OAUTHBEARER): the principal is User:<sub> of the
// token, which the broker verifies against its JWKS.
func TestConsoleLoginWithAnOAuthBearerToken(t *testing.T) {
	t.Parallel()
	const aud, issuer = "samsa-console-test", "https://issuer.test"
	jwks := filepath.Join(t.TempDir(), "jwks.json")
	iss := testutil.NewTokenIssuer(t, "k1")
	iss.WriteJWKS(t, jwks)
	b, w := startConsole(t,
		"listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
		"inter.broker.listener.name=PLAINTEXT",
		"sasl.enabled.mechanisms=OAUTHBEARER",
		"sasl.oauthbearer.jwks.endpoint.url=file://"+jwks,
		"sasl.oauthbearer.expected.audience="+aud,
		"sasl.oauthbearer.expected.issuer="+issuer,
		"connection.failed.authentication.delay.ms=0",
		"authorizer.class.name=samsa", "super.users=User:ANONYMOUS",
	)
	adm := b.Admin()
	testutil.CreateTopic(t, adm, "svc-topic", 1)
	testutil.CreateTopic(t, adm, "other", 1)
	if _, err := adm.CreateACLs(ctxT(t, 10*time.Second), kadm.NewACLs().Topics("svc-topic").Allow("User:svc").AllowHosts("*").Operations(kadm.OpDescribe)); err != nil {
		t.Fatal(err)
	}
	tok := csrfRE.FindStringSubmatch(w.mustGet("/console/login"))[1]
	login := func(token string) (int, string) {
		return w.postRaw("/console/login", url.Values{"csrf": {tok}, "password": {token}, "mechanism": {"OAUTHBEARER"}, "next": {"/console/topics"}}, nil)
	}
	if st, body := login(iss.Token("svc", "another-audience", issuer, time.Hour)); st != http.StatusUnauthorized {
		t.Errorf("a token for another audience: status %d\n%s", st, body)
	}
	st, body := login(iss.Token("svc", aud, issuer, time.Hour))
	if st != http.StatusOK {
		t.Fatalf("login with a token: status %d\n%s", st, body)
	}
	if got := column(rows(t, body, "topics"), 0); fmt.Sprint(got) != "[svc-topic]" {
		t.Errorf("svc's topics %q, want only svc-topic", got)
	}
	if got := byID(t, body, "user"); got != "svc" {
		t.Errorf("the page names the user %q, want the token's subject svc", got)
	}
}

// TestConsoleOverTLSListeners: on a broker whose listeners are SSL and
// SASL_SSL the console logs users in over SASL_SSL, verifying the broker
// with the listener's trust store; with only an SSL listener that
// requires client certificates it is not served, since it has no
// certificate of the user's to present.
func TestConsoleOverTLSListeners(t *testing.T) {
	t.Parallel()
	files, err := tlsconfig.GenerateDevCerts(t.TempDir(), nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	b, w := startConsole(t,
		"listeners=SSL://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
		"inter.broker.listener.name=SSL",
		"ssl.keystore.location="+files.Server,
		"ssl.truststore.location="+files.CA,
		"sasl.enabled.mechanisms=SCRAM-SHA-256",
		"authorizer.class.name=samsa", "super.users=User:ANONYMOUS",
	)
	pem, err := os.ReadFile(files.CA)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	adm := kadm.NewClient(testutil.NewClient(t, b.Node.ListenerAddr("SSL"),
		kgo.DialTLSConfig(&tls.Config{RootCAs: pool, ServerName: "localhost"})))
	ctx := ctxT(t, 30*time.Second)
	if _, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "tess", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "t-secret"}}); err != nil {
		t.Fatal(err)
	}
	testutil.CreateTopic(t, adm, "tls-topic", 1)
	if _, err := adm.CreateACLs(ctx, kadm.NewACLs().Topics("tls-topic").Allow("User:tess").AllowHosts("*").Operations(kadm.OpDescribe)); err != nil {
		t.Fatal(err)
	}
	tok := csrfRE.FindStringSubmatch(w.mustGet("/console/login"))[1]
	st, body := w.postRaw("/console/login", url.Values{"csrf": {tok}, "username": {"tess"}, "password": {"t-secret"},
		"mechanism": {"SCRAM-SHA-256"}, "next": {"/console/topics"}}, nil)
	if st != http.StatusOK {
		t.Fatalf("login over SASL_SSL: status %d\n%s", st, body)
	}
	if got := column(rows(t, body, "topics"), 0); fmt.Sprint(got) != "[tls-topic]" {
		t.Errorf("tess's topics over SASL_SSL %q, want [tls-topic]", got)
	}

	mtls := testutil.StartBroker(t, "admin.listener=127.0.0.1:0",
		"listeners=SSL://127.0.0.1:0", "inter.broker.listener.name=SSL",
		"ssl.keystore.location="+files.Server, "ssl.truststore.location="+files.CA,
		"ssl.client.auth=required", "ssl.keystore.location="+files.Server)
	if u := mtls.Node.ConsoleURL(); u != "" {
		t.Errorf("a broker with only an mTLS listener serves a console at %s", u)
	}
}

// TestConsoleAnswersJunkInputWithoutServerErrors sends every page and
// form values it does not expect: each is a page (200) or a refusal
// (400), never a server error or a dropped connection.
func TestConsoleAnswersJunkInputWithoutServerErrors(t *testing.T) {
	t.Parallel()
	b, w := startConsole(t)
	testutil.CreateTopic(t, b.Admin(), "t", 1)
	junk := []string{"", "-1", "99999999999999999999", "%00", "<b>", strings.Repeat("x", 4096), "all", "NaN", "1e9", "\u202e"}
	paths := []string{"/console/topic?name=", "/console/messages?topic=t&partition=", "/console/messages?topic=t&seek=offset&offset=",
		"/console/messages?topic=t&seek=timestamp&timestamp=", "/console/messages?topic=t&count=", "/console/messages?topic=t&order=",
		"/console/group?name=", "/console/groups?q=", "/console/topics?q=", "/console/brokers?broker=", "/console/api/group-lag?name=",
		"/console/messages?topic="}
	for _, p := range paths {
		for _, j := range junk {
			st, body := w.get(p + url.QueryEscape(j))
			if st != http.StatusOK && st != http.StatusBadRequest {
				t.Errorf("GET %s%q: status %d\n%.300s", p, j, st, body)
			}
		}
	}
	forms := map[string][]string{
		"/console/topics":             {"name", "partitions", "replication_factor", "configs"},
		"/console/topic/partitions":   {"name", "count"},
		"/console/topic/configs":      {"name", "key", "value", "op"},
		"/console/messages":           {"topic", "partition", "key", "value", "headers"},
		"/console/group/reset":        {"name", "topic", "partition", "strategy", "value", "action"},
		"/console/security/acls":      {"principal", "resource_type", "resource_name", "pattern_type", "operation", "permission"},
		"/console/security/users":     {"user", "password", "mechanism"},
		"/console/security/quotas":    {"entity_type", "entity_name", "key", "value"},
		"/console/transactions/abort": {"topic", "partition", "start_offset"},
	}
	for path, fields := range forms {
		for _, j := range junk {
			form := url.Values{}
			for _, f := range fields {
				form.Set(f, j)
			}
			if st, body := w.post(path, form); st != http.StatusOK && st != http.StatusBadRequest {
				t.Errorf("POST %s with %q: status %d\n%.300s", path, j, st, body)
			}
		}
	}
}
