package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/acl"
	"samsa/internal/cluster"
	"samsa/internal/config"
	"samsa/internal/fetchsession"
	"samsa/internal/group"
	"samsa/internal/quota"
	"samsa/internal/replica"
	"samsa/internal/server"
	"samsa/internal/storage"
	"samsa/internal/txn"
	"samsa/internal/vfs"
)

// Config wires a Broker to the parts it serves from.
type Config struct {
	Broker  *config.Broker
	Cluster *cluster.Cluster
	Logs    *storage.Manager
	// LogDir is the log dir Logs manages (DescribeLogDirs reports it).
	LogDir string
	// FS is the file system of LogDir; nil means vfs.Default.
	FS     vfs.FS
	Logger *slog.Logger
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// InterBrokerOpts secure this broker's connections to other brokers
	// (TLS, SASL) on the inter-broker listener.
	InterBrokerOpts []kgo.Opt
	// Connections, if not nil, is the connection limiter of the node's
	// server; the broker keeps its connection_creation_rate values current.
	Connections *quota.ConnLimiter
	// OnRebalance, if not nil, is called with the duration of every group
	// rebalance that ends (metrics); it must be cheap.
	OnRebalance func(time.Duration)
}

// Broker serves Kafka requests. Create it with New and stop it with Close.
type Broker struct {
	cfg      *config.Broker
	cluster  *cluster.Cluster
	logs     *storage.Manager
	logDir   string
	replicas *replica.Manager
	log      *slog.Logger
	now      func() time.Time

	producerIDs producerIDs
	leaders     *leaderClient // followers' connections to leaders

	topicConfigs atomic.Pointer[topicConfigCache]

	// fetchSessions are the KIP-227 fetch sessions of consumers and
	// followers (fetch_session.go).
	fetchSessions *fetchsession.Cache

	groups *group.Coordinator
	// txns is the transaction coordinator.
	txns *txn.Coordinator
	// acls is the authorizer and the ACL set it was built from.
	acls *aclState
	// quotas is the client quota image and the quota set it was built from.
	quotas quotaState
	// groupsLoaded is the __consumer_offsets partitions whose groups the
	// coordinator loaded (or is loading), guarded by reconcileMu.
	groupsLoaded map[int32]*replica.Partition
	// txnsLoaded is the __transaction_state partitions the transaction
	// coordinator loaded (or is loading), guarded by reconcileMu.
	txnsLoaded map[int32]txnLoad
	loads      sync.WaitGroup // background coordinator loads
	// strays are logs on disk whose topic the image lacks, already
	// reported; guarded by reconcileMu.
	strays map[storage.TopicPartition]bool

	// coordLogMu guards coordLogged: when each reason a coordinator
	// lookup failed was last logged.
	coordLogMu  sync.Mutex
	coordLogged map[string]time.Time

	// reconcileMu serialises reconcile passes (the reconciler goroutine and
	// handlers that create topics and want their partitions hosted at once).
	reconcileMu sync.Mutex

	// draining is closed by Drain: parked Fetches answer at once.
	draining  chan struct{}
	drainOnce sync.Once

	// ctx is cancelled by Close; background work (coordinator loads)
	// runs under it.
	ctx       context.Context
	cancelCtx context.CancelFunc

	stop    chan struct{} // closed by Close to ask the reconciler to stop
	done    chan struct{} // closed when the reconciler has exited
	closeMu sync.Once
}

// New returns a Broker and starts its reconciler. It hosts the partitions
// the current image assigns to this broker before returning.
func New(cfg Config) (*Broker, error) {
	b := &Broker{
		cfg:      cfg.Broker,
		cluster:  cfg.Cluster,
		logs:     cfg.Logs,
		logDir:   cfg.LogDir,
		log:      cfg.Logger,
		now:      cfg.Now,
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
		draining: make(chan struct{}),
	}
	if b.log == nil {
		b.log = slog.New(slog.DiscardHandler)
	}
	if b.now == nil {
		b.now = time.Now
	}
	b.ctx, b.cancelCtx = context.WithCancel(context.Background())
	b.fetchSessions = fetchsession.New(fetchsession.Config{
		MaxSlots:   int(cfg.Broker.MaxIncrementalFetchSessionCacheSlots),
		EvictionMs: cfg.Broker.MinIncrementalFetchSessionEvictionMs,
	})
	fs := cfg.FS
	if fs == nil {
		fs = vfs.Default
	}
	b.leaders = newLeaderClient(cfg.Cluster, cfg.Broker.NodeID, cfg.Broker.InterBrokerListenerName, cfg.InterBrokerOpts, b.log)
	b.replicas = replica.NewManager(replica.Config{
		Logs:   cfg.Logs,
		FS:     fs,
		Now:    b.now,
		Self:   cfg.Broker.NodeID,
		Logger: b.log.With("pkg", "replica"),
		ISR: replica.ISRConfig{
			ReplicaLagTimeMaxMs: cfg.Broker.ReplicaLagTimeMaxMs,
			MinInsyncReplicas:   int(cfg.Broker.MinInsyncReplicas),
		},
		Client:    b.leaders,
		ISRWriter: isrWriter{cfg.Cluster, cfg.Broker.NodeID},
	})
	b.acls = newACLState(acl.Config{SuperUsers: cfg.Broker.SuperUsers, AllowEveryoneIfNoACLFound: cfg.Broker.AllowEveryoneIfNoACLFound},
		authorizerEnabled(cfg.Broker.AuthorizerClassName))
	b.quotas.init(cfg.Broker, cfg.Connections)
	b.producerIDs.init(b.ctx, cfg.Cluster)
	gcfg := group.ConfigFromBroker(cfg.Broker)
	gcfg.Logger, gcfg.Now = b.log.With("pkg", "group"), b.now
	gcfg.OnRebalance = cfg.OnRebalance
	b.groups = group.NewCoordinator(gcfg)
	b.groupsLoaded = make(map[int32]*replica.Partition)
	b.txns = txn.NewCoordinator(b.txnConfig())
	b.txnsLoaded = make(map[int32]txnLoad)
	b.strays = make(map[storage.TopicPartition]bool)
	if err := b.reconcile(); err != nil {
		b.cancelCtx()
		b.groups.Close()
		b.txns.Close()
		b.replicas.Close()
		return nil, err
	}
	go b.runReconciler()
	return b, nil
}

// Drain prepares a clean shutdown: Fetches parked in a long-poll answer at
// once with what they have, and the group coordinator stops (waiting joins
// and syncs get NOT_COORDINATOR and find the coordinator again), so the
// server's Shutdown does not wait out max_wait_ms or rebalance timeouts.
// Produce requests waiting for durability still complete. It is idempotent.
func (b *Broker) Drain() {
	b.drainOnce.Do(func() {
		close(b.draining)
		b.groups.Close()
	})
}

// Close stops the reconciler and snapshots the producer state of every
// partition. It does not close the cluster or the logs, which the caller
// owns (and must close after the Broker). It is idempotent.
func (b *Broker) Close() error {
	var err error
	b.closeMu.Do(func() {
		close(b.stop)
		b.cancelCtx()
		<-b.done
		// A handler's reconcile that began before stop may still be
		// adding coordinator loads: let it finish first.
		b.reconcileMu.Lock()
		b.reconcileMu.Unlock() //nolint:staticcheck // an empty critical section, to wait for the holder
		b.loads.Wait()
		b.producerIDs.close()
		// NB: the transaction coordinator's marker writes use the
		// partitions and the leader connections: stop it first.
		txnErr := b.txns.Close()
		err = errors.Join(txnErr, b.replicas.Close(), b.groups.Close(), b.maintainProducers())
		b.leaders.Close()
	})
	return err
}

// producerMaintenanceInterval is how often producer state is expired and
// snapshotted; recovery after a crash replays at most this much of the log.
const producerMaintenanceInterval = 30 * time.Second

func (b *Broker) runReconciler() {
	defer close(b.done)
	maintain := time.NewTicker(producerMaintenanceInterval)
	defer maintain.Stop()
	for {
		changed := b.cluster.Changed()
		if err := b.reconcile(); err != nil {
			b.log.Error("reconcile partitions", "err", err)
		}
		b.quotaImage() // hands new connection_creation_rate values to the limiter
		select {
		case <-b.stop:
			return
		case <-changed:
		case <-maintain.C:
			if err := b.maintainProducers(); err != nil {
				b.log.Error("producer state maintenance", "err", err)
			}
			b.quotas.expire(b.now())
		case <-time.After(5 * time.Second):
			// Retry after errors even when nothing changes.
		}
	}
}

func (b *Broker) maintainProducers() error {
	return b.replicas.MaintainProducers(b.now().UnixMilli(), int64(b.cfg.ProducerIDExpirationMs))
}

// reconcile makes the hosted partitions match the image: a log for every
// partition with a replica here, none for partitions that are gone.
func (b *Broker) reconcile() error {
	b.reconcileMu.Lock()
	defer b.reconcileMu.Unlock()
	select {
	case <-b.stop:
		return nil // closing: start nothing new
	default:
	}
	img := b.cluster.Image()
	self := b.cfg.NodeID
	want := make(map[storage.TopicPartition]bool)
	var firstErr error
	type ensure struct {
		tp   storage.TopicPartition
		id   [16]byte
		cfg  storage.Config
		info replica.PartitionInfo
	}
	var ensures []ensure
	for _, t := range img.Topics {
		minISR := int(b.cfg.MinInsyncReplicas)
		cfg := storage.DefaultConfig()
		if tc, err := b.topicConfig(img, t.Configs); err != nil {
			b.log.Error("topic config", "topic", t.Name, "err", err)
		} else {
			cfg, minISR = StorageConfig(tc), int(tc.MinInsyncReplicas)
		}
		for p, replicas := range t.Replicas {
			if !contains(replicas, self) {
				continue
			}
			tp := storage.TopicPartition{Topic: t.Name, Partition: int32(p)}
			want[tp] = true
			info := replica.PartitionInfo{Replicas: replicas, Leader: -1, MinInsyncReplicas: minISR}
			if p < len(t.Partitions) {
				st := t.Partitions[p]
				info.Leader, info.LeaderEpoch, info.ISR, info.PartitionEpoch = st.Leader, st.LeaderEpoch, st.ISR, st.PartitionEpoch
				if st.Leader == self && st.LeaderIncarnation != "" && st.LeaderIncarnation != b.cluster.Incarnation() {
					// Elected in an earlier process of this node: wait
					// for the controller to elect this one at a new epoch
					// (cluster.Decide) rather than lead at the old one.
					info.Leader = -1
				}
			}
			ensures = append(ensures, ensure{tp, t.ID, cfg, info})
		}
	}
	// NB: opening a log and taking leadership each do a few fsyncs (the
	// log's directory, the leader epoch checkpoint); one partition after
	// the other, a broker with 10,000 partitions took 40 s to lead them
	// all after a restart. Ensure calls of distinct partitions are
	// independent, so a few run at once.
	var errMu sync.Mutex
	storage.ParallelEach(len(ensures), reconcileWorkers, func(i int) {
		e := ensures[i]
		if _, err := b.replicas.Ensure(e.tp, e.id, e.cfg, e.info); err != nil {
			errMu.Lock()
			if firstErr == nil {
				firstErr = err
			}
			errMu.Unlock()
		}
	})
	for _, p := range b.replicas.Partitions() {
		if !want[p.TP] {
			if err := b.replicas.Remove(p.TP); err != nil && firstErr == nil {
				firstErr = err
			}
		}
	}
	b.replicas.SyncFetchers()
	b.reconcileGroupsLocked()
	b.reconcileTxnsLocked()
	// Logs on disk that the image does not assign here: a partition of a
	// live topic that moved away is deleted; a log whose topic the image
	// does not know is left alone (logged once), because an empty or
	// replaced etcd must never make a broker delete its data.
	for _, l := range b.logs.Logs() {
		tp, ok := parseLogDir(l.Dir())
		if !ok || want[tp] {
			continue
		}
		if t := img.Topics[tp.Topic]; t != nil && t.ID == l.TopicID() {
			if err := b.logs.Delete(tp); err != nil && firstErr == nil {
				firstErr = err
			}
			continue
		}
		if !b.strays[tp] {
			b.strays[tp] = true
			b.log.Warn("log on disk for a topic the cluster metadata does not have; leaving it in place",
				"topic", tp.Topic, "partition", tp.Partition, "dir", l.Dir())
		}
	}
	return firstErr
}

// reconcileWorkers bounds the partitions one reconcile opens or moves at
// once.
const reconcileWorkers = 8

// Handle implements server.Handler: it handles the request, then applies
// the client quotas (quotas.go).
func (b *Broker) Handle(ctx context.Context, c *server.Conn, req *server.Request) server.Reply {
	// NB: with no quota configured this costs two atomic loads; the clock
	// is read only when a request_percentage quota exists (quotas.go).
	qimg := b.quotaImage()
	timed := qimg.Has(quota.KeyRequestPercentage) && !requestQuotaExempt(req)
	var start time.Time
	if timed {
		start = b.now()
	}
	reply := b.handleAuthorized(ctx, c, req)
	if qimg.Empty() {
		return reply
	}
	var handlerTime time.Duration
	if timed {
		handlerTime = b.now().Sub(start)
	}
	throttle := b.recordQuotas(qimg, c, req, timed, handlerTime)
	if tr, ok := reply.Msg.(kmsg.ThrottleResponse); ok {
		// A handler's own throttle (controller_mutation_rate) mutes too.
		ms, _ := tr.Throttle()
		throttle = max(throttle, time.Duration(ms)*time.Millisecond)
	}
	return throttleReply(reply, req.APIVersion, throttle)
}

// handleAuthorized authorizes a request (with an authorizer, guard checks
// it first; authz_apis.go) and hands it to its handler.
func (b *Broker) handleAuthorized(ctx context.Context, c *server.Conn, req *server.Request) server.Reply {
	var fix func(kmsg.Response)
	if z := b.authzFor(c); z.on() {
		var deny kmsg.Response
		if deny, fix = b.guard(z, req.Body); deny != nil {
			return msg(deny)
		}
	}
	reply := b.dispatch(ctx, c, req)
	if fix != nil {
		reply = patchReply(reply, fix)
	}
	return reply
}

// dispatch hands a request to its handler.
func (b *Broker) dispatch(ctx context.Context, c *server.Conn, req *server.Request) server.Reply {
	switch r := req.Body.(type) {
	case *kmsg.ProduceRequest:
		return b.handleProduce(ctx, c, r)
	case *kmsg.FetchRequest:
		return b.handleFetch(ctx, c, r, req.ClientID)
	case *kmsg.ListOffsetsRequest:
		return msg(b.handleListOffsets(r))
	case *kmsg.MetadataRequest:
		return msg(b.handleMetadata(ctx, c, r))
	case *kmsg.ApiVersionsRequest:
		return msg(b.handleApiVersions(r, req.UnsupportedVersion))
	case *kmsg.CreateTopicsRequest:
		return msg(b.handleCreateTopics(ctx, b.newMutationQuota(c, req.ClientID, req.APIKey, req.APIVersion), r))
	case *kmsg.DeleteTopicsRequest:
		return msg(b.handleDeleteTopics(ctx, b.newMutationQuota(c, req.ClientID, req.APIKey, req.APIVersion), r))
	case *kmsg.DeleteRecordsRequest:
		return msg(b.handleDeleteRecords(r))
	case *kmsg.DescribeConfigsRequest:
		return msg(b.handleDescribeConfigs(r))
	case *kmsg.AlterConfigsRequest:
		return msg(b.handleAlterConfigs(ctx, r))
	case *kmsg.DescribeLogDirsRequest:
		return msg(b.handleDescribeLogDirs(r))
	case *kmsg.CreatePartitionsRequest:
		return msg(b.handleCreatePartitions(ctx, b.newMutationQuota(c, req.ClientID, req.APIKey, req.APIVersion), r))
	case *kmsg.ElectLeadersRequest:
		return msg(b.handleElectLeaders(ctx, r))
	case *kmsg.AlterPartitionAssignmentsRequest:
		return msg(b.handleAlterPartitionReassignments(ctx, r))
	case *kmsg.ListPartitionReassignmentsRequest:
		return msg(b.handleListPartitionReassignments(r))
	case *kmsg.IncrementalAlterConfigsRequest:
		return msg(b.handleIncrementalAlterConfigs(ctx, r))
	case *kmsg.DescribeClusterRequest:
		return msg(b.handleDescribeCluster(c, r))
	case *kmsg.DescribeTopicPartitionsRequest:
		return msg(b.handleDescribeTopicPartitions(c, r))
	case *kmsg.OffsetForLeaderEpochRequest:
		return msg(b.handleOffsetForLeaderEpoch(r))
	case *kmsg.InitProducerIDRequest:
		return b.handleInitProducerID(ctx, r)
	case *kmsg.DescribeProducersRequest:
		return msg(b.handleDescribeProducers(r))
	case *kmsg.AddPartitionsToTxnRequest:
		return b.handleAddPartitionsToTxn(c, r)
	case *kmsg.AddOffsetsToTxnRequest:
		return b.handleAddOffsetsToTxn(c, r)
	case *kmsg.EndTxnRequest:
		return b.handleEndTxn(c, r)
	case *kmsg.WriteTxnMarkersRequest:
		return b.handleWriteTxnMarkers(c, r)
	case *kmsg.DescribeTransactionsRequest:
		return msg(b.handleDescribeTransactions(c, r))
	case *kmsg.ListTransactionsRequest:
		return msg(b.handleListTransactions(c, r))
	case *kmsg.FindCoordinatorRequest:
		return msg(b.handleFindCoordinator(ctx, c, r))
	case *kmsg.JoinGroupRequest:
		return b.handleJoinGroup(c, req.ClientID, r)
	case *kmsg.SyncGroupRequest:
		return b.handleSyncGroup(r)
	case *kmsg.HeartbeatRequest:
		return inOrder(func(ctx context.Context) kmsg.Response { return b.handleHeartbeat(ctx, r) })
	case *kmsg.LeaveGroupRequest:
		return b.handleLeaveGroup(r)
	case *kmsg.OffsetCommitRequest:
		return b.handleOffsetCommit(r)
	case *kmsg.OffsetFetchRequest:
		return inOrder(func(ctx context.Context) kmsg.Response { return b.handleOffsetFetch(ctx, r) })
	case *kmsg.TxnOffsetCommitRequest:
		return b.handleTxnOffsetCommit(r)
	case *kmsg.OffsetDeleteRequest:
		return b.handleOffsetDelete(r)
	case *kmsg.DescribeGroupsRequest:
		return inOrder(func(ctx context.Context) kmsg.Response { return b.handleDescribeGroups(ctx, r) })
	case *kmsg.ListGroupsRequest:
		return inOrder(func(ctx context.Context) kmsg.Response { return b.handleListGroups(ctx, r) })
	case *kmsg.DeleteGroupsRequest:
		return b.handleDeleteGroups(r)
	case *kmsg.DescribeACLsRequest:
		return inOrder(func(context.Context) kmsg.Response { return b.handleDescribeACLs(c, r) })
	case *kmsg.CreateACLsRequest:
		return inOrder(func(ctx context.Context) kmsg.Response { return b.handleCreateACLs(ctx, c, r) })
	case *kmsg.DeleteACLsRequest:
		return inOrder(func(ctx context.Context) kmsg.Response { return b.handleDeleteACLs(ctx, c, r) })
	case *kmsg.DescribeClientQuotasRequest:
		return msg(b.handleDescribeClientQuotas(c, r))
	case *kmsg.AlterClientQuotasRequest:
		return inOrder(func(ctx context.Context) kmsg.Response { return b.handleAlterClientQuotas(ctx, c, r) })
	case *kmsg.DescribeUserSCRAMCredentialsRequest:
		return inOrder(func(context.Context) kmsg.Response { return b.handleDescribeUserSCRAMCredentials(c, r) })
	case *kmsg.AlterUserSCRAMCredentialsRequest:
		return inOrder(func(ctx context.Context) kmsg.Response { return b.handleAlterUserSCRAMCredentials(ctx, c, r) })
	}
	// The server only passes keys that Versions accepts, so this is a
	// broken invariant.
	panic(fmt.Sprintf("broker: no handler for api key %d", req.APIKey))
}

func msg(r kmsg.Response) server.Reply { return server.Reply{Msg: r} }

// inOrder runs f on the connection's write goroutine. The group APIs that
// change state (JoinGroup, SyncGroup, OffsetCommit, ...) do their work
// there, in request order, so the group APIs that read state run there too:
// an OffsetFetch pipelined after an OffsetCommit on one connection sees the
// commit, as with Kafka, which handles a connection's requests one at a
// time.
func inOrder(f func(ctx context.Context) kmsg.Response) server.Reply {
	return server.Reply{Wait: func(ctx context.Context) server.Reply { return server.Reply{Msg: f(ctx)} }}
}

// StorageConfig returns the log configuration of a resolved topic config.
func StorageConfig(t config.Topic) storage.Config {
	return storage.Config{
		SegmentBytes:       t.SegmentBytes,
		SegmentMs:          t.SegmentMs,
		SegmentIndexBytes:  t.SegmentIndexBytes,
		IndexIntervalBytes: int64(t.IndexIntervalBytes),
		RetentionMs:        t.RetentionMs,
		RetentionBytes:     t.RetentionBytes,
		FlushMessages:      t.FlushMessages,
		FlushMs:            t.FlushMs,
		FileDeleteDelayMs:  t.FileDeleteDelayMs,

		CleanupPolicy:          t.CleanupPolicy,
		DeleteRetentionMs:      t.DeleteRetentionMs,
		MinCleanableDirtyRatio: t.MinCleanableDirtyRatio,
		MinCompactionLagMs:     t.MinCompactionLagMs,
		MaxCompactionLagMs:     t.MaxCompactionLagMs,
	}
}

// topicConfigCache holds resolved topic configs for one image revision.
type topicConfigCache struct {
	rev int64
	mu  sync.Mutex
	m   map[string]config.Topic // guarded by mu
}

// cachedTopicConfig is topicConfig for t, resolved once per image revision
// (the produce path asks for every partition of every request).
func (b *Broker) cachedTopicConfig(img *cluster.Image, t *cluster.Topic) (config.Topic, error) {
	c := b.topicConfigs.Load()
	if c == nil || c.rev != img.Revision {
		c = &topicConfigCache{rev: img.Revision, m: make(map[string]config.Topic)}
		b.topicConfigs.Store(c)
	}
	c.mu.Lock()
	tc, ok := c.m[t.Name]
	c.mu.Unlock()
	if ok {
		return tc, nil
	}
	tc, err := b.topicConfig(img, t.Configs)
	if err != nil {
		return tc, err
	}
	c.mu.Lock()
	c.m[t.Name] = tc
	c.mu.Unlock()
	return tc, nil
}

// topicConfig resolves a topic's overrides. Dynamic broker configs with a
// topic-level counterpart (log.retention.ms -> retention.ms) apply to every
// topic that does not override them; the node's own beat the cluster-wide
// default, as in Kafka.
func (b *Broker) topicConfig(img *cluster.Image, overrides map[string]string) (config.Topic, error) {
	merged := make(map[string]string, len(overrides))
	for _, node := range []string{"", fmt.Sprint(b.cfg.NodeID)} {
		for k, v := range img.BrokerConfigs[node] {
			if d, ok := config.LookupBroker(k); ok && d.Topic != "" {
				merged[d.Topic] = v
			}
		}
	}
	for k, v := range overrides {
		merged[k] = v
	}
	return b.cfg.ResolveTopic(merged)
}

// leaderPartition returns the partition topic/partition if this broker
// leads it. The error is UNKNOWN_TOPIC_OR_PARTITION when the image has no
// such partition, else what errCode makes of the replica error
// (NOT_LEADER_OR_FOLLOWER).
func (b *Broker) leaderPartition(img *cluster.Image, topic string, partition int32) (*replica.Partition, *kerr.Error) {
	t := img.Topics[topic]
	if t == nil || partition < 0 || int(partition) >= len(t.Replicas) {
		return nil, kerr.UnknownTopicOrPartition
	}
	p, err := b.replicas.Leader(storage.TopicPartition{Topic: topic, Partition: partition})
	if err != nil {
		return nil, errCode(err)
	}
	return p, nil
}

func contains(s []int32, v int32) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// errorCode returns the code of a kerr error, 0 for nil.
func errorCode(err *kerr.Error) int16 {
	if err == nil {
		return 0
	}
	return err.Code
}
