package txn

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Sentinel errors of the transaction coordinator. The broker maps them to
// Kafka error codes:
// ErrProducerFenced -> PRODUCER_FENCED (90),
// ErrInvalidTxnState -> INVALID_TXN_STATE (48),
// ErrConcurrentTransactions -> CONCURRENT_TRANSACTIONS (51),
// ErrInvalidTransactionTimeout -> INVALID_TRANSACTION_TIMEOUT (50),
// ErrInvalidProducerIDMapping -> INVALID_PRODUCER_ID_MAPPING (49).
// ErrInvalidProducerEpoch (errors.go) is returned when an epoch cannot be
// bumped any further.
var (
	ErrProducerFenced            = errors.New("txn: producer fenced")
	ErrInvalidTxnState           = errors.New("txn: invalid transaction state")
	ErrConcurrentTransactions    = errors.New("txn: concurrent transactions")
	ErrInvalidTransactionTimeout = errors.New("txn: invalid transaction timeout")
	ErrInvalidProducerIDMapping  = errors.New("txn: invalid producer id mapping")
)

// NoProducerID and NoProducerEpoch mark an absent producer id or epoch, as
// Kafka's RecordBatch.NO_PRODUCER_ID and NO_PRODUCER_EPOCH (-1) do.
const (
	NoProducerID    int64 = -1
	NoProducerEpoch int16 = -1
)

// TxnState is the state of one transactional id at its coordinator.
type TxnState int8

// The states, with Kafka's names (Reference: KIP-98, TransactionState).
const (
	TxnEmpty             TxnState = iota // no transaction; a producer id and epoch are assigned
	TxnOngoing                           // partitions have been added
	TxnPrepareCommit                     // commit decided; markers being written
	TxnPrepareAbort                      // abort decided; markers being written
	TxnCompleteCommit                    // commit markers written
	TxnCompleteAbort                     // abort markers written
	TxnDead                              // the transactional id expired and is being removed
	TxnPrepareEpochFence                 // the epoch was bumped to fence a producer; abort follows
)

var txnStateNames = [...]string{
	TxnEmpty:             "Empty",
	TxnOngoing:           "Ongoing",
	TxnPrepareCommit:     "PrepareCommit",
	TxnPrepareAbort:      "PrepareAbort",
	TxnCompleteCommit:    "CompleteCommit",
	TxnCompleteAbort:     "CompleteAbort",
	TxnDead:              "Dead",
	TxnPrepareEpochFence: "PrepareEpochFence",
}

func (s TxnState) String() string {
	if int(s) >= 0 && int(s) < len(txnStateNames) {
		return txnStateNames[s]
	}
	return fmt.Sprintf("TxnState(%d)", int8(s))
}

// validPrevious lists, for each state, the states it may be entered from
// (Reference: Kafka TransactionState.validPreviousStates).
var validPrevious = map[TxnState][]TxnState{
	TxnEmpty:             {TxnEmpty, TxnCompleteCommit, TxnCompleteAbort},
	TxnOngoing:           {TxnOngoing, TxnEmpty, TxnCompleteCommit, TxnCompleteAbort},
	TxnPrepareCommit:     {TxnOngoing},
	TxnPrepareAbort:      {TxnOngoing, TxnPrepareEpochFence, TxnEmpty, TxnCompleteCommit, TxnCompleteAbort},
	TxnCompleteCommit:    {TxnPrepareCommit},
	TxnCompleteAbort:     {TxnPrepareAbort},
	TxnDead:              {TxnEmpty, TxnCompleteCommit, TxnCompleteAbort},
	TxnPrepareEpochFence: {TxnOngoing},
}

// CanTransition reports whether Kafka allows moving from one state to
// another. PrepareAbort from Empty, CompleteCommit or CompleteAbort is the
// abort of a transaction with no partitions that transaction version 2
// allows (Reference: KIP-890 part 2).
func CanTransition(from, to TxnState) bool {
	return slices.Contains(validPrevious[to], from)
}

// TopicPartition names one partition of a topic.
type TopicPartition struct {
	Topic     string
	Partition int32
}

func (tp TopicPartition) String() string { return fmt.Sprintf("%s-%d", tp.Topic, tp.Partition) }

func compareTP(a, b TopicPartition) int {
	if c := strings.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	return int(a.Partition) - int(b.Partition)
}

// TxnMetadata is the coordinator's record of one transactional id. It is a
// value: every transition returns a new TxnMetadata and leaves its receiver
// as it was, so the caller can persist the new value before installing it.
type TxnMetadata struct {
	TransactionalID   string
	ProducerID        int64
	LastProducerID    int64 // the id before the last rotation, or NoProducerID
	ProducerEpoch     int16
	LastProducerEpoch int16 // the epoch before the last bump a retry may come from, or NoProducerEpoch
	// NextProducerID is the id to rotate to when the current transaction
	// completes, allocated when ending it exhausted the epoch (KIP-890 part 2).
	NextProducerID int64
	TimeoutMs      int32
	State          TxnState
	Partitions     []TopicPartition // sorted, no duplicates
	TxnStartMs     int64            // when the current or last transaction began, or -1
	LastUpdateMs   int64
	// V2 is set when the current or last transaction was ended with EndTxn
	// version 5 or later (transaction version 2, KIP-890 part 2).
	V2 bool
}

// CoordinatorConfig holds the broker settings the transitions check.
type CoordinatorConfig struct {
	MaxTimeoutMs int32 // transaction.max.timeout.ms (Kafka default 900000)
	ExpirationMs int64 // transactional.id.expiration.ms (Kafka default 604800000)
}

// isEpochExhausted reports whether an epoch leaves no room for the bump
// that fencing needs; a producer there gets a new producer id instead
// (Reference: Kafka TransactionMetadata.isEpochExhausted, KIP-360).
func isEpochExhausted(epoch int16) bool { return epoch >= math.MaxInt16-1 }

func (m TxnMetadata) clone() TxnMetadata {
	m.Partitions = slices.Clone(m.Partitions)
	return m
}

// to returns m moved to state s at now, or ErrInvalidTxnState when Kafka
// does not allow the move.
func (m TxnMetadata) to(s TxnState, now int64) (TxnMetadata, error) {
	if !CanTransition(m.State, s) {
		return m, fmt.Errorf("%w: %s to %s", ErrInvalidTxnState, m.State, s)
	}
	n := m.clone()
	n.State = s
	n.LastUpdateMs = now
	return n, nil
}

// InitRequest is an InitProducerId request for a transactional id.
type InitRequest struct {
	TimeoutMs int32
	// ExpectedProducerID and ExpectedEpoch are the producer's current id and
	// epoch when it reinitialises after an error, or NoProducerID and
	// NoProducerEpoch (Reference: KIP-360).
	ExpectedProducerID int64
	ExpectedEpoch      int16
}

func (r InitRequest) hasExpected() bool { return r.ExpectedProducerID != NoProducerID }

// InitProducerID answers an InitProducerId request. cur is the id's
// metadata, nil when the coordinator has none. newPID allocates a producer
// id and is called only when one is needed.
//
// On success the producer's id and epoch are the returned ProducerID and
// ProducerEpoch. When the id has an Ongoing transaction, the returned
// metadata is that transaction fenced and being aborted (PrepareAbort with
// the epoch bumped), to persist and act on, and the error is
// ErrConcurrentTransactions so that the producer retries once the abort
// completes. On any other error the returned metadata is cur unchanged.
func InitProducerID(cur *TxnMetadata, id string, req InitRequest, cfg CoordinatorConfig, newPID func() int64, now int64) (TxnMetadata, error) {
	var m TxnMetadata
	if cur != nil {
		m = *cur
	}
	// Reference: Kafka TransactionCoordinator.handleInitProducerId: the
	// timeout must be positive and at most transaction.max.timeout.ms.
	if req.TimeoutMs <= 0 || req.TimeoutMs > cfg.MaxTimeoutMs {
		return m, ErrInvalidTransactionTimeout
	}
	if cur == nil || cur.State == TxnDead {
		m = TxnMetadata{
			TransactionalID:   id,
			ProducerID:        newPID(),
			LastProducerID:    NoProducerID,
			ProducerEpoch:     NoProducerEpoch,
			LastProducerEpoch: NoProducerEpoch,
			NextProducerID:    NoProducerID,
			TimeoutMs:         req.TimeoutMs,
			State:             TxnEmpty,
			TxnStartMs:        -1,
			LastUpdateMs:      now,
		}
	}
	orig := m
	// Reference: KIP-360: an expected id and epoch are accepted when the
	// metadata is new, the id is current, or the id is the one rotated
	// away from at an exhausted epoch (a retry of the rotating call).
	if req.hasExpected() && m.ProducerEpoch != NoProducerEpoch &&
		req.ExpectedProducerID != m.ProducerID &&
		(req.ExpectedProducerID != m.LastProducerID || !isEpochExhausted(req.ExpectedEpoch)) {
		return orig, ErrProducerFenced
	}
	switch m.State {
	case TxnPrepareCommit, TxnPrepareAbort, TxnPrepareEpochFence:
		return orig, ErrConcurrentTransactions
	case TxnOngoing:
		// Fence the producer of the ongoing transaction and abort it; the
		// epoch bump is never returned to a client, which retries and
		// gets a second bump (or a new id if this one exhausted the epoch).
		f, err := m.fence(now)
		if err != nil {
			return orig, err
		}
		a, err := f.abortFenced(now)
		if err != nil {
			return orig, err
		}
		return a, ErrConcurrentTransactions
	case TxnEmpty, TxnCompleteCommit, TxnCompleteAbort:
	default:
		return orig, fmt.Errorf("%w: init in %s", ErrInvalidTxnState, m.State)
	}
	n, err := m.to(TxnEmpty, now)
	if err != nil {
		return orig, err
	}
	n.TimeoutMs = req.TimeoutMs
	n.Partitions = nil
	n.TxnStartMs = -1
	n.NextProducerID = NoProducerID
	if isEpochExhausted(m.ProducerEpoch) && (!req.hasExpected() || req.ExpectedEpoch == m.ProducerEpoch) {
		// Reference: KIP-360: an exhausted epoch rotates to a new
		// producer id at epoch 0, remembering the old id (and epoch, for a
		// producer that asked with it) so that a retry is recognised.
		n.LastProducerID = m.ProducerID
		n.ProducerID = newPID()
		n.ProducerEpoch = 0
		n.LastProducerEpoch = NoProducerEpoch
		if req.hasExpected() {
			n.LastProducerEpoch = m.ProducerEpoch
		}
		return n, nil
	}
	bumped := m.ProducerEpoch + 1
	switch {
	case !req.hasExpected():
		// A new producer: bump and forget the last epoch, fencing any
		// producer that would recover with it.
		n.ProducerEpoch, n.LastProducerEpoch = bumped, NoProducerEpoch
	case m.ProducerEpoch == NoProducerEpoch || req.ExpectedEpoch == m.ProducerEpoch:
		// Reference: KIP-360: the producer recovers after an error and no
		// other producer initialised since: bump, remembering the epoch.
		n.ProducerEpoch, n.LastProducerEpoch = bumped, m.ProducerEpoch
	case req.ExpectedEpoch == m.LastProducerEpoch:
		// A retry of a recovery that succeeded: answer the same epoch.
		n.ProducerEpoch, n.LastProducerEpoch = m.ProducerEpoch, m.LastProducerEpoch
	default:
		return orig, ErrProducerFenced
	}
	return n, nil
}

// fence bumps the epoch of an Ongoing transaction so that its producer is
// fenced (Reference: Kafka TransactionMetadata.prepareFenceProducerEpoch).
// The last epoch is forgotten: no request with the fenced epoch is a retry.
func (m TxnMetadata) fence(now int64) (TxnMetadata, error) {
	if m.ProducerEpoch == math.MaxInt16 {
		return m, ErrInvalidProducerEpoch
	}
	n, err := m.to(TxnPrepareEpochFence, now)
	if err != nil {
		return m, err
	}
	n.ProducerEpoch = m.ProducerEpoch + 1
	n.LastProducerEpoch = NoProducerEpoch
	return n, nil
}

// abortFenced starts the abort that follows a fence, keeping the fenced
// epoch: the abort does not bump again.
func (m TxnMetadata) abortFenced(now int64) (TxnMetadata, error) {
	if m.State != TxnPrepareEpochFence {
		return m, fmt.Errorf("%w: abort after fence in %s", ErrInvalidTxnState, m.State)
	}
	return m.to(TxnPrepareAbort, now)
}

// AddPartitions adds partitions to the transaction of producer pid at
// epoch, starting the transaction when none is ongoing (Reference: Kafka
// TransactionCoordinator.handleAddPartitionsToTransaction). Adding only
// partitions already in an Ongoing transaction returns m unchanged.
func (m TxnMetadata) AddPartitions(pid int64, epoch int16, parts []TopicPartition, now int64) (TxnMetadata, error) {
	switch {
	case m.State == TxnDead || m.ProducerID != pid:
		return m, ErrInvalidProducerIDMapping
	case m.ProducerEpoch != epoch:
		return m, ErrProducerFenced
	case m.State == TxnPrepareCommit || m.State == TxnPrepareAbort || m.State == TxnPrepareEpochFence:
		return m, ErrConcurrentTransactions
	}
	if m.State == TxnOngoing {
		all := true
		for _, p := range parts {
			if _, ok := slices.BinarySearchFunc(m.Partitions, p, compareTP); !ok {
				all = false
				break
			}
		}
		if all {
			return m, nil
		}
	}
	n, err := m.to(TxnOngoing, now)
	if err != nil {
		return m, err
	}
	if m.State != TxnOngoing {
		n.TxnStartMs = now
		n.Partitions = nil
		n.V2 = false
	}
	for _, p := range parts {
		if i, ok := slices.BinarySearchFunc(n.Partitions, p, compareTP); !ok {
			n.Partitions = slices.Insert(n.Partitions, i, p)
		}
	}
	return n, nil
}

// EndRequest is an EndTxn request.
type EndRequest struct {
	ProducerID int64
	Epoch      int16
	Commit     bool
	// V2 is set for EndTxn version 5 and later (transaction version 2): the
	// coordinator bumps the epoch when it ends a transaction and answers
	// with the new id and epoch (Reference: KIP-890 part 2).
	V2 bool
}

// EndTxn answers an EndTxn request. Ending an Ongoing transaction moves it
// to PrepareCommit or PrepareAbort; the caller writes the markers and then
// calls CompleteEnd. A retry of an end that already completed returns m
// unchanged and no error, as Kafka answers it. newPID is called only when a
// version 2 end exhausts the epoch.
func (m TxnMetadata) EndTxn(req EndRequest, newPID func() int64, now int64) (TxnMetadata, error) {
	if m.State == TxnDead {
		return m, ErrInvalidProducerIDMapping
	}
	if !req.V2 {
		return m.endV1(req, now)
	}
	return m.endV2(req, newPID, now)
}

// endV1 is EndTxn before version 5: the epoch must match exactly
// (Reference: KIP-98, KIP-588 for PRODUCER_FENCED).
func (m TxnMetadata) endV1(req EndRequest, now int64) (TxnMetadata, error) {
	switch {
	case m.ProducerID != req.ProducerID:
		return m, ErrInvalidProducerIDMapping
	case m.ProducerEpoch != req.Epoch:
		return m, ErrProducerFenced
	}
	return m.end(req, false, nil, now)
}

// endV2 is EndTxn version 5 and later. The epoch is bumped when the
// transaction ends, so a retry of an end arrives with the epoch before the
// bump (or, after a rotation, with the old id at the exhausted epoch) and
// is recognised as one (Reference: KIP-890 part 2).
func (m TxnMetadata) endV2(req EndRequest, newPID func() int64, now int64) (TxnMetadata, error) {
	retryOnOverflow := m.LastProducerID == req.ProducerID && req.ProducerID != NoProducerID &&
		m.ProducerEpoch == 0 && req.Epoch == m.LastProducerEpoch && isEpochExhausted(req.Epoch+1)
	retryOnBump := m.ProducerID == req.ProducerID && m.LastProducerEpoch == req.Epoch &&
		m.ProducerEpoch == req.Epoch+1
	retry := retryOnOverflow || retryOnBump
	switch {
	case m.ProducerID != req.ProducerID && !retryOnOverflow:
		return m, ErrInvalidProducerIDMapping
	case !retry && m.ProducerEpoch != req.Epoch:
		return m, ErrProducerFenced
	case retry && (m.State == TxnOngoing || m.State == TxnEmpty):
		// A new transaction began under the bumped epoch, or the producer
		// initialised again since (KIP-360 recovery): the old epoch's end
		// is no retry of this state's end and must not end or bump it
		// (Reference: Kafka TransactionCoordinator.handleEndTransaction,
		// which asks Ongoing and Empty for the current epoch).
		return m, ErrProducerFenced
	}
	return m.end(req, retry, newPID, now)
}

// end applies an EndTxn whose producer id and epoch were accepted.
func (m TxnMetadata) end(req EndRequest, retry bool, newPID func() int64, now int64) (TxnMetadata, error) {
	invalid := func() (TxnMetadata, error) {
		what := "abort"
		if req.Commit {
			what = "commit"
		}
		return m, fmt.Errorf("%w: %s in %s", ErrInvalidTxnState, what, m.State)
	}
	switch m.State {
	case TxnOngoing:
		if req.Commit {
			return m.prepareEnd(TxnPrepareCommit, req.V2, newPID, now)
		}
		return m.prepareEnd(TxnPrepareAbort, req.V2, newPID, now)
	case TxnCompleteCommit:
		if req.Commit && (retry || !req.V2) {
			return m, nil // a retried commit
		}
		if !req.Commit && req.V2 && !retry {
			return m.prepareEnd(TxnPrepareAbort, true, newPID, now) // an empty abort
		}
		return invalid()
	case TxnCompleteAbort:
		if !req.Commit && (retry || !req.V2) {
			return m, nil // a retried abort
		}
		if !req.Commit && req.V2 {
			return m.prepareEnd(TxnPrepareAbort, true, newPID, now) // an empty abort
		}
		return invalid()
	case TxnPrepareCommit:
		if req.Commit {
			return m, ErrConcurrentTransactions
		}
		return invalid()
	case TxnPrepareAbort:
		if !req.Commit {
			return m, ErrConcurrentTransactions
		}
		return invalid()
	case TxnEmpty:
		if !req.Commit && req.V2 {
			// Reference: KIP-890 part 2: with transaction version 2 a
			// producer may abort when it added no partitions.
			return m.prepareEnd(TxnPrepareAbort, true, newPID, now)
		}
		return invalid()
	}
	return invalid()
}

// prepareEnd moves to PrepareCommit or PrepareAbort. With v2 the epoch is
// bumped, and when the bump reaches an exhausted epoch a new producer id
// is allocated for CompleteEnd to rotate to (Reference: KIP-890 part 2).
func (m TxnMetadata) prepareEnd(s TxnState, v2 bool, newPID func() int64, now int64) (TxnMetadata, error) {
	if v2 && m.ProducerEpoch == math.MaxInt16 {
		return m, ErrInvalidProducerEpoch
	}
	n, err := m.to(s, now)
	if err != nil {
		return m, err
	}
	n.V2 = v2
	if v2 {
		n.LastProducerEpoch = m.ProducerEpoch
		n.ProducerEpoch = m.ProducerEpoch + 1
		if isEpochExhausted(n.ProducerEpoch) {
			n.NextProducerID = newPID()
		}
	}
	return n, nil
}

// CompleteEnd records that the markers of a PrepareCommit or PrepareAbort
// transaction are written: the state becomes CompleteCommit or
// CompleteAbort and the partitions are cleared. A pending rotation to
// NextProducerID happens here, at epoch 0.
func (m TxnMetadata) CompleteEnd(now int64) (TxnMetadata, error) {
	var s TxnState
	switch m.State {
	case TxnPrepareCommit:
		s = TxnCompleteCommit
	case TxnPrepareAbort:
		s = TxnCompleteAbort
	default:
		return m, fmt.Errorf("%w: complete in %s", ErrInvalidTxnState, m.State)
	}
	n, err := m.to(s, now)
	if err != nil {
		return m, err
	}
	n.Partitions = nil
	if m.NextProducerID != NoProducerID {
		n.LastProducerID = m.ProducerID
		n.LastProducerEpoch = m.LastProducerEpoch
		n.ProducerID = m.NextProducerID
		n.ProducerEpoch = 0
		n.NextProducerID = NoProducerID
	}
	return n, nil
}

// TimedOut reports whether m is an Ongoing transaction that has run past
// its timeout at now.
func (m TxnMetadata) TimedOut(now int64) bool {
	return m.State == TxnOngoing && m.TxnStartMs+int64(m.TimeoutMs) < now
}

// AbortTimedOut fences the producer of a timed-out Ongoing transaction and
// starts its abort: the result is in PrepareAbort with the epoch bumped
// (Reference: Kafka TransactionCoordinator.abortTimedOutTransactions).
// It returns m unchanged and false when m has not timed out.
func (m TxnMetadata) AbortTimedOut(now int64) (TxnMetadata, bool, error) {
	if !m.TimedOut(now) {
		return m, false, nil
	}
	f, err := m.fence(now)
	if err != nil {
		return m, false, err
	}
	a, err := f.abortFenced(now)
	if err != nil {
		return m, false, err
	}
	return a, true, nil
}

// Expire moves to Dead a transactional id with no transaction in progress
// whose metadata was last updated at least ExpirationMs before now
// (Reference: Kafka transactional.id.expiration.ms,
// TransactionStateManager.removeExpiredTransactionalIds). It returns m
// unchanged and false otherwise. The caller then removes the id.
func (m TxnMetadata) Expire(cfg CoordinatorConfig, now int64) (TxnMetadata, bool) {
	switch m.State {
	case TxnEmpty, TxnCompleteCommit, TxnCompleteAbort:
	default:
		return m, false
	}
	if m.LastUpdateMs > now-cfg.ExpirationMs {
		return m, false
	}
	n, err := m.to(TxnDead, now)
	if err != nil {
		return m, false
	}
	return n, true
}
