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
)

// InterBroker is this broker's connections to the other brokers, on the
// inter-broker listener (secured as it requires). The transaction
// coordinator sends WriteTxnMarkers and the Produce handler verifies
// transactions (AddPartitionsToTxn) over it. The node provides it.
type InterBroker interface {
	// Broker returns a connection to broker id, or an error if id is not
	// registered or has no inter-broker listener. Safe for concurrent use.
	Broker(id int32) (*kgo.Broker, error)
}

// LogDirState is one log dir of the broker as DescribeLogDirs reports it.
type LogDirState struct {
	Dir     string
	Offline bool
}

// Config wires a Broker to the parts it serves from, which the node
// assembles and owns.
type Config struct {
	Broker  *config.Broker
	Cluster *cluster.Cluster
	// Replicas is the partitions this broker hosts.
	Replicas *replica.Manager
	// LogDirs lists the log dirs the partitions' logs are in, in
	// log.dirs order, each with whether it is offline (DescribeLogDirs
	// reports them); nil reports none.
	LogDirs func() []LogDirState
	Logger  *slog.Logger
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// InterBroker connects to the other brokers.
	InterBroker InterBroker
	// Reconcile makes the hosted partitions follow the cluster image at
	// once and then calls ApplyImage: a pass of the node's reconciler.
	// Handlers that create or delete topics call it, so the partitions are
	// hosted (or gone) before they answer. nil does nothing.
	Reconcile func() error
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
	logDirs  func() []LogDirState
	replicas *replica.Manager
	log      *slog.Logger
	now      func() time.Time
	// reconcileFn is Config.Reconcile.
	reconcileFn func() error

	producerIDs producerIDs
	brokers     InterBroker

	topicConfigs atomic.Pointer[topicConfigCache]

	// fetchSessions are the KIP-227 fetch sessions of consumers and
	// followers (fetch_session.go).
	fetchSessions *fetchsession.Cache

	groups *group.Coordinator
	// shares is the share groups coordinated here, sharePartitions the
	// share-partitions led here and their sessions, sharePersister where
	// their state is kept (KIP-932; share_*.go).
	shares          *shareGroups
	sharePartitions *sharePartitions
	sharePersister  sharePersister
	shareCoord      shareCoordinator
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
	// closed is set by Close: ApplyImage starts no more loads; guarded
	// by reconcileMu.
	closed bool

	// coordLogMu guards coordLogged: when each reason a coordinator
	// lookup failed was last logged.
	coordLogMu  sync.Mutex
	coordLogged map[string]time.Time

	// reconcileMu serialises ApplyImage's coordinator loads and unloads
	// (the node's reconciler and handlers that create topics both end
	// their pass with it) with the loads that fail and forget themselves.
	reconcileMu sync.Mutex

	// draining is closed by Drain: parked Fetches answer at once.
	draining  chan struct{}
	drainOnce sync.Once

	// ctx is cancelled by Close; background work (coordinator loads)
	// runs under it.
	ctx       context.Context
	cancelCtx context.CancelFunc

	closeMu sync.Once
}

// New returns a Broker serving from the parts cfg names. It starts no
// goroutine: the node's reconciler hosts the partitions and calls
// ApplyImage after each pass.
func New(cfg Config) (*Broker, error) {
	b := &Broker{
		cfg:         cfg.Broker,
		cluster:     cfg.Cluster,
		logDirs:     cfg.LogDirs,
		replicas:    cfg.Replicas,
		brokers:     cfg.InterBroker,
		reconcileFn: cfg.Reconcile,
		log:         cfg.Logger,
		now:         cfg.Now,
		draining:    make(chan struct{}),
	}
	if b.log == nil {
		b.log = slog.New(slog.DiscardHandler)
	}
	if b.now == nil {
		b.now = time.Now
	}
	if b.replicas == nil || b.cluster == nil || b.brokers == nil {
		return nil, errors.New("broker: Config needs Cluster, Replicas and InterBroker")
	}
	b.fetchSessions = fetchsession.New(fetchsession.Config{
		MaxSlots:   int(cfg.Broker.MaxIncrementalFetchSessionCacheSlots),
		EvictionMs: cfg.Broker.MinIncrementalFetchSessionEvictionMs,
	})
	b.ctx, b.cancelCtx = context.WithCancel(context.Background())
	b.acls = newACLState(acl.Config{SuperUsers: cfg.Broker.SuperUsers, AllowEveryoneIfNoACLFound: cfg.Broker.AllowEveryoneIfNoACLFound},
		authorizerEnabled(cfg.Broker.AuthorizerClassName))
	b.quotas.init(cfg.Broker, cfg.Connections)
	b.producerIDs.init(b.ctx, cfg.Cluster)
	gcfg := group.ConfigFromBroker(cfg.Broker)
	gcfg.Logger, gcfg.Now = b.log.With("pkg", "group"), b.now
	gcfg.OnRebalance = cfg.OnRebalance
	gcfg.Topics = b.groupTopics
	gcfg.GroupTimeouts = b.consumerGroupTimeouts
	gcfg.ShareRecords = b.loadShareGroups
	b.groups = group.NewCoordinator(gcfg)
	b.groupsLoaded = make(map[int32]*replica.Partition)
	b.shares = newShareGroups(b)
	b.sharePartitions = newSharePartitions()
	b.sharePersister = coordPersister{b: b}
	b.txns = txn.NewCoordinator(b.txnConfig())
	b.txnsLoaded = make(map[int32]txnLoad)
	return b, nil
}

// ApplyImage brings the broker's own state up to the current image once
// the hosted partitions follow it: the group and transaction coordinators
// load the __consumer_offsets and __transaction_state partitions led here
// (in the background) and unload the others, and the connection limiter
// gets the image's connection_creation_rate quotas. The node's reconciler
// calls it at the end of every pass. After Close it does nothing.
func (b *Broker) ApplyImage() {
	b.reconcileMu.Lock()
	if !b.closed {
		b.reconcileGroupsLocked()
		b.reconcileTxnsLocked()
		b.reconcileSharesLocked()
	}
	b.reconcileMu.Unlock()
	b.quotaImage()
}

// Maintain expires idle client quota state. The node calls it at every
// producer state maintenance (MaintenanceInterval).
func (b *Broker) Maintain(now time.Time) { b.quotas.expire(now) }

// MaintenanceInterval is how often producer state is expired and
// snapshotted (and Maintain called); recovery after a crash replays at
// most this much of the log.
const MaintenanceInterval = 30 * time.Second

// reconcile runs a pass of the node's reconciler (Config.Reconcile).
func (b *Broker) reconcile() error {
	if b.reconcileFn == nil {
		return nil
	}
	return b.reconcileFn()
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

// Close stops the coordinators and waits for their background loads. It
// does not close the partitions, the cluster or the connections to other
// brokers, which the node owns (and closes after the Broker); the node's
// reconciler must be stopped first. It is idempotent.
func (b *Broker) Close() error {
	var err error
	b.closeMu.Do(func() {
		b.cancelCtx()
		// A reconcile pass that began before may still be adding
		// coordinator loads: let it finish, and start no more.
		b.reconcileMu.Lock()
		b.closed = true
		b.reconcileMu.Unlock()
		b.loads.Wait()
		b.producerIDs.close()
		// NB: the transaction coordinator's marker writes use the
		// partitions and the connections to other brokers, which the
		// node closes after this.
		txnErr := b.txns.Close()
		err = errors.Join(txnErr, b.groups.Close())
	})
	return err
}

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
	case *kmsg.AlterReplicaLogDirsRequest:
		return msg(b.handleAlterReplicaLogDirs(r))
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
	case *kmsg.GetTelemetrySubscriptionsRequest:
		return msg(b.handleGetTelemetrySubscriptions(r))
	case *kmsg.PushTelemetryRequest:
		return msg(b.handlePushTelemetry(r))
	case *kmsg.UpdateFeaturesRequest:
		return msg(b.handleUpdateFeatures(r))
	case *kmsg.ListConfigResourcesRequest:
		return msg(b.handleListConfigResources(r))
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
	case *kmsg.ConsumerGroupHeartbeatRequest:
		return b.handleConsumerGroupHeartbeat(c, req.ClientID, r)
	case *kmsg.ConsumerGroupDescribeRequest:
		return inOrder(func(ctx context.Context) kmsg.Response { return b.handleConsumerGroupDescribe(ctx, r) })
	case *kmsg.ShareGroupHeartbeatRequest:
		return b.handleShareGroupHeartbeat(c, req.ClientID, r)
	case *kmsg.ShareGroupDescribeRequest:
		return inOrder(func(context.Context) kmsg.Response { return b.handleShareGroupDescribe(c, r) })
	case *kmsg.ShareFetchRequest:
		return b.handleShareFetch(c, r)
	case *kmsg.ShareAcknowledgeRequest:
		return inOrder(func(context.Context) kmsg.Response { return b.handleShareAcknowledge(c, r) })
	case *kmsg.DescribeShareGroupOffsetsRequest:
		return inOrder(func(ctx context.Context) kmsg.Response { return b.handleDescribeShareGroupOffsets(ctx, c, r) })
	case *kmsg.AlterShareGroupOffsetsRequest:
		return inOrder(func(ctx context.Context) kmsg.Response { return b.handleAlterShareGroupOffsets(ctx, c, r) })
	case *kmsg.DeleteShareGroupOffsetsRequest:
		return inOrder(func(ctx context.Context) kmsg.Response { return b.handleDeleteShareGroupOffsets(ctx, c, r) })
	case *kmsg.InitializeShareGroupStateRequest:
		return inOrder(func(ctx context.Context) kmsg.Response { return b.handleInitializeShareGroupState(ctx, c, r) })
	case *kmsg.ReadShareGroupStateRequest:
		return inOrder(func(ctx context.Context) kmsg.Response { return b.handleReadShareGroupState(ctx, c, r) })
	case *kmsg.WriteShareGroupStateRequest:
		return inOrder(func(ctx context.Context) kmsg.Response { return b.handleWriteShareGroupState(ctx, c, r) })
	case *kmsg.DeleteShareGroupStateRequest:
		return inOrder(func(ctx context.Context) kmsg.Response { return b.handleDeleteShareGroupState(ctx, c, r) })
	case *kmsg.ReadShareGroupStateSummaryRequest:
		return inOrder(func(ctx context.Context) kmsg.Response { return b.handleReadShareGroupStateSummary(ctx, c, r) })
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

// topicConfigCache holds resolved topic configs for one image revision.
type topicConfigCache struct {
	rev int64
	mu  sync.Mutex
	m   map[string]config.Topic // guarded by mu
}

// TopicConfig returns the resolved config of topic t of img: its
// overrides over the dynamic broker configs over the static ones
// (topicConfig), resolved once per image revision. The node's reconciler
// configures the partitions' logs with it.
func (b *Broker) TopicConfig(img *cluster.Image, t *cluster.Topic) (config.Topic, error) {
	return b.cachedTopicConfig(img, t)
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
