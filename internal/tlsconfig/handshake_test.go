package tlsconfig

import (
	"crypto/tls"
	"errors"
	"os"
	"testing"
	"time"
)

func TestHandshakeNegotiatesTLS13AndTLS12(t *testing.T) {
	p := newDevPKI(t)
	srv := newServer(t, Config{KeystoreLocation: p.files.Server})
	for _, tc := range []struct {
		name      string
		clientMax uint16
		want      uint16
	}{
		{"TLSv1.3", tls.VersionTLS13, tls.VersionTLS13},
		{"TLSv1.2", tls.VersionTLS12, tls.VersionTLS12},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cc := newClient(t, Config{TruststoreLocation: p.files.CA, EndpointIdentificationAlgorithm: "https"}, "localhost")
			cc.MaxVersion = tc.clientMax
			c := handshake(t, srv.TLSConfig(), cc)
			c.ok(t)
			if got := c.server.ConnectionState().Version; got != tc.want {
				t.Fatalf("version %s, want %s", tls.VersionName(got), tls.VersionName(tc.want))
			}
		})
	}
}

// Reference: X-06 (TLS 1.0 and 1.1 are refused).
func TestServerRefusesTLS10AndTLS11Clients(t *testing.T) {
	p := newDevPKI(t)
	srv := newServer(t, Config{KeystoreLocation: p.files.Server})
	for _, v := range []uint16{tls.VersionTLS10, tls.VersionTLS11} {
		t.Run(tls.VersionName(v), func(t *testing.T) {
			cc := newClient(t, Config{TruststoreLocation: p.files.CA}, "localhost")
			cc.MinVersion, cc.MaxVersion = v, v
			c := handshake(t, srv.TLSConfig(), cc)
			c.refused(t)
			if c.clientErr == nil {
				t.Fatal("client completed a handshake the server refused")
			}
		})
	}
}

func TestEnabledProtocolsTLS13RefusesTLS12OnlyClient(t *testing.T) {
	p := newDevPKI(t)
	srv := newServer(t, Config{KeystoreLocation: p.files.Server, EnabledProtocols: []string{"TLSv1.3"}})
	cc := newClient(t, Config{TruststoreLocation: p.files.CA}, "localhost")
	cc.MaxVersion = tls.VersionTLS12
	handshake(t, srv.TLSConfig(), cc).refused(t)

	cc = newClient(t, Config{TruststoreLocation: p.files.CA}, "localhost")
	handshake(t, srv.TLSConfig(), cc).ok(t)
}

func TestRequiredClientAuthAcceptsOnlyValidCertificatesFromTruststore(t *testing.T) {
	p := newDevPKI(t)
	other, err := NewCA("other CA", time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	dir := t.TempDir()
	srv := newServer(t, Config{KeystoreLocation: p.files.Server, TruststoreLocation: p.files.CA, ClientAuth: "required"})
	for _, tc := range []struct {
		name     string
		keystore string // client ssl.keystore.location; "" for none
		accept   bool
		wantUser string
	}{
		{"valid", p.files.ClientBundle, true, "User:CN=client"},
		{"no certificate", "", false, ""},
		{"other CA", issueFile(t, other, dir, "other.pem", "client", nil, now.Add(-time.Hour), now.Add(time.Hour), true), false, ""},
		{"expired", issueFile(t, p.ca, dir, "expired.pem", "client", nil, now.Add(-48*time.Hour), now.Add(-24*time.Hour), true), false, ""},
		{"not yet valid", issueFile(t, p.ca, dir, "future.pem", "client", nil, now.Add(24*time.Hour), now.Add(48*time.Hour), true), false, ""},
	} {
		for _, v := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
			t.Run(tc.name+"/"+tls.VersionName(v), func(t *testing.T) {
				cc := newClient(t, Config{KeystoreLocation: tc.keystore, TruststoreLocation: p.files.CA}, "localhost")
				cc.MaxVersion = v
				forceClientCert(cc)
				c := handshake(t, srv.TLSConfig(), cc)
				if !tc.accept {
					c.refused(t)
					return
				}
				c.ok(t)
				got, err := srv.Principal(c.server.ConnectionState())
				if err != nil || got != tc.wantUser {
					t.Fatalf("Principal = %q, %v; want %q", got, err, tc.wantUser)
				}
			})
		}
	}
}

func TestRequestedClientAuthAcceptsNoCertificateAsAnonymous(t *testing.T) {
	p := newDevPKI(t)
	other, err := NewCA("other CA", time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	srv := newServer(t, Config{KeystoreLocation: p.files.Server, TruststoreLocation: p.files.CA, ClientAuth: "requested"})
	for _, tc := range []struct {
		name     string
		keystore string
		accept   bool
		want     string
	}{
		{"no certificate", "", true, Anonymous},
		{"valid certificate", p.files.ClientBundle, true, "User:CN=client"},
		// A certificate that is given is verified.
		{"other CA", issueFile(t, other, t.TempDir(), "other.pem", "client", nil, now.Add(-time.Hour), now.Add(time.Hour), true), false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cc := newClient(t, Config{KeystoreLocation: tc.keystore, TruststoreLocation: p.files.CA}, "localhost")
			forceClientCert(cc)
			c := handshake(t, srv.TLSConfig(), cc)
			if !tc.accept {
				c.refused(t)
				return
			}
			c.ok(t)
			got, err := srv.Principal(c.server.ConnectionState())
			if err != nil || got != tc.want {
				t.Fatalf("Principal = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// Reference: KIP-371.
func TestPrincipalAppliesMappingRules(t *testing.T) {
	p := newDevPKI(t)
	for _, tc := range []struct {
		rules   string
		want    string
		wantErr error
	}{
		{"", "User:CN=client", nil},
		{"DEFAULT", "User:CN=client", nil},
		{"RULE:^CN=(.*)$/svc-$1/U", "User:SVC-CLIENT", nil},
		{"RULE:^CN=admin$/root/, DEFAULT", "User:CN=client", nil},
		{"RULE:^CN=admin$/root/", "", ErrNoRuleMatched},
	} {
		t.Run(tc.rules, func(t *testing.T) {
			srv := newServer(t, Config{KeystoreLocation: p.files.Server, TruststoreLocation: p.files.CA, ClientAuth: "required", PrincipalMappingRules: tc.rules})
			c := handshake(t, srv.TLSConfig(), newClient(t, Config{KeystoreLocation: p.files.ClientBundle, TruststoreLocation: p.files.CA}, "localhost"))
			c.ok(t)
			got, err := srv.Principal(c.server.ConnectionState())
			if !errors.Is(err, tc.wantErr) || got != tc.want {
				t.Fatalf("Principal = %q, %v; want %q, %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestPrincipalOfIncompleteHandshakeIsAnError(t *testing.T) {
	p := newDevPKI(t)
	srv := newServer(t, Config{KeystoreLocation: p.files.Server})
	if _, err := srv.Principal(tls.ConnectionState{}); !errors.Is(err, ErrUnverifiedPeer) {
		t.Fatalf("err = %v, want ErrUnverifiedPeer", err)
	}
}

func TestClientVerifiesHostNameUnlessEndpointIdentificationIsEmpty(t *testing.T) {
	p := newDevPKI(t)
	now := time.Now()
	dir := t.TempDir()
	wrongSAN := issueFile(t, p.ca, dir, "wrong.pem", "elsewhere", []string{"elsewhere.example", "10.9.9.9"}, now.Add(-time.Hour), now.Add(time.Hour), false)
	other, err := NewCA("other CA", now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	otherCA := dir + "/other-ca.pem"
	if err := os.WriteFile(otherCA, other.CertPEM(), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		keystore   string
		truststore string
		algorithm  string
		serverName string
		ok         bool
	}{
		{"https matching SAN", p.files.Server, p.files.CA, "https", "localhost", true},
		{"https matching IP SAN", p.files.Server, p.files.CA, "https", "127.0.0.1", true},
		{"https wrong SAN", wrongSAN, p.files.CA, "https", "localhost", false},
		{"HTTPS wrong SAN", wrongSAN, p.files.CA, "HTTPS", "localhost", false},
		{"empty wrong SAN", wrongSAN, p.files.CA, "", "localhost", true},
		{"empty wrong CA", p.files.Server, otherCA, "", "localhost", false},
		{"https wrong CA", p.files.Server, otherCA, "https", "localhost", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, Config{KeystoreLocation: tc.keystore})
			cc := newClient(t, Config{TruststoreLocation: tc.truststore, EndpointIdentificationAlgorithm: tc.algorithm}, tc.serverName)
			c := handshake(t, srv.TLSConfig(), cc)
			if tc.ok {
				c.ok(t)
				return
			}
			if c.clientErr == nil {
				t.Fatal("client accepted the server's certificate")
			}
		})
	}
}

func TestDefaultConfigVerifiesHostName(t *testing.T) {
	p := newDevPKI(t)
	now := time.Now()
	wrongSAN := issueFile(t, p.ca, t.TempDir(), "wrong.pem", "elsewhere", []string{"elsewhere.example"}, now.Add(-time.Hour), now.Add(time.Hour), false)
	srv := newServer(t, Config{KeystoreLocation: wrongSAN})
	cfg := DefaultConfig()
	cfg.TruststoreLocation = p.files.CA
	if c := handshake(t, srv.TLSConfig(), newClient(t, cfg, "localhost")); c.clientErr == nil {
		t.Fatal("client with DefaultConfig accepted a certificate for another host")
	}
}

func TestInlinePEMSettings(t *testing.T) {
	p := newDevPKI(t)
	now := time.Now()
	srvCert, srvKey, err := p.ca.Issue("localhost", []string{"localhost"}, now.Add(-time.Hour), now.Add(time.Hour), false)
	if err != nil {
		t.Fatal(err)
	}
	cliCert, cliKey, err := p.ca.Issue("inline-client", nil, now.Add(-time.Hour), now.Add(time.Hour), true)
	if err != nil {
		t.Fatal(err)
	}
	ca := string(p.ca.CertPEM())
	srv := newServer(t, Config{
		KeystoreCertificateChain: string(srvCert),
		KeystoreKey:              string(srvKey),
		TruststoreCertificates:   ca,
		ClientAuth:               "required",
	})
	cc := newClient(t, Config{
		KeystoreCertificateChain:        string(cliCert),
		KeystoreKey:                     string(cliKey),
		TruststoreCertificates:          ca,
		EndpointIdentificationAlgorithm: "https",
	}, "localhost")
	c := handshake(t, srv.TLSConfig(), cc)
	c.ok(t)
	if got, err := srv.Principal(c.server.ConnectionState()); err != nil || got != "User:CN=inline-client" {
		t.Fatalf("Principal = %q, %v", got, err)
	}
}

func TestEncryptedKeyNeedsTheRightPassword(t *testing.T) {
	p := newDevPKI(t)
	now := time.Now()
	certPEM, keyPEM, err := p.ca.Issue("localhost", []string{"localhost"}, now.Add(-time.Hour), now.Add(time.Hour), false)
	if err != nil {
		t.Fatal(err)
	}
	encKey, err := EncryptKeyPEM(keyPEM, "s3cret")
	if err != nil {
		t.Fatal(err)
	}
	path := t.TempDir() + "/server.pem"
	if err := os.WriteFile(path, append(encKey, certPEM...), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		cfg      Config
		wantErr  error
		contains string
	}{
		{"file right password", Config{KeystoreLocation: path, KeyPassword: "s3cret"}, nil, ""},
		{"file wrong password", Config{KeystoreLocation: path, KeyPassword: "wrong"}, ErrKeyPassword, "ssl.key.password"},
		{"file no password", Config{KeystoreLocation: path}, ErrKeyPassword, "ssl.key.password"},
		{"inline right password", Config{KeystoreCertificateChain: string(certPEM), KeystoreKey: string(encKey), KeyPassword: "s3cret"}, nil, ""},
		{"inline wrong password", Config{KeystoreCertificateChain: string(certPEM), KeystoreKey: string(encKey), KeyPassword: "nope"}, ErrKeyPassword, "ssl.key.password"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, err := NewServer(tc.cfg, nil)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || !errors.Is(err, ErrInvalidConfig) || !contains(err.Error(), tc.contains) {
					t.Fatalf("err = %v, want %v naming %s", err, tc.wantErr, tc.contains)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			handshake(t, srv.TLSConfig(), newClient(t, Config{TruststoreLocation: p.files.CA, EndpointIdentificationAlgorithm: "https"}, "localhost")).ok(t)
		})
	}
}
