package replica

import (
	"context"
	"errors"
	"time"

	"samsa/internal/record"
	"samsa/internal/storage"
	"samsa/internal/txn"
)

// LeaderClient is how a follower talks to a partition leader: Kafka's Fetch
// with this broker's replica id, and OffsetForLeaderEpoch. The broker
// package implements it over the wire protocol; replica knows no protocol.
type LeaderClient interface {
	Fetch(ctx context.Context, leader int32, req FetchRequest) (FetchResponse, error)
	// EpochEndOffset asks the leader for the end offset of epoch: it
	// returns the largest epoch <= epoch the leader has and where it ends
	// (-1, -1 when the leader has none that old).
	EpochEndOffset(ctx context.Context, leader int32, tp storage.TopicPartition, currentLeaderEpoch, epoch int32) (endEpoch int32, endOffset int64, err error)
}

// FetchRequest is a replica fetch from one leader.
type FetchRequest struct {
	ReplicaID  int32
	MaxWait    time.Duration
	MinBytes   int32
	MaxBytes   int32
	Partitions []FetchPartition
}

// FetchPartition is one partition of a replica fetch.
type FetchPartition struct {
	TP                 storage.TopicPartition
	TopicID            [16]byte
	Offset             int64
	CurrentLeaderEpoch int32
}

// FetchResponse is a leader's answer. Release, if set, is called once
// the fetcher is done with the partitions' Records (a LeaderClient may
// read them into a buffer it reuses).
type FetchResponse struct {
	Partitions []FetchedPartition
	Release    func()
}

// FetchedPartition is one partition of a FetchResponse. Err is one of the
// sentinels below or another error.
type FetchedPartition struct {
	TP             storage.TopicPartition
	Err            error
	HighWatermark  int64
	LogStartOffset int64
	Records        []byte
}

// Errors a LeaderClient reports per partition.
var (
	// ErrFencedLeaderEpoch: the follower's leader epoch is older than the
	// leader's (FENCED_LEADER_EPOCH); wait for new metadata.
	ErrFencedLeaderEpoch = errors.New("replica: fenced leader epoch")
	// ErrUnknownLeaderEpoch: the leader has not seen the follower's epoch
	// yet (UNKNOWN_LEADER_EPOCH); retry.
	ErrUnknownLeaderEpoch = errors.New("replica: unknown leader epoch")
	// ErrOffsetOutOfRange: the fetch offset is outside the leader's log.
	ErrOffsetOutOfRange = errors.New("replica: fetch offset out of range")
)

// fetcher replicates every partition this broker follows from one leader.
// Its goroutine is owned by the Manager.
type fetcher struct {
	m      *Manager
	leader int32
	kick   chan struct{}
	stop   chan struct{}
}

// replicaFetchWait is the long-poll of a replica fetch
// (replica.fetch.wait.max.ms).
const replicaFetchWait = 500 * time.Millisecond

func (f *fetcher) run() {
	backoff := func() bool {
		select {
		case <-f.stop:
			return false
		case <-time.After(100 * time.Millisecond):
			return true
		}
	}
	ctx, cancel := context.WithCancel(f.m.ctx)
	defer cancel()
	go func() {
		select {
		case <-f.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	for {
		select {
		case <-f.stop:
			return
		default:
		}
		parts := f.m.followersOf(f.leader)
		if len(parts) == 0 {
			select {
			case <-f.stop:
				return
			case <-f.kick:
			}
			continue
		}
		ready := parts[:0]
		for _, p := range parts {
			if err := p.reconcileWithLeader(ctx, f.m.cfg.Client, f.leader); err != nil {
				f.m.log.Debug("replica: truncation check failed", "topic", p.TP.Topic, "partition", p.TP.Partition, "leader", f.leader, "err", err)
				continue
			}
			ready = append(ready, p)
		}
		if len(ready) == 0 {
			if !backoff() {
				return
			}
			continue
		}
		// Under samsa's durability rule a fetch offset tells the leader
		// that everything below it is fsynced here, so it is sent only
		// once that holds (also after a fetcher restart or a failed wait).
		for _, p := range ready {
			if leo := p.lg().LogEndOffset(); p.lg().DurableOffset() < leo {
				if err := p.waitDurable(ctx, leo); err != nil {
					if ctx.Err() != nil {
						return
					}
					f.m.log.Error("replica: follower log not durable", "topic", p.TP.Topic, "partition", p.TP.Partition, "err", err)
				}
			}
		}
		req := FetchRequest{ReplicaID: f.m.cfg.Self, MaxWait: replicaFetchWait, MinBytes: 1, MaxBytes: 10 << 20}
		byTP := make(map[storage.TopicPartition]*Partition, len(ready))
		for _, p := range ready {
			if p.lg().DurableOffset() < p.lg().LogEndOffset() {
				continue
			}
			byTP[p.TP] = p
			req.Partitions = append(req.Partitions, FetchPartition{
				TP: p.TP, TopicID: p.TopicID, Offset: p.lg().LogEndOffset(), CurrentLeaderEpoch: p.LeaderEpoch(),
			})
		}
		resp, err := f.m.cfg.Client.Fetch(ctx, f.leader, req)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			f.m.log.Debug("replica: fetch from leader failed", "leader", f.leader, "err", err)
			if !backoff() {
				return
			}
			continue
		}
		var appended []*Partition
		failed := false
		for _, fp := range resp.Partitions {
			p := byTP[fp.TP]
			if p == nil {
				continue
			}
			switch {
			case fp.Err == nil:
				n, err := p.appendFromLeader(f.leader, fp.Records)
				if err != nil {
					f.m.log.Warn("replica: append from leader failed", "topic", p.TP.Topic, "partition", p.TP.Partition, "err", err)
					p.markTruncate()
					failed = true
					continue
				}
				p.setFollowerHW(f.leader, fp.HighWatermark)
				p.followLogStart(fp.LogStartOffset)
				if n > 0 {
					appended = append(appended, p)
				}
			case errors.Is(fp.Err, ErrOffsetOutOfRange):
				if p.lg().LogEndOffset() < fp.LogStartOffset {
					// The leader deleted what this follower lacks:
					// start over at the leader's log start.
					if err := p.truncateTo(fp.LogStartOffset); err != nil {
						f.m.log.Warn("replica: reset to leader log start failed", "err", err)
					}
				} else {
					p.markTruncate()
				}
				failed = true
			default:
				failed = true
			}
		}
		if resp.Release != nil {
			resp.Release()
		}
		// Under samsa's durability rule the next fetch reports an offset
		// only once everything below it is fsynced here.
		for _, p := range appended {
			if err := p.waitDurable(ctx, p.lg().LogEndOffset()); err != nil {
				if ctx.Err() != nil {
					return
				}
				f.m.log.Error("replica: follower log not durable", "topic", p.TP.Topic, "partition", p.TP.Partition, "err", err)
				failed = true
			}
		}
		if failed && len(appended) == 0 && !backoff() {
			return
		}
	}
}

// followersOf returns the partitions that follow leader, but those whose
// log dir is offline.
func (m *Manager) followersOf(leader int32) []*Partition {
	var out []*Partition
	for _, p := range m.Partitions() {
		p.roleMu.Lock()
		// NB: a partition whose log dir failed fetches nothing more: its
		// appends would fail, and the controller has been told.
		if p.role.following == leader && p.role.leader == nil && !p.lg().Offline() {
			out = append(out, p)
		}
		p.roleMu.Unlock()
	}
	return out
}

// followLogStart moves the follower's log start offset up to the leader's
// (DeleteRecords and retention on the leader), as far as this follower's
// committed records go, so deleted records do not come back after a
// failover.
func (p *Partition) followLogStart(leaderStart int64) {
	if leaderStart <= p.lg().LogStartOffset() {
		return
	}
	to := min(leaderStart, p.HighWatermark(), p.lg().LogEndOffset())
	if to <= p.lg().LogStartOffset() {
		return
	}
	if _, err := p.lg().DeleteRecordsBefore(to); err != nil {
		p.m.log.Warn("replica: follow the leader's log start offset", "topic", p.TP.Topic, "partition", p.TP.Partition, "err", err)
	}
}

func (p *Partition) markTruncate() {
	p.roleMu.Lock()
	p.role.truncate = true
	p.roleMu.Unlock()
}

func (p *Partition) setFollowerHW(leader int32, hw int64) {
	p.roleMu.Lock()
	if p.role.following == leader && p.role.leader == nil && hw != p.role.followerHW {
		p.role.followerHW = hw
		p.refreshHWLocked(p.m.now().UnixMilli())
	}
	p.roleMu.Unlock()
}

// reconcileWithLeader truncates a follower's log to where it agrees with
// the leader's, once after each change of leader or epoch. Reference:
// KIP-101 and KIP-279: the follower asks for the end of its latest epoch;
// if the leader knows that epoch, the follower truncates to the smaller of
// the two ends; if it only knows an older one, the follower truncates to
// the end of that older epoch in its own log (or the leader's, if smaller).
func (p *Partition) reconcileWithLeader(ctx context.Context, client LeaderClient, leader int32) error {
	if err := p.repairPending(); err != nil {
		return err
	}
	p.roleMu.Lock()
	need := p.role.truncate && p.role.following == leader
	p.roleMu.Unlock()
	if !need {
		return nil
	}
	epoch, ok := p.lg().LatestEpoch()
	if ok {
		endEpoch, endOffset, err := client.EpochEndOffset(ctx, leader, p.TP, p.LeaderEpoch(), epoch)
		if err != nil {
			return err
		}
		target := p.lg().LogEndOffset()
		switch {
		case endEpoch < 0 || endOffset < 0:
			// The leader has nothing as old as our latest epoch: keep
			// only what is known committed.
			target = min(target, p.HighWatermark())
		case endEpoch == epoch:
			target = min(target, endOffset)
		default:
			_, ownEnd := p.lg().EndOffsetForEpoch(endEpoch)
			if ownEnd < 0 {
				ownEnd = p.lg().LogStartOffset()
			}
			target = min(target, endOffset, ownEnd)
		}
		if target < p.lg().LogEndOffset() {
			if err := p.truncateTo(target); err != nil {
				return err
			}
		}
	}
	p.roleMu.Lock()
	if p.role.following == leader {
		p.role.truncate = false
	}
	p.roleMu.Unlock()
	return nil
}

// truncateTo removes everything at or above offset and rebuilds the
// producer state for what is left.
func (p *Partition) truncateTo(offset int64) error {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	from := p.lg().LogEndOffset()
	// A truncation removes what the leader does not have: an uncommitted
	// tail after a leader change, or, after an unclean election, records
	// that were committed on the old leader and are lost. The log line
	// names the range either way so that an operator can tell which.
	p.m.log.Warn("replica: truncating follower log to match the leader; these offsets are removed",
		"topic", p.TP.Topic, "partition", p.TP.Partition, "from", offset, "to", from, "offsets", from-offset)
	if err := p.lg().Truncate(offset); err != nil {
		return err
	}
	p.m.truncated.Add(from - offset)
	if err := txn.DeleteSnapshotsAbove(p.m.fs, p.lg().Dir(), offset); err != nil {
		return err
	}
	return p.loadProducersLocked(p.m, p.m.now().UnixMilli())
}

// appendFromLeader appends batches fetched from the leader with their
// offsets and epochs, and replays them into the producer state (data
// batches and end-transaction markers, whose aborted transactions go to the
// .txnindex) so that this replica can take over as leader without losing
// deduplication or transaction state.
func (p *Partition) appendFromLeader(leader int32, batches []byte) (int, error) {
	if len(batches) == 0 {
		return 0, nil
	}
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	p.roleMu.Lock()
	still := p.role.following == leader && p.role.leader == nil
	p.roleMu.Unlock()
	if !still {
		return 0, nil
	}
	if _, err := p.lg().AppendReplica(batches); err != nil {
		return 0, err
	}
	p.Traffic.ReplicationBytesIn.Add(int64(len(batches)))
	nowMs := p.m.now().UnixMilli()
	n := 0
	for buf := batches; len(buf) > 0; {
		b, rest, err := record.Split(buf)
		if err != nil {
			break
		}
		buf = rest
		n++
		if err := p.replayBatchLocked(b, nowMs); err != nil {
			// The batches are in the log but the producer state missed
			// one: rebuild it from the log, as a restart would.
			p.m.log.Warn("replica: replay from leader failed; reloading producer state", "topic", p.TP.Topic, "partition", p.TP.Partition, "err", err)
			return n, p.loadProducersLocked(p.m, nowMs)
		}
	}
	return n, nil
}
