package broker

// onOffsetsMarker tells the group coordinator that producer pid's
// transaction has ended in __consumer_offsets partition: its COMMIT
// (commit true) or ABORT marker is durable there, at log offset marker. The groups of that
// partition make the producer's pending transactional offsets committed,
// or drop them. The marker writer calls it, on the leader of the
// partition, after the marker is committed; a marker for a producer
// without pending offsets changes nothing, so a call repeated for the same
// marker is harmless.
//
// It blocks while one of the producer's groups writes to the log (at most
// offsets.commit.timeout.ms), and while the partition loads: the load may
// have read the log before the marker, and giving up would leave the
// offsets pending until the next load. Only the broker's shutdown ends the
// wait. A partition not loaded here is ignored: the coordinator that loads
// it replays the marker.
//
// Reference: Kafka GroupCoordinator.onTransactionCompleted
// (GroupMetadataManager.scheduleHandleTxnCompletion).
func (b *Broker) onOffsetsMarker(partition int32, pid int64, commit bool, marker int64) {
	n, err := b.groups.CompleteTxn(b.ctx, partition, pid, commit, marker)
	if err != nil {
		b.log.Warn("complete transactional offsets", "partition", partition, "producer", pid, "commit", commit, "err", err)
		return
	}
	if n > 0 {
		b.log.Debug("transactional offsets completed", "partition", partition, "producer", pid, "commit", commit, "groups", n)
	}
}
