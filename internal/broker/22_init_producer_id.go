package broker

// InitProducerId: v0-4
//
// * v2: flexible versions.
// * v3: ProducerID and ProducerEpoch in the request (KIP-360): a producer
//   that already has an id asks for its epoch to be bumped, so it can go on
//   after UNKNOWN_PRODUCER_ID or OUT_OF_ORDER_SEQUENCE_NUMBER without losing
//   its id. samsa bumps the epoch of an id it issued; at the largest epoch,
//   or for an id it never issued, it hands out a new id at epoch 0.
// * v4: PRODUCER_FENCED may be returned instead of INVALID_PRODUCER_EPOCH
//   (KIP-588); only relevant to transactional ids.
//
// Idempotent producers only: a request with a TransactionalID that passes
// authorization (WRITE on the id, authz_apis.go) gets INVALID_REQUEST, as
// FindCoordinator of a transaction coordinator does. samsa has no
// transaction coordinator yet, and a non-retriable error tells the client
// so at once instead of letting it retry a coordinator that will never
// appear; an authorization error would send its operator looking for an
// ACL that is already there.

import (
	"context"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Broker) handleInitProducerID(ctx context.Context, req *kmsg.InitProducerIDRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if req.TransactionalID != nil {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp
	}
	if req.Version >= 3 && req.ProducerID >= 0 && req.ProducerEpoch >= 0 &&
		req.ProducerEpoch < math.MaxInt16-1 && b.producerIDs.issued(req.ProducerID) {
		resp.ProducerID, resp.ProducerEpoch = req.ProducerID, req.ProducerEpoch+1
		return resp
	}
	id, err := b.producerIDs.allocate(ctx)
	if err != nil {
		b.log.Warn("allocate producer id", "err", err)
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp
	}
	resp.ProducerID, resp.ProducerEpoch = id, 0
	return resp
}
