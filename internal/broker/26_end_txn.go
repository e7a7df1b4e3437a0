package broker

// EndTxn: v0-5
//
// * v1: no change to the fields.
// * v2: PRODUCER_FENCED (KIP-588); v0-1 get INVALID_PRODUCER_EPOCH instead.
// * v3: flexible versions.
// * v4: no change to the fields (KIP-890 error codes).
// * v5: transaction version 2 (KIP-890 part 2): the coordinator bumps the
//   epoch when the transaction ends and answers with the producer id and
//   epoch to go on with; a retried end is recognised by the epoch before
//   the bump. samsa does not advertise the transaction.version feature,
//   so clients that follow KIP-890 keep to v4.
//
// WRITE on the transactional id is required. The answer comes once
// PrepareCommit or PrepareAbort is durable in __transaction_state; the
// markers are written in the background, then CompleteCommit or
// CompleteAbort (Reference: Kafka TransactionCoordinator.handleEndTransaction).
// A retry of an end that completed is answered with no error; one while
// the markers are being written gets CONCURRENT_TRANSACTIONS. The request
// waits on the connection's write goroutine.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/server"
	"samsa/internal/txn"
)

func (b *Broker) handleEndTxn(conn *server.Conn, req *kmsg.EndTxnRequest) server.Reply {
	return inOrder(func(ctx context.Context) kmsg.Response {
		resp := req.ResponseKind().(*kmsg.EndTxnResponse)
		resp.ProducerID, resp.ProducerEpoch = -1, -1
		switch {
		case req.TransactionalID == "":
			resp.ErrorCode = kerr.InvalidRequest.Code
			return resp
		case !b.authzFor(conn).transactionalID(opWrite, req.TransactionalID):
			resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
			return resp
		}
		pid, epoch, err := b.txns.EndTxn(ctx, req.TransactionalID, txn.EndRequest{
			ProducerID: req.ProducerID,
			Epoch:      req.ProducerEpoch,
			Commit:     req.Commit,
			V2:         req.Version >= 5,
		})
		if err != nil {
			resp.ErrorCode = txnCode(err, req.Version, 2)
			return resp
		}
		if req.Version >= 5 {
			resp.ProducerID, resp.ProducerEpoch = pid, epoch
		}
		return resp
	})
}
