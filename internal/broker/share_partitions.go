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

	"samsa/internal/config"
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

// sharePart is a share-partition led here. mu guards every field below
// it. It is held while p changes and across the read of the log, but not
// across the write of the state to the share coordinator: one write is
// in flight at a time (writing), carrying a snapshot of p taken under mu,
// and every change waits, without mu, until a write that includes it is
// done before it is answered (group commit: the changes made while a
// write is in flight share the next one). So the state answered is
// always persisted first, and the snapshots reach the share coordinator
// in the order they were taken.
type sharePart struct {
	key   sharePartKey
	rp    *replica.Partition // the replica it was loaded on
	epoch int32              // rp's leader epoch at load

	mu        sync.Mutex
	p         *share.Partition
	persisted int64 // the p.Version() of the last snapshot written
	// stateEpoch is the state epoch of the state p was loaded from; the
	// share coordinator fences writes from an older one.
	stateEpoch int32
	// synced is set once a write of p succeeded: until then a fetch
	// waits for the write of its acquisitions (see shareFetchOne).
	synced bool
	// writing is set while a write is in flight; written is closed when
	// it ends.
	writing bool
	written chan struct{}
	// waiters are the share fetches parked with nothing acquired here;
	// an acknowledgement or release that may let them acquire signals
	// them (wakeLocked), as the high watermark does for new records.
	waiters map[chan struct{}]struct{}
}

// wakeLocked signals the share fetches parked on sp. sp.mu must be held.
func (sp *sharePart) wakeLocked() {
	for ch := range sp.waiters {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// shareSeen is a share-partition as a share fetch left it: the state and
// its version, to tell whether it changed before the fetch parked.
type shareSeen struct {
	sp      *sharePart
	p       *share.Partition
	version int64
}

// park registers wake with the share-partitions seen; it reports false,
// registering nothing, when one changed since it was seen (the fetch
// should try again at once).
func (b *Broker) parkShareFetch(seen []shareSeen, wake chan struct{}) bool {
	for i, s := range seen {
		s.sp.mu.Lock()
		if s.sp.p != s.p || (s.p != nil && s.p.Version() != s.version) {
			s.sp.mu.Unlock()
			b.unparkShareFetch(seen[:i], wake)
			return false
		}
		if s.sp.waiters == nil {
			s.sp.waiters = map[chan struct{}]struct{}{}
		}
		s.sp.waiters[wake] = struct{}{}
		s.sp.mu.Unlock()
	}
	return true
}

// unparkShareFetch removes wake from the share-partitions seen.
func (b *Broker) unparkShareFetch(seen []shareSeen, wake chan struct{}) {
	for _, s := range seen {
		s.sp.mu.Lock()
		delete(s.sp.waiters, wake)
		s.sp.mu.Unlock()
	}
}

// shareSessionKey names a share session: one per group member and broker.
type shareSessionKey struct{ group, member string }

// shareSession is a KIP-932 share session: the partitions the member
// fetches from this broker and the epoch its next request must carry.
type shareSession struct {
	epoch    int32
	lastUsed time.Time
	// heldWait is how long (ns) the session's last fetch that acquired
	// nothing while its member held records parked (handleShareFetch):
	// zero after a fetch that acquired, back to the minimum after one
	// that acknowledged. Atomic, so that a fetch that acquires does not
	// take sharePartitions.mu to reset it.
	heldWait atomic.Int64
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

// shareConfig is the share-partition configuration of a group: its group
// configs (share.record.lock.duration.ms, share.delivery.count.limit,
// share.partition.max.record.locks), else the broker's. A smaller
// share.partition.max.record.locks leaves the records already in flight
// there; no more are acquired until fewer are.
func (b *Broker) shareConfig(gc config.Group) share.Config {
	return share.Config{
		LockDuration:       time.Duration(gc.ShareRecordLockDurationMs) * time.Millisecond,
		DeliveryCountLimit: int16(gc.ShareDeliveryCountLimit),
		MaxRecordLocks:     int(gc.SharePartitionMaxRecordLocks),
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
	gc := b.groupConfig(key.group)
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
			sp.p = share.Restore(b.shareConfig(gc), st)
		} else {
			start := rp.HighWatermark()
			if gc.ShareAutoOffsetReset == "earliest" {
				start = rp.LogStartOffset()
			}
			sp.p = share.New(b.shareConfig(gc), start)
		}
		sp.persisted, sp.stateEpoch, sp.synced = sp.p.Version(), stateEpoch, false
		if !ok {
			sp.persisted = -1 // write the initial state with the first change
		}
	}
	sp.p.SetConfig(b.shareConfig(gc)) // the group's configs may have changed
	sp.p.MoveStartTo(rp.LogStartOffset())
	return sp, t.Name, nil
}

// persistLocked returns once the share-partition's state, as it is when
// called, is written to the share coordinator: by a write it starts, or
// by one another caller started after the change. sp.mu must be held; it
// is released while a write is in flight and held again on return, so
// the caller must not rely on sp.p across the call (it may be nil on
// return: see below).
//
// When a write is fenced by the state epoch (the offsets were altered or
// deleted since sp was loaded), sp.p is dropped so that the next
// sharePart call loads the new state, and share.ErrFencedStateEpoch is
// returned to every caller waiting for it: what they would answer from
// the old state was never persisted.
func (b *Broker) persistLocked(ctx context.Context, sp *sharePart) error {
	// NB: p, not sp.p: a state dropped and loaded again while this
	// caller waited is another Partition, whose versions say nothing of
	// this caller's change.
	p := sp.p
	if p == nil {
		return fmt.Errorf("%w: share-partition state dropped", share.ErrFencedStateEpoch)
	}
	want := p.Version()
	for sp.persisted < want {
		if sp.writing {
			done := sp.written
			sp.mu.Unlock()
			select {
			case <-done:
			case <-ctx.Done():
				sp.mu.Lock()
				return ctx.Err()
			}
			sp.mu.Lock()
			if sp.p != p {
				return fmt.Errorf("%w: share-partition state dropped", share.ErrFencedStateEpoch)
			}
			continue
		}
		v, snap, stateEpoch := p.Version(), p.Snapshot(), sp.stateEpoch
		sp.writing, sp.written = true, make(chan struct{})
		sp.mu.Unlock()
		err := b.sharePersister.write(ctx, sp.key, sp.epoch, stateEpoch, snap)
		sp.mu.Lock()
		if err := sp.wroteLocked(p, v, err); err != nil {
			return err
		}
	}
	return nil
}

// wroteLocked ends persistLocked's write of state p at version v that
// returned err. A write fenced by the state epoch drops p. sp.mu must be
// held.
func (sp *sharePart) wroteLocked(p *share.Partition, v int64, err error) error {
	sp.writing = false
	close(sp.written)
	if err != nil {
		if errors.Is(err, share.ErrFencedStateEpoch) && sp.p == p {
			sp.p = nil
		}
		return err
	}
	if sp.p == p {
		sp.persisted = max(sp.persisted, v)
		sp.synced = true
	}
	return nil
}

// shareReadChunk is the first read of a share fetch: a fetch acquires
// at most group.share.partition.max.record.locks records, usually far
// fewer bytes than its max bytes, so the log is read in chunks that
// double, as long as more can be acquired, instead of all of max bytes
// at once.
const shareReadChunk = 64 << 10

// shareFetchOne acquires records of one share-partition for member: it
// reads the log from the first available offset up to the high watermark
// (the last stable offset under share.isolation.level read_committed),
// at most maxBytes, and acquires what the state allows. It returns the
// file regions of the batches that hold acquired records, which the
// answer sends with sendfile as a Fetch does, and the acquired ranges.
// Under read_committed, aborted transactions' batches and control
// batches are archived instead (share.Batch.Skip).
//
// Acquisition takes whole batches, so only their headers are read here
// (the log's read has checked each batch, CRC included, as for any
// fetch); the records themselves are never copied through the broker.
func (b *Broker) shareFetchOne(ctx context.Context, sp *sharePart, member string, maxBytes int64, maxRecords int, strict bool) ([]storage.Region, []share.AcquiredRange, error) {
	now := b.now()
	sp.p.ExpireLocks(now)
	committed := b.groupConfig(sp.key.group).ShareIsolationLevel == "read_committed"
	end := sp.rp.HighWatermark()
	if committed {
		end = sp.rp.LastStableOffset()
	}
	var out []storage.Region
	var acq []share.AcquiredRange
	hr := newBatchHeaders()
	defer hr.release()
	chunk := int64(shareReadChunk)
	for maxBytes > 0 && (maxRecords <= 0 || len(acq) == 0 || acquiredRecords(acq) < maxRecords) {
		off := sp.p.NextFetchOffset()
		if off < 0 || off >= end {
			break
		}
		res, err := sp.rp.ReadRecords(off, min(chunk, maxBytes), end)
		if err == nil {
			err = hr.read(res)
		}
		if err != nil {
			if len(acq) > 0 {
				break // answer what was acquired; the next fetch reports it
			}
			return nil, nil, err
		}
		var aborted []storage.AbortedTxn
		if committed {
			aborted = sp.rp.AbortedTxns(off, end)
		}
		var batches []share.Batch
		var kept []storage.Region // where batches[i] is
		for i, bt := range hr.headers {
			if bt.LastOffset() >= off && bt.BaseOffset() < end {
				skip := committed && (bt.Control() || (bt.Transactional() && abortedBatch(aborted, bt)))
				batches = append(batches, share.Batch{First: bt.BaseOffset(), Last: min(bt.LastOffset(), end-1), Skip: skip})
				kept = append(kept, hr.regions[i])
			}
		}
		if len(batches) == 0 {
			break
		}
		remaining := 0
		if maxRecords > 0 {
			remaining = maxRecords - acquiredRecords(acq)
		}
		got := sp.p.Acquire(member, now, batches, remaining, strict)
		// Return only the batches that hold acquired records.
		ai := 0
		for i, bt := range batches {
			for ai < len(got) && got[ai].Last < bt.First {
				ai++
			}
			if ai < len(got) && got[ai].First <= bt.Last {
				out = appendRegion(out, kept[i])
				maxBytes -= kept[i].Size
			}
		}
		acq = append(acq, got...)
		if len(got) == 0 && sp.p.NextFetchOffset() == off {
			break // nothing more can be taken here (record locks)
		}
		if res.NextOffset >= end {
			break
		}
		chunk *= 2
	}
	// NB: an acquisition (and a lock expiry) is not written before the
	// answer, as in Kafka (SharePartition.acquire writes nothing): the
	// next write of the share-partition, which every acknowledgement
	// and release waits for, carries its delivery counts. So a record
	// acquired since that write comes back after a leader failover with
	// its delivery count one lower, and is delivered again (its lock is
	// lost with the leader anyway). Acknowledgements are written before
	// they are answered, so an accepted record is never delivered again.
	// Until a write of the state loaded here succeeded, a fetch waits
	// for it: a state the coordinator fences (altered since it was
	// read), or a coordinator still unavailable after a failover, is
	// found before anything is answered from it, and the fetch, which
	// the client retries, takes the wait rather than the member's first
	// acknowledgement.
	if !sp.synced {
		p := sp.p
		if err := b.persistLocked(ctx, sp); err != nil {
			// Not answered: the records go back as they were, not
			// locked to a member that never got them.
			if sp.p == p {
				p.Unacquire(member, acq)
			}
			return nil, nil, err
		}
	}
	if len(acq) == 0 {
		return nil, nil, nil
	}
	return out, acq, nil
}

// appendRegion appends r to rs, extending the last region when r follows
// it in the same file (the batches of one read), so that the answer has
// one sendfile per run of batches rather than one per batch.
func appendRegion(rs []storage.Region, r storage.Region) []storage.Region {
	if n := len(rs); n > 0 && rs[n-1].File == r.File && rs[n-1].Pos+rs[n-1].Size == r.Pos {
		rs[n-1].Size += r.Size
		return rs
	}
	return append(rs, r)
}

func acquiredRecords(acq []share.AcquiredRange) int {
	n := 0
	for _, a := range acq {
		n += int(a.Last - a.First + 1)
	}
	return n
}

// abortedBatch reports whether transactional batch bt belongs to one of
// the aborted transactions: its producer's, begun at or before it and
// ended by an abort marker after it.
func abortedBatch(aborted []storage.AbortedTxn, bt record.Batch) bool {
	for _, a := range aborted {
		if a.ProducerID == bt.ProducerID() && a.FirstOffset <= bt.BaseOffset() && bt.BaseOffset() < a.LastOffset {
			return true
		}
	}
	return false
}

// shareAckOne applies member's acknowledgements to one share-partition and
// persists them before it answers. sp.mu must be held (persistLocked
// releases it during the write).
func (b *Broker) shareAckOne(ctx context.Context, sp *sharePart, member string, batches []share.AckBatch) error {
	if err := sp.p.Acknowledge(member, b.now(), batches); err != nil {
		return err
	}
	var n int64
	for _, x := range batches {
		n += x.Last - x.First + 1
	}
	b.sharePartitions.acked.Add(n)
	// The records freed are offered to the parked fetches now, while
	// the write runs: an acquisition is not persisted before it is
	// answered anyway (shareFetchOne), and the acknowledgement itself is
	// answered only once written.
	sp.wakeLocked()
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
			} else {
				sp.wakeLocked()
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
	errShareSessionLimit    = errors.New("broker: share session limit reached")
)

func shareSessionCode(err error) int16 {
	switch {
	case errors.Is(err, errShareSessionNotFound):
		return kerr.ShareSessionNotFound.Code
	case errors.Is(err, errShareSessionEpoch):
		return kerr.InvalidShareSessionEpoch.Code
	case errors.Is(err, errShareSessionLimit):
		return kerr.ShareSessionLimitReached.Code
	}
	return kerr.UnknownServerError.Code
}

// shareSessionFor checks a request's share session epoch and returns the
// session (a new one for epoch 0, unless group.share.max.share.sessions
// other sessions are open: SHARE_SESSION_LIMIT_REACHED; for -1, the
// session, which the caller then closes). For epochs above 0 the session must exist
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
		// Reference: ShareSessionCache.maybeCreateSession: a member's
		// new session replaces its old one; another is refused once
		// group.share.max.share.sessions are open (no eviction).
		if s == nil && len(sps.sessions) >= int(b.cfg.GroupShareMaxShareSessions) {
			return nil, fmt.Errorf("%w: %d share sessions are open on this broker (group.share.max.share.sessions)", errShareSessionLimit, len(sps.sessions))
		}
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

// forgetStaleShareParts drops the loaded state of the share-partitions
// of keys that may be older than their share coordinator's, so that the
// next request loads them again. A member opening a share session calls
// it: the offsets may have been altered or deleted (which needs an empty
// group) since this broker loaded them. A share-partition that holds no
// acquired record (NextDeadline zero) and nothing unpersisted is dropped
// (it writes nothing, so the state epoch would not fence it); one that
// may have records in flight
// (acquired by members that left) is dropped if the share coordinator's
// state epoch moved past the one it was loaded from, so that the new
// member is not given records of the old state, whose acknowledgements
// would be fenced (FENCED_STATE_EPOCH). A failed read keeps it: its
// next write meets the fence.
func (b *Broker) forgetStaleShareParts(ctx context.Context, keys []sharePartKey) {
	sps := b.sharePartitions
	for _, k := range keys {
		sps.mu.Lock()
		sp := sps.parts[k]
		sps.mu.Unlock()
		if sp == nil {
			continue
		}
		sp.mu.Lock()
		p, loadedEpoch := sp.p, sp.stateEpoch
		if p != nil && !sp.writing && p.NextDeadline().IsZero() && p.Version() == sp.persisted {
			sp.p, p = nil, nil
		}
		sp.mu.Unlock()
		if p == nil {
			continue
		}
		_, cur, _, err := b.sharePersister.read(ctx, k, sp.epoch)
		if err != nil || cur <= loadedEpoch {
			continue
		}
		sp.mu.Lock()
		if sp.p == p {
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
