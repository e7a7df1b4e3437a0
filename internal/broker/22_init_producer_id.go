package broker

// InitProducerId: v0-5
//
// * v2: flexible versions.
// * v3: ProducerID and ProducerEpoch in the request (KIP-360): a producer
//   that already has an id asks for its epoch to be bumped, so it can go on
//   after UNKNOWN_PRODUCER_ID or OUT_OF_ORDER_SEQUENCE_NUMBER without losing
//   its id. For an idempotent producer samsa bumps the epoch of an id it
//   issued; at the largest epoch, or for an id it never issued, it hands
//   out a new id at epoch 0. An id above every block the broker knows of
//   is bumped until the broker has read the cluster's limit
//   (producer_ids.go issued: no etcd read on this path).
// * v4: PRODUCER_FENCED (KIP-588); v0-3 get INVALID_PRODUCER_EPOCH instead.
// * v5: no change to the fields (KIP-890; the transaction version comes
//   from features samsa does not advertise).
//
// With a TransactionalID (WRITE on the id, authz_apis.go) the request goes
// to the transaction coordinator (txn.Coordinator.InitProducerID), which
// must be this broker: NOT_COORDINATOR otherwise. An empty id is
// INVALID_REQUEST, a timeout outside (0, transaction.max.timeout.ms]
// INVALID_TRANSACTION_TIMEOUT, and an id with a transaction in progress is
// fenced and aborted and gets CONCURRENT_TRANSACTIONS, which the producer
// retries (Reference: Kafka TransactionCoordinator.handleInitProducerId).
// The transactional form waits for the __transaction_state write on the
// connection's write goroutine.

import (
	"context"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/server"
	"samsa/internal/txn"
)

func (b *Broker) handleInitProducerID(ctx context.Context, req *kmsg.InitProducerIDRequest) server.Reply {
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if req.TransactionalID != nil {
		if *req.TransactionalID == "" {
			resp.ErrorCode = kerr.InvalidRequest.Code
			return msg(resp)
		}
		return inOrder(func(ctx context.Context) kmsg.Response {
			return b.initTransactionalProducerID(ctx, req, resp)
		})
	}
	if req.Version >= 3 && req.ProducerID >= 0 && req.ProducerEpoch >= 0 &&
		req.ProducerEpoch < math.MaxInt16-1 && b.producerIDs.issued(req.ProducerID) {
		resp.ProducerID, resp.ProducerEpoch = req.ProducerID, req.ProducerEpoch+1
		return msg(resp)
	}
	id, err := b.producerIDs.allocate(ctx)
	if err != nil {
		b.log.Warn("allocate producer id", "err", err)
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return msg(resp)
	}
	resp.ProducerID, resp.ProducerEpoch = id, 0
	return msg(resp)
}

func (b *Broker) initTransactionalProducerID(ctx context.Context, req *kmsg.InitProducerIDRequest, resp *kmsg.InitProducerIDResponse) kmsg.Response {
	ir := txn.InitRequest{TimeoutMs: req.TransactionTimeoutMillis, ExpectedProducerID: txn.NoProducerID, ExpectedEpoch: txn.NoProducerEpoch}
	if req.Version >= 3 && req.ProducerID >= 0 {
		ir.ExpectedProducerID, ir.ExpectedEpoch = req.ProducerID, req.ProducerEpoch
	}
	pid, epoch, err := b.txns.InitProducerID(ctx, *req.TransactionalID, ir)
	if err != nil {
		resp.ErrorCode = txnCode(err, req.Version, 4)
		return resp
	}
	resp.ProducerID, resp.ProducerEpoch = pid, epoch
	return resp
}
