package txn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"sort"
	"sync"
	"time"
	"unicode/utf16"
)

// Sentinel errors of the coordinator runtime. The broker maps them:
// ErrNotCoordinator -> NOT_COORDINATOR (16),
// ErrCoordinatorLoadInProgress -> COORDINATOR_LOAD_IN_PROGRESS (14),
// ErrCoordinatorNotAvailable -> COORDINATOR_NOT_AVAILABLE (15),
// ErrTransactionalIDNotFound -> TRANSACTIONAL_ID_NOT_FOUND (105).
var (
	ErrNotCoordinator            = errors.New("txn: not the transaction coordinator")
	ErrCoordinatorLoadInProgress = errors.New("txn: transaction coordinator is loading")
	ErrCoordinatorNotAvailable   = errors.New("txn: transaction coordinator not available")
	ErrTransactionalIDNotFound   = errors.New("txn: transactional id not found")
)

// Log is one __transaction_state partition as the coordinator needs it.
// The broker implements it over its replica of the partition.
type Log interface {
	// Append writes one record (a nil value is a tombstone) and returns
	// once it is committed, or fails. A replica that is no longer the
	// leader fails with an error wrapping ErrNotCoordinator.
	Append(ctx context.Context, key, value []byte) error
	// Replay calls fn for every record of the partition, in offset order.
	Replay(ctx context.Context, fn func(key, value []byte) error) error
}

// MarkerRequest asks for the COMMIT or ABORT marker of one producer's
// transaction in each of Partitions.
type MarkerRequest struct {
	TransactionalID  string
	ProducerID       int64
	ProducerEpoch    int16
	Commit           bool
	CoordinatorEpoch int32 // the leader epoch of the __transaction_state partition
	Partitions       []TopicPartition
}

// MarkerWriter writes transaction markers. The broker implements it.
type MarkerWriter interface {
	// WriteMarkers blocks until the marker of every partition of req is
	// durable or has failed, and returns the failures by partition (a
	// partition absent from the map is done). A partition whose topic no
	// longer exists counts as done, as in Kafka. The coordinator retries
	// the failed partitions.
	WriteMarkers(ctx context.Context, req MarkerRequest) map[TopicPartition]error
}

// Config configures a Coordinator.
type Config struct {
	NumPartitions int32 // transaction.state.log.num.partitions
	MaxTimeoutMs  int32 // transaction.max.timeout.ms
	ExpirationMs  int64 // transactional.id.expiration.ms
	// AbortTimedOutInterval is transaction.abort.timed.out.transaction.cleanup.interval.ms.
	AbortTimedOutInterval time.Duration
	// RemoveExpiredInterval is transaction.remove.expired.transaction.cleanup.interval.ms.
	RemoveExpiredInterval time.Duration
	// AppendTimeout bounds one write of __transaction_state; a stalled ISR
	// holds a transactional id at most this long.
	AppendTimeout time.Duration
	// MarkerRetryBackoff is the wait before markers that failed are sent
	// again.
	MarkerRetryBackoff time.Duration
	// NewProducerID allocates a producer id unique in the cluster.
	NewProducerID func(ctx context.Context) (int64, error)
	Markers       MarkerWriter
	Now           func() time.Time
	Logger        *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.NumPartitions <= 0 {
		c.NumPartitions = 50
	}
	if c.MaxTimeoutMs <= 0 {
		c.MaxTimeoutMs = 900000
	}
	if c.ExpirationMs <= 0 {
		c.ExpirationMs = 604800000
	}
	if c.AbortTimedOutInterval <= 0 {
		c.AbortTimedOutInterval = 10 * time.Second
	}
	if c.RemoveExpiredInterval <= 0 {
		c.RemoveExpiredInterval = time.Hour
	}
	if c.AppendTimeout <= 0 {
		c.AppendTimeout = 30 * time.Second
	}
	if c.MarkerRetryBackoff <= 0 {
		c.MarkerRetryBackoff = 100 * time.Millisecond
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Partition returns the __transaction_state partition of a transactional
// id: abs(javaHashCode(id)) % numPartitions, where abs of the smallest
// int32 is 0 (Reference: Kafka TransactionStateManager.partitionFor,
// Utils.abs).
func Partition(id string, numPartitions int32) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(id)) {
		h = 31*h + int32(u)
	}
	switch {
	case h == -1<<31:
		h = 0
	case h < 0:
		h = -h
	}
	return h % numPartitions
}

// partState is a loaded (or loading) __transaction_state partition.
type partState struct {
	log     Log
	epoch   int32 // coordinator epoch: the partition's leader epoch
	loading bool
	// ctx ends when the partition is unloaded: marker retries and
	// appends for it stop.
	ctx    context.Context
	cancel context.CancelFunc
}

// entry is one transactional id served here.
type entry struct {
	id string
	ps *partState
	// mu guards the fields below. It is held across the Log.Append of a
	// new metadata value, so that an id's records reach the log in the
	// order its state changed, and the value is installed only once
	// durable.
	mu      sync.Mutex
	m       TxnMetadata
	exists  bool // m was loaded or stored; false for an id being created
	removed bool // unloaded or expired: look the id up again
}

// Coordinator is the transaction coordinator of one broker: it serves the
// transactional ids of the __transaction_state partitions it loaded. It is
// safe for concurrent use.
//
// Lock order: Coordinator.mu is never held while taking an entry's mu;
// entry.mu -> Log.Append (the replica's append lock).
type Coordinator struct {
	cfg Config

	mu struct {
		sync.Mutex
		closed bool
		parts  map[int32]*partState
		ids    map[string]*entry
	}

	// lifetime is cancelled by Close (stop): the timer goroutine, the
	// marker goroutines and every Log.Append in flight end with it.
	lifetime   context.Context
	stop       context.CancelFunc
	goroutines sync.WaitGroup
	closeOnce  sync.Once
}

// NewCoordinator returns a coordinator with no partition loaded. It starts
// one timer goroutine (timed-out transactions, expired ids); Close stops
// it.
func NewCoordinator(cfg Config) *Coordinator {
	c := &Coordinator{cfg: cfg.withDefaults()}
	c.lifetime, c.stop = context.WithCancel(context.Background())
	c.mu.parts = map[int32]*partState{}
	c.mu.ids = map[string]*entry{}
	c.goAttach(c.runTimers)
	return c
}

// Close stops the timer and marker goroutines and cancels the appends in
// flight. Transactions whose markers were not all written stay in
// PrepareCommit or PrepareAbort in the log; the next coordinator finishes
// them. It is idempotent and returns once the goroutines exited.
func (c *Coordinator) Close() error {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.mu.closed = true
		ids := c.mu.ids
		c.mu.ids = map[string]*entry{}
		for _, ps := range c.mu.parts {
			ps.cancel()
		}
		c.mu.parts = map[int32]*partState{}
		c.mu.Unlock()
		c.stop()
		c.goroutines.Wait()
		for _, e := range ids {
			e.mu.Lock()
			e.removed = true
			e.mu.Unlock()
		}
	})
	return nil
}

// goAttach runs f in a goroutine owned by the coordinator; f must return
// once c.lifetime is done. It reports false once Close has begun.
func (c *Coordinator) goAttach(f func()) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.closed {
		return false
	}
	// NB: Add under c.mu, which Close takes before it waits.
	c.goroutines.Add(1)
	go func() {
		defer c.goroutines.Done()
		f()
	}()
	return true
}

func (c *Coordinator) nowMs() int64 { return c.cfg.Now().UnixMilli() }

// Load replays a __transaction_state partition that this broker now leads
// at leader epoch epoch and serves its ids. Calls for its ids get
// ErrCoordinatorLoadInProgress meanwhile. Transactions found in
// PrepareCommit, PrepareAbort or PrepareEpochFence are then driven to
// completion in the background (their markers sent again). A partition
// already loaded at another epoch is unloaded first. It blocks until the
// replay ends; a record that does not decode fails the load.
func (c *Coordinator) Load(ctx context.Context, part int32, epoch int32, log Log) error {
	c.mu.Lock()
	if c.mu.closed {
		c.mu.Unlock()
		return ErrNotCoordinator
	}
	if old := c.mu.parts[part]; old != nil {
		c.unloadLocked(part, old)
	}
	ps := &partState{log: log, epoch: epoch, loading: true}
	ps.ctx, ps.cancel = context.WithCancel(c.lifetime)
	c.mu.parts[part] = ps
	c.mu.Unlock()

	loaded := map[string]TxnMetadata{}
	err := log.Replay(ctx, func(key, value []byte) error {
		id, m, ok, err := DecodeRecord(key, value)
		if err != nil {
			return err
		}
		if !ok {
			delete(loaded, id)
			return nil
		}
		loaded[id] = m
		return nil
	})
	c.mu.Lock()
	if c.mu.parts[part] != ps {
		c.mu.Unlock()
		return ErrNotCoordinator // unloaded while loading
	}
	if err != nil {
		c.unloadLocked(part, ps)
		c.mu.Unlock()
		return fmt.Errorf("txn: load __transaction_state-%d: %w", part, err)
	}
	var pending []*entry
	for id, m := range loaded {
		if m.State == TxnDead {
			continue
		}
		e := &entry{id: id, ps: ps, m: m, exists: true}
		c.mu.ids[id] = e
		switch m.State {
		case TxnPrepareCommit, TxnPrepareAbort, TxnPrepareEpochFence:
			pending = append(pending, e)
		}
	}
	ps.loading = false
	c.mu.Unlock()
	for _, e := range pending {
		e.mu.Lock()
		if e.m.State == TxnPrepareEpochFence {
			// Kafka never stores this state; a log that has it gets the
			// abort that follows a fence.
			if n, err := e.m.abortFenced(c.nowMs()); err == nil {
				if err := c.storeLocked(e, n); err != nil {
					c.cfg.Logger.Warn("txn: abort after fence on load", "transactional_id", e.id, "err", err)
				}
			}
		}
		if e.m.State == TxnPrepareCommit || e.m.State == TxnPrepareAbort {
			c.startCompletionLocked(e)
		}
		e.mu.Unlock()
	}
	c.cfg.Logger.Info("txn: loaded __transaction_state partition", "partition", part, "transactional_ids", len(loaded), "completing", len(pending))
	return nil
}

// Unload stops serving a partition (its leadership moved). Marker writes
// for its transactions stop; the new coordinator finishes them.
func (c *Coordinator) Unload(part int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ps := c.mu.parts[part]; ps != nil {
		c.unloadLocked(part, ps)
		c.cfg.Logger.Info("txn: unloaded __transaction_state partition", "partition", part)
	}
}

func (c *Coordinator) unloadLocked(part int32, ps *partState) {
	ps.cancel()
	delete(c.mu.parts, part)
	for id, e := range c.mu.ids {
		if e.ps == ps {
			delete(c.mu.ids, id)
			// NB: removed is set under e.mu by whoever next locks e
			// (locked checks ps.ctx); marking it here would take e.mu
			// under c.mu.
		}
	}
}

// lookup finds (or with create makes) the entry of an id. It returns a
// nil entry and nil error for an unknown id when create is false.
func (c *Coordinator) lookup(id string, create bool) (*entry, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.closed {
		return nil, ErrNotCoordinator
	}
	ps := c.mu.parts[Partition(id, c.cfg.NumPartitions)]
	switch {
	case ps == nil:
		return nil, ErrNotCoordinator
	case ps.loading:
		return nil, ErrCoordinatorLoadInProgress
	}
	e := c.mu.ids[id]
	if e == nil && create {
		e = &entry{id: id, ps: ps}
		c.mu.ids[id] = e
	}
	return e, nil
}

// locked returns the id's entry with its mu held, or nil (and nil error)
// for an unknown id when create is false.
func (c *Coordinator) locked(id string, create bool) (*entry, error) {
	for {
		e, err := c.lookup(id, create)
		if err != nil || e == nil {
			return nil, err
		}
		e.mu.Lock()
		if e.ps.ctx.Err() != nil {
			e.removed = true
		}
		if !e.removed {
			return e, nil
		}
		e.mu.Unlock()
		c.forget(e)
		runtime.Gosched()
	}
}

// forget removes an entry from the map if it is still there.
func (c *Coordinator) forget(e *entry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.ids[e.id] == e {
		delete(c.mu.ids, e.id)
	}
}

// Owns returns nil when the id's partition is loaded here,
// ErrCoordinatorLoadInProgress while it loads, else ErrNotCoordinator.
func (c *Coordinator) Owns(id string) error {
	_, err := c.lookup(id, false)
	return err
}

// storeLocked appends n for e and installs it once durable. e.mu must be
// held. A failed append leaves e.m as it was and returns
// ErrNotCoordinator (the partition moved) or ErrCoordinatorNotAvailable.
func (c *Coordinator) storeLocked(e *entry, n TxnMetadata) error {
	ctx, cancel := context.WithTimeout(e.ps.ctx, c.cfg.AppendTimeout)
	defer cancel()
	err := e.ps.log.Append(ctx, EncodeKey(e.id), EncodeValue(n))
	switch {
	case err == nil && e.ps.ctx.Err() == nil:
	case err == nil, errors.Is(err, ErrNotCoordinator), e.ps.ctx.Err() != nil:
		// Reference: Kafka TransactionStateManager.appendTransactionToLog:
		// a coordinator that lost the partition answers NOT_COORDINATOR.
		e.removed = true
		return ErrNotCoordinator
	default:
		return fmt.Errorf("%w: %w", ErrCoordinatorNotAvailable, err)
	}
	e.m, e.exists = n, true
	return nil
}

func (m TxnMetadata) equal(o TxnMetadata) bool {
	return m.TransactionalID == o.TransactionalID && m.ProducerID == o.ProducerID &&
		m.LastProducerID == o.LastProducerID && m.ProducerEpoch == o.ProducerEpoch &&
		m.LastProducerEpoch == o.LastProducerEpoch && m.NextProducerID == o.NextProducerID &&
		m.TimeoutMs == o.TimeoutMs && m.State == o.State && m.TxnStartMs == o.TxnStartMs &&
		m.LastUpdateMs == o.LastUpdateMs && m.V2 == o.V2 && slices.Equal(m.Partitions, o.Partitions)
}

// pidAllocator wraps NewProducerID for the pure transitions, which take a
// func that cannot fail: the first error is kept and the id is -1.
type pidAllocator struct {
	ctx   context.Context
	alloc func(context.Context) (int64, error)
	err   error
}

func (a *pidAllocator) next() int64 {
	id, err := a.alloc(a.ctx)
	if err != nil {
		if a.err == nil {
			a.err = fmt.Errorf("%w: allocate producer id: %w", ErrCoordinatorNotAvailable, err)
		}
		return NoProducerID
	}
	return id
}

// InitProducerID answers InitProducerId for a transactional id and
// returns the producer id and epoch to use. An id with an Ongoing
// transaction has it fenced and aborted, and ErrConcurrentTransactions
// comes back so the producer retries (Reference: Kafka
// TransactionCoordinator.handleInitProducerId). It blocks while the new
// metadata is written.
func (c *Coordinator) InitProducerID(ctx context.Context, id string, req InitRequest) (int64, int16, error) {
	e, err := c.locked(id, true)
	if err != nil {
		return NoProducerID, NoProducerEpoch, err
	}
	defer e.mu.Unlock()
	var cur *TxnMetadata
	if e.exists {
		cur = &e.m
	}
	alloc := &pidAllocator{ctx: ctx, alloc: c.cfg.NewProducerID}
	cfg := CoordinatorConfig{MaxTimeoutMs: c.cfg.MaxTimeoutMs, ExpirationMs: c.cfg.ExpirationMs}
	n, err := InitProducerID(cur, id, req, cfg, alloc.next, c.nowMs())
	if alloc.err != nil {
		err = alloc.err
	}
	fenced := errors.Is(err, ErrConcurrentTransactions) && n.State == TxnPrepareAbort && cur != nil && cur.State == TxnOngoing
	if err != nil && !fenced {
		if !e.exists {
			e.removed = true
			c.forget(e)
		}
		return NoProducerID, NoProducerEpoch, err
	}
	if !e.exists || !n.equal(e.m) {
		if serr := c.storeLocked(e, n); serr != nil {
			if !e.exists {
				e.removed = true
				c.forget(e)
			}
			return NoProducerID, NoProducerEpoch, serr
		}
	}
	if fenced {
		c.cfg.Logger.Info("txn: producer fenced; aborting its ongoing transaction", "transactional_id", id,
			"producer_id", cur.ProducerID, "fenced_epoch", cur.ProducerEpoch, "epoch", n.ProducerEpoch, "partitions", len(cur.Partitions))
		c.startCompletionLocked(e)
		return NoProducerID, NoProducerEpoch, ErrConcurrentTransactions
	}
	if cur != nil && (cur.ProducerID != e.m.ProducerID || cur.ProducerEpoch != e.m.ProducerEpoch) && cur.State != TxnEmpty {
		c.cfg.Logger.Info("txn: producer epoch bumped; older instances are fenced", "transactional_id", id,
			"prev_producer_id", cur.ProducerID, "prev_epoch", cur.ProducerEpoch, "producer_id", e.m.ProducerID, "epoch", e.m.ProducerEpoch)
	}
	return e.m.ProducerID, e.m.ProducerEpoch, nil
}

// AddPartitions adds partitions to the transaction of producer pid at
// epoch (AddPartitionsToTxn, AddOffsetsToTxn). It blocks while the new
// metadata is written.
func (c *Coordinator) AddPartitions(ctx context.Context, id string, pid int64, epoch int16, parts []TopicPartition) error {
	e, err := c.locked(id, false)
	if err != nil {
		return err
	}
	if e == nil {
		return ErrInvalidProducerIDMapping
	}
	defer e.mu.Unlock()
	n, err := e.m.AddPartitions(pid, epoch, parts, c.nowMs())
	if err != nil {
		return err
	}
	if n.equal(e.m) {
		return nil
	}
	return c.storeLocked(e, n)
}

// VerifyPartitions reports, for each partition, whether it is in the
// ongoing transaction of producer pid at epoch (AddPartitionsToTxn with
// VerifyOnly, KIP-890 part 1). The error is for the whole request
// (Reference: Kafka TransactionCoordinator.handleVerifyPartitionsInTransaction).
func (c *Coordinator) VerifyPartitions(id string, pid int64, epoch int16, parts []TopicPartition) (map[TopicPartition]bool, error) {
	e, err := c.locked(id, false)
	if err != nil {
		return nil, err
	}
	if e == nil {
		return nil, ErrInvalidProducerIDMapping
	}
	defer e.mu.Unlock()
	switch {
	case e.m.ProducerID != pid || e.m.State == TxnDead:
		return nil, ErrInvalidProducerIDMapping
	case e.m.ProducerEpoch != epoch:
		return nil, ErrProducerFenced
	case e.m.State == TxnPrepareCommit || e.m.State == TxnPrepareAbort:
		return nil, ErrConcurrentTransactions
	}
	out := make(map[TopicPartition]bool, len(parts))
	for _, p := range parts {
		_, in := slices.BinarySearchFunc(e.m.Partitions, p, compareTP)
		out[p] = in && e.m.State == TxnOngoing
	}
	return out, nil
}

// EndTxn ends the transaction of an id: it writes PrepareCommit or
// PrepareAbort and returns once that is durable, with the producer id and
// epoch the producer goes on with; the markers are written in the
// background, then CompleteCommit or CompleteAbort (Reference: Kafka
// TransactionCoordinator.handleEndTransaction).
func (c *Coordinator) EndTxn(ctx context.Context, id string, req EndRequest) (int64, int16, error) {
	e, err := c.locked(id, false)
	if err != nil {
		return NoProducerID, NoProducerEpoch, err
	}
	if e == nil {
		return NoProducerID, NoProducerEpoch, ErrInvalidProducerIDMapping
	}
	defer e.mu.Unlock()
	alloc := &pidAllocator{ctx: ctx, alloc: c.cfg.NewProducerID}
	n, err := e.m.EndTxn(req, alloc.next, c.nowMs())
	if alloc.err != nil {
		err = alloc.err
	}
	if err != nil {
		return NoProducerID, NoProducerEpoch, err
	}
	if !n.equal(e.m) {
		if err := c.storeLocked(e, n); err != nil {
			return NoProducerID, NoProducerEpoch, err
		}
		c.startCompletionLocked(e)
	}
	if e.m.NextProducerID != NoProducerID {
		return e.m.NextProducerID, 0, nil
	}
	return e.m.ProducerID, e.m.ProducerEpoch, nil
}

// startCompletionLocked starts the goroutine that writes the markers of
// e's PrepareCommit or PrepareAbort transaction and then stores
// CompleteCommit or CompleteAbort. e.mu must be held.
func (c *Coordinator) startCompletionLocked(e *entry) {
	prep := e.m
	ps := e.ps
	c.goAttach(func() { c.complete(ps, e, prep) })
}

// complete writes the markers of prep until all are written, retrying the
// failed partitions with a backoff until the partition is unloaded, then
// stores the completed state if e still holds prep.
func (c *Coordinator) complete(ps *partState, e *entry, prep TxnMetadata) {
	ctx := ps.ctx
	remaining := prep.Partitions
	backoff := c.cfg.MarkerRetryBackoff
	wait := func() bool {
		t := time.NewTimer(backoff)
		defer t.Stop()
		backoff = min(2*backoff, 10*c.cfg.MarkerRetryBackoff)
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
			return true
		}
	}
	for len(remaining) > 0 {
		if ctx.Err() != nil {
			return
		}
		errs := c.cfg.Markers.WriteMarkers(ctx, MarkerRequest{
			TransactionalID:  prep.TransactionalID,
			ProducerID:       prep.ProducerID,
			ProducerEpoch:    prep.ProducerEpoch,
			Commit:           prep.State == TxnPrepareCommit,
			CoordinatorEpoch: ps.epoch,
			Partitions:       remaining,
		})
		var failed []TopicPartition
		for _, p := range remaining {
			if err := errs[p]; err != nil {
				failed = append(failed, p)
				c.cfg.Logger.Debug("txn: marker not written; retrying", "transactional_id", prep.TransactionalID,
					"topic", p.Topic, "partition", p.Partition, "err", err)
			}
		}
		remaining = failed
		if len(remaining) > 0 && !wait() {
			return
		}
	}
	for {
		e.mu.Lock()
		if e.removed || ctx.Err() != nil || !e.m.equal(prep) {
			e.mu.Unlock()
			return
		}
		n, err := e.m.CompleteEnd(c.nowMs())
		if err == nil {
			err = c.storeLocked(e, n)
		}
		e.mu.Unlock()
		if err == nil || errors.Is(err, ErrNotCoordinator) {
			return
		}
		c.cfg.Logger.Warn("txn: storing completed transaction; retrying", "transactional_id", prep.TransactionalID, "err", err)
		if !wait() {
			return
		}
	}
}

// runTimers aborts timed-out transactions and expires ids until Close.
func (c *Coordinator) runTimers() {
	abort := time.NewTicker(c.cfg.AbortTimedOutInterval)
	defer abort.Stop()
	expire := time.NewTicker(c.cfg.RemoveExpiredInterval)
	defer expire.Stop()
	for {
		if c.lifetime.Err() != nil {
			return
		}
		select {
		case <-c.lifetime.Done():
			return
		case <-abort.C:
			c.abortTimedOut()
		case <-expire.C:
			c.expireIDs()
		}
	}
}

func (c *Coordinator) snapshot() []*entry {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*entry, 0, len(c.mu.ids))
	for _, e := range c.mu.ids {
		out = append(out, e)
	}
	return out
}

// abortTimedOut fences and aborts every Ongoing transaction past its
// timeout (Reference: Kafka TransactionCoordinator.abortTimedOutTransactions).
func (c *Coordinator) abortTimedOut() {
	for _, e := range c.snapshot() {
		if c.lifetime.Err() != nil {
			return
		}
		e.mu.Lock()
		if !e.removed && e.exists && e.ps.ctx.Err() == nil {
			n, ok, err := e.m.AbortTimedOut(c.nowMs())
			switch {
			case err != nil:
				c.cfg.Logger.Warn("txn: abort timed-out transaction", "transactional_id", e.id, "err", err)
			case ok:
				if err := c.storeLocked(e, n); err != nil {
					c.cfg.Logger.Warn("txn: abort timed-out transaction", "transactional_id", e.id, "err", err)
				} else {
					c.cfg.Logger.Info("txn: aborting timed-out transaction", "transactional_id", e.id,
						"producer_id", n.ProducerID, "epoch", n.ProducerEpoch, "partitions", len(n.Partitions), "timeout_ms", n.TimeoutMs)
					c.startCompletionLocked(e)
				}
			}
		}
		e.mu.Unlock()
	}
}

// expireIDs removes ids idle for transactional.id.expiration.ms with no
// transaction in progress, writing their tombstones (Reference: Kafka
// TransactionStateManager.removeExpiredTransactionalIds).
func (c *Coordinator) expireIDs() {
	cfg := CoordinatorConfig{MaxTimeoutMs: c.cfg.MaxTimeoutMs, ExpirationMs: c.cfg.ExpirationMs}
	for _, e := range c.snapshot() {
		if c.lifetime.Err() != nil {
			return
		}
		e.mu.Lock()
		dead := false
		if !e.removed && e.exists && e.ps.ctx.Err() == nil {
			if n, ok := e.m.Expire(cfg, c.nowMs()); ok {
				if err := c.storeLocked(e, n); err != nil {
					c.cfg.Logger.Warn("txn: expire transactional id", "transactional_id", e.id, "err", err)
				} else {
					e.removed, dead = true, true
				}
			}
		}
		e.mu.Unlock()
		if dead {
			c.forget(e)
		}
	}
}

// Describe returns the metadata of an id (DescribeTransactions). The
// caller owns the returned value.
func (c *Coordinator) Describe(id string) (TxnMetadata, error) {
	e, err := c.locked(id, false)
	if err != nil {
		return TxnMetadata{}, err
	}
	if e == nil {
		return TxnMetadata{}, ErrTransactionalIDNotFound
	}
	defer e.mu.Unlock()
	if !e.exists || e.m.State == TxnDead {
		return TxnMetadata{}, ErrTransactionalIDNotFound
	}
	return e.m.clone(), nil
}

// ListFilter selects transactions for List; zero values select all.
type ListFilter struct {
	States      []TxnState
	ProducerIDs []int64
	// MinDurationMs, when >= 0, keeps only transactions that started
	// more than this long ago (KIP-994). -1 disables it.
	MinDurationMs int64
}

// List returns the ids served here that pass f, sorted by id, with
// ErrCoordinatorLoadInProgress when some partition is still loading
// (Reference: Kafka TransactionStateManager.listTransactionStates).
func (c *Coordinator) List(f ListFilter) ([]TxnMetadata, error) {
	c.mu.Lock()
	for _, ps := range c.mu.parts {
		if ps.loading {
			c.mu.Unlock()
			return nil, ErrCoordinatorLoadInProgress
		}
	}
	c.mu.Unlock()
	now := c.nowMs()
	var out []TxnMetadata
	for _, e := range c.snapshot() {
		e.mu.Lock()
		m, ok := e.m, e.exists && !e.removed && e.m.State != TxnDead
		e.mu.Unlock()
		switch {
		case !ok:
		case len(f.ProducerIDs) > 0 && !slices.Contains(f.ProducerIDs, m.ProducerID):
		case len(f.States) > 0 && !slices.Contains(f.States, m.State):
		case f.MinDurationMs >= 0 && now-m.TxnStartMs <= f.MinDurationMs:
		default:
			out = append(out, m.clone())
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].TransactionalID < out[j].TransactionalID })
	return out, nil
}

// ParseState returns the state with Kafka's name s.
func ParseState(s string) (TxnState, bool) {
	for i, n := range txnStateNames {
		if n == s {
			return TxnState(i), true
		}
	}
	return 0, false
}
