package tlsconfig

import (
	"crypto/x509"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestGenerateDevCertsWritesUsableFiles(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	f, err := GenerateDevCerts(dir, nil, now)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		mode fs.FileMode
	}{
		{f.CA, 0o644}, {f.CAKey, 0o600}, {f.Server, 0o600},
		{f.Client, 0o644}, {f.ClientKey, 0o600}, {f.ClientBundle, 0o600},
	} {
		fi, err := os.Stat(tc.path)
		if err != nil {
			t.Fatal(err)
		}
		if filepath.Dir(tc.path) != dir {
			t.Errorf("%s not in %s", tc.path, dir)
		}
		// The umask may clear bits but never adds any.
		if fi.Mode().Perm()&^tc.mode != 0 {
			t.Errorf("%s mode %v, want at most %v", tc.path, fi.Mode().Perm(), tc.mode)
		}
	}
	srv := newServer(t, Config{KeystoreLocation: f.Server})
	leaf := srv.Certificate()
	if !slices.Equal(leaf.DNSNames, []string{"localhost"}) || len(leaf.IPAddresses) != 2 ||
		!leaf.IPAddresses[0].Equal(net.ParseIP("127.0.0.1")) || !leaf.IPAddresses[1].Equal(net.ParseIP("::1")) {
		t.Fatalf("SANs %v %v", leaf.DNSNames, leaf.IPAddresses)
	}
	if !slices.Contains(leaf.ExtKeyUsage, x509.ExtKeyUsageServerAuth) || !slices.Contains(leaf.ExtKeyUsage, x509.ExtKeyUsageClientAuth) {
		t.Fatalf("server certificate EKUs %v, want server and client auth", leaf.ExtKeyUsage)
	}

	// The split client files and the bundle both work, over ::1 too.
	srv = newServer(t, Config{KeystoreLocation: f.Server, TruststoreLocation: f.CA, ClientAuth: "required"})
	certPEM, _ := os.ReadFile(f.Client)
	keyPEM, _ := os.ReadFile(f.ClientKey)
	for _, cfg := range []Config{
		{KeystoreLocation: f.ClientBundle, TruststoreLocation: f.CA},
		{KeystoreCertificateChain: string(certPEM), KeystoreKey: string(keyPEM), TruststoreLocation: f.CA},
	} {
		cfg.EndpointIdentificationAlgorithm = "https"
		c := handshake(t, srv.TLSConfig(), newClient(t, cfg, "127.0.0.1"))
		c.ok(t)
		if got, err := srv.Principal(c.server.ConnectionState()); err != nil || got != "User:CN=client" {
			t.Fatalf("Principal = %q, %v", got, err)
		}
	}
}

func TestGenerateDevCertsRefusesToOverwrite(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "client.key"), []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := GenerateDevCerts(dir, nil, time.Now())
	if !errors.Is(err, fs.ErrExist) {
		t.Fatalf("err = %v, want fs.ErrExist", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("wrote %d files next to an existing one, want none", len(entries)-1)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "client.key")); string(b) != "mine" {
		t.Fatal("existing file overwritten")
	}
}

func TestCAIssuesCertificatesWithHostsAndValidity(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	ca, err := NewCA("test CA", now, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	again, err := LoadCA(ca.CertPEM(), ca.KeyPEM())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		hosts    []string
		client   bool
		wantDNS  []string
		wantIPs  int
		wantEKUs []x509.ExtKeyUsage
	}{
		{"server", []string{"broker-1.example", "10.0.0.1", "fe80::1"}, false, []string{"broker-1.example"}, 2, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}},
		{"client", nil, true, nil, 0, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nb, na := now.Add(-time.Hour), now.Add(time.Hour)
			certPEM, keyPEM, err := again.Issue(tc.name, tc.hosts, nb, na, tc.client)
			if err != nil {
				t.Fatal(err)
			}
			pair, err := parseKeyPair(certPEM, keyPEM, "", "chain", "key")
			if err != nil {
				t.Fatal(err)
			}
			leaf := pair.Leaf
			if len(pair.Certificate) != 2 {
				t.Fatalf("chain of %d certificates, want leaf and CA", len(pair.Certificate))
			}
			if !slices.Equal(leaf.DNSNames, tc.wantDNS) || len(leaf.IPAddresses) != tc.wantIPs || !slices.Equal(leaf.ExtKeyUsage, tc.wantEKUs) {
				t.Fatalf("DNS %v IPs %v EKUs %v", leaf.DNSNames, leaf.IPAddresses, leaf.ExtKeyUsage)
			}
			if !leaf.NotBefore.Equal(nb) || !leaf.NotAfter.Equal(na) || leaf.Subject.CommonName != tc.name {
				t.Fatalf("validity %v..%v subject %v", leaf.NotBefore, leaf.NotAfter, leaf.Subject)
			}
			roots := x509.NewCertPool()
			roots.AddCert(ca.Certificate())
			if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: now, KeyUsages: tc.wantEKUs}); err != nil {
				t.Fatalf("verify: %v", err)
			}
		})
	}
	if _, err := LoadCA(ca.CertPEM(), []byte("junk")); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("LoadCA with a bad key: %v", err)
	}
}
