package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/cluster"
	"samsa/internal/fetchsession"
	"samsa/internal/replica"
	"samsa/internal/storage"
)

// leaderClient is this broker's connections to the other brokers, on the
// inter-broker listener, one franz-go connection per broker: its
// followers talk to partition leaders through it (replica.LeaderClient:
// Kafka Fetch and OffsetForLeaderEpoch requests with this broker's
// replica id), and the broker sends transaction markers and verifications
// over it (broker.InterBroker).
type leaderClient struct {
	cluster *cluster.Cluster
	self    int32
	log     *slog.Logger
	// listener is the inter-broker listener; sec secures connections to
	// it (TLS, SASL), and opts are sec as franz-go options.
	listener string
	sec      interBrokerSecurity
	opts     []kgo.Opt

	mu      sync.Mutex
	clients map[int32]*leaderConn // guarded by mu
}

type leaderConn struct {
	addr string
	cl   *kgo.Client
	// session is the KIP-227 fetch session with the leader: after a full
	// fetch, a fetch names only the partitions whose fetch offset or
	// epoch changed, and those it stops fetching. A new connection (a
	// new address) starts with a full fetch. fetchMu serialises the
	// fetches of the session: a fetcher that stops and the one that
	// replaces it may overlap for a moment. fetches is the connection
	// the fetches go on (nil until the first, or after an error): set
	// with fetchMu held, and atomic so that close can end a fetch under
	// way without waiting for fetchMu; closed is set by close.
	fetchMu sync.Mutex
	session fetchsession.Handler
	fetches atomic.Pointer[fetchConn]
	closed  atomic.Bool
}

func newLeaderClient(c *cluster.Cluster, self int32, listener string, sec interBrokerSecurity, log *slog.Logger) *leaderClient {
	return &leaderClient{cluster: c, self: self, log: log, listener: listener, sec: sec, opts: sec.opts(), clients: make(map[int32]*leaderConn)}
}

// close closes the connections to the leader; a fetch under way on it
// fails.
func (c *leaderConn) close() {
	c.cl.Close()
	c.closed.Store(true)
	if fc := c.fetches.Load(); fc != nil {
		fc.close()
	}
}

// setFetches replaces the fetch connection (nil: none), closing the old.
// Called with fetchMu held.
func (c *leaderConn) setFetches(fc *fetchConn) {
	if old := c.fetches.Swap(fc); old != nil {
		old.close()
	}
}

// Broker returns a connection to broker leader's current address on the
// inter-broker listener (broker.InterBroker).
func (lc *leaderClient) Broker(leader int32) (*kgo.Broker, error) {
	_, br, err := lc.conn(leader)
	return br, err
}

// conn returns the connection to the leader's current address and its
// session.
func (lc *leaderClient) conn(leader int32) (*leaderConn, *kgo.Broker, error) {
	br, ok := lc.cluster.Image().Brokers[leader]
	if !ok {
		return nil, nil, fmt.Errorf("node: broker %d is not registered", leader)
	}
	host, port, ok := br.Endpoint(lc.listener)
	if !ok {
		return nil, nil, fmt.Errorf("node: broker %d has no listener %s (inter.broker.listener.name)", leader, lc.listener)
	}
	addr := net.JoinHostPort(host, strconv.Itoa(int(port)))
	lc.mu.Lock()
	defer lc.mu.Unlock()
	c := lc.clients[leader]
	if c != nil && c.addr != addr {
		c.close()
		c = nil
	}
	if c == nil {
		cl, err := kgo.NewClient(append([]kgo.Opt{
			kgo.SeedBrokers(addr),
			kgo.ClientID("samsa-replica-" + strconv.Itoa(int(lc.self))),
			kgo.RequestRetries(0),
		}, lc.opts...)...)
		if err != nil {
			return nil, nil, err
		}
		c = &leaderConn{addr: addr, cl: cl}
		lc.clients[leader] = c
	}
	return c, c.cl.SeedBrokers()[0], nil
}

// Close closes every connection.
func (lc *leaderClient) Close() {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	for id, c := range lc.clients {
		c.close()
		delete(lc.clients, id)
	}
}

// Fetch implements replica.LeaderClient. It fetches in the connection's
// fetch session: the leader keeps the partitions and fetch offsets last
// sent and answers only partitions with news, so an idle follower's fetch
// of many partitions names none. A session error (the leader restarted or
// evicted the session) is retried at once as a full fetch. The fetches go
// on a connection of their own (fetchConn), whose response buffers are
// pooled: the response's Release returns its buffer.
func (lc *leaderClient) Fetch(ctx context.Context, leader int32, r replica.FetchRequest) (replica.FetchResponse, error) {
	c, _, err := lc.conn(leader)
	if err != nil {
		return replica.FetchResponse{}, err
	}
	want := make([]fetchsession.Partition, 0, len(r.Partitions))
	names := make(map[[16]byte]string)
	for _, p := range r.Partitions {
		names[p.TopicID] = p.TP.Topic
		want = append(want, fetchsession.Partition{
			Key: fetchsession.Key{TopicID: p.TopicID, Topic: p.TP.Topic, Partition: p.TP.Partition},
			Params: fetchsession.Params{
				FetchOffset: p.Offset, LogStartOffset: -1, MaxBytes: r.MaxBytes,
				CurrentLeaderEpoch: p.CurrentLeaderEpoch, LastFetchedEpoch: -1,
			},
		})
	}
	c.fetchMu.Lock()
	defer c.fetchMu.Unlock()
	for attempt := 0; ; attempt++ {
		if fc := c.fetches.Load(); fc != nil && fc.expired(r.MaxWait) {
			c.setFetches(nil)
		}
		if c.fetches.Load() == nil {
			fc, err := dialFetchConn(ctx, c.addr, "samsa-replica-"+strconv.Itoa(int(lc.self)), lc.sec)
			if err != nil {
				c.session.Failed()
				return replica.FetchResponse{}, err
			}
			c.setFetches(fc)
		}
		if c.closed.Load() {
			// close ran before the connection was published.
			c.setFetches(nil)
			return replica.FetchResponse{}, errLeaderConnClosed
		}
		plan := c.session.Build(want)
		resp, release, err := c.fetches.Load().fetch(ctx, fetchRequest(r, plan))
		if err != nil {
			c.setFetches(nil)
			c.session.Failed()
			return replica.FetchResponse{}, err
		}
		sessErr := kerr.ErrorForCode(resp.ErrorCode)
		switch sessErr {
		case nil:
		case kerr.FetchSessionIDNotFound:
			sessErr = fetchsession.ErrSessionIDNotFound
		case kerr.InvalidFetchSessionEpoch:
			sessErr = fetchsession.ErrInvalidEpoch
		case kerr.FetchSessionTopicIDError:
			sessErr = fetchsession.ErrTopicIDMismatch
		}
		c.session.Done(sessErr, resp.SessionID, resp.Version >= 13)
		if sessErr != nil {
			release()
			if !plan.Full && attempt == 0 {
				continue
			}
			return replica.FetchResponse{}, sessErr
		}
		out := fetchedPartitions(resp, names)
		out.Release = release
		return out, nil
	}
}

// errLeaderConnClosed fails a fetch on a connection closed meanwhile (the
// leader moved to another address, or the broker is stopping).
var errLeaderConnClosed = errors.New("node: connection to the leader closed")

// fetchRequest is the replica fetch r with the session fields and
// partitions of plan.
func fetchRequest(r replica.FetchRequest, plan fetchsession.Plan) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = r.ReplicaID
	req.ReplicaState.ID = r.ReplicaID
	req.ReplicaState.Epoch = -1
	req.MaxWaitMillis = int32(r.MaxWait.Milliseconds())
	req.MinBytes, req.MaxBytes = r.MinBytes, r.MaxBytes
	req.SessionID, req.SessionEpoch = plan.SessionID, plan.Epoch
	byTopic := make(map[string]int)
	for _, p := range plan.Send {
		i, ok := byTopic[p.Topic]
		if !ok {
			t := kmsg.NewFetchRequestTopic()
			t.Topic, t.TopicID = p.Topic, p.TopicID
			req.Topics = append(req.Topics, t)
			i = len(req.Topics) - 1
			byTopic[p.Topic] = i
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.CurrentLeaderEpoch = p.Partition, p.FetchOffset, p.CurrentLeaderEpoch
		rp.LogStartOffset, rp.LastFetchedEpoch = p.LogStartOffset, p.LastFetchedEpoch
		rp.PartitionMaxBytes = p.MaxBytes
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	forgotten := make(map[fetchsession.Key]int) // by topic, Partition 0
	for _, k := range plan.Forget {
		tk := fetchsession.Key{TopicID: k.TopicID, Topic: k.Topic}
		i, ok := forgotten[tk]
		if !ok {
			ft := kmsg.NewFetchRequestForgottenTopic()
			ft.Topic, ft.TopicID = k.Topic, k.TopicID
			req.ForgottenTopics = append(req.ForgottenTopics, ft)
			i = len(req.ForgottenTopics) - 1
			forgotten[tk] = i
		}
		req.ForgottenTopics[i].Partitions = append(req.ForgottenTopics[i].Partitions, k.Partition)
	}
	return req
}

// fetchedPartitions translates a Fetch response for the replica fetcher;
// names maps topic ids to names (responses of v13+ name topics by id).
func fetchedPartitions(resp *kmsg.FetchResponse, names map[[16]byte]string) replica.FetchResponse {
	var out replica.FetchResponse
	for _, t := range resp.Topics {
		name := t.Topic
		if n, ok := names[t.TopicID]; ok && resp.Version >= 13 {
			name = n
		}
		for _, p := range t.Partitions {
			fp := replica.FetchedPartition{
				TP:             storage.TopicPartition{Topic: name, Partition: p.Partition},
				HighWatermark:  p.HighWatermark,
				LogStartOffset: p.LogStartOffset,
				Records:        p.RecordBatches,
			}
			switch err := kerr.ErrorForCode(p.ErrorCode); err {
			case nil:
			case kerr.FencedLeaderEpoch:
				fp.Err = replica.ErrFencedLeaderEpoch
			case kerr.UnknownLeaderEpoch:
				fp.Err = replica.ErrUnknownLeaderEpoch
			case kerr.OffsetOutOfRange:
				fp.Err = replica.ErrOffsetOutOfRange
			default:
				fp.Err = err
			}
			out.Partitions = append(out.Partitions, fp)
		}
	}
	return out
}

// EpochEndOffset implements replica.LeaderClient.
func (lc *leaderClient) EpochEndOffset(ctx context.Context, leader int32, tp storage.TopicPartition, currentLeaderEpoch, epoch int32) (int32, int64, error) {
	br, err := lc.Broker(leader)
	if err != nil {
		return 0, 0, err
	}
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.ReplicaID = lc.self
	t := kmsg.NewOffsetForLeaderEpochRequestTopic()
	t.Topic = tp.Topic
	p := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	p.Partition, p.CurrentLeaderEpoch, p.LeaderEpoch = tp.Partition, currentLeaderEpoch, epoch
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, br)
	if err != nil {
		return 0, 0, err
	}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if rt.Topic != tp.Topic || rp.Partition != tp.Partition {
				continue
			}
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				return 0, 0, err
			}
			return rp.LeaderEpoch, rp.EndOffset, nil
		}
	}
	return 0, 0, fmt.Errorf("node: OffsetForLeaderEpoch response without %s-%d", tp.Topic, tp.Partition)
}

// isrWriter writes a leader's ISR changes (replica.ISRWriter) with a
// compare-and-swap on the partition state, refused unless this broker
// still leads at the epochs the change was decided at.
type isrWriter struct {
	cluster *cluster.Cluster
	self    int32
}

func (w isrWriter) AlterISR(ctx context.Context, tp storage.TopicPartition, leaderEpoch int32, isr []int32, partitionEpoch int32) error {
	img := w.cluster.Image()
	t := img.Topics[tp.Topic]
	if t == nil || int(tp.Partition) >= len(t.Partitions) {
		return fmt.Errorf("%w: %s-%d", cluster.ErrUnknownPartition, tp.Topic, tp.Partition)
	}
	st := t.Partitions[tp.Partition]
	if st.Leader != w.self || st.LeaderEpoch != leaderEpoch || st.PartitionEpoch != partitionEpoch {
		return fmt.Errorf("%w: %s-%d is at leader %d epoch %d partition epoch %d", cluster.ErrInvalidUpdateVersion,
			tp.Topic, tp.Partition, st.Leader, st.LeaderEpoch, st.PartitionEpoch)
	}
	// Reference: KIP-841. A replica joins the ISR only while registered
	// and not shutting down. Without this, a follower whose lease expired
	// (etcd came back after a pause or restart and the broker has not
	// registered again yet) but which still fetches is put back into the
	// ISR by its leader as fast as the controller takes it out, a write
	// war that only ends when it registers again.
	for _, id := range isr {
		if slices.Contains(st.ISR, id) {
			continue
		}
		if br, ok := img.Brokers[id]; !ok || br.ShuttingDown {
			return fmt.Errorf("%w: broker %d joining the ISR of %s-%d", errIneligibleReplica, id, tp.Topic, tp.Partition)
		}
	}
	prev := st
	st.ISR = isr
	w.cluster.ApplyELR(img, tp.Topic, tp.Partition, prev, &st)
	st.PartitionEpoch++
	_, err := w.cluster.AlterPartition(ctx, tp.Topic, tp.Partition, st)
	return err
}

// errIneligibleReplica refuses an ISR expansion to a broker that is not
// registered or is shutting down (Kafka's INELIGIBLE_REPLICA).
var errIneligibleReplica = errors.New("node: replica not eligible for the ISR")
