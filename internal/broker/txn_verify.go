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
	"samsa/internal/txn"
)

// txnVerifyTimeout bounds the AddPartitionsToTxn a produce sends to verify
// its partition with a transaction coordinator on another broker.
const txnVerifyTimeout = 5 * time.Second

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
// AddPartitionsToTxn v5 (VerifyOnly for add false). It blocks for at most
// txnVerifyTimeout. A batch that is not transactional gets the zero guard.
func (b *Broker) verifyTxnPartition(ctx context.Context, id string, p *replica.Partition, records []byte, add bool) (replica.VerificationGuard, error) {
	batch, _, err := record.Split(records)
	if err != nil || !batch.Transactional() || batch.ProducerID() < 0 {
		return replica.VerificationGuard{}, nil // appendBatch refuses what is malformed
	}
	pid, epoch := batch.ProducerID(), batch.ProducerEpoch()
	guard, ongoing := p.BeginVerification(pid, epoch)
	if ongoing {
		return guard, nil
	}
	tp := txn.TopicPartition{Topic: p.TP.Topic, Partition: p.TP.Partition}
	return guard, b.verifyOrAdd(ctx, id, pid, epoch, tp, add)
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
	br, err := b.leaders.broker(st.Leader)
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
				default:
					return fmt.Errorf("%w: %w", errVerifyUnavailable, code)
				}
			}
		}
	}
	return fmt.Errorf("%w: response lacks %s", errVerifyUnavailable, tp)
}
