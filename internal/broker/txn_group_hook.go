package broker

import (
	"context"
	"time"
)

// onOffsetsMarkerTimeout bounds how long onOffsetsMarker waits for the
// partition's groups: a group's lock is held across its own writes, which
// offsets.commit.timeout.ms bounds, and a partition still loading is
// waited for.
const onOffsetsMarkerTimeout = time.Minute

// onOffsetsMarker tells the group coordinator that producer pid's
// transaction has ended in __consumer_offsets partition: its COMMIT
// (commit true) or ABORT marker is durable there. The groups of that
// partition make the producer's pending transactional offsets committed,
// or drop them. The marker writer calls it, on the leader of the
// partition, after the marker is committed; a marker for a producer
// without pending offsets changes nothing, so a call repeated for the same
// marker is harmless.
//
// It blocks while one of the partition's groups writes to the log, and
// while the partition loads (the load may have ended before the marker);
// a partition not led here is ignored: the coordinator that loads it
// replays the marker.
//
// Reference: Kafka GroupCoordinator.onTransactionCompleted
// (GroupMetadataManager.scheduleHandleTxnCompletion).
func (b *Broker) onOffsetsMarker(partition int32, pid int64, commit bool) {
	ctx, cancel := context.WithTimeout(b.ctx, onOffsetsMarkerTimeout)
	defer cancel()
	n, err := b.groups.CompleteTxn(ctx, partition, pid, commit)
	if err != nil {
		b.log.Warn("complete transactional offsets", "partition", partition, "producer", pid, "commit", commit, "err", err)
		return
	}
	if n > 0 {
		b.log.Debug("transactional offsets completed", "partition", partition, "producer", pid, "commit", commit, "groups", n)
	}
}
