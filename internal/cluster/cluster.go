package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
)

// DefaultSessionTimeout is Kafka's broker.session.timeout.ms default.
const DefaultSessionTimeout = 9 * time.Second

// closeTimeout bounds the lease revocation in Close, so Close returns even
// when etcd is unreachable.
const closeTimeout = 2 * time.Second

// Config configures the cluster membership of this broker.
type Config struct {
	NodeID int32
	// DataDir holds the embedded etcd's data (<DataDir>/etcd) and
	// meta.properties (cluster.id, node.id). It may be empty only with
	// EtcdEndpoints, and then no meta.properties is kept.
	DataDir string
	// EtcdEndpoints, if set, connects to an existing etcd cluster instead
	// of embedding one.
	EtcdEndpoints []string
	// EtcdTLS, EtcdUsername and EtcdPassword secure the connection to
	// EtcdEndpoints: TLS (nil is plain text, or the system's roots for an
	// https:// endpoint) and etcd user authentication. With an embedded
	// etcd, EtcdTLS is required when Embedded.ClientTLS is set and refused
	// otherwise, and a user and password are refused.
	EtcdTLS                    *tls.Config
	EtcdUsername, EtcdPassword string
	// EtcdConnectTimeout bounds Open's first request to etcd; zero is
	// DefaultEtcdConnectTimeout.
	EtcdConnectTimeout time.Duration
	// Embedded configures the embedded etcd member; ignored with
	// EtcdEndpoints. The zero value is a single member of its own.
	Embedded EmbeddedConfig
	// AdvertisedHost/Port is what clients are told to connect to when a
	// request names no listener (the first advertised listener).
	AdvertisedHost string
	AdvertisedPort int32
	// Endpoints are the broker's advertised listeners, each with its
	// name and security protocol. Metadata answers a client with the
	// endpoint of the listener its request arrived on.
	Endpoints []Endpoint
	Rack      *string
	// SessionTimeout is broker.session.timeout.ms: the TTL of the
	// registration lease, rounded up to whole seconds. Zero means
	// DefaultSessionTimeout.
	SessionTimeout time.Duration
	// Logger receives warnings (lost lease, watch reloads); nil discards.
	Logger *slog.Logger

	// UncleanLeaderElection is unclean.leader.election.enable, the
	// default for topics that do not set it: when no in-sync replica is
	// live, elect any live replica (and lose what it lacks).
	UncleanLeaderElection bool
	// AutoLeaderRebalance is auto.leader.rebalance.enable: the controller
	// moves leadership back to each partition's preferred replica (the
	// first of its replicas) when it is live and in sync.
	AutoLeaderRebalance bool
	// EligibleLeaderReplicas is eligible.leader.replicas.enable (KIP-966):
	// the controller keeps each partition's ELR and elects from it when
	// no ISR member can lead.
	EligibleLeaderReplicas bool
	// MinInsyncReplicas is the broker's static min.insync.replicas, the
	// default for topics that do not set it (the ELR rules depend on it).
	MinInsyncReplicas int
	// UncleanShutdown and FlushIntervalMessages go into the registration
	// (Broker).
	UncleanShutdown       bool
	EmptyLogDir           bool
	FlushIntervalMessages int64

	// EtcdObserver, if not nil, is told of every unary request the etcd
	// client makes.
	EtcdObserver EtcdObserver
}

// EtcdObserver receives the etcd client's request measurements. It is
// called on the client's goroutines and must be cheap.
type EtcdObserver interface {
	// ObserveEtcd is called after each unary etcd request: op is its gRPC
	// method without the service ("Range", "Txn", "LeaseGrant", ...).
	ObserveEtcd(op string, d time.Duration, err error)
}

// Cluster is this broker's view of, and handle on, the cluster metadata in
// etcd. It is safe for concurrent use.
//
// Goroutines: the Cluster owns two, the watch loop (the only writer of
// state) and the lease keepalive loop. Close stops both, then revokes the
// lease, closes the etcd client and stops the embedded etcd.
type Cluster struct {
	cfg         Config
	log         *slog.Logger
	clusterID   string
	keys        keys
	incarnation string

	etcd      *embed.Etcd // nil with Config.EtcdEndpoints
	clientURL string
	cli       *clientv3.Client

	// state holds the current image and the channel closed when it is
	// replaced; they are swapped together so a waiter never misses a swap.
	// Only the watch loop (and Open, before starting it) stores it.
	state atomic.Pointer[imageState]

	// regMu serialises writes of the registration (brokers/<node>) and
	// guards reg, what it says beyond the broker's addresses. It is held
	// across the etcd write, so the last write always carries the latest
	// state; nothing else is taken under it.
	regMu sync.Mutex
	reg   struct {
		shuttingDown    bool
		offlineDirs     []string
		offlineReplicas map[string][]int32
		// unclean: the registration says UncleanShutdown (and
		// EmptyLogDir, when the config says so) until
		// clearUncleanShutdown clears it.
		unclean bool
	}

	// leaseID is the lease of the broker registration; the keepalive loop
	// replaces it after a loss, Close revokes it.
	leaseID atomic.Int64

	// Counters for metrics: lease keepalive responses, and controller
	// writes of partition state (applied, or failed other than by a lost
	// compare).
	leaseRenewals                      atomic.Int64
	controllerWrites, controllerFailed atomic.Int64

	// ctx is the Cluster's lifetime; Close cancels it to stop the loops.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	closeOnce sync.Once
	closeErr  error
}

type imageState struct {
	img     *Image
	changed chan struct{}
}

// Open starts (or connects to) etcd, loads the image, registers the broker
// under a lease and starts watching. It returns once the first image is
// loaded and the registration is visible in it. ctx bounds only the work
// done in Open; Close ends the Cluster.
func Open(ctx context.Context, cfg Config) (_ *Cluster, err error) {
	if cfg.DataDir == "" && len(cfg.EtcdEndpoints) == 0 {
		return nil, errors.New("cluster: Config.DataDir is required with an embedded etcd")
	}
	if cfg.NodeID < 0 {
		return nil, fmt.Errorf("cluster: invalid node id %d", cfg.NodeID)
	}
	if err := checkClientSecurity(cfg); err != nil {
		return nil, err
	}
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = DefaultSessionTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	c := &Cluster{cfg: cfg, log: cfg.Logger, incarnation: uuid.NewString()}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	defer func() {
		if err != nil {
			_ = c.Close()
		}
	}()

	var meta metaProperties
	var haveMeta bool
	if cfg.DataDir != "" {
		if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
			return nil, fmt.Errorf("cluster: create data dir: %w", err)
		}
		if meta, haveMeta, err = readMetaProperties(cfg.DataDir); err != nil {
			return nil, err
		}
		if haveMeta && meta.NodeID != cfg.NodeID {
			return nil, fmt.Errorf("%w: meta.properties in %s has node.id=%d, configured %d",
				ErrInconsistentNodeID, cfg.DataDir, meta.NodeID, cfg.NodeID)
		}
	}

	endpoints := cfg.EtcdEndpoints
	var autoSync time.Duration
	if len(endpoints) == 0 {
		m, err := startEmbedded(ctx, cfg.DataDir, cfg.NodeID, cfg.Embedded)
		if err != nil {
			return nil, err
		}
		c.etcd, c.clientURL, endpoints = m.e, m.clientURL, m.endpoints
		if m.multi {
			autoSync = etcdAutoSync
		}
	} else {
		c.clientURL = endpoints[0]
	}
	if c.cli, err = connectEtcd(ctx, cfg, endpoints, autoSync); err != nil {
		return nil, err
	}

	want := meta.ClusterID
	if want == "" {
		want = newClusterID()
	}
	if c.clusterID, err = c.resolveClusterID(ctx, want, haveMeta); err != nil {
		return nil, err
	}
	if cfg.DataDir != "" && !haveMeta {
		if err := writeMetaProperties(cfg.DataDir, metaProperties{ClusterID: c.clusterID, NodeID: cfg.NodeID}); err != nil {
			return nil, err
		}
	}
	c.keys = newKeys(c.clusterID)

	b := newBuilder(c.clusterID, c.keys, c.log)
	resp, err := c.cli.Get(ctx, c.keys.prefix, clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("cluster: load metadata: %w", err)
	}
	c.state.Store(&imageState{img: b.load(resp.Kvs, resp.Header.Revision), changed: make(chan struct{})})
	rev := resp.Header.Revision
	c.goFunc(func() { c.watchLoop(b, rev) })

	c.reg.unclean = cfg.UncleanShutdown || cfg.EmptyLogDir
	regRev, lease, err := c.register(ctx)
	if err != nil {
		return nil, err
	}
	c.leaseID.Store(int64(lease))
	c.goFunc(c.keepAliveLoop)
	c.goFunc(c.runController)
	if c.reg.unclean {
		c.goFunc(c.clearUncleanShutdown)
	}
	if err := c.waitRevision(ctx, regRev); err != nil {
		return nil, err
	}
	return c, nil
}

// resolveClusterID returns the cluster id etcd holds, storing want there
// first if it holds none. A data dir that already belongs to another
// cluster (haveMeta and a different id) is an error.
func (c *Cluster) resolveClusterID(ctx context.Context, want string, haveMeta bool) (string, error) {
	resp, err := c.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(clusterIDKey), "=", 0)).
		Then(clientv3.OpPut(clusterIDKey, want)).
		Else(clientv3.OpGet(clusterIDKey)).
		Commit()
	if err != nil {
		return "", fmt.Errorf("cluster: read cluster id: %w", err)
	}
	if resp.Succeeded {
		return want, nil
	}
	kvs := resp.Responses[0].GetResponseRange().Kvs
	if len(kvs) == 0 {
		return "", fmt.Errorf("cluster: read cluster id: %w", ErrConflict)
	}
	got := string(kvs[0].Value)
	if haveMeta && got != want {
		return "", fmt.Errorf("%w: meta.properties has cluster.id=%s, etcd has %s", ErrInconsistentClusterID, want, got)
	}
	return got, nil
}

// ClusterID returns the cluster id (meta.properties cluster.id).
func (c *Cluster) ClusterID() string { return c.clusterID }

// ClientURL returns the etcd client URL this Cluster uses: the embedded
// etcd's (unix:///<DataDir>/etcd.sock, or http://127.0.0.1:<port> when the
// socket path would be too long), else the first of Config.EtcdEndpoints.
// Another Cluster can pass it in Config.EtcdEndpoints.
func (c *Cluster) ClientURL() string { return c.clientURL }

// Image returns the current image. It never blocks.
func (c *Cluster) Image() *Image { return c.state.Load().img }

// Incarnation is this process's registration incarnation, unique per start
// (Broker.Incarnation, PartitionState.LeaderIncarnation).
func (c *Cluster) Incarnation() string { return c.incarnation }

// Changed returns a channel closed at the next image swap. To wait for a
// change, call Changed before Image, so a swap between the two calls is
// not missed.
func (c *Cluster) Changed() <-chan struct{} { return c.state.Load().changed }

// publish swaps in img and wakes the waiters on the previous channel.
// Only the owner of the builder calls it.
func (c *Cluster) publish(img *Image) {
	old := c.state.Swap(&imageState{img: img, changed: make(chan struct{})})
	close(old.changed)
}

// waitRevision blocks until the image reflects etcd revision rev, ctx ends
// or the Cluster closes.
func (c *Cluster) waitRevision(ctx context.Context, rev int64) error {
	for {
		st := c.state.Load()
		if st.img.Revision >= rev {
			return nil
		}
		select {
		case <-st.changed:
		case <-ctx.Done():
			return fmt.Errorf("cluster: wait for revision %d: %w", rev, ctx.Err())
		case <-c.ctx.Done():
			return ErrClosed
		}
	}
}

// goFunc runs f on a goroutine that Close waits for.
func (c *Cluster) goFunc(f func()) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		f()
	}()
}

// sleep waits d or until the Cluster closes; it reports whether to go on.
func (c *Cluster) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-c.ctx.Done():
		return false
	}
}

// Close deregisters the broker (revokes its lease), stops watching, and
// stops the embedded etcd if there is one. It is idempotent; later calls
// return the first call's result.
func (c *Cluster) Close() error {
	c.closeOnce.Do(func() {
		c.cancel()
		c.wg.Wait()
		if lease := clientv3.LeaseID(c.leaseID.Load()); lease != 0 && c.cli != nil {
			ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
			_, err := c.cli.Revoke(ctx, lease)
			cancel()
			if err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
				c.closeErr = fmt.Errorf("cluster: deregister broker %d: %w", c.cfg.NodeID, err)
			}
		}
		if c.cli != nil {
			if err := c.cli.Close(); err != nil && c.closeErr == nil && !errors.Is(err, context.Canceled) {
				c.closeErr = fmt.Errorf("cluster: close etcd client: %w", err)
			}
		}
		if c.etcd != nil {
			c.etcd.Close()
		}
	})
	return c.closeErr
}
