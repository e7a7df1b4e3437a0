package broker

// AddOffsetsToTxn: v0-4
//
// * v1: no change to the fields.
// * v2: PRODUCER_FENCED (KIP-588); v0-1 get INVALID_PRODUCER_EPOCH instead.
// * v3: flexible versions.
// * v4: no change to the fields (KIP-890 error codes).
//
// Adds the __consumer_offsets partition of the group (group.Partition) to
// the transaction, so that the producer's TxnOffsetCommit to the group
// coordinator is committed or aborted with the transaction's markers
// (Reference: KafkaApis.handleAddOffsetsToTxnRequest). WRITE on the
// transactional id and READ on the group are required. The request waits
// for the __transaction_state write on the connection's write goroutine.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/server"
	"samsa/internal/txn"
)

func (b *Broker) handleAddOffsetsToTxn(conn *server.Conn, req *kmsg.AddOffsetsToTxnRequest) server.Reply {
	return inOrder(func(ctx context.Context) kmsg.Response {
		resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
		z := b.authzFor(conn)
		switch {
		case req.TransactionalID == "":
			resp.ErrorCode = kerr.InvalidRequest.Code
			return resp
		case !z.transactionalID(opWrite, req.TransactionalID):
			resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
			return resp
		case !z.group(opRead, req.Group):
			resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
			return resp
		case req.Group == "":
			resp.ErrorCode = kerr.InvalidGroupID.Code
			return resp
		}
		if err := b.ensureOffsetsTopic(ctx); err != nil {
			resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
			return resp
		}
		tp := b.offsetsPartition(req.Group)
		err := b.txns.AddPartitions(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, []txn.TopicPartition{tp})
		resp.ErrorCode = txnCode(err, req.Version, 2)
		return resp
	})
}
