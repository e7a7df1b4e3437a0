package group

import (
	"encoding/binary"
	"slices"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Classic members of a consumer group and the conversions between the
// two protocols (KIP-848 online migration). See doc.go, "Migration".
//
// Reference: Kafka GroupMetadataManager classicGroupJoinToConsumerGroup,
// classicGroupSyncToConsumerGroup, classicGroupHeartbeatToConsumerGroup,
// classicGroupLeaveToConsumerGroup, convertToConsumerGroup and
// convertToClassicGroup.

// useClassic reports whether the member joined with JoinGroup.
func (m *ConsumerMember) useClassic() bool { return m.Classic != nil }

// numClassic returns how many members use the classic protocol.
func (g *ConsumerGroup) numClassic() int {
	n := 0
	for _, m := range g.members {
		if m.useClassic() {
			n++
		}
	}
	return n
}

// supportsClassic reports whether a JoinGroup's protocols fit the group:
// the consumer protocol type, and a protocol every classic member has.
func (g *ConsumerGroup) supportsClassic(protocolType string, protocols []Protocol) bool {
	if protocolType != ConsumerProtocolType || len(protocols) == 0 {
		return false
	}
	for _, p := range protocols {
		all := true
		for _, m := range g.members {
			if m.useClassic() && !hasProtocol(m.Classic.Protocols, p.Name) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

// ClassicJoin handles a JoinGroup of a consumer group with members. The
// member joins as a classic member: its subscription and owned partitions
// come from the protocol metadata, it is reconciled at once, and the
// answer is immediate, with the member epoch as generation and no leader
// (the coordinator assigns). With RequireKnownMemberID a first join gets
// ErrMemberIDRequired and an id. Like Heartbeat it does not change the
// group: the runtime stores the change and then applies it.
func (g *ConsumerGroup) ClassicJoin(now time.Time, topics Topics, req JoinGroupRequest) (JoinGroupResult, Change, error) {
	memberID := req.MemberID
	unknown := memberID == ""
	if unknown {
		memberID = g.cfg.NewMemberID()
	}
	fail := func(err error) (JoinGroupResult, Change, error) {
		return JoinGroupResult{MemberID: req.MemberID}, Change{}, err
	}
	var existing *ConsumerMember
	if req.InstanceID != nil {
		if id, ok := g.instances[*req.InstanceID]; ok {
			existing = g.members[id]
		}
	} else {
		existing = g.members[memberID]
	}
	if existing == nil && int32(len(g.members)) >= g.cfg.MaxSize {
		return fail(errf(ErrGroupMaxSizeReached, "The consumer group has reached its maximum capacity of %d members.", g.cfg.MaxSize))
	}
	if !g.supportsClassic(req.ProtocolType, req.Protocols) {
		return fail(errf(ErrInconsistentGroupProtocol, "Member %s's protocols are not supported.", memberID))
	}
	if unknown && req.RequireKnownMemberID && req.InstanceID == nil {
		// Reference: KIP-394; the id is not kept: the member joins
		// with it as a new member.
		return JoinGroupResult{MemberID: memberID, Generation: -1}, Change{}, ErrMemberIDRequired
	}
	sub, err := parseSubscription(req.Protocols[0].Metadata)
	if err != nil {
		return fail(errf(ErrInconsistentGroupProtocol, "Member %s's consumer protocol subscription is malformed.", memberID))
	}
	ch := Change{now: now}
	var member *ConsumerMember
	isNew, replaced := false, ""
	switch {
	case req.InstanceID != nil && existing != nil && unknown:
		// A static member rejoining with a new id takes the old one's
		// place (the classic protocol's rule, KIP-345).
		member = g.replaceStatic(&ch, existing, memberID)
		replaced = existing.ID
	case req.InstanceID != nil && existing != nil && existing.ID != memberID:
		return fail(errf(ErrFencedInstanceID, "Static member %s with instance id %s was fenced by member %s.", memberID, *req.InstanceID, existing.ID))
	case existing != nil:
		member = existing.clone()
	default:
		isNew = true
		member = &ConsumerMember{ID: memberID, RebalanceTimeout: -1, Assigned: PartitionSet{}, PendingRevocation: PartitionSet{}}
	}
	old := member.clone()
	member.InstanceID = req.InstanceID
	if sub.Rack != nil && *sub.Rack != "" {
		member.RackID = sub.Rack
	}
	member.RebalanceTimeout = req.RebalanceTimeout
	names := slices.Clone(sub.Topics)
	slices.Sort(names)
	member.SubscribedTopicNames = slices.Compact(names)
	member.SubscribedTopicRegex = ""
	member.ClientID, member.ClientHost = req.ClientID, req.ClientHost
	member.Classic = &ClassicMemberMetadata{SessionTimeout: req.SessionTimeout, Protocols: cloneProtocols(req.Protocols)}

	owned := PartitionSet{}
	for _, t := range sub.OwnedPartitions {
		if info, ok := topics.Topic(t.Topic); ok {
			owned[info.ID] = append(owned[info.ID], t.Partitions...)
		}
	}
	owned = assignmentOf(owned.list())
	next := g.update(&ch, now, topics, member, old, isNew, replaced, owned)
	if replaced != "" && g.canDowngradeReplacing(replaced) {
		// Reference: Kafka validateOnlineDowngradeWithReplacedMemberId:
		// the last consumer-protocol member, static, is replaced by this
		// classic one; the group becomes a classic group without a
		// rebalance, the new member in the old one's place.
		ch.Records = append(ch.Records, g.deleteReplacing(replaced, next.ID)...)
		snap := g.classicSnapshot(replaced)
		snap.Members = append(snap.Members, classicSnapshotMember(next, g.target[replaced]))
		sort.Slice(snap.Members, func(i, j int) bool { return snap.Members[i].ID < snap.Members[j].ID })
		ch.Downgrade = snap
		return JoinGroupResult{MemberID: next.ID, Generation: snap.Generation, ProtocolType: ConsumerProtocolType,
			Protocol: req.Protocols[0].Name}, ch, nil
	}
	ch.touch = append(ch.touch, next.ID)
	ch.joins = append(ch.joins, memberTimer{member: next.ID})
	ch.syncs = append(ch.syncs, memberTimer{member: next.ID, at: now.Add(max(req.RebalanceTimeout, 0))})
	return JoinGroupResult{
		MemberID:     next.ID,
		Generation:   next.Epoch,
		ProtocolType: ConsumerProtocolType,
		Protocol:     req.Protocols[0].Name,
	}, ch, nil
}

func cloneProtocols(ps []Protocol) []Protocol {
	out := make([]Protocol, len(ps))
	for i, p := range ps {
		out[i] = Protocol{Name: p.Name, Metadata: slices.Clone(p.Metadata)}
	}
	return out
}

// classicMember finds the classic member of a SyncGroup, Heartbeat or
// LeaveGroup: by instance id when given (ErrUnknownMemberID,
// ErrFencedInstanceID), else by member id; a member of the consumer
// protocol is ErrUnknownMemberID.
func (g *ConsumerGroup) classicMember(memberID string, instanceID *string) (*ConsumerMember, error) {
	var m *ConsumerMember
	if instanceID != nil {
		id, ok := g.instances[*instanceID]
		if ok {
			m = g.members[id]
		}
		if m == nil {
			return nil, errf(ErrUnknownMemberID, "Member with instance id %s is not a member of group %s.", *instanceID, g.id)
		}
		if memberID != "" && m.ID != memberID {
			return nil, errf(ErrFencedInstanceID, "Static member %s with instance id %s was fenced by member %s.", memberID, *instanceID, m.ID)
		}
	} else if m = g.members[memberID]; m == nil {
		return nil, errf(ErrUnknownMemberID, "Member %s is not a member of group %s.", memberID, g.id)
	}
	if !m.useClassic() {
		return nil, errf(ErrUnknownMemberID, "Member %s does not use the classic protocol.", m.ID)
	}
	return m, nil
}

// rejoinTimer asks a classic member told to rejoin to do so within its
// rebalance timeout, unless a join deadline already runs.
func rejoinTimer(ch *Change, m *ConsumerMember, now time.Time) {
	if m.joinDeadline.IsZero() {
		ch.joins = append(ch.joins, memberTimer{member: m.ID, at: now.Add(max(m.RebalanceTimeout, 0))})
	}
}

// ClassicSync handles a SyncGroup of a classic member: it answers with the
// member's assigned partitions (not those it must revoke) in the consumer
// protocol at the version of the member's subscription, or
// ErrRebalanceInProgress when the group epoch moved past the member's and
// it has nothing to revoke (it must rejoin). No records.
func (g *ConsumerGroup) ClassicSync(now time.Time, topics Topics, req SyncGroupRequest) (SyncGroupResult, Change, error) {
	m, err := g.classicMember(req.MemberID, req.InstanceID)
	if err != nil {
		return SyncGroupResult{}, Change{}, err
	}
	if req.Generation != m.Epoch {
		return SyncGroupResult{}, Change{}, errf(ErrIllegalGeneration, "The request generation id %d is not equal to the member epoch %d of member %s.", req.Generation, m.Epoch, m.ID)
	}
	protocol := m.Classic.Protocols[0]
	if (req.ProtocolType != nil && *req.ProtocolType != ConsumerProtocolType) || (req.Protocol != nil && *req.Protocol != protocol.Name) {
		return SyncGroupResult{}, Change{}, errf(ErrInconsistentGroupProtocol, "The protocol of member %s does not match the one returned in its join response.", m.ID)
	}
	ch := Change{now: now}
	if g.epoch > m.Epoch && m.State != MemberUnrevokedPartitions {
		rejoinTimer(&ch, m, now)
		return SyncGroupResult{}, ch, errf(ErrRebalanceInProgress, "A new rebalance is triggered in group %s and member %s should rejoin to catch up.", g.id, m.ID)
	}
	ch.touch = append(ch.touch, m.ID)
	ch.syncs = append(ch.syncs, memberTimer{member: m.ID})
	return SyncGroupResult{
		ProtocolType: ConsumerProtocolType,
		Protocol:     protocol.Name,
		Assignment:   encodeAssignment(topics, m.Assigned, subscriptionVersion(protocol.Metadata)),
	}, ch, nil
}

// ClassicHeartbeat handles a Heartbeat of a classic member. It answers
// ErrRebalanceInProgress when the member must rejoin: the group epoch
// passed its epoch, it has partitions to revoke, or partitions it waited
// for are free. No records.
func (g *ConsumerGroup) ClassicHeartbeat(now time.Time, req HeartbeatRequest) (Change, error) {
	m, err := g.classicMember(req.MemberID, req.InstanceID)
	if err != nil {
		return Change{}, err
	}
	if req.Generation != m.Epoch {
		return Change{}, errf(ErrIllegalGeneration, "The request generation id %d is not equal to the member epoch %d of member %s.", req.Generation, m.Epoch, m.ID)
	}
	ch := Change{now: now, touch: []string{m.ID}}
	if m.Epoch < g.epoch || m.State == MemberUnrevokedPartitions ||
		(m.State == MemberUnreleasedPartitions && !g.waitingOnUnreleased(m)) {
		rejoinTimer(&ch, m, now)
		return ch, ErrRebalanceInProgress
	}
	return ch, nil
}

// waitingOnUnreleased reports whether a partition of the member's target
// it does not have yet is still owned by another member.
func (g *ConsumerGroup) waitingOnUnreleased(m *ConsumerMember) bool {
	for t, ps := range g.target[m.ID] {
		for _, p := range ps {
			if m.Assigned.has(t, p) {
				continue
			}
			if o, ok := g.owners[topicPart{t, p}]; ok && o.member != m.ID {
				return true
			}
		}
	}
	return false
}

// ClassicLeave handles a LeaveGroup of classic members: each leaves (an
// unknown one, or one of the consumer protocol, is ErrUnknownMemberID in
// its result), then the group epoch is bumped once. A classic member
// leaving never downgrades the group.
func (g *ConsumerGroup) ClassicLeave(now time.Time, topics Topics, req LeaveGroupRequest) (LeaveGroupResult, Change) {
	res := LeaveGroupResult{Members: make([]LeaveMemberResult, 0, len(req.Members))}
	ch := Change{now: now}
	scratch := g.scratch()
	left := false
	for _, lm := range req.Members {
		r := LeaveMemberResult{MemberID: lm.MemberID, InstanceID: lm.InstanceID}
		m, err := scratch.classicMember(lm.MemberID, lm.InstanceID)
		if err != nil {
			r.Err = err
		} else {
			r.MemberID = m.ID
			recs := []CGRecord{
				currentAssignmentTombstone(g.id, m.ID),
				targetMemberTombstone(g.id, m.ID),
				memberMetadataTombstone(g.id, m.ID),
			}
			scratch.Apply(Change{Records: recs})
			ch.Records = append(ch.Records, recs...)
			left = true
		}
		res.Members = append(res.Members, r)
	}
	if left {
		if meta := scratch.subscribedTopics(topics, &ConsumerMember{}, true); !sameTopics(meta, g.subscribed) {
			ch.Records = append(ch.Records, partitionMetadataRecord(g.id, meta))
		}
		ch.Records = append(ch.Records, groupEpochRecord(g.id, g.epoch+1))
	}
	return res, ch
}

// canDowngrade reports whether fencing member id converts the group to
// a classic group: the policy allows it, id is the last member of the
// consumer protocol, others remain, and they fit group.max.size.
//
// Reference: Kafka validateOnlineDowngradeWithFencedMember.
func (g *ConsumerGroup) canDowngrade(id string) bool {
	m := g.members[id]
	return g.cfg.Downgrade && m != nil && !m.useClassic() && g.numClassic() == len(g.members)-1 &&
		len(g.members) > 1 && int32(len(g.members)-1) <= g.cfg.ClassicMaxSize
}

// canDowngradeReplacing reports whether a classic static member taking
// over member id converts the group to a classic group: the policy
// allows it, id is the last member of the consumer protocol, and the
// members fit group.max.size.
func (g *ConsumerGroup) canDowngradeReplacing(id string) bool {
	m := g.members[id]
	return g.cfg.Downgrade && m != nil && !m.useClassic() && g.numClassic() == len(g.members)-1 &&
		int32(len(g.members)) <= g.cfg.ClassicMaxSize
}

// deleteReplacing is Delete's tombstones with member replaced named as
// joining, whose records the same change writes.
//
// Reference: Kafka createGroupTombstoneRecordsWithReplacedMember.
func (g *ConsumerGroup) deleteReplacing(replaced, joining string) []CGRecord {
	ids := g.sortedMemberIDs()
	for i, id := range ids {
		if id == replaced {
			ids[i] = joining
		}
	}
	var recs []CGRecord
	for _, id := range ids {
		recs = append(recs, currentAssignmentTombstone(g.id, id))
	}
	for _, id := range ids {
		recs = append(recs, targetMemberTombstone(g.id, id))
	}
	recs = append(recs, targetEpochTombstone(g.id))
	for _, id := range ids {
		recs = append(recs, memberMetadataTombstone(g.id, id))
	}
	return append(recs, partitionMetadataTombstone(g.id), groupEpochTombstone(g.id))
}

// ClassicSnapshot is a consumer group turned into a classic group: the
// generation (the group epoch) and the classic members with their target
// assignments. The runtime writes it as the classic group metadata, and
// then, with Rebalance, starts a rebalance.
type ClassicSnapshot struct {
	Generation int32
	Members    []ClassicSnapshotMember
	Rebalance  bool
}

// ClassicSnapshotMember is one member of a ClassicSnapshot.
type ClassicSnapshotMember struct {
	ID               string
	InstanceID       *string
	ClientID         string
	ClientHost       string
	RebalanceTimeout time.Duration
	SessionTimeout   time.Duration
	Protocols        []Protocol
	Assignment       PartitionSet
}

// downgrade deletes the consumer group, leaving member leaving out of
// the classic group it becomes.
func (g *ConsumerGroup) downgrade(now time.Time, leaving string) Change {
	ch := g.Delete()
	ch.now = now
	ch.Downgrade = g.classicSnapshot(leaving)
	ch.Downgrade.Rebalance = true
	return ch
}

// classicSnapshot is the group's classic members but leaving, with their
// targets.
func (g *ConsumerGroup) classicSnapshot(leaving string) *ClassicSnapshot {
	snap := &ClassicSnapshot{Generation: g.epoch}
	for _, id := range g.sortedMemberIDs() {
		if id != leaving {
			snap.Members = append(snap.Members, classicSnapshotMember(g.members[id], g.target[id]))
		}
	}
	return snap
}

func classicSnapshotMember(m *ConsumerMember, target PartitionSet) ClassicSnapshotMember {
	return ClassicSnapshotMember{
		ID: m.ID, InstanceID: m.InstanceID, ClientID: m.ClientID, ClientHost: m.ClientHost,
		RebalanceTimeout: m.RebalanceTimeout, SessionTimeout: m.Classic.SessionTimeout,
		Protocols: cloneProtocols(m.Classic.Protocols), Assignment: target.clone(),
	}
}

// adoptClassic makes the group, which has no members, the classic group
// of a downgraded consumer group: Stable at the snapshot's generation,
// the protocol all members vote for, assignments in the consumer protocol
// at each member's subscription version. The caller writes
// MetadataRecord and then starts a rebalance.
//
// Reference: Kafka ClassicGroup.fromConsumerGroup.
func (g *Group) adoptClassic(snap *ClassicSnapshot, topics Topics, now time.Time) {
	g.clearMembership(now)
	g.protocolType = ConsumerProtocolType
	g.generation = snap.Generation
	for _, sm := range snap.Members {
		g.seq++
		m := &member{
			id: sm.ID, instanceID: sm.InstanceID, clientID: sm.ClientID, clientHost: sm.ClientHost,
			protocolType: ConsumerProtocolType, protocols: cloneProtocols(sm.Protocols),
			sessionTimeout: sm.SessionTimeout, rebalanceTimeout: sm.RebalanceTimeout,
			seq: g.seq, deadline: now.Add(sm.SessionTimeout),
		}
		g.members[m.id] = m
		if m.instanceID != nil {
			g.instances[*m.instanceID] = m.id
		}
		if g.leader == "" {
			g.leader = m.id
		}
	}
	g.protocol = g.selectProtocol()
	for _, sm := range snap.Members {
		m := g.members[sm.ID]
		m.assignment = encodeAssignment(topics, sm.Assignment, subscriptionVersion(m.metadata(g.protocol)))
	}
	g.subscribed = g.computeSubscribed()
	g.transition(now, Stable)
}

// clearMembership drops the classic membership (members, generation,
// protocol, timers) and leaves the offsets: the group is Empty.
func (g *Group) clearMembership(now time.Time) {
	g.members = map[string]*member{}
	g.instances = map[string]string{}
	g.pending = map[string]time.Time{}
	g.awaiting = 0
	g.generation = 0
	g.protocolType, g.protocol, g.leader = "", "", ""
	g.joinDeadline, g.syncDeadline = time.Time{}, time.Time{}
	g.initialJoin, g.newMemberAdded = false, false
	g.pendingSync = nil
	g.subscribed = nil
	g.rebalanceStart = time.Time{}
	g.transition(now, Empty)
}

// abortWaiters answers every parked JoinGroup and SyncGroup with err.
func (g *Group) abortWaiters(err error) Effects {
	var e Effects
	for _, m := range g.sortedMembers() {
		if m.joinWaiter != 0 {
			e.join(m.joinWaiter, JoinGroupResult{MemberID: m.id}, err)
			m.joinWaiter = 0
		}
		if m.syncWaiter != 0 {
			e.sync(m.syncWaiter, SyncGroupResult{}, err)
			m.syncWaiter = 0
		}
	}
	g.awaiting = 0
	return e
}

// canUpgrade reports whether a ConsumerGroupHeartbeat may convert the
// classic group, which has members: the consumer protocol type, and no
// more members than group.consumer.max.size.
//
// Reference: Kafka validateOnlineUpgrade.
func (g *Group) canUpgrade(maxSize int32) bool {
	return g.protocolType == ConsumerProtocolType && int32(len(g.members)) <= maxSize && g.state != Dead
}

// consumerFromClassic converts a classic group to a consumer group: every
// member keeps its id, instance, subscription and last assignment at
// epoch = the generation, Stable, its target that assignment. It returns
// the group with the change applied and the change (its records create
// the group; the caller also writes the classic group's tombstone).
//
// NB: a member without an assignment (the classic group was rebalancing)
// keeps the partitions its subscription says it owns (cooperative
// clients name them), so that no partition it still holds is given to
// another member; a partition two members claim stays with the first.
//
// Reference: Kafka ConsumerGroup.fromClassicGroup, createConsumerGroupRecords.
func consumerFromClassic(g *Group, cfg ConsumerGroupConfig, topics Topics, now time.Time) (*ConsumerGroup, Change, error) {
	cg := NewConsumerGroup(g.id, cfg)
	gen := g.generation
	taken := map[topicPart]bool{}
	var members []*ConsumerMember
	for _, m := range g.sortedMembers() {
		md := m.metadata(g.protocol)
		if md == nil && len(m.protocols) > 0 {
			md = m.protocols[0].Metadata
		}
		sub, err := parseSubscription(md)
		if err != nil {
			return nil, Change{}, errf(ErrGroupIDNotFound, "Cannot upgrade the classic group %s to consumer group because the embedded consumer protocol is malformed.", g.id)
		}
		var tps []kmsg.ConsumerMemberMetadataOwnedPartition
		if len(m.assignment) > 0 {
			a, err := parseAssignment(m.assignment)
			if err != nil {
				return nil, Change{}, errf(ErrGroupIDNotFound, "Cannot upgrade the classic group %s to consumer group because the embedded consumer protocol is malformed.", g.id)
			}
			for _, t := range a.Topics {
				tps = append(tps, kmsg.ConsumerMemberMetadataOwnedPartition{Topic: t.Topic, Partitions: t.Partitions})
			}
		} else {
			tps = sub.OwnedPartitions
		}
		assigned := PartitionSet{}
		for _, t := range tps {
			info, ok := topics.Topic(t.Topic)
			if !ok {
				continue
			}
			for _, p := range t.Partitions {
				k := topicPart{info.ID, p}
				if p < 0 || p >= info.Partitions || taken[k] {
					continue
				}
				taken[k] = true
				assigned[info.ID] = append(assigned[info.ID], p)
			}
		}
		assigned = assignmentOf(assigned.list())
		names := slices.Clone(sub.Topics)
		sort.Strings(names)
		cm := &ConsumerMember{
			ID: m.id, InstanceID: m.instanceID, ClientID: m.clientID, ClientHost: m.clientHost,
			SubscribedTopicNames: slices.Compact(names), RebalanceTimeout: m.rebalanceTimeout,
			Epoch: gen, PreviousEpoch: gen, State: MemberStable,
			Assigned: assigned, PendingRevocation: PartitionSet{},
			Classic: &ClassicMemberMetadata{SessionTimeout: m.sessionTimeout, Protocols: cloneProtocols(m.protocols)},
		}
		if sub.Rack != nil && *sub.Rack != "" {
			cm.RackID = sub.Rack
		}
		members = append(members, cm)
	}
	ch := Change{now: now}
	for _, m := range members {
		ch.Records = append(ch.Records, memberMetadataRecord(g.id, m))
	}
	ch.Records = append(ch.Records, groupEpochRecord(g.id, gen))
	for _, m := range members {
		ch.Records = append(ch.Records, targetMemberRecord(g.id, m.ID, m.Assigned))
	}
	ch.Records = append(ch.Records, targetEpochRecord(g.id, gen))
	for _, m := range members {
		ch.Records = append(ch.Records, currentAssignmentRecord(g.id, m))
		ch.touch = append(ch.touch, m.ID)
	}
	cg.Apply(ch)
	return cg, ch, nil
}

// parseSubscription decodes a consumer protocol subscription (versions
// 0-3); a malformed one is errBadSubscription.
func parseSubscription(b []byte) (kmsg.ConsumerMemberMetadata, error) {
	var s kmsg.ConsumerMemberMetadata
	if len(b) < 2 || int16(binary.BigEndian.Uint16(b)) < 0 {
		return s, errBadSubscription
	}
	if err := s.ReadFrom(b); err != nil {
		return s, errBadSubscription
	}
	return s, nil
}

// parseAssignment decodes a consumer protocol assignment.
func parseAssignment(b []byte) (kmsg.ConsumerMemberAssignment, error) {
	var a kmsg.ConsumerMemberAssignment
	if err := a.ReadFrom(b); err != nil {
		return a, errBadSubscription
	}
	return a, nil
}

// subscriptionVersion is the version of a consumer protocol subscription,
// capped at the highest assignment version (3); 0 when unreadable.
func subscriptionVersion(b []byte) int16 {
	if len(b) < 2 {
		return 0
	}
	return min(max(int16(binary.BigEndian.Uint16(b)), 0), 3)
}

// encodeAssignment encodes partitions as a consumer protocol assignment,
// topics by name (sorted); partitions of topics no longer known are left
// out.
func encodeAssignment(topics Topics, a PartitionSet, version int16) []byte {
	out := kmsg.NewConsumerMemberAssignment()
	out.Version = version
	for id, ps := range a {
		t, ok := topics.TopicByID(id)
		if !ok {
			continue
		}
		at := kmsg.NewConsumerMemberAssignmentTopic()
		at.Topic, at.Partitions = t.Name, slices.Clone(ps)
		out.Topics = append(out.Topics, at)
	}
	sort.Slice(out.Topics, func(i, j int) bool { return out.Topics[i].Topic < out.Topics[j].Topic })
	return out.AppendTo(nil)
}
