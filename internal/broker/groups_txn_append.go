package broker

import (
	"errors"

	"samsa/internal/record"
	"samsa/internal/replica"
)

// coordinatorAppender is the replica's append of a batch built by a
// coordinator (Partition.AppendFromCoordinator).
type coordinatorAppender interface {
	AppendFromCoordinator(b record.Batch, nowMs int64) (replica.AppendResult, error)
}

var errNoCoordinatorAppend = errors.New("broker: the replica cannot append transactional coordinator batches")

// appendFromCoordinator appends a transactional batch of the coordinator
// to the partition.
func (l offsetsLog) appendFromCoordinator(b record.Batch, nowMs int64) (replica.AppendResult, error) {
	a, ok := any(l.p).(coordinatorAppender)
	if !ok {
		return replica.AppendResult{}, errNoCoordinatorAppend
	}
	return a.AppendFromCoordinator(b, nowMs)
}
