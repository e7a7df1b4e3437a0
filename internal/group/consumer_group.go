package group

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"time"
)

// TopicID is a topic's UUID.
type TopicID = [16]byte

// TopicInfo is a topic as a consumer group sees it.
type TopicInfo struct {
	Name       string
	ID         TopicID
	Partitions int32
}

// Topics is the cluster's topics as a consumer group needs them. The
// coordinator's caller implements it over its metadata image; an
// implementation must not change while a call uses it.
type Topics interface {
	// Topic looks a topic up by name.
	Topic(name string) (TopicInfo, bool)
	// TopicByID looks a topic up by id.
	TopicByID(id TopicID) (TopicInfo, bool)
	// Names returns every topic name, for regular expression
	// subscriptions. The caller must not modify the slice.
	Names() []string
	// Version changes whenever the topics change: the group recomputes
	// its subscribed topics' metadata only when it or a subscription
	// changed.
	Version() int64
}

// TopicMap is a Topics over a map by name, for tests and benchmarks.
type TopicMap map[string]TopicInfo

// Topic implements Topics.
func (m TopicMap) Topic(name string) (TopicInfo, bool) { t, ok := m[name]; return t, ok }

// TopicByID implements Topics.
func (m TopicMap) TopicByID(id TopicID) (TopicInfo, bool) {
	for _, t := range m {
		if t.ID == id {
			return t, true
		}
	}
	return TopicInfo{}, false
}

// Names implements Topics.
func (m TopicMap) Names() []string {
	out := make([]string, 0, len(m))
	for n := range m {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Version implements Topics: a map has no version, so every call
// recomputes (-1 never equals a cached version).
func (m TopicMap) Version() int64 { return -1 }

// TopicPartitions is a topic's partitions by topic id.
type TopicPartitions struct {
	TopicID    TopicID
	Partitions []int32
}

// PartitionSet is a set of partitions by topic id. Every slice is sorted,
// without duplicates, and not empty.
type PartitionSet map[TopicID][]int32

func (a PartitionSet) clone() PartitionSet {
	out := make(PartitionSet, len(a))
	for t, ps := range a {
		out[t] = slices.Clone(ps)
	}
	return out
}

func (a PartitionSet) equal(b PartitionSet) bool {
	if len(a) != len(b) {
		return false
	}
	for t, ps := range a {
		if !slices.Equal(ps, b[t]) {
			return false
		}
	}
	return true
}

func (a PartitionSet) size() int {
	n := 0
	for _, ps := range a {
		n += len(ps)
	}
	return n
}

func (a PartitionSet) has(t TopicID, p int32) bool {
	_, ok := slices.BinarySearch(a[t], p)
	return ok
}

// list returns the assignment sorted by topic id.
func (a PartitionSet) list() []TopicPartitions {
	out := make([]TopicPartitions, 0, len(a))
	for t, ps := range a {
		out = append(out, TopicPartitions{TopicID: t, Partitions: slices.Clone(ps)})
	}
	sort.Slice(out, func(i, j int) bool { return string(out[i].TopicID[:]) < string(out[j].TopicID[:]) })
	return out
}

// assignmentOf builds a PartitionSet from a request's list, sorting and
// dropping duplicates and negative partitions.
func assignmentOf(l []TopicPartitions) PartitionSet {
	a := PartitionSet{}
	for _, tp := range l {
		ps := append(a[tp.TopicID], tp.Partitions...)
		a[tp.TopicID] = ps
	}
	for t, ps := range a {
		slices.Sort(ps)
		ps = slices.Compact(ps)
		for len(ps) > 0 && ps[0] < 0 {
			ps = ps[1:]
		}
		if len(ps) == 0 {
			delete(a, t)
		} else {
			a[t] = ps
		}
	}
	return a
}

// MemberState is a consumer group member's reconciliation state, numbered
// as Kafka's MemberState in the current assignment record.
type MemberState int8

// Member states.
const (
	// MemberStable: the member owns its assignment at its epoch.
	MemberStable MemberState = 0
	// MemberUnrevokedPartitions: the member must revoke
	// PartitionsPendingRevocation before it moves to the next epoch.
	MemberUnrevokedPartitions MemberState = 1
	// MemberUnreleasedPartitions: the member is at the target epoch, but
	// some partitions of its target are still owned by other members.
	MemberUnreleasedPartitions MemberState = 2
)

// String returns Kafka's name of the state.
func (s MemberState) String() string {
	switch s {
	case MemberStable:
		return "stable"
	case MemberUnrevokedPartitions:
		return "unrevoked_partitions"
	case MemberUnreleasedPartitions:
		return "unreleased_partitions"
	}
	return "unknown"
}

// Member epochs with a meaning in ConsumerGroupHeartbeat.
const (
	// JoinEpoch (0) joins or rejoins the group.
	JoinEpoch int32 = 0
	// LeaveEpoch (-1) leaves the group.
	LeaveEpoch int32 = -1
	// StaticLeaveEpoch (-2) leaves the group temporarily: a static
	// member keeps its place and assignment until its session ends.
	StaticLeaveEpoch int32 = -2
)

// ConsumerMember is a member of a consumer group.
type ConsumerMember struct {
	ID                   string
	InstanceID           *string
	RackID               *string
	ClientID             string
	ClientHost           string
	SubscribedTopicNames []string // sorted
	SubscribedTopicRegex string   // "" when none
	// RebalanceTimeout bounds how long the member may take to revoke
	// partitions.
	RebalanceTimeout time.Duration
	ServerAssignor   string // "" when the member named none

	Epoch             int32
	PreviousEpoch     int32
	State             MemberState
	Assigned          PartitionSet
	PendingRevocation PartitionSet

	// Classic is set for a member that joined with JoinGroup (a classic
	// member of a consumer group, KIP-848's online migration); nil for a
	// member of the consumer protocol.
	Classic *ClassicMemberMetadata

	// sessionDeadline is when the member is removed unless it
	// heartbeats; revokeDeadline (zero when none) is when it is removed
	// unless it has revoked what it must, at revokeEpoch.
	sessionDeadline time.Time
	revokeDeadline  time.Time
	revokeEpoch     int32
	// joinDeadline (a classic member told to rejoin) and syncDeadline (a
	// classic member that joined and must sync) are zero when not
	// running; the member is fenced when one passes.
	joinDeadline time.Time
	syncDeadline time.Time
}

// ClassicMemberMetadata is what a classic member sent in its JoinGroup,
// kept in its member metadata record (Kafka's ClassicMemberMetadata,
// tagged field 0).
type ClassicMemberMetadata struct {
	SessionTimeout time.Duration
	// Protocols are the member's protocols in preference order, each
	// with its consumer protocol subscription.
	Protocols []Protocol
}

func (c *ClassicMemberMetadata) clone() *ClassicMemberMetadata {
	if c == nil {
		return nil
	}
	out := &ClassicMemberMetadata{SessionTimeout: c.SessionTimeout, Protocols: make([]Protocol, len(c.Protocols))}
	for i, p := range c.Protocols {
		out.Protocols[i] = Protocol{Name: p.Name, Metadata: slices.Clone(p.Metadata)}
	}
	return out
}

func (c *ClassicMemberMetadata) equal(o *ClassicMemberMetadata) bool {
	if c == nil || o == nil {
		return c == o
	}
	return c.SessionTimeout == o.SessionTimeout && slices.EqualFunc(c.Protocols, o.Protocols, func(a, b Protocol) bool {
		return a.Name == b.Name && string(a.Metadata) == string(b.Metadata)
	})
}

// sessionTimeout is the member's session timeout: its JoinGroup's for a
// classic member, else the group's.
func (m *ConsumerMember) sessionTimeout(group time.Duration) time.Duration {
	if m.Classic != nil {
		return m.Classic.SessionTimeout
	}
	return group
}

func (m *ConsumerMember) clone() *ConsumerMember {
	c := *m
	c.SubscribedTopicNames = slices.Clone(m.SubscribedTopicNames)
	c.Assigned = m.Assigned.clone()
	c.PendingRevocation = m.PendingRevocation.clone()
	c.Classic = m.Classic.clone()
	return &c
}

// sameSubscription reports whether the persisted member metadata of a
// and b are equal.
func (m *ConsumerMember) sameMetadata(o *ConsumerMember) bool {
	return eqStrPtr(m.InstanceID, o.InstanceID) && eqStrPtr(m.RackID, o.RackID) &&
		m.ClientID == o.ClientID && m.ClientHost == o.ClientHost &&
		slices.Equal(m.SubscribedTopicNames, o.SubscribedTopicNames) &&
		m.SubscribedTopicRegex == o.SubscribedTopicRegex &&
		m.RebalanceTimeout == o.RebalanceTimeout && m.ServerAssignor == o.ServerAssignor &&
		m.Classic.equal(o.Classic)
}

func (m *ConsumerMember) sameAssignment(o *ConsumerMember) bool {
	return m.Epoch == o.Epoch && m.PreviousEpoch == o.PreviousEpoch && m.State == o.State &&
		m.Assigned.equal(o.Assigned) && m.PendingRevocation.equal(o.PendingRevocation)
}

func eqStrPtr(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// ConsumerGroupConfig holds the settings of a consumer group.
type ConsumerGroupConfig struct {
	SessionTimeout    time.Duration // group.consumer.session.timeout.ms
	HeartbeatInterval time.Duration // group.consumer.heartbeat.interval.ms
	MaxSize           int32         // group.consumer.max.size
	// Assignors are the server-side assignors by name (group.consumer.assignors);
	// the first is the default.
	Assignors []string
	// NewMemberID makes a member id for a member that sent none
	// (ConsumerGroupHeartbeat v0, a first JoinGroup); it must not repeat.
	NewMemberID func() string
	// Downgrade allows converting the group to a classic group when its
	// last consumer-protocol member leaves (group.consumer.migration.policy
	// downgrade or bidirectional), if the classic members left are no
	// more than ClassicMaxSize (group.max.size).
	Downgrade      bool
	ClassicMaxSize int32
}

// ConsumerGroupState is a consumer group's state.
type ConsumerGroupState int8

// Consumer group states.
const (
	ConsumerEmpty ConsumerGroupState = iota
	ConsumerAssigning
	ConsumerReconciling
	ConsumerStable
	ConsumerDead
)

// String returns Kafka's name of the state.
func (s ConsumerGroupState) String() string {
	return [...]string{"Empty", "Assigning", "Reconciling", "Stable", "Dead"}[s]
}

// owner is the member that owns a partition, and at which epoch.
type owner struct {
	member string
	epoch  int32
}

type topicPart struct {
	topic TopicID
	part  int32
}

// ConsumerGroup is the state machine of one KIP-848 consumer group:
// members with their epochs and subscriptions, the group epoch, the
// target assignment and its epoch, and each member's current assignment
// as it reconciles towards its target.
//
// It starts no goroutines, does no IO and reads no clock. A call that
// changes the group (Heartbeat, Tick, Delete) returns a Change and does
// not apply it: the runtime persists Change.Records and then calls Apply.
// Replaying the records of a group from __consumer_offsets (ApplyRecord)
// rebuilds the same state, so the group a coordinator loads is the group
// its predecessor wrote. It is not safe for concurrent use.
//
// Invariant: a partition has at most one owner. A member is given a
// partition of its target only once no other member owns it (its
// previous owner revoked it, left or was fenced); see doc.go.
type ConsumerGroup struct {
	id  string
	cfg ConsumerGroupConfig

	epoch           int32
	assignmentEpoch int32
	members         map[string]*ConsumerMember
	instances       map[string]string // group.instance.id -> member id
	target          map[string]PartitionSet
	owners          map[topicPart]owner
	// subscribed is the metadata of the subscribed topics, as last
	// written in the partition metadata record.
	subscribed map[string]TopicInfo
	// deleted is set when the group metadata tombstone was applied.
	deleted bool

	// regexes caches compiled subscriptions; resolved caches, per regex,
	// the matching topics at topicsVersion.
	regexes       map[string]*regexp.Regexp
	resolved      map[string][]string
	topicsVersion int64
	// checkedVersion is the Topics version the subscribed topics were
	// last compared at (-1: never).
	checkedVersion int64
}

// SetTimeouts replaces the group's session timeout and heartbeat interval
// (its group configs changed). Each member's session deadline moves to
// the new timeout at its next heartbeat, and the next answer carries the
// new interval.
func (g *ConsumerGroup) SetTimeouts(session, heartbeat time.Duration) {
	g.cfg.SessionTimeout, g.cfg.HeartbeatInterval = session, heartbeat
}

// NewConsumerGroup returns an empty consumer group at epoch 0.
func NewConsumerGroup(id string, cfg ConsumerGroupConfig) *ConsumerGroup {
	return &ConsumerGroup{
		id:             id,
		cfg:            cfg,
		members:        map[string]*ConsumerMember{},
		instances:      map[string]string{},
		target:         map[string]PartitionSet{},
		owners:         map[topicPart]owner{},
		subscribed:     map[string]TopicInfo{},
		regexes:        map[string]*regexp.Regexp{},
		resolved:       map[string][]string{},
		topicsVersion:  -1,
		checkedVersion: -1,
	}
}

// ID returns the group id.
func (g *ConsumerGroup) ID() string { return g.id }

// Epoch returns the group epoch.
func (g *ConsumerGroup) Epoch() int32 { return g.epoch }

// AssignmentEpoch returns the target assignment epoch.
func (g *ConsumerGroup) AssignmentEpoch() int32 { return g.assignmentEpoch }

// Size returns the number of members.
func (g *ConsumerGroup) Size() int { return len(g.members) }

// Member returns a copy of a member, or nil.
func (g *ConsumerGroup) Member(id string) *ConsumerMember {
	m := g.members[id]
	if m == nil {
		return nil
	}
	return m.clone()
}

// Target returns a copy of a member's target assignment.
func (g *ConsumerGroup) Target(id string) PartitionSet { return g.target[id].clone() }

// State returns the group's state: Empty without members, Assigning
// while the target assignment is behind the group epoch, Reconciling
// while a member has not reached the target, else Stable.
func (g *ConsumerGroup) State() ConsumerGroupState {
	switch {
	case g.deleted:
		return ConsumerDead
	case len(g.members) == 0:
		return ConsumerEmpty
	case g.epoch > g.assignmentEpoch:
		return ConsumerAssigning
	}
	for _, m := range g.members {
		if !g.reconciled(m) {
			return ConsumerReconciling
		}
	}
	return ConsumerStable
}

func (g *ConsumerGroup) reconciled(m *ConsumerMember) bool {
	return m.State == MemberStable && m.Epoch == g.assignmentEpoch
}

// sortedMemberIDs returns the member ids sorted.
func (g *ConsumerGroup) sortedMemberIDs() []string {
	ids := make([]string, 0, len(g.members))
	for id := range g.members {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// ConsumerHeartbeatRequest is a ConsumerGroupHeartbeat request. Nil
// fields (and RebalanceTimeout < 0) are unchanged since the member's
// last heartbeat.
type ConsumerHeartbeatRequest struct {
	Group                string
	MemberID             string
	MemberEpoch          int32
	InstanceID           *string
	RackID               *string
	RebalanceTimeout     time.Duration // negative: not sent
	SubscribedTopicNames []string      // nil: not sent
	SubscribedTopicRegex *string       // v1+; nil: not sent
	ServerAssignor       *string
	// Owned is the partitions the member owns; nil: not sent, non-nil
	// empty: none.
	Owned      []TopicPartitions
	ClientID   string
	ClientHost string
}

// ConsumerHeartbeatResult is a ConsumerGroupHeartbeat response.
type ConsumerHeartbeatResult struct {
	MemberID          string
	MemberEpoch       int32
	HeartbeatInterval time.Duration
	// Assignment is sent (HasAssignment) on a full request or when the
	// member's assigned partitions changed.
	HasAssignment bool
	Assignment    []TopicPartitions
}

// Change is what a call asks to write, and to apply once it is durable.
type Change struct {
	Records []CGRecord
	// touch names members whose session restarts at now, with revoke
	// deadline updates, applied after the records.
	touch   []string
	revokes []revokeTimer
	now     time.Time
	// joins and syncs set or cancel (zero time) classic members' join
	// and sync deadlines, after the records.
	joins []memberTimer
	syncs []memberTimer
	// Downgrade is set when the change converts the group to a classic
	// group: Records delete the consumer group, and the runtime writes
	// the classic group's metadata with them (see doc.go).
	Downgrade *ClassicSnapshot
	// checked is the Topics version the subscribed topics were compared
	// at, when hasChecked.
	checked    int64
	hasChecked bool
}

type memberTimer struct {
	member string
	at     time.Time // zero: cancel
}

type revokeTimer struct {
	member string
	at     time.Time // zero: cancel
	epoch  int32
}

// Empty reports whether the change has nothing to write.
func (c Change) Empty() bool { return len(c.Records) == 0 }

// errf wraps a sentinel error with Kafka's message for it.
func errf(sentinel error, format string, args ...any) error {
	return fmt.Errorf("%w: %s", sentinel, fmt.Sprintf(format, args...))
}

// validate checks a heartbeat as Kafka's
// throwIfConsumerGroupHeartbeatRequestIsInvalid does.
func (g *ConsumerGroup) validate(req ConsumerHeartbeatRequest, v1 bool) error {
	if req.InstanceID != nil && *req.InstanceID == "" {
		return errf(ErrInvalidRequest, "InstanceId can't be empty.")
	}
	if req.RackID != nil && *req.RackID == "" {
		return errf(ErrInvalidRequest, "RackId can't be empty.")
	}
	switch e := req.MemberEpoch; {
	case e > 0 || e == LeaveEpoch:
		if req.MemberID == "" {
			return errf(ErrInvalidRequest, "MemberId can't be empty.")
		}
	case e == JoinEpoch:
		if v1 && req.MemberID == "" {
			return errf(ErrInvalidRequest, "MemberId can't be empty.")
		}
		if req.RebalanceTimeout < 0 {
			return errf(ErrInvalidRequest, "RebalanceTimeoutMs must be provided in first request.")
		}
		if req.Owned == nil || len(req.Owned) > 0 {
			return errf(ErrInvalidRequest, "TopicPartitions must be empty when (re-)joining.")
		}
		if req.SubscribedTopicNames == nil && req.SubscribedTopicRegex == nil {
			return errf(ErrInvalidRequest, "SubscribedTopicNames or SubscribedTopicRegex must be set in first request.")
		}
	case e == StaticLeaveEpoch:
		// NB: Kafka 3.7 also wanted the InstanceId here; franz-go's
		// static leave sends only the member id, and Kafka 4 finds the
		// member by it (a dynamic member leaving with -2 just leaves).
		if req.MemberID == "" {
			return errf(ErrInvalidRequest, "MemberId can't be empty.")
		}
	default:
		return errf(ErrInvalidRequest, "MemberEpoch is invalid.")
	}
	if req.SubscribedTopicNames != nil && req.SubscribedTopicRegex != nil && *req.SubscribedTopicRegex != "" {
		return errf(ErrInvalidRequest, "SubscribedTopicNames and SubscribedTopicRegex cannot be used together.")
	}
	if req.ServerAssignor != nil && !slices.Contains(g.cfg.Assignors, *req.ServerAssignor) {
		return errf(ErrUnsupportedAssignor, "ServerAssignor %s is not supported. Supported assignors: %v.", *req.ServerAssignor, g.cfg.Assignors)
	}
	if req.SubscribedTopicRegex != nil && *req.SubscribedTopicRegex != "" {
		if _, err := regexp.Compile(*req.SubscribedTopicRegex); err != nil {
			return errf(ErrInvalidRegularExpression, "SubscribedTopicRegex %s is not a valid regular expression: %v.", *req.SubscribedTopicRegex, err)
		}
	}
	return nil
}

// Heartbeat handles a ConsumerGroupHeartbeat (v1 tells whether the
// client must name its member id). It does not change the group: the
// runtime stores the returned change's records and then applies it, and
// only then sends the result. On error the change is empty.
//
// Reference: Kafka GroupMetadataManager.consumerGroupHeartbeat.
func (g *ConsumerGroup) Heartbeat(now time.Time, topics Topics, req ConsumerHeartbeatRequest, v1 bool) (ConsumerHeartbeatResult, Change, error) {
	if err := g.validate(req, v1); err != nil {
		return ConsumerHeartbeatResult{}, Change{}, err
	}
	if req.MemberEpoch == LeaveEpoch || req.MemberEpoch == StaticLeaveEpoch {
		return g.leave(now, topics, req)
	}
	ch := Change{now: now}
	memberID := req.MemberID
	if memberID == "" {
		memberID = g.cfg.NewMemberID()
	}

	// Get or create the member.
	var member *ConsumerMember
	isNew := false
	replaced := "" // the static member this one takes over
	if req.InstanceID != nil {
		cur, ok := g.instances[*req.InstanceID]
		var existing *ConsumerMember
		if ok {
			existing = g.members[cur]
		}
		switch {
		case req.MemberEpoch == JoinEpoch && existing == nil:
			if g.members[memberID] != nil {
				member = g.members[memberID].clone()
			} else {
				isNew = true
			}
		case req.MemberEpoch == JoinEpoch && existing.useClassic():
			// Reference: getOrMaybeSubscribeStaticConsumerGroupMember:
			// a consumer-protocol member takes a classic static
			// member's instance at once (no leave needed), as a new
			// member at epoch 0 with its assignment.
			if existing.ID == memberID {
				member = existing.clone()
				member.Epoch, member.PreviousEpoch = 0, 0
			} else {
				member = g.replaceStatic(&ch, existing, memberID)
				replaced = existing.ID
			}
		case req.MemberEpoch == JoinEpoch && existing.ID == memberID:
			member = existing.clone()
		case req.MemberEpoch == JoinEpoch:
			// Reference: throwIfInstanceIdIsUnreleased: the instance is
			// taken over only once its previous member left with -2.
			if existing.Epoch != StaticLeaveEpoch {
				return ConsumerHeartbeatResult{}, Change{}, errf(ErrUnreleasedInstanceID,
					"Static member %s with instance id %s cannot join the group because the instance id is owned by member %s.", memberID, *req.InstanceID, existing.ID)
			}
			member = g.replaceStatic(&ch, existing, memberID)
			replaced = existing.ID
		case existing == nil:
			return ConsumerHeartbeatResult{}, Change{}, errf(ErrUnknownMemberID, "Instance id %s is unknown.", *req.InstanceID)
		case existing.ID != memberID:
			return ConsumerHeartbeatResult{}, Change{}, errf(ErrFencedInstanceID,
				"Static member %s with instance id %s was fenced by member %s.", memberID, *req.InstanceID, existing.ID)
		default:
			if err := checkEpoch(existing, req.MemberEpoch, req.Owned); err != nil {
				return ConsumerHeartbeatResult{}, Change{}, err
			}
			member = existing.clone()
		}
	} else {
		existing := g.members[memberID]
		switch {
		case existing == nil && req.MemberEpoch != JoinEpoch:
			return ConsumerHeartbeatResult{}, Change{}, errf(ErrUnknownMemberID, "Member %s is not a member of group %s.", memberID, g.id)
		case existing == nil:
			isNew = true
		case existing.useClassic():
			// Reference: getOrMaybeSubscribeDynamicConsumerGroupMember:
			// a heartbeat naming a classic member's id is checked
			// against that member's epoch like any member's, epoch 0
			// included (FENCED_MEMBER_EPOCH unless it is the previous
			// epoch with a subset of the assignment); one that passes
			// goes on as a member of the consumer protocol (below).
			if err := checkEpoch(existing, req.MemberEpoch, req.Owned); err != nil {
				return ConsumerHeartbeatResult{}, Change{}, err
			}
			member = existing.clone()
		case req.MemberEpoch == JoinEpoch:
			// NB: a known member rejoining at epoch 0 (it lost a
			// response, or abandoned its partitions) keeps its place
			// and gets its whole assignment again; Kafka 4 accepts it
			// the same way.
			member = existing.clone()
		default:
			if err := checkEpoch(existing, req.MemberEpoch, req.Owned); err != nil {
				return ConsumerHeartbeatResult{}, Change{}, err
			}
			member = existing.clone()
		}
	}
	if isNew {
		if int32(len(g.members)) >= g.cfg.MaxSize {
			return ConsumerHeartbeatResult{}, Change{}, errf(ErrGroupMaxSizeReached,
				"The consumer group has reached its maximum capacity of %d members.", g.cfg.MaxSize)
		}
		member = &ConsumerMember{ID: memberID, RebalanceTimeout: -1, Assigned: PartitionSet{}, PendingRevocation: PartitionSet{}}
	}
	old := member.clone()
	if member.useClassic() {
		// Reference: consumerGroupHeartbeat sets the classic member
		// metadata to null: the member now uses the consumer protocol,
		// so its JoinGroup, SyncGroup and Heartbeat get
		// UNKNOWN_MEMBER_ID, and its classic timers stop.
		member.Classic = nil
		ch.joins = append(ch.joins, memberTimer{member: member.ID})
		ch.syncs = append(ch.syncs, memberTimer{member: member.ID})
	}

	// 1. Update the member's metadata.
	if req.InstanceID != nil {
		member.InstanceID = req.InstanceID
	}
	if req.RackID != nil {
		member.RackID = req.RackID
	}
	if req.RebalanceTimeout >= 0 {
		member.RebalanceTimeout = req.RebalanceTimeout
	}
	if req.ServerAssignor != nil {
		member.ServerAssignor = *req.ServerAssignor
	}
	if req.SubscribedTopicNames != nil {
		names := slices.Clone(req.SubscribedTopicNames)
		slices.Sort(names)
		member.SubscribedTopicNames = slices.Compact(names)
	}
	if req.SubscribedTopicRegex != nil {
		member.SubscribedTopicRegex = *req.SubscribedTopicRegex
	}
	member.ClientID, member.ClientHost = req.ClientID, req.ClientHost
	var owned PartitionSet
	if req.Owned != nil {
		owned = assignmentOf(req.Owned)
	}
	next := g.update(&ch, now, topics, member, old, isNew, replaced, owned)
	ch.touch = append(ch.touch, next.ID)

	res := ConsumerHeartbeatResult{MemberID: next.ID, MemberEpoch: next.Epoch, HeartbeatInterval: g.cfg.HeartbeatInterval}
	full := req.MemberEpoch == JoinEpoch ||
		(req.RebalanceTimeout >= 0 && (req.SubscribedTopicNames != nil || req.SubscribedTopicRegex != nil) && req.Owned != nil)
	if full || !next.Assigned.equal(old.Assigned) {
		res.HasAssignment = true
		res.Assignment = next.Assigned.list()
	}
	return res, ch, nil
}

// update carries out steps 1 to 3 of a member's heartbeat (or a classic
// member's JoinGroup) once member holds its new metadata: it writes the
// member metadata, bumps the group epoch when subscriptions or their
// topics changed, computes a new target assignment when the group epoch
// passed it, and reconciles the member against owned (nil: unknown). It
// returns the member as it will be once ch is applied.
func (g *ConsumerGroup) update(ch *Change, now time.Time, topics Topics, member, old *ConsumerMember, isNew bool, replaced string, owned PartitionSet) *ConsumerMember {
	bump := false
	if isNew || !member.sameMetadata(old) {
		ch.Records = append(ch.Records, memberMetadataRecord(g.id, member))
		bump = isNew || !slices.Equal(member.SubscribedTopicNames, old.SubscribedTopicNames) ||
			member.SubscribedTopicRegex != old.SubscribedTopicRegex
	}

	// The subscribed topics' metadata, with this member's update.
	epoch := g.epoch
	if bump || topics.Version() != g.checkedVersion || topics.Version() < 0 {
		meta := g.subscribedTopics(topics, member, false)
		ch.checked, ch.hasChecked = topics.Version(), true
		if !sameTopics(meta, g.subscribed) {
			bump = true
			ch.Records = append(ch.Records, partitionMetadataRecord(g.id, meta))
		}
		if bump {
			epoch++
			ch.Records = append(ch.Records, groupEpochRecord(g.id, epoch))
		}
	}

	// 2. A new target assignment when the group epoch moved past it.
	var target PartitionSet
	targetEpoch := g.assignmentEpoch
	if epoch > g.assignmentEpoch {
		targets := g.computeTargets(topics, member, false, replaced)
		for _, id := range sortedKeys(targets) {
			if !targets[id].equal(g.target[id]) {
				ch.Records = append(ch.Records, targetMemberRecord(g.id, id, targets[id]))
			}
		}
		ch.Records = append(ch.Records, targetEpochRecord(g.id, epoch))
		targetEpoch = epoch
		target = targets[member.ID]
	} else {
		target = g.target[member.ID]
		if replaced != "" {
			target = g.target[replaced]
		}
	}

	// 3. Reconcile the member towards its target.
	next := g.reconcile(member, targetEpoch, target, owned)
	if isNew || !next.sameAssignment(old) {
		ch.Records = append(ch.Records, currentAssignmentRecord(g.id, next))
		if next.State == MemberUnrevokedPartitions {
			ch.revokes = append(ch.revokes, revokeTimer{member: next.ID, at: now.Add(max(next.RebalanceTimeout, 0)), epoch: next.Epoch})
		} else {
			ch.revokes = append(ch.revokes, revokeTimer{member: next.ID})
		}
	}
	return next
}

// checkEpoch validates a heartbeat's epoch against the member's.
//
// Reference: Kafka throwIfConsumerGroupMemberEpochIsInvalid: the previous
// epoch with a subset of the assignment is accepted, since the response
// that bumped the epoch may have been lost.
func checkEpoch(m *ConsumerMember, epoch int32, owned []TopicPartitions) error {
	switch {
	case epoch > m.Epoch:
		return errf(ErrFencedMemberEpoch, "The consumer group member has a greater member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", epoch, m.Epoch)
	case epoch < m.Epoch:
		if epoch != m.PreviousEpoch || owned == nil || !subset(assignmentOf(owned), m.Assigned) {
			return errf(ErrFencedMemberEpoch, "The consumer group member has a smaller member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", epoch, m.Epoch)
		}
	}
	return nil
}

func subset(a, of PartitionSet) bool {
	for t, ps := range a {
		for _, p := range ps {
			if !of.has(t, p) {
				return false
			}
		}
	}
	return true
}

// replaceStatic makes newID take over a static member that left with
// epoch -2: it inherits its subscription and assignment at epoch 0, and
// the old member's records are deleted.
func (g *ConsumerGroup) replaceStatic(ch *Change, old *ConsumerMember, newID string) *ConsumerMember {
	m := old.clone()
	m.ID = newID
	m.Epoch, m.PreviousEpoch = 0, 0
	ch.Records = append(ch.Records,
		currentAssignmentTombstone(g.id, old.ID),
		targetMemberTombstone(g.id, old.ID),
		memberMetadataTombstone(g.id, old.ID),
		memberMetadataRecord(g.id, m),
		targetMemberRecord(g.id, newID, g.target[old.ID]),
		currentAssignmentRecord(g.id, m),
	)
	ch.revokes = append(ch.revokes, revokeTimer{member: old.ID})
	return m
}

// reconcile moves a member's current assignment towards its target: it
// keeps what both have; it asks the member to revoke what the target no
// longer has (staying at its epoch until the member reports them gone);
// then it moves the member to the target epoch and gives it the target's
// partitions no other member owns; those still owned make the member
// UnreleasedPartitions until their owner lets go.
//
// Reference: Kafka CurrentAssignmentBuilder.
func (g *ConsumerGroup) reconcile(m *ConsumerMember, targetEpoch int32, target PartitionSet, owned PartitionSet) *ConsumerMember {
	next := m.clone()
	switch m.State {
	case MemberStable:
		if m.Epoch == targetEpoch {
			return next
		}
		return g.nextAssignment(next, m.Epoch, targetEpoch, target, owned)
	case MemberUnrevokedPartitions:
		if ownsAny(owned, m.PendingRevocation) {
			return next
		}
		return g.nextAssignment(next, m.Epoch+1, targetEpoch, target, owned)
	default:
		return g.nextAssignment(next, m.Epoch, targetEpoch, target, owned)
	}
}

// ownsAny reports whether the member may still own a partition of
// revoking: an absent owned list (nil) means it may.
func ownsAny(owned PartitionSet, revoking PartitionSet) bool {
	if owned == nil {
		return true
	}
	for t, ps := range owned {
		for _, p := range ps {
			if revoking.has(t, p) {
				return true
			}
		}
	}
	return false
}

func (g *ConsumerGroup) nextAssignment(m *ConsumerMember, epoch, targetEpoch int32, target PartitionSet, owned PartitionSet) *ConsumerMember {
	assigned, revoking, adding := PartitionSet{}, PartitionSet{}, PartitionSet{}
	unreleased := false
	topics := map[TopicID]bool{}
	for t := range target {
		topics[t] = true
	}
	for t := range m.Assigned {
		topics[t] = true
	}
	for t := range topics {
		cur, tgt := m.Assigned[t], target[t]
		for _, p := range cur {
			if target.has(t, p) {
				assigned[t] = append(assigned[t], p)
			} else {
				revoking[t] = append(revoking[t], p)
			}
		}
		for _, p := range tgt {
			if m.Assigned.has(t, p) {
				continue
			}
			if o, ok := g.owners[topicPart{t, p}]; ok && o.member != m.ID {
				unreleased = true
				continue
			}
			adding[t] = append(adding[t], p)
		}
	}
	setPrev := func(e int32) {
		if e != m.Epoch {
			m.PreviousEpoch = m.Epoch
			m.Epoch = e
		}
	}
	if len(revoking) > 0 && ownsAny(owned, revoking) {
		m.State = MemberUnrevokedPartitions
		setPrev(epoch)
		m.Assigned = assigned
		m.PendingRevocation = revoking
		return m
	}
	for t, ps := range adding {
		all := append(assigned[t], ps...)
		slices.Sort(all)
		assigned[t] = all
	}
	m.State = MemberStable
	if unreleased {
		m.State = MemberUnreleasedPartitions
	}
	setPrev(targetEpoch)
	m.Assigned = assigned
	m.PendingRevocation = PartitionSet{}
	return m
}

// leave handles epochs -1 and -2.
//
// Reference: Kafka GroupMetadataManager.consumerGroupLeave.
func (g *ConsumerGroup) leave(now time.Time, topics Topics, req ConsumerHeartbeatRequest) (ConsumerHeartbeatResult, Change, error) {
	res := ConsumerHeartbeatResult{MemberID: req.MemberID, MemberEpoch: req.MemberEpoch}
	var m *ConsumerMember
	if req.InstanceID == nil {
		m = g.members[req.MemberID]
		if m == nil {
			return res, Change{}, errf(ErrUnknownMemberID, "Member %s is not a member of group %s.", req.MemberID, g.id)
		}
		if req.MemberEpoch == StaticLeaveEpoch && m.InstanceID != nil {
			return res, g.staticLeave(now, m), nil
		}
	} else {
		id, ok := g.instances[*req.InstanceID]
		if ok {
			m = g.members[id]
		}
		switch {
		case m == nil:
			return res, Change{}, errf(ErrUnknownMemberID, "Instance id %s is unknown.", *req.InstanceID)
		case m.ID != req.MemberID:
			return res, Change{}, errf(ErrFencedInstanceID, "Static member %s with instance id %s was fenced by member %s.", req.MemberID, *req.InstanceID, m.ID)
		}
		if req.MemberEpoch == StaticLeaveEpoch {
			return res, g.staticLeave(now, m), nil
		}
	}
	return res, g.fence(now, topics, m), nil
}

// staticLeave keeps a static member's place and assignment (what it was
// revoking is released) at epoch -2 until its session ends.
func (g *ConsumerGroup) staticLeave(now time.Time, m *ConsumerMember) Change {
	next := m.clone()
	next.Epoch = StaticLeaveEpoch
	next.PendingRevocation = PartitionSet{}
	ch := Change{now: now, Records: []CGRecord{currentAssignmentRecord(g.id, next)}}
	ch.revokes = append(ch.revokes, revokeTimer{member: m.ID})
	ch.touch = append(ch.touch, m.ID)
	return ch
}

// fence removes a member: tombstones for its records, and a group epoch
// bump so that the next heartbeat computes a target without it.
//
// Reference: Kafka consumerGroupFenceMember and removeMember.
func (g *ConsumerGroup) fence(now time.Time, topics Topics, m *ConsumerMember) Change {
	if g.canDowngrade(m.ID) {
		return g.downgrade(now, m.ID)
	}
	ch := Change{now: now}
	ch.Records = append(ch.Records,
		currentAssignmentTombstone(g.id, m.ID),
		targetMemberTombstone(g.id, m.ID),
		memberMetadataTombstone(g.id, m.ID),
	)
	if meta := g.subscribedTopics(topics, m, true); !sameTopics(meta, g.subscribed) {
		ch.Records = append(ch.Records, partitionMetadataRecord(g.id, meta))
	}
	ch.Records = append(ch.Records, groupEpochRecord(g.id, g.epoch+1))
	return ch
}

// Deadline returns the earliest session or revocation deadline; zero
// when none.
func (g *ConsumerGroup) Deadline() time.Time {
	var d time.Time
	for _, m := range g.members {
		if !m.sessionDeadline.IsZero() && (d.IsZero() || m.sessionDeadline.Before(d)) {
			d = m.sessionDeadline
		}
		for _, t := range []time.Time{m.revokeDeadline, m.joinDeadline, m.syncDeadline} {
			if !t.IsZero() && (d.IsZero() || t.Before(d)) {
				d = t
			}
		}
	}
	return d
}

// Tick fences the members whose session ended, or that did not revoke
// their partitions within their rebalance timeout. It reports the
// fenced member ids with the change.
func (g *ConsumerGroup) Tick(now time.Time, topics Topics) (Change, []string) {
	var expired []string
	for _, id := range g.sortedMemberIDs() {
		m := g.members[id]
		if (!m.sessionDeadline.IsZero() && !now.Before(m.sessionDeadline)) ||
			(!m.revokeDeadline.IsZero() && !now.Before(m.revokeDeadline) && m.Epoch == m.revokeEpoch) ||
			(!m.joinDeadline.IsZero() && !now.Before(m.joinDeadline)) ||
			(!m.syncDeadline.IsZero() && !now.Before(m.syncDeadline)) {
			expired = append(expired, id)
		}
	}
	if len(expired) == 0 {
		return Change{}, nil
	}
	// Fence one after the other on a scratch copy, so that each fence
	// sees the previous ones (partition metadata, epochs).
	scratch := g.scratch()
	all := Change{now: now}
	for i, id := range expired {
		ch := scratch.fence(now, topics, scratch.members[id])
		scratch.Apply(ch)
		all.Records = append(all.Records, ch.Records...)
		if ch.Downgrade != nil {
			// The group becomes a classic group: the members left
			// are the classic group's, with its own sessions.
			all.Downgrade = ch.Downgrade
			return all, expired[:i+1]
		}
	}
	return all, expired
}

// scratch returns a copy of the group that Apply may change without
// touching g (for computing a multi-step change).
func (g *ConsumerGroup) scratch() *ConsumerGroup {
	c := NewConsumerGroup(g.id, g.cfg)
	c.epoch, c.assignmentEpoch, c.deleted = g.epoch, g.assignmentEpoch, g.deleted
	for id, m := range g.members {
		c.members[id] = m.clone()
	}
	for k, v := range g.instances {
		c.instances[k] = v
	}
	for k, v := range g.target {
		c.target[k] = v.clone()
	}
	for k, v := range g.owners {
		c.owners[k] = v
	}
	for k, v := range g.subscribed {
		c.subscribed[k] = v
	}
	return c
}

// Apply applies a change once its records are durable: the records,
// then the members' session and revocation timers.
func (g *ConsumerGroup) Apply(ch Change) {
	for _, r := range ch.Records {
		g.ApplyRecord(r)
	}
	if ch.hasChecked {
		g.checkedVersion = ch.checked
	}
	for _, id := range ch.touch {
		if m := g.members[id]; m != nil {
			m.sessionDeadline = ch.now.Add(m.sessionTimeout(g.cfg.SessionTimeout))
		}
	}
	for _, t := range ch.joins {
		if m := g.members[t.member]; m != nil {
			m.joinDeadline = t.at
		}
	}
	for _, t := range ch.syncs {
		if m := g.members[t.member]; m != nil {
			m.syncDeadline = t.at
		}
	}
	for _, t := range ch.revokes {
		if m := g.members[t.member]; m != nil {
			m.revokeDeadline, m.revokeEpoch = t.at, t.epoch
		}
	}
}

// StartSessions starts every member's session at now (after a load).
func (g *ConsumerGroup) StartSessions(now time.Time) {
	for _, m := range g.members {
		m.sessionDeadline = now.Add(m.sessionTimeout(g.cfg.SessionTimeout))
		if m.State == MemberUnrevokedPartitions {
			m.revokeDeadline, m.revokeEpoch = now.Add(max(m.RebalanceTimeout, 0)), m.Epoch
		}
	}
}

// subscribedTopics returns the metadata of the topics the group
// subscribes to (existing ones only), with member m updated (or removed,
// with remove).
func (g *ConsumerGroup) subscribedTopics(topics Topics, m *ConsumerMember, remove bool) map[string]TopicInfo {
	out := map[string]TopicInfo{}
	add := func(x *ConsumerMember) {
		for _, n := range g.memberTopics(topics, x) {
			if t, ok := topics.Topic(n); ok {
				out[n] = t
			}
		}
	}
	for id, x := range g.members {
		if id == m.ID {
			continue
		}
		add(x)
	}
	if !remove {
		add(m)
	}
	return out
}

// memberTopics returns the topic names a member subscribes to: its list,
// or the topics its regular expression matches in full (RE2 syntax, as
// Kafka's RE2/J).
func (g *ConsumerGroup) memberTopics(topics Topics, m *ConsumerMember) []string {
	if m.SubscribedTopicRegex == "" {
		return m.SubscribedTopicNames
	}
	if v := topics.Version(); v != g.topicsVersion || v < 0 {
		g.resolved = map[string][]string{}
		g.topicsVersion = v
	}
	if r, ok := g.resolved[m.SubscribedTopicRegex]; ok {
		return r
	}
	re := g.regexes[m.SubscribedTopicRegex]
	if re == nil {
		var err error
		re, err = regexp.Compile("^(?:" + m.SubscribedTopicRegex + ")$")
		if err != nil {
			return nil // validated on the heartbeat that set it
		}
		g.regexes[m.SubscribedTopicRegex] = re
	}
	var r []string
	for _, n := range topics.Names() {
		if re.MatchString(n) {
			r = append(r, n)
		}
	}
	g.resolved[m.SubscribedTopicRegex] = r
	return r
}

func sameTopics(a, b map[string]TopicInfo) bool {
	if len(a) != len(b) {
		return false
	}
	for n, t := range a {
		if b[n] != t {
			return false
		}
	}
	return true
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// computeTargets runs the group's assignor over the members, with m
// updated (or removed), and without replaced (a static member m takes
// over) when not "".
func (g *ConsumerGroup) computeTargets(topics Topics, m *ConsumerMember, remove bool, replaced string) map[string]PartitionSet {
	members := make([]*ConsumerMember, 0, len(g.members)+1)
	for id, x := range g.members {
		if id != m.ID && id != replaced {
			members = append(members, x)
		}
	}
	if !remove {
		members = append(members, m)
	}
	sort.Slice(members, func(i, j int) bool { return members[i].ID < members[j].ID })
	in := assignInput{topics: map[string]TopicInfo{}, prev: g.target}
	if replaced != "" {
		// The new member id inherits the previous target, for stickiness.
		in.prev = maps.Clone(g.target)
		in.prev[m.ID] = g.target[replaced]
	}
	for _, x := range members {
		var subs []string
		for _, n := range g.memberTopics(topics, x) {
			if t, ok := topics.Topic(n); ok {
				subs = append(subs, n)
				in.topics[n] = t
			}
		}
		slices.Sort(subs)
		in.members = append(in.members, assignMember{id: x.ID, topics: slices.Compact(subs)})
	}
	return assign(g.preferredAssignor(members), in)
}

// preferredAssignor is the assignor most members named (ties to the
// earlier in group.consumer.assignors), or the first configured.
//
// Reference: Kafka ConsumerGroup.preferredServerAssignor.
func (g *ConsumerGroup) preferredAssignor(members []*ConsumerMember) string {
	counts := map[string]int{}
	for _, m := range members {
		if m.ServerAssignor != "" {
			counts[m.ServerAssignor]++
		}
	}
	best, n := "", 0
	for _, a := range g.cfg.Assignors {
		if counts[a] > n {
			best, n = a, counts[a]
		}
	}
	if best == "" && len(g.cfg.Assignors) > 0 {
		best = g.cfg.Assignors[0]
	}
	return best
}

// PreferredAssignor returns the assignor the group uses.
func (g *ConsumerGroup) PreferredAssignor() string {
	ms := make([]*ConsumerMember, 0, len(g.members))
	for _, m := range g.members {
		ms = append(ms, m)
	}
	return g.preferredAssignor(ms)
}

// Delete returns the tombstones of the whole group (DeleteGroups, or an
// empty group without offsets expiring). The group must be Empty.
func (g *ConsumerGroup) Delete() Change {
	var ch Change
	for _, id := range g.sortedMemberIDs() {
		ch.Records = append(ch.Records, currentAssignmentTombstone(g.id, id))
	}
	for _, id := range sortedKeys(g.target) {
		ch.Records = append(ch.Records, targetMemberTombstone(g.id, id))
	}
	ch.Records = append(ch.Records, targetEpochTombstone(g.id))
	for _, id := range g.sortedMemberIDs() {
		ch.Records = append(ch.Records, memberMetadataTombstone(g.id, id))
	}
	ch.Records = append(ch.Records, partitionMetadataTombstone(g.id), groupEpochTombstone(g.id))
	return ch
}

// CheckInvariants returns an error when a partition has two owners or a
// member's recorded ownership is not what the owners index says (tests).
func (g *ConsumerGroup) CheckInvariants() error {
	seen := map[topicPart]string{}
	for _, id := range g.sortedMemberIDs() {
		m := g.members[id]
		for _, a := range []PartitionSet{m.Assigned, m.PendingRevocation} {
			for t, ps := range a {
				for _, p := range ps {
					k := topicPart{t, p}
					if o, ok := seen[k]; ok {
						return fmt.Errorf("partition %x-%d owned by %s and %s", t[:2], p, o, id)
					}
					seen[k] = id
					if g.owners[k].member != id {
						return fmt.Errorf("partition %x-%d of %s indexed as %q's", t[:2], p, id, g.owners[k].member)
					}
				}
			}
		}
	}
	if len(seen) != len(g.owners) {
		return fmt.Errorf("owners index has %d partitions, members own %d", len(g.owners), len(seen))
	}
	return nil
}
