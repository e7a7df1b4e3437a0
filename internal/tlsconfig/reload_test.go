package tlsconfig

import (
	"crypto/tls"
	"os"
	"strings"
	"testing"
	"time"
)

// writeKeystore replaces path with a new server certificate and gives it
// modification time mod, so the change is seen whatever the file system's
// time granularity. It returns the new certificate's serial number.
func writeKeystore(t *testing.T, ca *CA, path string, mod time.Time) string {
	t.Helper()
	now := time.Now()
	certPEM, keyPEM, err := ca.Issue("localhost", []string{"localhost"}, now.Add(-time.Hour), now.Add(time.Hour), false)
	if err != nil {
		t.Fatal(err)
	}
	writeFileAt(t, path, append(keyPEM, certPEM...), mod)
	pair, err := parseKeyPair(certPEM, keyPEM, "", "chain", "key")
	if err != nil {
		t.Fatal(err)
	}
	return pair.Leaf.SerialNumber.String()
}

func writeFileAt(t *testing.T, path string, data []byte, mod time.Time) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, mod, mod); err != nil {
		t.Fatal(err)
	}
}

func serverSerial(c conns) string {
	return c.client.ConnectionState().PeerCertificates[0].SerialNumber.String()
}

func TestServerReloadsChangedKeystoreAtHandshake(t *testing.T) {
	p := newDevPKI(t)
	path := p.dir + "/reloading.pem"
	mod := time.Now().Add(-time.Hour)
	serial1 := writeKeystore(t, p.ca, path, mod)

	clock := &fakeClock{now: time.Now()}
	var logs lockedBuffer
	srv, err := NewServer(Config{KeystoreLocation: path, Now: clock.Now}, testLogger(&logs))
	if err != nil {
		t.Fatal(err)
	}
	dial := func() conns {
		t.Helper()
		cc := newClient(t, Config{TruststoreLocation: p.files.CA, EndpointIdentificationAlgorithm: "https"}, "localhost")
		c := handshake(t, srv.TLSConfig(), cc)
		c.ok(t)
		return c
	}
	first := dial()
	if got := serverSerial(first); got != serial1 {
		t.Fatalf("first serial %s, want %s", got, serial1)
	}

	// A new file is not read before ReloadInterval has passed.
	serial2 := writeKeystore(t, p.ca, path, mod.Add(time.Second))
	clock.Advance(ReloadInterval / 2)
	if got := serverSerial(dial()); got != serial1 {
		t.Fatalf("serial %s within ReloadInterval, want the old %s", got, serial1)
	}
	clock.Advance(ReloadInterval)
	if got := serverSerial(dial()); got != serial2 {
		t.Fatalf("serial %s after reload, want %s", got, serial2)
	}
	if got := srv.Certificate().SerialNumber.String(); got != serial2 {
		t.Fatalf("Certificate serial %s, want %s", got, serial2)
	}
	// The connection opened before the reload still works.
	ping(t, first)
	if got := serverSerial(first); got != serial1 {
		t.Fatalf("old connection's serial changed to %s", got)
	}

	// A broken file keeps the previous certificate, and is logged once.
	writeFileAt(t, path, []byte("-----BEGIN PRIVATE KEY-----\ntruncated"), mod.Add(2*time.Second))
	for range 3 {
		clock.Advance(2 * ReloadInterval)
		if got := serverSerial(dial()); got != serial2 {
			t.Fatalf("serial %s with a broken file, want %s", got, serial2)
		}
	}
	if n := strings.Count(logs.String(), "keeping the previous server certificate"); n != 1 {
		t.Fatalf("logged the broken file %d times, want once:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "ssl.keystore.location") {
		t.Fatalf("log does not name the setting:\n%s", logs.String())
	}

	// A removed file, too.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * ReloadInterval)
	if got := serverSerial(dial()); got != serial2 {
		t.Fatalf("serial %s with the file removed, want %s", got, serial2)
	}

	// Fixed again: the next handshake after the interval sees it.
	serial3 := writeKeystore(t, p.ca, path, mod.Add(3*time.Second))
	clock.Advance(2 * ReloadInterval)
	if got := serverSerial(dial()); got != serial3 {
		t.Fatalf("serial %s after the fix, want %s", got, serial3)
	}
}

func TestServerReloadsChangedTruststore(t *testing.T) {
	p := newDevPKI(t)
	other, err := NewCA("other CA", time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	otherClient := issueFile(t, other, t.TempDir(), "other-client.pem", "other", nil, now.Add(-time.Hour), now.Add(time.Hour), true)
	trust := p.dir + "/trust.pem"
	mod := now.Add(-time.Hour)
	writeFileAt(t, trust, p.ca.CertPEM(), mod)

	clock := &fakeClock{now: now}
	srv := newServer(t, Config{KeystoreLocation: p.files.Server, TruststoreLocation: trust, ClientAuth: "required", Now: clock.Now})
	dial := func() conns {
		cc := newClient(t, Config{KeystoreLocation: otherClient, TruststoreLocation: p.files.CA}, "localhost")
		cc.MaxVersion = tls.VersionTLS12
		forceClientCert(cc)
		return handshake(t, srv.TLSConfig(), cc)
	}
	dial().refused(t)

	writeFileAt(t, trust, append(p.ca.CertPEM(), other.CertPEM()...), mod.Add(time.Second))
	clock.Advance(2 * ReloadInterval)
	c := dial()
	c.ok(t)
	if got, err := srv.Principal(c.server.ConnectionState()); err != nil || got != "User:CN=other" {
		t.Fatalf("Principal = %q, %v", got, err)
	}
}
