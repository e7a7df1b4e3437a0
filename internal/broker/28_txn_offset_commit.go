package broker

// TxnOffsetCommit: v0-5
//
// Commits a group's offsets as part of a producer's transaction: the
// coordinator writes them to the group's __consumer_offsets partition as a
// transactional batch of the producer and keeps them pending, invisible to
// OffsetFetch, until the transaction's COMMIT marker reaches that
// partition (onOffsetsMarker); an ABORT marker drops them. Answered once
// the batch is committed (on the write goroutine).
//
// * v1: same as v0.
// * v2: LeaderEpoch per partition (KIP-320), stored and returned by
//   OffsetFetch.
// * v3: MemberID, InstanceID and Generation (KIP-447), checked as Kafka's
//   classic group checks a transactional commit (ILLEGAL_GENERATION,
//   UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID); flexible versions.
// * v4: TRANSACTION_ABORTABLE may be answered (KIP-890); never here (see
//   below).
// * v5: transaction version 2 (KIP-890 part 2): the client sends no
//   AddOffsetsToTxn, so the group's __consumer_offsets partition is added
//   to the producer's transaction here, with the transaction coordinator,
//   before the offsets are written (addOffsetsPartition). A coordinator
//   that cannot answer gives COORDINATOR_NOT_AVAILABLE (retried), a
//   fenced epoch INVALID_PRODUCER_EPOCH, an unknown producer
//   INVALID_PRODUCER_ID_MAPPING, on every partition.
//
// v0-4 with transaction.partition.verification.enable (KIP-890 part 1):
// the transaction coordinator is first asked whether the group's partition
// is in the producer's ongoing transaction (verifyOffsetsPartition); one
// that is not (no AddOffsetsToTxn, or a commit arriving after its
// transaction ended) gets INVALID_TXN_STATE, TRANSACTION_ABORTABLE from v4,
// and nothing is written (Reference: Kafka
// AddPartitionsToTxnManager, txnOffsetCommitRequestVersionToTransactionSupportedOperation).
//
// Every version takes a verification guard from the group's partition
// before the coordinator is asked (txnOffsetsGuard), and the append
// checks it, as a produce's does: a marker of the producer written in
// between (its transaction aborted while the commit was verified or
// queued, at the same epoch under transaction version 1) refuses the
// append with COORDINATOR_NOT_AVAILABLE, whose retry is verified again
// and refused. Without the guard those offsets would land after the
// marker, pending, and the producer's next COMMIT there would commit
// them: the offsets of an aborted transaction, past input whose output
// was aborted (Reference: Kafka VerificationGuard). A
// request without a producer id (-1) gets INVALID_PRODUCER_ID_MAPPING and
// one without an epoch INVALID_PRODUCER_EPOCH, on every partition.
//
// Reference: KafkaApis.handleTxnOffsetCommitRequest.

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/group"
	"samsa/internal/server"
	"samsa/internal/storage"
	"samsa/internal/txn"
)

func (b *Broker) handleTxnOffsetCommit(req *kmsg.TxnOffsetCommitRequest) server.Reply {
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	gr := group.TxnOffsetCommitRequest{
		Group: req.Group, ProducerID: req.ProducerID, ProducerEpoch: req.ProducerEpoch, Generation: -1,
	}
	if req.Version >= 3 {
		gr.MemberID, gr.InstanceID, gr.Generation = req.MemberID, req.InstanceID, req.Generation
	}
	// NB: no producer id or epoch would write a transactional batch that
	// no marker can end (and that the load would read as a plain commit).
	// Kafka's KIP-890 verification refuses such a producer as not mapped
	// to the transactional id; samsa refuses it here.
	switch {
	case req.ProducerID < 0:
		resp.Topics = txnOffsetCommitErrors(req.Topics, kerr.InvalidProducerIDMapping.Code)
		return server.Reply{Msg: resp}
	case req.ProducerEpoch < 0:
		resp.Topics = txnOffsetCommitErrors(req.Topics, kerr.InvalidProducerEpoch.Code)
		return server.Reply{Msg: resp}
	}
	// Partitions the metadata does not know are answered here, as Kafka
	// does before calling its coordinator.
	img := b.cluster.Image()
	var unknown []kmsg.TxnOffsetCommitResponseTopic
	for _, t := range req.Topics {
		meta := img.Topics[t.Topic]
		ct := group.OffsetCommitTopic{Topic: t.Topic}
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			if meta == nil || p.Partition < 0 || int(p.Partition) >= len(meta.Replicas) {
				rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, kerr.UnknownTopicOrPartition.Code
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			epoch := p.LeaderEpoch
			if req.Version < 2 {
				epoch = -1
			}
			ct.Partitions = append(ct.Partitions, group.OffsetCommitPartition{
				Partition: p.Partition, Offset: p.Offset, LeaderEpoch: epoch, Metadata: p.Metadata,
			})
		}
		if len(rt.Partitions) > 0 {
			unknown = append(unknown, rt)
		}
		if len(ct.Partitions) > 0 {
			gr.Topics = append(gr.Topics, ct)
		}
	}
	resp.Topics = unknown
	if len(gr.Topics) == 0 {
		return server.Reply{Msg: resp}
	}
	return server.Reply{Wait: func(ctx context.Context) server.Reply {
		var res group.OffsetCommitResult
		var err error
		gr.Guard = b.txnOffsetsGuard(req)
		switch {
		case req.Version >= 5:
			err = b.addOffsetsPartition(ctx, req)
		case b.cfg.TransactionPartitionVerificationEnable:
			err = b.verifyOffsetsPartition(ctx, req)
		}
		if err == nil {
			if h := txnOffsetsVerifiedHook.Load(); h != nil {
				(*h)(req.Group)
			}
			res, err = b.groups.TxnOffsetCommit(ctx, gr)
		}
		for i, t := range gr.Topics {
			rt := kmsg.NewTxnOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for j, p := range t.Partitions {
				rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
				rp.Partition = p.Partition
				perr := err
				if perr == nil && i < len(res.Topics) && j < len(res.Topics[i].Partitions) {
					perr = res.Topics[i].Partitions[j].Err
				}
				rp.ErrorCode = groupCode(perr)
				// Clients before 2.0 (v0-1) fail on COORDINATOR_LOAD_IN_PROGRESS
				// here (KAFKA-7296); Kafka answers them COORDINATOR_NOT_AVAILABLE.
				if req.Version < 2 && rp.ErrorCode == kerr.CoordinatorLoadInProgress.Code {
					rp.ErrorCode = kerr.CoordinatorNotAvailable.Code
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return server.Reply{Msg: resp}
	}}
}

// txnOffsetsVerifiedHook, set by tests only (export_test.go), is called
// by every TxnOffsetCommit between its verification and its append, with
// the request's group.
var txnOffsetsVerifiedHook atomic.Pointer[func(group string)]

// txnOffsetsGuard returns the verification guard of the producer of req
// in its group's __consumer_offsets partition, or nil when this broker
// does not lead that partition (the coordinator then answers
// NOT_COORDINATOR).
func (b *Broker) txnOffsetsGuard(req *kmsg.TxnOffsetCommitRequest) any {
	tp := b.offsetsPartition(req.Group)
	p, err := b.replicas.Leader(storage.TopicPartition{Topic: tp.Topic, Partition: tp.Partition})
	if err != nil {
		return nil
	}
	g, _ := p.BeginVerification(req.ProducerID, req.ProducerEpoch)
	return g
}

// verifyOffsetsPartition checks with the transaction coordinator that the
// __consumer_offsets partition of req's group is in the producer's ongoing
// transaction (TxnOffsetCommit v0-4, KIP-890 part 1).
func (b *Broker) verifyOffsetsPartition(ctx context.Context, req *kmsg.TxnOffsetCommitRequest) error {
	err := b.verifyOrAdd(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, b.offsetsPartition(req.Group), false)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, errNotInTxn):
		if req.Version >= 4 {
			return errTxnAbortable
		}
		return err
	case errors.Is(err, txn.ErrInvalidProducerEpoch), errors.Is(err, txn.ErrInvalidProducerIDMapping):
		return err
	}
	return fmt.Errorf("%w: %w", group.ErrCoordinatorNotAvailable, err)
}

// offsetsPartition returns the __consumer_offsets partition of a group,
// mapped with the configured partition count as the group coordinator and
// FindCoordinator map it.
func (b *Broker) offsetsPartition(groupID string) txn.TopicPartition {
	return txn.TopicPartition{Topic: offsetsTopic, Partition: group.Partition(groupID, b.cfg.OffsetsTopicNumPartitions)}
}

// addOffsetsPartition adds the __consumer_offsets partition of req's group
// to the producer's transaction, as AddOffsetsToTxn would have (TxnOffsetCommit
// v5, KIP-890 part 2). The transaction coordinator may be another broker.
func (b *Broker) addOffsetsPartition(ctx context.Context, req *kmsg.TxnOffsetCommitRequest) error {
	err := b.verifyOrAdd(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, b.offsetsPartition(req.Group), true)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, txn.ErrInvalidProducerEpoch), errors.Is(err, txn.ErrInvalidProducerIDMapping):
		return err
	}
	return fmt.Errorf("%w: %w", group.ErrCoordinatorNotAvailable, err)
}
