package cluster

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// TestCheckMemberTLS checks the rules between an embedded member's TLS
// settings and the schemes of its URLs, and that each refusal names the
// setting at fault.
func TestCheckMemberTLS(t *testing.T) {
	peer := &MemberTLS{CertFile: "p.pem", KeyFile: "p-key.pem", CAFile: "ca.pem"}
	client := &MemberTLS{CertFile: "c.pem", KeyFile: "c-key.pem"}
	tests := []struct {
		name string
		ec   EmbeddedConfig
		want string // in the ErrEtcdConfig error; "" for none
	}{
		{"plain text", EmbeddedConfig{InitialCluster: "a=http://h:1", ListenClientURLs: []string{"unix:///s", "http://h:2"}}, ""},
		{"TLS both sides", EmbeddedConfig{PeerTLS: peer, ClientTLS: client, InitialCluster: "a=https://h:1, b=https://g:1",
			ListenPeerURLs: []string{"https://0.0.0.0:1"}, AdvertiseClientURLs: []string{"https://h:2", "unixs:///s"}}, ""},
		{"peer without CA", EmbeddedConfig{PeerTLS: &MemberTLS{CertFile: "p.pem", KeyFile: "p-key.pem"}}, "set all three"},
		{"client without key", EmbeddedConfig{ClientTLS: &MemberTLS{CertFile: "c.pem", CAFile: "ca.pem"}}, "etcd.client.ssl.cert.file and etcd.client.ssl.key.file: set both"},
		{"peer TLS, one http member", EmbeddedConfig{PeerTLS: peer, InitialCluster: "a=https://h:1,b=http://g:1"},
			"etcd.initial.cluster: http://g:1 is plain text but etcd.peer.ssl.* is set"},
		{"peer TLS, http advertised", EmbeddedConfig{PeerTLS: peer, AdvertisePeerURLs: []string{"http://h:1"}}, "etcd.advertise.peer.urls: http://h:1 is plain text"},
		{"https peer without TLS", EmbeddedConfig{ListenPeerURLs: []string{"https://h:1"}}, "etcd.listen.peer.urls: https://h:1 needs TLS: set etcd.peer.ssl.*"},
		{"client TLS, unix socket", EmbeddedConfig{ClientTLS: client, ListenClientURLs: []string{"unix:///s"}},
			"etcd.listen.client.urls: unix:///s is plain text but etcd.client.ssl.* is set"},
		{"unixs without TLS", EmbeddedConfig{AdvertiseClientURLs: []string{"unixs:///s"}}, "etcd.advertise.client.urls: unixs:///s needs TLS"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkMemberTLS(tt.ec)
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, ErrEtcdConfig) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err %v; want ErrEtcdConfig containing %q", err, tt.want)
			}
		})
	}
}

// TestOpenEmbeddedMemberServesMutualTLS opens a Cluster whose embedded
// member serves peers and clients with mutual TLS: its client URL is
// https:// on loopback, the broker's client (with a certificate of the
// CA) reads and writes metadata through it, and a client without a
// certificate gets nothing.
func TestOpenEmbeddedMemberServesMutualTLS(t *testing.T) {
	dir := t.TempDir()
	ca := newCertAuthority(t)
	memberCert, memberKey := ca.issue(t, dir, "member", x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth)
	member := &MemberTLS{CertFile: memberCert, KeyFile: memberKey, CAFile: ca.file}
	roots := x509.NewCertPool()
	roots.AddCert(ca.cert)
	pair, err := tls.LoadX509KeyPair(memberCert, memberKey)
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	c, err := Open(ctx, Config{
		NodeID:         0,
		DataDir:        filepath.Join(dir, "data"),
		EtcdTLS:        &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12},
		Embedded:       EmbeddedConfig{PeerTLS: member, ClientTLS: member},
		AdvertisedHost: "127.0.0.1",
		AdvertisedPort: 9092,
		SessionTimeout: 2 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	}()
	if u := c.ClientURL(); !strings.HasPrefix(u, "https://127.0.0.1:") {
		t.Fatalf("client URL %q, want https:// on loopback", u)
	}
	if _, err := c.CreateTopic(ctx, "over-tls", 1, 1, nil); err != nil {
		t.Fatal(err)
	}
	waitImage(t, c, "the topic", func(img *Image) bool { return img.Topics["over-tls"] != nil })

	anon, err := clientv3.New(clientv3.Config{Endpoints: []string{c.ClientURL()}, DialTimeout: time.Second,
		TLS: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer anon.Close()
	actx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if _, err := anon.Get(actx, clusterIDKey); err == nil {
		t.Fatal("a client without a certificate read the cluster id")
	}
}

// certAuthority is a CA made for one test.
type certAuthority struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	file string // the CA certificate in PEM
}

func newCertAuthority(t *testing.T) *certAuthority {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "test CA"},
		NotBefore:             time.Now().Add(-time.Minute),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	ca := &certAuthority{cert: cert, key: key, file: filepath.Join(t.TempDir(), "ca.pem")}
	writePEMFile(t, ca.file, "CERTIFICATE", der)
	return ca
}

// issue signs a certificate for cn with a 127.0.0.1 SAN and writes it and
// its key to dir/cn.pem and dir/cn-key.pem.
func (ca *certAuthority) issue(t *testing.T, dir, cn string, usages ...x509.ExtKeyUsage) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Minute),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  usages,
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, cn+".pem"), filepath.Join(dir, cn+"-key.pem")
	writePEMFile(t, certFile, "CERTIFICATE", der)
	writePEMFile(t, keyFile, "EC PRIVATE KEY", kder)
	return certFile, keyFile
}

func writePEMFile(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}
