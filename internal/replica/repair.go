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
// back). A leader cannot repair itself: it proposes the ISR without
// itself, so that the controller elects another in-sync replica, and
// once it follows, the fetcher truncates its log at the bad batch and
// fetches it again. Meanwhile its reads of that range keep failing,
// which the broker answers with KAFKA_STORAGE_ERROR (see docs/storage.md,
// "Checks on read").
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
	if leader {
		for {
			at := p.corruptAt.Load()
			if (at != 0 && at <= ce.Offset+1) || p.corruptAt.CompareAndSwap(at, ce.Offset+1) {
				break
			}
		}
		p.resign()
		return
	}
	if following < 0 {
		return
	}
	if _, err := p.repairFrom(ce.Offset); err != nil {
		p.m.log.Warn("replica: repair of a corrupt batch failed", "topic", p.TP.Topic, "partition", p.TP.Partition, "err", err)
	}
}

// repairFrom removes offset and everything above it from a follower's log
// and rebuilds the producer state; the fetcher then fetches them again.
// It does nothing, and reports false, unless the partition follows.
func (p *Partition) repairFrom(offset int64) (bool, error) {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	p.roleMu.Lock()
	follower := p.role.leader == nil && p.role.following >= 0
	p.roleMu.Unlock()
	offset = max(offset, p.lg().LogStartOffset())
	from := p.lg().LogEndOffset()
	if !follower {
		return false, nil
	}
	if offset >= from {
		return true, nil
	}
	p.m.log.Warn("replica: truncating follower log at a corrupt batch to fetch it again from the leader",
		"topic", p.TP.Topic, "partition", p.TP.Partition, "from", offset, "to", from, "offsets", from-offset)
	if err := p.lg().Truncate(offset); err != nil {
		return true, err
	}
	p.m.repaired.Add(from - offset)
	if err := txn.DeleteSnapshotsAbove(p.m.fs, p.lg().Dir(), offset); err != nil {
		return true, err
	}
	return true, p.loadProducersLocked(p.m, p.m.now().UnixMilli())
}

// resign proposes the leader's ISR without itself (LeaderState.Resign).
func (p *Partition) resign() {
	p.roleMu.Lock()
	ls := p.role.leader
	if ls == nil {
		p.roleMu.Unlock()
		return
	}
	ch := ls.Resign()
	epoch := p.LeaderEpoch()
	var why isrWhy
	if ch != nil {
		why = newISRWhy(isrResignCorrupt, ls, ch)
	}
	p.roleMu.Unlock()
	if ch != nil {
		p.m.proposeISR(p, epoch, ch, why)
	}
}

// repairPending truncates a follower's log at the corrupt batch it found
// while it led, once.
func (p *Partition) repairPending() error {
	at := p.corruptAt.Load()
	if at == 0 {
		return nil
	}
	done, err := p.repairFrom(at - 1)
	if err != nil || !done {
		return err
	}
	p.corruptAt.CompareAndSwap(at, 0)
	return nil
}
