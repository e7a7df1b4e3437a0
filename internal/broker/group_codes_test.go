package broker

import (
	"context"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"samsa/internal/group"
	"samsa/internal/replica"
	"samsa/internal/storage"
	"samsa/internal/txn"
)

// TestGroupCodeHidesFailedAppends: a coordinator whose write of
// __consumer_offsets failed answers NOT_COORDINATOR or
// COORDINATOR_NOT_AVAILABLE, never the produce error underneath, which
// reached members as NOT_LEADER_FOR_PARTITION on OffsetCommit after a
// leadership change (S-22).
// Reference: Kafka GroupMetadataManager.storeOffsets error mapping.
func TestGroupCodeHidesFailedAppends(t *testing.T) {
	notCoordinator := func(err error) error { return fmt.Errorf("%w: %w", group.ErrNotCoordinator, err) }
	unavailable := func(err error) error { return fmt.Errorf("%w: %w", group.ErrCoordinatorNotAvailable, err) }
	cases := []struct {
		err  error
		want *kerr.Error
	}{
		{notCoordinator(replica.ErrNotLeader), kerr.NotCoordinator},
		{notCoordinator(storage.ErrLogDirOffline), kerr.NotCoordinator},
		{unavailable(replica.ErrNotLeader), kerr.CoordinatorNotAvailable},
		{unavailable(replica.ErrNotEnoughReplicas), kerr.CoordinatorNotAvailable},
		{unavailable(replica.ErrNotEnoughReplicasAfterAppend), kerr.CoordinatorNotAvailable},
		{unavailable(context.DeadlineExceeded), kerr.CoordinatorNotAvailable},
		{group.ErrIllegalGeneration, kerr.IllegalGeneration},
		{group.ErrFencedInstanceID, kerr.FencedInstanceID},
		{group.ErrUnstableOffsetCommit, kerr.UnstableOffsetCommit},
		{fmt.Errorf("%w: %w", group.ErrInvalidProducerEpoch, txn.ErrInvalidProducerEpoch), kerr.InvalidProducerEpoch},
		{nil, nil},
	}
	for _, c := range cases {
		if got := groupCode(c.err); got != errorCode(c.want) {
			t.Errorf("groupCode(%v) = %v, want %v", c.err, kerr.ErrorForCode(got), c.want)
		}
	}
}
