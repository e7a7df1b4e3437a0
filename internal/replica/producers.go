package replica

import (
	"fmt"
	"sync"
	"sync/atomic"

	"samsa/internal/record"
	"samsa/internal/storage"
	"samsa/internal/txn"
)

// producerSnapshotsKept is how many producer state snapshots a partition
// keeps; the older one survives a crash that loses the newer's offsets.
const producerSnapshotsKept = 2

// AppendResult is what Append did with a batch.
type AppendResult struct {
	storage.AppendResult
	// Duplicate means the batch was a retry of one already in the log: it
	// was not written again and the offsets are the original's.
	Duplicate bool
	// LeaderEpoch is the leader epoch the batch was appended in; pass it
	// to WaitCommitted.
	LeaderEpoch int32
}

// Append writes a validated batch from a producer to the leader's log. A
// batch from an idempotent producer (producer id >= 0) is checked against
// the partition's producer state first: a retry of a batch still in the
// dedupe window is answered with the original offsets and not written
// again; a sequence gap, a stale epoch or an unknown producer is refused
// with the txn sentinel errors and nothing is written. Reference: KIP-98.
// A transactional batch opens its producer's transaction in the partition,
// which holds the last stable offset until AppendMarker ends it; a plain
// batch of a producer whose transaction is open is refused
// (txn.ErrInvalidTxnState). A control batch is refused (ErrControlBatch):
// only AppendMarker writes markers.
//
// Leadership is checked under the append lock, which a change of role also
// takes, so a broker that lost leadership never appends a client's batch
// (ErrNotLeader).
func (p *Partition) Append(b record.Batch, logAppendTime bool, nowMs int64) (AppendResult, error) {
	return p.AppendVerified(b, VerificationGuard{}, logAppendTime, nowMs)
}

// AppendVerified is Append for a batch whose transaction was checked with
// BeginVerification: after the duplicate check, the batch is refused with
// ErrVerificationGuard when a marker of its producer was written since g
// was taken. A retry of a batch already in the log is still answered with
// its offsets.
func (p *Partition) AppendVerified(b record.Batch, g VerificationGuard, logAppendTime bool, nowMs int64) (AppendResult, error) {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	if !p.IsLeader() {
		return AppendResult{}, ErrNotLeader
	}
	epoch := p.LeaderEpoch()
	if b.Control() {
		return AppendResult{}, ErrControlBatch
	}
	if b.ProducerID() < 0 {
		res, err := p.lg().Append(b, epoch, logAppendTime, nowMs)
		return AppendResult{AppendResult: res, LeaderEpoch: epoch}, err
	}
	tb := txn.BatchOf(b)
	dup, err := p.producers.Check(tb)
	if err != nil {
		return AppendResult{}, err
	}
	if dup != nil {
		res := storage.AppendResult{
			BaseOffset:     dup.FirstOffset,
			LastOffset:     dup.LastOffset,
			LogAppendTime:  -1,
			LogStartOffset: p.lg().LogStartOffset(),
		}
		if logAppendTime {
			res.LogAppendTime = dup.Timestamp
		}
		return AppendResult{AppendResult: res, Duplicate: true, LeaderEpoch: epoch}, nil
	}
	if err := p.checkGuardLocked(b, g); err != nil {
		return AppendResult{}, err
	}
	res, err := p.lg().Append(b, epoch, logAppendTime, nowMs)
	if err != nil {
		return AppendResult{}, err
	}
	p.producers.Update(tb, res.BaseOffset, res.LastOffset, b.MaxTimestamp(), nowMs)
	p.producersChangedLocked()
	return AppendResult{AppendResult: res, LeaderEpoch: epoch}, nil
}

// Producers returns the partition's active idempotent producers.
func (p *Partition) Producers() []txn.Producer {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	return p.producers.Producers()
}

// loadProducersLocked rebuilds the producer state: the newest snapshot at or
// below the log end offset, then every batch after it replayed from the log.
// Snapshots above the log end (their batches were lost in a crash) are
// deleted. The caller holds p.appendMu, or p is not published yet.
func (p *Partition) loadProducersLocked(m *Manager, nowMs int64) error {
	leo := p.lg().LogEndOffset()
	st, from, ok, err := txn.LoadSnapshot(m.fs, p.lg().Dir(), leo)
	if err != nil {
		return fmt.Errorf("replica: load producer snapshot of %s-%d: %w", p.TP.Topic, p.TP.Partition, err)
	}
	if !ok {
		st, from = txn.NewState(), p.lg().LogStartOffset()
	}
	from = max(from, p.lg().LogStartOffset())
	p.producers = st
	dirty := p.producersDirty
	defer func() { p.producersDirty = dirty }()
	// The replay adds the aborted transactions of the markers at or after
	// from to the .txnindex; drop what it held there first, so an entry
	// whose write a crash lost, or that was written twice, comes out
	// exactly once.
	if err := p.lg().TruncateAbortedTxnsFrom(from); err != nil {
		return fmt.Errorf("replica: load producer state of %s-%d: %w", p.TP.Topic, p.TP.Partition, err)
	}
	p.producersChangedLocked()
	for from < leo {
		res, err := p.lg().Read(from, 8<<20, leo, true)
		if err != nil {
			return fmt.Errorf("replica: replay producer state of %s-%d at %d: %w", p.TP.Topic, p.TP.Partition, from, err)
		}
		buf, err := res.AppendTo(nil)
		if err != nil {
			return err
		}
		if len(buf) == 0 {
			break
		}
		for len(buf) > 0 {
			b, rest, err := record.Split(buf)
			if err != nil {
				return fmt.Errorf("replica: replay producer state of %s-%d: %w", p.TP.Topic, p.TP.Partition, err)
			}
			buf = rest
			if b.LastOffset() >= from {
				if err := p.replayBatchLocked(b, nowMs); err != nil {
					return err
				}
			}
			from = b.LastOffset() + 1
		}
	}
	return nil
}

// maintainProducers writes the producer state to <LEO>.snapshot if it
// changed since the last snapshot, expiring idle producers first. A
// partition whose log dir is offline is left alone: nothing can be written
// there, and the next start replays its log instead.
func (p *Partition) maintainProducers(m *Manager, nowMs, expirationMs int64) error {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	if p.lg().Offline() {
		return nil
	}
	if n := p.producers.Expire(nowMs, expirationMs, p.lg().LogStartOffset()); n > 0 {
		p.producersChangedLocked()
	}
	if !p.producersDirty {
		return nil
	}
	// Markers below the snapshot are not replayed at load, so the aborted
	// transactions they recorded must be on disk before it is.
	if err := p.lg().SyncAbortedTxns(); err != nil {
		return fmt.Errorf("replica: snapshot producers of %s-%d: %w", p.TP.Topic, p.TP.Partition, err)
	}
	if err := txn.WriteSnapshot(m.fs, p.lg().Dir(), p.lg().LogEndOffset(), p.producers); err != nil {
		return fmt.Errorf("replica: snapshot producers of %s-%d: %w", p.TP.Topic, p.TP.Partition, err)
	}
	p.producersDirty = false
	return txn.PruneSnapshots(m.fs, p.lg().Dir(), producerSnapshotsKept)
}

// MaintainProducers expires idle producers (producer.id.expiration.ms, and
// those whose batches retention deleted) and snapshots every partition's
// producer state that changed. The broker calls it periodically and before
// closing the logs.
//
// NB: each snapshot is a file write and two fsyncs; one partition after
// the other, a clean shutdown of a broker with 10,000 partitions waited
// for 20,000 fsyncs in turn. Partitions are snapshotted
// snapshotWorkers at a time, on goroutines that end before it returns.
func (m *Manager) MaintainProducers(nowMs, expirationMs int64) error {
	parts := m.Partitions()
	var (
		mu       sync.Mutex
		firstErr error
		next     atomic.Int64
		wg       sync.WaitGroup
	)
	for range min(snapshotWorkers, len(parts)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(parts) {
					return
				}
				if err := parts[i].maintainProducers(m, nowMs, expirationMs); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	return firstErr
}

// snapshotWorkers bounds the producer snapshots MaintainProducers writes
// at once.
const snapshotWorkers = 8
