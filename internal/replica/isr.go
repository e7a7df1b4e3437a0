package replica

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// ErrNotEnoughReplicas refuses an acks=all produce because the ISR is smaller
// than min.insync.replicas (NOT_ENOUGH_REPLICAS).
var ErrNotEnoughReplicas = errors.New("replica: not enough in-sync replicas")

// ErrNotEnoughReplicasAfterAppend answers an acks=all produce that was
// appended and reached the high watermark, but the ISR has since fallen below
// min.insync.replicas (NOT_ENOUGH_REPLICAS_AFTER_APPEND).
var ErrNotEnoughReplicasAfterAppend = errors.New("replica: not enough in-sync replicas after append")

// ISRConfig holds the broker and topic configs that govern the ISR.
type ISRConfig struct {
	ReplicaLagTimeMaxMs int64 // replica.lag.time.max.ms (30000)
	MinInsyncReplicas   int   // min.insync.replicas (1)
}

// ISRChange is an ISR change the leader proposes: the new ISR, to be written
// with compare-and-swap on the partition state at PartitionEpoch (the
// partition epoch the leader last saw). The ISR is sorted ascending and owned
// by the receiver.
type ISRChange struct {
	ISR            []int32
	PartitionEpoch int32
}

// followerState is what the leader knows of one follower since it became
// leader.
type followerState struct {
	// fetchOffset is the offset of the follower's latest fetch: under
	// samsa's durability rule, the offset below which its log is fsynced.
	// -1 until it fetches from this leader.
	fetchOffset int64
	// lastCaughtUpMs is the latest time the follower was known to have
	// the leader's whole log (Kafka's lastCaughtUpTimeMs).
	lastCaughtUpMs int64
	// lastFetchLeaderLEO and lastFetchMs are the leader's LEO and the time
	// at the follower's previous fetch.
	lastFetchLeaderLEO int64
	lastFetchMs        int64
}

// LeaderState is the leader side of one partition's replication: it tracks
// each follower's fetch offset, advances the high watermark and proposes ISR
// changes. It is a deterministic state machine: it does no IO, starts no
// goroutines and never reads the clock; every call carries the time.
//
// LeaderState is not safe for concurrent use; the caller serialises calls
// (one partition lock). Slices it returns are owned by the caller.
//
// One LeaderState lives for one leader epoch: on a new leader epoch the
// caller makes a new one. The caller fences requests by leader epoch
// (KIP-320) before calling FollowerFetch: a fetch from an older or newer
// epoch must not reach it.
type LeaderState struct {
	self           int32
	replicas       []int32
	isr            []int32 // committed ISR, sorted
	leaderEpoch    int32
	partitionEpoch int32
	cfg            ISRConfig

	// epochStartOffset is the leader's LEO when it became leader: the start
	// offset of its leader epoch.
	epochStartOffset int64
	leo              int64 // leader's LEO as far as it has been told
	durable          int64 // leader's durable offset
	hw               int64
	lastNowMs        int64 // latest time passed in

	followers map[int32]*followerState
	pending   *ISRChange // proposed and not yet committed
}

// NewLeaderState returns the leader state of a replica self that has just
// become leader at leaderEpoch with the given replicas, ISR and partition
// epoch. leaderLEO is its log end offset at that moment (the start offset of
// its leader epoch) and hw its high watermark.
//
// The leader counts as durable up to hw until LeaderDurable says more. ISR
// followers start caught up at nowMs (as Kafka resets lastCaughtUpTimeMs on
// becoming leader), and their offsets are unknown until they fetch, which
// holds the high watermark where it is.
func NewLeaderState(self int32, replicas, isr []int32, leaderEpoch, partitionEpoch int32,
	leaderLEO, hw, nowMs int64, cfg ISRConfig) *LeaderState {
	s := &LeaderState{
		self:             self,
		replicas:         slices.Clone(replicas),
		isr:              sortedCopy(isr),
		leaderEpoch:      leaderEpoch,
		partitionEpoch:   partitionEpoch,
		cfg:              cfg,
		epochStartOffset: leaderLEO,
		leo:              leaderLEO,
		durable:          min(hw, leaderLEO),
		hw:               hw,
		lastNowMs:        nowMs,
		followers:        make(map[int32]*followerState, len(replicas)),
	}
	for _, id := range replicas {
		if id == self {
			continue
		}
		f := &followerState{fetchOffset: -1, lastFetchLeaderLEO: math.MaxInt64, lastFetchMs: nowMs}
		if slices.Contains(s.isr, id) {
			f.lastCaughtUpMs = nowMs
			f.lastFetchLeaderLEO = leaderLEO
		}
		s.followers[id] = f
	}
	return s
}

// Unfetched appends to dst the in-sync followers that have not fetched
// from this leader yet: until they do, the high watermark cannot pass the
// leader epoch's start.
func (s *LeaderState) Unfetched(dst []int32) []int32 {
	for _, id := range s.isr {
		if f := s.followers[id]; f != nil && f.fetchOffset < 0 {
			dst = append(dst, id)
		}
	}
	return dst
}

func sortedCopy(ids []int32) []int32 {
	out := slices.Clone(ids)
	slices.Sort(out)
	return out
}

func (s *LeaderState) observe(nowMs int64) {
	s.lastNowMs = max(s.lastNowMs, nowMs)
}

// LeaderAppended tells the leader's log end offset after an append, before it
// is durable. It only feeds the caught-up rule; without it the LEO is the
// durable offset.
func (s *LeaderState) LeaderAppended(leo, nowMs int64) {
	s.observe(nowMs)
	s.leo = max(s.leo, leo)
}

// LeaderDurable tells that the leader's own log is durable (fsynced) up to
// offset. It reports whether the high watermark advanced.
func (s *LeaderState) LeaderDurable(offset, nowMs int64) (hwAdvanced bool) {
	s.observe(nowMs)
	s.durable = max(s.durable, offset)
	s.leo = max(s.leo, offset)
	return s.maybeAdvanceHW()
}

// FollowerFetch records a fetch by follower id at fetchOffset, which under
// samsa's durability rule is the offset below which the follower's log is
// fsynced. It reports whether the high watermark advanced and, when the
// follower is outside the ISR and has caught up, the ISR expansion to propose
// (nil when there is none or another change is in flight).
//
// Caught up (Kafka's lastCaughtUpTimeMs rule, KIP-16 lag by time): a fetch at
// or beyond the leader's current LEO makes the follower caught up now; a
// fetch at or beyond the leader's LEO as of the follower's previous fetch
// makes it caught up as of that previous fetch.
//
// Expansion (Kafka's isFollowerInSync): the fetch offset is at least the
// high watermark and at least the start offset of the leader's epoch, so the
// follower has truncated against this leader (KIP-101) before it joins.
//
// Falling behind (samsa's rule, no Kafka counterpart): an ISR member that
// had fetched at or above the high watermark and now fetches below it has
// lost committed records from its log (it truncated at a corrupt batch to
// fetch it again, repair.go); it leaves the ISR at once rather than after
// replica.lag.time.max.ms, so that it cannot be elected without them. The
// shrink comes back in expand's place.
func (s *LeaderState) FollowerFetch(id int32, fetchOffset, nowMs int64) (hwAdvanced bool, expand *ISRChange) {
	s.observe(nowMs)
	f := s.followers[id]
	if f == nil {
		return false, nil
	}
	if prev := f.fetchOffset; s.pending == nil && prev >= s.hw && fetchOffset < s.hw && slices.Contains(s.isr, id) {
		var keep []int32
		for _, r := range s.isr {
			if r != id {
				keep = append(keep, r)
			}
		}
		f.fetchOffset = fetchOffset
		f.lastFetchMs = nowMs
		f.lastFetchLeaderLEO = s.leo
		s.pending = &ISRChange{ISR: keep, PartitionEpoch: s.partitionEpoch}
		return false, s.pendingCopy()
	}
	switch {
	case fetchOffset >= s.leo:
		f.lastCaughtUpMs = max(f.lastCaughtUpMs, nowMs)
	case fetchOffset >= f.lastFetchLeaderLEO:
		f.lastCaughtUpMs = max(f.lastCaughtUpMs, f.lastFetchMs)
	}
	f.lastFetchLeaderLEO = s.leo
	f.lastFetchMs = nowMs
	f.fetchOffset = fetchOffset

	hwAdvanced = s.maybeAdvanceHW()
	if s.pending == nil && !slices.Contains(s.isr, id) &&
		fetchOffset >= s.hw && fetchOffset >= s.epochStartOffset {
		isr := append(slices.Clone(s.isr), id)
		slices.Sort(isr)
		s.pending = &ISRChange{ISR: isr, PartitionEpoch: s.partitionEpoch}
		expand = s.pendingCopy()
	}
	return hwAdvanced, expand
}

// Tick checks the ISR for followers that have not been caught up for
// replica.lag.time.max.ms and returns the shrink to propose, or nil. A
// follower whose fetch offset equals the leader's LEO is never out of sync.
// A shrink never removes the leader, and it may take the ISR below
// min.insync.replicas (the HW then stays where it is, KIP-966).
func (s *LeaderState) Tick(nowMs int64) (shrink *ISRChange) {
	s.observe(nowMs)
	if s.pending != nil {
		return nil
	}
	var keep []int32
	removed := false
	for _, id := range s.isr {
		f := s.followers[id]
		if id == s.self || f == nil || f.fetchOffset == s.leo || nowMs-f.lastCaughtUpMs <= s.cfg.ReplicaLagTimeMaxMs {
			keep = append(keep, id)
			continue
		}
		removed = true
	}
	if !removed {
		return nil
	}
	s.pending = &ISRChange{ISR: keep, PartitionEpoch: s.partitionEpoch}
	return s.pendingCopy()
}

// Resign proposes the ISR without the leader, so that the controller
// elects another in-sync replica (cluster.Decide, rule 2): what a leader
// does when its own log cannot serve a range. It returns nil when no
// other replica is in the ISR or a change is already in flight.
func (s *LeaderState) Resign() *ISRChange {
	if s.pending != nil {
		return nil
	}
	var keep []int32
	for _, id := range s.isr {
		if id != s.self {
			keep = append(keep, id)
		}
	}
	if len(keep) == 0 || len(keep) == len(s.isr) {
		return nil
	}
	s.pending = &ISRChange{ISR: keep, PartitionEpoch: s.partitionEpoch}
	return s.pendingCopy()
}

func (s *LeaderState) pendingCopy() *ISRChange {
	return &ISRChange{ISR: slices.Clone(s.pending.ISR), PartitionEpoch: s.pending.PartitionEpoch}
}

// ISRCommitted tells that the partition state now holds isr at
// partitionEpoch: the proposed change was written, or another writer (the
// controller) changed it and the proposal failed its compare-and-swap. The
// leader adopts it and may propose again. A state older than the one it has
// is ignored, and so is one at the partition epoch it has while a change is
// in flight: that is no news (a late answer to an earlier change), and
// dropping the pending change would let the HW skip a member the pending
// change may already have added (KIP-497 maximal ISR). When the write was
// refused without the state changing, call ISRChangeAborted. The high
// watermark may advance (after a shrink); read it with HighWatermark.
func (s *LeaderState) ISRCommitted(isr []int32, partitionEpoch int32) {
	if partitionEpoch < s.partitionEpoch || (partitionEpoch == s.partitionEpoch && s.pending != nil) {
		return
	}
	s.pending = nil
	old := s.isr
	s.isr = sortedCopy(isr)
	s.partitionEpoch = partitionEpoch
	for _, id := range s.isr {
		f := s.followers[id]
		if f == nil && id != s.self {
			// A replica the leader did not know of; it counts once it fetches.
			f = &followerState{fetchOffset: -1, lastFetchLeaderLEO: math.MaxInt64, lastFetchMs: s.lastNowMs}
			s.followers[id] = f
		}
		if f != nil && !slices.Contains(old, id) {
			// Another writer added it: give it a full lag period.
			f.lastCaughtUpMs = max(f.lastCaughtUpMs, s.lastNowMs)
		}
	}
	s.maybeAdvanceHW()
}

// ISRChangeAborted tells that the proposed change was not written: the write
// failed, or it was refused while the partition state stayed at the epoch
// the change was proposed at (an ineligible replica, KIP-841). The leader may
// propose again.
func (s *LeaderState) ISRChangeAborted() { s.pending = nil }

// Pending returns the ISR change in flight, or nil.
func (s *LeaderState) Pending() *ISRChange {
	if s.pending == nil {
		return nil
	}
	return s.pendingCopy()
}

// maybeAdvanceHW moves the high watermark to the minimum, over the leader and
// the maximal ISR, of the leader's durable offset and the followers' fetch
// offsets. The maximal ISR is the committed ISR plus any member of an
// expansion in flight, so the HW is safe whichever way the change goes
// (KIP-497). It never moves back, and it moves only while the committed ISR
// has at least min.insync.replicas members (strict min ISR, KIP-966).
func (s *LeaderState) maybeAdvanceHW() bool {
	if len(s.isr) < s.cfg.MinInsyncReplicas {
		return false
	}
	hw := s.durable
	consider := func(id int32) {
		if id == s.self {
			return
		}
		f := s.followers[id]
		if f == nil {
			hw = min(hw, -1)
			return
		}
		hw = min(hw, f.fetchOffset)
	}
	for _, id := range s.isr {
		consider(id)
	}
	if s.pending != nil {
		for _, id := range s.pending.ISR {
			if !slices.Contains(s.isr, id) {
				consider(id)
			}
		}
	}
	if hw <= s.hw {
		return false
	}
	s.hw = hw
	return true
}

// HighWatermark returns the offset below which records are committed.
func (s *LeaderState) HighWatermark() int64 { return s.hw }

// ISR returns the committed ISR, sorted.
func (s *LeaderState) ISR() []int32 { return slices.Clone(s.isr) }

// LeaderEpoch returns the leader epoch this state serves.
func (s *LeaderState) LeaderEpoch() int32 { return s.leaderEpoch }

// PartitionEpoch returns the partition epoch of the committed ISR.
func (s *LeaderState) PartitionEpoch() int32 { return s.partitionEpoch }

// EpochStartOffset returns the start offset of the leader's epoch: its log
// end offset when it became leader.
func (s *LeaderState) EpochStartOffset() int64 { return s.epochStartOffset }

// LogEndOffset returns the leader's log end offset as it has been told.
func (s *LeaderState) LogEndOffset() int64 { return s.leo }

// FollowerOffset returns the fetch offset of follower id in this leader
// epoch, or -1 when it has not fetched.
func (s *LeaderState) FollowerOffset(id int32) int64 {
	if f := s.followers[id]; f != nil {
		return f.fetchOffset
	}
	return -1
}

// CheckAppend is the check before an acks=all append: ErrNotEnoughReplicas
// (wrapped) when the committed ISR has fewer than min.insync.replicas
// members, nil otherwise.
func (s *LeaderState) CheckAppend() error {
	if len(s.isr) < s.cfg.MinInsyncReplicas {
		return fmt.Errorf("%w: isr %v, min.insync.replicas %d", ErrNotEnoughReplicas, s.isr, s.cfg.MinInsyncReplicas)
	}
	return nil
}

// AppendAcked reports whether an acks=all produce whose last record is at
// lastOffset is done: done once the high watermark is past lastOffset, with
// ErrNotEnoughReplicasAfterAppend (wrapped) if the ISR has meanwhile fallen
// below min.insync.replicas (as Kafka's delayed produce answers).
func (s *LeaderState) AppendAcked(lastOffset int64) (done bool, err error) {
	if s.hw <= lastOffset {
		return false, nil
	}
	if len(s.isr) < s.cfg.MinInsyncReplicas {
		return true, fmt.Errorf("%w: isr %v, min.insync.replicas %d", ErrNotEnoughReplicasAfterAppend, s.isr, s.cfg.MinInsyncReplicas)
	}
	return true, nil
}
