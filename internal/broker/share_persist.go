package broker

import (
	"context"

	"samsa/internal/share"
)

// sharePersister stores share-partition state for the partition leaders
// (Kafka's Persister): read before a leader serves a share-partition,
// write before it answers an acknowledgement or release (an acquisition
// rides on the next write; share_partitions.go). Each state carries its state epoch:
// read returns it (also when no state is found), write must carry the
// one read, and a write from an older state epoch (the start offset was
// altered or the state deleted since) fails with share.ErrFencedStateEpoch.
type sharePersister interface {
	read(ctx context.Context, key sharePartKey, leaderEpoch int32) (st share.State, stateEpoch int32, found bool, err error)
	write(ctx context.Context, key sharePartKey, leaderEpoch, stateEpoch int32, st share.State) error
}
