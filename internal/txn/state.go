package txn

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"samsa/internal/record"
)

// ErrCoordinatorFenced refuses an end-transaction marker whose coordinator
// epoch is older than the last marker's for the producer: it comes from a
// coordinator that lost its partition of __transaction_state. The broker
// maps it to TRANSACTION_COORDINATOR_FENCED (52).
var ErrCoordinatorFenced = errors.New("txn: transaction coordinator fenced")

// WindowSize is how many batches per producer are remembered (Kafka: 5, the
// client's max.in.flight.requests.per.connection limit for idempotence).
const WindowSize = 5

// BatchMeta is what is remembered of one appended batch.
type BatchMeta struct {
	FirstSeq, LastSeq       int32
	FirstOffset, LastOffset int64
	Timestamp               int64 // the batch's max timestamp (or LogAppendTime)
}

// Producer is one producer's state in one partition.
type Producer struct {
	ID           int64
	Epoch        int16
	Batches      []BatchMeta // at most WindowSize, oldest first
	LastUpdateMs int64       // broker wall clock of the last append, for expiration
	// CoordinatorEpoch is the coordinator epoch of the last end-transaction
	// marker written for the producer, -1 before any.
	CoordinatorEpoch int32
	// CurrentTxnFirstOffset is the offset of the first record of the
	// producer's open transaction in this partition, -1 when none is open
	// (Kafka's currentTxnFirstOffset).
	CurrentTxnFirstOffset int64
}

// InTxn reports whether the producer has a transaction open in the
// partition.
func (p *Producer) InTxn() bool { return p.CurrentTxnFirstOffset >= 0 }

// lastSeq returns the LastSeq of the newest remembered batch, and false
// when no batch is remembered.
func (p *Producer) lastSeq() (int32, bool) {
	if len(p.Batches) == 0 {
		return 0, false
	}
	return p.Batches[len(p.Batches)-1].LastSeq, true
}

func (p *Producer) clone() Producer {
	c := *p
	c.Batches = slices.Clone(p.Batches)
	return c
}

// Batch is the header of an idempotent batch being appended.
type Batch struct {
	ProducerID      int64
	Epoch           int16
	BaseSequence    int32
	LastOffsetDelta int32 // records - 1
	// Transactional is the batch's transactional attribute: the batch
	// belongs to its producer's open transaction, or opens one.
	Transactional bool
}

// LastSeq returns the sequence number of the batch's last record:
// BaseSequence + LastOffsetDelta, wrapping past MaxInt32 to 0 as Kafka's
// sequence numbers do (Reference: KIP-98, DefaultRecordBatch.incrementSequence).
func (b Batch) LastSeq() int32 { return addSeq(b.BaseSequence, b.LastOffsetDelta) }

// String formats the batch for traces and errors.
func (b Batch) String() string {
	return fmt.Sprintf("pid=%d epoch=%d seq=%d..%d", b.ProducerID, b.Epoch, b.BaseSequence, b.LastSeq())
}

// addSeq adds delta (>= 0) to seq, wrapping past MaxInt32 to 0.
func addSeq(seq, delta int32) int32 {
	if delta < 0 {
		// Not a valid batch; keep the arithmetic defined.
		return seq + delta
	}
	if int64(seq)+int64(delta) > math.MaxInt32 {
		return int32(int64(seq) + int64(delta) - math.MaxInt32 - 1)
	}
	return seq + delta
}

// nextSeq returns the sequence number that follows seq.
func nextSeq(seq int32) int32 { return addSeq(seq, 1) }

// BatchOf returns the producer fields of a record batch header. The caller
// checks rb.ProducerID() >= 0 before treating the batch as idempotent.
func BatchOf(rb record.Batch) Batch {
	return Batch{
		ProducerID:      rb.ProducerID(),
		Epoch:           rb.ProducerEpoch(),
		BaseSequence:    rb.BaseSequence(),
		LastOffsetDelta: rb.LastOffsetDelta(),
		Transactional:   rb.Transactional(),
	}
}

// State is the producer state of one partition: for each producer id, its
// epoch and the last WindowSize batches it appended. State is not safe for
// concurrent use; the partition's append lock guards it.
type State struct {
	producers map[int64]*Producer
	// ongoing maps the producers with an open transaction to its first
	// offset (Kafka's ongoingTxns), so FirstUnstableOffset does not walk
	// every producer.
	ongoing map[int64]int64
	// markers counts, per producer, the end-transaction markers applied
	// since this State was built (MarkerCount); nil until the first. It is
	// not in the snapshot: it only tells apart two moments of one process.
	markers map[int64]uint64
}

// NewState returns an empty State.
func NewState() *State {
	return &State{producers: make(map[int64]*Producer), ongoing: make(map[int64]int64)}
}

// newProducer returns the state of a producer the partition has not seen.
func newProducer(id int64, epoch int16) *Producer {
	return &Producer{ID: id, Epoch: epoch, Batches: make([]BatchMeta, 0, WindowSize), CoordinatorEpoch: -1, CurrentTxnFirstOffset: -1}
}

// setTxn opens (first >= 0) or ends (first < 0) p's transaction.
func (s *State) setTxn(p *Producer, first int64) {
	p.CurrentTxnFirstOffset = first
	if first >= 0 {
		s.ongoing[p.ID] = first
	} else {
		delete(s.ongoing, p.ID)
	}
}

// Check decides on an idempotent batch (ProducerID >= 0) before it is
// appended. Check does not change the state.
//
// If dup != nil, the batch is a retry of one still in the window: it must
// not be appended, and the client gets dup's offsets and no error. The
// caller owns *dup. If err != nil the batch is refused with one of
// ErrInvalidSequence, ErrInvalidProducerEpoch, ErrUnknownProducerID or
// ErrOutOfOrderSequence, or ErrInvalidTxnState for a non-transactional batch
// of a producer whose transaction is open (wrapped with details). If both are nil the caller
// appends the batch and then calls Update.
func (s *State) Check(b Batch) (dup *BatchMeta, err error) {
	// An idempotent batch carries an epoch and a sequence; a batch with a
	// producer id but without them is malformed (INVALID_RECORD).
	if b.Epoch < 0 || b.BaseSequence < 0 || b.LastOffsetDelta < 0 {
		return nil, fmt.Errorf("%w: %v", ErrInvalidSequence, b)
	}
	p, ok := s.producers[b.ProducerID]
	if !ok {
		// Reference: KIP-360. A producer the partition does not know (never
		// seen, expired, or removed by retention) may only start at
		// sequence 0; otherwise the client must bump its epoch through
		// InitProducerId and restart at 0.
		if b.BaseSequence != 0 {
			return nil, fmt.Errorf("%w: %v: producer not known to the partition, expected sequence 0", ErrUnknownProducerID, b)
		}
		return nil, nil
	}
	// Reference: KIP-98. Duplicates are looked for first, and only within
	// the producer's current epoch: a retry of a batch that was already
	// written is answered with the original offsets.
	if b.Epoch == p.Epoch {
		last := b.LastSeq()
		for i := range p.Batches {
			if m := &p.Batches[i]; m.FirstSeq == b.BaseSequence && m.LastSeq == last {
				c := *m
				return &c, nil
			}
		}
	}
	if p.InTxn() && !b.Transactional && b.Epoch >= p.Epoch {
		// Reference: Kafka ProducerAppendInfo.appendDataBatch. While its
		// transaction is open a producer writes only transactional
		// batches; a plain one would belong to no transaction.
		return nil, fmt.Errorf("%w: %v: non-transactional batch while the transaction that began at offset %d is open",
			ErrInvalidTxnState, b, p.CurrentTxnFirstOffset)
	}
	switch {
	case b.Epoch < p.Epoch:
		// Reference: KIP-98. A zombie producer with a fenced epoch.
		return nil, fmt.Errorf("%w: %v: current epoch is %d", ErrInvalidProducerEpoch, b, p.Epoch)
	case b.Epoch > p.Epoch:
		// Reference: KIP-98, KIP-360. A bumped epoch restarts the sequence.
		if b.BaseSequence != 0 {
			return nil, fmt.Errorf("%w: %v: new epoch (was %d) must start at sequence 0", ErrOutOfOrderSequence, b, p.Epoch)
		}
		return nil, nil
	}
	last, ok := p.lastSeq()
	if !ok {
		// The producer is known but has no batch in the window (its epoch
		// came from somewhere without data); only 0 can start it.
		if b.BaseSequence != 0 {
			return nil, fmt.Errorf("%w: %v: expected sequence 0", ErrOutOfOrderSequence, b)
		}
		return nil, nil
	}
	// Reference: KIP-98. Within an epoch, sequences are contiguous; a gap or
	// a retry older than the window is out of order.
	if want := nextSeq(last); b.BaseSequence != want {
		return nil, fmt.Errorf("%w: %v: expected sequence %d", ErrOutOfOrderSequence, b, want)
	}
	return nil, nil
}

// CheckCoordinator decides on a batch a coordinator writes for a producer
// (transactional offset commits in __consumer_offsets): it has no sequence
// number (BaseSequence -1), so only its epoch is checked, against the
// producer's (ErrInvalidProducerEpoch). If it passes the caller appends the
// batch and then calls Update, which opens the producer's transaction for a
// transactional batch without adding it to the window. Reference: Kafka
// AppendOrigin.COORDINATOR.
func (s *State) CheckCoordinator(b Batch) error {
	if b.Epoch < 0 {
		return fmt.Errorf("%w: %v", ErrInvalidSequence, b)
	}
	if p, ok := s.producers[b.ProducerID]; ok && b.Epoch < p.Epoch {
		return fmt.Errorf("%w: %v: current epoch is %d", ErrInvalidProducerEpoch, b, p.Epoch)
	}
	return nil
}

// Update records a batch that was appended at [firstOffset, lastOffset]
// after Check said to append it. timestamp is the batch's max timestamp (or
// its LogAppendTime) and nowMs the broker's wall clock.
func (s *State) Update(b Batch, firstOffset, lastOffset, timestamp, nowMs int64) {
	s.apply(b, firstOffset, lastOffset, timestamp, nowMs)
}

// Replay applies a batch read from the log during recovery, without any
// check. As in Update, an epoch different from the producer's resets its
// window (the log is the truth; Kafka's replay does the same).
func (s *State) Replay(b Batch, firstOffset, lastOffset, timestamp, nowMs int64) {
	s.apply(b, firstOffset, lastOffset, timestamp, nowMs)
}

func (s *State) apply(b Batch, firstOffset, lastOffset, timestamp, nowMs int64) {
	p, ok := s.producers[b.ProducerID]
	if !ok {
		p = newProducer(b.ProducerID, b.Epoch)
		s.producers[b.ProducerID] = p
	}
	if b.BaseSequence < 0 {
		// A coordinator's batch (CheckCoordinator): it has no sequence,
		// so it joins no window, but it may bump the epoch and open the
		// transaction.
		if b.Epoch > p.Epoch {
			p.Epoch = b.Epoch
			p.Batches = p.Batches[:0]
		}
		p.LastUpdateMs = nowMs
		if b.Transactional && !p.InTxn() {
			s.setTxn(p, firstOffset)
		}
		return
	}
	if b.Epoch != p.Epoch {
		// Reference: KIP-360. A new epoch starts a new sequence space, so
		// the old epoch's batches can no longer be duplicates.
		p.Epoch = b.Epoch
		p.Batches = p.Batches[:0]
	}
	if len(p.Batches) == WindowSize {
		// NB: shift in place rather than reslicing forward, so the backing
		// array never grows past WindowSize.
		copy(p.Batches, p.Batches[1:])
		p.Batches = p.Batches[:WindowSize-1]
	}
	p.Batches = append(p.Batches, BatchMeta{
		FirstSeq:    b.BaseSequence,
		LastSeq:     b.LastSeq(),
		FirstOffset: firstOffset,
		LastOffset:  lastOffset,
		Timestamp:   timestamp,
	})
	p.LastUpdateMs = nowMs
	if b.Transactional && !p.InTxn() {
		// Reference: KIP-98, Kafka ProducerAppendInfo.appendDataBatch: the
		// first transactional batch opens the producer's transaction
		// here; later ones extend it until a marker ends it.
		s.setTxn(p, firstOffset)
	}
}

// Expire removes producers idle for at least expirationMs
// (producer.id.expiration.ms; <= 0 disables this) and those whose last
// batch lies entirely below logStartOffset (retention deleted it). It
// returns how many producers were removed. A producer with an open
// transaction never expires.
func (s *State) Expire(nowMs, expirationMs, logStartOffset int64) int {
	n := 0
	for id, p := range s.producers {
		if p.InTxn() {
			// Reference: Kafka ProducerStateManager.isProducerExpired. A
			// producer with an open transaction holds the last stable
			// offset; forgetting it would expose the transaction's
			// records before its marker.
			continue
		}
		idle := expirationMs > 0 && nowMs-p.LastUpdateMs >= expirationMs
		gone := len(p.Batches) > 0 && p.Batches[len(p.Batches)-1].LastOffset < logStartOffset
		if idle || gone {
			delete(s.producers, id)
			delete(s.markers, id)
			n++
		}
	}
	return n
}

// TruncateTo drops remembered batches whose offsets reach offset or beyond
// (a batch is either wholly below offset or dropped) and the transactions
// that begin at or after offset, and removes producers left with neither a
// batch nor an open transaction. It is used on follower truncation; the
// state is then exact only for what it still holds (a transaction whose
// marker was cut off stays ended), and recovery from a snapshot plus replay
// is what restores older window entries and reopens such transactions.
func (s *State) TruncateTo(offset int64) {
	for id, p := range s.producers {
		keep := p.Batches[:0]
		for _, m := range p.Batches {
			if m.LastOffset < offset {
				keep = append(keep, m)
			}
		}
		p.Batches = keep
		if p.CurrentTxnFirstOffset >= offset {
			s.setTxn(p, -1)
		}
		if len(keep) == 0 && !p.InTxn() {
			delete(s.producers, id)
			delete(s.markers, id)
		}
	}
}

// Marker is an end-transaction marker (a COMMIT or ABORT control batch)
// being written to the partition for a producer.
type Marker struct {
	ProducerID       int64
	Epoch            int16 // the batch's producer epoch
	Commit           bool  // COMMIT, else ABORT
	CoordinatorEpoch int32
}

// MarkerOf returns the marker fields of an end-transaction control batch
// and the marker it holds.
func MarkerOf(rb record.Batch, m record.EndTxnMarker) Marker {
	return Marker{ProducerID: rb.ProducerID(), Epoch: rb.ProducerEpoch(), Commit: m.Commit(), CoordinatorEpoch: m.CoordinatorEpoch}
}

// String formats the marker for traces and errors.
func (m Marker) String() string {
	kind := "ABORT"
	if m.Commit {
		kind = "COMMIT"
	}
	return fmt.Sprintf("%s pid=%d epoch=%d coordinator-epoch=%d", kind, m.ProducerID, m.Epoch, m.CoordinatorEpoch)
}

// CompletedTxn is a transaction that a marker ended in the partition
// (Kafka's CompletedTxn).
type CompletedTxn struct {
	ProducerID  int64
	FirstOffset int64 // the transaction's first record
	LastOffset  int64 // the marker
	Aborted     bool
}

// CheckMarker decides on a marker before it is appended by the partition
// leader. It refuses, with ErrInvalidProducerEpoch, a marker whose epoch is
// older than the producer's, and, with ErrCoordinatorFenced, one whose
// coordinator epoch is older than the last marker's (a zombie coordinator).
// A marker for a producer the partition does not know, or one with no open
// transaction, is accepted: Kafka writes it too. CheckMarker does not change
// the state.
func (s *State) CheckMarker(m Marker) error {
	p, ok := s.producers[m.ProducerID]
	if !ok {
		return nil
	}
	// Reference: Kafka ProducerAppendInfo.appendEndTxnMarker
	// (checkProducerEpoch, checkCoordinatorEpoch).
	if m.Epoch < p.Epoch {
		return fmt.Errorf("%w: %v: current epoch is %d", ErrInvalidProducerEpoch, m, p.Epoch)
	}
	if m.CoordinatorEpoch < p.CoordinatorEpoch {
		return fmt.Errorf("%w: %v: current coordinator epoch is %d", ErrCoordinatorFenced, m, p.CoordinatorEpoch)
	}
	return nil
}

// ApplyMarker records a marker written at offset: after CheckMarker on the
// leader, and without any check when replaying the log (the log is the
// truth). It ends the producer's open transaction and returns it, with ok
// false if none was open. The producer's epoch becomes the larger of its
// own and the marker's (KIP-890 markers carry the bumped epoch), which
// empties its window when it changes.
func (s *State) ApplyMarker(m Marker, offset, nowMs int64) (c CompletedTxn, ok bool) {
	p, known := s.producers[m.ProducerID]
	if !known {
		p = newProducer(m.ProducerID, m.Epoch)
		s.producers[m.ProducerID] = p
	}
	if p.InTxn() {
		c = CompletedTxn{ProducerID: p.ID, FirstOffset: p.CurrentTxnFirstOffset, LastOffset: offset, Aborted: !m.Commit}
		ok = true
		s.setTxn(p, -1)
	}
	if m.Epoch > p.Epoch {
		p.Epoch = m.Epoch
		p.Batches = p.Batches[:0]
	}
	if s.markers == nil {
		s.markers = make(map[int64]uint64)
	}
	s.markers[m.ProducerID]++
	p.CoordinatorEpoch = max(p.CoordinatorEpoch, m.CoordinatorEpoch)
	p.LastUpdateMs = nowMs
	return c, ok
}

// MarkerCount returns how many end-transaction markers this State applied
// for producer pid, 0 for a producer it does not know. A produce that is
// verified with the transaction coordinator reads it before asking and
// checks it again under the append lock: a marker in between ended the
// transaction the batch was verified for (Kafka's VerificationGuard,
// KIP-890 part 1).
func (s *State) MarkerCount(pid int64) uint64 {
	return s.markers[pid]
}

// FirstUnstableOffset returns the first offset of the oldest open
// transaction, and false when no transaction is open. The partition's last
// stable offset is the smaller of it and the high watermark.
func (s *State) FirstUnstableOffset() (int64, bool) {
	first, ok := int64(0), false
	for _, off := range s.ongoing {
		if !ok || off < first {
			first, ok = off, true
		}
	}
	return first, ok
}

// OngoingTxn returns the first offset of producer pid's open transaction
// and the producer's epoch; ok is false when pid has no transaction open.
func (s *State) OngoingTxn(pid int64) (firstOffset int64, epoch int16, ok bool) {
	p, known := s.producers[pid]
	if !known || !p.InTxn() {
		return -1, 0, false
	}
	return p.CurrentTxnFirstOffset, p.Epoch, true
}

// Producers returns a copy of every producer's state, sorted by ID. The
// caller owns the returned slice.
func (s *State) Producers() []Producer {
	out := make([]Producer, 0, len(s.producers))
	for _, id := range s.sortedIDs() {
		out = append(out, s.producers[id].clone())
	}
	return out
}

// sortedIDs returns the producer ids in increasing order.
func (s *State) sortedIDs() []int64 {
	ids := make([]int64, 0, len(s.producers))
	for id := range s.producers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Producer returns a copy of one producer's state, and false if the
// partition does not know it.
func (s *State) Producer(id int64) (Producer, bool) {
	p, ok := s.producers[id]
	if !ok {
		return Producer{}, false
	}
	return p.clone(), true
}

// Len returns how many producers the state holds.
func (s *State) Len() int { return len(s.producers) }

// Clone returns a deep copy of the state.
func (s *State) Clone() *State {
	c := &State{producers: make(map[int64]*Producer, len(s.producers)), ongoing: make(map[int64]int64, len(s.ongoing))}
	for id, p := range s.producers {
		cp := p.clone()
		c.producers[id] = &cp
	}
	for id, off := range s.ongoing {
		c.ongoing[id] = off
	}
	return c
}
