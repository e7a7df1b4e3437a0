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

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/cluster"
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
	// listener is the inter-broker listener, and opts secure connections
	// to it (TLS, SASL).
	listener string
	opts     []kgo.Opt

	mu      sync.Mutex
	clients map[int32]*leaderConn // guarded by mu
}

type leaderConn struct {
	addr string
	cl   *kgo.Client
}

func newLeaderClient(c *cluster.Cluster, self int32, listener string, opts []kgo.Opt, log *slog.Logger) *leaderClient {
	return &leaderClient{cluster: c, self: self, log: log, listener: listener, opts: opts, clients: make(map[int32]*leaderConn)}
}

// Broker returns a connection to broker leader's current address on the
// inter-broker listener (broker.InterBroker).
func (lc *leaderClient) Broker(leader int32) (*kgo.Broker, error) {
	br, ok := lc.cluster.Image().Brokers[leader]
	if !ok {
		return nil, fmt.Errorf("node: broker %d is not registered", leader)
	}
	host, port, ok := br.Endpoint(lc.listener)
	if !ok {
		return nil, fmt.Errorf("node: broker %d has no listener %s (inter.broker.listener.name)", leader, lc.listener)
	}
	addr := net.JoinHostPort(host, strconv.Itoa(int(port)))
	lc.mu.Lock()
	defer lc.mu.Unlock()
	c := lc.clients[leader]
	if c != nil && c.addr != addr {
		c.cl.Close()
		c = nil
	}
	if c == nil {
		cl, err := kgo.NewClient(append([]kgo.Opt{
			kgo.SeedBrokers(addr),
			kgo.ClientID("samsa-replica-" + strconv.Itoa(int(lc.self))),
			kgo.RequestRetries(0),
		}, lc.opts...)...)
		if err != nil {
			return nil, err
		}
		c = &leaderConn{addr: addr, cl: cl}
		lc.clients[leader] = c
	}
	return c.cl.SeedBrokers()[0], nil
}

// Close closes every connection.
func (lc *leaderClient) Close() {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	for id, c := range lc.clients {
		c.cl.Close()
		delete(lc.clients, id)
	}
}

// Fetch implements replica.LeaderClient.
func (lc *leaderClient) Fetch(ctx context.Context, leader int32, r replica.FetchRequest) (replica.FetchResponse, error) {
	br, err := lc.Broker(leader)
	if err != nil {
		return replica.FetchResponse{}, err
	}
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = r.ReplicaID
	req.ReplicaState.ID = r.ReplicaID
	req.ReplicaState.Epoch = -1
	req.MaxWaitMillis = int32(r.MaxWait.Milliseconds())
	req.MinBytes, req.MaxBytes = r.MinBytes, r.MaxBytes
	req.SessionID, req.SessionEpoch = 0, -1
	byTopic := make(map[string]int)
	names := make(map[[16]byte]string)
	for _, p := range r.Partitions {
		i, ok := byTopic[p.TP.Topic]
		if !ok {
			t := kmsg.NewFetchRequestTopic()
			t.Topic, t.TopicID = p.TP.Topic, p.TopicID
			req.Topics = append(req.Topics, t)
			i = len(req.Topics) - 1
			byTopic[p.TP.Topic] = i
			names[p.TopicID] = p.TP.Topic
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.CurrentLeaderEpoch = p.TP.Partition, p.Offset, p.CurrentLeaderEpoch
		rp.LogStartOffset = -1
		rp.PartitionMaxBytes = r.MaxBytes
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	resp, err := req.RequestWith(ctx, br)
	if err != nil {
		return replica.FetchResponse{}, err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return replica.FetchResponse{}, err
	}
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
	return out, nil
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
	st.ISR = isr
	st.PartitionEpoch++
	_, err := w.cluster.AlterPartition(ctx, tp.Topic, tp.Partition, st)
	return err
}

// errIneligibleReplica refuses an ISR expansion to a broker that is not
// registered or is shutting down (Kafka's INELIGIBLE_REPLICA).
var errIneligibleReplica = errors.New("node: replica not eligible for the ISR")
