package replica

import (
	"context"
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
	// hwChanged is closed and replaced when the high watermark may have
	// moved or the role changed.
	hwChanged chan struct{}
}

func (p *Partition) notifyLocked() {
	close(p.role.hwChanged)
	p.role.hwChanged = make(chan struct{})
}

// HWChanged returns a channel closed the next time the high watermark may
// have moved (or the partition's role changed). Waiters also watch
// Log.Changed.
func (p *Partition) HWChanged() <-chan struct{} {
	p.roleMu.Lock()
	defer p.roleMu.Unlock()
	return p.role.hwChanged
}

// HighWatermark is the offset below which records are committed: on the
// leader the minimum durable log end over the ISR (LeaderState), on a
// follower the leader's high watermark as last fetched, capped by its own
// durable end. Consumers see only records below it.
func (p *Partition) HighWatermark() int64 {
	p.roleMu.Lock()
	defer p.roleMu.Unlock()
	return p.highWatermarkLocked()
}

func (p *Partition) highWatermarkLocked() int64 {
	durable := p.Log.DurableOffset()
	if ls := p.role.leader; ls != nil {
		if ls.LeaderDurable(durable, p.m.now().UnixMilli()) {
			p.notifyLocked()
		}
		return ls.HighWatermark()
	}
	return min(p.role.followerHW, durable)
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
// min.insync.replicas before they were committed, when the log fails, or
// when ctx is done.
func (p *Partition) WaitCommitted(ctx context.Context, end int64, epoch int32) error {
	for {
		changed, hwCh := p.Log.Changed(), p.HWChanged()
		p.roleMu.Lock()
		ls := p.role.leader
		if ls == nil || p.LeaderEpoch() != epoch {
			p.roleMu.Unlock()
			return ErrNotLeader
		}
		hw := p.highWatermarkLocked()
		var err error
		if hw >= end {
			_, err = ls.AppendAcked(end - 1)
		}
		p.roleMu.Unlock()
		if hw >= end {
			return err
		}
		if p.Log.DurableOffset() < end {
			// Surface a failed log (ErrLogDirOffline) rather than wait.
			// A role change (hwCh) also ends the wait: a leader that
			// resigned and truncated below end would otherwise hold the
			// request until its timeout.
			durable := p.Log.DurableChanged()
			if err := p.Log.DurableErr(); err != nil {
				return err
			}
			if p.Log.DurableOffset() < end {
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-durable:
				case <-hwCh:
				}
			}
			continue
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		case <-hwCh:
		}
	}
}

// FollowerFetched records that follower id fetched at fetchOffset (under
// samsa's durability rule, its log is fsynced below that offset). It may
// advance the high watermark and propose adding the follower to the ISR.
func (p *Partition) FollowerFetched(id int32, fetchOffset int64) {
	p.roleMu.Lock()
	ls := p.role.leader
	if ls == nil {
		p.roleMu.Unlock()
		return
	}
	nowMs := p.m.now().UnixMilli()
	ls.LeaderAppended(p.Log.LogEndOffset(), nowMs)
	ls.LeaderDurable(p.Log.DurableOffset(), nowMs)
	advanced, expand := ls.FollowerFetch(id, fetchOffset, nowMs)
	if advanced {
		p.notifyLocked()
	}
	epoch := p.LeaderEpoch()
	p.roleMu.Unlock()
	if expand != nil {
		p.m.proposeISR(p, epoch, expand, false)
	}
}

// tick lets a leader shrink the ISR of followers that fell behind.
func (p *Partition) tick(nowMs int64) {
	p.roleMu.Lock()
	ls := p.role.leader
	if ls == nil {
		p.roleMu.Unlock()
		return
	}
	ls.LeaderAppended(p.Log.LogEndOffset(), nowMs)
	ls.LeaderDurable(p.Log.DurableOffset(), nowMs)
	shrink := ls.Tick(nowMs)
	epoch := p.LeaderEpoch()
	p.roleMu.Unlock()
	if shrink != nil {
		p.m.proposeISR(p, epoch, shrink, true)
	}
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
		if err := p.Log.AssignLeaderEpoch(info.LeaderEpoch); err != nil {
			p.m.log.Error("replica: record leader epoch; not taking leadership", "topic", p.TP.Topic, "partition", p.TP.Partition, "err", err)
			info.Leader = -1
		}
	}
	p.roleMu.Lock()
	defer p.roleMu.Unlock()
	nowMs := p.m.now().UnixMilli()
	p.role.replicas = slices.Clone(info.Replicas)
	switch {
	case info.Leader == self:
		if p.role.leader == nil || info.LeaderEpoch != p.LeaderEpoch() {
			hw := p.highWatermarkLocked()
			isrCfg := p.m.cfg.ISR
			if info.MinInsyncReplicas > 0 {
				isrCfg.MinInsyncReplicas = info.MinInsyncReplicas
			}
			p.role.leader = NewLeaderState(self, info.Replicas, info.ISR, info.LeaderEpoch, info.PartitionEpoch,
				p.Log.LogEndOffset(), hw, nowMs, isrCfg)
			p.role.following = -1
			p.role.truncate = false
		} else {
			p.role.leader.ISRCommitted(info.ISR, info.PartitionEpoch)
		}
		p.leaderEpoch.Store(info.LeaderEpoch)
		p.leader.Store(true)
	default:
		if p.role.leader != nil {
			// Losing leadership: keep what was committed as the
			// follower's high watermark.
			p.role.followerHW = p.role.leader.HighWatermark()
		}
		p.role.leader = nil
		p.leader.Store(false)
		if info.Leader != p.role.following || info.LeaderEpoch != p.LeaderEpoch() {
			p.role.following = info.Leader
			p.role.truncate = info.Leader >= 0
		}
		p.leaderEpoch.Store(info.LeaderEpoch)
	}
	p.notifyLocked()
}

// proposeISR writes an ISR change in the background (the caller may hold
// no lock). A failed write resets the proposal so a later fetch or tick
// proposes again; a successful one arrives back through Ensure.
func (m *Manager) proposeISR(p *Partition, leaderEpoch int32, ch *ISRChange, shrink bool) {
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
		if shrink {
			m.isrShrinks.Add(1)
		} else {
			m.isrExpands.Add(1)
		}
		m.log.Info("replica: ISR changed", "topic", p.TP.Topic, "partition", p.TP.Partition, "isr", ch.ISR)
	})
}
