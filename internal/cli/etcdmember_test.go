package cli

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/goleak"
	"go.uber.org/zap"
)

// memberCerts are the files of one test of embedded members with TLS.
type memberCerts struct {
	dir   string
	ca    *testCA // signs every certificate the cluster trusts
	other *testCA // a CA the cluster does not trust
}

// peer issues a peer certificate of ca (server and client usage, as
// members present it both ways) and returns the three etcd.peer.ssl.*
// overrides for it.
func (m memberCerts) peer(t *testing.T, ca *testCA, name string) []string {
	t.Helper()
	cert, key := ca.issueFor(t, m.dir, name, name, x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth)
	return []string{"--override", "etcd.peer.ssl.cert.file=" + cert, "--override", "etcd.peer.ssl.key.file=" + key,
		"--override", "etcd.peer.ssl.ca.file=" + m.ca.file}
}

// client issues the certificate a member serves its client URL with,
// whose common name is samsa: with no etcd.ssl.cert.file the broker
// presents it to etcd, and etcd authentication takes the common name as
// the user.
func (m memberCerts) client(t *testing.T, name string) []string {
	t.Helper()
	cert, key := m.ca.issueFor(t, m.dir, name, "samsa", x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth)
	return []string{"--override", "etcd.client.ssl.cert.file=" + cert, "--override", "etcd.client.ssl.key.file=" + key,
		"--override", "etcd.client.ssl.ca.file=" + m.ca.file}
}

// etcdClient connects to endpoints as the holder of a certificate of ca
// with common name cn (none when ca is nil), checking the servers against
// the cluster's CA. requestTimeout bounds each request made through get.
func (m memberCerts) etcdClient(t *testing.T, endpoints []string, ca *testCA, cn string) *clientv3.Client {
	t.Helper()
	roots := x509.NewCertPool()
	roots.AddCert(m.ca.cert)
	cfg := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	if ca != nil {
		cert, key := ca.issue(t, m.dir, cn+"-of-"+ca.cert.Subject.CommonName, cn, false)
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 2 * time.Second, TLS: cfg, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// tlsRefusal connects to addr with cfg and returns the alert with which
// the server refuses the client's certificate, or nil if it takes it. In
// TLS 1.3 the server checks the client's certificate after the client's
// side of the handshake is done, so the alert comes with the first read.
func tlsRefusal(t *testing.T, addr string, cfg *tls.Config) error {
	t.Helper()
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := conn.SetReadDeadline(time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	var buf [1]byte
	_, err = conn.Read(buf[:])
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "remote error" {
		return err
	}
	return nil
}

// waitNoLeaks waits out the goroutines etcd's peer servers keep for up to
// its peer read timeout (5 s) after Close, then leaves no goroutine
// behind for TestMain's check.
func waitNoLeaks(t *testing.T) {
	deadline := time.Now().Add(15 * time.Second)
	for {
		err := goleak.Find()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Error(err)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestServeEmbeddedEtcdMutualTLS covers X-14 for the embedded etcd: three
// brokers embed the three members of one etcd cluster whose peers and
// clients all speak mutual TLS.
//
//  1. The cluster forms and serves metadata: a topic created through one
//     broker is in every broker's metadata, and its records read back.
//  2. Each member's client URL refuses a client without a certificate, or
//     with one from another CA, and plain text; a client with a
//     certificate of the cluster's CA reads the metadata.
//  3. Each member's peer URL refuses a peer without a certificate, or with
//     one from another CA; a member whose peer certificate is from another
//     CA cannot join (after etcdctl member add, as an operator would).
//  4. With etcd authentication on, a root user and a samsa role that may
//     only read and write /samsa/, the brokers (whose certificates' common
//     name is samsa) still create topics and restart, the samsa user
//     cannot touch keys outside /samsa/, and a certificate of the CA
//     whose common name is no etcd user reads nothing.
func TestServeEmbeddedEtcdMutualTLS(t *testing.T) {
	t.Cleanup(func() { waitNoLeaks(t) })
	dir := t.TempDir()
	certs := memberCerts{dir: dir, ca: newTestCA(t, dir, "ca"), other: newTestCA(t, dir, "other-ca")}

	const n = 3
	peerURLs, clientURLs := make([]string, n+1), make([]string, n+1)
	var initial []string
	for i := range n + 1 {
		peerURLs[i] = "https://127.0.0.1:" + strconv.Itoa(freePort(t))
		clientURLs[i] = "https://127.0.0.1:" + strconv.Itoa(freePort(t))
		if i < n {
			initial = append(initial, fmt.Sprintf("samsa-%d=%s", i, peerURLs[i]))
		}
	}
	args := func(i int, initial []string, peer []string, more ...string) []string {
		a := []string{
			"--override", "node.id=" + strconv.Itoa(i),
			"--override", "log.dirs=" + filepath.Join(dir, "broker-"+strconv.Itoa(i)),
			"--override", "listeners=PLAINTEXT://127.0.0.1:0",
			"--override", "admin.listener=",
			"--override", "offsets.topic.num.partitions=1",
			"--override", "etcd.name=samsa-" + strconv.Itoa(i),
			"--override", "etcd.initial.cluster=" + strings.Join(initial, ","),
			"--override", "etcd.listen.client.urls=" + clientURLs[i],
		}
		return append(append(append(a, peer...), certs.client(t, "member-"+strconv.Itoa(i))...), more...)
	}
	brokerArgs := make([][]string, n)
	for i := range n {
		brokerArgs[i] = args(i, initial, certs.peer(t, certs.ca, "peer-"+strconv.Itoa(i)))
	}
	// Broker 2 presents a client certificate of its own rather than its
	// member's.
	ownCert, ownKey := certs.ca.issue(t, dir, "broker-2-client", "samsa", false)
	brokerArgs[2] = append(brokerArgs[2], "--override", "etcd.ssl.cert.file="+ownCert, "--override", "etcd.ssl.key.file="+ownKey)

	// A new etcd cluster is ready once a majority of its members runs, so
	// the brokers start together.
	runs := make([]*serveRun, n)
	for i := range n {
		runs[i] = startServe(brokerArgs[i]...)
	}
	addrs := make([]string, n)
	for i, r := range runs {
		addrs[i] = r.waitReady(t)
	}
	t.Cleanup(func() {
		// NB: stopped one after another, the last broker would find no
		// etcd quorum to deregister with and exit 1; the first one has it.
		for _, r := range runs {
			r.cancel()
		}
		for i, r := range runs {
			if code, stderr := r.stop(t); code != ExitOK {
				t.Logf("broker %d: serve exit %d; stderr:\n%s", i, code, stderr)
			}
		}
	})

	t.Run("cluster serves metadata", func(t *testing.T) {
		produceConsume(t, addrs[0], "before-auth", 60)
		for i := range n {
			waitTopicOn(t, addrs, i, "before-auth")
		}
	})

	t.Run("client URLs refuse strangers", func(t *testing.T) {
		roots := x509.NewCertPool()
		roots.AddCert(certs.ca.cert)
		strangerCert, strangerKey := certs.other.issue(t, dir, "stranger", "samsa", false)
		stranger, err := tls.LoadX509KeyPair(strangerCert, strangerKey)
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			host := strings.TrimPrefix(clientURLs[i], "https://")
			if err := tlsRefusal(t, host, &tls.Config{RootCAs: roots}); err == nil || !strings.Contains(err.Error(), "certificate required") {
				t.Errorf("member %d, no certificate: %v, want the certificate required alert", i, err)
			}
			if err := tlsRefusal(t, host, &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{stranger}}); err == nil {
				t.Errorf("member %d took a client certificate of another CA", i)
			}
			for _, cli := range []*clientv3.Client{
				certs.etcdClient(t, clientURLs[i:i+1], nil, ""),
				certs.etcdClient(t, clientURLs[i:i+1], certs.other, "samsa"),
			} {
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				_, err := cli.Get(ctx, "/samsa/cluster-id")
				cancel()
				if err == nil {
					t.Errorf("member %d served a client without a certificate of the CA", i)
				}
			}
			resp, err := (&http.Client{Timeout: 2 * time.Second}).Get("http://" + host + "/health")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					t.Errorf("member %d answered plain text", i)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			got, err := certs.etcdClient(t, clientURLs[i:i+1], certs.ca, "samsa").Get(ctx, "/samsa/cluster-id")
			cancel()
			if err != nil || len(got.Kvs) != 1 {
				t.Errorf("member %d, client of the CA: %v, %v", i, got, err)
			}
		}
	})

	t.Run("peer URLs refuse strangers", func(t *testing.T) {
		roots := x509.NewCertPool()
		roots.AddCert(certs.ca.cert)
		pair := func(ca *testCA, name string) tls.Certificate {
			cert, key := ca.issueFor(t, dir, name, name, x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth)
			p, err := tls.LoadX509KeyPair(cert, key)
			if err != nil {
				t.Fatal(err)
			}
			return p
		}
		good, stranger := pair(certs.ca, "peer-probe"), pair(certs.other, "peer-stranger")
		for i := range n {
			for _, tt := range []struct {
				name  string
				certs []tls.Certificate
				ok    bool
			}{{"no certificate", nil, false}, {"certificate of another CA", []tls.Certificate{stranger}, false}, {"peer certificate", []tls.Certificate{good}, true}} {
				hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
					TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: tt.certs, MinVersion: tls.VersionTLS12}}}
				resp, err := hc.Get(peerURLs[i] + "/members")
				if err == nil {
					resp.Body.Close()
				}
				if ok := err == nil && resp.StatusCode == http.StatusOK; ok != tt.ok {
					t.Errorf("member %d, %s: GET /members: %v (ok %v, want %v)", i, tt.name, err, ok, tt.ok)
				}
				hc.CloseIdleConnections()
			}
		}

		// An operator adds a fourth member, whose peer certificate is of
		// another CA (it trusts the cluster's): it cannot fetch the
		// cluster from the members and does not start.
		admin := certs.etcdClient(t, clientURLs[:n], certs.ca, "root")
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		added, err := admin.MemberAdd(ctx, peerURLs[n:n+1])
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if _, err := admin.MemberRemove(ctx, added.Member.ID); err != nil {
				t.Errorf("remove the member that did not join: %v", err)
			}
		}()
		joiner := startServe(args(n, append(initial[:n:n], fmt.Sprintf("samsa-%d=%s", n, peerURLs[n])),
			certs.peer(t, certs.other, "peer-joiner"), "--override", "etcd.initial.cluster.state=existing")...)
		var code int
		select {
		case code = <-joiner.done:
		case <-time.After(90 * time.Second):
			joiner.stop(t)
			t.Fatalf("a member with a peer certificate of another CA still runs after 90 s; stderr:\n%s", joiner.stderr.String())
		}
		stderr := joiner.stderr.String()
		t.Logf("joiner: exit %d: %s", code, strings.TrimSpace(stderr))
		if code != ExitFailure || strings.Contains(stderr, "samsa broker ready") {
			t.Fatalf("joiner: exit %d, want %d; stderr:\n%s", code, ExitFailure, stderr)
		}
		for i := range n {
			if want := peerURLs[i] + ": the server refused the TLS client certificate"; !strings.Contains(stderr, want) {
				t.Errorf("joiner's stderr does not say %q", want)
			}
		}
		members, err := admin.MemberList(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range members.Members {
			if m.ID == added.Member.ID && (m.Name != "" || len(m.ClientURLs) > 0) {
				t.Fatalf("the joiner started: %+v", m)
			}
		}
	})

	t.Run("etcd authentication", func(t *testing.T) {
		admin := certs.etcdClient(t, clientURLs[:n], certs.ca, "root")
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		noPassword := &clientv3.UserAddOptions{NoPassword: true}
		for _, step := range []func() error{
			func() error { _, err := admin.UserAddWithOptions(ctx, "root", "", noPassword); return err },
			func() error { _, err := admin.UserGrantRole(ctx, "root", "root"); return err },
			func() error { _, err := admin.RoleAdd(ctx, "samsa"); return err },
			func() error {
				_, err := admin.RoleGrantPermission(ctx, "samsa", "/samsa/", clientv3.GetPrefixRangeEnd("/samsa/"),
					clientv3.PermissionType(clientv3.PermReadWrite))
				return err
			},
			func() error { _, err := admin.UserAddWithOptions(ctx, "samsa", "", noPassword); return err },
			func() error { _, err := admin.UserGrantRole(ctx, "samsa", "samsa"); return err },
			func() error { _, err := admin.AuthEnable(ctx); return err },
		} {
			if err := step(); err != nil {
				t.Fatalf("set up etcd authentication: %v", err)
			}
		}

		// The brokers write metadata as the samsa user.
		produceConsume(t, addrs[1], "after-auth", 30)
		for i := range n {
			waitTopicOn(t, addrs, i, "after-auth")
		}
		// Broker 2 starts again with authentication on (its member rejoins
		// from its data dir).
		if code, stderr := runs[2].stop(t); code != ExitOK {
			t.Fatalf("broker 2: serve exit %d; stderr:\n%s", code, stderr)
		}
		runs[2] = startServe(brokerArgs[2]...)
		addrs[2] = runs[2].waitReady(t)
		waitTopicOn(t, addrs, 2, "after-auth")

		samsa := certs.etcdClient(t, clientURLs[:n], certs.ca, "samsa")
		if got, err := samsa.Get(ctx, "/samsa/cluster-id"); err != nil || len(got.Kvs) != 1 {
			t.Fatalf("samsa reads /samsa/cluster-id: %v, %v", got, err)
		}
		if _, err := samsa.Put(ctx, "/other", "x"); !errors.Is(err, rpctypes.ErrPermissionDenied) {
			t.Fatalf("samsa writes /other: %v, want permission denied", err)
		}
		if _, err := samsa.Get(ctx, "/", clientv3.WithPrefix()); !errors.Is(err, rpctypes.ErrPermissionDenied) {
			t.Fatalf("samsa reads every key: %v, want permission denied", err)
		}
		if _, err := samsa.AuthDisable(ctx); !errors.Is(err, rpctypes.ErrPermissionDenied) {
			t.Fatalf("samsa turns authentication off: %v, want permission denied", err)
		}
		intruder := certs.etcdClient(t, clientURLs[:n], certs.ca, "intruder")
		if _, err := intruder.Get(ctx, "/samsa/cluster-id"); err == nil {
			t.Fatal("a certificate whose common name is no etcd user read /samsa/cluster-id")
		} else {
			t.Logf("intruder: %v", err)
		}
	})
}

// waitTopicOn waits until the broker at addrs[i] (node id i) answers
// Metadata with topic and with every broker in addrs, failing after 20 s.
func waitTopicOn(t *testing.T, addrs []string, i int, topic string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs[i]))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl.Broker(i))
		cancel()
		var why string
		switch {
		case err != nil:
			why = err.Error()
		case len(resp.Brokers) != len(addrs):
			why = fmt.Sprintf("%d brokers", len(resp.Brokers))
		case len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 || len(resp.Topics[0].Partitions) == 0:
			why = fmt.Sprintf("topic %+v", resp.Topics)
		default:
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("broker %d: metadata of %s: %s", i, topic, why)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
