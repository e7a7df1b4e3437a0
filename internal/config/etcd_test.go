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
// notAfter, for client authentication, and its key, into dir as name.pem
// and name-key.pem.
func pemFiles(t *testing.T, dir, name string, notBefore, notAfter time.Time) (certFile, keyFile string) {
	t.Helper()
	return pemFilesFor(t, dir, name, notBefore, notAfter, x509.ExtKeyUsageClientAuth)
}

// pemFilesFor is pemFiles with the certificate's extended key usages.
func pemFilesFor(t *testing.T, dir, name string, notBefore, notAfter time.Time, usages ...x509.ExtKeyUsage) (certFile, keyFile string) {
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
		ExtKeyUsage:           usages,
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

// TestEtcdMemberTLSConfigs checks the embedded member's etcd.peer.ssl.*
// and etcd.client.ssl.* configs: half-given settings, URLs whose scheme
// does not match them, and certificates not made for their use are
// refused naming the config at fault; the broker's own client of the
// member gets the CA and certificate the rules choose.
func TestEtcdMemberTLSConfigs(t *testing.T) {
	dir := t.TempDir()
	now, later := time.Now().Add(-time.Minute), time.Now().Add(time.Hour)
	both, bothKey := pemFilesFor(t, dir, "member", now, later, x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth)
	server, serverKey := pemFilesFor(t, dir, "server-only", now, later, x509.ExtKeyUsageServerAuth)
	client, clientKey := pemFilesFor(t, dir, "samsa", now, later, x509.ExtKeyUsageClientAuth)
	ca, _ := pemFilesFor(t, dir, "ca", now, later)
	peer := []string{"etcd.peer.ssl.cert.file=" + both, "etcd.peer.ssl.key.file=" + bothKey, "etcd.peer.ssl.ca.file=" + ca}
	cli := []string{"etcd.client.ssl.cert.file=" + both, "etcd.client.ssl.key.file=" + bothKey, "etcd.client.ssl.ca.file=" + ca}
	with := func(base []string, more ...string) []string { return append(append([]string(nil), base...), more...) }

	bad := []struct {
		name string
		set  []string
		want string // in the error
	}{
		{"peer cert alone", []string{"etcd.peer.ssl.cert.file=" + both}, "etcd.peer.ssl.cert.file, etcd.peer.ssl.key.file and etcd.peer.ssl.ca.file: set all three"},
		{"peer without CA", peer[:2], "set all three"},
		{"peer key of another cert", []string{"etcd.peer.ssl.cert.file=" + both, "etcd.peer.ssl.key.file=" + serverKey, "etcd.peer.ssl.ca.file=" + ca},
			"etcd.peer.ssl.cert.file=" + `"` + both + `", etcd.peer.ssl.key.file=`},
		{"peer cert for servers only", []string{"etcd.peer.ssl.cert.file=" + server, "etcd.peer.ssl.key.file=" + serverKey, "etcd.peer.ssl.ca.file=" + ca},
			"etcd.peer.ssl.cert.file=" + `"` + server + `": the certificate's extended key usage does not allow TLS client authentication`},
		{"peer cert for clients only", []string{"etcd.peer.ssl.cert.file=" + client, "etcd.peer.ssl.key.file=" + clientKey, "etcd.peer.ssl.ca.file=" + ca},
			"does not allow TLS server authentication"},
		{"peer CA missing", with(peer[:2], "etcd.peer.ssl.ca.file="+dir+"/none.pem"), "etcd.peer.ssl.ca.file=" + `"` + dir + `/none.pem": open`},
		{"peer TLS with http initial cluster", with(peer, "etcd.initial.cluster=a=https://h0:2380,b=http://h1:2380"),
			"etcd.initial.cluster: http://h1:2380 is plain text but etcd.peer.ssl.* is set: write it https://"},
		{"peer TLS with http listen URL", with(peer, "etcd.listen.peer.urls=http://0.0.0.0:2380"), "etcd.listen.peer.urls: http://0.0.0.0:2380 is plain text"},
		{"https peer URL without peer TLS", []string{"etcd.advertise.peer.urls=https://h1:2380"},
			"etcd.advertise.peer.urls: https://h1:2380 needs TLS: set etcd.peer.ssl.*"},
		{"client CA alone", []string{"etcd.client.ssl.ca.file=" + ca}, "etcd.client.ssl.cert.file and etcd.client.ssl.key.file: set both"},
		{"client TLS on a network port without client certificates", with(cli[:2], "etcd.listen.client.urls=https://0.0.0.0:2379"),
			"https://0.0.0.0:2379, reachable from other hosts, but etcd.client.ssl.ca.file is not set"},
		{"client cert without key", []string{"etcd.client.ssl.cert.file=" + both}, "etcd.client.ssl.cert.file and etcd.client.ssl.key.file: set both"},
		{"client TLS with unix listen URL", with(cli, "etcd.listen.client.urls=unix:///run/e.sock"),
			"etcd.listen.client.urls: unix:///run/e.sock is plain text but etcd.client.ssl.* is set: write it https:// or unixs://"},
		{"https client URL without client TLS", []string{"etcd.listen.client.urls=https://0.0.0.0:2379"},
			"etcd.listen.client.urls: https://0.0.0.0:2379 needs TLS: set etcd.client.ssl.*"},
		{"unixs client URL without client TLS", []string{"etcd.advertise.client.urls=unixs:///run/e.sock"}, "needs TLS: set etcd.client.ssl.*"},
		{"member cert the broker cannot present", []string{"etcd.client.ssl.cert.file=" + server, "etcd.client.ssl.key.file=" + serverKey, "etcd.client.ssl.ca.file=" + ca},
			"etcd.client.ssl.cert.file=" + `"` + server + `": the certificate's extended key usage does not allow TLS client authentication`},
		{"member cert for clients only", []string{"etcd.client.ssl.cert.file=" + client, "etcd.client.ssl.key.file=" + clientKey}, "does not allow TLS server authentication"},
		{"client CA not PEM", with(cli[:2], "etcd.client.ssl.ca.file="+bothKey), "etcd.client.ssl.ca.file=" + `"` + bothKey + `": no PEM CERTIFICATE block`},
		{"broker cert without key", with(cli, "etcd.ssl.cert.file="+client), "etcd.ssl.cert.file and etcd.ssl.key.file: set both or neither"},
		{"member TLS with an external etcd", []string{"etcd.endpoints=https://e1:2379", "etcd.client.ssl.ca.file=" + ca},
			"etcd.client.ssl.ca.file secures the embedded etcd member, but etcd.endpoints names an external etcd"},
		{"password with the embedded member", with(cli, "etcd.username=samsa", "etcd.password=p"), "apply only to an external etcd"},
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
		name       string
		set        []string
		peer       bool
		client     bool
		roots      bool   // RootCAs set
		presenting string // common name of the certificate the broker presents, "" for none
	}{
		{"peer TLS alone", with(peer, "etcd.initial.cluster=a=https://h0:2380,b=https://h1:2380"), true, false, false, ""},
		{"client mTLS with the member's certificate", with(cli, "etcd.listen.client.urls=https://0.0.0.0:2379,unixs:///run/e.sock"), false, true, true, "member"},
		{"client mTLS with a certificate of the broker's", []string{"etcd.client.ssl.cert.file=" + server, "etcd.client.ssl.key.file=" + serverKey,
			"etcd.client.ssl.ca.file=" + ca, "etcd.ssl.cert.file=" + client, "etcd.ssl.key.file=" + clientKey}, false, true, true, "samsa"},
		{"client TLS without client certificates", []string{"etcd.client.ssl.cert.file=" + server, "etcd.client.ssl.key.file=" + serverKey,
			"etcd.ssl.ca.file=" + ca}, false, true, true, "server-only"},
		{"both sides", with(with(peer, cli...), "etcd.ssl.server.name=etcd.internal"), true, true, true, "member"},
	}
	for _, tt := range good {
		t.Run(tt.name, func(t *testing.T) {
			b, err := Load("", tt.set)
			if err != nil {
				t.Fatal(err)
			}
			if b.EtcdPeerTLSOn() != tt.peer || b.EtcdClientTLSOn() != tt.client || b.EtcdTLSOn() != tt.client {
				t.Fatalf("peer TLS %v, client TLS %v, etcd client TLS %v; want %v, %v, %v",
					b.EtcdPeerTLSOn(), b.EtcdClientTLSOn(), b.EtcdTLSOn(), tt.peer, tt.client, tt.client)
			}
			c, err := b.EtcdTLS()
			if err != nil || (c != nil) != tt.client {
				t.Fatalf("EtcdTLS: %v, %v", c, err)
			}
			if c == nil {
				return
			}
			if (c.RootCAs != nil) != tt.roots || c.ServerName != b.EtcdSSLServerName {
				t.Fatalf("roots %v, server name %q", c.RootCAs != nil, c.ServerName)
			}
			got, err := c.GetClientCertificate(&tls.CertificateRequestInfo{})
			if err != nil {
				t.Fatal(err)
			}
			if cn := got.Leaf.Subject.CommonName; cn != tt.presenting {
				t.Fatalf("the broker presents %q, want %q", cn, tt.presenting)
			}
		})
	}
}
