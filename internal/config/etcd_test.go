package config

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestEtcdMemberConfigs checks the embedded etcd member settings: their
// defaults, parsing, and the rules between them.
func TestEtcdMemberConfigs(t *testing.T) {
	b, err := Load("", nil)
	if err != nil {
		t.Fatal(err)
	}
	if b.EtcdName != "" || b.EtcdInitialCluster != "" || b.EtcdInitialClusterState != "new" ||
		b.EtcdListenPeerURLs != nil || b.EtcdListenClientURLs != nil {
		t.Fatalf("defaults: %+v", b)
	}
	b, err = Load("", []string{
		"etcd.name=b1",
		"etcd.initial.cluster=b0=http://h0:2380, b1=http://h1:2380",
		"etcd.initial.cluster.state=existing",
		"etcd.listen.peer.urls=http://0.0.0.0:2380",
		"etcd.advertise.peer.urls=http://h1:2380",
		"etcd.listen.client.urls=http://0.0.0.0:2379,unix:///tmp/e.sock",
		"etcd.advertise.client.urls=http://h1:2379",
	})
	if err != nil {
		t.Fatal(err)
	}
	if b.EtcdName != "b1" || b.EtcdInitialCluster != "b0=http://h0:2380, b1=http://h1:2380" || b.EtcdInitialClusterState != "existing" {
		t.Fatalf("parsed: %q %q %q", b.EtcdName, b.EtcdInitialCluster, b.EtcdInitialClusterState)
	}
	if !reflect.DeepEqual(b.EtcdListenClientURLs, []string{"http://0.0.0.0:2379", "unix:///tmp/e.sock"}) ||
		!reflect.DeepEqual(b.EtcdListenPeerURLs, []string{"http://0.0.0.0:2380"}) ||
		!reflect.DeepEqual(b.EtcdAdvertisePeerURLs, []string{"http://h1:2380"}) ||
		!reflect.DeepEqual(b.EtcdAdvertiseClientURLs, []string{"http://h1:2379"}) {
		t.Fatalf("url lists: %+v", b)
	}
	for _, bad := range [][]string{
		{"etcd.initial.cluster.state=joining"},
		{"etcd.endpoints=http://e:2379", "etcd.initial.cluster=a=http://a:2380"},
	} {
		if _, err := Load("", bad); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%v: err %v, want ErrInvalidConfig", bad, err)
		}
	}
}

// pemFiles writes a self-signed ECDSA certificate valid from notBefore to
// notAfter, and its key, into dir as name.pem and name-key.pem.
func pemFiles(t *testing.T, dir, name string, notBefore, notAfter time.Time) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

// TestEtcdClientConfigs checks the rules between etcd.endpoints, the
// etcd.ssl.* files and etcd authentication, and that every refusal names
// the config at fault.
func TestEtcdClientConfigs(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	cert, key := pemFiles(t, dir, "client", now.Add(-time.Minute), now.Add(time.Hour))
	oldCert, oldKey := pemFiles(t, dir, "expired", now.Add(-2*time.Hour), now.Add(-time.Hour))
	otherCert, _ := pemFiles(t, dir, "other", now.Add(-time.Minute), now.Add(time.Hour))
	garbage := filepath.Join(dir, "garbage.pem")
	if err := os.WriteFile(garbage, []byte("-----BEGIN CERTIFICATE-----\nbm90IGRlcg==\n-----END CERTIFICATE-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const https = "etcd.endpoints=https://e1:2379,https://e2:2379"
	bad := []struct {
		name string
		set  []string
		want string // in the error
	}{
		{"cert without key", []string{https, "etcd.ssl.cert.file=" + cert}, "etcd.ssl.cert.file and etcd.ssl.key.file: set both or neither"},
		{"key without cert", []string{https, "etcd.ssl.key.file=" + key}, "etcd.ssl.cert.file and etcd.ssl.key.file: set both or neither"},
		{"key of another cert", []string{https, "etcd.ssl.cert.file=" + otherCert, "etcd.ssl.key.file=" + key}, "private key does not match public key"},
		{"expired cert", []string{https, "etcd.ssl.cert.file=" + oldCert, "etcd.ssl.key.file=" + oldKey}, "etcd.ssl.cert.file=" + `"` + oldCert + `": certificate expired at`},
		{"unreadable CA", []string{https, "etcd.ssl.ca.file=" + dir + "/none.pem"}, "etcd.ssl.ca.file=" + `"` + dir + `/none.pem": open`},
		{"CA is a key", []string{https, "etcd.ssl.ca.file=" + key}, "no PEM CERTIFICATE block"},
		{"CA does not parse", []string{https, "etcd.ssl.ca.file=" + garbage}, "etcd.ssl.ca.file=" + `"` + garbage + `": certificate 1:`},
		{"TLS without endpoints", []string{"etcd.ssl.ca.file=" + cert}, "etcd.ssl.ca.file is set but etcd.endpoints is empty"},
		{"server name without endpoints", []string{"etcd.ssl.server.name=etcd"}, "etcd.ssl.server.name is set but etcd.endpoints is empty"},
		{"auth without endpoints", []string{"etcd.username=u", "etcd.password=p"}, "apply only to an external etcd"},
		{"user without password", []string{https, "etcd.username=u"}, "etcd.username and etcd.password: set both or neither"},
		{"password without user", []string{https, "etcd.password=p"}, "etcd.username and etcd.password: set both or neither"},
		{"http with CA", []string{"etcd.endpoints=http://e1:2379", "etcd.ssl.ca.file=" + cert}, "http://e1:2379 is plain text but etcd.ssl.ca.file is set"},
		{"unix with client cert", []string{"etcd.endpoints=unix:///run/etcd.sock", "etcd.ssl.cert.file=" + cert, "etcd.ssl.key.file=" + key}, "unix:///run/etcd.sock is plain text"},
		{"mixed schemes", []string{"etcd.endpoints=https://e1:2379,http://e2:2379"}, "https://e1:2379 uses TLS but http://e2:2379 does not"},
		{"unknown scheme", []string{"etcd.endpoints=tcp://e1:2379"}, `"tcp://e1:2379": want http://, https://, unix://, unixs:// or host:port`},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load("", tt.set)
			if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err %v; want ErrInvalidConfig containing %q", err, tt.want)
			}
		})
	}

	good := []struct {
		name     string
		set      []string
		tlsOn    bool
		roots    bool // RootCAs set
		clientOK bool // GetClientCertificate set
	}{
		{"embedded", nil, false, false, false},
		{"plain text", []string{"etcd.endpoints=http://e1:2379,e2:2379"}, false, false, false},
		{"https with system roots", []string{https}, true, false, false},
		{"unixs", []string{"etcd.endpoints=unixs:///run/etcd.sock"}, true, false, false},
		{"bare host with CA", []string{"etcd.endpoints=e1:2379", "etcd.ssl.ca.file=" + cert}, true, true, false},
		{"mutual TLS", []string{https, "etcd.ssl.ca.file=" + cert, "etcd.ssl.cert.file=" + cert, "etcd.ssl.key.file=" + key,
			"etcd.ssl.server.name=etcd.internal", "etcd.username=samsa", "etcd.password=s3cret"}, true, true, true},
	}
	for _, tt := range good {
		t.Run(tt.name, func(t *testing.T) {
			b, err := Load("", tt.set)
			if err != nil {
				t.Fatal(err)
			}
			c, err := b.EtcdTLS()
			if err != nil {
				t.Fatal(err)
			}
			if b.EtcdTLSOn() != tt.tlsOn || (c != nil) != tt.tlsOn {
				t.Fatalf("TLS on %v, config %v; want %v", b.EtcdTLSOn(), c != nil, tt.tlsOn)
			}
			if c == nil {
				return
			}
			if c.MinVersion != tls.VersionTLS12 || (c.RootCAs != nil) != tt.roots || (c.GetClientCertificate != nil) != tt.clientOK {
				t.Fatalf("config: min version %x, roots %v, client cert %v", c.MinVersion, c.RootCAs != nil, c.GetClientCertificate != nil)
			}
		})
	}
	b, err := Load("", good[len(good)-1].set)
	if err != nil {
		t.Fatal(err)
	}
	if b.EtcdSSLServerName != "etcd.internal" || b.EtcdUsername != "samsa" || b.EtcdPassword != "s3cret" || b.EtcdConnectionTimeoutMs != 18000 {
		t.Fatalf("parsed: %q %q %q %d", b.EtcdSSLServerName, b.EtcdUsername, b.EtcdPassword, b.EtcdConnectionTimeoutMs)
	}
	if d, _ := LookupBroker("etcd.password"); d.Type != TypePassword || !d.Sensitive {
		t.Fatalf("etcd.password: type %s, sensitive %v", d.Type, d.Sensitive)
	}
}

// TestEtcdClientCertificateReloads checks that the client key pair is read
// at each handshake: a renewed pair is used at once, and a pair that fails
// to load (half written) falls back to the last good one.
func TestEtcdClientCertificateReloads(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	cert, key := pemFiles(t, dir, "client", now.Add(-time.Minute), now.Add(time.Hour))
	b, err := Load("", []string{"etcd.endpoints=https://e1:2379", "etcd.ssl.cert.file=" + cert, "etcd.ssl.key.file=" + key})
	if err != nil {
		t.Fatal(err)
	}
	c, err := b.EtcdTLS()
	if err != nil {
		t.Fatal(err)
	}
	serial := func() string {
		t.Helper()
		got, err := c.GetClientCertificate(&tls.CertificateRequestInfo{})
		if err != nil || got == nil || len(got.Certificate) == 0 {
			t.Fatalf("GetClientCertificate: %v, %v", got, err)
		}
		leaf, err := x509.ParseCertificate(got.Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		return leaf.Subject.CommonName + "/" + leaf.NotAfter.UTC().Format(time.RFC3339)
	}
	first := serial()
	// Renew: same names, new key and validity.
	renewed := filepath.Join(dir, "renewed")
	if err := os.Mkdir(renewed, 0o755); err != nil {
		t.Fatal(err)
	}
	rc, rk := pemFiles(t, renewed, "client", now.Add(-time.Minute), now.Add(2*time.Hour))
	for _, mv := range [][2]string{{rc, cert}, {rk, key}} {
		if err := os.Rename(mv[0], mv[1]); err != nil {
			t.Fatal(err)
		}
	}
	second := serial()
	if second == first {
		t.Fatalf("renewed certificate not picked up: still %s", first)
	}
	if err := os.WriteFile(key, []byte("half written"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := serial(); got != second {
		t.Fatalf("with a broken key file: %s, want the last good %s", got, second)
	}
}
