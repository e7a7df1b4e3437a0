package broker

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"samsa/internal/group"
	"samsa/internal/share"
)

// shareGroups is the share groups (KIP-932) whose coordinator this broker
// is: the leader of the group's __consumer_offsets partition, as for
// classic and consumer groups (group.Coordinator.Owns decides).
//
// NB: membership is kept in memory only; Kafka also writes it to
// __consumer_offsets (ShareGroupMemberMetadata and friends). After a
// coordinator failover the members' next heartbeat gets
// UNKNOWN_MEMBER_ID and they join again with their own member ids (the
// client makes them), which costs one reassignment; the delivery state of
// the records is kept by the share-partitions, not here. Sessions are
// expired when any member of the group heartbeats, or the group is
// described or listed, so no timer goroutine is needed.
type shareGroups struct {
	cfg share.GroupConfig
	mu  sync.Mutex // guards groups and every Group in it
	// groups by id.
	groups map[string]*share.Group
	// topics is, by group, every topic its members subscribed to: the
	// share-partitions whose state DeleteGroups deletes.
	topics map[string]map[string]bool
}

func newShareGroups(b *Broker) *shareGroups {
	return &shareGroups{
		cfg: share.GroupConfig{
			HeartbeatInterval: time.Duration(b.cfg.GroupShareHeartbeatIntervalMs) * time.Millisecond,
			SessionTimeout:    time.Duration(b.cfg.GroupShareSessionTimeoutMs) * time.Millisecond,
			MaxSize:           int(b.cfg.GroupShareMaxSize),
		},
		groups: map[string]*share.Group{},
		topics: map[string]map[string]bool{},
	}
}

// shareTopics resolves topic names in the current metadata image.
func (b *Broker) shareTopics() share.Topics {
	img := b.cluster.Image()
	return func(name string) (share.TopicInfo, bool) {
		t := img.Topics[name]
		if t == nil {
			return share.TopicInfo{}, false
		}
		return share.TopicInfo{ID: t.ID, Name: t.Name, Partitions: int32(len(t.Replicas))}, true
	}
}

// isShareGroup reports whether id is a share group served here. Classic
// and consumer group handlers refuse such ids as Kafka does.
func (b *Broker) isShareGroup(id string) bool {
	sg := b.shares
	sg.mu.Lock()
	defer sg.mu.Unlock()
	_, ok := sg.groups[id]
	return ok
}

// shareHeartbeat runs a ShareGroupHeartbeat against the group.
func (b *Broker) shareHeartbeat(ctx context.Context, id string, req share.HeartbeatRequest) (share.HeartbeatResult, error) {
	if err := b.groups.Owns(id); err != nil {
		b.forgetShareGroup(id)
		return share.HeartbeatResult{}, err
	}
	sg := b.shares
	sg.mu.Lock()
	g := sg.groups[id]
	sg.mu.Unlock()
	if g == nil {
		if req.MemberEpoch != 0 {
			return share.HeartbeatResult{}, fmt.Errorf("%w: %s", share.ErrUnknownMemberID, req.MemberID)
		}
		// Reference: GroupMetadataManager: a group id of another type
		// is not a share group (GROUP_ID_NOT_FOUND).
		listed, _ := b.groups.ListGroups(ctx, group.ListGroupsRequest{})
		for _, lg := range listed {
			if lg.Group == id {
				return share.HeartbeatResult{}, fmt.Errorf("%w: group %s is a %s group, not a share group", share.ErrGroupIDNotFound, id, lg.Type)
			}
		}
	}
	topics := b.shareTopics()
	now := b.now()
	sg.mu.Lock()
	defer sg.mu.Unlock()
	g = sg.groups[id]
	if g == nil {
		g = share.NewGroup(id, sg.cfg)
		sg.groups[id] = g
	}
	g.SetConfig(b.shareGroupConfig(id))
	for _, m := range g.Expire(now, topics) {
		b.releaseShareMember(id, m)
	}
	g.Refresh(topics)
	if req.Topics != nil {
		if sg.topics[id] == nil {
			sg.topics[id] = map[string]bool{}
		}
		for _, t := range req.Topics {
			sg.topics[id][t] = true
		}
	}
	res, err := g.Heartbeat(req, now, topics)
	if err == nil && req.MemberEpoch == -1 {
		b.releaseShareMember(id, req.MemberID)
	}
	return res, err
}

// forgetShareGroup drops a share group this broker no longer coordinates.
func (b *Broker) forgetShareGroup(id string) {
	b.shares.mu.Lock()
	delete(b.shares.groups, id)
	b.shares.mu.Unlock()
}

// describeShareGroup returns a copy of a share group's members, its
// epoch and state, or share.ErrGroupIDNotFound.
func (b *Broker) describeShareGroup(id string) (members []share.Member, epoch int32, state string, err error) {
	if err := b.groups.Owns(id); err != nil {
		b.forgetShareGroup(id)
		return nil, 0, "", err
	}
	sg := b.shares
	sg.mu.Lock()
	defer sg.mu.Unlock()
	g := sg.groups[id]
	if g == nil {
		return nil, 0, "", fmt.Errorf("%w: %s", share.ErrGroupIDNotFound, id)
	}
	g.Expire(b.now(), b.shareTopics())
	return g.Members(), g.Epoch(), g.State(), nil
}

// listShareGroups lists the share groups coordinated here, sorted.
func (b *Broker) listShareGroups() []group.ListedGroup {
	sg := b.shares
	sg.mu.Lock()
	ids := make([]string, 0, len(sg.groups))
	for id := range sg.groups {
		ids = append(ids, id)
	}
	sg.mu.Unlock()
	sort.Strings(ids)
	var out []group.ListedGroup
	for _, id := range ids {
		if b.groups.Owns(id) != nil {
			b.forgetShareGroup(id)
			continue
		}
		sg.mu.Lock()
		if g := sg.groups[id]; g != nil {
			g.Expire(b.now(), b.shareTopics())
			out = append(out, group.ListedGroup{Group: id, ProtocolType: "share", State: g.State(), Type: "share"})
		}
		sg.mu.Unlock()
	}
	return out
}

// deleteShareGroup removes an empty share group (DeleteGroups) and the
// state of its share-partitions at their share coordinators. isShare is
// false when id is not a share group served here.
//
// NB: partition leaders other than this broker keep the share-partitions
// they serve in memory until their leadership changes; a group created
// again under the same id before that continues from their state.
func (b *Broker) deleteShareGroup(ctx context.Context, id string) (isShare bool, err error) {
	sg := b.shares
	sg.mu.Lock()
	g := sg.groups[id]
	if g == nil {
		sg.mu.Unlock()
		return false, nil
	}
	g.Expire(b.now(), b.shareTopics())
	if !g.Empty() {
		sg.mu.Unlock()
		return true, group.ErrNonEmptyGroup
	}
	delete(sg.groups, id)
	topics := sg.topics[id]
	delete(sg.topics, id)
	sg.mu.Unlock()
	sps := b.sharePartitions
	sps.mu.Lock()
	for k := range sps.parts {
		if k.group == id {
			delete(sps.parts, k)
		}
	}
	sps.mu.Unlock()
	img := b.cluster.Image()
	for name := range topics {
		t := img.Topics[name]
		if t == nil {
			continue
		}
		for p := range t.Replicas {
			if err := (coordPersister{b}).delete(ctx, sharePartKey{id, t.ID, int32(p)}); err != nil {
				return true, fmt.Errorf("%w: delete share-partition state: %w", group.ErrCoordinatorNotAvailable, err)
			}
		}
	}
	return true, nil
}

// emptyShareGroup checks that id is a share group coordinated here
// without members, for AlterShareGroupOffsets (create: an unknown id
// becomes an empty share group, as Kafka 4.2 allows offsets to be set
// before a group is first used) and DeleteShareGroupOffsets. Errors: the
// coordinator's, share.ErrGroupIDNotFound (not a share group, or unknown
// and !create), group.ErrNonEmptyGroup.
//
// NB: the group is not locked against joins while the caller writes the
// new state (Kafka runs the check and the write as one coordinator
// operation). A member that joins and fetches before the write is done
// may be given records from the old state; its acknowledgement of them
// is then fenced by the new state epoch (FENCED_STATE_EPOCH) and the
// partition leader loads the new state.
func (b *Broker) emptyShareGroup(ctx context.Context, id string, create bool) error {
	if id == "" {
		return fmt.Errorf("%w: the group id is empty", group.ErrInvalidGroupID)
	}
	if err := b.groups.Owns(id); err != nil {
		b.forgetShareGroup(id)
		return err
	}
	if !b.isShareGroup(id) {
		listed, err := b.groups.ListGroups(ctx, group.ListGroupsRequest{})
		if err != nil {
			return err
		}
		for _, lg := range listed {
			if lg.Group == id {
				return fmt.Errorf("%w: group %s is a %s group, not a share group", share.ErrGroupIDNotFound, id, lg.Type)
			}
		}
		if !create {
			return fmt.Errorf("%w: %s", share.ErrGroupIDNotFound, id)
		}
	}
	sg := b.shares
	sg.mu.Lock()
	defer sg.mu.Unlock()
	g := sg.groups[id]
	if g == nil {
		g = share.NewGroup(id, sg.cfg)
		sg.groups[id] = g
	}
	for _, m := range g.Expire(b.now(), b.shareTopics()) {
		b.releaseShareMember(id, m)
	}
	if !g.Empty() {
		return fmt.Errorf("%w: share group %s has members", group.ErrNonEmptyGroup, id)
	}
	return nil
}

// shareGroupHasTopic reports whether topic is one the share group's
// offsets are kept for (subscribed, or altered).
func (b *Broker) shareGroupHasTopic(id, topic string) bool {
	b.shares.mu.Lock()
	defer b.shares.mu.Unlock()
	return b.shares.topics[id][topic]
}

// setShareGroupTopic records (on) or forgets topic as one of the share
// group's.
func (b *Broker) setShareGroupTopic(id, topic string, on bool) {
	sg := b.shares
	sg.mu.Lock()
	defer sg.mu.Unlock()
	if !on {
		delete(sg.topics[id], topic)
		return
	}
	if sg.topics[id] == nil {
		sg.topics[id] = map[string]bool{}
	}
	sg.topics[id][topic] = true
}
