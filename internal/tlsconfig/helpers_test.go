package tlsconfig

import (
	"bytes"
	"crypto/tls"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// devPKI is a CA with a server and a client certificate on disk.
type devPKI struct {
	dir   string
	files Files
	ca    *CA
}

func newDevPKI(t *testing.T, hosts ...string) *devPKI {
	t.Helper()
	dir := t.TempDir()
	files, err := GenerateDevCerts(dir, hosts, time.Now())
	if err != nil {
		t.Fatalf("GenerateDevCerts: %v", err)
	}
	certPEM, err := os.ReadFile(files.CA)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM, err := os.ReadFile(files.CAKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := LoadCA(certPEM, keyPEM)
	if err != nil {
		t.Fatalf("LoadCA: %v", err)
	}
	return &devPKI{dir: dir, files: files, ca: ca}
}

// issueFile issues a certificate from ca and writes key and chain to one
// file in dir, usable as ssl.keystore.location.
func issueFile(t *testing.T, ca *CA, dir, name, cn string, hosts []string, notBefore, notAfter time.Time, client bool) string {
	t.Helper()
	certPEM, keyPEM, err := ca.Issue(cn, hosts, notBefore, notAfter, client)
	if err != nil {
		t.Fatalf("Issue: %v", err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, append(keyPEM, certPEM...), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func newServer(t *testing.T, cfg Config) *Server {
	t.Helper()
	s, err := NewServer(cfg, nil)
	if err != nil {
		t.Fatalf("NewServer: %v", err)
	}
	return s
}

func newClient(t *testing.T, cfg Config, serverName string) *tls.Config {
	t.Helper()
	c, err := NewClient(cfg, serverName)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	return c
}

// conns is one TLS connection over loopback, both ends.
type conns struct {
	server, client       *tls.Conn
	serverErr, clientErr error
}

// handshake connects a client to a server over 127.0.0.1 and runs both
// handshakes. The connections are closed at the end of the test. In TLS
// 1.3 the client may finish before the server rejects its certificate, so
// the server's error is the verdict on client authentication.
func handshake(t *testing.T, serverCfg, clientCfg *tls.Config) conns {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type accepted struct {
		conn *tls.Conn
		err  error
	}
	ch := make(chan accepted, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			ch <- accepted{err: err}
			return
		}
		sc := tls.Server(c, serverCfg)
		_ = sc.SetDeadline(time.Now().Add(10 * time.Second))
		ch <- accepted{conn: sc, err: sc.Handshake()}
	}()
	raw, err := net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	cc := tls.Client(raw, clientCfg)
	_ = cc.SetDeadline(time.Now().Add(10 * time.Second))
	cerr := cc.Handshake()
	if cerr != nil {
		cc.Close()
	}
	a := <-ch
	if a.conn == nil {
		cc.Close()
		t.Fatalf("accept: %v", a.err)
	}
	if a.err != nil {
		a.conn.Close()
	}
	t.Cleanup(func() {
		cc.Close()
		a.conn.Close()
	})
	return conns{server: a.conn, client: cc, serverErr: a.err, clientErr: cerr}
}

// ok fails the test unless both ends completed the handshake, and checks
// that bytes flow from client to server.
func (c conns) ok(t *testing.T) {
	t.Helper()
	if c.serverErr != nil || c.clientErr != nil {
		t.Fatalf("handshake failed: server: %v; client: %v", c.serverErr, c.clientErr)
	}
	ping(t, c)
}

// refused fails the test if the server accepted the handshake.
func (c conns) refused(t *testing.T) {
	t.Helper()
	if c.serverErr == nil {
		t.Fatalf("server accepted the handshake (client err: %v)", c.clientErr)
	}
}

func ping(t *testing.T, c conns) {
	t.Helper()
	if _, err := c.client.Write([]byte("ping")); err != nil {
		t.Fatalf("client write: %v", err)
	}
	buf := make([]byte, 4)
	if _, err := c.server.Read(buf); err != nil || string(buf) != "ping" {
		t.Fatalf("server read %q: %v", buf, err)
	}
}

// lockedBuffer collects log output from handshake goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func testLogger(buf *lockedBuffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// fakeClock is a settable clock for Config.Now.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// forceClientCert makes cc send its certificate whatever CAs the server
// names as acceptable; Go's client otherwise sends none that the server
// would not accept, which would turn "wrong CA" tests into "no certificate".
func forceClientCert(cc *tls.Config) {
	if len(cc.Certificates) == 0 {
		return
	}
	cert := cc.Certificates[0]
	cc.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }
}
