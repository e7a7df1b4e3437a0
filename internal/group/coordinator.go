package group

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// reply is what a blocked JoinGroup or SyncGroup call receives.
type reply struct {
	join JoinGroupResult
	sync SyncGroupResult
	err  error
}

// entry is a served group with the runtime state around it.
type entry struct {
	part int32
	log  Log
	// mu guards the fields below and is held across the Log.Append of the
	// group's records, so that a group's records reach the log in the order
	// its state changed (Kafka's group lock).
	mu sync.Mutex
	g  *Group
	// cg is the group's KIP-848 state when it is a consumer group (nil
	// for a classic group); g then only holds its offsets.
	cg      *ConsumerGroup
	removed bool // deleted or unloaded: look the group up again
	waiters map[Waiter]chan reply
	// logged is the state and generation the log last reported.
	logged struct {
		state      State
		generation int32
	}
}

// newEntry returns the entry of g, which the log has not reported yet.
func newEntry(part int32, log Log, g *Group) *entry {
	e := &entry{part: part, log: log, g: g, waiters: map[Waiter]chan reply{}}
	e.logged.state, e.logged.generation = g.State(), g.Generation()
	return e
}

type partState struct {
	log     Log
	loading bool
	loaded  chan struct{} // closed when the load ends, however it ends
}

// Coordinator serves the groups of the __consumer_offsets partitions it has
// loaded. It is safe for concurrent use.
//
// Lock order: Coordinator.mu is never held while taking an entry's mu.
type Coordinator struct {
	cfg  Config
	gcfg GroupConfig

	nextWaiter atomic.Uint64
	// rebalances counts the rebalances that ended (metrics).
	rebalances atomic.Int64
	// wake is the unix nanos of the timer goroutine's next wake-up; a call
	// that makes a group deadline earlier kicks the goroutine.
	// While the goroutine looks at the groups it is math.MaxInt64, so
	// that every call kicks: a deadline made earlier after the goroutine
	// read it must not wait for the wake-up planned from the old one.
	wake atomic.Int64

	mu struct {
		sync.Mutex
		closed bool
		parts  map[int32]*partState
		groups map[string]*entry
	}

	// txns indexes open transactions: by __consumer_offsets partition and
	// producer id, the groups that may have pending offsets of it, so that
	// a marker visits those groups only. An entry may be stale (the group
	// has none left); a group with pending offsets always has one. It is a
	// leaf lock: taken under Coordinator.mu or an entry's mu, never the
	// other way round.
	txns struct {
		sync.Mutex
		open map[int32]map[int64]map[string]bool
	}

	kick chan struct{} // asks the timer goroutine to recompute its wake-up

	// lifetime is the coordinator's own context. Close cancels it (stop):
	// that asks the timer goroutine to exit and ends every Log.Append in
	// flight, which all derive from it, so Close never waits on a stalled
	// log.
	lifetime context.Context
	stop     context.CancelFunc
	// goroutines counts the goroutines started by goAttach; Close waits
	// for them.
	goroutines sync.WaitGroup
	closeOnce  sync.Once
}

// NewCoordinator returns a coordinator with no partition loaded. It starts
// one timer goroutine (sessions, rebalance timeouts, the initial rebalance
// delay and offset expiry); Close stops it.
func NewCoordinator(cfg Config) *Coordinator {
	cfg = cfg.withDefaults()
	c := &Coordinator{
		cfg: cfg,
		gcfg: GroupConfig{
			MinSessionTimeout:     cfg.MinSessionTimeout,
			MaxSessionTimeout:     cfg.MaxSessionTimeout,
			InitialRebalanceDelay: cfg.InitialRebalanceDelay,
			MaxSize:               cfg.MaxSize,
			NewMemberID:           newMemberID,
		},
		kick: make(chan struct{}, 1),
	}
	if cfg.newMemberID != nil {
		c.gcfg.NewMemberID = func(string) string { return cfg.newMemberID() }
	}
	c.lifetime, c.stop = context.WithCancel(context.Background())
	c.wake.Store(math.MaxInt64)
	c.mu.parts = map[int32]*partState{}
	c.mu.groups = map[string]*entry{}
	c.txns.open = map[int32]map[int64]map[string]bool{}
	c.goAttach(c.runTimers)
	return c
}

// newMemberID returns clientID-<random UUID v4>, as Kafka makes them.
func newMemberID(clientID string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%s-%x-%x-%x-%x-%x", clientID, b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// Close stops the timer goroutine, cancels the Log.Append calls in flight
// and fails waiting calls with ErrNotCoordinator. It is idempotent and
// returns once the goroutine exited; it does not wait for a Log that ignores
// its context longer than that Log takes.
func (c *Coordinator) Close() error {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.mu.closed = true
		entries := make([]*entry, 0, len(c.mu.groups))
		for _, e := range c.mu.groups {
			entries = append(entries, e)
		}
		c.mu.groups = map[string]*entry{}
		c.mu.parts = map[int32]*partState{}
		c.mu.Unlock()
		c.stop()
		c.goroutines.Wait()
		for _, e := range entries {
			c.drop(e)
		}
	})
	return nil
}

// drop marks an entry removed and fails its waiters with ErrNotCoordinator.
func (c *Coordinator) drop(e *entry) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.removed = true
	for w, ch := range e.waiters {
		ch <- reply{err: ErrNotCoordinator}
		delete(e.waiters, w)
	}
}

// goAttach runs f in a goroutine owned by the coordinator: f must return
// once c.lifetime is done, and Close waits for it. It reports false, and
// does not run f, once Close has begun.
func (c *Coordinator) goAttach(f func()) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.closed {
		return false
	}
	// NB: Add under c.mu, which Close takes to set closed before it waits,
	// so no Add can race with the Wait.
	c.goroutines.Add(1)
	go func() {
		defer c.goroutines.Done()
		f()
	}()
	return true
}

// runTimers is the timer goroutine: it fires group deadlines and the
// offsets retention check until c.lifetime is done.
func (c *Coordinator) runTimers() {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	// NB: the retention check runs on a real ticker, not on c.cfg.Now,
	// so that a frozen test clock still gets its checks.
	retention := time.NewTicker(c.cfg.OffsetsRetentionCheck)
	defer retention.Stop()
	for {
		c.wake.Store(math.MaxInt64)
		now := c.cfg.Now()
		next := c.fireTimers(now)
		wait := time.Hour
		if !next.IsZero() {
			wait = max(next.Sub(now), 0)
		}
		c.wake.Store(now.Add(wait).UnixNano())
		t.Reset(wait)
		// NB: select picks at random among ready cases; check for Close
		// first so that a busy timer cannot delay it.
		if c.lifetime.Err() != nil {
			return
		}
		select {
		case <-c.lifetime.Done():
			return
		case <-c.kick:
		case <-t.C:
		case <-retention.C:
			c.expireOffsets(c.cfg.Now())
		}
	}
}

// appendRecords writes recs to log within offsets.commit.timeout.ms, and
// gives up when ctx ends or the coordinator closes; it returns the offset
// of the first record. Callers hold the group's mu, so the bound is also
// how long a stalled log can hold a group (and the timer goroutine).
func (c *Coordinator) appendRecords(ctx context.Context, log Log, recs []KV) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.OffsetsCommitTimeout)
	defer cancel()
	defer context.AfterFunc(c.lifetime, cancel)()
	return log.Append(ctx, recs)
}

// appendTxnRecords is appendRecords for a transactional batch of producer
// pid at epoch.
func (c *Coordinator) appendTxnRecords(ctx context.Context, log Log, pid int64, epoch int16, guard any, recs []KV) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.OffsetsCommitTimeout)
	defer cancel()
	defer context.AfterFunc(c.lifetime, cancel)()
	return log.AppendTxn(ctx, pid, epoch, guard, recs)
}

// maybeKick wakes the timer goroutine when d is before its planned wake-up.
func (c *Coordinator) maybeKick(d time.Time) {
	if d.IsZero() || d.UnixNano() >= c.wake.Load() {
		return
	}
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

func (c *Coordinator) snapshot() []*entry {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*entry, 0, len(c.mu.groups))
	for _, e := range c.mu.groups {
		out = append(out, e)
	}
	return out
}

// fireTimers ticks every group with a due deadline and returns the
// earliest deadline left.
func (c *Coordinator) fireTimers(now time.Time) time.Time {
	var next time.Time
	for _, e := range c.snapshot() {
		if c.lifetime.Err() != nil {
			return next
		}
		e.mu.Lock()
		if !e.removed {
			if d := e.g.Deadline(); !d.IsZero() && !now.Before(d) {
				c.applyLocked(e, e.g.Tick(now))
			}
			if d := e.deadlineLocked(); !d.IsZero() && !now.Before(d) && e.cg != nil {
				c.tickConsumerLocked(e, now)
			}
			if d := e.deadlineLocked(); !d.IsZero() && (next.IsZero() || d.Before(next)) {
				next = d
			}
		}
		e.mu.Unlock()
	}
	return next
}

// expireOffsets deletes offsets past offsets.retention.minutes and removes
// Empty groups left without offsets.
func (c *Coordinator) expireOffsets(now time.Time) {
	for _, e := range c.snapshot() {
		if c.lifetime.Err() != nil {
			return
		}
		e.mu.Lock()
		if e.removed {
			e.mu.Unlock()
			continue
		}
		g := e.g
		var recs []KV
		var expired []TopicPartition
		if e.cg != nil {
			// Reference: Kafka ConsumerGroup.offsetExpirationCondition
			// and cleanupExpiredOffsets: by commit time, the topics the
			// group subscribes to never.
			expired = g.expiredByCommit(now, c.cfg.OffsetsRetention, e.cg.subscribed)
		} else {
			expired = g.ExpiredOffsets(now, c.cfg.OffsetsRetention)
		}
		for _, tp := range expired {
			recs = append(recs, KV{Key: offsetKey(g.id, tp.Topic, tp.Partition)})
		}
		// NB: a group with an open transaction stays: its commit would
		// bring offsets back into a group that no longer exists.
		dead := g.state == Empty && len(g.offsets) == len(expired) && len(g.pending) == 0 && !g.HasOpenTxns() &&
			(e.cg == nil || e.cg.State() == ConsumerEmpty)
		if dead && e.cg != nil {
			for _, r := range e.cg.Delete().Records {
				recs = append(recs, r.KV())
			}
		} else if dead {
			recs = append(recs, KV{Key: groupKey(g.id)})
		}
		if len(recs) > 0 {
			if _, err := c.appendRecords(c.lifetime, e.log, recs); err != nil {
				c.cfg.Logger.Warn("group: writing expired offsets", "group", g.id, "err", err)
				e.mu.Unlock()
				continue
			}
		}
		for _, tp := range expired {
			g.DeleteOffset(tp.Topic, tp.Partition)
		}
		if len(expired) > 0 {
			c.cfg.Logger.Info("group: expired offsets", "group", g.id, "count", len(expired))
		}
		if dead {
			c.applyLocked(e, g.MarkDead(now))
			e.removed = true
		}
		e.mu.Unlock()
		if dead {
			c.forget(e)
		}
	}
}

// forget removes a dead entry from the map.
func (c *Coordinator) forget(e *entry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.groups[e.g.id] == e {
		delete(c.mu.groups, e.g.id)
	}
}

// lookup finds (or with create makes) the entry of a group. It returns a
// nil entry and nil error for an unknown group when create is false.
func (c *Coordinator) lookup(group string, create bool) (*entry, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.closed {
		return nil, ErrNotCoordinator
	}
	p := Partition(group, c.cfg.OffsetsTopicPartitions)
	ps := c.mu.parts[p]
	switch {
	case ps == nil:
		return nil, ErrNotCoordinator
	case ps.loading:
		return nil, ErrCoordinatorLoadInProgress
	}
	e := c.mu.groups[group]
	if e == nil && create {
		e = newEntry(p, ps.log, NewGroup(group, c.gcfg, c.cfg.Now()))
		c.mu.groups[group] = e
	}
	return e, nil
}

// locked returns the group's entry with its mu held, or nil (and nil
// error) for an unknown group when create is false.
func (c *Coordinator) locked(group string, create bool) (*entry, error) {
	for {
		e, err := c.lookup(group, create)
		if err != nil || e == nil {
			return nil, err
		}
		e.mu.Lock()
		if !e.removed {
			return e, nil
		}
		e.mu.Unlock()
		runtime.Gosched() // the remover is about to take it out of the map
	}
}

// Owns returns nil when the group's partition is loaded here,
// ErrCoordinatorLoadInProgress while it loads, else ErrNotCoordinator.
func (c *Coordinator) Owns(group string) error {
	_, err := c.lookup(group, false)
	return err
}

// storeErr maps a Log failure to the error Kafka returns for it.
func storeErr(err error) error {
	if errors.Is(err, ErrNotCoordinator) {
		return ErrNotCoordinator
	}
	return fmt.Errorf("%w: %w", ErrCoordinatorNotAvailable, err)
}

// applyLocked carries out effects: it stores the group metadata first when
// asked, then answers the waiters. e.mu must be held.
//
// NB: the store runs under the coordinator's lifetime, not the context of
// the request that caused it: a client giving up on its SyncGroup must not
// fail the rebalance of every member.
func (c *Coordinator) applyLocked(e *entry, eff Effects) {
	if eff.Rebalanced {
		c.rebalances.Add(1)
		if c.cfg.OnRebalance != nil {
			c.cfg.OnRebalance(eff.RebalanceTime)
		}
	}
	if eff.Store {
		if _, err := c.appendRecords(c.lifetime, e.log, []KV{e.g.MetadataRecord()}); err != nil {
			c.cfg.Logger.Warn("group: storing group metadata", "group", e.g.id, "err", err)
			serr := storeErr(err)
			for i := range eff.Joins {
				eff.Joins[i].Err = serr
			}
			for i := range eff.Syncs {
				eff.Syncs[i].Err = serr
			}
			more := e.g.StoreFailed(c.cfg.Now())
			eff.Joins = append(eff.Joins, more.Joins...)
			eff.Syncs = append(eff.Syncs, more.Syncs...)
		}
	}
	c.logChangeLocked(e)
	for _, j := range eff.Joins {
		if ch, ok := e.waiters[j.Waiter]; ok {
			ch <- reply{join: j.Result, err: j.Err}
			delete(e.waiters, j.Waiter)
		}
	}
	for _, s := range eff.Syncs {
		if ch, ok := e.waiters[s.Waiter]; ok {
			ch <- reply{sync: s.Result, err: s.Err}
			delete(e.waiters, s.Waiter)
		}
	}
}

// logChangeLocked logs a change of the group's state or generation since
// the last one logged: a rebalance that starts (with its reason), one that
// completes (generation, members, protocol, leader), and any other state
// change. e.mu must be held.
func (c *Coordinator) logChangeLocked(e *entry) {
	g := e.g
	st, gen := g.State(), g.Generation()
	if st == e.logged.state && gen == e.logged.generation {
		return
	}
	prev, prevGen := e.logged.state, e.logged.generation
	e.logged.state, e.logged.generation = st, gen
	log := c.cfg.Logger
	switch {
	case st == PreparingRebalance:
		log.Info("group: preparing to rebalance", "group", g.id, "prev_state", prev.String(), "generation", gen,
			"members", g.Size(), "reason", g.RebalanceReason())
	case gen != prevGen:
		log.Info("group: rebalance completed", "group", g.id, "state", st.String(), "generation", gen,
			"protocol", g.Protocol(), "leader", g.Leader(), "members", g.Members(), "reason", g.RebalanceReason())
	default:
		log.Info("group: state changed", "group", g.id, "state", st.String(), "prev_state", prev.String(), "generation", gen)
	}
}

// park registers a waiter on a locked entry.
func (c *Coordinator) park(e *entry) (Waiter, chan reply) {
	w := Waiter(c.nextWaiter.Add(1))
	ch := make(chan reply, 1)
	e.waiters[w] = ch
	return w, ch
}

// await waits for a parked waiter's reply or ctx.
func (c *Coordinator) await(ctx context.Context, e *entry, w Waiter, ch chan reply) (reply, error) {
	select {
	case r := <-ch:
		return r, r.err
	case <-ctx.Done():
		e.mu.Lock()
		delete(e.waiters, w)
		e.mu.Unlock()
		select {
		case r := <-ch:
			return r, r.err
		default:
		}
		return reply{}, ctx.Err()
	}
}

// JoinGroup joins (or rejoins) a member and blocks until the rebalance
// completes, ctx ends, or the join fails.
func (c *Coordinator) JoinGroup(ctx context.Context, req JoinGroupRequest) (JoinGroupResult, error) {
	if req.Group == "" {
		return JoinGroupResult{MemberID: req.MemberID}, ErrInvalidGroupID
	}
	if req.SessionTimeout < c.cfg.MinSessionTimeout || req.SessionTimeout > c.cfg.MaxSessionTimeout {
		return JoinGroupResult{MemberID: req.MemberID}, ErrInvalidSessionTimeout
	}
	e, err := c.locked(req.Group, req.MemberID == "")
	if err != nil {
		return JoinGroupResult{MemberID: req.MemberID}, err
	}
	if e == nil {
		return JoinGroupResult{MemberID: req.MemberID}, ErrUnknownMemberID
	}
	if e.cg != nil && e.cg.State() != ConsumerEmpty {
		defer e.mu.Unlock()
		res, ch, err := e.cg.ClassicJoin(c.cfg.Now(), c.topics(), req)
		if err == nil {
			err = c.storeConsumerLocked(e, ch)
		}
		if err != nil && !errors.Is(err, ErrMemberIDRequired) {
			return JoinGroupResult{MemberID: req.MemberID}, err
		}
		c.maybeKick(e.deadlineLocked())
		return res, err
	}
	if err := c.leaveConsumerProtocolLocked(e); err != nil {
		e.mu.Unlock()
		return JoinGroupResult{MemberID: req.MemberID}, err
	}
	w, ch := c.park(e)
	c.applyLocked(e, e.g.Join(c.cfg.Now(), req, w))
	d := e.g.Deadline()
	e.mu.Unlock()
	c.maybeKick(d)
	r, err := c.await(ctx, e, w, ch)
	return r.join, err
}

// SyncGroup blocks until the leader's assignment is known (the leader's own
// call stores the group first).
func (c *Coordinator) SyncGroup(ctx context.Context, req SyncGroupRequest) (SyncGroupResult, error) {
	if req.Group == "" {
		return SyncGroupResult{}, ErrInvalidGroupID
	}
	e, err := c.locked(req.Group, false)
	if err != nil {
		return SyncGroupResult{}, err
	}
	if e == nil {
		return SyncGroupResult{}, ErrUnknownMemberID
	}
	if e.cg != nil {
		defer e.mu.Unlock()
		res, ch, err := e.cg.ClassicSync(c.cfg.Now(), c.topics(), req)
		if serr := c.storeConsumerLocked(e, ch); err == nil {
			err = serr
		}
		c.maybeKick(e.deadlineLocked())
		return res, err
	}
	w, ch := c.park(e)
	c.applyLocked(e, e.g.Sync(c.cfg.Now(), req, w))
	d := e.g.Deadline()
	e.mu.Unlock()
	c.maybeKick(d)
	r, err := c.await(ctx, e, w, ch)
	return r.sync, err
}

// Heartbeat keeps a member alive; during a rebalance it returns
// ErrRebalanceInProgress.
func (c *Coordinator) Heartbeat(ctx context.Context, req HeartbeatRequest) error {
	if req.Group == "" {
		return ErrInvalidGroupID
	}
	e, err := c.locked(req.Group, false)
	if err != nil {
		return err
	}
	if e == nil {
		return ErrUnknownMemberID
	}
	defer e.mu.Unlock()
	if e.cg != nil {
		ch, err := e.cg.ClassicHeartbeat(c.cfg.Now(), req)
		if serr := c.storeConsumerLocked(e, ch); err == nil {
			err = serr
		}
		c.maybeKick(e.deadlineLocked())
		return err
	}
	return e.g.Heartbeat(c.cfg.Now(), req)
}

// LeaveGroup removes members. A top-level error fails the whole request;
// otherwise each member has its own outcome.
func (c *Coordinator) LeaveGroup(ctx context.Context, req LeaveGroupRequest) (LeaveGroupResult, error) {
	if req.Group == "" {
		return LeaveGroupResult{}, ErrInvalidGroupID
	}
	e, err := c.locked(req.Group, false)
	if err != nil {
		return LeaveGroupResult{}, err
	}
	if e == nil {
		res := LeaveGroupResult{}
		for _, m := range req.Members {
			res.Members = append(res.Members, LeaveMemberResult{MemberID: m.MemberID, InstanceID: m.InstanceID, Err: ErrUnknownMemberID})
		}
		return res, nil
	}
	if e.cg != nil {
		defer e.mu.Unlock()
		res, ch := e.cg.ClassicLeave(c.cfg.Now(), c.topics(), req)
		if err := c.storeConsumerLocked(e, ch); err != nil {
			return LeaveGroupResult{}, err
		}
		return res, nil
	}
	res, eff, err := e.g.Leave(c.cfg.Now(), req)
	c.applyLocked(e, eff)
	d := e.g.Deadline()
	e.mu.Unlock()
	c.maybeKick(d)
	return res, err
}

func commitResult(req OffsetCommitRequest, err error) OffsetCommitResult {
	var res OffsetCommitResult
	for _, t := range req.Topics {
		te := TopicErrors{Topic: t.Topic, Partitions: make([]PartitionError, 0, len(t.Partitions))}
		for _, p := range t.Partitions {
			te.Partitions = append(te.Partitions, PartitionError{Partition: p.Partition, Err: err})
		}
		res.Topics = append(res.Topics, te)
	}
	return res
}

// OffsetCommit validates and durably stores offsets. A non-nil error is
// also set on every partition of the result; otherwise partitions may fail
// alone (ErrOffsetMetadataTooLarge).
func (c *Coordinator) OffsetCommit(ctx context.Context, req OffsetCommitRequest) (OffsetCommitResult, error) {
	e, err := c.locked(req.Group, req.Generation < 0)
	if err == nil && e == nil {
		// A generation but no group: a member of a generation long gone.
		err = ErrIllegalGeneration
	}
	if err != nil {
		return commitResult(req, err), err
	}
	defer e.mu.Unlock()
	now := c.cfg.Now()
	var verr error
	if e.cg != nil {
		verr = e.cg.ValidateCommit(req.MemberID, req.Generation, req.Version, false)
	} else {
		verr = e.g.ValidateCommit(now, req)
	}
	if verr != nil {
		return commitResult(req, verr), verr
	}
	res, recs, offs := c.offsetRecords(req.Group, req.Topics, now)
	if len(recs) == 0 {
		return res, nil
	}
	base, err := c.appendRecords(ctx, e.log, recs)
	if err != nil {
		res.failRest(storeErr(err))
		return res, nil
	}
	for i, o := range offs {
		o.Offset.RecordOffset = base + int64(i)
		e.g.CommitOffset(o.tp.topic, o.tp.partition, o.Offset)
	}
	return res, nil
}

// newOffset is an offset about to be written, with its partition.
type newOffset struct {
	tp topicPartition
	Offset
}

// offsetRecords makes the records of a commit of topics: the result has
// ErrOffsetMetadataTooLarge on the partitions whose metadata is too long
// (Kafka writes the others), recs and offs the others, in request order.
func (c *Coordinator) offsetRecords(group string, topics []OffsetCommitTopic, now time.Time) (OffsetCommitResult, []KV, []newOffset) {
	res := OffsetCommitResult{Topics: make([]TopicErrors, 0, len(topics))}
	var recs []KV
	var offs []newOffset
	for _, t := range topics {
		te := TopicErrors{Topic: t.Topic, Partitions: make([]PartitionError, 0, len(t.Partitions))}
		for _, p := range t.Partitions {
			pe := PartitionError{Partition: p.Partition}
			md := ""
			if p.Metadata != nil {
				md = *p.Metadata
			}
			if len(md) > c.cfg.OffsetMetadataMaxBytes {
				pe.Err = ErrOffsetMetadataTooLarge
			} else {
				o := Offset{Offset: p.Offset, LeaderEpoch: p.LeaderEpoch, Metadata: md, CommitTime: now}
				recs = append(recs, KV{Key: offsetKey(group, t.Topic, p.Partition), Value: offsetValue(o)})
				offs = append(offs, newOffset{tp: topicPartition{t.Topic, p.Partition}, Offset: o})
			}
			te.Partitions = append(te.Partitions, pe)
		}
		res.Topics = append(res.Topics, te)
	}
	return res, recs, offs
}

// failRest sets err on every partition that has no error yet.
func (r OffsetCommitResult) failRest(err error) {
	for i := range r.Topics {
		for j := range r.Topics[i].Partitions {
			if r.Topics[i].Partitions[j].Err == nil {
				r.Topics[i].Partitions[j].Err = err
			}
		}
	}
}

// TxnOffsetCommit validates and durably stores transactional offsets:
// written to the group's partition as one transactional batch of the
// producer, and pending (invisible to OffsetFetch) until the producer's
// transaction ends there (CompleteTxn). A generation -1 commit to an
// unknown group creates it; a generation >= 0 one gets
// ErrIllegalGeneration. A non-nil error is also set on every partition of
// the result; otherwise partitions may fail alone
// (ErrOffsetMetadataTooLarge, or the append's error).
//
// NB: the coordinator does not ask the transaction coordinator whether
// the group's partition is in the producer's transaction (KIP-890
// verification): the broker does before calling it, and passes the
// partition's guard in req.Guard for the append. Called without, a
// TxnOffsetCommit sent without AddOffsetsToTxn is stored and stays
// pending until a marker of that producer reaches the partition.
//
// Reference: Kafka OffsetMetadataManager.commitTransactionalOffset.
func (c *Coordinator) TxnOffsetCommit(ctx context.Context, req TxnOffsetCommitRequest) (OffsetCommitResult, error) {
	fail := func(err error) (OffsetCommitResult, error) {
		res := commitResult(OffsetCommitRequest{Topics: req.Topics}, err)
		return res, err
	}
	if req.Group == "" {
		return fail(ErrInvalidGroupID)
	}
	e, err := c.locked(req.Group, req.Generation < 0)
	if err == nil && e == nil {
		err = ErrIllegalGeneration
	}
	if err != nil {
		return fail(err)
	}
	defer e.mu.Unlock()
	if e.cg != nil {
		if err := e.cg.ValidateCommit(req.MemberID, req.Generation, 0, true); err != nil {
			return fail(err)
		}
	} else if err := e.g.ValidateTxnCommit(req); err != nil {
		return fail(err)
	}
	res, recs, offs := c.offsetRecords(req.Group, req.Topics, c.cfg.Now())
	if len(recs) == 0 {
		return res, nil
	}
	// NB: noted before the append, so that a marker of the producer
	// written while the append waits for the high watermark (the
	// transaction coordinator aborting the transaction) finds this group
	// and waits for e.mu; it then ends the offsets if their record is
	// before it in the log, as a reload would.
	c.noteTxn(e.part, req.ProducerID, req.Group)
	base, err := c.appendTxnRecords(ctx, e.log, req.ProducerID, req.ProducerEpoch, req.Guard, recs)
	if err != nil {
		if errors.Is(err, ErrInvalidProducerEpoch) {
			res.failRest(ErrInvalidProducerEpoch)
		} else {
			res.failRest(storeErr(err))
		}
		return res, nil
	}
	for i, o := range offs {
		o.Offset.RecordOffset = base + int64(i)
		e.g.AddTxnOffset(req.ProducerID, o.tp.topic, o.tp.partition, o.Offset)
	}
	c.noteTxn(e.part, req.ProducerID, req.Group)
	return res, nil
}

// noteTxn records in the index that producer pid has pending offsets in
// group, of partition.
func (c *Coordinator) noteTxn(partition int32, pid int64, group string) {
	c.txns.Lock()
	defer c.txns.Unlock()
	byPID := c.txns.open[partition]
	if byPID == nil {
		byPID = map[int64]map[string]bool{}
		c.txns.open[partition] = byPID
	}
	if byPID[pid] == nil {
		byPID[pid] = map[string]bool{}
	}
	byPID[pid][group] = true
}

// CompleteTxn applies the end of producer pid's transaction to the groups
// of __consumer_offsets partition: called once its COMMIT (commit true)
// or ABORT marker is durable in the partition at log offset marker, it
// makes the producer's pending offsets before the marker committed or
// drops them (Group.CompleteTxn). It does
// nothing for a partition not loaded here, and waits for a partition
// still loading, since the marker may be past the end the load read. It
// visits only the groups the producer has pending offsets in, and blocks
// while one of them writes to its log. It reports the number of groups
// that had pending offsets of pid.
func (c *Coordinator) CompleteTxn(ctx context.Context, partition int32, pid int64, commit bool, marker int64) (int, error) {
	if err := c.waitLoaded(ctx, partition); err != nil {
		return 0, err
	}
	c.txns.Lock()
	ids := c.txns.open[partition][pid]
	delete(c.txns.open[partition], pid)
	c.txns.Unlock()
	// NB: a TxnOffsetCommit of pid noted after this point appends after
	// the marker; one noted before holds its group's e.mu until its
	// offsets are added. Offsets left pending past the marker are noted
	// again below, so the next marker finds them.
	var entries []*entry
	c.mu.Lock()
	for id := range ids {
		if e := c.mu.groups[id]; e != nil && e.part == partition {
			entries = append(entries, e)
		}
	}
	c.mu.Unlock()
	n := 0
	for _, e := range entries {
		e.mu.Lock()
		if !e.removed && e.g.CompleteTxn(pid, commit, marker) {
			n++
		}
		if !e.removed && e.g.HasTxn(pid) {
			c.noteTxn(partition, pid, e.g.id)
		}
		e.mu.Unlock()
	}
	return n, nil
}

// waitLoaded returns once partition is not loading.
func (c *Coordinator) waitLoaded(ctx context.Context, partition int32) error {
	for {
		c.mu.Lock()
		ps := c.mu.parts[partition]
		if ps == nil || !ps.loading {
			c.mu.Unlock()
			return nil
		}
		loaded := ps.loaded
		c.mu.Unlock()
		select {
		case <-loaded:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// OffsetFetch returns committed offsets of one group.
func (c *Coordinator) OffsetFetch(ctx context.Context, req OffsetFetchRequest) (OffsetFetchResult, error) {
	e, err := c.locked(req.Group, false)
	if err != nil {
		return OffsetFetchResult{}, err
	}
	if e == nil {
		return NewGroup(req.Group, c.gcfg, time.Time{}).FetchOffsets(req), nil
	}
	defer e.mu.Unlock()
	if e.cg != nil {
		if err := e.cg.ValidateFetch(req.MemberID, req.MemberEpoch); err != nil {
			return OffsetFetchResult{}, err
		}
	}
	return e.g.FetchOffsets(req), nil
}

// OffsetDelete deletes offsets of partitions the group is not subscribed to.
func (c *Coordinator) OffsetDelete(ctx context.Context, req OffsetDeleteRequest) (OffsetDeleteResult, error) {
	e, err := c.locked(req.Group, false)
	if err != nil {
		return OffsetDeleteResult{}, err
	}
	if e == nil {
		return OffsetDeleteResult{}, ErrGroupIDNotFound
	}
	defer e.mu.Unlock()
	res, err := e.g.DeletableOffsets(req)
	if err != nil {
		return res, err
	}
	var recs []KV
	var tps []TopicPartition
	for _, t := range res.Topics {
		for _, p := range t.Partitions {
			if p.Err != nil {
				continue
			}
			// Reference: Kafka OffsetMetadataManager.deleteOffsets: a
			// tombstone also for a partition with only pending offsets.
			tp := topicPartition{t.Topic, p.Partition}
			if _, ok := e.g.offsets[tp]; ok || e.g.hasPendingTxnOffset(tp) {
				recs = append(recs, KV{Key: offsetKey(req.Group, t.Topic, p.Partition)})
				tps = append(tps, TopicPartition{t.Topic, p.Partition})
			}
		}
	}
	if len(recs) > 0 {
		if _, err := c.appendRecords(ctx, e.log, recs); err != nil {
			serr := storeErr(err)
			return res, serr
		}
	}
	for _, tp := range tps {
		e.g.DeleteOffset(tp.Topic, tp.Partition)
	}
	return res, nil
}

// DescribeGroup describes one group. An unknown group gives State "Dead"
// and ErrGroupIDNotFound (DescribeGroups v6+ returns the error; earlier
// versions return NONE with the Dead state).
func (c *Coordinator) DescribeGroup(ctx context.Context, group string) (GroupDescription, error) {
	e, err := c.locked(group, false)
	if err != nil {
		return GroupDescription{Group: group}, err
	}
	if e == nil {
		return GroupDescription{Group: group, State: Dead.String()}, ErrGroupIDNotFound
	}
	defer e.mu.Unlock()
	if e.cg != nil {
		// Reference: Kafka 4 describeGroups: a consumer group is not a
		// classic group (v6+ returns the error with the Dead state).
		return GroupDescription{Group: group, State: Dead.String()}, errf(ErrGroupIDNotFound, "Group %s is not a classic group.", group)
	}
	return e.g.Describe(), nil
}

// ListGroups lists the groups of loaded partitions, sorted by id. It
// returns ErrCoordinatorLoadInProgress (with the groups so far) while a
// partition loads.
func (c *Coordinator) ListGroups(ctx context.Context, req ListGroupsRequest) ([]ListedGroup, error) {
	c.mu.Lock()
	var err error
	if c.mu.closed {
		err = ErrNotCoordinator
	}
	for _, ps := range c.mu.parts {
		if ps.loading {
			err = ErrCoordinatorLoadInProgress
		}
	}
	c.mu.Unlock()
	var out []ListedGroup
	for _, e := range c.snapshot() {
		e.mu.Lock()
		lg := ListedGroup{Group: e.g.id, ProtocolType: e.g.protocolType, State: e.g.state.String(), Type: "classic"}
		if e.cg != nil {
			lg = ListedGroup{Group: e.g.id, ProtocolType: ConsumerProtocolType, State: e.cg.State().String(), Type: "consumer"}
		}
		live := !e.removed && e.g.state != Dead && (e.cg == nil || e.cg.State() != ConsumerDead)
		if live && (len(req.States) == 0 || containsFold(req.States, lg.State)) && (len(req.Types) == 0 || containsFold(req.Types, lg.Type)) {
			out = append(out, lg)
		}
		e.mu.Unlock()
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Group < out[j].Group })
	return out, err
}

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

// DeleteGroups deletes Empty groups and their offsets; the result has one
// error (nil on success) per requested group, in order.
func (c *Coordinator) DeleteGroups(ctx context.Context, groups []string) []error {
	errs := make([]error, len(groups))
	for i, id := range groups {
		errs[i] = c.deleteGroup(ctx, id)
	}
	return errs
}

func (c *Coordinator) deleteGroup(ctx context.Context, id string) error {
	e, err := c.locked(id, false)
	if err != nil {
		return err
	}
	if e == nil {
		return ErrGroupIDNotFound
	}
	g := e.g
	switch {
	case g.state == Dead:
		e.mu.Unlock()
		return ErrGroupIDNotFound
	case e.cg != nil && e.cg.State() != ConsumerEmpty:
		e.mu.Unlock()
		return ErrNonEmptyGroup
	case g.state == Empty:
	default:
		e.mu.Unlock()
		return ErrNonEmptyGroup
	}
	recs := make([]KV, 0, len(g.offsets)+1)
	for _, tp := range g.FetchOffsets(OffsetFetchRequest{Group: id}).Topics {
		for _, p := range tp.Partitions {
			recs = append(recs, KV{Key: offsetKey(id, tp.Topic, p.Partition)})
		}
	}
	// Reference: Kafka OffsetMetadataManager.deleteAllOffsets: tombstones
	// for the partitions only open transactions have offsets for, too.
	recs = append(recs, g.pendingOnlyTombstones()...)
	if e.cg != nil {
		for _, r := range e.cg.Delete().Records {
			recs = append(recs, r.KV())
		}
	} else {
		recs = append(recs, KV{Key: groupKey(id)})
	}
	if _, err := c.appendRecords(ctx, e.log, recs); err != nil {
		e.mu.Unlock()
		return storeErr(err)
	}
	c.applyLocked(e, g.MarkDead(c.cfg.Now()))
	e.removed = true
	e.mu.Unlock()
	c.forget(e)
	return nil
}

// Load replays a __consumer_offsets partition and then serves its groups.
// While it runs, calls for those groups return ErrCoordinatorLoadInProgress.
// Loading a partition already loaded (or loading) does nothing.
func (c *Coordinator) Load(ctx context.Context, partition int32, log Log) error {
	c.mu.Lock()
	if c.mu.closed {
		c.mu.Unlock()
		return ErrNotCoordinator
	}
	if c.mu.parts[partition] != nil {
		c.mu.Unlock()
		return nil
	}
	ps := &partState{log: log, loading: true, loaded: make(chan struct{})}
	c.mu.parts[partition] = ps
	c.mu.Unlock()
	defer close(ps.loaded)

	groups, cgs, shares, err := c.replay(ctx, log)
	if err == nil && c.cfg.ShareRecords != nil {
		c.cfg.ShareRecords(partition, shares)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.parts[partition] != ps {
		return ErrNotCoordinator // unloaded meanwhile
	}
	if err != nil {
		delete(c.mu.parts, partition)
		return fmt.Errorf("group: load __consumer_offsets-%d: %w", partition, err)
	}
	now := c.cfg.Now()
	for id, g := range groups {
		e := newEntry(partition, log, g)
		if cg := cgs[id]; cg != nil {
			cg.StartSessions(now)
			e.cg = cg
		}
		c.mu.groups[id] = e
		for pid := range g.txnOffsets {
			c.noteTxn(partition, pid, id)
		}
	}
	ps.loading = false
	select {
	case c.kick <- struct{}{}:
	default:
	}
	c.cfg.Logger.Info("group: loaded __consumer_offsets partition", "partition", partition, "groups", len(groups))
	return nil
}

// replay rebuilds groups from a partition: the last record per key wins
// and tombstones delete; a transactional batch's offsets are pending for
// its producer until the producer's marker commits or aborts them (by
// the rules the runtime applies: Group.AddTxnOffset, Group.CompleteTxn),
// and those still open at the end stay pending.
//
// Reference: Kafka OffsetMetadataManager.replay and
// replayEndTransactionMarker.
func (c *Coordinator) replay(ctx context.Context, log Log) (map[string]*Group, map[string]*ConsumerGroup, map[string][]KV, error) {
	now := c.cfg.Now()
	groups := map[string]*Group{}
	meta := map[string][]byte{}
	// cgs holds the consumer groups; consumerLast the groups whose latest
	// group record (classic metadata or consumer group epoch) is a
	// consumer group's.
	cgs := map[string]*ConsumerGroup{}
	consumerLast := map[string]bool{}
	// open holds, by producer id, the groups it has pending offsets in.
	open := map[int64]map[string]bool{}
	// shares holds the share group records, by group, in log order.
	shares := map[string][]KV{}
	get := func(id string) *Group {
		g := groups[id]
		if g == nil {
			g = NewGroup(id, c.gcfg, now)
			groups[id] = g
		}
		return g
	}
	err := log.Replay(ctx, func(r Entry) error {
		if r.Marker {
			for id := range open[r.ProducerID] {
				groups[id].CompleteTxn(r.ProducerID, r.Commit, r.Offset)
			}
			delete(open, r.ProducerID)
			return nil
		}
		k, err := parseKey(r.Key)
		if err != nil {
			return err
		}
		switch k.kind {
		case kindOffset:
			g := get(k.group)
			if r.Value == nil {
				g.DeleteOffset(k.topic, k.partition)
				return nil
			}
			o, err := parseOffsetValue(r.Value, r.Offset)
			if err != nil {
				return err
			}
			if r.ProducerID < 0 {
				g.CommitOffset(k.topic, k.partition, o)
				return nil
			}
			g.AddTxnOffset(r.ProducerID, k.topic, k.partition, o)
			if open[r.ProducerID] == nil {
				open[r.ProducerID] = map[string]bool{}
			}
			open[r.ProducerID][k.group] = true
		case kindGroup:
			get(k.group)
			meta[k.group] = r.Value
			if r.Value != nil {
				consumerLast[k.group] = false
			}
		case kindShare:
			shares[k.group] = append(shares[k.group], KV{Key: r.Key, Value: r.Value})
		case kindConsumer:
			rec, err := parseCGRecord(r.Key, r.Value)
			if err != nil {
				return err
			}
			get(k.group)
			cg := cgs[k.group]
			if cg == nil {
				cg = NewConsumerGroup(k.group, c.consumerConfig(k.group))
				cgs[k.group] = cg
			}
			cg.ApplyRecord(rec)
			if rec.Kind == CGGroupEpoch {
				if rec.Tombstone {
					delete(cgs, k.group)
					consumerLast[k.group] = false
				} else {
					consumerLast[k.group] = true
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, nil, err
	}
	for id := range cgs {
		if !consumerLast[id] {
			delete(cgs, id)
		}
	}
	out := map[string]*Group{}
	for id, g := range groups {
		m := meta[id]
		if cgs[id] != nil {
			m = nil
		} else if m == nil && !g.HasOffsets() && !g.HasOpenTxns() {
			continue
		}
		if m != nil {
			v, err := parseGroupValue(m)
			if err != nil {
				return nil, nil, nil, err
			}
			g.restore(v, now)
		}
		out[id] = g
	}
	return out, cgs, shares, nil
}

// AppendShareRecords writes a share group's records (KIP-932, encoded by
// the broker) to the group's __consumer_offsets partition, within
// offsets.commit.timeout.ms. It fails with the coordinator's errors when
// the partition is not served here.
func (c *Coordinator) AppendShareRecords(ctx context.Context, group string, recs []KV) error {
	if len(recs) == 0 {
		return nil
	}
	c.mu.Lock()
	if c.mu.closed {
		c.mu.Unlock()
		return ErrNotCoordinator
	}
	ps := c.mu.parts[Partition(group, c.cfg.OffsetsTopicPartitions)]
	var log Log
	err := ErrNotCoordinator
	if ps != nil && ps.loading {
		err = ErrCoordinatorLoadInProgress
	} else if ps != nil {
		log, err = ps.log, nil
	}
	c.mu.Unlock()
	if err != nil {
		return err
	}
	if _, err = c.appendRecords(ctx, log, recs); err != nil {
		return storeErr(err)
	}
	return nil
}

// Unload stops serving the partition's groups: waiting calls fail with
// ErrNotCoordinator.
func (c *Coordinator) Unload(partition int32) {
	c.mu.Lock()
	_, had := c.mu.parts[partition]
	delete(c.mu.parts, partition)
	c.txns.Lock()
	delete(c.txns.open, partition)
	c.txns.Unlock()
	var drop []*entry
	for id, e := range c.mu.groups {
		if e.part == partition {
			drop = append(drop, e)
			delete(c.mu.groups, id)
		}
	}
	c.mu.Unlock()
	for _, e := range drop {
		c.drop(e)
	}
	if had {
		c.cfg.Logger.Info("group: unloaded __consumer_offsets partition", "partition", partition, "groups", len(drop))
	}
}
