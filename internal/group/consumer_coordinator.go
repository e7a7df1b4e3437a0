package group

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"strings"
	"time"
)

// consumerConfig is the configuration of consumer group id.
func (c *Coordinator) consumerConfig(id string) ConsumerGroupConfig {
	ids := newConsumerMemberID
	if c.cfg.newMemberID != nil {
		ids = c.cfg.newMemberID
	}
	session, heartbeat := c.consumerTimeouts(id)
	return ConsumerGroupConfig{
		SessionTimeout:    session,
		HeartbeatInterval: heartbeat,
		MaxSize:           c.cfg.ConsumerMaxSize,
		Assignors:         c.cfg.ConsumerAssignors,
		NewMemberID:       ids,
		Downgrade:         c.cfg.downgradeEnabled(),
		ClassicMaxSize:    c.cfg.MaxSize,
	}
}

// consumerTimeouts returns the session timeout and heartbeat interval of
// consumer group id: its group configs, else the coordinator's.
func (c *Coordinator) consumerTimeouts(id string) (session, heartbeat time.Duration) {
	session, heartbeat = c.cfg.ConsumerSessionTimeout, c.cfg.ConsumerHeartbeatInterval
	if c.cfg.GroupTimeouts != nil {
		s, h := c.cfg.GroupTimeouts(id)
		if s > 0 {
			session = s
		}
		if h > 0 {
			heartbeat = h
		}
	}
	return session, heartbeat
}

// newConsumerMemberID returns a random UUID in URL-safe base64, as
// Kafka's Uuid.toString makes member ids for ConsumerGroupHeartbeat v0.
func newConsumerMemberID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// topics returns the coordinator's view of the cluster's topics.
func (c *Coordinator) topics() Topics {
	if c.cfg.Topics == nil {
		return TopicMap{}
	}
	return c.cfg.Topics()
}

// deadlineLocked is the entry's earliest deadline, classic or consumer.
// e.mu must be held.
func (e *entry) deadlineLocked() time.Time {
	d := e.g.Deadline()
	if e.cg != nil {
		if cd := e.cg.Deadline(); !cd.IsZero() && (d.IsZero() || cd.Before(d)) {
			d = cd
		}
	}
	return d
}

// storeConsumerLocked writes a consumer group change and applies it once
// durable. A change without records (a heartbeat that only keeps a
// session) is applied without a write. e.mu must be held.
//
// NB: the write runs under the coordinator's lifetime, not the request's
// context, as applyLocked's: a client giving up must not leave the log
// and the group apart.
func (c *Coordinator) storeConsumerLocked(e *entry, ch Change) error {
	if ch.Downgrade != nil {
		return c.downgradeLocked(e, ch)
	}
	if !ch.Empty() {
		recs := make([]KV, len(ch.Records))
		for i, r := range ch.Records {
			recs[i] = r.KV()
		}
		if _, err := c.appendRecords(c.lifetime, e.log, recs); err != nil {
			c.cfg.Logger.Warn("group: storing consumer group records", "group", e.g.id, "err", err)
			return storeErr(err)
		}
	}
	prevEpoch := e.cg.Epoch()
	e.cg.Apply(ch)
	if e.cg.Epoch() != prevEpoch {
		c.rebalances.Add(1)
		c.cfg.Logger.Info("group: consumer group epoch bumped", "group", e.g.id, "epoch", e.cg.Epoch(),
			"members", e.cg.Size(), "state", e.cg.State().String())
	}
	return nil
}

// downgradeLocked converts a consumer group to a classic group (ch deletes
// the consumer group and carries the classic members): the consumer
// group's tombstones and the classic group metadata go out in one
// append, so that a coordinator loading the partition afterwards finds
// the classic group; then the classic group starts a rebalance. e.mu
// must be held.
//
// Reference: Kafka convertToClassicGroup.
func (c *Coordinator) downgradeLocked(e *entry, ch Change) error {
	now := c.cfg.Now()
	e.g.adoptClassic(ch.Downgrade, c.topics(), now)
	recs := make([]KV, 0, len(ch.Records)+1)
	for _, r := range ch.Records {
		recs = append(recs, r.KV())
	}
	recs = append(recs, e.g.MetadataRecord())
	if _, err := c.appendRecords(c.lifetime, e.log, recs); err != nil {
		c.cfg.Logger.Warn("group: storing the downgrade to a classic group", "group", e.g.id, "err", err)
		e.g.clearMembership(now)
		return storeErr(err)
	}
	e.cg = nil
	e.logged.state, e.logged.generation = e.g.State(), e.g.Generation()
	c.cfg.Logger.Info("group: consumer group downgraded to a classic group", "group", e.g.id,
		"generation", e.g.Generation(), "members", e.g.Members())
	if ch.Downgrade.Rebalance {
		var eff Effects
		e.g.prepareRebalance(now, &eff, "downgrade of group "+e.g.id+" from consumer to classic")
		c.applyLocked(e, eff)
	}
	return nil
}

// tickConsumerLocked fences the consumer group members whose session or
// rebalance timeout ended. e.mu must be held.
func (c *Coordinator) tickConsumerLocked(e *entry, now time.Time) {
	ch, fenced := e.cg.Tick(now, c.topics())
	if len(fenced) == 0 {
		return
	}
	if err := c.storeConsumerLocked(e, ch); err != nil {
		return // tried again at the next tick
	}
	c.cfg.Logger.Info("group: consumer group members fenced", "group", e.g.id, "members", fenced)
}

// leaveConsumerProtocolLocked prepares an entry for a classic JoinGroup
// to a classic group: an empty consumer group is deleted (its tombstones
// written) and the group goes on as a classic group with its offsets.
// The caller sends JoinGroups of consumer groups with members to
// ConsumerGroup.ClassicJoin. e.mu must be held.
func (c *Coordinator) leaveConsumerProtocolLocked(e *entry) error {
	if e.cg == nil || e.cg.State() != ConsumerEmpty {
		return nil
	}
	recs := []KV{}
	for _, r := range e.cg.Delete().Records {
		recs = append(recs, r.KV())
	}
	if _, err := c.appendRecords(c.lifetime, e.log, recs); err != nil {
		return storeErr(err)
	}
	e.cg = nil
	return nil
}

// ConsumerGroupHeartbeat handles a ConsumerGroupHeartbeat (v1 tells
// whether the member must name its own id). It stores the group's
// changes in __consumer_offsets before it answers. A joining heartbeat
// of a classic group with members converts it (upgradeLocked) when
// group.consumer.migration.policy allows and the group is of the
// consumer protocol type, else answers ErrGroupIDNotFound; an empty
// classic group becomes a consumer group, keeping its offsets.
func (c *Coordinator) ConsumerGroupHeartbeat(ctx context.Context, req ConsumerHeartbeatRequest, v1 bool) (ConsumerHeartbeatResult, error) {
	if req.Group == "" {
		return ConsumerHeartbeatResult{}, errf(ErrInvalidRequest, "GroupId can't be empty.")
	}
	join := req.MemberEpoch == JoinEpoch
	e, err := c.locked(req.Group, join)
	if err != nil {
		return ConsumerHeartbeatResult{}, err
	}
	if e == nil {
		return ConsumerHeartbeatResult{}, errf(ErrGroupIDNotFound, "Consumer group %s not found.", req.Group)
	}
	forget := false
	defer func() {
		// NB: after e.mu is released (deferred below, so it runs
		// first): the two locks are never held together.
		if forget {
			c.forget(e)
		}
	}()
	defer e.mu.Unlock()
	created := false
	now := c.cfg.Now()
	if e.cg == nil {
		g := e.g
		if join && len(g.members) > 0 && c.cfg.upgradeEnabled() && g.canUpgrade(c.cfg.ConsumerMaxSize) {
			return c.upgradeLocked(e, req, v1, now)
		}
		if !join || g.state != Empty || len(g.members) > 0 {
			return ConsumerHeartbeatResult{}, errf(ErrGroupIDNotFound, "Group %s is not a consumer group.", req.Group)
		}
		e.cg = NewConsumerGroup(req.Group, c.consumerConfig(req.Group))
		created = true
	}
	e.cg.SetTimeouts(c.consumerTimeouts(req.Group))
	res, ch, err := e.cg.Heartbeat(now, c.topics(), req, v1)
	if err == nil && created && (e.g.generation > 0 || e.g.protocolType != "") {
		// The empty classic group it replaces: its metadata goes.
		err = c.deleteClassicMetadataLocked(e)
	}
	if err == nil {
		err = c.storeConsumerLocked(e, ch)
	}
	if err != nil {
		if created {
			e.cg = nil
			forget = unusedLocked(e)
		}
		return ConsumerHeartbeatResult{}, err
	}
	c.maybeKick(e.deadlineLocked())
	return res, nil
}

// upgradeLocked converts a classic group with members to a consumer group
// for the joining ConsumerGroupHeartbeat req: one append holds the
// classic group's tombstone, the records of the converted group and the
// heartbeat's, so that a coordinator loading the partition afterwards
// finds the consumer group. Parked JoinGroup and SyncGroup calls get
// ErrRebalanceInProgress; the classic members learn of the new epoch on
// their next Heartbeat and rejoin as classic members of the consumer
// group. e.mu must be held.
//
// Reference: Kafka convertToConsumerGroup.
func (c *Coordinator) upgradeLocked(e *entry, req ConsumerHeartbeatRequest, v1 bool, now time.Time) (ConsumerHeartbeatResult, error) {
	topics := c.topics()
	cg, conv, err := consumerFromClassic(e.g, c.consumerConfig(e.g.id), topics, now)
	if err != nil {
		return ConsumerHeartbeatResult{}, err
	}
	res, ch, err := cg.Heartbeat(now, topics, req, v1)
	if err != nil {
		return ConsumerHeartbeatResult{}, err
	}
	recs := []KV{{Key: groupKey(e.g.id)}}
	for _, r := range conv.Records {
		recs = append(recs, r.KV())
	}
	for _, r := range ch.Records {
		recs = append(recs, r.KV())
	}
	if _, err := c.appendRecords(c.lifetime, e.log, recs); err != nil {
		c.cfg.Logger.Warn("group: storing the upgrade to a consumer group", "group", e.g.id, "err", err)
		return ConsumerHeartbeatResult{}, storeErr(err)
	}
	eff := e.g.abortWaiters(ErrRebalanceInProgress)
	members := e.g.Members()
	e.g.clearMembership(now)
	c.applyLocked(e, eff)
	cg.Apply(ch)
	e.cg = cg
	c.rebalances.Add(1)
	c.cfg.Logger.Info("group: classic group upgraded to a consumer group", "group", e.g.id,
		"epoch", cg.Epoch(), "classic_members", members)
	c.maybeKick(e.deadlineLocked())
	return res, nil
}

// deleteClassicMetadataLocked writes the tombstone of an empty classic
// group's metadata. e.mu must be held.
func (c *Coordinator) deleteClassicMetadataLocked(e *entry) error {
	if _, err := c.appendRecords(c.lifetime, e.log, []KV{{Key: groupKey(e.g.id)}}); err != nil {
		return storeErr(err)
	}
	e.g.protocolType, e.g.generation = "", 0
	return nil
}

// unusedLocked marks removed, and reports, an entry that a failed first
// heartbeat created and that holds nothing; the caller forgets it once
// e.mu is released. e.mu must be held.
func unusedLocked(e *entry) bool {
	g := e.g
	if e.cg != nil || len(g.members) > 0 || g.HasOffsets() || g.HasOpenTxns() || g.protocolType != "" || g.generation > 0 {
		return false
	}
	e.removed = true
	return true
}

// ConsumerMemberDescription is one member of ConsumerGroupDescribe.
type ConsumerMemberDescription struct {
	MemberID             string
	InstanceID           *string
	RackID               *string
	MemberEpoch          int32
	ClientID             string
	ClientHost           string
	SubscribedTopicNames []string
	SubscribedTopicRegex *string
	Assignment           []TopicPartitions
	TargetAssignment     []TopicPartitions
	// Classic is set for a member that joined with JoinGroup.
	Classic bool
}

// ConsumerGroupDescription is one group of ConsumerGroupDescribe.
type ConsumerGroupDescription struct {
	Group           string
	State           string
	Epoch           int32
	AssignmentEpoch int32
	AssignorName    string
	Members         []ConsumerMemberDescription
}

// ConsumerGroupDescribe describes a consumer group; a classic or unknown
// group is ErrGroupIDNotFound.
func (c *Coordinator) ConsumerGroupDescribe(ctx context.Context, group string) (ConsumerGroupDescription, error) {
	e, err := c.locked(group, false)
	if err != nil {
		return ConsumerGroupDescription{Group: group}, err
	}
	if e == nil {
		return ConsumerGroupDescription{Group: group}, errf(ErrGroupIDNotFound, "Group %s not found.", group)
	}
	defer e.mu.Unlock()
	if e.cg == nil {
		return ConsumerGroupDescription{Group: group}, errf(ErrGroupIDNotFound, "Group %s is not a consumer group.", group)
	}
	return e.cg.Describe(), nil
}

// Describe returns the group's description.
func (g *ConsumerGroup) Describe() ConsumerGroupDescription {
	d := ConsumerGroupDescription{Group: g.id, State: g.State().String(), Epoch: g.epoch,
		AssignmentEpoch: g.assignmentEpoch, AssignorName: g.PreferredAssignor()}
	for _, id := range g.sortedMemberIDs() {
		m := g.members[id]
		md := ConsumerMemberDescription{MemberID: id, InstanceID: m.InstanceID, RackID: m.RackID, MemberEpoch: m.Epoch,
			ClientID: m.ClientID, ClientHost: m.ClientHost, SubscribedTopicNames: append([]string{}, m.SubscribedTopicNames...),
			Assignment: m.Assigned.list(), TargetAssignment: g.target[id].list(), Classic: m.useClassic()}
		if m.SubscribedTopicRegex != "" {
			re := m.SubscribedTopicRegex
			md.SubscribedTopicRegex = &re
		}
		d.Members = append(d.Members, md)
	}
	return d
}

// ValidateCommit checks an OffsetCommit (or, with txn, a
// TxnOffsetCommit) of a consumer group: epoch -1 commits only to a group
// without members; otherwise the member must exist
// (ErrUnknownMemberID), commit with v9+ (ErrUnsupportedVersion, plain
// commits only), at its current epoch (ErrStaleMemberEpoch).
//
// Reference: Kafka ConsumerGroup.validateOffsetCommit.
func (g *ConsumerGroup) ValidateCommit(memberID string, epoch int32, version int16, txn bool) error {
	if epoch < 0 && len(g.members) == 0 {
		return nil
	}
	m := g.members[memberID]
	if m == nil {
		return errf(ErrUnknownMemberID, "Member %s is not a member of group %s.", memberID, g.id)
	}
	if !txn && !m.useClassic() && version < 9 {
		return errf(ErrUnsupportedVersion, "OffsetCommit version 9 or above must be used by members using the modern group protocol")
	}
	if epoch != m.Epoch && m.useClassic() {
		return errf(ErrIllegalGeneration, "The received generation id %d does not match the expected member epoch %d.", epoch, m.Epoch)
	}
	if epoch != m.Epoch {
		return errf(ErrStaleMemberEpoch, "The received member epoch %d does not match the expected member epoch %d.", epoch, m.Epoch)
	}
	return nil
}

// ValidateFetch checks the member of an OffsetFetch v9+: a request
// without member id is not checked (admin clients, and requests below
// v9).
//
// Reference: Kafka ConsumerGroup.validateOffsetFetch.
func (g *ConsumerGroup) ValidateFetch(memberID *string, epoch int32) error {
	if memberID == nil {
		return nil
	}
	m := g.members[*memberID]
	if m == nil {
		return errf(ErrUnknownMemberID, "Member %s is not a member of group %s.", *memberID, g.id)
	}
	if epoch != m.Epoch && m.useClassic() {
		return errf(ErrIllegalGeneration, "The received generation id %d does not match the expected member epoch %d.", epoch, m.Epoch)
	}
	if epoch != m.Epoch {
		return errf(ErrStaleMemberEpoch, "The received member epoch %d does not match the expected member epoch %d.", epoch, m.Epoch)
	}
	return nil
}

// ErrorMessage returns the message a consumer group error carries for
// the client (Kafka's exception message), "" when it has none.
func ErrorMessage(err error) string {
	u := errors.Unwrap(err)
	if u == nil {
		return ""
	}
	msg, p := err.Error(), u.Error()+": "
	if !strings.HasPrefix(msg, p) {
		return ""
	}
	return msg[len(p):]
}
