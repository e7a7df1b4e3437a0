package group

import (
	"bytes"
	"slices"
	"sort"
	"time"
)

// State is a group's state in the classic protocol.
type State int8

// Group states; see the diagram in doc.go.
const (
	Empty State = iota
	PreparingRebalance
	CompletingRebalance
	Stable
	Dead
)

var stateNames = [...]string{"Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"}

// String returns Kafka's name of the state.
func (s State) String() string { return stateNames[s] }

// newMemberJoinTimeout bounds how long a member that joined for the first
// time may wait for the rebalance before it is dropped (Kafka's
// GroupCoordinator.NewMemberJoinTimeoutMs, KIP-345).
const newMemberJoinTimeout = 5 * time.Minute

// ConsumerProtocolType is the protocol type of Kafka consumers; only for it
// does the group know its subscribed topics.
const ConsumerProtocolType = "consumer"

// GroupConfig holds the settings a Group needs.
type GroupConfig struct {
	MinSessionTimeout     time.Duration
	MaxSessionTimeout     time.Duration
	InitialRebalanceDelay time.Duration
	MaxSize               int32
	// NewMemberID makes a member id for a client id; it must not repeat.
	NewMemberID func(clientID string) string
}

// Waiter identifies a blocked JoinGroup or SyncGroup call. 0 is no waiter.
type Waiter uint64

// JoinResponse answers the JoinGroup call of Waiter.
type JoinResponse struct {
	Waiter Waiter
	Result JoinGroupResult
	Err    error
}

// SyncResponse answers the SyncGroup call of Waiter.
type SyncResponse struct {
	Waiter Waiter
	Result SyncGroupResult
	Err    error
}

// Effects are what a Group call asks of its runtime: answers to deliver
// and whether the group metadata must be stored first.
type Effects struct {
	Joins []JoinResponse
	Syncs []SyncResponse
	// Store asks to write the group metadata record (MetadataRecord) and to
	// deliver Joins and Syncs only once it is durable. On failure the
	// runtime calls StoreFailed.
	Store bool
	// Rebalanced reports that a rebalance ended (the group became Stable,
	// or Empty after its join phase); RebalanceTime is how long it took
	// from the first PreparingRebalance.
	Rebalanced    bool
	RebalanceTime time.Duration
}

func (e *Effects) join(w Waiter, r JoinGroupResult, err error) {
	if w != 0 {
		e.Joins = append(e.Joins, JoinResponse{Waiter: w, Result: r, Err: err})
	}
}

func (e *Effects) sync(w Waiter, r SyncGroupResult, err error) {
	if w != 0 {
		e.Syncs = append(e.Syncs, SyncResponse{Waiter: w, Result: r, Err: err})
	}
}

type member struct {
	id               string
	instanceID       *string
	clientID         string
	clientHost       string
	protocolType     string
	protocols        []Protocol
	sessionTimeout   time.Duration
	rebalanceTimeout time.Duration
	assignment       []byte
	joinWaiter       Waiter // set while awaiting a JoinGroup answer
	syncWaiter       Waiter // set while awaiting a SyncGroup answer
	// deadline is when the member's session expires; zero while a
	// rebalance keeps it alive.
	deadline time.Time
	isNew    bool
	seq      uint64 // join order, for deterministic iteration
}

func (m *member) awaitingJoin() bool { return m.joinWaiter != 0 }

// matches reports whether protocols equal the member's current ones.
func (m *member) matches(protocols []Protocol) bool {
	return slices.EqualFunc(m.protocols, protocols, func(a, b Protocol) bool {
		return a.Name == b.Name && bytes.Equal(a.Metadata, b.Metadata)
	})
}

func (m *member) metadata(protocol string) []byte {
	for _, p := range m.protocols {
		if p.Name == protocol {
			return p.Metadata
		}
	}
	return nil
}

type topicPartition struct {
	topic     string
	partition int32
}

// Offset is a committed offset of one partition, or a transactional one
// pending its transaction's end.
type Offset struct {
	Offset      int64
	LeaderEpoch int32 // -1 when unknown
	Metadata    string
	CommitTime  time.Time
	// RecordOffset is where the offset's record is in __consumer_offsets.
	// When a transaction commits, its offset replaces a committed one only
	// if its record is later in the log.
	RecordOffset int64
}

// Group is the state machine of one consumer group: membership,
// rebalances and committed offsets. It starts no goroutines, does no IO
// and reads no clock: every call takes the current time and returns the
// effects for its runtime. It is not safe for concurrent use.
type Group struct {
	id  string
	cfg GroupConfig

	state      State
	stateTime  time.Time
	generation int32
	// protocolType is "" for a group that only stores offsets (simple
	// consumers).
	protocolType string
	protocol     string
	leader       string
	members      map[string]*member
	seq          uint64
	pending      map[string]time.Time // KIP-394 member ids handed out -> expiry
	instances    map[string]string    // group.instance.id -> member id
	awaiting     int                  // members with joinWaiter set

	// rebalanceStart is when the running rebalance began; zero when none
	// runs.
	rebalanceStart time.Time

	// PreparingRebalance: when the join phase ends.
	joinDeadline   time.Time
	initialJoin    bool          // the join phase is the initial delay of an Empty group
	initialRemain  time.Duration // how much more the initial delay may grow
	newMemberAdded bool

	// CompletingRebalance/Stable: members whose SyncGroup is still due.
	pendingSync  map[string]bool
	syncDeadline time.Time

	// subscribed is the topics of the current generation's consumer
	// subscriptions; nil when unknown.
	subscribed map[string]bool

	offsets map[topicPartition]Offset
	// txnOffsets holds the transactional offsets of open transactions,
	// by producer id: not visible to OffsetFetch until the transaction
	// commits (KIP-98).
	txnOffsets map[int64]map[topicPartition]Offset
}

// NewGroup returns an Empty group at generation 0.
func NewGroup(id string, cfg GroupConfig, now time.Time) *Group {
	return &Group{
		id:         id,
		cfg:        cfg,
		stateTime:  now,
		members:    map[string]*member{},
		pending:    map[string]time.Time{},
		instances:  map[string]string{},
		offsets:    map[topicPartition]Offset{},
		txnOffsets: map[int64]map[topicPartition]Offset{},
	}
}

// ID returns the group id.
func (g *Group) ID() string { return g.id }

// State returns the current state.
func (g *Group) State() State { return g.state }

// Generation returns the current generation.
func (g *Group) Generation() int32 { return g.generation }

// Leader returns the leader's member id, "" when none.
func (g *Group) Leader() string { return g.leader }

// ProtocolType returns the group's protocol type ("" for simple consumers).
func (g *Group) ProtocolType() string { return g.protocolType }

// Protocol returns the selected protocol, "" when none.
func (g *Group) Protocol() string { return g.protocol }

// Size returns the number of members.
func (g *Group) Size() int { return len(g.members) }

// sortedMembers returns the members in join order.
func (g *Group) sortedMembers() []*member {
	ms := make([]*member, 0, len(g.members))
	for _, m := range g.members {
		ms = append(ms, m)
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].seq < ms[j].seq })
	return ms
}

func (g *Group) transition(now time.Time, s State) {
	g.state = s
	g.stateTime = now
}

func (g *Group) rebalanceTimeout() time.Duration {
	var d time.Duration
	for _, m := range g.members {
		d = max(d, m.rebalanceTimeout)
	}
	return d
}

// validateMember checks that a request comes from a current member of the
// group and returns that member. It is the one check that JoinGroup (of a
// known member id), SyncGroup, Heartbeat, LeaveGroup and a member's
// OffsetCommit share, in this order:
//
//  1. a Dead group: ErrCoordinatorNotAvailable;
//  2. with a group.instance.id: an instance the group does not know is
//     ErrUnknownMemberID, one held by another member id is
//     ErrFencedInstanceID (KIP-345);
//  3. a member id the group does not know: ErrUnknownMemberID;
//  4. when generation is not nil (JoinGroup and LeaveGroup carry none),
//     another generation than the group's: ErrIllegalGeneration.
//
// Reference: Kafka's GroupCoordinator validateCurrentMember. State checks
// (Empty, PreparingRebalance, ...) stay with each request, as they differ.
func (g *Group) validateMember(memberID string, instanceID *string, generation *int32) (*member, error) {
	if g.state == Dead {
		return nil, ErrCoordinatorNotAvailable
	}
	if instanceID != nil {
		cur, ok := g.instances[*instanceID]
		switch {
		case !ok:
			return nil, ErrUnknownMemberID
		case cur != memberID:
			return nil, ErrFencedInstanceID
		}
	}
	m, ok := g.members[memberID]
	switch {
	case !ok:
		return nil, ErrUnknownMemberID
	case generation != nil && *generation != g.generation:
		return nil, ErrIllegalGeneration
	}
	return m, nil
}

// supports reports whether a joiner with this protocol type and these
// protocols fits the group.
func (g *Group) supports(protocolType string, protocols []Protocol) bool {
	if len(g.members) == 0 {
		return protocolType != "" && len(protocols) > 0
	}
	if g.protocolType != protocolType {
		return false
	}
	for _, p := range protocols {
		all := true
		for _, m := range g.members {
			if m.metadata(p.Name) == nil && !hasProtocol(m.protocols, p.Name) {
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

func hasProtocol(ps []Protocol, name string) bool {
	for _, p := range ps {
		if p.Name == name {
			return true
		}
	}
	return false
}

// selectProtocol picks the protocol all members support with the most
// votes; each member votes for its most preferred candidate. Ties go to
// the candidate the earliest member prefers.
func (g *Group) selectProtocol() string {
	ms := g.sortedMembers()
	if len(ms) == 0 {
		return ""
	}
	var candidates []string
	for _, p := range ms[0].protocols {
		all := true
		for _, m := range ms[1:] {
			if !hasProtocol(m.protocols, p.Name) {
				all = false
				break
			}
		}
		if all {
			candidates = append(candidates, p.Name)
		}
	}
	votes := map[string]int{}
	for _, m := range ms {
		for _, p := range m.protocols {
			if slices.Contains(candidates, p.Name) {
				votes[p.Name]++
				break
			}
		}
	}
	best, bestVotes := "", -1
	for _, c := range candidates { // earliest member's preference order
		if votes[c] > bestVotes {
			best, bestVotes = c, votes[c]
		}
	}
	return best
}

func (g *Group) canRebalance() bool {
	return g.state == Stable || g.state == CompletingRebalance || g.state == Empty
}

func (g *Group) hasAllJoined() bool {
	return g.awaiting == len(g.members) && len(g.pending) == 0
}

// memberList returns the members as the leader sees them.
func (g *Group) memberList() []Member {
	ms := g.sortedMembers()
	out := make([]Member, 0, len(ms))
	for _, m := range ms {
		out = append(out, Member{MemberID: m.id, InstanceID: m.instanceID, Metadata: m.metadata(g.protocol)})
	}
	return out
}

func (g *Group) joinResult(m *member) JoinGroupResult {
	r := JoinGroupResult{
		Generation:   g.generation,
		ProtocolType: g.protocolType,
		Protocol:     g.protocol,
		LeaderID:     g.leader,
		MemberID:     m.id,
	}
	if m.id == g.leader {
		r.Members = g.memberList()
	}
	return r
}

// Join handles a JoinGroup request. The answer for w comes back in the
// effects, now or from a later call (when the rebalance completes).
func (g *Group) Join(now time.Time, req JoinGroupRequest, w Waiter) Effects {
	var e Effects
	if req.SessionTimeout < g.cfg.MinSessionTimeout || req.SessionTimeout > g.cfg.MaxSessionTimeout {
		e.join(w, JoinGroupResult{MemberID: req.MemberID}, ErrInvalidSessionTimeout)
		return e
	}
	if !g.acceptJoiningMember(req.MemberID) {
		if m, ok := g.members[req.MemberID]; ok {
			g.removeMember(now, m, &e)
		}
		e.join(w, JoinGroupResult{MemberID: req.MemberID}, ErrGroupMaxSizeReached)
		g.maybeCompleteJoin(now, &e)
		return e
	}
	if req.MemberID == "" {
		g.newMemberJoin(now, req, w, &e)
	} else {
		g.currentMemberJoin(now, req, w, &e)
	}
	g.maybeCompleteJoin(now, &e)
	return e
}

func (g *Group) acceptJoiningMember(memberID string) bool {
	switch g.state {
	case Empty, Dead:
		return true
	case PreparingRebalance:
		m, ok := g.members[memberID]
		return (ok && m.awaitingJoin()) || int32(g.awaiting) < g.cfg.MaxSize
	default:
		_, ok := g.members[memberID]
		return ok || int32(len(g.members)) < g.cfg.MaxSize
	}
}

func (g *Group) newMemberJoin(now time.Time, req JoinGroupRequest, w Waiter, e *Effects) {
	switch {
	case g.state == Dead:
		e.join(w, JoinGroupResult{}, ErrCoordinatorNotAvailable)
	case !g.supports(req.ProtocolType, req.Protocols):
		e.join(w, JoinGroupResult{}, ErrInconsistentGroupProtocol)
	default:
		id := g.cfg.NewMemberID(req.ClientID)
		switch {
		case req.InstanceID != nil:
			g.staticMemberJoin(now, id, req, w, e)
		case req.RequireKnownMemberID:
			// Reference: KIP-394. The member must come back with this id.
			g.pending[id] = now.Add(req.SessionTimeout)
			e.join(w, JoinGroupResult{MemberID: id, Generation: -1}, ErrMemberIDRequired)
		default:
			g.addMemberAndRebalance(now, id, req, w, e)
		}
	}
}

func (g *Group) staticMemberJoin(now time.Time, newID string, req JoinGroupRequest, w Waiter, e *Effects) {
	oldID, known := g.instances[*req.InstanceID]
	if !known {
		g.addMemberAndRebalance(now, newID, req, w, e)
		return
	}
	// Reference: KIP-345. The new member id replaces the old one; whoever
	// still waits under the old id is fenced.
	m := g.members[oldID]
	if m.joinWaiter != 0 {
		e.join(m.joinWaiter, JoinGroupResult{MemberID: oldID}, ErrFencedInstanceID)
		m.joinWaiter = 0
		g.awaiting--
	}
	if m.syncWaiter != 0 {
		e.sync(m.syncWaiter, SyncGroupResult{}, ErrFencedInstanceID)
		m.syncWaiter = 0
	}
	delete(g.members, oldID)
	m.id = newID
	g.members[newID] = m
	g.instances[*req.InstanceID] = newID
	if g.leader == oldID {
		g.leader = newID
	}
	if g.pendingSync[oldID] {
		delete(g.pendingSync, oldID)
		g.pendingSync[newID] = true
	}
	switch g.state {
	case Stable:
		oldProtocol := g.protocol
		g.updateMember(m, req, 0)
		if g.selectProtocol() != oldProtocol {
			g.updateMember(m, req, w)
			g.prepareRebalance(now, e)
			return
		}
		// Same protocol: no rebalance, the member gets the current
		// generation back and syncs to fetch its assignment.
		m.deadline = now.Add(m.sessionTimeout)
		e.Store = true
		e.join(w, g.joinResult(m), nil)
	default: // PreparingRebalance, CompletingRebalance
		g.updateMember(m, req, w)
		g.maybePrepareRebalance(now, e)
	}
}

func (g *Group) currentMemberJoin(now time.Time, req JoinGroupRequest, w Waiter, e *Effects) {
	if g.state == Dead {
		e.join(w, JoinGroupResult{MemberID: req.MemberID}, ErrCoordinatorNotAvailable)
		return
	}
	if !g.supports(req.ProtocolType, req.Protocols) {
		e.join(w, JoinGroupResult{MemberID: req.MemberID}, ErrInconsistentGroupProtocol)
		return
	}
	if _, ok := g.pending[req.MemberID]; ok {
		if req.InstanceID != nil {
			e.join(w, JoinGroupResult{MemberID: req.MemberID}, ErrUnknownMemberID)
			return
		}
		g.addMemberAndRebalance(now, req.MemberID, req, w, e)
		return
	}
	m, err := g.validateMember(req.MemberID, req.InstanceID, nil)
	if err != nil {
		e.join(w, JoinGroupResult{MemberID: req.MemberID}, err)
		return
	}
	switch g.state {
	case PreparingRebalance:
		g.updateMember(m, req, w)
		g.maybePrepareRebalance(now, e)
	case CompletingRebalance:
		if m.matches(req.Protocols) {
			// A retried join: answer with the current generation.
			e.join(w, g.joinResult(m), nil)
			return
		}
		g.updateMember(m, req, w)
		g.prepareRebalance(now, e)
	case Stable:
		if m.id == g.leader || !m.matches(req.Protocols) {
			g.updateMember(m, req, w)
			g.prepareRebalance(now, e)
			return
		}
		e.join(w, g.joinResult(m), nil)
	default:
		e.join(w, JoinGroupResult{MemberID: req.MemberID}, ErrUnknownMemberID)
	}
}

func (g *Group) addMemberAndRebalance(now time.Time, id string, req JoinGroupRequest, w Waiter, e *Effects) {
	g.seq++
	m := &member{
		id:         id,
		instanceID: req.InstanceID,
		clientID:   req.ClientID,
		clientHost: req.ClientHost,
		isNew:      true,
		seq:        g.seq,
		deadline:   now.Add(newMemberJoinTimeout),
	}
	if g.state == PreparingRebalance && g.generation == 0 {
		g.newMemberAdded = true
	}
	if len(g.members) == 0 {
		g.protocolType = req.ProtocolType
	}
	g.members[id] = m
	if g.leader == "" {
		g.leader = id
	}
	g.updateMember(m, req, w)
	if req.InstanceID != nil {
		g.instances[*req.InstanceID] = id
	} else {
		delete(g.pending, id)
	}
	g.maybePrepareRebalance(now, e)
}

// updateMember takes the request's protocols and timeouts, and parks w as
// the member's join waiter (answering an older waiter, whose caller gave up).
func (g *Group) updateMember(m *member, req JoinGroupRequest, w Waiter) {
	m.protocolType = req.ProtocolType
	m.protocols = req.Protocols
	m.sessionTimeout = req.SessionTimeout
	m.rebalanceTimeout = req.RebalanceTimeout
	if req.ClientID != "" || req.ClientHost != "" {
		m.clientID, m.clientHost = req.ClientID, req.ClientHost
	}
	if w == 0 {
		return
	}
	if m.joinWaiter == 0 {
		g.awaiting++
	}
	m.joinWaiter = w
}

func (g *Group) maybePrepareRebalance(now time.Time, e *Effects) {
	if g.canRebalance() {
		g.prepareRebalance(now, e)
	}
}

func (g *Group) prepareRebalance(now time.Time, e *Effects) {
	if g.state == CompletingRebalance {
		g.resetAssignments(e, ErrRebalanceInProgress)
	}
	g.pendingSync = nil
	g.syncDeadline = time.Time{}
	if g.state == Empty {
		g.initialJoin = true
		g.initialRemain = max(g.rebalanceTimeout()-g.cfg.InitialRebalanceDelay, 0)
		g.joinDeadline = now.Add(max(g.cfg.InitialRebalanceDelay, 0))
	} else {
		g.initialJoin = false
		g.joinDeadline = now.Add(g.rebalanceTimeout())
	}
	if g.rebalanceStart.IsZero() {
		g.rebalanceStart = now
	}
	g.transition(now, PreparingRebalance)
}

// rebalanceDone records in e that the running rebalance ended at now.
func (g *Group) rebalanceDone(now time.Time, e *Effects) {
	if g.rebalanceStart.IsZero() {
		return
	}
	e.Rebalanced = true
	e.RebalanceTime = now.Sub(g.rebalanceStart)
	g.rebalanceStart = time.Time{}
}

// resetAssignments clears every assignment and fails waiting syncs.
func (g *Group) resetAssignments(e *Effects, err error) {
	for _, m := range g.sortedMembers() {
		m.assignment = nil
		if m.syncWaiter != 0 {
			e.sync(m.syncWaiter, SyncGroupResult{}, err)
			m.syncWaiter = 0
		}
	}
}

// maybeCompleteJoin ends the join phase early once everyone has joined
// (never during the initial delay).
func (g *Group) maybeCompleteJoin(now time.Time, e *Effects) {
	if g.state == PreparingRebalance && !g.initialJoin && g.hasAllJoined() {
		g.completeJoin(now, e)
	}
}

func (g *Group) completeJoin(now time.Time, e *Effects) {
	// Dynamic members that did not rejoin are dropped; static members stay
	// until their session expires (KIP-345).
	for _, m := range g.sortedMembers() {
		if !m.awaitingJoin() && m.instanceID == nil {
			g.removeMemberOnly(m)
		}
	}
	if !g.electJoinedLeader() && len(g.members) > 0 {
		// Nobody rejoined: wait another rebalance timeout for the
		// sessions of the silent members to expire.
		g.initialJoin = false
		g.joinDeadline = now.Add(g.rebalanceTimeout())
		return
	}
	g.generation++
	g.joinDeadline = time.Time{}
	g.initialJoin = false
	g.newMemberAdded = false
	if len(g.members) == 0 {
		g.protocol = ""
		g.leader = ""
		g.subscribed = nil
		g.transition(now, Empty)
		g.rebalanceDone(now, e)
		e.Store = true
		return
	}
	g.protocol = g.selectProtocol()
	g.subscribed = g.computeSubscribed()
	g.transition(now, CompletingRebalance)
	g.pendingSync = map[string]bool{}
	for _, m := range g.sortedMembers() {
		e.join(m.joinWaiter, g.joinResult(m), nil)
		m.joinWaiter = 0
		m.deadline = now.Add(m.sessionTimeout)
		m.isNew = false
		g.pendingSync[m.id] = true
	}
	g.awaiting = 0
	g.syncDeadline = now.Add(g.rebalanceTimeout())
}

// electJoinedLeader keeps the leader if it rejoined, else picks a joined
// member; it reports whether the group has a joined leader.
func (g *Group) electJoinedLeader() bool {
	if g.leader == "" {
		return false
	}
	if l, ok := g.members[g.leader]; ok && l.awaitingJoin() {
		return true
	}
	for _, m := range g.sortedMembers() {
		if m.awaitingJoin() {
			g.leader = m.id
			return true
		}
	}
	return false
}

func (g *Group) computeSubscribed() map[string]bool {
	if g.protocolType != ConsumerProtocolType {
		return nil
	}
	out := map[string]bool{}
	for _, m := range g.members {
		topics, err := subscriptionTopics(m.metadata(g.protocol))
		if err != nil {
			return nil
		}
		for _, t := range topics {
			out[t] = true
		}
	}
	return out
}

// removeMemberOnly drops a member without any state change.
func (g *Group) removeMemberOnly(m *member) {
	delete(g.members, m.id)
	if m.instanceID != nil && g.instances[*m.instanceID] == m.id {
		delete(g.instances, *m.instanceID)
	}
	if m.joinWaiter != 0 {
		g.awaiting--
	}
	delete(g.pendingSync, m.id)
	if g.leader == m.id {
		g.leader = ""
		if ms := g.sortedMembers(); len(ms) > 0 {
			g.leader = ms[0].id
		}
	}
}

// removeMember removes a member (session expiry, leave) and moves the
// group on as Kafka does.
func (g *Group) removeMember(now time.Time, m *member, e *Effects) {
	if m.joinWaiter != 0 {
		e.join(m.joinWaiter, JoinGroupResult{MemberID: m.id}, ErrUnknownMemberID)
	}
	if m.syncWaiter != 0 {
		e.sync(m.syncWaiter, SyncGroupResult{}, ErrUnknownMemberID)
		m.syncWaiter = 0
	}
	g.removeMemberOnly(m)
	switch g.state {
	case Stable, CompletingRebalance:
		g.prepareRebalance(now, e)
	case PreparingRebalance:
		g.maybeCompleteJoin(now, e)
	}
}

// Sync handles a SyncGroup request; the answer for w comes in the effects.
func (g *Group) Sync(now time.Time, req SyncGroupRequest, w Waiter) Effects {
	var e Effects
	m, err := g.validateMember(req.MemberID, req.InstanceID, &req.Generation)
	switch {
	case err != nil:
		e.sync(w, SyncGroupResult{}, err)
	case req.ProtocolType != nil && *req.ProtocolType != g.protocolType,
		req.Protocol != nil && *req.Protocol != g.protocol:
		e.sync(w, SyncGroupResult{}, ErrInconsistentGroupProtocol)
	case g.state == Empty:
		e.sync(w, SyncGroupResult{}, ErrUnknownMemberID)
	case g.state == PreparingRebalance:
		e.sync(w, SyncGroupResult{}, ErrRebalanceInProgress)
	case g.state == CompletingRebalance:
		if m.syncWaiter != 0 {
			e.sync(m.syncWaiter, SyncGroupResult{}, ErrRebalanceInProgress)
		}
		m.syncWaiter = w
		g.removePendingSync(m.id)
		if m.id != g.leader {
			return e
		}
		assign := map[string][]byte{}
		for _, a := range req.Assignments {
			assign[a.MemberID] = a.Assignment
		}
		for _, x := range g.sortedMembers() {
			x.assignment = assign[x.id]
			if x.assignment == nil {
				x.assignment = []byte{}
			}
		}
		g.transition(now, Stable)
		g.rebalanceDone(now, &e)
		e.Store = true
		g.propagateAssignment(now, &e)
	case g.state == Stable:
		g.removePendingSync(m.id)
		m.deadline = now.Add(m.sessionTimeout)
		e.sync(w, g.syncResult(m), nil)
	}
	return e
}

func (g *Group) removePendingSync(id string) {
	delete(g.pendingSync, id)
	if len(g.pendingSync) == 0 {
		g.syncDeadline = time.Time{}
	}
}

func (g *Group) syncResult(m *member) SyncGroupResult {
	return SyncGroupResult{ProtocolType: g.protocolType, Protocol: g.protocol, Assignment: m.assignment}
}

func (g *Group) propagateAssignment(now time.Time, e *Effects) {
	for _, m := range g.sortedMembers() {
		if m.syncWaiter != 0 {
			e.sync(m.syncWaiter, g.syncResult(m), nil)
			m.syncWaiter = 0
			m.deadline = now.Add(m.sessionTimeout)
		}
	}
}

// StoreFailed undoes a Stable transition whose group metadata could not be
// stored: the assignments are dropped and a new rebalance starts.
func (g *Group) StoreFailed(now time.Time) Effects {
	var e Effects
	if g.state == Stable || g.state == CompletingRebalance {
		g.resetAssignments(&e, ErrCoordinatorNotAvailable)
		g.prepareRebalance(now, &e)
	}
	return e
}

// Heartbeat handles a Heartbeat request.
func (g *Group) Heartbeat(now time.Time, req HeartbeatRequest) error {
	m, err := g.validateMember(req.MemberID, req.InstanceID, &req.Generation)
	if err != nil {
		return err
	}
	switch g.state {
	case Empty:
		return ErrUnknownMemberID
	case PreparingRebalance:
		m.deadline = now.Add(m.sessionTimeout)
		return ErrRebalanceInProgress
	default: // CompletingRebalance, Stable
		m.deadline = now.Add(m.sessionTimeout)
		return nil
	}
}

// Leave handles a LeaveGroup request. A non-nil error is for the whole
// request.
func (g *Group) Leave(now time.Time, req LeaveGroupRequest) (LeaveGroupResult, Effects, error) {
	var e Effects
	if g.state == Dead {
		return LeaveGroupResult{}, e, ErrCoordinatorNotAvailable
	}
	res := LeaveGroupResult{Members: make([]LeaveMemberResult, 0, len(req.Members))}
	for _, lm := range req.Members {
		r := LeaveMemberResult{MemberID: lm.MemberID, InstanceID: lm.InstanceID}
		_, pending := g.pending[lm.MemberID]
		switch {
		case lm.MemberID == "":
			// Administrative removal of a static member by instance id.
			if lm.InstanceID == nil || g.instances[*lm.InstanceID] == "" {
				r.Err = ErrUnknownMemberID
			} else {
				g.removeMember(now, g.members[g.instances[*lm.InstanceID]], &e)
			}
		case pending:
			delete(g.pending, lm.MemberID)
			g.maybeCompleteJoin(now, &e)
		default:
			if m, err := g.validateMember(lm.MemberID, lm.InstanceID, nil); err != nil {
				r.Err = err
			} else {
				g.removeMember(now, m, &e)
			}
		}
		res.Members = append(res.Members, r)
	}
	return res, e, nil
}

// Deadline returns when Tick must next be called; zero when no timer is due.
func (g *Group) Deadline() time.Time {
	var d time.Time
	min := func(t time.Time) {
		if !t.IsZero() && (d.IsZero() || t.Before(d)) {
			d = t
		}
	}
	for _, m := range g.members {
		min(m.deadline)
	}
	for _, t := range g.pending {
		min(t)
	}
	min(g.joinDeadline)
	min(g.syncDeadline)
	return d
}

// Tick fires the timers due at now: session expiry, the end of the join
// phase (initial delay or rebalance timeout), and the SyncGroup timeout.
func (g *Group) Tick(now time.Time) Effects {
	var e Effects
	if g.state == Dead {
		return e
	}
	for id, t := range g.pending {
		if !now.Before(t) {
			delete(g.pending, id)
		}
	}
	for _, m := range g.sortedMembers() {
		if m.deadline.IsZero() || now.Before(m.deadline) {
			continue
		}
		if !m.isNew && (m.awaitingJoin() || m.syncWaiter != 0) {
			// A rebalance keeps the member alive; its session restarts
			// when the rebalance answers it.
			m.deadline = time.Time{}
			continue
		}
		g.removeMember(now, m, &e)
	}
	// NB: a loop, since with a zero initial delay the extension is due at once.
	for g.state == PreparingRebalance && !g.joinDeadline.IsZero() && !now.Before(g.joinDeadline) {
		if g.initialJoin && g.newMemberAdded && g.initialRemain > 0 {
			// Reference: KIP-134. Each new member extends the delay, up to
			// the rebalance timeout.
			g.newMemberAdded = false
			d := min(g.cfg.InitialRebalanceDelay, g.initialRemain)
			g.initialRemain = max(g.initialRemain-d, 0)
			g.joinDeadline = now.Add(d)
		} else {
			g.completeJoin(now, &e)
		}
	}
	g.maybeCompleteJoin(now, &e)
	if (g.state == CompletingRebalance || g.state == Stable) && !g.syncDeadline.IsZero() && !now.Before(g.syncDeadline) {
		g.syncDeadline = time.Time{}
		if len(g.pendingSync) > 0 {
			for _, m := range g.sortedMembers() {
				if g.pendingSync[m.id] {
					if m.joinWaiter != 0 {
						e.join(m.joinWaiter, JoinGroupResult{MemberID: m.id}, ErrUnknownMemberID)
					}
					g.removeMemberOnly(m)
				}
			}
			g.prepareRebalance(now, &e)
			g.maybeCompleteJoin(now, &e)
		}
	}
	return e
}
