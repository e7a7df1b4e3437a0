package share

import (
	"errors"
	"fmt"
	"time"
)

// RecordState is the delivery state of one in-flight record, with Kafka's
// numbering (the persisted DeliveryState uses the same values; ACQUIRED
// is never persisted: it is stored as AVAILABLE).
type RecordState int8

// Record states (KIP-932).
const (
	Available    RecordState = 0
	Acquired     RecordState = 1
	Acknowledged RecordState = 2
	Archived     RecordState = 4
)

func (s RecordState) String() string {
	switch s {
	case Available:
		return "AVAILABLE"
	case Acquired:
		return "ACQUIRED"
	case Acknowledged:
		return "ACKNOWLEDGED"
	case Archived:
		return "ARCHIVED"
	}
	return fmt.Sprintf("RecordState(%d)", int8(s))
}

// AckType is an acknowledgement type of ShareFetch and ShareAcknowledge.
type AckType int8

// Acknowledgement types: 0 is a gap (no record at that offset), 4 renews
// the acquisition lock (KIP-1222).
const (
	AckGap     AckType = 0
	AckAccept  AckType = 1
	AckRelease AckType = 2
	AckReject  AckType = 3
	AckRenew   AckType = 4
)

// Errors of the share partition state machine. The broker maps them to
// Kafka error codes.
var (
	// ErrInvalidRecordState: an acknowledgement names a record that is not
	// acquired by the member (INVALID_RECORD_STATE).
	ErrInvalidRecordState = errors.New("share: invalid record state")
	// ErrInvalidRequest: a malformed acknowledgement batch (bad range,
	// unknown type, wrong number of types).
	ErrInvalidRequest = errors.New("share: invalid request")
)

// Config is the share partition's part of the group's configuration.
type Config struct {
	// LockDuration is the group's share.record.lock.duration.ms
	// (group.share.record.lock.duration.ms by default).
	LockDuration time.Duration
	// DeliveryCountLimit is the group's share.delivery.count.limit
	// (group.share.delivery.count.limit by default): a record
	// released or whose lock expires after that many deliveries is
	// archived.
	DeliveryCountLimit int16
	// MaxRecordLocks is group.share.partition.max.record.locks: how many
	// records past the share-partition start offset may be in flight.
	MaxRecordLocks int
}

// rec is one in-flight record.
type rec struct {
	state    RecordState
	count    int16 // delivery count
	member   string
	deadline time.Time // lock deadline while Acquired
}

// Partition is the state of one share-partition (group, topic,
// partition) on the partition's leader: the share-partition start offset
// (SPSO), the share-partition end offset (SPEO) and every record in
// between.
//
// It is a deterministic state machine: no goroutines, no IO, no clock;
// every call that depends on time takes it. It is not safe for concurrent
// use: the caller serialises calls.
//
// Invariants: SPSO <= SPEO; the record at SPSO, if any, is Available or
// Acquired (acknowledged and archived records at the front are dropped
// and SPSO moves past them); SPEO - SPSO is at most MaxRecordLocks plus
// the rest of the last batch acquired.
type Partition struct {
	cfg  Config
	spso int64
	recs []rec // recs[i] is offset spso+i; SPEO = spso+len(recs)
	// version counts changes that must be persisted.
	version int64
	// lockFloor is no later than the earliest lock deadline of an
	// acquired record, and zero when ExpireLocks last found none
	// acquired and none was acquired since: ExpireLocks and NextDeadline
	// walk the records only once it has passed (a walk per fetch was a
	// tenth of the broker's share CPU).
	lockFloor time.Time
}

// New returns a share-partition that starts at offset start with nothing
// in flight.
func New(cfg Config, start int64) *Partition {
	return &Partition{cfg: cfg, spso: start}
}

// SetConfig replaces the share-partition's configuration (its group's
// configs changed). A new LockDuration applies to later acquisitions and
// renewals, not to locks already held; a new DeliveryCountLimit to the
// next release or expiry.
func (p *Partition) SetConfig(cfg Config) { p.cfg = cfg }

// StateBatch is a range of records with one delivery state and count, as
// persisted (ReadShareGroupState/WriteShareGroupState StateBatches).
type StateBatch struct {
	First, Last   int64
	State         RecordState // Available, Acknowledged or Archived
	DeliveryCount int16
}

// State is the persisted form of a share-partition.
type State struct {
	StartOffset int64
	Batches     []StateBatch
}

// Restore returns the share-partition a persisted State describes. Records
// the state lists as Available keep their delivery count, so a record
// delivered before a failover counts those deliveries toward the limit.
// Offsets past the last batch are not in flight. Batches must be sorted
// and not overlap; records below StartOffset are ignored.
func Restore(cfg Config, st State) *Partition {
	p := New(cfg, st.StartOffset)
	for _, b := range st.Batches {
		if b.Last < p.spso || b.Last < b.First {
			continue
		}
		first := max(b.First, p.spso)
		// Offsets between the previous batch and this one were never
		// recorded: they are available with no delivery yet.
		for p.end() < first {
			p.recs = append(p.recs, rec{state: Available})
		}
		for o := first; o <= b.Last; o++ {
			if o < p.end() {
				continue
			}
			s := b.State
			if s == Acquired {
				s = Available
			}
			p.recs = append(p.recs, rec{state: s, count: b.DeliveryCount})
		}
	}
	p.advance()
	return p
}

// Snapshot returns the state to persist: SPSO and every in-flight record,
// Acquired ones as Available with their delivery count, merged into
// batches. The caller owns the returned slices.
func (p *Partition) Snapshot() State {
	st := State{StartOffset: p.spso}
	for i, r := range p.recs {
		s := r.state
		if s == Acquired {
			s = Available
		}
		o := p.spso + int64(i)
		if n := len(st.Batches); n > 0 {
			last := &st.Batches[n-1]
			if last.Last == o-1 && last.State == s && last.DeliveryCount == r.count {
				last.Last = o
				continue
			}
		}
		st.Batches = append(st.Batches, StateBatch{First: o, Last: o, State: s, DeliveryCount: r.count})
	}
	return st
}

// StartOffset is the SPSO.
func (p *Partition) StartOffset() int64 { return p.spso }

// EndOffset is the SPEO: the first offset never acquired.
func (p *Partition) EndOffset() int64 { return p.end() }

func (p *Partition) end() int64 { return p.spso + int64(len(p.recs)) }

// Version counts the changes to persisted state (SPSO, states, delivery
// counts); it grows by at least one with each.
func (p *Partition) Version() int64 { return p.version }

// InFlight is how many records are between SPSO and SPEO.
func (p *Partition) InFlight() int { return len(p.recs) }

// Lag is how many records from SPSO up to end (the high watermark) are not
// acknowledged or archived.
func (p *Partition) Lag(end int64) int64 {
	var n int64
	for _, r := range p.recs {
		if r.state == Available || r.state == Acquired {
			n++
		}
	}
	if end > p.end() {
		n += end - p.end()
	}
	return n
}

// State returns the state and delivery count of offset o; offsets below
// SPSO are Archived-or-acknowledged history (reported Acknowledged),
// offsets at or past SPEO are Available with count 0.
func (p *Partition) State(o int64) (RecordState, int16, string) {
	switch {
	case o < p.spso:
		return Acknowledged, 0, ""
	case o >= p.end():
		return Available, 0, ""
	}
	r := p.recs[o-p.spso]
	return r.state, r.count, r.member
}

// NextFetchOffset is where a fetch for this share-partition should read
// the log from: the first Available in-flight record, else SPEO. It
// returns -1 when nothing can be acquired: no Available record in flight
// and MaxRecordLocks records already in flight.
func (p *Partition) NextFetchOffset() int64 {
	for i, r := range p.recs {
		if r.state == Available {
			return p.spso + int64(i)
		}
	}
	if len(p.recs) >= p.cfg.MaxRecordLocks {
		return -1
	}
	return p.end()
}

// Holds reports whether member holds an acquired record here.
func (p *Partition) Holds(member string) bool {
	for i := range p.recs {
		if p.recs[i].state == Acquired && p.recs[i].member == member {
			return true
		}
	}
	return false
}

// Batch is the offset range of one record batch read from the log. Skip
// marks a batch that is never delivered (an aborted transaction's, or a
// control batch, under share.isolation.level read_committed): Acquire
// archives its records instead.
type Batch struct {
	First, Last int64
	Skip        bool
}

// AcquiredRange is a range of records acquired in one call, all with the same
// delivery count (ShareFetch AcquiredRecords).
type AcquiredRange struct {
	First, Last   int64
	DeliveryCount int16
}

// Acquire locks for member, until now+LockDuration, the Available records
// of the batches (read from the log in offset order, below the high
// watermark) and the records past SPEO in them, increasing each one's
// delivery count; the records of batches marked Skip are archived. It
// stops once it acquired maxRecords records: at the end
// of that batch (batch-optimized mode), or exactly there when strict
// (record-limit mode, KIP-1206). New records past SPEO are taken only
// while fewer than MaxRecordLocks are in flight, except the rest of a
// batch already started. maxRecords <= 0 means no limit.
func (p *Partition) Acquire(member string, now time.Time, batches []Batch, maxRecords int, strict bool) []AcquiredRange {
	var out []AcquiredRange
	deadline := now.Add(p.cfg.LockDuration)
	if p.lockFloor.IsZero() || deadline.Before(p.lockFloor) {
		p.lockFloor = deadline
	}
	n := 0
	take := func(o int64) {
		r := &p.recs[o-p.spso]
		r.state, r.member, r.deadline = Acquired, member, deadline
		r.count++
		n++
		if k := len(out); k > 0 && out[k-1].Last == o-1 && out[k-1].DeliveryCount == r.count {
			out[k-1].Last = o
		} else {
			out = append(out, AcquiredRange{First: o, Last: o, DeliveryCount: r.count})
		}
	}
	full := func() bool { return maxRecords > 0 && n >= maxRecords }
	skipped := false
	for _, b := range batches {
		if full() {
			break
		}
		if b.Skip {
			skipped = p.archive(b) || skipped
			continue
		}
		started := false
		for o := max(b.First, p.spso); o <= b.Last; o++ {
			if strict && full() {
				break
			}
			if o >= p.end() {
				if len(p.recs) >= p.cfg.MaxRecordLocks && !started {
					return p.acquired(out, skipped)
				}
				// Offsets the log skipped (compacted away) have no
				// record to deliver.
				for p.end() < o {
					p.recs = append(p.recs, rec{state: Archived})
				}
				p.recs = append(p.recs, rec{state: Available})
			}
			if p.recs[o-p.spso].state == Available {
				take(o)
				started = true
			}
		}
	}
	return p.acquired(out, skipped)
}

func (p *Partition) acquired(out []AcquiredRange, changed bool) []AcquiredRange {
	if len(out) > 0 || changed {
		p.version++
	}
	p.advance()
	return out
}

// archive archives the available records of a skipped batch, and those
// past SPEO, which join the flight as archived (no lock is needed for
// them, so MaxRecordLocks does not hold them back). It reports whether a
// record changed.
func (p *Partition) archive(b Batch) bool {
	changed := false
	for o := max(b.First, p.spso); o <= b.Last; o++ {
		if o >= p.end() {
			for p.end() <= o {
				p.recs = append(p.recs, rec{state: Archived})
			}
			changed = true
			continue
		}
		if r := &p.recs[o-p.spso]; r.state == Available {
			r.state = Archived
			changed = true
		}
	}
	return changed
}

// Unacquire undoes an Acquire whose answer is not given (its write to
// the share coordinator failed): each record of ranges still acquired by
// member becomes available again with its delivery count as before.
func (p *Partition) Unacquire(member string, ranges []AcquiredRange) {
	changed := false
	for _, a := range ranges {
		for o := max(a.First, p.spso); o <= a.Last && o < p.end(); o++ {
			r := &p.recs[o-p.spso]
			if r.state != Acquired || r.member != member {
				continue
			}
			r.state, r.member, r.deadline = Available, "", time.Time{}
			if r.count > 0 {
				r.count--
			}
			changed = true
		}
	}
	if changed {
		p.version++
	}
}

// AckBatch is one acknowledgement batch: the offsets First..Last and
// either one type for all of them or one type per offset.
type AckBatch struct {
	First, Last int64
	Types       []AckType
}

// ValidateAcks checks the batches of one request for one partition, in
// order: First <= Last, one type or one per offset, known types, sorted
// and not overlapping. It returns ErrInvalidRequest if not.
func ValidateAcks(batches []AckBatch, renewAllowed bool) error {
	prev := int64(-1)
	for i, b := range batches {
		if b.First < 0 || b.Last < b.First {
			return fmt.Errorf("%w: batch %d..%d", ErrInvalidRequest, b.First, b.Last)
		}
		if i > 0 && b.First <= prev {
			return fmt.Errorf("%w: batches overlap or are out of order at %d", ErrInvalidRequest, b.First)
		}
		prev = b.Last
		if len(b.Types) != 1 && int64(len(b.Types)) != b.Last-b.First+1 {
			return fmt.Errorf("%w: %d acknowledge types for %d records", ErrInvalidRequest, len(b.Types), b.Last-b.First+1)
		}
		for _, t := range b.Types {
			if t < AckGap || t > AckRenew || (t == AckRenew && !renewAllowed) {
				return fmt.Errorf("%w: acknowledge type %d", ErrInvalidRequest, t)
			}
		}
	}
	return nil
}

// Acknowledge applies member's acknowledgements. Every offset must be
// acquired by member (else ErrInvalidRecordState and nothing changes):
// accept acknowledges, reject and gap archive, release makes the record
// Available again (Archived if it reached the delivery count limit), renew
// moves the lock deadline to now+LockDuration. SPSO then moves past the
// acknowledged and archived records at the front. The batches must have
// passed ValidateAcks.
func (p *Partition) Acknowledge(member string, now time.Time, batches []AckBatch) error {
	for _, b := range batches {
		for o := b.First; o <= b.Last; o++ {
			if o < p.spso || o >= p.end() {
				return fmt.Errorf("%w: offset %d is not in flight (%d..%d)", ErrInvalidRecordState, o, p.spso, p.end())
			}
			r := p.recs[o-p.spso]
			if r.state != Acquired || r.member != member {
				return fmt.Errorf("%w: offset %d is %s", ErrInvalidRecordState, o, r.state)
			}
		}
	}
	changed := false
	for _, b := range batches {
		for o := b.First; o <= b.Last; o++ {
			t := b.Types[0]
			if len(b.Types) > 1 {
				t = b.Types[o-b.First]
			}
			r := &p.recs[o-p.spso]
			switch t {
			case AckAccept:
				r.state = Acknowledged
			case AckGap, AckReject:
				r.state = Archived
			case AckRelease:
				p.releaseLocked(r)
			case AckRenew:
				r.deadline = now.Add(p.cfg.LockDuration)
				continue
			}
			r.member, r.deadline = "", time.Time{}
			changed = true
		}
	}
	if changed {
		p.version++
		p.advance()
	}
	return nil
}

// releaseLocked makes an acquired record Available, or Archived once its
// delivery count reached the limit.
func (p *Partition) releaseLocked(r *rec) {
	r.member, r.deadline = "", time.Time{}
	if r.count >= p.cfg.DeliveryCountLimit {
		r.state = Archived
		return
	}
	r.state = Available
}

// ExpireLocks releases every record whose lock deadline is at or before
// now, as a release would. It returns how many it released.
func (p *Partition) ExpireLocks(now time.Time) int {
	if p.lockFloor.IsZero() || now.Before(p.lockFloor) {
		return 0
	}
	n := 0
	var floor time.Time
	for i := range p.recs {
		r := &p.recs[i]
		if r.state != Acquired {
			continue
		}
		if !r.deadline.After(now) {
			p.releaseLocked(r)
			n++
		} else if floor.IsZero() || r.deadline.Before(floor) {
			floor = r.deadline
		}
	}
	p.lockFloor = floor
	if n > 0 {
		p.version++
		p.advance()
	}
	return n
}

// ReleaseMember releases every record acquired by member (its share
// session closed or it left the group). It returns how many.
func (p *Partition) ReleaseMember(member string) int {
	n := 0
	for i := range p.recs {
		r := &p.recs[i]
		if r.state == Acquired && r.member == member {
			p.releaseLocked(r)
			n++
		}
	}
	if n > 0 {
		p.version++
		p.advance()
	}
	return n
}

// NextDeadline is no later than the earliest lock deadline of an
// acquired record: a time to call ExpireLocks at. It is the zero time
// when none is acquired, and may be an earlier time while the records
// acquired since the last ExpireLocks that passed it were acknowledged
// or released (a wake-up then finds nothing to expire).
func (p *Partition) NextDeadline() time.Time { return p.lockFloor }

// MoveStartTo moves SPSO forward to o (the log start offset moved past it,
// or the offsets were altered): records below o leave the flight,
// whatever their state. A smaller o does nothing.
func (p *Partition) MoveStartTo(o int64) {
	if o <= p.spso {
		return
	}
	if o >= p.end() {
		p.recs = p.recs[:0]
	} else {
		p.recs = append(p.recs[:0], p.recs[o-p.spso:]...)
	}
	p.spso = o
	p.version++
	p.advance()
}

// advance drops the acknowledged and archived records at the front.
func (p *Partition) advance() {
	i := 0
	for i < len(p.recs) && (p.recs[i].state == Acknowledged || p.recs[i].state == Archived) {
		i++
	}
	if i == 0 {
		return
	}
	p.recs = append(p.recs[:0], p.recs[i:]...)
	p.spso += int64(i)
}
