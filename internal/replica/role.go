package replica

import (
	"context"
	"errors"
	"slices"
	"time"

	"samsa/internal/storage"
)

// PartitionInfo is the cluster's current state of a partition, as the
// Manager acts on it: the assignment, the leader and its epoch, the ISR.
type PartitionInfo struct {
	Replicas       []int32
	Leader         int32 // -1: no leader (offline)
	LeaderEpoch    int32
	ISR            []int32
	PartitionEpoch int32
	// MinInsyncReplicas is the topic's min.insync.replicas (0: the
	// Manager's default). A change applies from the next leader epoch.
	MinInsyncReplicas int
}

// ISRWriter writes a leader's ISR change to the cluster metadata with a
// compare-and-swap at partitionEpoch, refusing it unless the partition is
// still led by this broker at leaderEpoch. The cluster package satisfies it
// through the broker.
type ISRWriter interface {
	AlterISR(ctx context.Context, tp storage.TopicPartition, leaderEpoch int32, isr []int32, partitionEpoch int32) error
}

// roleState is the replication role of a partition, guarded by
// Partition.roleMu.
type roleState struct {
	replicas []int32
	leader   *LeaderState // set while this broker leads
	// following is the leader this broker fetches from, -1 when it leads
	// or the partition has no leader.
	following int32
	// followerHW is the leader's high watermark as of the last fetch.
	followerHW int64
	// truncate is set when the follower must reconcile its log with the
	// leader (OffsetForLeaderEpoch) before fetching again.
	truncate bool
}

// changedLocked wakes every operation waiting on the partition: its role
// changed (or it failed, or went away), which no offset says. The caller
// holds roleMu (or is Remove).
func (p *Partition) changedLocked() {
	for _, s := range p.waits {
		p.m.delayed.wakeAll(s)
	}
}

// HighWatermark is the offset below which records are committed: on the
// leader the minimum durable log end over the ISR (LeaderState), on a
// follower the leader's high watermark as last fetched, capped by its own
// durable end. Consumers see only records below it. It is a plain read:
// the events that move the high watermark store it (refreshHWLocked).
func (p *Partition) HighWatermark() int64 { return p.hw.Load() }

// ErrOffsetNotAvailable means the leader's high watermark has not yet
// reached the start offset of its leader epoch (OFFSET_NOT_AVAILABLE, a
// retriable error).
var ErrOffsetNotAvailable = errors.New("replica: offset not available: the high watermark is below the start of the leader epoch")

// OffsetsAvailable reports whether the offsets a client lists (ListOffsets)
// can be answered here: not while this broker does not lead the partition
// (ErrNotLeader), nor while a new leader's high watermark is below the
// start offset of its epoch (ErrOffsetNotAvailable). A new leader learns
// the high watermark from its followers' next fetches, so until then it
// may trail what the previous leader acknowledged; listing the end offset
// then would show a client an end below records it was told are committed,
// as Kafka avoids in its ListOffsets.
func (p *Partition) OffsetsAvailable() error {
	p.roleMu.Lock()
	defer p.roleMu.Unlock()
	ls := p.role.leader
	if ls == nil {
		return ErrNotLeader
	}
	if p.HighWatermark() < ls.EpochStartOffset() {
		return ErrOffsetNotAvailable
	}
	return nil
}

// refreshHWLocked recomputes the high watermark after the log's durable
// offset or the role state may have moved, stores it, and wakes the
// operations waiting for it or for the last stable offset. The caller
// holds roleMu.
func (p *Partition) refreshHWLocked(nowMs int64) {
	durable := p.lg().DurableOffset()
	var hw int64
	if ls := p.role.leader; ls != nil {
		ls.LeaderDurable(durable, nowMs)
		hw = ls.HighWatermark()
	} else {
		hw = min(p.role.followerHW, durable)
	}
	if p.hw.Swap(hw) != hw {
		p.m.delayed.publish(p.waits[WaitHighWatermark])
		p.m.delayed.publish(p.waits[WaitLastStable])
	}
}

// logChanged is the log's change hook (storage.Log.SetChangeHook): an
// append moved the log end, or, with durable, the durable offset may have
// moved (the flusher's fsync completion, or an append in page-cache mode)
// or the log failed or closed. It runs on the goroutine that made the
// change, possibly under the log's locks, and takes only roleMu and the
// delay queue's leaf locks.
func (p *Partition) logChanged(durable bool) {
	q := p.m.delayed
	q.publish(p.waits[WaitLogEnd])
	if p.unfetched.Load() {
		p.tellUnfetched()
	}
	if start := p.lg().LogStartOffset(); p.logStart.Swap(start) < start {
		// Records were deleted (DeleteRecords, retention): a Fetch
		// waiting below the new log start answers OFFSET_OUT_OF_RANGE
		// now rather than at its deadline.
		q.wakeAll(p.waits[WaitHighWatermark])
		q.wakeAll(p.waits[WaitLastStable])
	}
	if !durable {
		return
	}
	q.publish(p.waits[WaitDurable])
	p.roleMu.Lock()
	p.refreshHWLocked(p.m.now().UnixMilli())
	if p.lg().DurableErr() != nil {
		// The log failed or closed: waiters surface its error.
		p.changedLocked()
	}
	p.roleMu.Unlock()
}

// CheckAppend refuses an acks=all produce when the ISR is smaller than
// min.insync.replicas.
func (p *Partition) CheckAppend() error {
	p.roleMu.Lock()
	defer p.roleMu.Unlock()
	ls := p.role.leader
	if ls == nil {
		return ErrNotLeader
	}
	return ls.CheckAppend()
}

// WaitCommitted blocks until the high watermark reaches end (every record
// below end is on every ISR member, durably) while the partition is still
// led in epoch, the epoch the records were appended in. It fails with
// ErrNotLeader when leadership or the epoch changed (the records may have
// been truncated away, so they must not be acknowledged), with
// ErrNotEnoughReplicasAfterAppend when the ISR fell below
// min.insync.replicas before they were committed, with the log's error
// when it fails, or with ctx's error when ctx is done. It waits in the
// Manager's delay queue, with ctx's deadline as the operation's.
func (p *Partition) WaitCommitted(ctx context.Context, end int64, epoch int32) error {
	deadline, _ := ctx.Deadline()
	for {
		p.roleMu.Lock()
		ls := p.role.leader
		if ls == nil || p.LeaderEpoch() != epoch {
			p.roleMu.Unlock()
			return ErrNotLeader
		}
		if p.HighWatermark() >= end {
			_, err := ls.AppendAcked(end - 1)
			p.roleMu.Unlock()
			return err
		}
		p.roleMu.Unlock()
		// Surface a failed or closed log (ErrLogDirOffline) rather
		// than wait: its high watermark cannot move.
		if err := p.lg().DurableErr(); err != nil {
			return err
		}
		// NB: registered after the checks: an event in between finds
		// the watch, or the watch finds its offset already reached.
		op := p.m.Watch([]WatchSpec{{P: p, Kind: WaitHighWatermark, At: end}}, deadline)
		select {
		case <-op.Done():
		case <-ctx.Done():
			op.Cancel()
			return ctx.Err()
		}
		if op.Outcome() == Expired {
			return context.DeadlineExceeded
		}
	}
}

// waitDurable blocks until the log is durable below offset, the log fails
// (its error), the partition changes role, or ctx is done.
func (p *Partition) waitDurable(ctx context.Context, offset int64) error {
	for {
		if err := p.lg().DurableErr(); err != nil {
			return err
		}
		if p.lg().DurableOffset() >= offset {
			return nil
		}
		op := p.m.Watch([]WatchSpec{{P: p, Kind: WaitDurable, At: offset}}, time.Time{})
		select {
		case <-op.Done():
		case <-ctx.Done():
			op.Cancel()
			return ctx.Err()
		}
		if op.Outcome() == Changed {
			// Failed or closed, or the role changed, which the
			// caller re-checks.
			return p.lg().DurableErr()
		}
	}
}

// FollowerFetched records that follower id fetched at fetchOffset (under
// samsa's durability rule, its log is fsynced below that offset). It may
// advance the high watermark and propose adding the follower to the ISR.
// A fetch offset past the leader's log end says nothing of the follower
// (its Fetch is answered OFFSET_OUT_OF_RANGE) and is ignored, as is a
// call on a partition this broker does not lead.
func (p *Partition) FollowerFetched(id int32, fetchOffset int64) {
	p.roleMu.Lock()
	ls := p.role.leader
	leo := p.lg().LogEndOffset()
	if ls == nil || fetchOffset > leo {
		p.roleMu.Unlock()
		return
	}
	nowMs := p.m.now().UnixMilli()
	ls.LeaderAppended(leo, nowMs)
	ls.LeaderDurable(p.lg().DurableOffset(), nowMs)
	_, expand := ls.FollowerFetch(id, fetchOffset, nowMs)
	p.refreshHWLocked(nowMs)
	epoch := p.LeaderEpoch()
	var why isrWhy
	switch {
	case expand != nil && len(expand.ISR) < len(ls.ISR()):
		why = newISRWhy(isrShrinkBehindHW, ls, expand)
	case expand != nil:
		why = newISRWhy(isrExpandCaughtUp, ls, expand)
	}
	p.roleMu.Unlock()
	if expand != nil {
		p.m.proposeISR(p, epoch, expand, why)
	}
}

// tick lets a leader shrink the ISR of followers that fell behind. A
// leader whose log dir is offline shrinks nothing: its followers stop
// advancing because it answers their fetches with KAFKA_STORAGE_ERROR,
// and shrinking them away would leave an ISR of the one replica that
// cannot serve once the controller moves the leadership.
func (p *Partition) tick(nowMs int64) {
	if p.lg().Offline() {
		return
	}
	p.roleMu.Lock()
	ls := p.role.leader
	if ls == nil {
		p.roleMu.Unlock()
		return
	}
	ls.LeaderAppended(p.lg().LogEndOffset(), nowMs)
	p.refreshHWLocked(nowMs)
	shrink := ls.Tick(nowMs)
	epoch := p.LeaderEpoch()
	var why isrWhy
	if shrink != nil {
		why = newISRWhy(isrShrinkLagging, ls, shrink)
	}
	p.roleMu.Unlock()
	if shrink != nil {
		p.m.proposeISR(p, epoch, shrink, why)
	}
}

// isrWhy is what the log says about an ISR change a leader proposes: the
// reason, the ISR before, and where the followers that join or leave
// stand against the leader's log end offset.
// The reasons an ISR change is proposed, as logged.
const (
	isrShrinkLagging  = "shrink_lagging"
	isrExpandCaughtUp = "expand_caught_up"
	// isrResignCorrupt: the leader leaves its ISR because a stored batch
	// of its log is corrupt, so that another in-sync replica leads.
	isrResignCorrupt = "resign_corrupt_log"
	// isrShrinkBehindHW: an ISR member fetched below the high watermark
	// after it had reached it (it removed committed records to repair its
	// log).
	isrShrinkBehindHW = "shrink_behind_hw"
)

type isrWhy struct {
	reason       string
	prevISR      []int32
	logEndOffset int64
	followers    map[int32]int64 // fetch offset of each follower that joins or leaves
}

// newISRWhy reads ls, whose partition's roleMu the caller holds.
func newISRWhy(reason string, ls *LeaderState, ch *ISRChange) isrWhy {
	w := isrWhy{reason: reason, prevISR: ls.ISR(), logEndOffset: ls.LogEndOffset(), followers: make(map[int32]int64)}
	for _, r := range ch.ISR {
		if !slices.Contains(w.prevISR, r) {
			w.followers[r] = ls.FollowerOffset(r)
		}
	}
	for _, r := range w.prevISR {
		if !slices.Contains(ch.ISR, r) {
			w.followers[r] = ls.FollowerOffset(r)
		}
	}
	return w
}

// applyInfo moves the partition to the role info gives this broker.
//
// It holds the append lock, so no client append runs across a change of
// role (lock order: appendMu -> roleMu).
func (p *Partition) applyInfo(info PartitionInfo) {
	self := p.m.cfg.Self
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	if info.Leader == self && (!p.IsLeader() || info.LeaderEpoch != p.LeaderEpoch()) {
		// Record where this leader epoch starts before anything is
		// written in it, so OffsetForLeaderEpoch answers followers
		// correctly at once (KIP-101). Without it the broker must not
		// lead: followers could keep records the leader does not have.
		if err := p.lg().AssignLeaderEpoch(info.LeaderEpoch); err != nil {
			p.m.log.Error("replica: record leader epoch; not taking leadership", "topic", p.TP.Topic, "partition", p.TP.Partition, "err", err)
			info.Leader = -1
		}
	}
	p.roleMu.Lock()
	defer p.roleMu.Unlock()
	nowMs := p.m.now().UnixMilli()
	p.role.replicas = slices.Clone(info.Replicas)
	p.refreshHWLocked(nowMs)
	wasLeading, wasEpoch, wasFollowing := p.role.leader != nil, p.LeaderEpoch(), p.role.following
	switch {
	case info.Leader == self:
		if p.role.leader == nil || info.LeaderEpoch != p.LeaderEpoch() {
			hw := p.HighWatermark()
			isrCfg := p.m.cfg.ISR
			if info.MinInsyncReplicas > 0 {
				isrCfg.MinInsyncReplicas = info.MinInsyncReplicas
			}
			p.m.log.Info("replica: became leader", "topic", p.TP.Topic, "partition", p.TP.Partition,
				"leader_epoch", info.LeaderEpoch, "prev_leader_epoch", p.LeaderEpoch(), "partition_epoch", info.PartitionEpoch,
				"isr", info.ISR, "replicas", info.Replicas, "log_end_offset", p.lg().LogEndOffset(), "high_watermark", hw)
			p.role.leader = NewLeaderState(self, info.Replicas, info.ISR, info.LeaderEpoch, info.PartitionEpoch,
				p.lg().LogEndOffset(), hw, nowMs, isrCfg)
			p.unfetched.Store(len(info.ISR) > 1)
			p.role.following = -1
			p.role.truncate = false
		} else {
			p.role.leader.ISRCommitted(info.ISR, info.PartitionEpoch)
		}
		p.leaderEpoch.Store(info.LeaderEpoch)
		p.leader.Store(true)
	default:
		wasLeader := p.role.leader != nil
		if wasLeader {
			// Losing leadership: keep what was committed as the
			// follower's high watermark.
			p.role.followerHW = p.role.leader.HighWatermark()
		}
		p.role.leader = nil
		p.leader.Store(false)
		if info.Leader != p.role.following || info.LeaderEpoch != p.LeaderEpoch() {
			p.m.log.Info("replica: became follower", "topic", p.TP.Topic, "partition", p.TP.Partition,
				"leader", info.Leader, "leader_epoch", info.LeaderEpoch, "prev_leader_epoch", p.LeaderEpoch(),
				"was_leader", wasLeader, "log_end_offset", p.lg().LogEndOffset())
			p.role.following = info.Leader
			p.role.truncate = info.Leader >= 0
		}
		p.leaderEpoch.Store(info.LeaderEpoch)
	}
	p.refreshHWLocked(nowMs)
	if (p.role.leader != nil) != wasLeading || p.LeaderEpoch() != wasEpoch || p.role.following != wasFollowing {
		// NB: only a change of role wakes every waiter; the broker
		// applies the same info again at every reconcile.
		p.changedLocked()
	}
}

// proposeISR writes an ISR change in the background (the caller may hold
// no lock). A failed write resets the proposal so a later fetch or tick
// proposes again; a successful one arrives back through Ensure.
func (m *Manager) proposeISR(p *Partition, leaderEpoch int32, ch *ISRChange, why isrWhy) {
	if m.cfg.ISRWriter == nil {
		return
	}
	m.goFunc(func() {
		ctx, cancel := context.WithTimeout(m.ctx, 10*time.Second)
		defer cancel()
		err := m.cfg.ISRWriter.AlterISR(ctx, p.TP, leaderEpoch, ch.ISR, ch.PartitionEpoch)
		if err != nil {
			m.log.Debug("replica: ISR change not written", "topic", p.TP.Topic, "partition", p.TP.Partition, "isr", ch.ISR, "err", err)
			p.roleMu.Lock()
			if ls := p.role.leader; ls != nil && p.LeaderEpoch() == leaderEpoch {
				ls.ISRChangeAborted()
			}
			p.roleMu.Unlock()
			return
		}
		if why.reason != isrExpandCaughtUp {
			m.isrShrinks.Add(1)
		} else {
			m.isrExpands.Add(1)
		}
		m.log.Info("replica: ISR changed", "topic", p.TP.Topic, "partition", p.TP.Partition, "reason", why.reason,
			"isr", ch.ISR, "prev_isr", why.prevISR, "leader_epoch", leaderEpoch, "partition_epoch", ch.PartitionEpoch,
			"log_end_offset", why.logEndOffset, "follower_offsets", why.followers)
	})
}
