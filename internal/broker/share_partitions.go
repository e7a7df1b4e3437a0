package broker

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"samsa/internal/record"
	"samsa/internal/replica"
	"samsa/internal/share"
	"samsa/internal/storage"
)

// sharePartKey names a share-partition: a share group's view of one
// topic partition.
type sharePartKey struct {
	group     string
	topicID   [16]byte
	partition int32
}

// sharePart is a share-partition led here. mu guards p and is held across
// the read of the log and the write of the state to the share
// coordinator, so that the state persisted is the state answered.
type sharePart struct {
	mu        sync.Mutex
	key       sharePartKey
	rp        *replica.Partition // the replica it was loaded on
	epoch     int32              // rp's leader epoch at load
	p         *share.Partition
	persisted int64 // p.Version() last written
	// stateEpoch is the state epoch of the state p was loaded from; the
	// share coordinator fences writes from an older one.
	stateEpoch int32
}

// shareSessionKey names a share session: one per group member and broker.
type shareSessionKey struct{ group, member string }

// shareSession is a KIP-932 share session: the partitions the member
// fetches from this broker and the epoch its next request must carry.
type shareSession struct {
	epoch    int32
	lastUsed time.Time
	parts    map[sharePartKey]int32 // partition max bytes
	order    []sharePartKey         // in the order added
}

// sharePartitions is the share-partitions led here and the share sessions
// of the members that fetch them. mu guards the maps; each sharePart has
// its own mu. Lock order: sharePartitions.mu -> sharePart.mu is never
// taken that way round: a sharePart is found under mu, which is released
// before its mu is taken.
type sharePartitions struct {
	// acked counts the records acknowledged (metrics).
	acked     atomic.Int64
	mu        sync.Mutex
	lastSweep time.Time // of expireShareSessions
	parts     map[sharePartKey]*sharePart
	sessions  map[shareSessionKey]*shareSession
}

func newSharePartitions() *sharePartitions {
	return &sharePartitions{parts: map[sharePartKey]*sharePart{}, sessions: map[shareSessionKey]*shareSession{}}
}

func (b *Broker) shareConfig() share.Config {
	return share.Config{
		LockDuration:       time.Duration(b.cfg.GroupShareRecordLockDurationMs) * time.Millisecond,
		DeliveryCountLimit: int16(b.cfg.GroupShareDeliveryCountLimit),
		MaxRecordLocks:     int(b.cfg.GroupSharePartitionMaxRecordLocks),
	}
}

// errShareNotLeader and friends are the partition errors of a
// share-partition lookup.
var (
	errShareUnknownTopicID = errors.New("broker: unknown topic id")
	errShareUnknownPart    = errors.New("broker: unknown topic or partition")
	errShareNotLeader      = errors.New("broker: not the leader of the partition")
)

func shareLookupCode(err error) int16 {
	switch {
	case errors.Is(err, errShareUnknownTopicID):
		return kerr.UnknownTopicID.Code
	case errors.Is(err, errShareUnknownPart):
		return kerr.UnknownTopicOrPartition.Code
	case errors.Is(err, errShareNotLeader):
		return kerr.NotLeaderForPartition.Code
	}
	return groupCode(err)
}

// sharePart returns the share-partition of key with its mu held, loading
// its state from the share coordinator (or starting it at
// share.auto.offset.reset) when this broker has not served it at the
// replica's current leader epoch. The caller unlocks sp.mu.
func (b *Broker) sharePart(ctx context.Context, key sharePartKey) (*sharePart, string, error) {
	t := b.cluster.Image().TopicIDs[key.topicID]
	if t == nil {
		return nil, "", errShareUnknownTopicID
	}
	if key.partition < 0 || int(key.partition) >= len(t.Replicas) {
		return nil, t.Name, errShareUnknownPart
	}
	rp := b.replicas.Get(storage.TopicPartition{Topic: t.Name, Partition: key.partition})
	if rp == nil || !rp.IsLeader() {
		return nil, t.Name, errShareNotLeader
	}
	sps := b.sharePartitions
	sps.mu.Lock()
	sp := sps.parts[key]
	if sp == nil || sp.rp != rp || sp.epoch != rp.LeaderEpoch() {
		sp = &sharePart{key: key, rp: rp, epoch: rp.LeaderEpoch()}
		sps.parts[key] = sp
	}
	sps.mu.Unlock()
	sp.mu.Lock()
	if sp.p == nil {
		st, stateEpoch, ok, err := b.sharePersister.read(ctx, key, sp.epoch)
		if err != nil {
			sp.mu.Unlock()
			sps.mu.Lock()
			if sps.parts[key] == sp {
				delete(sps.parts, key)
			}
			sps.mu.Unlock()
			return nil, t.Name, err
		}
		if ok {
			sp.p = share.Restore(b.shareConfig(), st)
		} else {
			start := rp.HighWatermark()
			if b.cfg.ShareAutoOffsetReset == "earliest" {
				start = rp.LogStartOffset()
			}
			sp.p = share.New(b.shareConfig(), start)
		}
		sp.persisted, sp.stateEpoch = sp.p.Version(), stateEpoch
		if !ok {
			sp.persisted = -1 // write the initial state with the first change
		}
	}
	sp.p.MoveStartTo(rp.LogStartOffset())
	return sp, t.Name, nil
}

// persistLocked writes the share-partition's state to the share
// coordinator if it changed since the last write. sp.mu must be held.
// When the write is fenced by the state epoch (the offsets were altered
// or deleted since sp was loaded), sp is dropped so that the next
// sharePart call loads the new state, and the error is returned: what
// this broker answered from the old state was never persisted.
func (b *Broker) persistLocked(ctx context.Context, sp *sharePart) error {
	v := sp.p.Version()
	if v == sp.persisted {
		return nil
	}
	if err := b.sharePersister.write(ctx, sp.key, sp.epoch, sp.stateEpoch, sp.p.Snapshot()); err != nil {
		if errors.Is(err, share.ErrFencedStateEpoch) {
			sp.p = nil
		}
		return err
	}
	sp.persisted = v
	return nil
}

// shareFetchOne acquires records of one share-partition for member: it
// reads the log from the first available offset up to the high
// watermark, at most maxBytes, and acquires what the state allows. It
// returns the raw batches and the acquired ranges.
func (b *Broker) shareFetchOne(ctx context.Context, sp *sharePart, member string, maxBytes int64, maxRecords int, strict bool) ([]byte, []share.AcquiredRange, error) {
	now := b.now()
	sp.p.ExpireLocks(now)
	off := sp.p.NextFetchOffset()
	end := sp.rp.HighWatermark()
	if off < 0 || off >= end {
		return nil, nil, b.persistLocked(ctx, sp)
	}
	res, err := sp.rp.ReadRecords(off, maxBytes, end)
	if err != nil {
		return nil, nil, err
	}
	buf, err := res.AppendTo(nil)
	if err != nil {
		return nil, nil, err
	}
	var batches []share.Batch
	var kept [][]byte
	for rest := buf; len(rest) > 0; {
		bt, next, err := record.Split(rest)
		if err != nil {
			break // a torn tail past the high watermark cannot be; stop
		}
		if bt.LastOffset() >= off && bt.BaseOffset() < end {
			batches = append(batches, share.Batch{First: bt.BaseOffset(), Last: min(bt.LastOffset(), end-1)})
			kept = append(kept, rest[:len(rest)-len(next)])
		}
		rest = next
	}
	acq := sp.p.Acquire(member, now, batches, maxRecords, strict)
	if err := b.persistLocked(ctx, sp); err != nil {
		return nil, nil, err
	}
	if len(acq) == 0 {
		return nil, nil, nil
	}
	// Return only the batches that hold acquired records.
	var out []byte
	ai := 0
	for i, bt := range batches {
		for ai < len(acq) && acq[ai].Last < bt.First {
			ai++
		}
		if ai < len(acq) && acq[ai].First <= bt.Last {
			out = append(out, kept[i]...)
		}
	}
	return out, acq, nil
}

// shareAckOne applies member's acknowledgements to one share-partition and
// persists them before it answers.
func (b *Broker) shareAckOne(ctx context.Context, sp *sharePart, member string, batches []share.AckBatch) error {
	if err := sp.p.Acknowledge(member, b.now(), batches); err != nil {
		return err
	}
	var n int64
	for _, x := range batches {
		n += x.Last - x.First + 1
	}
	b.sharePartitions.acked.Add(n)
	return b.persistLocked(ctx, sp)
}

// releaseShareMember releases the records member holds in every
// share-partition of the group led here and drops its share session (the
// member left the group or its session on this broker closed).
func (b *Broker) releaseShareMember(group, member string) {
	sps := b.sharePartitions
	sps.mu.Lock()
	delete(sps.sessions, shareSessionKey{group, member})
	var parts []*sharePart
	for k, sp := range sps.parts {
		if k.group == group {
			parts = append(parts, sp)
		}
	}
	sps.mu.Unlock()
	for _, sp := range parts {
		sp.mu.Lock()
		if sp.p != nil && sp.p.ReleaseMember(member) > 0 {
			ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
			if err := b.persistLocked(ctx, sp); err != nil {
				b.log.Warn("persist share-partition state", "group", group, "partition", sp.key.partition, "err", err)
			}
			cancel()
		}
		sp.mu.Unlock()
	}
}

// nextShareEpoch is the share session epoch after e: it wraps from
// MaxInt32 to 1, as Kafka's does.
func nextShareEpoch(e int32) int32 {
	if e == math.MaxInt32 {
		return 1
	}
	return e + 1
}

// shareSessionErr values are the top-level errors of a share session
// check.
var (
	errShareSessionNotFound = errors.New("broker: share session not found")
	errShareSessionEpoch    = errors.New("broker: invalid share session epoch")
)

func shareSessionCode(err error) int16 {
	switch {
	case errors.Is(err, errShareSessionNotFound):
		return kerr.ShareSessionNotFound.Code
	case errors.Is(err, errShareSessionEpoch):
		return kerr.InvalidShareSessionEpoch.Code
	}
	return kerr.UnknownServerError.Code
}

// shareSessionFor checks a request's share session epoch and returns the
// session (a new one for epoch 0; nil for -1, after which the caller
// closes it). For epochs above 0 the session must exist
// (SHARE_SESSION_NOT_FOUND) at that epoch (INVALID_SHARE_SESSION_EPOCH);
// it then moves to the next epoch.
func (b *Broker) shareSessionFor(group, member string, epoch int32) (*shareSession, error) {
	for _, idle := range b.expireShareSessions() {
		b.releaseShareMember(idle.group, idle.member)
	}
	sps := b.sharePartitions
	k := shareSessionKey{group, member}
	now := b.now()
	sps.mu.Lock()
	defer sps.mu.Unlock()
	s := sps.sessions[k]
	if s != nil {
		s.lastUsed = now
	}
	switch {
	case epoch == 0:
		s = &shareSession{epoch: 1, parts: map[sharePartKey]int32{}, lastUsed: now}
		sps.sessions[k] = s
		return s, nil
	case s == nil:
		return nil, fmt.Errorf("%w: member %s of group %s", errShareSessionNotFound, member, group)
	case epoch == -1:
		return s, nil
	case epoch != s.epoch:
		return nil, fmt.Errorf("%w: %d, the session is at %d", errShareSessionEpoch, epoch, s.epoch)
	}
	s.epoch = nextShareEpoch(s.epoch)
	return s, nil
}

// ShareStats is what the broker reports of share groups (metrics).
type ShareStats struct {
	Groups, Sessions, Partitions, AcknowledgedRecords int64
}

// ShareStats returns the share groups coordinated here, the share
// sessions open here, the share-partitions served here and the records
// acknowledged here. Safe for concurrent use.
func (b *Broker) ShareStats() ShareStats {
	var st ShareStats
	b.shares.mu.Lock()
	st.Groups = int64(len(b.shares.groups))
	b.shares.mu.Unlock()
	sps := b.sharePartitions
	sps.mu.Lock()
	st.Sessions, st.Partitions = int64(len(sps.sessions)), int64(len(sps.parts))
	sps.mu.Unlock()
	st.AcknowledgedRecords = sps.acked.Load()
	return st
}

// expireShareSessions removes the share sessions unused for
// group.share.session.timeout.ms (their member is gone, or fetches from
// other brokers only) and returns them; the caller releases their
// members' records.
func (b *Broker) expireShareSessions() []shareSessionKey {
	timeout := time.Duration(b.cfg.GroupShareSessionTimeoutMs) * time.Millisecond
	now := b.now()
	sps := b.sharePartitions
	sps.mu.Lock()
	defer sps.mu.Unlock()
	// Sweep at most once a second: the walk is over every session.
	if now.Sub(sps.lastSweep) < time.Second {
		return nil
	}
	sps.lastSweep = now
	var idle []shareSessionKey
	for k, s := range sps.sessions {
		if now.Sub(s.lastUsed) > timeout {
			idle = append(idle, k)
			delete(sps.sessions, k)
		}
	}
	return idle
}

// forgetIdleShareParts drops the loaded state of the share-partitions of
// keys that hold no acquired record and nothing unpersisted, so that the
// next request loads them from the share coordinator again. A member
// opening a share session calls it: the offsets may have been altered or
// deleted (which needs an empty group) since this broker loaded them,
// and a share-partition that acquires nothing writes nothing, so the
// state epoch would not fence it.
func (b *Broker) forgetIdleShareParts(keys []sharePartKey) {
	sps := b.sharePartitions
	for _, k := range keys {
		sps.mu.Lock()
		sp := sps.parts[k]
		sps.mu.Unlock()
		if sp == nil {
			continue
		}
		sp.mu.Lock()
		if sp.p != nil && sp.p.NextDeadline().IsZero() && sp.p.Version() == sp.persisted {
			sp.p = nil
		}
		sp.mu.Unlock()
	}
}

// forgetShareParts drops the loaded state of the share-partitions of
// group and topic led here (its offsets were altered or deleted here).
func (b *Broker) forgetShareParts(group string, topicID [16]byte) {
	sps := b.sharePartitions
	sps.mu.Lock()
	defer sps.mu.Unlock()
	for k := range sps.parts {
		if k.group == group && k.topicID == topicID {
			delete(sps.parts, k)
		}
	}
}
