package broker

// AddPartitionsToTxn: v0-5
//
// * v1: no change to the fields.
// * v2: PRODUCER_FENCED (KIP-588); v0-1 get INVALID_PRODUCER_EPOCH instead.
// * v3: flexible versions.
// * v4: many transactions per request, each with VerifyOnly (KIP-890 part
//   1); sent by brokers only: CLUSTER_ACTION on the cluster is required,
//   as in Kafka, and the error of a whole request is the top-level
//   ErrorCode. A VerifyOnly transaction adds nothing: each partition gets
//   no error if it is in the Ongoing transaction of that producer id and
//   epoch, else INVALID_TXN_STATE.
// * v5: a partition not in the transaction gets TRANSACTION_ABORTABLE
//   instead of INVALID_TXN_STATE (KIP-890).
//
// v0-3 carry one transaction and need WRITE on its transactional id
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED for every partition otherwise) and
// WRITE on each topic. When any partition fails a check (unauthorized,
// unknown topic or partition) nothing is added and the others get
// OPERATION_NOT_ATTEMPTED (Reference: KafkaApis.handleAddPartitionsToTxnRequest).
// The coordinator's answer (txn.Coordinator.AddPartitions) applies to
// every partition. The request waits for the __transaction_state write on
// the connection's write goroutine.

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/server"
	"samsa/internal/txn"
)

// txnPartitionsRequest is one transaction of an AddPartitionsToTxn request.
type txnPartitionsRequest struct {
	id         string
	pid        int64
	epoch      int16
	verifyOnly bool
	parts      []txn.TopicPartition // in request order, duplicates kept
}

func (b *Broker) handleAddPartitionsToTxn(conn *server.Conn, req *kmsg.AddPartitionsToTxnRequest) server.Reply {
	return inOrder(func(ctx context.Context) kmsg.Response {
		resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
		z := b.authzFor(conn)
		if req.Version < 4 {
			tr := txnPartitionsRequest{id: req.TransactionalID, pid: req.ProducerID, epoch: req.ProducerEpoch}
			for _, t := range req.Topics {
				for _, p := range t.Partitions {
					tr.parts = append(tr.parts, txn.TopicPartition{Topic: t.Topic, Partition: p})
				}
			}
			codes := b.addPartitionsToTxn(ctx, z, req.Version, tr)
			for _, t := range req.Topics {
				rt := kmsg.NewAddPartitionsToTxnResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
					rp.Partition, rp.ErrorCode = p, codes[txn.TopicPartition{Topic: t.Topic, Partition: p}]
					rt.Partitions = append(rt.Partitions, rp)
				}
				resp.Topics = append(resp.Topics, rt)
			}
			return resp
		}
		if !z.cluster(opClusterAction) {
			resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
			return resp
		}
		for _, rtx := range req.Transactions {
			tr := txnPartitionsRequest{id: rtx.TransactionalID, pid: rtx.ProducerID, epoch: rtx.ProducerEpoch, verifyOnly: rtx.VerifyOnly}
			for _, t := range rtx.Topics {
				for _, p := range t.Partitions {
					tr.parts = append(tr.parts, txn.TopicPartition{Topic: t.Topic, Partition: p})
				}
			}
			codes := b.addPartitionsToTxn(ctx, z, req.Version, tr)
			out := kmsg.NewAddPartitionsToTxnResponseTransaction()
			out.TransactionalID = rtx.TransactionalID
			for _, t := range rtx.Topics {
				rt := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
					rp.Partition, rp.ErrorCode = p, codes[txn.TopicPartition{Topic: t.Topic, Partition: p}]
					rt.Partitions = append(rt.Partitions, rp)
				}
				out.Topics = append(out.Topics, rt)
			}
			resp.Transactions = append(resp.Transactions, out)
		}
		return resp
	})
}

// addPartitionsToTxn checks and applies one transaction's partitions and
// returns the error code of each.
func (b *Broker) addPartitionsToTxn(ctx context.Context, z authz, version int16, tr txnPartitionsRequest) map[txn.TopicPartition]int16 {
	codes := make(map[txn.TopicPartition]int16, len(tr.parts))
	all := func(code int16) map[txn.TopicPartition]int16 {
		for _, p := range tr.parts {
			codes[p] = code
		}
		return codes
	}
	if tr.id == "" {
		return all(kerr.InvalidRequest.Code)
	}
	if version < 4 && !z.transactionalID(opWrite, tr.id) {
		return all(kerr.TransactionalIDAuthorizationFailed.Code)
	}
	if tr.verifyOnly {
		in, err := b.txns.VerifyPartitions(tr.id, tr.pid, tr.epoch, tr.parts)
		if err != nil {
			return all(txnCode(err, version, 2))
		}
		notIn := kerr.InvalidTxnState.Code
		if version >= 5 {
			notIn = kerr.TransactionAbortable.Code
		}
		for _, p := range tr.parts {
			if !in[p] {
				codes[p] = notIn
			}
		}
		return codes
	}
	img := b.cluster.Image()
	failed := false
	var valid []txn.TopicPartition
	for _, p := range tr.parts {
		t := img.Topics[p.Topic]
		switch {
		case version < 4 && !z.topic(opWrite, p.Topic):
			codes[p] = kerr.TopicAuthorizationFailed.Code
		case t == nil || p.Partition < 0 || int(p.Partition) >= len(t.Replicas):
			codes[p] = kerr.UnknownTopicOrPartition.Code
		default:
			valid = append(valid, p)
			continue
		}
		failed = true
	}
	if failed {
		for _, p := range valid {
			codes[p] = kerr.OperationNotAttempted.Code
		}
		return codes
	}
	slices.SortFunc(valid, func(a, b txn.TopicPartition) int {
		if a.Topic != b.Topic {
			if a.Topic < b.Topic {
				return -1
			}
			return 1
		}
		return int(a.Partition - b.Partition)
	})
	valid = slices.Compact(valid)
	return all(txnCode(b.txns.AddPartitions(ctx, tr.id, tr.pid, tr.epoch, valid), version, 2))
}
