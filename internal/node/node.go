package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"samsa/internal/admin"
	"samsa/internal/broker"
	"samsa/internal/cluster"
	"samsa/internal/config"
	"samsa/internal/console"
	"samsa/internal/replica"
	"samsa/internal/server"
	"samsa/internal/storage"
	"samsa/internal/vfs"
)

// Config is what a node is started with.
type Config struct {
	// Broker is the broker's configuration, under Kafka's names
	// (config.Load).
	Broker *config.Broker
	// Logger is the broker's logger (NewLogger); nil discards.
	Logger *slog.Logger
	// Version and Commit label the samsa_build_info metric; empty is
	// "devel" and "unknown".
	Version, Commit string
	// FS is the file system of the log dir's partitions; nil is the
	// operating system's. Tests pass a vfs.MemFS to cut the power
	// (MemFS.CrashClone keeps only what was fsynced); meta.properties,
	// the dir lock and an embedded etcd stay on the real disk.
	FS vfs.FS
	// VolatileWrites, with FS nil, keeps unsynced file data in this
	// process's memory (vfs.Volatile), so that kill -9 loses it as a
	// power cut would: for power-loss tests across processes only.
	VolatileWrites bool
	// Now is the broker's clock for retention, timestamps, ISR lag,
	// sessions and timeouts; nil is time.Now. Tests skew it and make it
	// jump (TESTPLAN S-24); etcd's leases keep etcd's own clock.
	Now func() time.Time
}

// Node is one running samsa broker: etcd membership, logs, the Kafka
// listeners and the admin HTTP server. Start it with Start and stop it
// with Shutdown or Close. Its methods are safe for concurrent use.
type Node struct {
	cfg     *config.Broker
	version Config // Version and Commit
	log     *slog.Logger
	cluster *cluster.Cluster
	logs    *storage.LogDirs
	// peers is the connections to the other brokers (followers' fetches,
	// transaction markers).
	peers    *leaderClient
	replicas *replica.Manager
	rec      *reconciler
	broker   *broker.Broker
	server   *server.Server
	admin    *admin.Server
	// console is the web console, nil when not served; consoleSrv its
	// own listener (console.listener), nil when it is on the admin one.
	console    *console.Server
	consoleSrv *admin.Server
	lns        []net.Listener
	wg         sync.WaitGroup // Serve goroutines
	locks      []*dirLock     // each log dir's .lock, released last

	// dirFailed is closed, with dirFailedErr set, when the broker can no
	// longer serve: its metadata log dir (the first of log.dirs) or
	// every log dir went offline (LogDirFailed).
	dirFailed     chan struct{}
	dirFailedErr  atomic.Pointer[error]
	dirFailedOnce sync.Once

	// bg is the context of the goroutines goAttach starts (JWKS
	// refreshes); stop cancels it, and bgWG counts them.
	bg   context.Context
	stop context.CancelFunc
	bgWG sync.WaitGroup

	closeOnce sync.Once
	closeErr  error
}

// Start starts a broker with nc. It returns once the listeners accept
// connections and the partitions the cluster metadata assigns here are
// hosted, or with the error of the first part that did not start (the
// parts started before it are closed). ctx bounds the start, not the
// node's life.
func Start(ctx context.Context, nc Config) (_ *Node, err error) {
	cfg, log := nc.Broker, nc.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	dirs, err := absLogDirs(cfg.LogDirs)
	if err != nil {
		return nil, err
	}
	// The first log dir is the metadata dir (Kafka's metadata.log.dir
	// default): meta.properties is bound there first, and the embedded
	// etcd member keeps its data there.
	dir := dirs[0]
	n := &Node{cfg: cfg, log: log, version: Config{Version: nc.Version, Commit: nc.Commit}, dirFailed: make(chan struct{})}
	n.bg, n.stop = context.WithCancel(context.Background())
	// The hot-path metrics exist before the parts that update them; the
	// scrape-time collectors are registered once the parts run.
	var (
		reg     *prometheus.Registry
		metrics *admin.Metrics
		etcdObs cluster.EtcdObserver
		flushes storage.FlushObserver
		reqObs  server.Observer
		onRebal func(time.Duration)
	)
	if cfg.AdminListener != "" {
		reg = prometheus.NewRegistry()
		metrics = admin.NewMetrics(reg)
		etcdObs, flushes, reqObs, onRebal = metrics, metrics, serverObserver{metrics}, metrics.ObserveRebalance
	}
	defer func() {
		if err != nil {
			n.Close()
		}
	}()
	// Lock the log dir before anything else touches it: a second broker
	// on the same dir would otherwise wait, without a word, on etcd's
	// own file lock.
	for _, d := range dirs {
		l, err := lockLogDir(d)
		if err != nil {
			return nil, err
		}
		n.locks = append(n.locks, l)
	}

	// Listen first: the advertised port of a listener on port 0 is only
	// known once it is bound.
	for _, l := range cfg.Listeners {
		ln, err := net.Listen("tcp", l.Addr())
		if err != nil {
			return nil, fmt.Errorf("listen %s: %w", l, err)
		}
		n.lns = append(n.lns, ln)
	}
	// Every advertised listener is registered; a port of 0 is the port
	// its listener was bound to, and an unspecified host the host name.
	var endpoints []cluster.Endpoint
	for _, adv := range cfg.AdvertisedListeners {
		host, port := adv.Host, adv.Port
		if port == 0 {
			for i, l := range cfg.Listeners {
				if l.Name == adv.Name {
					port = n.lns[i].Addr().(*net.TCPAddr).Port
				}
			}
		}
		if host == "" || host == "0.0.0.0" || host == "::" {
			if h, err := os.Hostname(); err == nil {
				host = h
			}
		}
		endpoints = append(endpoints, cluster.Endpoint{
			Listener: adv.Name, Host: host, Port: int32(port), SecurityProtocol: cfg.ListenerProtocols[adv.Name],
		})
	}
	if len(endpoints) == 0 {
		return nil, errors.New("advertised.listeners: empty")
	}
	host, port := endpoints[0].Host, endpoints[0].Port
	var rack *string
	if cfg.BrokerRack != "" {
		r := cfg.BrokerRack
		rack = &r
	}
	etcdTLS, err := cfg.EtcdTLS()
	if err != nil {
		return nil, err
	}
	var peerTLS, clientTLS *cluster.MemberTLS
	if cfg.EtcdPeerTLSOn() {
		peerTLS = &cluster.MemberTLS{CertFile: cfg.EtcdPeerSSLCertFile, KeyFile: cfg.EtcdPeerSSLKeyFile, CAFile: cfg.EtcdPeerSSLCAFile}
	}
	if cfg.EtcdClientTLSOn() {
		clientTLS = &cluster.MemberTLS{CertFile: cfg.EtcdClientSSLCertFile, KeyFile: cfg.EtcdClientSSLKeyFile, CAFile: cfg.EtcdClientSSLCAFile}
	}
	fs := nc.FS
	switch {
	case fs != nil:
	case nc.VolatileWrites:
		fs = vfs.NewVolatile()
	default:
		fs = vfs.Default
	}
	// KIP-966: unclean when any log dir was not closed cleanly; empty
	// (a new broker, or every disk replaced) when no dir holds a
	// partition. One replaced disk of several is not told apart: the
	// broker keeps no record of which partitions each dir held.
	unclean, empty := false, true
	for _, d := range dirs {
		unclean = unclean || !storage.HadCleanShutdown(fs, d)
		empty = empty && storage.HoldsNoPartition(fs, d)
	}
	n.cluster, err = cluster.Open(ctx, cluster.Config{
		NodeID:             cfg.NodeID,
		DataDir:            dir,
		EtcdEndpoints:      cfg.EtcdEndpoints,
		EtcdTLS:            etcdTLS,
		EtcdUsername:       cfg.EtcdUsername,
		EtcdPassword:       cfg.EtcdPassword,
		EtcdConnectTimeout: time.Duration(cfg.EtcdConnectionTimeoutMs) * time.Millisecond,
		Embedded: cluster.EmbeddedConfig{
			Name:                cfg.EtcdName,
			InitialCluster:      cfg.EtcdInitialCluster,
			InitialClusterState: cfg.EtcdInitialClusterState,
			ListenPeerURLs:      cfg.EtcdListenPeerURLs,
			AdvertisePeerURLs:   cfg.EtcdAdvertisePeerURLs,
			ListenClientURLs:    cfg.EtcdListenClientURLs,
			AdvertiseClientURLs: cfg.EtcdAdvertiseClientURLs,
			PeerTLS:             peerTLS,
			ClientTLS:           clientTLS,
		},
		AdvertisedHost: host,
		AdvertisedPort: port,
		Endpoints:      endpoints,
		Rack:           rack,
		SessionTimeout: time.Duration(cfg.BrokerSessionTimeoutMs) * time.Millisecond,
		Logger:         log.With(PkgKey, "cluster"),

		UncleanLeaderElection:  cfg.UncleanLeaderElectionEnable,
		AutoLeaderRebalance:    cfg.AutoLeaderRebalanceEnable,
		EligibleLeaderReplicas: cfg.EligibleLeaderReplicasEnable,
		MinInsyncReplicas:      int(cfg.MinInsyncReplicas),
		UncleanShutdown:        unclean,
		EmptyLogDir:            empty,
		FlushIntervalMessages:  cfg.LogFlushIntervalMessages,
		EtcdObserver:           etcdObs,
	})
	if err != nil {
		return nil, withPrefix("cluster: ", err)
	}
	for _, d := range dirs[1:] {
		if err := n.cluster.BindLogDir(d); err != nil {
			return nil, withPrefix("cluster: ", err)
		}
	}
	defaults, err := cfg.ResolveTopic(nil)
	if err != nil {
		return nil, err
	}
	n.logs, err = storage.OpenLogDirs(dirs, storage.ManagerConfig{
		FS:                     fs,
		Logger:                 log.With(PkgKey, "storage"),
		RetentionCheckInterval: time.Duration(cfg.LogRetentionCheckIntervalMs) * time.Millisecond,
		CleanerDisable:         !cfg.LogCleanerEnable,
		CleanerBackoff:         time.Duration(cfg.LogCleanerBackoffMs) * time.Millisecond,
		DefaultConfig:          StorageConfig(defaults),
		FlushObserver:          flushes,
		Now:                    nc.Now,
	})
	if err != nil {
		return nil, withPrefix("storage: ", err)
	}
	checkOpenFileLimit(log, n.logs)
	ibSec, err := interBrokerSecurityOf(cfg)
	if err != nil {
		return nil, err
	}
	if err := ensureInterBrokerCredential(ctx, cfg, n.cluster); err != nil {
		return nil, err
	}
	lcs := make([]server.ListenerConfig, len(cfg.SecureListeners))
	for i, l := range cfg.SecureListeners {
		if lcs[i], err = listenerConfig(ctx, cfg, l, n.cluster, log); err != nil {
			return nil, err
		}
		if a, ok := lcs[i].SASL.(*authenticator); ok && a.endpoint != nil {
			n.goAttach(a.endpoint.run)
		}
	}
	conns, err := connLimiter(cfg)
	if err != nil {
		return nil, err
	}
	brokerLog := log.With(PkgKey, "broker")
	n.peers = newLeaderClient(n.cluster, cfg.NodeID, cfg.InterBrokerListenerName, ibSec, brokerLog)
	n.replicas = replica.NewManager(replica.Config{
		Logs:   n.logs,
		FS:     fs,
		Self:   cfg.NodeID,
		Logger: log.With(PkgKey, "replica"),
		ISR: replica.ISRConfig{
			ReplicaLagTimeMaxMs: cfg.ReplicaLagTimeMaxMs,
			MinInsyncReplicas:   int(cfg.MinInsyncReplicas),
		},
		Client:    n.peers,
		ISRWriter: isrWriter{n.cluster, cfg.NodeID},
		Now:       nc.Now,
	})
	// NB: the reconciler's lines are the broker's (pkg=broker), as they
	// were when the broker ran it; log.level.overrides names no node.
	n.rec = newReconciler(n.cluster, n.replicas, n.logs, cfg, brokerLog)
	n.broker, err = broker.New(broker.Config{
		Broker: cfg, Cluster: n.cluster, Replicas: n.replicas, LogDirs: n.logDirStates, Logger: brokerLog,
		InterBroker: n.peers, Reconcile: n.rec.reconcile, Connections: conns, OnRebalance: onRebal,
		Now: nc.Now,
	})
	if err != nil {
		return nil, withPrefix("broker: ", err)
	}
	n.rec.broker = n.broker
	// Host the partitions the image assigns here before serving.
	if err := n.rec.reconcile(); err != nil {
		return nil, withPrefix("broker: ", err)
	}
	n.rec.start()
	n.watchLogDirs()
	n.server = server.New(server.Config{
		MaxRequestBytes:   cfg.SocketRequestMaxBytes,
		IdleTimeout:       time.Duration(cfg.ConnectionsMaxIdleMs) * time.Millisecond,
		QueuedMaxRequests: int(cfg.QueuedMaxRequests),
		Connections:       connLimits{conns},
		Observer:          reqObs,
		Logger:            log.With(PkgKey, "server"),
		SlowRequest:       time.Duration(cfg.LogSlowRequestMs) * time.Millisecond,
	}, n.broker)
	for i, ln := range n.lns {
		n.wg.Add(1)
		go func(ln net.Listener, lc server.ListenerConfig) {
			defer n.wg.Done()
			if err := n.server.ServeListener(ln, lc); err != nil {
				log.Error("kafka listener stopped", "listener", lc.Name, "addr", ln.Addr(), "err", err)
			}
		}(ln, lcs[i])
	}
	if n.console, err = n.startConsole(); err != nil {
		// NB: a console that cannot be served does not stop the
		// broker; the operator reads why in the log.
		log.Warn("console: not served", "err", err)
		n.console = nil
	}
	var onAdmin http.Handler
	if n.console != nil && cfg.ConsoleListener == "" {
		onAdmin = n.console
	}
	if cfg.AdminListener != "" {
		registerMetrics(reg, n)
		n.admin, err = admin.Start(cfg.AdminListener, reg, n.ready, onAdmin, log.With(PkgKey, "admin"))
		if err != nil {
			return nil, fmt.Errorf("admin listener %s: %w", cfg.AdminListener, err)
		}
	}
	if n.console != nil && cfg.ConsoleListener != "" {
		n.consoleSrv, err = admin.StartConsole(cfg.ConsoleListener, n.console, log.With(PkgKey, "admin"))
		if err != nil {
			return nil, fmt.Errorf("console listener %s: %w", cfg.ConsoleListener, err)
		}
	}
	return n, nil
}

// withPrefix returns err with prefix in front unless its message already
// starts with it (the packages' own errors do), so that a message does
// not read "cluster: cluster: ...".
func withPrefix(prefix string, err error) error {
	if strings.HasPrefix(err.Error(), prefix) {
		return err
	}
	return fmt.Errorf("%s%w", prefix, err)
}

// goAttach runs f in a goroutine that Close stops, by cancelling ctx,
// and waits for.
func (n *Node) goAttach(f func(ctx context.Context)) {
	n.bgWG.Add(1)
	go func() {
		defer n.bgWG.Done()
		f(n.bg)
	}()
}

// controlledShutdownTimeout bounds how long a shutdown waits for the
// controller to move this broker's leaderships away.
const controlledShutdownTimeout = 15 * time.Second

// ready reports readiness for /readyz: serving, with the metadata log
// dir and at least one log dir online, and this broker registered in the
// cluster metadata.
func (n *Node) ready() bool {
	if n.logs == nil || n.cluster == nil || n.logs.Offline() || n.logs.Dirs()[0].Offline() {
		return false
	}
	_, ok := n.cluster.Image().Brokers[n.cfg.NodeID]
	return ok
}

// LogDirFailed returns a channel closed when the node can no longer
// serve because of its disks, and the error that took it there once it
// has: every log dir went offline, or the first one, which holds
// meta.properties and the embedded etcd member's data (Kafka stops a
// broker whose metadata log dir fails, KIP-858). A log dir goes offline
// when a write or fsync there fails: a full disk, an I/O error, a
// read-only remount. The partitions of an offline dir answer
// KAFKA_STORAGE_ERROR and acknowledge nothing more, and the broker
// reports them to the controller (watchLogDirs), which moves their
// leadership to in-sync replicas elsewhere; the other dirs keep serving.
// `samsa serve` shuts the broker down once the channel is closed.
func (n *Node) LogDirFailed() (<-chan struct{}, func() error) {
	return n.dirFailed, func() error {
		if e := n.dirFailedErr.Load(); e != nil {
			return *e
		}
		return nil
	}
}

// Image returns the node's current view of the cluster metadata.
func (n *Node) Image() *cluster.Image { return n.cluster.Image() }

// Addr returns the address of the first Kafka listener.
func (n *Node) Addr() string { return n.lns[0].Addr().String() }

// ListenerAddr returns the bound address of the listener named name, or
// "" if there is none.
func (n *Node) ListenerAddr(name string) string {
	for i, l := range n.cfg.Listeners {
		if l.Name == name && i < len(n.lns) {
			return n.lns[i].Addr().String()
		}
	}
	return ""
}

// Cluster returns the node's cluster membership (etcd, metadata image).
func (n *Node) Cluster() *cluster.Cluster { return n.cluster }

// Broker returns the node's request handler. Tests reach the hosted
// partitions through it (Broker.Replicas).
func (n *Node) Broker() *broker.Broker { return n.broker }

// AdminAddr returns the admin HTTP address, or "".
func (n *Node) AdminAddr() string {
	if n.admin == nil {
		return ""
	}
	return n.admin.Addr()
}

// Shutdown stops the node cleanly: stop accepting, let in-flight requests
// finish (until ctx is done), flush and close the logs, deregister from the
// cluster and stop etcd.
func (n *Node) Shutdown(ctx context.Context) error {
	var errs []error
	if n.cluster != nil && n.cfg.ControlledShutdownEnable {
		// Controlled shutdown: the controller moves this broker's
		// leaderships to other in-sync replicas before it stops serving,
		// so clients fail over without waiting for the session timeout.
		//
		// Announcing it is bounded by the session timeout: a broker that
		// cannot reach etcd for that long has lost its registration, and
		// the controller moves its leaderships without being told.
		cctx, cancel := context.WithTimeout(ctx, controlledShutdownTimeout)
		actx, acancel := context.WithTimeout(cctx, time.Duration(n.cfg.BrokerSessionTimeoutMs)*time.Millisecond)
		if err := n.cluster.BeginControlledShutdown(actx); err != nil {
			n.log.Warn("controlled shutdown: could not announce it; leaderships move when the registration expires", "err", err)
		} else if err := n.cluster.WaitLeadershipsMoved(cctx); err != nil {
			n.log.Warn("controlled shutdown: leaderships not all moved", "err", err)
		}
		acancel()
		cancel()
	}
	if n.broker != nil {
		n.broker.Drain()
	}
	if n.server != nil {
		errs = append(errs, n.server.Shutdown(ctx))
	}
	errs = append(errs, n.Close())
	return errors.Join(errs...)
}

// Close stops the node at once (in-flight requests are cut off), then closes
// the logs and the cluster membership. It is idempotent.
func (n *Node) Close() error {
	n.closeOnce.Do(func() {
		// NB: first, so that a SASL exchange waiting for a JWKS fetch
		// is let go before the server waits for its connection.
		n.stop()
		n.bgWG.Wait()
		var errs []error
		if n.consoleSrv != nil {
			errs = append(errs, n.consoleSrv.Close())
		}
		if n.admin != nil {
			errs = append(errs, n.admin.Close())
		}
		if n.console != nil {
			errs = append(errs, n.console.Close())
		}
		if n.server != nil {
			errs = append(errs, n.server.Close())
		} else {
			for _, ln := range n.lns {
				ln.Close()
			}
		}
		n.wg.Wait()
		if n.rec != nil {
			n.rec.close()
		}
		if n.broker != nil {
			errs = append(errs, n.broker.Close())
		}
		if n.replicas != nil {
			errs = append(errs, n.replicas.Close())
			// A snapshot of the producer state at a clean stop, so the
			// next start replays nothing.
			errs = append(errs, n.rec.maintainProducers())
		}
		if n.peers != nil {
			n.peers.Close()
		}
		if n.logs != nil {
			errs = append(errs, n.logs.Close())
		}
		if n.cluster != nil {
			errs = append(errs, n.cluster.Close())
		}
		for _, l := range n.locks {
			errs = append(errs, l.unlock())
		}
		n.closeErr = errors.Join(errs...)
	})
	return n.closeErr
}
