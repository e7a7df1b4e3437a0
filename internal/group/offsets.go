package group

import (
	"sort"
	"time"
)

// ValidateCommit checks an OffsetCommit against the group as Kafka's
// GroupCoordinator does, and refreshes the committing member's session.
// A nil error means the offsets may be stored.
func (g *Group) ValidateCommit(now time.Time, req OffsetCommitRequest) error {
	if g.state == Dead {
		return ErrCoordinatorNotAvailable
	}
	if req.Generation >= 0 || req.MemberID != "" || req.InstanceID != nil {
		m, err := g.validateMember(req.MemberID, req.InstanceID, &req.Generation)
		if err != nil {
			return err
		}
		switch g.state {
		case CompletingRebalance:
			// The member has the new generation but not its assignment.
			return ErrRebalanceInProgress
		case Stable, PreparingRebalance:
			// Commits stay allowed while rebalancing: the heartbeat tells the
			// member about the rebalance.
			m.deadline = now.Add(m.sessionTimeout)
		}
		return nil
	}
	if g.state != Empty {
		// A simple commit into a group with members.
		return ErrUnknownMemberID
	}
	return nil
}

// CommitOffset records a validated commit whose record is now the last of
// the partition's in the log.
func (g *Group) CommitOffset(topic string, partition int32, o Offset) {
	g.offsets[topicPartition{topic, partition}] = o
}

// DeleteOffset forgets a committed offset, and the partition's pending
// transactional offsets, as its tombstone does when replayed; it reports
// whether there was a committed one.
//
// Reference: Kafka OffsetMetadataManager.replay (a tombstone removes the
// pending offsets of the partition too).
func (g *Group) DeleteOffset(topic string, partition int32) bool {
	tp := topicPartition{topic, partition}
	_, ok := g.offsets[tp]
	delete(g.offsets, tp)
	for _, offs := range g.txnOffsets {
		delete(offs, tp)
	}
	return ok
}

// HasOffsets reports whether the group has any committed offset.
func (g *Group) HasOffsets() bool { return len(g.offsets) > 0 }

// ValidateTxnCommit checks a TxnOffsetCommit against the group as Kafka's
// classic group does for transactional commits: a Dead group is
// ErrCoordinatorNotAvailable; generation -1 into an Empty group is
// accepted; a request naming a member, an instance or a generation
// (v3+, KIP-447) must be a current member of this generation
// (ErrUnknownMemberID, ErrFencedInstanceID, ErrIllegalGeneration); one
// naming none (v0-2) is accepted whatever the state. Unlike OffsetCommit,
// the group's state is not checked and no session is refreshed.
//
// Reference: Kafka ClassicGroup.validateOffsetCommit with isTransactional.
func (g *Group) ValidateTxnCommit(req TxnOffsetCommitRequest) error {
	if g.state == Dead {
		return ErrCoordinatorNotAvailable
	}
	if req.Generation < 0 && g.state == Empty {
		return nil
	}
	if req.Generation >= 0 || req.MemberID != "" || req.InstanceID != nil {
		gen := req.Generation
		_, err := g.validateMember(req.MemberID, req.InstanceID, &gen)
		return err
	}
	return nil
}

// AddTxnOffset records a transactional offset of producer pid, pending
// until the producer's transaction ends (CompleteTxn). A later one for the
// same partition in the same transaction replaces it.
func (g *Group) AddTxnOffset(pid int64, topic string, partition int32, o Offset) {
	offs := g.txnOffsets[pid]
	if offs == nil {
		offs = map[topicPartition]Offset{}
		g.txnOffsets[pid] = offs
	}
	offs[topicPartition{topic, partition}] = o
}

// HasTxn reports whether producer pid has a transaction with offsets of
// this group open.
func (g *Group) HasTxn(pid int64) bool {
	_, ok := g.txnOffsets[pid]
	return ok
}

// HasOpenTxns reports whether any transaction with offsets of this group
// is open.
func (g *Group) HasOpenTxns() bool { return len(g.txnOffsets) > 0 }

// CompleteTxn ends producer pid's transaction in this group, as its
// COMMIT or ABORT marker at log offset marker in the group's
// __consumer_offsets partition does: only the pending offsets whose
// records are before the marker belong to that transaction; later ones
// (a TxnOffsetCommit appended after the marker) stay pending for the
// producer's next marker. A commit makes each of them the committed one
// unless the committed one's record is later in the log (a plain
// OffsetCommit made after the TxnOffsetCommit); an abort drops them. It
// reports whether the producer had a transaction open here before the
// marker; a marker of a producer without one changes nothing.
//
// Reference: Kafka OffsetMetadataManager.replayEndTransactionMarker and
// GroupMetadata.completePendingTxnOffsetCommit.
func (g *Group) CompleteTxn(pid int64, commit bool, marker int64) bool {
	offs, ok := g.txnOffsets[pid]
	if !ok {
		return false
	}
	ended := len(offs) == 0 // its offsets were deleted (a tombstone)
	for tp, o := range offs {
		if o.RecordOffset > marker {
			continue
		}
		ended = true
		delete(offs, tp)
		if !commit {
			continue
		}
		if cur, ok := g.offsets[tp]; !ok || o.RecordOffset > cur.RecordOffset {
			g.offsets[tp] = o
		}
	}
	if len(offs) == 0 {
		delete(g.txnOffsets, pid)
	}
	return ended
}

// pendingOnlyTombstones returns tombstones for the partitions that only
// open transactions have offsets for.
func (g *Group) pendingOnlyTombstones() []KV {
	seen := map[topicPartition]bool{}
	var out []KV
	for _, offs := range g.txnOffsets {
		for tp := range offs {
			if _, ok := g.offsets[tp]; ok || seen[tp] {
				continue
			}
			seen[tp] = true
			out = append(out, KV{Key: offsetKey(g.id, tp.topic, tp.partition)})
		}
	}
	return out
}

// hasPendingTxnOffset reports whether an open transaction holds an offset
// of tp.
func (g *Group) hasPendingTxnOffset(tp topicPartition) bool {
	for _, offs := range g.txnOffsets {
		if _, ok := offs[tp]; ok {
			return true
		}
	}
	return false
}

// FetchOffsets answers an OffsetFetch. Partitions without a commit get
// offset -1; Topics nil returns every committed partition, sorted. With
// RequireStable, a partition an open transaction has an offset for gets
// ErrUnstableOffsetCommit and offset -1, so that the consumer retries
// rather than start from an offset the transaction is about to replace
// (KIP-447); without it, the committed offset.
//
// Reference: Kafka OffsetMetadataManager.fetchOffsets and fetchAllOffsets.
func (g *Group) FetchOffsets(req OffsetFetchRequest) OffsetFetchResult {
	var res OffsetFetchResult
	unstable := func(tp topicPartition) bool {
		return req.RequireStable && g.state != Dead && g.hasPendingTxnOffset(tp)
	}
	if req.Topics == nil {
		byTopic := map[string][]FetchedOffset{}
		for tp, c := range g.offsets {
			fo := FetchedOffset{Partition: tp.partition, Offset: c.Offset, LeaderEpoch: c.LeaderEpoch, Metadata: c.Metadata}
			if unstable(tp) {
				fo = FetchedOffset{Partition: tp.partition, Offset: -1, LeaderEpoch: -1, Err: ErrUnstableOffsetCommit}
			}
			byTopic[tp.topic] = append(byTopic[tp.topic], fo)
		}
		topics := make([]string, 0, len(byTopic))
		for t := range byTopic {
			topics = append(topics, t)
		}
		sort.Strings(topics)
		for _, t := range topics {
			ps := byTopic[t]
			sort.Slice(ps, func(i, j int) bool { return ps[i].Partition < ps[j].Partition })
			res.Topics = append(res.Topics, FetchedTopic{Topic: t, Partitions: ps})
		}
		return res
	}
	for _, t := range req.Topics {
		ft := FetchedTopic{Topic: t.Topic, Partitions: make([]FetchedOffset, 0, len(t.Partitions))}
		for _, p := range t.Partitions {
			fo := FetchedOffset{Partition: p, Offset: -1, LeaderEpoch: -1}
			tp := topicPartition{t.Topic, p}
			if unstable(tp) {
				fo.Err = ErrUnstableOffsetCommit
			} else if g.state != Dead {
				if c, ok := g.offsets[tp]; ok {
					fo.Offset, fo.LeaderEpoch, fo.Metadata = c.Offset, c.LeaderEpoch, c.Metadata
				}
			}
			ft.Partitions = append(ft.Partitions, fo)
		}
		res.Topics = append(res.Topics, ft)
	}
	return res
}

// DeletableOffsets decides an OffsetDelete: per partition either nil
// (deletable) or ErrGroupSubscribedToTopic; a non-nil error rejects the
// whole request (ErrGroupIDNotFound, ErrNonEmptyGroup).
func (g *Group) DeletableOffsets(req OffsetDeleteRequest) (OffsetDeleteResult, error) {
	var checkSubscribed bool
	switch {
	case g.state == Dead:
		return OffsetDeleteResult{}, ErrGroupIDNotFound
	case g.state == Empty:
	case g.protocolType == ConsumerProtocolType:
		checkSubscribed = true
	default:
		return OffsetDeleteResult{}, ErrNonEmptyGroup
	}
	var res OffsetDeleteResult
	for _, t := range req.Topics {
		te := TopicErrors{Topic: t.Topic}
		// An unknown subscription (undecodable metadata) counts as
		// subscribed to everything.
		subscribed := checkSubscribed && (g.subscribed == nil || g.subscribed[t.Topic])
		for _, p := range t.Partitions {
			pe := PartitionError{Partition: p}
			if subscribed {
				pe.Err = ErrGroupSubscribedToTopic
			}
			te.Partitions = append(te.Partitions, pe)
		}
		res.Topics = append(res.Topics, te)
	}
	return res, nil
}

// ExpiredOffsets returns the offsets that have outlived retention at now
// (Kafka 2.1+ rules, KIP-211): for an Empty group with a protocol type,
// counted from when the group became Empty; for a Stable consumer group,
// offsets of topics it no longer subscribes to, from their commit time; for
// a group of simple consumers, from the commit time. An offset that an
// open transaction is about to replace does not expire yet (Kafka
// OffsetMetadataManager.cleanupExpiredOffsets). The caller deletes them
// with DeleteOffset.
func (g *Group) ExpiredOffsets(now time.Time, retention time.Duration) []TopicPartition {
	var base func(c Offset) time.Time
	var skip map[string]bool
	switch {
	case g.protocolType != "" && g.state == Empty:
		base = func(Offset) time.Time { return g.stateTime }
	case g.protocolType == ConsumerProtocolType && g.subscribed != nil && g.state == Stable:
		base = func(c Offset) time.Time { return c.CommitTime }
		skip = g.subscribed
	case g.protocolType == "":
		base = func(c Offset) time.Time { return c.CommitTime }
	default:
		return nil
	}
	var out []TopicPartition
	for tp, c := range g.offsets {
		if skip[tp.topic] || g.hasPendingTxnOffset(tp) {
			continue
		}
		if now.Sub(base(c)) >= retention {
			out = append(out, TopicPartition{Topic: tp.topic, Partition: tp.partition})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out
}

// expiredByCommit returns the offsets committed at least retention ago,
// but none of a topic in skip (a consumer group's subscribed topics) nor
// one an open transaction is about to replace.
func (g *Group) expiredByCommit(now time.Time, retention time.Duration, skip map[string]TopicInfo) []TopicPartition {
	var out []TopicPartition
	for tp, c := range g.offsets {
		if _, ok := skip[tp.topic]; ok || g.hasPendingTxnOffset(tp) {
			continue
		}
		if now.Sub(c.CommitTime) >= retention {
			out = append(out, TopicPartition{Topic: tp.topic, Partition: tp.partition})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out
}

// TopicPartition names a partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// MarkDead moves the group to Dead (deleted or expired). It fails every
// waiter with ErrCoordinatorNotAvailable.
func (g *Group) MarkDead(now time.Time) Effects {
	var e Effects
	for _, m := range g.sortedMembers() {
		e.join(m.joinWaiter, JoinGroupResult{MemberID: m.id}, ErrCoordinatorNotAvailable)
		e.sync(m.syncWaiter, SyncGroupResult{}, ErrCoordinatorNotAvailable)
		m.joinWaiter, m.syncWaiter = 0, 0
	}
	g.transition(now, Dead)
	return e
}

// Describe returns the group as DescribeGroups shows it: member metadata
// and assignments only when Stable.
func (g *Group) Describe() GroupDescription {
	d := GroupDescription{Group: g.id, State: g.state.String(), ProtocolType: g.protocolType}
	if g.state == Stable {
		d.Protocol = g.protocol
	}
	for _, m := range g.sortedMembers() {
		md := MemberDescription{MemberID: m.id, InstanceID: m.instanceID, ClientID: m.clientID, ClientHost: m.clientHost}
		if g.state == Stable {
			md.Metadata = m.metadata(g.protocol)
			md.Assignment = m.assignment
		}
		d.Members = append(d.Members, md)
	}
	return d
}
