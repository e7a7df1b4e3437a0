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

// CommitOffset records a validated commit.
func (g *Group) CommitOffset(topic string, partition int32, offset int64, leaderEpoch int32, metadata string, commitTime time.Time) {
	g.offsets[topicPartition{topic, partition}] = offsetCommit{offset: offset, leaderEpoch: leaderEpoch, metadata: metadata, commitTime: commitTime}
}

// DeleteOffset forgets a committed offset; it reports whether there was one.
func (g *Group) DeleteOffset(topic string, partition int32) bool {
	tp := topicPartition{topic, partition}
	_, ok := g.offsets[tp]
	delete(g.offsets, tp)
	return ok
}

// HasOffsets reports whether the group has any committed offset.
func (g *Group) HasOffsets() bool { return len(g.offsets) > 0 }

// FetchOffsets answers an OffsetFetch. Partitions without a commit get
// offset -1; Topics nil returns every committed partition, sorted.
func (g *Group) FetchOffsets(req OffsetFetchRequest) OffsetFetchResult {
	var res OffsetFetchResult
	if req.Topics == nil {
		byTopic := map[string][]FetchedOffset{}
		for tp, c := range g.offsets {
			byTopic[tp.topic] = append(byTopic[tp.topic], FetchedOffset{Partition: tp.partition, Offset: c.offset, LeaderEpoch: c.leaderEpoch, Metadata: c.metadata})
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
			if g.state != Dead {
				if c, ok := g.offsets[topicPartition{t.Topic, p}]; ok {
					fo.Offset, fo.LeaderEpoch, fo.Metadata = c.offset, c.leaderEpoch, c.metadata
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
// a group of simple consumers, from the commit time. The caller deletes
// them with DeleteOffset.
func (g *Group) ExpiredOffsets(now time.Time, retention time.Duration) []TopicPartition {
	var base func(c offsetCommit) time.Time
	var skip map[string]bool
	switch {
	case g.protocolType != "" && g.state == Empty:
		base = func(offsetCommit) time.Time { return g.stateTime }
	case g.protocolType == ConsumerProtocolType && g.subscribed != nil && g.state == Stable:
		base = func(c offsetCommit) time.Time { return c.commitTime }
		skip = g.subscribed
	case g.protocolType == "":
		base = func(c offsetCommit) time.Time { return c.commitTime }
	default:
		return nil
	}
	var out []TopicPartition
	for tp, c := range g.offsets {
		if skip[tp.topic] {
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
