package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestEndpointTarget checks how endpoints split into scheme and address,
// the way etcd's client reads them.
func TestEndpointTarget(t *testing.T) {
	tests := []struct{ ep, scheme, addr string }{
		{"http://127.0.0.1:2379", "http", "127.0.0.1:2379"},
		{"HTTPS://etcd.example:2379", "https", "etcd.example:2379"},
		{"https://[::1]:2379", "https", "[::1]:2379"},
		{"unix:///var/run/etcd.sock", "unix", "/var/run/etcd.sock"},
		{"unixs:///var/run/etcd.sock", "unixs", "/var/run/etcd.sock"},
		{"unix:etcd.sock", "unix", "etcd.sock"},
		{"10.0.0.4:2379", "", "10.0.0.4:2379"},
	}
	for _, tt := range tests {
		s, a := endpointTarget(tt.ep)
		if s != tt.scheme || a != tt.addr {
			t.Errorf("%s: got %q %q, want %q %q", tt.ep, s, a, tt.scheme, tt.addr)
		}
	}
}

// TestCheckEndpointSchemes checks that endpoints etcd's client would dial
// in plain text despite a TLS config, or with mixed schemes, are refused.
func TestCheckEndpointSchemes(t *testing.T) {
	tests := []struct {
		eps     []string
		withTLS bool
		ok      bool
	}{
		{[]string{"http://a:2379", "http://b:2379"}, false, true},
		{[]string{"unix:///s.sock"}, false, true},
		{[]string{"https://a:2379", "https://b:2379"}, false, true},
		{[]string{"https://a:2379", "b:2379"}, true, true},
		{[]string{"unixs:///s.sock"}, true, true},
		{[]string{"https://a:2379", "http://b:2379"}, false, false},
		{[]string{"http://a:2379"}, true, false},
		{[]string{"unix:///s.sock"}, true, false},
	}
	for _, tt := range tests {
		err := checkEndpointSchemes(tt.eps, tt.withTLS)
		if tt.ok != (err == nil) || (err != nil && !errors.Is(err, ErrEtcdConfig)) {
			t.Errorf("%v with TLS %v: err %v", tt.eps, tt.withTLS, err)
		}
	}
}

// TestOpenRefusesTLSWithEmbeddedEtcd checks that client TLS that does not
// fit the embedded member (TLS to a plain-text member, none to a TLS one)
// and etcd credentials given for an embedded etcd are refused rather than
// ignored, before etcd starts.
func TestOpenRefusesTLSWithEmbeddedEtcd(t *testing.T) {
	member := &MemberTLS{CertFile: "cert.pem", KeyFile: "key.pem"}
	for _, cfg := range []Config{
		{DataDir: t.TempDir(), EtcdTLS: &tls.Config{}},
		{DataDir: t.TempDir(), Embedded: EmbeddedConfig{ClientTLS: member}},
		{DataDir: t.TempDir(), EtcdUsername: "u", EtcdPassword: "p"},
		{DataDir: t.TempDir(), EtcdUsername: "u", EtcdPassword: "p", EtcdTLS: &tls.Config{}, Embedded: EmbeddedConfig{ClientTLS: member}},
	} {
		if _, err := Open(testCtx(t), cfg); !errors.Is(err, ErrEtcdConfig) {
			t.Fatalf("err %v, want ErrEtcdConfig", err)
		}
		if _, err := os.Stat(filepath.Join(cfg.DataDir, "etcd")); !os.IsNotExist(err) {
			t.Fatalf("etcd started (stat: %v)", err)
		}
	}
}

// TestOpenGivesUpOnUnreachableEtcd checks that Open fails after
// EtcdConnectTimeout when no etcd listens at the endpoint, rather than
// waiting for its context, and says what the connection attempt found.
func TestOpenGivesUpOnUnreachableEtcd(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	_, err = Open(ctx, Config{NodeID: 1, EtcdEndpoints: []string{"http://" + addr}, EtcdConnectTimeout: time.Second})
	took := time.Since(start)
	t.Logf("failed after %s: %v", took.Round(time.Millisecond), err)
	if err == nil || !strings.Contains(err.Error(), "did not answer within 1s") || !strings.Contains(err.Error(), "connect:") {
		t.Fatalf("err %v", err)
	}
	if ctx.Err() != nil {
		t.Fatalf("Open ran until its context ended (%s)", took)
	}
}
