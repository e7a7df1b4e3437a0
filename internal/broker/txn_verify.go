package broker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/record"
	"samsa/internal/replica"
	"samsa/internal/storage"
	"samsa/internal/txn"
)

// txnVerifyTimeout bounds the AddPartitionsToTxn a produce sends to verify
// its partition with a transaction coordinator on another broker.
const txnVerifyTimeout = 5 * time.Second

// A Produce v12+ that adds its partition while the coordinator is still
// writing the markers of the producer's previous transaction (the state is
// PrepareCommit or PrepareAbort, CONCURRENT_TRANSACTIONS) asks again after
// txnAddRetryBackoff, doubling up to 20 ms, for at most txnAddRetryMax in
// all, before it answers CONCURRENT_TRANSACTIONS. Under transaction version
// 2 the next transaction's first produce nearly always meets the previous
// one's markers, and a client's retry backoff (100 ms or more) would cost
// far more than the markers take (Reference: KAFKA-18654, Kafka's
// add.partitions.to.txn.retry.backoff.ms and .max.ms, 20 and 100 ms).
const (
	txnAddRetryBackoff = time.Millisecond
	txnAddRetryMax     = 100 * time.Millisecond
)

// Errors of produce verification, each mapped by errCode.
var (
	// errNotInTxn is a transactional batch for a partition that is not
	// in its producer's transaction: INVALID_TXN_STATE, as Kafka answers.
	errNotInTxn = fmt.Errorf("%w: partition was not added to the transaction", txn.ErrInvalidTxnState)
	// errVerifyUnavailable is a verification that could not be made
	// (coordinator moving, loading, busy): NOT_ENOUGH_REPLICAS, which
	// clients retry without a metadata refresh (Reference: Kafka
	// ReplicaManager.appendRecords postVerificationCallback).
	errVerifyUnavailable = fmt.Errorf("%w: could not verify the partition is in the transaction", replica.ErrNotEnoughReplicas)
)

// verifyTxnPartition checks, before a transactional batch is appended to
// p, that p is in the ongoing transaction of the batch's producer, and
// returns the guard to append it with (replica.Partition.AppendVerified).
//
// With add false (Produce v3-11, KIP-890 part 1) the coordinator is only
// asked: a producer whose transaction ended (fenced, timed out, aborted)
// must not open a new one here by a late or stray write. With add true
// (Produce v12+, transaction version 2, KIP-890 part 2) the coordinator
// adds p to the producer's transaction, starting one if none is ongoing,
// as the client's AddPartitionsToTxn would have; its epoch check refuses
// a write from an earlier transaction, whose end bumped the epoch.
//
// Nothing is asked when the producer already has a transaction open in p.
// The coordinator is called directly when it is this broker, else with
// AddPartitionsToTxn v5 (VerifyOnly for add false). With add true, an
// answer of CONCURRENT_TRANSACTIONS is retried for up to txnAddRetryMax,
// each time with a new guard (the markers being waited for change p's
// marker count), and then returned as txn.ErrConcurrentTransactions
// (Reference: KAFKA-18662: Produce v12 answers CONCURRENT_TRANSACTIONS,
// not NOT_ENOUGH_REPLICAS). It blocks for at most txnVerifyTimeout plus
// txnAddRetryMax. A batch that is not transactional gets the zero guard.
func (b *Broker) verifyTxnPartition(ctx context.Context, id string, p *replica.Partition, records []byte, add bool) (replica.VerificationGuard, error) {
	batch, _, err := record.Split(records)
	if err != nil || !batch.Transactional() || batch.ProducerID() < 0 {
		return replica.VerificationGuard{}, nil // appendBatch refuses what is malformed
	}
	pid, epoch := batch.ProducerID(), batch.ProducerEpoch()
	tp := txn.TopicPartition{Topic: p.TP.Topic, Partition: p.TP.Partition}
	var guard replica.VerificationGuard
	err = retryConcurrent(ctx, add, func() error {
		var ongoing bool
		if guard, ongoing = p.BeginVerification(pid, epoch); ongoing {
			return nil
		}
		return b.verifyOrAdd(ctx, id, pid, epoch, tp, add)
	})
	return guard, err
}

// retryConcurrent calls f until it returns anything but
// txn.ErrConcurrentTransactions, for at most txnAddRetryMax; with retry
// false it calls f once.
func retryConcurrent(ctx context.Context, retry bool, f func() error) error {
	backoff, waited := txnAddRetryBackoff, time.Duration(0)
	for {
		err := f()
		if !retry || !errors.Is(err, txn.ErrConcurrentTransactions) || waited >= txnAddRetryMax {
			return err
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		waited += backoff
		backoff = min(2*backoff, 20*time.Millisecond)
	}
}

// addProducePartitions adds the partitions of a Produce v12+ request to
// the transaction of its producer in one write of __transaction_state,
// when this broker is the transaction coordinator of id: every partition
// led here whose batch is transactional, whose topic z may write, and
// whose producer has no transaction open there yet. verifyTxnPartition
// then finds each partition in the transaction without a write of its
// own; asked one partition at a time, the coordinator would write (and
// fsync) __transaction_state once per partition, one after another, on
// the connection's read goroutine. It does nothing for fewer than two
// such partitions, for a request whose batches are of more than one
// producer id or epoch, or when the coordinator is elsewhere, and its
// errors are left to verifyTxnPartition, which asks again.
func (b *Broker) addProducePartitions(ctx context.Context, id string, req *kmsg.ProduceRequest, z authz) {
	pid, epoch := int64(-1), int16(-1)
	var tps []txn.TopicPartition
	for i := range req.Topics {
		rt := &req.Topics[i]
		if !z.topic(opWrite, rt.Topic) {
			continue
		}
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			batch, _, err := record.Split(rp.Records)
			if err != nil || !batch.Transactional() || batch.ProducerID() < 0 {
				continue
			}
			if pid >= 0 && (batch.ProducerID() != pid || batch.ProducerEpoch() != epoch) {
				return
			}
			pid, epoch = batch.ProducerID(), batch.ProducerEpoch()
			p, err := b.replicas.Leader(storage.TopicPartition{Topic: rt.Topic, Partition: rp.Partition})
			if err != nil {
				continue
			}
			if _, e, open := p.OngoingTxn(pid); open && e == epoch {
				continue
			}
			tps = append(tps, txn.TopicPartition{Topic: rt.Topic, Partition: rp.Partition})
		}
	}
	if len(tps) < 2 {
		return
	}
	_ = retryConcurrent(ctx, true, func() error {
		cctx, cancel := context.WithTimeout(ctx, txnVerifyTimeout)
		defer cancel()
		return b.txns.AddPartitions(cctx, id, pid, epoch, tps)
	})
}

// verifyOrAdd asks the transaction coordinator of id whether tp is in the
// ongoing transaction of pid at epoch (add false) or adds it (add true),
// and maps the answer to the produce's error.
func (b *Broker) verifyOrAdd(ctx context.Context, id string, pid int64, epoch int16, tp txn.TopicPartition, add bool) error {
	var err error
	if add {
		cctx, cancel := context.WithTimeout(ctx, txnVerifyTimeout)
		err = b.txns.AddPartitions(cctx, id, pid, epoch, []txn.TopicPartition{tp})
		cancel()
		if err == nil {
			return nil
		}
		if errors.Is(err, txn.ErrConcurrentTransactions) {
			return err
		}
		if !errors.Is(err, txn.ErrNotCoordinator) {
			return verifyResult(err, false)
		}
	} else {
		var in map[txn.TopicPartition]bool
		in, err = b.txns.VerifyPartitions(id, pid, epoch, []txn.TopicPartition{tp})
		if !errors.Is(err, txn.ErrNotCoordinator) {
			return verifyResult(err, in[tp])
		}
	}
	return b.verifyRemote(ctx, id, pid, epoch, tp, add)
}

func verifyResult(err error, in bool) error {
	switch {
	case errors.Is(err, txn.ErrProducerFenced):
		return txn.ErrInvalidProducerEpoch
	case errors.Is(err, txn.ErrInvalidProducerIDMapping):
		return err
	case err != nil:
		return fmt.Errorf("%w: %w", errVerifyUnavailable, err)
	case !in:
		return errNotInTxn
	}
	return nil
}

// verifyRemote asks the coordinator of id on another broker.
func (b *Broker) verifyRemote(ctx context.Context, id string, pid int64, epoch int16, tp txn.TopicPartition, add bool) error {
	img := b.cluster.Image()
	part := txn.Partition(id, b.cfg.TransactionStateLogNumParts)
	st, ok := img.Partition(txnStateTopic, part)
	if !ok || st.Leader < 0 || st.Leader == b.cfg.NodeID {
		return fmt.Errorf("%w: no coordinator for %q", errVerifyUnavailable, id)
	}
	br, err := b.brokers.Broker(st.Leader)
	if err != nil {
		return fmt.Errorf("%w: %w", errVerifyUnavailable, err)
	}
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version = 4
	if add {
		req.Version = 5
	}
	tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
	tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, tx.VerifyOnly = id, pid, epoch, !add
	rt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
	rt.Topic, rt.Partitions = tp.Topic, []int32{tp.Partition}
	tx.Topics = append(tx.Topics, rt)
	req.Transactions = append(req.Transactions, tx)
	ctx, cancel := context.WithTimeout(ctx, txnVerifyTimeout)
	defer cancel()
	resp, err := req.RequestWith(ctx, br)
	if err != nil {
		return fmt.Errorf("%w: %w", errVerifyUnavailable, err)
	}
	if resp.ErrorCode != 0 {
		return fmt.Errorf("%w: %w", errVerifyUnavailable, kerr.ErrorForCode(resp.ErrorCode))
	}
	for _, rtx := range resp.Transactions {
		for _, t := range rtx.Topics {
			for _, p := range t.Partitions {
				if t.Topic != tp.Topic || p.Partition != tp.Partition {
					continue
				}
				switch code := kerr.ErrorForCode(p.ErrorCode); code {
				case nil:
					return nil
				case kerr.InvalidTxnState, kerr.TransactionAbortable:
					return errNotInTxn
				case kerr.ProducerFenced, kerr.InvalidProducerEpoch:
					return txn.ErrInvalidProducerEpoch
				case kerr.InvalidProducerIDMapping:
					return txn.ErrInvalidProducerIDMapping
				case kerr.ConcurrentTransactions:
					if add {
						return fmt.Errorf("%w: coordinator %d", txn.ErrConcurrentTransactions, st.Leader)
					}
					return fmt.Errorf("%w: %w", errVerifyUnavailable, code)
				default:
					return fmt.Errorf("%w: %w", errVerifyUnavailable, code)
				}
			}
		}
	}
	return fmt.Errorf("%w: response lacks %s", errVerifyUnavailable, tp)
}
