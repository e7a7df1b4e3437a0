package replica

import (
	"errors"

	"samsa/internal/storage"
	"samsa/internal/txn"
)

// readFailed looks at an error of a read of the partition's log. A stored
// batch that failed its check (storage.ErrCorrupt) is logged with where it
// is; on a follower the log is then truncated to before it, so that the
// fetcher fetches the batch and everything after it again from the leader
// (Kafka has no such repair: its followers never read their own logs
// back). A leader cannot repair itself: its reads of that range keep
// failing, which the broker answers with KAFKA_STORAGE_ERROR, until an
// operator moves leadership (see docs/storage.md, "Checks on read").
func (p *Partition) readFailed(err error) {
	var ce *storage.CorruptBatchError
	if !errors.As(err, &ce) {
		return
	}
	p.roleMu.Lock()
	leader, following := p.role.leader != nil, p.role.following
	p.roleMu.Unlock()
	p.m.log.Error("replica: corrupt batch in the log",
		"topic", p.TP.Topic, "partition", p.TP.Partition, "segment", ce.Segment,
		"position", ce.Position, "offset", ce.Offset, "leader", leader, "err", ce.Reason)
	if leader || following < 0 {
		return
	}
	if err := p.repairFrom(ce.Offset); err != nil {
		p.m.log.Warn("replica: repair of a corrupt batch failed", "topic", p.TP.Topic, "partition", p.TP.Partition, "err", err)
	}
}

// repairFrom removes offset and everything above it from a follower's log
// and rebuilds the producer state; the fetcher then fetches them again.
func (p *Partition) repairFrom(offset int64) error {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	p.roleMu.Lock()
	follower := p.role.leader == nil && p.role.following >= 0
	p.roleMu.Unlock()
	offset = max(offset, p.log.LogStartOffset())
	from := p.log.LogEndOffset()
	if !follower || offset >= from {
		return nil
	}
	p.m.log.Warn("replica: truncating follower log at a corrupt batch to fetch it again from the leader",
		"topic", p.TP.Topic, "partition", p.TP.Partition, "from", offset, "to", from, "offsets", from-offset)
	if err := p.log.Truncate(offset); err != nil {
		return err
	}
	p.m.repaired.Add(from - offset)
	if err := txn.DeleteSnapshotsAbove(p.m.fs, p.log.Dir(), offset); err != nil {
		return err
	}
	return p.loadProducersLocked(p.m, p.m.now().UnixMilli())
}
