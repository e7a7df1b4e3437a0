package replica

import (
	"errors"
	"fmt"
	"math"

	"samsa/internal/record"
	"samsa/internal/storage"
	"samsa/internal/txn"
)

// ErrControlBatch refuses a control batch offered as a client's or a
// coordinator's data: only AppendMarker writes end-transaction markers.
// The broker maps it to INVALID_RECORD.
// ErrVerificationGuard refuses a transactional batch that was verified
// with the transaction coordinator (or found in its producer's open
// transaction) when an end-transaction marker of that producer was written
// between the check and the append: the transaction it was verified for is
// over, and appending it would open a transaction no coordinator knows.
var ErrVerificationGuard = fmt.Errorf("%w: the transaction ended between verification and append", txn.ErrInvalidTxnState)

var ErrControlBatch = fmt.Errorf("%w: control batch not written by the partition leader", record.ErrInvalidRecord)

// maxMarkerBytes caps the decompression of a control batch read back from
// the log; a marker record is a few bytes.
const maxMarkerBytes = 1 << 20

// noUnstable is firstUnstable's value when no transaction is open.
const noUnstable = math.MaxInt64

// AppendMarker writes one COMMIT (commit) or ABORT end-transaction marker
// ending producer pid's transaction in this partition, as the leader does
// for WriteTxnMarkers (Reference: KIP-98, Kafka
// UnifiedLog.appendAsLeader with AppendOrigin.COORDINATOR). epoch is the
// producer epoch the marker carries (with KIP-890 transaction version 2 the
// bumped one) and coordinatorEpoch the coordinator's epoch for the
// transactional id's __transaction_state partition.
//
// It fails with ErrNotLeader, with txn.ErrInvalidProducerEpoch when epoch
// is older than the producer's, with txn.ErrCoordinatorFenced when
// coordinatorEpoch is older than the last marker's for the producer, or
// with a storage error. A marker for a producer with no open transaction is
// written all the same (Kafka does). An ABORT that ends a transaction is
// added to the segment's .txnindex. The caller waits for the marker with
// WaitCommitted(ctx, res.LastOffset+1, res.LeaderEpoch). It does not block
// on IO beyond the append itself.
func (p *Partition) AppendMarker(pid int64, epoch int16, commit bool, coordinatorEpoch int32, nowMs int64) (AppendResult, error) {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	if !p.IsLeader() {
		return AppendResult{}, ErrNotLeader
	}
	m := txn.Marker{ProducerID: pid, Epoch: epoch, Commit: commit, CoordinatorEpoch: coordinatorEpoch}
	if err := p.producers.CheckMarker(m); err != nil {
		return AppendResult{}, err
	}
	typ := record.ControlAbort
	if commit {
		typ = record.ControlCommit
	}
	b, err := record.BuildEndTxnMarker(pid, epoch, nowMs, record.EndTxnMarker{Type: typ, CoordinatorEpoch: coordinatorEpoch})
	if err != nil {
		return AppendResult{}, err
	}
	leaderEpoch := p.LeaderEpoch()
	res, err := p.lg().Append(b, leaderEpoch, false, nowMs)
	if err != nil {
		return AppendResult{}, err
	}
	if err := p.applyMarkerLocked(m, res.BaseOffset, nowMs); err != nil {
		return AppendResult{}, err
	}
	return AppendResult{AppendResult: res, LeaderEpoch: leaderEpoch}, nil
}

// AppendFromCoordinator appends a batch a coordinator built on this leader,
// such as the transactional offset commits of TxnOffsetCommit in
// __consumer_offsets: producer id and epoch set, BaseSequence -1, usually
// the transactional attribute (Reference: Kafka AppendOrigin.COORDINATOR).
// Sequence numbers are not checked, but an epoch older than the producer's
// is refused (txn.ErrInvalidProducerEpoch), and a transactional batch opens
// the producer's transaction here like a client's. g is the guard taken
// before the coordinator verified the batch with the transaction
// coordinator (BeginVerification; the zero guard checks nothing): a
// marker of the producer applied since refuses the batch with
// ErrVerificationGuard, as AppendVerified does, so that offsets verified
// for a transaction that then ended never open a new one here. A control
// batch is refused with ErrControlBatch. Errors: ErrNotLeader, those
// above, storage errors. b is modified in place (offsets, leader epoch).
func (p *Partition) AppendFromCoordinator(b record.Batch, g VerificationGuard, nowMs int64) (AppendResult, error) {
	if b.Control() {
		return AppendResult{}, ErrControlBatch
	}
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	if !p.IsLeader() {
		return AppendResult{}, ErrNotLeader
	}
	leaderEpoch := p.LeaderEpoch()
	if b.ProducerID() < 0 {
		res, err := p.lg().Append(b, leaderEpoch, false, nowMs)
		return AppendResult{AppendResult: res, LeaderEpoch: leaderEpoch}, err
	}
	tb := txn.BatchOf(b)
	tb.BaseSequence = -1
	if err := p.producers.CheckCoordinator(tb); err != nil {
		return AppendResult{}, err
	}
	if err := p.checkGuardLocked(b, g); err != nil {
		return AppendResult{}, err
	}
	res, err := p.lg().Append(b, leaderEpoch, false, nowMs)
	if err != nil {
		return AppendResult{}, err
	}
	p.producers.Update(tb, res.BaseOffset, res.LastOffset, b.MaxTimestamp(), nowMs)
	p.producersChangedLocked()
	return AppendResult{AppendResult: res, LeaderEpoch: leaderEpoch}, nil
}

// applyMarkerLocked records a marker written at offset in the producer
// state and, for an ABORT that ended a transaction, in the .txnindex with
// the last stable offset the partition has afterwards (Kafka's
// ProducerStateManager.lastStableOffset: the oldest other open
// transaction's start, else the offset after the marker). The caller holds
// p.appendMu, or p is not published yet.
func (p *Partition) applyMarkerLocked(m txn.Marker, offset, nowMs int64) error {
	c, ok := p.producers.ApplyMarker(m, offset, nowMs)
	// NB: the last stable offset moves past an aborted transaction only
	// once its .txnindex entry is written (deferred): a read_committed
	// fetch, or the cleaner, that saw it moved without the entry would
	// take the aborted records for committed ones.
	defer p.producersChangedLocked()
	if !ok || !c.Aborted {
		return nil
	}
	lso := c.LastOffset + 1
	if first, open := p.producers.FirstUnstableOffset(); open {
		lso = first
	}
	t := storage.AbortedTxn{ProducerID: c.ProducerID, FirstOffset: c.FirstOffset, LastOffset: c.LastOffset, LastStableOffset: lso}
	if err := p.lg().AppendAbortedTxn(t); err != nil {
		return fmt.Errorf("replica: index aborted transaction of %s-%d: %w", p.TP.Topic, p.TP.Partition, err)
	}
	return nil
}

// replayBatchLocked applies one batch read from the log (recovery) or from
// the leader (follower append) to the producer state: data batches of
// idempotent and transactional producers, and end-transaction markers,
// whose aborted transactions go to the .txnindex. The caller holds
// p.appendMu, or p is not published yet.
func (p *Partition) replayBatchLocked(b record.Batch, nowMs int64) error {
	if b.ProducerID() < 0 {
		return nil
	}
	if !b.Control() {
		p.producers.Replay(txn.BatchOf(b), b.BaseOffset(), b.LastOffset(), b.MaxTimestamp(), nowMs)
		p.producersChangedLocked()
		return nil
	}
	mk, err := b.EndTxnMarker(maxMarkerBytes)
	switch {
	case errors.Is(err, record.ErrNotEndTxnMarker), errors.Is(err, record.ErrNotControlBatch):
		// Another kind of control record, or an empty control batch
		// (Kafka's cleaner leaves one where it removed a transaction):
		// nothing for the producer state.
		return nil
	case err != nil:
		// NB: the batch passed its CRC, so a leader wrote it this way.
		// Failing here would keep the partition from loading at all;
		// its transaction stays open instead, holding the last stable
		// offset, which is visible and safe.
		p.m.log.Error("replica: undecodable transaction marker; skipped", "topic", p.TP.Topic, "partition", p.TP.Partition,
			"offset", b.BaseOffset(), "err", err)
		return nil
	}
	return p.applyMarkerLocked(txn.MarkerOf(b, mk), b.BaseOffset(), nowMs)
}

// producersChangedLocked marks the producer state dirty for the next
// snapshot and publishes its first unstable offset. The caller holds
// p.appendMu, or p is not published yet.
func (p *Partition) producersChangedLocked() {
	p.producersDirty = true
	first, ok := p.producers.FirstUnstableOffset()
	if !ok {
		first = noUnstable
	}
	if p.firstUnstable.Swap(first) != first {
		// The last stable offset may have moved: wake fetches waiting
		// at read_committed.
		p.m.delayed.publish(p.waits[WaitLastStable])
	}
}

// LastStableOffset is the offset below which every record is committed and
// belongs to no open transaction: the smaller of the high watermark and
// the first offset of the oldest open transaction (Reference: KIP-98).
// Consumers at read_committed see only records below it. It takes no
// append lock.
func (p *Partition) LastStableOffset() int64 {
	// NB: the high watermark is read first. A transaction that opens
	// after that read starts at or above the log end then, so at or above
	// the value read; the other order could pair an old "none open" with
	// a high watermark that already covers a new transaction's records.
	hw := p.HighWatermark()
	return min(hw, p.firstUnstable.Load())
}

// AbortedTxns returns the aborted transactions that overlap the offsets
// [start, end), from the .txnindex, for Fetch at read_committed. The caller
// owns the returned slice. It does no IO.
func (p *Partition) AbortedTxns(start, end int64) []storage.AbortedTxn {
	return p.lg().CollectAbortedTxns(start, end)
}

// VerificationGuard is what a partition knew of a producer's transactions
// when a produce began to verify its batch (BeginVerification); pass it to
// AppendVerified. The zero value guards nothing.
type VerificationGuard struct {
	set     bool
	pid     int64
	markers uint64
}

// BeginVerification returns the guard for a transactional batch of
// producer pid at epoch, and whether pid has a transaction open in the
// partition now at that epoch (then the coordinator need not be asked).
// NB: an open transaction of another epoch is not the batch's: with
// transaction version 2 every end bumps the epoch, so a batch of the next
// transaction can arrive before the previous one's marker; joining it
// would have the marker end the new batch with the old transaction
// (Reference: Kafka UnifiedLog.hasOngoingTransaction compares epochs).
func (p *Partition) BeginVerification(pid int64, epoch int16) (g VerificationGuard, ongoing bool) {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	_, e, open := p.producers.OngoingTxn(pid)
	return VerificationGuard{set: true, pid: pid, markers: p.producers.MarkerCount(pid)}, open && e == epoch
}

// checkGuardLocked refuses b when g is set for b's producer and a marker
// of that producer was applied since g was taken, or when the producer
// has a transaction open here at another epoch than b's. The caller holds
// p.appendMu.
func (p *Partition) checkGuardLocked(b record.Batch, g VerificationGuard) error {
	if !g.set || !b.Transactional() || b.ProducerID() != g.pid {
		return nil
	}
	if p.producers.MarkerCount(g.pid) != g.markers {
		return ErrVerificationGuard
	}
	if _, e, open := p.producers.OngoingTxn(g.pid); open && e != b.ProducerEpoch() {
		return ErrVerificationGuard
	}
	return nil
}

// OngoingTxn reports whether producer pid has a transaction open in this
// partition, with the offset of its first record and the producer's epoch.
func (p *Partition) OngoingTxn(pid int64) (firstOffset int64, epoch int16, ok bool) {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	return p.producers.OngoingTxn(pid)
}
