package broker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/cluster"
	"samsa/internal/record"
	"samsa/internal/replica"
	"samsa/internal/storage"
	"samsa/internal/txn"
)

// txnStateTopic is Kafka's internal topic of transaction coordinator
// state: one record per transactional id, compacted.
const txnStateTopic = "__transaction_state"

// txnAppendTimeout bounds how long a __transaction_state write waits to be
// committed.
const txnAppendTimeout = 30 * time.Second

// txnLog is one __transaction_state partition as the transaction
// coordinator sees it (txn.Log), over this broker's replica of it.
type txnLog struct {
	b *Broker
	p *replica.Partition
}

// Append writes one record as an uncompressed batch and waits until it is
// committed (Kafka writes __transaction_state with acks=all). A replica
// that is not (or no longer) the leader, or whose log is closed or
// offline, fails with txn.ErrNotCoordinator wrapping the cause, as Kafka's
// TransactionStateManager answers NOT_COORDINATOR for them.
func (l txnLog) Append(ctx context.Context, key, value []byte) error {
	err := l.append(ctx, key, value)
	if errors.Is(err, replica.ErrNotLeader) || errors.Is(err, storage.ErrClosed) || errors.Is(err, storage.ErrLogDirOffline) ||
		errors.Is(err, replica.ErrFencedLeaderEpoch) {
		return fmt.Errorf("%w: %w", txn.ErrNotCoordinator, err)
	}
	return err
}

func (l txnLog) append(ctx context.Context, key, value []byte) error {
	ctx, cancel := context.WithTimeout(ctx, txnAppendTimeout)
	defer cancel()
	if err := l.p.CheckAppend(); err != nil {
		return err
	}
	nowMs := l.b.now().UnixMilli()
	bb := record.NewBuilder(record.CodecNone, nowMs)
	bb.Add(record.Record{Key: key, Value: value})
	batch, err := bb.Build()
	if err != nil {
		return err
	}
	res, err := l.p.Append(batch, false, nowMs)
	if err != nil {
		return err
	}
	return l.p.WaitCommitted(ctx, res.LastOffset+1, res.LeaderEpoch)
}

// Replay calls fn for every keyed record of the partition up to its log
// end, as Kafka's coordinator loads it (see offsetsLog.Replay for why the
// log end and not the high watermark).
func (l txnLog) Replay(ctx context.Context, fn func(key, value []byte) error) error {
	end := l.p.LogEndOffset()
	off := l.p.LogStartOffset()
	for off < end {
		if err := ctx.Err(); err != nil {
			return err
		}
		res, err := l.p.ReadRecords(off, 8<<20, end)
		if err != nil {
			return fmt.Errorf("broker: replay %s-%d at %d: %w", txnStateTopic, l.p.TP.Partition, off, err)
		}
		buf, err := res.AppendTo(nil)
		if err != nil {
			return err
		}
		if len(buf) == 0 {
			return nil
		}
		for len(buf) > 0 {
			b, rest, err := record.Split(buf)
			if err != nil {
				return fmt.Errorf("broker: replay %s-%d: %w", txnStateTopic, l.p.TP.Partition, err)
			}
			buf = rest
			off = b.LastOffset() + 1
			if b.Control() {
				continue
			}
			recs, err := b.Records(record.DefaultMaxDecompressedBytes)
			if err != nil {
				return fmt.Errorf("broker: replay %s-%d: %w", txnStateTopic, l.p.TP.Partition, err)
			}
			for i := range recs {
				if recs[i].Key == nil {
					continue
				}
				if err := fn(recs[i].Key, recs[i].Value); err != nil {
					return fmt.Errorf("broker: replay %s-%d at %d: %w", txnStateTopic, l.p.TP.Partition, b.BaseOffset()+int64(i), err)
				}
			}
		}
	}
	return nil
}

// txnLoad is a __transaction_state partition the coordinator loaded (or
// is loading), at the leader epoch it was loaded at.
type txnLoad struct {
	p     *replica.Partition
	epoch int32
}

// reconcileTxnsLocked loads the transaction coordinator's state for every
// __transaction_state partition led here and unloads those no longer led.
// A partition whose leader epoch changed is loaded again: the coordinator
// epoch written into markers is the leader epoch. Loading runs in the
// background (calls meanwhile get COORDINATOR_LOAD_IN_PROGRESS).
// b.reconcileMu must be held.
func (b *Broker) reconcileTxnsLocked() {
	led := make(map[int32]txnLoad)
	for _, p := range b.replicas.Partitions() {
		if p.TP.Topic == txnStateTopic && p.IsLeader() {
			led[p.TP.Partition] = txnLoad{p: p, epoch: p.LeaderEpoch()}
		}
	}
	for part, l := range led {
		if b.txnsLoaded[part] == l {
			continue
		}
		b.txnsLoaded[part] = l
		b.loads.Add(1)
		go func() {
			defer b.loads.Done()
			start := time.Now()
			if err := b.txns.Load(b.ctx, part, l.epoch, txnLog{b: b, p: l.p}); err != nil {
				if errors.Is(err, txn.ErrNotCoordinator) {
					// A newer load (leader epoch changed) or an
					// unload replaced this one: nothing to retry.
					b.log.Debug("transaction coordinator partition load superseded", "partition", part)
					return
				}
				b.log.Error("load transaction coordinator partition", "partition", part, "err", err)
				b.reconcileMu.Lock()
				if b.txnsLoaded[part] == l {
					delete(b.txnsLoaded, part)
				}
				b.reconcileMu.Unlock()
				return
			}
			b.log.Debug("transaction coordinator partition loaded", "partition", part, "took", time.Since(start))
		}()
	}
	for part := range b.txnsLoaded {
		if _, ok := led[part]; !ok {
			delete(b.txnsLoaded, part)
			b.txns.Unload(part)
		}
	}
}

// ensureTxnStateTopic creates __transaction_state if it does not exist:
// transaction.state.log.num.partitions partitions,
// transaction.state.log.replication.factor replicas (at most the live
// brokers), min.insync.replicas transaction.state.log.min.isr (at most the
// replication factor), compacted, as Kafka creates it.
func (b *Broker) ensureTxnStateTopic(ctx context.Context) error {
	img := b.cluster.Image()
	if img.Topics[txnStateTopic] != nil {
		return nil
	}
	rf := min(b.cfg.TransactionStateLogRF, int16(len(img.Brokers)))
	configs := b.internalTopicConfigs(txnStateTopic, rf)
	_, err := b.cluster.CreateTopic(ctx, txnStateTopic, b.cfg.TransactionStateLogNumParts, rf, configs)
	if err != nil && !errors.Is(err, cluster.ErrTopicExists) {
		return err
	}
	return b.reconcile()
}

// txnConfig returns the transaction coordinator's configuration.
func (b *Broker) txnConfig() txn.Config {
	return txn.Config{
		NumPartitions:         b.cfg.TransactionStateLogNumParts,
		MaxTimeoutMs:          b.cfg.TransactionMaxTimeoutMs,
		ExpirationMs:          int64(b.cfg.TransactionalIDExpirationMs),
		AbortTimedOutInterval: time.Duration(b.cfg.TransactionAbortTimedOutCleanupIntervalMs) * time.Millisecond,
		RemoveExpiredInterval: time.Duration(b.cfg.TransactionRemoveExpiredCleanupIntervalMs) * time.Millisecond,
		AppendTimeout:         txnAppendTimeout,
		NewProducerID:         b.producerIDs.allocate,
		Markers:               markerWriter{b},
		Now:                   b.now,
		Logger:                b.log.With("pkg", "txn"),
	}
}

// txnCode is the error code of a transaction coordinator error for an API
// whose versions below fencedSince predate PRODUCER_FENCED (KIP-588):
// those get INVALID_PRODUCER_EPOCH instead, as Kafka answers old clients
// (Reference: KafkaApis handleInitProducerIdRequest, handleEndTxnRequest,
// handleAddPartitionsToTxnRequest, handleAddOffsetsToTxnRequest). A failed
// write of __transaction_state comes back as a coordinator sentinel
// wrapping the replica's error; the sentinel decides the code, so clients
// never see NOT_ENOUGH_REPLICAS or NOT_LEADER from a coordinator.
func txnCode(err error, version, fencedSince int16) int16 {
	var code *kerr.Error
	switch {
	case err == nil:
		return 0
	case errors.Is(err, txn.ErrNotCoordinator):
		code = kerr.NotCoordinator
	case errors.Is(err, txn.ErrCoordinatorNotAvailable):
		code = kerr.CoordinatorNotAvailable
	default:
		code = errCode(err)
	}
	if code == kerr.ProducerFenced && version < fencedSince {
		code = kerr.InvalidProducerEpoch
	}
	return code.Code
}

// markerWriter writes transaction markers for the coordinator
// (txn.MarkerWriter): on partitions this broker leads it appends them
// itself; for the others it sends WriteTxnMarkers to their leaders, one
// request per leader, in parallel.
type markerWriter struct{ b *Broker }

// errNoLeader is a marker's partition that has no leader right now; the
// coordinator retries it.
var errNoLeader = errors.New("broker: partition has no leader")

// WriteMarkers implements txn.MarkerWriter. A partition whose topic is
// gone from the image counts as written: Kafka skips markers for deleted
// partitions too (TransactionMarkerChannelManager).
func (w markerWriter) WriteMarkers(ctx context.Context, req txn.MarkerRequest) map[txn.TopicPartition]error {
	b := w.b
	img := b.cluster.Image()
	var mu sync.Mutex
	errs := make(map[txn.TopicPartition]error)
	fail := func(tp txn.TopicPartition, err error) {
		mu.Lock()
		errs[tp] = err
		mu.Unlock()
	}
	byLeader := make(map[int32][]txn.TopicPartition)
	for _, tp := range req.Partitions {
		t := img.Topics[tp.Topic]
		if t == nil || tp.Partition < 0 || int(tp.Partition) >= len(t.Partitions) {
			continue
		}
		leader := t.Partitions[tp.Partition].Leader
		if leader < 0 {
			errs[tp] = errNoLeader
			continue
		}
		byLeader[leader] = append(byLeader[leader], tp)
	}
	var wg sync.WaitGroup
	for leader, tps := range byLeader {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if leader == b.cfg.NodeID {
				for tp, err := range b.writeMarkers(ctx, tps, req.ProducerID, req.ProducerEpoch, req.Commit, req.CoordinatorEpoch) {
					fail(tp, err)
				}
				return
			}
			for tp, err := range w.send(ctx, leader, req, tps) {
				fail(tp, err)
			}
		}()
	}
	wg.Wait()
	return errs
}

// send writes the markers of tps through their leader with
// WriteTxnMarkers and returns the partitions that failed.
func (w markerWriter) send(ctx context.Context, leader int32, req txn.MarkerRequest, tps []txn.TopicPartition) map[txn.TopicPartition]error {
	errs := make(map[txn.TopicPartition]error)
	failAll := func(err error) map[txn.TopicPartition]error {
		for _, tp := range tps {
			errs[tp] = err
		}
		return errs
	}
	br, err := w.b.brokers.Broker(leader)
	if err != nil {
		return failAll(err)
	}
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch = req.ProducerID, req.ProducerEpoch, req.Commit, req.CoordinatorEpoch
	for _, tp := range tps {
		if n := len(m.Topics); n > 0 && m.Topics[n-1].Topic == tp.Topic {
			m.Topics[n-1].Partitions = append(m.Topics[n-1].Partitions, tp.Partition)
			continue
		}
		t := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
		t.Topic, t.Partitions = tp.Topic, []int32{tp.Partition}
		m.Topics = append(m.Topics, t)
	}
	r := kmsg.NewPtrWriteTxnMarkersRequest()
	r.Version = 1
	r.Markers = []kmsg.WriteTxnMarkersRequestMarker{m}
	ctx, cancel := context.WithTimeout(ctx, txnAppendTimeout)
	defer cancel()
	resp, err := r.RequestWith(ctx, br)
	if err != nil {
		return failAll(err)
	}
	got := make(map[txn.TopicPartition]bool)
	for _, rm := range resp.Markers {
		for _, t := range rm.Topics {
			for _, p := range t.Partitions {
				tp := txn.TopicPartition{Topic: t.Topic, Partition: p.Partition}
				got[tp] = true
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
					errs[tp] = err
				}
			}
		}
	}
	for _, tp := range tps {
		if !got[tp] {
			errs[tp] = fmt.Errorf("broker: WriteTxnMarkers response from %d lacks %s", leader, tp)
		}
	}
	return errs
}

// writeMarkers appends the marker of producer pid to each of tps, which
// are led here, then waits until every one is committed, and returns the
// failures by partition. All are appended before the first wait, so that
// the markers of one EndTxn share the group-commit fsync of their log
// directory instead of paying one fsync each, one after another. On
// __consumer_offsets the group coordinator is told of each committed
// marker (onOffsetsMarker).
func (b *Broker) writeMarkers(ctx context.Context, tps []txn.TopicPartition, pid int64, epoch int16, commit bool, coordinatorEpoch int32) map[txn.TopicPartition]error {
	errs := make(map[txn.TopicPartition]error)
	type appended struct {
		tp  txn.TopicPartition
		p   *replica.Partition
		res replica.AppendResult
	}
	var waits []appended
	img := b.cluster.Image()
	nowMs := b.now().UnixMilli()
	for _, tp := range tps {
		p, kerrCode := b.leaderPartition(img, tp.Topic, tp.Partition)
		if kerrCode != nil {
			errs[tp] = kerrCode
			continue
		}
		res, err := p.AppendMarker(pid, epoch, commit, coordinatorEpoch, nowMs)
		if err != nil {
			errs[tp] = err
			continue
		}
		waits = append(waits, appended{tp: tp, p: p, res: res})
	}
	ctx, cancel := context.WithTimeout(ctx, txnAppendTimeout)
	defer cancel()
	for _, w := range waits {
		if err := w.p.WaitCommitted(ctx, w.res.LastOffset+1, w.res.LeaderEpoch); err != nil {
			errs[w.tp] = err
			continue
		}
		if w.tp.Topic == offsetsTopic {
			b.onOffsetsMarker(w.tp.Partition, pid, commit, w.res.LastOffset)
		}
	}
	return errs
}

// writeMarker is writeMarkers for one partition.
func (b *Broker) writeMarker(ctx context.Context, topic string, partition int32, pid int64, epoch int16, commit bool, coordinatorEpoch int32) error {
	tp := txn.TopicPartition{Topic: topic, Partition: partition}
	return b.writeMarkers(ctx, []txn.TopicPartition{tp}, pid, epoch, commit, coordinatorEpoch)[tp]
}
