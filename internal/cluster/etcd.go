package cluster

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Embedded etcd settings. The member is alone in its cluster, so raft
// timings only decide how soon it elects itself after start.
const (
	etcdTickMs        = 10
	etcdElectionMs    = 100
	etcdSnapshotCount = 10000
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
	etcdDialTimeout   = 5 * time.Second
)

// startEmbedded starts a single-member etcd with its data in
// <dataDir>/etcd, serving clients on a unix socket in dataDir (or loopback
// TCP if the path is too long) and peers on a free loopback port. It
// blocks until the member is ready to serve, ctx ends, or etcd fails.
func startEmbedded(ctx context.Context, dataDir string, nodeID int32) (*embed.Etcd, string, error) {
	cfg := embed.NewConfig()
	cfg.Name = "samsa-" + strconv.Itoa(int(nodeID))
	cfg.Dir = filepath.Join(dataDir, "etcd")
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	cfg.LogLevel = "error"
	cfg.TickMs = etcdTickMs
	cfg.ElectionMs = etcdElectionMs
	cfg.SnapshotCount = etcdSnapshotCount
	cfg.MaxTxnOps = etcdMaxTxnOps
	cfg.AutoCompactionMode = embed.CompactorModePeriodic
	cfg.AutoCompactionRetention = etcdCompaction
	cfg.EnableGRPCGateway = false
	cfg.Metrics = "basic"
	cfg.ListenMetricsUrls = nil

	clientURL, err := clientListenURL(dataDir)
	if err != nil {
		return nil, "", err
	}
	peerPort, err := freeLoopbackPort()
	if err != nil {
		return nil, "", err
	}
	peerURL := url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(peerPort))}
	cfg.ListenClientUrls = []url.URL{clientURL}
	cfg.AdvertiseClientUrls = []url.URL{clientURL}
	cfg.ListenPeerUrls = []url.URL{peerURL}
	cfg.AdvertisePeerUrls = []url.URL{peerURL}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.ClusterState = embed.ClusterStateFlagNew

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, "", fmt.Errorf("cluster: start embedded etcd in %s: %w", cfg.Dir, err)
	}
	timer := time.NewTimer(etcdStartTimeout)
	defer timer.Stop()
	select {
	case <-e.Server.ReadyNotify():
		return e, clientURL.String(), nil
	case err := <-e.Err():
		e.Close()
		return nil, "", fmt.Errorf("cluster: embedded etcd: %w", err)
	case <-ctx.Done():
		e.Close()
		return nil, "", fmt.Errorf("cluster: start embedded etcd: %w", ctx.Err())
	case <-timer.C:
		e.Close()
		return nil, "", fmt.Errorf("cluster: embedded etcd not ready after %s", etcdStartTimeout)
	}
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

// newClient connects to etcd at endpoints. The client dials lazily; the
// first request tells whether etcd is reachable.
func newClient(endpoints []string) (*clientv3.Client, error) {
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:            endpoints,
		DialTimeout:          etcdDialTimeout,
		DialKeepAliveTime:    10 * time.Second,
		DialKeepAliveTimeout: 5 * time.Second,
		Logger:               zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("cluster: connect to etcd %v: %w", endpoints, err)
	}
	return cli, nil
}

// EmbeddedEtcd is a stand-alone embedded etcd member, for test harnesses
// and tools that run several brokers against one etcd.
type EmbeddedEtcd struct {
	e         *embed.Etcd
	clientURL string
}

// StartEmbeddedEtcd starts a single-member etcd with its data in dir,
// configured as `samsa serve` configures its own.
func StartEmbeddedEtcd(ctx context.Context, dir string) (*EmbeddedEtcd, error) {
	e, url, err := startEmbedded(ctx, dir, 0)
	if err != nil {
		return nil, err
	}
	return &EmbeddedEtcd{e: e, clientURL: url}, nil
}

// ClientURL is the URL clients connect to (etcd.endpoints).
func (e *EmbeddedEtcd) ClientURL() string { return e.clientURL }

// Close stops the member and waits for it.
func (e *EmbeddedEtcd) Close() {
	e.e.Close()
	<-e.e.Server.StopNotify()
}
