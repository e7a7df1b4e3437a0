package share

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"
)

// Errors of share group membership. The broker maps them to Kafka codes.
var (
	ErrUnknownMemberID   = errors.New("share: unknown member id")
	ErrFencedMemberEpoch = errors.New("share: fenced member epoch")
	ErrGroupIDNotFound   = errors.New("share: group id not found")
	ErrGroupMaxSize      = errors.New("share: group max size reached")
)

// TopicInfo is what the assignor needs of a topic.
type TopicInfo struct {
	ID         [16]byte
	Name       string
	Partitions int32
}

// Topics resolves subscribed topic names; a topic that does not exist
// returns false.
type Topics func(name string) (TopicInfo, bool)

// GroupConfig is a share group's membership configuration.
type GroupConfig struct {
	HeartbeatInterval time.Duration // group.share.heartbeat.interval.ms
	SessionTimeout    time.Duration // group.share.session.timeout.ms
	MaxSize           int           // group.share.max.size
}

// TopicPartitions is an assignment of one topic.
type TopicPartitions struct {
	TopicID    [16]byte
	Topic      string
	Partitions []int32
}

// Member is one member of a share group.
type Member struct {
	ID         string
	Epoch      int32
	RackID     string
	ClientID   string
	ClientHost string
	Topics     []string // subscribed topic names, sorted
	// Epoch and Assignment are the member's current assignment: the
	// target it was given at its last heartbeat.
	Assignment []TopicPartitions
	// target is the member's part of the group's target assignment
	// (computed at the group's assignment epoch).
	target   []TopicPartitions
	deadline time.Time
	// sent is false until a heartbeat answer carried the assignment.
	sent bool
	// previousEpoch is the member's epoch before its last one.
	previousEpoch int32
}

// Group is one share group's membership: a deterministic state machine
// (no goroutines, IO or clock). Not safe for concurrent use.
//
// Every change of the members, their subscriptions or the subscribed
// topics' partition counts bumps the group epoch and recomputes the
// target assignment with the simple assignor. A member moves to the
// target, and to its epoch, at its own next heartbeat, as in Kafka: the
// other members' epochs do not move under them, so a heartbeat that was
// on its way when another member joined is not fenced. Share groups have
// no revocation: a partition may be assigned to several members at once,
// and a member's new assignment applies as soon as it is answered.
type Group struct {
	ID      string
	cfg     GroupConfig
	epoch   int32
	members map[string]*Member
	// sig is the subscribed topics and their partition counts the
	// assignment was computed for, at group epoch assigned.
	sig      string
	assigned int32
}

// NewGroup returns an empty share group.
func NewGroup(id string, cfg GroupConfig) *Group {
	return &Group{ID: id, cfg: cfg, members: map[string]*Member{}}
}

// SetConfig replaces the group's configuration (its group configs
// changed). It applies from the next heartbeat on: a member's session
// deadline moves to the new timeout at its next heartbeat.
func (g *Group) SetConfig(cfg GroupConfig) { g.cfg = cfg }

// HeartbeatRequest is a ShareGroupHeartbeat.
type HeartbeatRequest struct {
	MemberID    string
	MemberEpoch int32
	RackID      *string
	// Topics is nil when unchanged since the last heartbeat.
	Topics     []string
	ClientID   string
	ClientHost string
}

// HeartbeatResult is its answer. Assignment is set when the member must
// be told its assignment (a join, a full request, or a change).
type HeartbeatResult struct {
	MemberEpoch       int32
	HeartbeatInterval time.Duration
	Assignment        []TopicPartitions
	HasAssignment     bool
}

// Heartbeat handles a ShareGroupHeartbeat at now. Epoch 0 joins (or
// rejoins with the same member id), -1 leaves, anything else must be the
// member's current or previous epoch (else ErrFencedMemberEpoch); an unknown member id
// with an epoch other than 0 is ErrUnknownMemberID.
func (g *Group) Heartbeat(req HeartbeatRequest, now time.Time, topics Topics) (HeartbeatResult, error) {
	m := g.members[req.MemberID]
	changed := false
	switch {
	case req.MemberEpoch == -1:
		if m == nil {
			return HeartbeatResult{}, fmt.Errorf("%w: %s", ErrUnknownMemberID, req.MemberID)
		}
		g.remove(req.MemberID, topics)
		return HeartbeatResult{MemberEpoch: -1}, nil
	case req.MemberEpoch == 0:
		if m == nil {
			if g.cfg.MaxSize > 0 && len(g.members) >= g.cfg.MaxSize {
				return HeartbeatResult{}, ErrGroupMaxSize
			}
			m = &Member{ID: req.MemberID}
			g.members[req.MemberID] = m
			changed = true
		}
		m.sent = false
	case m == nil:
		return HeartbeatResult{}, fmt.Errorf("%w: %s", ErrUnknownMemberID, req.MemberID)
	case req.MemberEpoch > m.Epoch || (req.MemberEpoch < m.Epoch && req.MemberEpoch != m.previousEpoch):
		return HeartbeatResult{}, fmt.Errorf("%w: member %s is at epoch %d, not %d", ErrFencedMemberEpoch, req.MemberID, m.Epoch, req.MemberEpoch)
	case req.MemberEpoch != m.Epoch:
		// Reference: GroupMetadataManager.throwIfShareGroupMemberEpochIsInvalid:
		// the previous epoch is accepted (the member's heartbeat
		// crossed the answer that bumped it, or that answer was lost)
		// and is answered with the current epoch and assignment.
		m.sent = false
	}
	m.deadline = now.Add(g.cfg.SessionTimeout)
	m.ClientID, m.ClientHost = req.ClientID, req.ClientHost
	if req.RackID != nil {
		m.RackID = *req.RackID
	}
	if req.Topics != nil {
		ts := slices.Clone(req.Topics)
		sort.Strings(ts)
		ts = slices.Compact(ts)
		if !slices.Equal(ts, m.Topics) {
			m.Topics = ts
			changed = true
		}
		m.sent = false
	}
	if changed {
		g.epoch++
	}
	g.maybeAssign(topics)
	if m.Epoch != g.assigned {
		m.previousEpoch, m.Epoch = m.Epoch, g.assigned
		if !equalAssignment(m.target, m.Assignment) {
			m.Assignment = cloneAssignment(m.target)
			m.sent = false
		}
	}
	res := HeartbeatResult{MemberEpoch: m.Epoch, HeartbeatInterval: g.cfg.HeartbeatInterval}
	if !m.sent {
		res.Assignment, res.HasAssignment = m.Assignment, true
		m.sent = true
	}
	return res, nil
}

// remove takes a member out and reassigns.
func (g *Group) remove(id string, topics Topics) {
	delete(g.members, id)
	g.epoch++
	g.maybeAssign(topics)
}

// Expire removes the members whose session ended at or before now and
// returns their ids.
func (g *Group) Expire(now time.Time, topics Topics) []string {
	var gone []string
	for id, m := range g.members {
		if !m.deadline.After(now) {
			gone = append(gone, id)
		}
	}
	sort.Strings(gone)
	for _, id := range gone {
		g.remove(id, topics)
	}
	return gone
}

// Refresh recomputes the assignment if the subscribed topics' partitions
// changed (the metadata image moved).
func (g *Group) Refresh(topics Topics) { g.maybeAssign(topics) }

// maybeAssign recomputes the target assignment when the group epoch
// moved or the subscribed topics changed. The members move to it at
// their heartbeats (Heartbeat).
func (g *Group) maybeAssign(topics Topics) {
	sig, infos := g.signature(topics)
	if sig != g.sig {
		// The subscribed topics or their partitions changed.
		if g.assigned == g.epoch {
			g.epoch++
		}
		g.sig = sig
	}
	if g.assigned == g.epoch {
		return
	}
	g.assigned = g.epoch
	assign := SimpleAssign(g.memberIDs(), func(id string) []string { return g.members[id].Topics }, infos)
	for id, m := range g.members {
		m.target = assign[id]
	}
}

// signature returns the subscribed topics and their partition counts as
// a string, and the topics that exist.
func (g *Group) signature(topics Topics) (string, map[string]TopicInfo) {
	subscribed := map[string]bool{}
	for _, m := range g.members {
		for _, t := range m.Topics {
			subscribed[t] = true
		}
	}
	names := make([]string, 0, len(subscribed))
	for t := range subscribed {
		names = append(names, t)
	}
	sort.Strings(names)
	infos := map[string]TopicInfo{}
	sig := ""
	for _, n := range names {
		if ti, ok := topics(n); ok {
			infos[n] = ti
			sig += fmt.Sprintf("|%s:%x:%d", n, ti.ID, ti.Partitions)
		}
	}
	return sig, infos
}

func equalAssignment(a, b []TopicPartitions) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].TopicID != b[i].TopicID || !slices.Equal(a[i].Partitions, b[i].Partitions) {
			return false
		}
	}
	return true
}

func (g *Group) memberIDs() []string {
	ids := make([]string, 0, len(g.members))
	for id := range g.members {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// SimpleAssign is the simple assignor of share groups: for each topic,
// the members subscribed to it (in member id order) take its partitions
// round robin; when a topic has more members than partitions, partitions
// are shared so that every member gets one (partition j % n). Every
// partition of a subscribed topic is assigned while a member subscribes
// to it. The result is sorted by topic name and partition.
func SimpleAssign(members []string, subs func(string) []string, topics map[string]TopicInfo) map[string][]TopicPartitions {
	out := map[string][]TopicPartitions{}
	names := make([]string, 0, len(topics))
	for n := range topics {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		ti := topics[n]
		var ms []string
		for _, id := range members {
			if slices.Contains(subs(id), n) {
				ms = append(ms, id)
			}
		}
		if len(ms) == 0 || ti.Partitions <= 0 {
			continue
		}
		per := map[string][]int32{}
		for p := int32(0); p < ti.Partitions; p++ {
			id := ms[int(p)%len(ms)]
			per[id] = append(per[id], p)
		}
		if len(ms) > int(ti.Partitions) {
			for j := int(ti.Partitions); j < len(ms); j++ {
				per[ms[j]] = append(per[ms[j]], int32(j%int(ti.Partitions)))
			}
		}
		for _, id := range ms {
			if ps := per[id]; len(ps) > 0 {
				out[id] = append(out[id], TopicPartitions{TopicID: ti.ID, Topic: n, Partitions: ps})
			}
		}
	}
	return out
}

// Epoch is the group epoch.
func (g *Group) Epoch() int32 { return g.epoch }

// Empty reports whether the group has no member.
func (g *Group) Empty() bool { return len(g.members) == 0 }

// State is the group state as ListGroups and ShareGroupDescribe name it.
func (g *Group) State() string {
	if len(g.members) == 0 {
		return "Empty"
	}
	return "Stable"
}

// Members returns copies of the members in member id order.
func (g *Group) Members() []Member {
	out := make([]Member, 0, len(g.members))
	for _, id := range g.memberIDs() {
		out = append(out, *g.members[id])
	}
	return out
}

// NextDeadline is the earliest session deadline, zero when empty.
func (g *Group) NextDeadline() time.Time {
	var d time.Time
	for _, m := range g.members {
		if d.IsZero() || m.deadline.Before(d) {
			d = m.deadline
		}
	}
	return d
}
