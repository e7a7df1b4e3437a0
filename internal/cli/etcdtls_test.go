package cli

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"samsa/internal/config"
)

// testCA is a certificate authority made for one test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// file is the CA certificate in PEM.
	file string
}

var serialNo struct {
	sync.Mutex
	n int64
}

func nextSerial() *big.Int {
	serialNo.Lock()
	defer serialNo.Unlock()
	serialNo.n++
	return big.NewInt(serialNo.n)
}

// newTestCA makes an ECDSA CA valid for an hour and writes its certificate
// to dir/name.pem.
func newTestCA(t *testing.T, dir, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          nextSerial(),
		Subject:               pkix.Name{CommonName: name},
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
	ca := &testCA{cert: cert, key: key, file: filepath.Join(dir, name+".pem")}
	writePEM(t, ca.file, "CERTIFICATE", der)
	return ca
}

// issue signs a leaf certificate for cn, valid for an hour with a
// 127.0.0.1 SAN, for servers (server) or clients, and writes it and its
// key to dir/name.pem and dir/name-key.pem.
func (ca *testCA) issue(t *testing.T, dir, name, cn string, server bool) (certFile, keyFile string) {
	t.Helper()
	usage := x509.ExtKeyUsageClientAuth
	if server {
		usage = x509.ExtKeyUsageServerAuth
	}
	return ca.issueFor(t, dir, name, cn, usage)
}

// issueFor is issue with the certificate's extended key usages.
func (ca *testCA) issueFor(t *testing.T, dir, name, cn string, usages ...x509.ExtKeyUsage) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: nextSerial(),
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
	certFile, keyFile = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
	writePEM(t, certFile, "CERTIFICATE", der)
	writePEM(t, keyFile, "EC PRIVATE KEY", kder)
	return certFile, keyFile
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// freePort returns a loopback port that was free a moment ago (etcd cannot
// listen on port 0).
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startTestEtcd starts a single etcd member on loopback whose client URL
// uses scheme; tune adjusts its config (TLS files) before it starts. It
// returns the client URL; the member stops when the test ends.
func startTestEtcd(t *testing.T, scheme string, tune func(*embed.Config)) string {
	t.Helper()
	cfg := embed.NewConfig()
	cfg.Name = "test-etcd"
	cfg.Dir = filepath.Join(t.TempDir(), "etcd")
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	cfg.LogLevel = "error"
	cfg.TickMs, cfg.ElectionMs = 10, 100
	cfg.Metrics = "basic"
	cfg.ListenMetricsUrls = nil
	cfg.MaxTxnOps = 10240
	client := url.URL{Scheme: scheme, Host: "127.0.0.1:" + strconv.Itoa(freePort(t))}
	peer := url.URL{Scheme: "http", Host: "127.0.0.1:" + strconv.Itoa(freePort(t))}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	if tune != nil {
		tune(cfg)
	}
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatalf("start etcd: %v", err)
	}
	t.Cleanup(func() {
		e.Close()
		<-e.Server.StopNotify()
	})
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		t.Fatalf("etcd: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("etcd not ready after 30 s")
	}
	return client.String()
}

// syncBuffer is a bytes.Buffer safe for one writer and concurrent readers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var readyAddr = regexp.MustCompile(`samsa broker ready.* addr=(\S+)`)

// serveRun is `samsa serve` running in-process.
type serveRun struct {
	cancel context.CancelFunc
	stderr *syncBuffer
	done   chan int
}

// startServe starts `samsa serve args...` in-process and returns at once;
// waitReady waits for it.
func startServe(args ...string) *serveRun {
	ctx, cancel := context.WithCancel(context.Background())
	r := &serveRun{cancel: cancel, stderr: &syncBuffer{}, done: make(chan int, 1)}
	go func() {
		r.done <- run(ctx, append([]string{"serve"}, args...), env{
			stdin: strings.NewReader(""), stdout: &bytes.Buffer{}, stderr: r.stderr,
			getenv: func(string) string { return "" },
		})
	}()
	return r
}

// waitReady returns the broker's Kafka address once it is ready, failing
// the test if it exits first or is not ready within 60 s.
func (r *serveRun) waitReady(t *testing.T) string {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		if m := readyAddr.FindStringSubmatch(r.stderr.String()); m != nil {
			return m[1]
		}
		select {
		case code := <-r.done:
			r.cancel()
			t.Fatalf("serve exited %d before it was ready; stderr:\n%s", code, r.stderr.String())
		case <-deadline:
			r.stop(t)
			t.Fatalf("serve not ready after 60 s; stderr:\n%s", r.stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// stop cancels the command and returns its exit code and stderr.
func (r *serveRun) stop(t *testing.T) (int, string) {
	t.Helper()
	r.cancel()
	select {
	case code := <-r.done:
		return code, r.stderr.String()
	case <-time.After(60 * time.Second):
		t.Fatalf("serve did not stop 60 s after cancel; stderr:\n%s", r.stderr.String())
		return 0, ""
	}
}

// runServe runs `samsa serve args...` in-process until the broker is
// ready, and returns its Kafka address and a stop function that cancels
// the command and returns its exit code and stderr.
func runServe(t *testing.T, args ...string) (addr string, stop func() (int, string)) {
	t.Helper()
	r := startServe(args...)
	return r.waitReady(t), func() (int, string) { return r.stop(t) }
}

// produceConsume creates topic with 3 partitions on the broker at addr,
// produces n keyed records with acks=all and reads them all back, checking
// that each partition holds its records once, in order, at offsets 0...
func produceConsume(t *testing.T, addr, topic string, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DefaultProduceTopic(topic), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 3, 1, nil, topic); err != nil {
		t.Fatalf("create topic: %v", err)
	}
	sent := make(map[int32][]string)
	for i := 0; i < n; i++ {
		v := fmt.Sprintf("v%04d", i)
		r, err := cl.ProduceSync(ctx, &kgo.Record{Key: []byte(strconv.Itoa(i % 7)), Value: []byte(v)}).First()
		if err != nil {
			t.Fatalf("produce %s: %v", v, err)
		}
		if want := int64(len(sent[r.Partition])); r.Offset != want {
			t.Fatalf("record %s acknowledged at %d/%d, want offset %d", v, r.Partition, r.Offset, want)
		}
		sent[r.Partition] = append(sent[r.Partition], v)
	}
	got := make(map[int32][]string)
	for total := 0; total < n; {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records: %v", total, n, err)
		}
		for _, fe := range fs.Errors() {
			t.Fatalf("fetch %s/%d: %v", fe.Topic, fe.Partition, fe.Err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if want := int64(len(got[r.Partition])); r.Offset != want {
				t.Fatalf("partition %d: offset %d, want %d", r.Partition, r.Offset, want)
			}
			got[r.Partition] = append(got[r.Partition], string(r.Value))
			total++
		})
	}
	for p, vs := range sent {
		if strings.Join(got[p], ",") != strings.Join(vs, ",") {
			t.Fatalf("partition %d: consumed %v, produced %v", p, got[p], vs)
		}
	}
}

// TestServeExternalEtcdTLS runs `samsa serve` against an external etcd
// that serves TLS and requires client certificates: with the right CA,
// certificate and key the broker starts and serves records; with a CA that
// does not verify the server, without a client certificate, or with a
// client certificate from another CA, it fails to start within
// etcd.connection.timeout.ms, saying why.
func TestServeExternalEtcdTLS(t *testing.T) {
	dir := t.TempDir()
	ca := newTestCA(t, dir, "ca")
	other := newTestCA(t, dir, "other-ca")
	srvCert, srvKey := ca.issue(t, dir, "etcd-server", "etcd", true)
	cliCert, cliKey := ca.issue(t, dir, "samsa-client", "samsa", false)
	strangerCert, strangerKey := other.issue(t, dir, "stranger", "samsa", false)
	endpoint := startTestEtcd(t, "https", func(c *embed.Config) {
		c.ClientTLSInfo.CertFile = srvCert
		c.ClientTLSInfo.KeyFile = srvKey
		c.ClientTLSInfo.TrustedCAFile = ca.file
		c.ClientTLSInfo.ClientCertAuth = true
	})
	base := func(name string) []string {
		return []string{
			"--override", "log.dirs=" + filepath.Join(dir, name),
			"--override", "listeners=PLAINTEXT://127.0.0.1:0",
			"--override", "admin.listener=",
			"--override", "etcd.connection.timeout.ms=3000",
			"--etcd-endpoints", endpoint,
		}
	}

	t.Run("mutual TLS serves records", func(t *testing.T) {
		addr, stop := runServe(t, append(base("good"), "--etcd-cacert", ca.file, "--etcd-cert", cliCert, "--etcd-key", cliKey)...)
		produceConsume(t, addr, "over-tls", 300)
		// The metadata is in the external etcd, under the broker's cluster.
		if code, stderr := stop(); code != ExitOK {
			t.Fatalf("serve exit %d; stderr:\n%s", code, stderr)
		}
		etcdCli, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second,
			TLS: mustEtcdTLS(t, ca.file, cliCert, cliKey), Logger: zap.NewNop()})
		if err != nil {
			t.Fatal(err)
		}
		defer etcdCli.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		resp, err := etcdCli.Get(ctx, "/samsa/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, kv := range resp.Kvs {
			found = found || strings.HasSuffix(string(kv.Key), "/topics/over-tls")
		}
		if !found {
			t.Fatalf("no topics/over-tls key among %d keys in the external etcd", len(resp.Kvs))
		}
	})

	for _, tt := range []struct {
		name  string
		flags []string
		want  []string // all in stderr
	}{
		{"wrong CA", []string{"--etcd-cacert", other.file, "--etcd-cert", cliCert, "--etcd-key", cliKey},
			[]string{"did not answer within 3s", "TLS handshake", "x509: certificate signed by unknown authority"}},
		{"no client certificate", []string{"--etcd-cacert", ca.file},
			[]string{"did not answer within 3s", "refused the TLS client certificate", "certificate required"}},
		{"client certificate of another CA", []string{"--etcd-cacert", ca.file, "--etcd-cert", strangerCert, "--etcd-key", strangerKey},
			[]string{"did not answer within 3s", "refused the TLS client certificate"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			r := runCLI(t, "", append(append([]string{"serve"}, base(strings.ReplaceAll(tt.name, " ", "-"))...), tt.flags...)...)
			took := time.Since(start)
			t.Logf("failed after %s: %s", took.Round(time.Millisecond), strings.TrimSpace(r.stderr))
			if r.code != ExitFailure {
				t.Fatalf("exit %d, want %d; stderr:\n%s", r.code, ExitFailure, r.stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr does not say %q:\n%s", w, r.stderr)
				}
			}
		})
	}
}

// mustEtcdTLS builds the etcd client TLS config the way serve does.
func mustEtcdTLS(t *testing.T, ca, cert, key string) *tls.Config {
	t.Helper()
	b, err := config.Load("", []string{"etcd.endpoints=https://127.0.0.1:1", "etcd.ssl.ca.file=" + ca,
		"etcd.ssl.cert.file=" + cert, "etcd.ssl.key.file=" + key})
	if err != nil {
		t.Fatal(err)
	}
	c, err := b.EtcdTLS()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestServeRefusesBadEtcdTLS checks that serve refuses TLS settings that
// cannot work before it starts anything, naming the config at fault.
func TestServeRefusesBadEtcdTLS(t *testing.T) {
	dir := t.TempDir()
	ca := newTestCA(t, dir, "ca")
	cert, key := ca.issue(t, dir, "client", "samsa", false)
	srvCert, srvKey := ca.issue(t, dir, "server", "etcd", true)
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name  string
		flags []string
		want  string
	}{
		{"cert without key", []string{"--etcd-endpoints", "https://127.0.0.1:1", "--etcd-cert", cert},
			"etcd.ssl.cert.file and etcd.ssl.key.file: set both or neither"},
		{"key of another cert", []string{"--etcd-endpoints", "https://127.0.0.1:1", "--etcd-cert", cert, "--etcd-key", ca.file},
			"etcd.ssl.key.file"},
		{"missing CA file", []string{"--etcd-endpoints", "https://127.0.0.1:1", "--etcd-cacert", filepath.Join(dir, "nope.pem")},
			"etcd.ssl.ca.file=" + strconv.Quote(filepath.Join(dir, "nope.pem")) + ": open"},
		{"CA file not PEM", []string{"--etcd-endpoints", "https://127.0.0.1:1", "--etcd-cacert", notPEM},
			"no PEM CERTIFICATE block"},
		{"plain-text endpoint with TLS", []string{"--etcd-endpoints", "http://127.0.0.1:1", "--etcd-cacert", ca.file},
			"http://127.0.0.1:1 is plain text but etcd.ssl.ca.file is set"},
		{"mixed schemes", []string{"--etcd-endpoints", "https://127.0.0.1:1,http://127.0.0.1:2"},
			"use one scheme for every endpoint"},
		{"TLS with the embedded etcd", []string{"--etcd-cacert", ca.file, "--etcd-cert", cert, "--etcd-key", key},
			"etcd.ssl.ca.file is set but etcd.endpoints is empty"},
		{"embedded peer cert without key", []string{"--override", "etcd.peer.ssl.cert.file=" + cert},
			"etcd.peer.ssl.cert.file, etcd.peer.ssl.key.file and etcd.peer.ssl.ca.file: set all three"},
		{"embedded https peer URL without certificates", []string{"--override", "etcd.initial.cluster=a=https://127.0.0.1:1,b=https://127.0.0.1:2",
			"--override", "etcd.name=a"}, "etcd.initial.cluster: https://127.0.0.1:1 needs TLS: set etcd.peer.ssl.*"},
		{"embedded client CA without certificate", []string{"--override", "etcd.client.ssl.ca.file=" + ca.file},
			"etcd.client.ssl.cert.file and etcd.client.ssl.key.file: set both"},
		{"embedded client TLS on a unix socket", []string{"--override", "etcd.client.ssl.cert.file=" + srvCert, "--override", "etcd.client.ssl.key.file=" + srvKey,
			"--override", "etcd.listen.client.urls=unix:///tmp/e.sock"}, "etcd.listen.client.urls: unix:///tmp/e.sock is plain text but etcd.client.ssl.* is set"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"serve", "--override", "log.dirs=" + filepath.Join(dir, "data"),
				"--override", "listeners=PLAINTEXT://127.0.0.1:0", "--override", "admin.listener="}, tt.flags...)
			r := runCLI(t, "", args...)
			if r.code != ExitMisuse || !strings.Contains(r.stderr, tt.want) || !strings.Contains(r.stderr, "invalid value") {
				t.Fatalf("exit %d, stderr %q; want exit %d and %q", r.code, r.stderr, ExitMisuse, tt.want)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "data")); !os.IsNotExist(err) {
		t.Fatalf("a refused config created the data dir (stat: %v)", err)
	}
}

// TestServeExternalEtcdAuth runs serve against an etcd with user
// authentication on, as a user that may only read and write /samsa/: the
// right password works (and DescribeConfigs hides it), a wrong one fails
// at once with etcd's answer.
func TestServeExternalEtcdAuth(t *testing.T) {
	if raceEnabled {
		t.Skip("etcd's bcrypt login outlasts the etcd client's dial timeout under -race; runs without -race")
	}
	endpoint := startTestEtcd(t, "http", nil)
	etcdCli, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, step := range []func() error{
		func() error { _, err := etcdCli.UserAdd(ctx, "root", "root-secret"); return err },
		func() error { _, err := etcdCli.UserGrantRole(ctx, "root", "root"); return err },
		// samsa's user may read and write /samsa/ and nothing else.
		func() error { _, err := etcdCli.RoleAdd(ctx, "samsa"); return err },
		func() error {
			_, err := etcdCli.RoleGrantPermission(ctx, "samsa", "/samsa/", clientv3.GetPrefixRangeEnd("/samsa/"),
				clientv3.PermissionType(clientv3.PermReadWrite))
			return err
		},
		func() error { _, err := etcdCli.UserAdd(ctx, "samsa", "samsa-secret"); return err },
		func() error { _, err := etcdCli.UserGrantRole(ctx, "samsa", "samsa"); return err },
		func() error { _, err := etcdCli.AuthEnable(ctx); return err },
	} {
		if err := step(); err != nil {
			t.Fatalf("set up etcd auth: %v", err)
		}
	}
	etcdCli.Close()

	dir := t.TempDir()
	args := func(name, password string) []string {
		return []string{"--etcd-endpoints", endpoint,
			"--override", "log.dirs=" + filepath.Join(dir, name),
			"--override", "listeners=PLAINTEXT://127.0.0.1:0", "--override", "admin.listener=",
			"--override", "etcd.connection.timeout.ms=3000",
			"--override", "etcd.username=samsa", "--override", "etcd.password=" + password}
	}

	// A loaded machine (the race detector) can time the login out before
	// etcd answers; that attempt must fail too, and a later one must say
	// why.
	var r result
	for attempt := 1; attempt <= 3; attempt++ {
		start := time.Now()
		r = runCLI(t, "", append([]string{"serve"}, args("bad", "wrong")...)...)
		t.Logf("wrong password failed after %s: %s", time.Since(start).Round(time.Millisecond), strings.TrimSpace(r.stderr))
		if r.code != ExitFailure {
			t.Fatalf("wrong password: exit %d, stderr %q", r.code, r.stderr)
		}
		if strings.Contains(r.stderr, "authentication failed") {
			break
		}
	}
	if !strings.Contains(r.stderr, "authentication failed") {
		t.Fatalf("wrong password: stderr %q, want authentication failed", r.stderr)
	}

	addr, stop := runServe(t, args("good", "samsa-secret")...)
	produceConsume(t, addr, "with-auth", 50)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrDescribeConfigsRequest()
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeBroker, "0"
	req.Resources = append(req.Resources, res)
	req.IncludeSynonyms = true
	resp, err := req.RequestWith(ctx, cl)
	cl.Close()
	if err != nil {
		t.Fatal(err)
	}
	seen := false
	for _, r := range resp.Resources {
		for _, c := range r.Configs {
			if c.Name != "etcd.password" {
				continue
			}
			seen = true
			if c.Value != nil || !c.IsSensitive {
				t.Errorf("etcd.password: value %v, sensitive %v; want hidden", c.Value, c.IsSensitive)
			}
			for _, s := range c.ConfigSynonyms {
				if s.Value != nil {
					t.Errorf("etcd.password synonym %s shows %q", s.Name, *s.Value)
				}
			}
		}
	}
	if !seen {
		t.Error("DescribeConfigs does not list etcd.password")
	}
	if code, stderr := stop(); code != ExitOK {
		t.Fatalf("serve exit %d; stderr:\n%s", code, stderr)
	}
}

// TestConfigValidateHidesEtcdPassword checks that `config validate --print`
// does not print a sensitive config's value.
func TestConfigValidateHidesEtcdPassword(t *testing.T) {
	r := mustRun(t, "", "config", "validate", "--print", "--override", "etcd.endpoints=http://127.0.0.1:1",
		"--override", "etcd.username=samsa", "--override", "etcd.password=s3cret")
	if strings.Contains(r.stdout, "s3cret") || !strings.Contains(r.stdout, "etcd.password=[hidden]\n") ||
		!strings.Contains(r.stdout, "etcd.username=samsa\n") {
		t.Fatalf("stdout %q", r.stdout)
	}
}

func TestConfigValidateHidesListenerScopedSecrets(t *testing.T) {
	r := mustRun(t, "", "config", "validate", "--print",
		"--override", "listeners=PLAINTEXT://127.0.0.1:9092,SASL_PLAINTEXT://127.0.0.1:9093",
		"--override", "inter.broker.listener.name=PLAINTEXT",
		"--override", "sasl.enabled.mechanisms=PLAIN",
		"--override", `listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-s3cret";`)
	if strings.Contains(r.stdout, "alice-s3cret") || !strings.Contains(r.stdout, "listener.name.sasl_plaintext.plain.sasl.jaas.config=[hidden]\n") {
		t.Fatalf("stdout %q", r.stdout)
	}
}
