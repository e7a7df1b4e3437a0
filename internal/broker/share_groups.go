package broker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"samsa/internal/group"
	"samsa/internal/share"
)

// shareGroups is the share groups (KIP-932) whose coordinator this broker
// is: the leader of the group's __consumer_offsets partition, as for
// classic and consumer groups (group.Coordinator.Owns decides).
//
// Membership is persisted in __consumer_offsets with Kafka's share group
// records (share.GroupRecord): every change is made on a clone of the
// group (changeShareGroup), its records are appended, and only then is
// the clone installed, so memory never runs ahead of the log. A
// coordinator that loads the partition rebuilds the groups from the
// records (loadShareGroups) with fresh sessions, and a member that
// heartbeats it at its epoch continues. Sessions are expired (and the
// expiry written) when a member of the group heartbeats, so no timer
// goroutine is needed; DescribeGroups and ListGroups show the group as
// if expired without writing.
type shareGroups struct {
	cfg share.GroupConfig
	mu  sync.Mutex // guards groups, topics, deleting, locks and every Group in them
	// groups by id. A Group here is never changed in place: a change
	// replaces it.
	groups map[string]*share.Group
	// topics is, by group, every topic its members subscribed to or whose
	// offsets were altered: the share-partitions whose state DeleteGroups
	// deletes (ShareGroupStatePartitionMetadata's initialized topics).
	topics map[string]map[string]bool
	// deleting holds the groups whose latest topics record names their
	// topics as deleting: a deletion was begun (deleteShareGroup) and
	// has not ended. The next change that leaves the group with members
	// abandons it by writing the topics as initialized again, so a
	// later coordinator does not finish a deletion of a group in use
	// (resumeShareGroupDeletions).
	deleting map[string]bool
	// locks serialise the changes of each group, from reading it to
	// installing the change once its records are durable; an
	// AlterShareGroupOffsets holds the group's until its new state is
	// written, so a member cannot join in between. A lock is dropped
	// when no caller holds or waits for it, so the map holds only the
	// groups being changed.
	locks map[string]*changeLock
}

// changeLock is a group's change lock and how many callers hold or wait
// for it (guarded by shareGroups.mu).
type changeLock struct {
	mu   sync.Mutex
	refs int
}

func newShareGroups(b *Broker) *shareGroups {
	return &shareGroups{
		cfg: share.GroupConfig{
			HeartbeatInterval: time.Duration(b.cfg.GroupShareHeartbeatIntervalMs) * time.Millisecond,
			SessionTimeout:    time.Duration(b.cfg.GroupShareSessionTimeoutMs) * time.Millisecond,
			MaxSize:           int(b.cfg.GroupShareMaxSize),
		},
		groups:   map[string]*share.Group{},
		topics:   map[string]map[string]bool{},
		deleting: map[string]bool{},
		locks:    map[string]*changeLock{},
	}
}

// lock takes the change lock of group id and returns its release.
func (sg *shareGroups) lock(id string) (unlock func()) {
	sg.mu.Lock()
	l := sg.locks[id]
	if l == nil {
		l = &changeLock{}
		sg.locks[id] = l
	}
	l.refs++
	sg.mu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		sg.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(sg.locks, id)
		}
		sg.mu.Unlock()
	}
}

// changeLocks returns how many groups have a change lock (tests).
func (sg *shareGroups) changeLocks() int {
	sg.mu.Lock()
	defer sg.mu.Unlock()
	return len(sg.locks)
}

// changeShareGroup runs fn on a clone of share group id (a new empty
// group if unknown and create; fn gets nil if unknown and !create) and
// the group's topics, appends the records of what fn changed to the
// group's __consumer_offsets partition, and installs the clone once they
// are durable. The changes fn made are written even when it returns an
// error (sessions it expired), which changeShareGroup then returns. The
// caller holds the group's change lock (shareGroups.lock).
func (b *Broker) changeShareGroupLocked(ctx context.Context, id string, create bool, fn func(g *share.Group, topics map[string]bool) error) error {
	sg := b.shares
	sg.mu.Lock()
	base := sg.groups[id]
	before := maps.Clone(sg.topics[id])
	deleting := sg.deleting[id]
	sg.mu.Unlock()
	var g *share.Group
	switch {
	case base != nil:
		g = base.Clone()
	case create:
		g = share.NewGroup(id, sg.cfg)
	default:
		return fn(nil, nil)
	}
	topics := maps.Clone(before)
	if topics == nil {
		topics = map[string]bool{}
	}
	ferr := fn(g, topics)
	var recs []share.GroupRecord
	if base == nil {
		recs = g.Records()
	} else {
		recs = g.RecordsSince(base)
	}
	abandon := deleting && !g.Empty()
	if abandon || !maps.Equal(before, topics) {
		recs = append(recs, b.shareStateTopicsRecord(id, topics))
	}
	if err := b.appendShareRecords(ctx, id, recs); err != nil {
		return err
	}
	sg.mu.Lock()
	sg.groups[id] = g
	sg.topics[id] = topics
	if abandon {
		delete(sg.deleting, id)
	}
	sg.mu.Unlock()
	return ferr
}

// shareStateTopicsRecord is the ShareGroupStatePartitionMetadata of a
// group's topics: each with its id and partitions as the image has them
// (a topic the image no longer has is left out: it has no state left).
func (b *Broker) shareStateTopicsRecord(id string, topics map[string]bool) share.GroupRecord {
	img := b.cluster.Image()
	r := share.GroupRecord{Kind: share.RecordStatePartitionMetadata, Group: id}
	for _, n := range slices.Sorted(maps.Keys(topics)) {
		t := img.Topics[n]
		if t == nil {
			continue
		}
		tp := share.TopicPartitions{TopicID: t.ID, Topic: n}
		for p := range t.Replicas {
			tp.Partitions = append(tp.Partitions, int32(p))
		}
		r.Initialized = append(r.Initialized, tp)
	}
	return r
}

// appendShareRecords writes share group records to the group's
// __consumer_offsets partition.
func (b *Broker) appendShareRecords(ctx context.Context, id string, recs []share.GroupRecord) error {
	if len(recs) == 0 {
		return nil
	}
	kvs := make([]group.KV, len(recs))
	for i, r := range recs {
		kvs[i].Key, kvs[i].Value = r.KV()
	}
	return b.groups.AppendShareRecords(ctx, id, kvs)
}

// loadShareGroups rebuilds the share groups of a __consumer_offsets
// partition from its share group records (group.Config.ShareRecords),
// replacing what this broker held of that partition's share groups. A
// group whose last ShareGroupMetadata record is a tombstone is gone.
func (b *Broker) loadShareGroups(partition int32, recs map[string][]group.KV) {
	sg := b.shares
	topics := b.shareTopics()
	now := b.now()
	loaded := map[string]*share.Group{}
	stateTopics := map[string]map[string]bool{}
	deleting := map[string]bool{}
	for id, kvs := range recs {
		g := share.NewGroup(id, sg.cfg)
		alive := false
		for _, kv := range kvs {
			r, err := share.DecodeGroupRecord(kv.Key, kv.Value)
			if err != nil {
				b.log.Warn("skip share group record", "group", id, "err", err)
				continue
			}
			switch r.Kind {
			case share.RecordGroupEpoch:
				alive = !r.Tombstone
			case share.RecordStatePartitionMetadata:
				ts := map[string]bool{}
				for _, tp := range r.Initialized {
					ts[tp.Topic] = true
				}
				// A deletion the previous coordinator did not finish is
				// finished by this one (resumeShareGroupDeletions).
				for _, tp := range r.Deleting {
					ts[tp.Topic] = true
				}
				stateTopics[id] = ts
				deleting[id] = len(r.Deleting) > 0
			}
			g.ApplyRecord(r)
		}
		if alive {
			g.Loaded(now, topics)
			loaded[id] = g
		}
	}
	sg.mu.Lock()
	defer sg.mu.Unlock()
	for id := range sg.groups {
		if group.Partition(id, b.cfg.OffsetsTopicNumPartitions) == partition {
			delete(sg.groups, id)
			delete(sg.topics, id)
			delete(sg.deleting, id)
		}
	}
	var resume []string
	for id, g := range loaded {
		sg.groups[id] = g
		if ts := stateTopics[id]; ts != nil {
			sg.topics[id] = ts
		}
		if deleting[id] {
			sg.deleting[id] = true
			resume = append(resume, id)
		}
	}
	if len(loaded) > 0 {
		b.log.Info("share: loaded share groups", "partition", partition, "groups", len(loaded))
	}
	if len(resume) > 0 {
		// NB: the load calling this holds a count of b.loads, so Close
		// waits for this too.
		b.loads.Add(1)
		go func() {
			defer b.loads.Done()
			b.resumeShareGroupDeletions(resume)
		}()
	}
}

// resumeShareGroupDeletions finishes the deletions of share groups that a
// previous coordinator began (their deleting topics are written) and did
// not finish: it failed or lost the coordination before the group's
// tombstones. Without this the group, and what is left of its state,
// would stay until someone deleted it again. The deletion runs as
// DeleteGroups runs it, once the partition's load has ended; it stops for
// good when the group is gone, has members again (then it lives on, as
// a group deleted while a member joined does), or is coordinated
// elsewhere.
func (b *Broker) resumeShareGroupDeletions(ids []string) {
	for _, id := range ids {
		wait := 50 * time.Millisecond
		for attempt := 1; ; attempt++ {
			isShare, err := b.deleteShareGroup(b.ctx, id)
			switch {
			case err == nil && isShare:
				b.log.Info("share: finished a share group deletion a previous coordinator began", "group", id)
			case err == nil, errors.Is(err, group.ErrNonEmptyGroup), errors.Is(err, group.ErrNotCoordinator):
			case b.ctx.Err() != nil:
				return
			case attempt < 20:
				select {
				case <-b.ctx.Done():
					return
				case <-time.After(wait):
				}
				wait = min(2*wait, 2*time.Second)
				continue
			default:
				b.log.Warn("share: could not finish a share group deletion; DeleteGroups retries it", "group", id, "err", err)
			}
			break
		}
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
	unlock := sg.lock(id)
	defer unlock()
	var res share.HeartbeatResult
	var expired []string
	err := b.changeShareGroupLocked(ctx, id, true, func(g *share.Group, ts map[string]bool) error {
		// The group's own configs (heartbeat interval, session timeout)
		// as they are now: a change applies from the next heartbeat.
		g.SetConfig(b.shareGroupConfig(id))
		expired = g.Expire(now, topics)
		g.Refresh(topics)
		for _, t := range req.Topics {
			ts[t] = true
		}
		var err error
		res, err = g.Heartbeat(req, now, topics)
		return err
	})
	if errors.Is(err, group.ErrNotCoordinator) || errors.Is(err, group.ErrCoordinatorNotAvailable) || errors.Is(err, group.ErrCoordinatorLoadInProgress) {
		return share.HeartbeatResult{}, err
	}
	for _, m := range expired {
		b.releaseShareMember(id, m)
	}
	if err == nil && req.MemberEpoch == -1 {
		b.releaseShareMember(id, req.MemberID)
	}
	return res, err
}

// forgetShareGroup drops a share group this broker no longer coordinates.
func (b *Broker) forgetShareGroup(id string) {
	b.shares.mu.Lock()
	delete(b.shares.groups, id)
	delete(b.shares.deleting, id)
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
	// A view as if expired: the expiry is written by the next heartbeat.
	g = g.Clone()
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
			g = g.Clone()
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
// As Kafka does, the topics whose state is deleted are first written as
// the group's deleting topics (ShareGroupStatePartitionMetadata), then
// the state is deleted, then the group's tombstones are written: a
// coordinator that takes over in between still knows the group and
// which state to delete.
//
// NB: partition leaders other than this broker keep the share-partitions
// they serve in memory until their leadership changes or a member opens
// a share session; their next write is fenced by the deletion's state
// epoch (share.States).
func (b *Broker) deleteShareGroup(ctx context.Context, id string) (isShare bool, err error) {
	sg := b.shares
	if !b.isShareGroup(id) {
		return false, nil
	}
	unlock := sg.lock(id)
	defer unlock()
	var expired []string
	err = b.changeShareGroupLocked(ctx, id, false, func(g *share.Group, _ map[string]bool) error {
		if g == nil {
			return errShareGroupGone
		}
		expired = g.Expire(b.now(), b.shareTopics())
		if !g.Empty() {
			return group.ErrNonEmptyGroup
		}
		return nil
	})
	for _, m := range expired {
		b.releaseShareMember(id, m)
	}
	if errors.Is(err, errShareGroupGone) {
		return false, nil
	}
	if err != nil {
		return true, err
	}
	sg.mu.Lock()
	g := sg.groups[id]
	topics := maps.Clone(sg.topics[id])
	sg.mu.Unlock()
	deleting := b.shareStateTopicsRecord(id, topics)
	deleting.Deleting, deleting.Initialized = deleting.Initialized, nil
	if err := b.appendShareRecords(ctx, id, []share.GroupRecord{deleting}); err != nil {
		return true, err
	}
	sg.mu.Lock()
	sg.deleting[id] = true
	sg.mu.Unlock()
	if h, ok := shareGroupDeletingHooks.Load(id); ok {
		if err := h.(func() error)(); err != nil {
			return true, err
		}
	}
	sps := b.sharePartitions
	sps.mu.Lock()
	for k := range sps.parts {
		if k.group == id {
			delete(sps.parts, k)
		}
	}
	sps.mu.Unlock()
	for _, tp := range deleting.Deleting {
		for _, p := range tp.Partitions {
			if err := (coordPersister{b}).delete(ctx, sharePartKey{id, tp.TopicID, p}); err != nil {
				return true, fmt.Errorf("%w: delete share-partition state: %w", group.ErrCoordinatorNotAvailable, err)
			}
		}
	}
	if err := b.appendShareRecords(ctx, id, g.Tombstones()); err != nil {
		return true, err
	}
	sg.mu.Lock()
	delete(sg.groups, id)
	delete(sg.topics, id)
	delete(sg.deleting, id)
	sg.mu.Unlock()
	return true, nil
}

// errShareGroupGone: the share group went while a change waited for its
// lock.
var errShareGroupGone = errors.New("share group gone")

// emptyShareGroup checks that id is a share group coordinated here
// without members, for AlterShareGroupOffsets (create: an unknown id
// becomes an empty share group, as Kafka 4.2 allows offsets to be set
// before a group is first used) and DeleteShareGroupOffsets. Errors: the
// coordinator's, share.ErrGroupIDNotFound (not a share group, or unknown
// and !create), group.ErrNonEmptyGroup.
//
// On success the group's change lock is held until the caller calls
// unlock: the caller writes the new state of its share-partitions
// before, so a member that heartbeats to join meanwhile waits, and is
// only given records once the new state is there (Kafka runs the check
// and the write as one coordinator operation).
func (b *Broker) emptyShareGroup(ctx context.Context, id string, create bool) (unlock func(), err error) {
	if id == "" {
		return nil, fmt.Errorf("%w: the group id is empty", group.ErrInvalidGroupID)
	}
	if err := b.groups.Owns(id); err != nil {
		b.forgetShareGroup(id)
		return nil, err
	}
	if !b.isShareGroup(id) {
		listed, err := b.groups.ListGroups(ctx, group.ListGroupsRequest{})
		if err != nil {
			return nil, err
		}
		for _, lg := range listed {
			if lg.Group == id {
				return nil, fmt.Errorf("%w: group %s is a %s group, not a share group", share.ErrGroupIDNotFound, id, lg.Type)
			}
		}
		if !create {
			return nil, fmt.Errorf("%w: %s", share.ErrGroupIDNotFound, id)
		}
	}
	unlock = b.shares.lock(id)
	var expired []string
	err = b.changeShareGroupLocked(ctx, id, create, func(g *share.Group, _ map[string]bool) error {
		if g == nil {
			return fmt.Errorf("%w: %s", share.ErrGroupIDNotFound, id)
		}
		expired = g.Expire(b.now(), b.shareTopics())
		if !g.Empty() {
			return fmt.Errorf("%w: share group %s has members", group.ErrNonEmptyGroup, id)
		}
		return nil
	})
	for _, m := range expired {
		b.releaseShareMember(id, m)
	}
	if err != nil {
		unlock()
		return nil, err
	}
	if h := shareGroupEmptyHook.Load(); h != nil {
		(*h)(id)
	}
	return unlock, nil
}

// shareGroupEmptyHook, when set, is called by emptyShareGroup with the
// group's change lock held (tests).
var shareGroupEmptyHook atomic.Pointer[func(group string)]

// shareGroupDeletingHooks holds, by group, a func deleteShareGroup calls
// once the group's deleting topics are written; an error ends the
// deletion there (tests: a coordinator that fails mid-deletion).
var shareGroupDeletingHooks sync.Map

// shareGroupHasTopic reports whether topic is one the share group's
// offsets are kept for (subscribed, or altered).
func (b *Broker) shareGroupHasTopic(id, topic string) bool {
	b.shares.mu.Lock()
	defer b.shares.mu.Unlock()
	return b.shares.topics[id][topic]
}

// setShareGroupTopicLocked records (on) or forgets topic as one of the
// share group's, durably. The caller holds the group's change lock (from
// emptyShareGroup).
func (b *Broker) setShareGroupTopicLocked(ctx context.Context, id, topic string, on bool) error {
	return b.changeShareGroupLocked(ctx, id, false, func(g *share.Group, ts map[string]bool) error {
		if g == nil {
			return nil
		}
		if on {
			ts[topic] = true
		} else {
			delete(ts, topic)
		}
		return nil
	})
}
