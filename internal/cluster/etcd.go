package cluster

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Embedded etcd settings. A member alone in its cluster uses short raft
// timings: they only decide how soon it elects itself after start. Members
// of a multi-member cluster exchange heartbeats over the network, on
// machines that may be loaded by the broker itself, so they use timings
// closer to etcd's own defaults (100 ms tick, 1 s election timeout): a
// missed heartbeat or two does not start an election.
const (
	etcdTickMs          = 10
	etcdElectionMs      = 100
	etcdMultiTickMs     = 100
	etcdMultiElectionMs = 1000
	etcdSnapshotCount   = 10000
	// etcdMaxTxnOps lets one transaction create a topic with up to
	// etcdMaxTxnOps-1 partitions (etcd's default is 128 operations).
	etcdMaxTxnOps = 10240
	// etcdCompaction keeps an hour of history: long enough for a watcher
	// that fell behind to resume without a full reload.
	etcdCompaction = "1h"
	// maxUnixSocketPath is below the smallest sun_path limit (104 bytes on
	// the BSDs, 108 on Linux); longer data dirs fall back to loopback TCP.
	maxUnixSocketPath = 100
	etcdStartTimeout  = 30 * time.Second
	// etcdMultiStartTimeout bounds the wait for a member of a new
	// multi-member cluster, which is ready only once a majority of the
	// members in etcd.initial.cluster run: start them within this time.
	etcdMultiStartTimeout = 5 * time.Minute
	// etcdAutoSync is how often a client of a multi-member cluster
	// refreshes its endpoints from the member list.
	etcdAutoSync = 30 * time.Second
)

// EmbeddedConfig configures the embedded etcd member, under the names of
// etcd's own flags. The zero value is a single member of its own, with
// clients on a unix socket in the data dir and peers on a free loopback
// port.
type EmbeddedConfig struct {
	// Name is the member name (etcd --name); "" is samsa-<node id>.
	Name string
	// InitialCluster is etcd --initial-cluster, name=peerURL,...; "" runs
	// a single member alone.
	InitialCluster string
	// InitialClusterState is "new" (the default) or "existing".
	InitialClusterState string
	// ListenPeerURLs default to this member's URLs in InitialCluster
	// (a free loopback port without InitialCluster); AdvertisePeerURLs
	// default to ListenPeerURLs, or to the InitialCluster URLs when set.
	ListenPeerURLs, AdvertisePeerURLs []string
	// ListenClientURLs default to a unix socket in the data dir (loopback
	// TCP when its path is too long; https://127.0.0.1:<free port> with
	// ClientTLS); AdvertiseClientURLs to ListenClientURLs.
	ListenClientURLs, AdvertiseClientURLs []string
	// PeerTLS, if set, secures the traffic between members with mutual
	// TLS (etcd --peer-cert-file, --peer-key-file, --peer-trusted-ca-file,
	// --peer-client-cert-auth). All three files are required. Every peer
	// URL, those of the other members in InitialCluster included, must
	// then be https://; without PeerTLS, none may be.
	PeerTLS *MemberTLS
	// ClientTLS, if set, serves the client URLs over TLS (etcd
	// --cert-file, --key-file), and with a CAFile asks every client for a
	// certificate that CAFile verifies (--trusted-ca-file,
	// --client-cert-auth); with etcd authentication on, that
	// certificate's common name is the client's etcd user. Every client
	// URL must then be https:// or unixs://: etcd would serve an http://
	// or unix:// one in plain text, without asking for certificates.
	// Without ClientTLS, none may be. Config.EtcdTLS is the broker's own
	// client side and is required with ClientTLS.
	ClientTLS *MemberTLS
}

// MemberTLS names the PEM files of one side (peer or client) of an
// embedded member's TLS. etcd reads the certificate and key again at each
// handshake, so a renewed pair needs no restart; it reads CAFile once, at
// start.
type MemberTLS struct {
	// CertFile and KeyFile are the member's certificate and unencrypted
	// key. A peer certificate serves both ends of a peer connection, so
	// it needs the server and client authentication usages and names
	// the member's host; etcd also checks that a connecting peer's
	// certificate names the address it connects from, when it names any.
	CertFile, KeyFile string
	// CAFile holds the CA certificates that verify the other end's
	// certificate: peers both ways, or clients.
	CAFile string
}

// tlsInfo is etcd's form of m. A CAFile makes the member ask the other end
// for a certificate that CAFile verifies.
func (m *MemberTLS) tlsInfo() transport.TLSInfo {
	return transport.TLSInfo{
		CertFile:       m.CertFile,
		KeyFile:        m.KeyFile,
		TrustedCAFile:  m.CAFile,
		ClientCertAuth: m.CAFile != "",
	}
}

// embedded is a started member and the endpoints its clients use.
type embedded struct {
	e *embed.Etcd
	// clientURL is this member's first advertised client URL.
	clientURL string
	// endpoints are the client URLs of every member known at start, this
	// member's first.
	endpoints []string
	multi     bool
}

// startEmbedded starts an etcd member with its data in <dataDir>/etcd,
// configured by ec (see EmbeddedConfig for the defaults). It blocks until
// the member is ready to serve (for a new multi-member cluster: until a
// majority of members runs), ctx ends, or etcd fails.
func startEmbedded(ctx context.Context, dataDir string, nodeID int32, ec EmbeddedConfig) (*embedded, error) {
	multi := ec.InitialCluster != ""
	cfg := embed.NewConfig()
	cfg.Name = ec.Name
	if cfg.Name == "" {
		cfg.Name = "samsa-" + strconv.Itoa(int(nodeID))
	}
	cfg.Dir = filepath.Join(dataDir, "etcd")
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	cfg.LogLevel = "error"
	cfg.TickMs, cfg.ElectionMs = etcdTickMs, etcdElectionMs
	if multi {
		cfg.TickMs, cfg.ElectionMs = etcdMultiTickMs, etcdMultiElectionMs
	}
	cfg.SnapshotCount = etcdSnapshotCount
	cfg.MaxTxnOps = etcdMaxTxnOps
	cfg.AutoCompactionMode = embed.CompactorModePeriodic
	cfg.AutoCompactionRetention = etcdCompaction
	cfg.EnableGRPCGateway = false
	cfg.Metrics = "basic"
	cfg.ListenMetricsUrls = nil

	if err := checkMemberTLS(ec); err != nil {
		return nil, err
	}
	peerScheme := "http"
	if ec.PeerTLS != nil {
		peerScheme = "https"
		cfg.PeerTLSInfo = ec.PeerTLS.tlsInfo()
	}
	if ec.ClientTLS != nil {
		cfg.ClientTLSInfo = ec.ClientTLS.tlsInfo()
	}

	var err error
	switch {
	case len(ec.ListenClientURLs) > 0:
		if cfg.ListenClientUrls, err = parseURLs("etcd.listen.client.urls", ec.ListenClientURLs); err != nil {
			return nil, err
		}
	case ec.ClientTLS != nil:
		// NB: a unixs:// socket would do, but etcd's client checks a
		// socket's base name in the server certificate, which no
		// certificate is likely to carry.
		port, err := freeLoopbackPort()
		if err != nil {
			return nil, err
		}
		cfg.ListenClientUrls = []url.URL{{Scheme: "https", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}}
	default:
		u, err := clientListenURL(dataDir)
		if err != nil {
			return nil, err
		}
		cfg.ListenClientUrls = []url.URL{u}
	}
	cfg.AdvertiseClientUrls = cfg.ListenClientUrls
	if len(ec.AdvertiseClientURLs) > 0 {
		if cfg.AdvertiseClientUrls, err = parseURLs("etcd.advertise.client.urls", ec.AdvertiseClientURLs); err != nil {
			return nil, err
		}
	}

	var ownPeers []url.URL
	if multi {
		cfg.InitialCluster = strings.Join(splitTrim(ec.InitialCluster), ",")
		if ownPeers, err = initialClusterURLs(cfg.InitialCluster, cfg.Name); err != nil {
			return nil, err
		}
	}
	switch {
	case len(ec.ListenPeerURLs) > 0:
		if cfg.ListenPeerUrls, err = parseURLs("etcd.listen.peer.urls", ec.ListenPeerURLs); err != nil {
			return nil, err
		}
	case multi:
		cfg.ListenPeerUrls = ownPeers
	default:
		port, err := freeLoopbackPort()
		if err != nil {
			return nil, err
		}
		cfg.ListenPeerUrls = []url.URL{{Scheme: peerScheme, Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}}
	}
	switch {
	case len(ec.AdvertisePeerURLs) > 0:
		if cfg.AdvertisePeerUrls, err = parseURLs("etcd.advertise.peer.urls", ec.AdvertisePeerURLs); err != nil {
			return nil, err
		}
	case multi:
		cfg.AdvertisePeerUrls = ownPeers
	default:
		cfg.AdvertisePeerUrls = cfg.ListenPeerUrls
	}
	if !multi {
		cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	}
	cfg.ClusterState = embed.ClusterStateFlagNew
	switch ec.InitialClusterState {
	case "", embed.ClusterStateFlagNew:
	case embed.ClusterStateFlagExisting:
		cfg.ClusterState = embed.ClusterStateFlagExisting
	default:
		return nil, fmt.Errorf("%w: etcd.initial.cluster.state %q: want new or existing", ErrEtcdConfig, ec.InitialClusterState)
	}

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("cluster: start embedded etcd in %s: %w%s", cfg.Dir, err, diagnosePeers(ctx, cfg))
	}
	wait := etcdStartTimeout
	if multi {
		wait = etcdMultiStartTimeout
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("cluster: embedded etcd: %w", err)
	case <-ctx.Done():
		e.Close()
		return nil, fmt.Errorf("cluster: start embedded etcd: %w", ctx.Err())
	case <-timer.C:
		e.Close()
		return nil, fmt.Errorf("cluster: embedded etcd not ready after %s%s", wait, diagnosePeers(ctx, cfg))
	}
	own := cfg.AdvertiseClientUrls[0].String()
	out := &embedded{e: e, clientURL: own, endpoints: []string{own}, multi: multi}
	if multi {
		// Members that have not published their client URLs yet join the
		// list at the client's next auto-sync.
		for _, m := range e.Server.Cluster().Members() {
			for _, u := range m.ClientURLs {
				if !slices.Contains(out.endpoints, u) {
					out.endpoints = append(out.endpoints, u)
				}
			}
		}
	}
	return out, nil
}

// checkMemberTLS refuses TLS settings that are half given, and URLs whose
// scheme does not match them: etcd serves an http:// or unix:// URL in
// plain text even when given certificates, and refuses an https:// one
// without, with an error that names its own flags. URLs left to their
// defaults get the right scheme from startEmbedded.
func checkMemberTLS(ec EmbeddedConfig) error {
	if p := ec.PeerTLS; p != nil && (p.CertFile == "" || p.KeyFile == "" || p.CAFile == "") {
		return fmt.Errorf("%w: etcd.peer.ssl.cert.file, etcd.peer.ssl.key.file and etcd.peer.ssl.ca.file: set all three for mutual TLS between members", ErrEtcdConfig)
	}
	if c := ec.ClientTLS; c != nil && (c.CertFile == "" || c.KeyFile == "") {
		return fmt.Errorf("%w: etcd.client.ssl.cert.file and etcd.client.ssl.key.file: set both for TLS on the member's client URLs", ErrEtcdConfig)
	}
	var initial []string
	for _, kv := range splitTrim(ec.InitialCluster) {
		if _, u, ok := strings.Cut(kv, "="); ok {
			initial = append(initial, u)
		}
	}
	for _, set := range []struct {
		name   string
		urls   []string
		client bool
	}{
		{"etcd.initial.cluster", initial, false},
		{"etcd.listen.peer.urls", ec.ListenPeerURLs, false},
		{"etcd.advertise.peer.urls", ec.AdvertisePeerURLs, false},
		{"etcd.listen.client.urls", ec.ListenClientURLs, true},
		{"etcd.advertise.client.urls", ec.AdvertiseClientURLs, true},
	} {
		tlsOn, tlsName := ec.PeerTLS != nil, "etcd.peer.ssl.*"
		if set.client {
			tlsOn, tlsName = ec.ClientTLS != nil, "etcd.client.ssl.*"
		}
		for _, raw := range set.urls {
			scheme, _ := endpointTarget(strings.TrimSpace(raw))
			secure := scheme == "https" || (set.client && scheme == "unixs")
			switch {
			case tlsOn && !secure && set.client:
				return fmt.Errorf("%w: %s: %s is plain text but %s is set: write it https:// (or unixs://)", ErrEtcdConfig, set.name, raw, tlsName)
			case tlsOn && !secure:
				return fmt.Errorf("%w: %s: %s is plain text but %s is set: write it https://", ErrEtcdConfig, set.name, raw, tlsName)
			case !tlsOn && secure:
				return fmt.Errorf("%w: %s: %s needs TLS: set %s", ErrEtcdConfig, set.name, raw, tlsName)
			}
		}
	}
	return nil
}

// diagnosePeers dials the peer URLs of the other members in cfg's initial
// cluster as this member does, with its peer TLS, and returns what went
// wrong in diagnose's form. etcd reports a member that cannot reach its
// peers (for a refused peer certificate: "could not retrieve cluster
// information", or no leader) without saying why.
func diagnosePeers(ctx context.Context, cfg *embed.Config) string {
	if ctx.Err() != nil {
		return ""
	}
	var tc *tls.Config
	if !cfg.PeerTLSInfo.Empty() {
		c, err := cfg.PeerTLSInfo.ClientConfig()
		if err != nil {
			return " (peer TLS: " + err.Error() + ")"
		}
		tc = c
	}
	own := make(map[string]bool)
	for _, u := range cfg.AdvertisePeerUrls {
		own[u.String()] = true
	}
	var others []string
	for _, kv := range strings.Split(cfg.InitialCluster, ",") {
		if name, u, ok := strings.Cut(kv, "="); ok && name != cfg.Name && !own[u] {
			others = append(others, u)
		}
	}
	return diagnose(ctx, others, tc)
}

// initialClusterURLs returns the peer URLs of member name in an
// etcd --initial-cluster string.
func initialClusterURLs(initial, name string) ([]url.URL, error) {
	var raw []string
	for _, kv := range strings.Split(initial, ",") {
		n, u, ok := strings.Cut(kv, "=")
		if !ok || n == "" || u == "" {
			return nil, fmt.Errorf("%w: etcd.initial.cluster entry %q: want name=peerURL", ErrEtcdConfig, kv)
		}
		if n == name {
			raw = append(raw, u)
		}
	}
	if len(raw) == 0 {
		return nil, fmt.Errorf("%w: etcd.initial.cluster has no member named %q (etcd.name)", ErrEtcdConfig, name)
	}
	return parseURLs("etcd.initial.cluster", raw)
}

func parseURLs(what string, raw []string) ([]url.URL, error) {
	out := make([]url.URL, 0, len(raw))
	for _, s := range raw {
		u, err := url.Parse(strings.TrimSpace(s))
		if err != nil || u.Scheme == "" || (u.Host == "" && u.Path == "") {
			return nil, fmt.Errorf("%w: %s: bad URL %q", ErrEtcdConfig, what, s)
		}
		out = append(out, *u)
	}
	return out, nil
}

func splitTrim(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// clientListenURL prefers a unix socket in dataDir, which needs no port.
func clientListenURL(dataDir string) (url.URL, error) {
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		return url.URL{}, fmt.Errorf("cluster: data dir %s: %w", dataDir, err)
	}
	sock := filepath.Join(abs, "etcd.sock")
	if len(sock) <= maxUnixSocketPath {
		return url.URL{Scheme: "unix", Path: sock}, nil
	}
	port, err := freeLoopbackPort()
	if err != nil {
		return url.URL{}, err
	}
	return url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}, nil
}

// freeLoopbackPort asks the kernel for a free port. etcd cannot listen on
// port 0 itself, so there is a short window in which another process could
// take the port; starting etcd then fails with an error rather than
// silently sharing it.
func freeLoopbackPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("cluster: pick a free port: %w", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		return 0, fmt.Errorf("cluster: pick a free port: %w", err)
	}
	return port, nil
}

// EmbeddedEtcd is a stand-alone embedded etcd member, for test harnesses
// and tools that run several brokers against one etcd.
type EmbeddedEtcd struct {
	e         *embed.Etcd
	clientURL string
	closeOnce sync.Once
}

// StartEmbeddedEtcd starts a single-member etcd with its data in dir,
// configured as `samsa serve` configures its own.
func StartEmbeddedEtcd(ctx context.Context, dir string) (*EmbeddedEtcd, error) {
	return StartEmbeddedEtcdMember(ctx, dir, EmbeddedConfig{})
}

// StartEmbeddedEtcdMember starts one member of an etcd cluster, configured
// by ec as `samsa serve` configures its own member (the zero EmbeddedConfig
// is StartEmbeddedEtcd's single member; an empty ec.Name is samsa-0), with
// its data in dir. A member of a new multi-member cluster returns once a
// majority of the members in ec.InitialCluster runs.
func StartEmbeddedEtcdMember(ctx context.Context, dir string, ec EmbeddedConfig) (*EmbeddedEtcd, error) {
	m, err := startEmbedded(ctx, dir, 0, ec)
	if err != nil {
		return nil, err
	}
	return &EmbeddedEtcd{e: m.e, clientURL: m.clientURL}, nil
}

// ClientURL is the URL clients connect to (etcd.endpoints).
func (e *EmbeddedEtcd) ClientURL() string { return e.clientURL }

// Close stops the member and waits for it. It is idempotent.
func (e *EmbeddedEtcd) Close() {
	e.closeOnce.Do(func() {
		e.e.Close()
		<-e.e.Server.StopNotify()
	})
}
