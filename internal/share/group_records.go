package share

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"samsa/internal/coordrec"
)

// GroupRecordKind is the type of a share group record in
// __consumer_offsets: the record key's version, as in Kafka's
// group-coordinator schemas (ShareGroup*Key.json).
type GroupRecordKind int16

// Share group record kinds. Key version 9 (ShareGroupPartitionMetadata)
// is no longer written by Kafka; it is read and ignored.
const (
	RecordPartitionMetadata      GroupRecordKind = 9  // ShareGroupPartitionMetadata (obsolete)
	RecordMemberMetadata         GroupRecordKind = 10 // ShareGroupMemberMetadata
	RecordGroupEpoch             GroupRecordKind = 11 // ShareGroupMetadata
	RecordTargetEpoch            GroupRecordKind = 12 // ShareGroupTargetAssignmentMetadata
	RecordTargetMember           GroupRecordKind = 13 // ShareGroupTargetAssignmentMember
	RecordCurrentAssignment      GroupRecordKind = 14 // ShareGroupCurrentMemberAssignment
	RecordStatePartitionMetadata GroupRecordKind = 15 // ShareGroupStatePartitionMetadata
)

// IsGroupRecordKey reports whether a __consumer_offsets key version is a
// share group record's.
func IsGroupRecordKey(version int16) bool {
	return version >= int16(RecordPartitionMetadata) && version <= int16(RecordStatePartitionMetadata)
}

// errBadGroupRecord: a share group record that does not decode.
var errBadGroupRecord = errors.New("share: bad share group record")

// GroupRecord is one share group record, decoded. A tombstone carries
// only Kind, Group and (for member records) Member.
type GroupRecord struct {
	Kind      GroupRecordKind
	Group     string
	Member    string
	Tombstone bool

	// Epoch: the group epoch (RecordGroupEpoch), the assignment epoch
	// (RecordTargetEpoch) or the member epoch (RecordCurrentAssignment).
	Epoch int32
	// PreviousEpoch: RecordCurrentAssignment.
	PreviousEpoch int32
	// RackID, ClientID, ClientHost, Topics: RecordMemberMetadata.
	RackID     *string
	ClientID   string
	ClientHost string
	Topics     []string
	// Assignment: RecordTargetMember, RecordCurrentAssignment (topic ids
	// and partitions; Topic is empty after decoding).
	Assignment []TopicPartitions
	// Initialized and Deleting: RecordStatePartitionMetadata, the topics
	// whose share-partition state was initialized, and those whose state
	// is being deleted (Partitions unused).
	Initialized []TopicPartitions
	Deleting    []TopicPartitions
}

// KV returns the record's key and value (nil: a tombstone). Keys are not
// flexible: int16 version, then str16 group id (and member id); values
// are int16 version 0 and flexible fields (compact strings and arrays as
// uvarint length+1, uuids as 16 bytes, a tag buffer per struct).
func (r GroupRecord) KV() (key, value []byte) {
	key = binary.BigEndian.AppendUint16(nil, uint16(r.Kind))
	key = coordrec.AppendStr16(key, r.Group)
	if r.Kind.hasMember() {
		key = coordrec.AppendStr16(key, r.Member)
	}
	if r.Tombstone {
		return key, nil
	}
	v := []byte{0, 0}
	switch r.Kind {
	case RecordGroupEpoch, RecordTargetEpoch:
		v = binary.BigEndian.AppendUint32(v, uint32(r.Epoch))
	case RecordMemberMetadata:
		v = coordrec.AppendCompactNullStr(v, r.RackID)
		v = coordrec.AppendCompactStr(v, r.ClientID)
		v = coordrec.AppendCompactStr(v, r.ClientHost)
		v = binary.AppendUvarint(v, uint64(len(r.Topics)+1))
		for _, t := range r.Topics {
			v = coordrec.AppendCompactStr(v, t)
		}
	case RecordTargetMember:
		v = appendTopicPartitions(v, r.Assignment, false)
	case RecordCurrentAssignment:
		v = binary.BigEndian.AppendUint32(v, uint32(r.Epoch))
		v = binary.BigEndian.AppendUint32(v, uint32(r.PreviousEpoch))
		v = append(v, 0) // State: STABLE, the only state of a share group member
		v = appendTopicPartitions(v, r.Assignment, false)
	case RecordStatePartitionMetadata:
		v = appendTopicPartitions(v, r.Initialized, true)
		v = binary.AppendUvarint(v, uint64(len(r.Deleting)+1))
		for _, tp := range r.Deleting {
			v = append(v, tp.TopicID[:]...)
			v = coordrec.AppendCompactStr(v, tp.Topic)
			v = append(v, 0) // tags
		}
	}
	v = append(v, 0) // tags
	return key, v
}

func (k GroupRecordKind) hasMember() bool {
	return k == RecordMemberMetadata || k == RecordTargetMember || k == RecordCurrentAssignment
}

// appendTopicPartitions writes [](uuid, [named: string], []int32).
func appendTopicPartitions(b []byte, tps []TopicPartitions, named bool) []byte {
	b = binary.AppendUvarint(b, uint64(len(tps)+1))
	for _, tp := range tps {
		b = append(b, tp.TopicID[:]...)
		if named {
			b = coordrec.AppendCompactStr(b, tp.Topic)
		}
		b = binary.AppendUvarint(b, uint64(len(tp.Partitions)+1))
		for _, p := range tp.Partitions {
			b = binary.BigEndian.AppendUint32(b, uint32(p))
		}
		b = append(b, 0) // tags
	}
	return b
}

// recReader decodes the fields of a share group record.
type recReader struct{ coordrec.Reader }

func newRecReader(b []byte) *recReader {
	return &recReader{coordrec.Reader{B: b, Bad: errBadGroupRecord}}
}

func (r *recReader) topicPartitions(named bool) []TopicPartitions {
	n := r.CompactLen()
	var out []TopicPartitions
	for range max(n, 0) {
		var tp TopicPartitions
		copy(tp.TopicID[:], r.N(16))
		if named {
			tp.Topic = r.CompactStr()
		}
		k := r.CompactLen()
		if k > len(r.B)/4 {
			r.Fail()
			return out
		}
		for range max(k, 0) {
			tp.Partitions = append(tp.Partitions, r.I32())
		}
		r.Tags()
		if r.Err != nil {
			return out
		}
		out = append(out, tp)
	}
	return out
}

// DecodeGroupRecord decodes a share group record's key and value (nil: a
// tombstone).
func DecodeGroupRecord(key, value []byte) (GroupRecord, error) {
	k := newRecReader(key)
	rec := GroupRecord{Kind: GroupRecordKind(int16(binary.BigEndian.Uint16(k.N(2))))}
	if !IsGroupRecordKey(int16(rec.Kind)) {
		return rec, fmt.Errorf("share: key version %d is not a share group record", rec.Kind)
	}
	rec.Group = k.Str16()
	if rec.Kind.hasMember() {
		rec.Member = k.Str16()
	}
	if k.Err != nil {
		return rec, fmt.Errorf("share: share group record key: %w", k.Err)
	}
	if value == nil {
		rec.Tombstone = true
		return rec, nil
	}
	v := newRecReader(value)
	if ver := int16(binary.BigEndian.Uint16(v.N(2))); ver < 0 {
		return rec, fmt.Errorf("share: share group record value version %d: %w", ver, errBadGroupRecord)
	}
	switch rec.Kind {
	case RecordPartitionMetadata:
		return rec, nil // obsolete; not read
	case RecordGroupEpoch, RecordTargetEpoch:
		rec.Epoch = v.I32()
	case RecordMemberMetadata:
		rec.RackID = v.CompactNullStr()
		rec.ClientID = v.CompactStr()
		rec.ClientHost = v.CompactStr()
		n := v.CompactLen()
		for range max(n, 0) {
			rec.Topics = append(rec.Topics, v.CompactStr())
		}
		sort.Strings(rec.Topics)
	case RecordTargetMember:
		rec.Assignment = v.topicPartitions(false)
	case RecordCurrentAssignment:
		rec.Epoch = v.I32()
		rec.PreviousEpoch = v.I32()
		v.N(1) // State
		rec.Assignment = v.topicPartitions(false)
	case RecordStatePartitionMetadata:
		rec.Initialized = v.topicPartitions(true)
		n := v.CompactLen()
		for range max(n, 0) {
			var tp TopicPartitions
			copy(tp.TopicID[:], v.N(16))
			tp.Topic = v.CompactStr()
			v.Tags()
			rec.Deleting = append(rec.Deleting, tp)
		}
	}
	v.Tags()
	if v.Err != nil {
		return rec, fmt.Errorf("share: share group record value (type %d): %w", rec.Kind, v.Err)
	}
	return rec, nil
}

// ApplyRecord applies one record to the group, as the loader does when
// replaying __consumer_offsets (the runtime's changes are made by
// Heartbeat and the records describe them). Records of other groups and
// the state partition metadata (kept by the broker) change nothing here.
//
// Reference: Kafka GroupMetadataManager.replay for the share group
// record types.
func (g *Group) ApplyRecord(r GroupRecord) {
	if r.Group != g.ID {
		return
	}
	switch r.Kind {
	case RecordGroupEpoch:
		if r.Tombstone {
			g.epoch, g.assigned = 0, 0
			g.members = map[string]*Member{}
			return
		}
		g.epoch = r.Epoch
	case RecordTargetEpoch:
		if r.Tombstone {
			g.assigned = 0
			return
		}
		g.assigned = r.Epoch
	case RecordMemberMetadata:
		if r.Tombstone {
			delete(g.members, r.Member)
			return
		}
		m := g.member(r.Member)
		m.RackID = ""
		if r.RackID != nil {
			m.RackID = *r.RackID
		}
		m.ClientID, m.ClientHost = r.ClientID, r.ClientHost
		m.Topics = slices.Compact(slices.Sorted(slices.Values(r.Topics)))
	case RecordTargetMember:
		m := g.members[r.Member]
		if m == nil {
			if r.Tombstone {
				return
			}
			m = g.member(r.Member)
		}
		m.target = nil
		if !r.Tombstone {
			m.target = cloneAssignment(r.Assignment)
		}
	case RecordCurrentAssignment:
		m := g.members[r.Member]
		if m == nil {
			if r.Tombstone {
				return
			}
			m = g.member(r.Member)
		}
		if r.Tombstone {
			m.Epoch, m.previousEpoch, m.Assignment = 0, 0, nil
			return
		}
		m.Epoch, m.previousEpoch = r.Epoch, r.PreviousEpoch
		m.Assignment = cloneAssignment(r.Assignment)
	}
}

// member returns the member id, adding it if new.
func (g *Group) member(id string) *Member {
	m := g.members[id]
	if m == nil {
		m = &Member{ID: id}
		g.members[id] = m
	}
	return m
}

// Loaded readies a group rebuilt by ApplyRecord to serve at now: every
// member's session starts at now (as Kafka schedules the session timers
// of a loaded group), its next heartbeat answer carries its assignment,
// the assignment's topic names are resolved, and the assignment is kept
// if it is still what the assignor makes of the subscribed topics
// (otherwise the next heartbeat reassigns at a new group epoch). The
// members keep their epochs: a member that heartbeats the new
// coordinator at its epoch continues.
func (g *Group) Loaded(now time.Time, topics Topics) {
	names := map[[16]byte]string{}
	for _, m := range g.members {
		m.deadline = now.Add(g.cfg.SessionTimeout)
		m.sent = false
		for _, t := range m.Topics {
			if ti, ok := topics(t); ok {
				names[ti.ID] = t
			}
		}
	}
	fresh := true
	resolve := func(a []TopicPartitions) {
		for i := range a {
			n, ok := names[a[i].TopicID]
			if !ok {
				fresh = false // a topic deleted or no longer subscribed
			}
			a[i].Topic = n
		}
		sort.Slice(a, func(i, j int) bool { return a[i].Topic < a[j].Topic })
	}
	for _, m := range g.members {
		resolve(m.Assignment)
		resolve(m.target)
	}
	sig, infos := g.signature(topics)
	assign := SimpleAssign(g.memberIDs(), func(id string) []string { return g.members[id].Topics }, infos)
	for id, m := range g.members {
		if !equalAssignment(assign[id], m.target) {
			fresh = false
		}
	}
	if fresh && g.assigned == g.epoch {
		g.sig = sig
	} else {
		// Not what the assignor makes now: the next maybeAssign sees a
		// changed signature and reassigns.
		g.sig = "\x00loaded"
	}
}

// Clone returns a deep copy of the group, to make a change on and keep
// only once its records are durable.
func (g *Group) Clone() *Group {
	c := *g
	c.members = make(map[string]*Member, len(g.members))
	for id, m := range g.members {
		mc := *m
		mc.Topics = slices.Clone(m.Topics)
		mc.Assignment = cloneAssignment(m.Assignment)
		mc.target = cloneAssignment(m.target)
		c.members[id] = &mc
	}
	return &c
}

func cloneAssignment(a []TopicPartitions) []TopicPartitions {
	if a == nil {
		return nil
	}
	out := make([]TopicPartitions, len(a))
	for i, tp := range a {
		out[i] = tp
		out[i].Partitions = slices.Clone(tp.Partitions)
	}
	return out
}

// RecordsSince returns the records that take the group from prev (an
// earlier Clone of it) to its state now, in the order Kafka writes them:
// a leaving member's current assignment, target assignment and metadata
// tombstones; new or changed member metadata; the group epoch; the
// changed target assignments and the assignment epoch; the changed
// current assignments. Nil when nothing persisted changed.
func (g *Group) RecordsSince(prev *Group) []GroupRecord {
	var out []GroupRecord
	for _, id := range prev.memberIDs() {
		if g.members[id] == nil {
			out = append(out,
				GroupRecord{Kind: RecordCurrentAssignment, Group: g.ID, Member: id, Tombstone: true},
				GroupRecord{Kind: RecordTargetMember, Group: g.ID, Member: id, Tombstone: true},
				GroupRecord{Kind: RecordMemberMetadata, Group: g.ID, Member: id, Tombstone: true})
		}
	}
	ids := g.memberIDs()
	for _, id := range ids {
		m, p := g.members[id], prev.members[id]
		if p == nil || p.RackID != m.RackID || p.ClientID != m.ClientID || p.ClientHost != m.ClientHost || !slices.Equal(p.Topics, m.Topics) {
			out = append(out, memberMetadataRecord(g.ID, m))
		}
	}
	if g.epoch != prev.epoch {
		out = append(out, GroupRecord{Kind: RecordGroupEpoch, Group: g.ID, Epoch: g.epoch})
	}
	if g.assigned != prev.assigned {
		for _, id := range ids {
			m, p := g.members[id], prev.members[id]
			if p == nil || !equalAssignment(p.target, m.target) {
				out = append(out, GroupRecord{Kind: RecordTargetMember, Group: g.ID, Member: id, Assignment: cloneAssignment(m.target)})
			}
		}
		out = append(out, GroupRecord{Kind: RecordTargetEpoch, Group: g.ID, Epoch: g.assigned})
	}
	for _, id := range ids {
		m, p := g.members[id], prev.members[id]
		if p == nil || p.Epoch != m.Epoch || !equalAssignment(p.Assignment, m.Assignment) {
			out = append(out, GroupRecord{Kind: RecordCurrentAssignment, Group: g.ID, Member: id,
				Epoch: m.Epoch, PreviousEpoch: m.previousEpoch, Assignment: cloneAssignment(m.Assignment)})
		}
	}
	return out
}

func memberMetadataRecord(group string, m *Member) GroupRecord {
	r := GroupRecord{Kind: RecordMemberMetadata, Group: group, Member: m.ID,
		ClientID: m.ClientID, ClientHost: m.ClientHost, Topics: slices.Clone(m.Topics)}
	if m.RackID != "" {
		rack := m.RackID
		r.RackID = &rack
	}
	return r
}

// Records returns the records that rebuild the whole group: those of a
// group made at its epoch with no member before (RecordsSince an empty
// group), the group epoch included even when 0.
func (g *Group) Records() []GroupRecord {
	empty := NewGroup(g.ID, g.cfg)
	empty.epoch, empty.assigned = -1, -1
	return g.RecordsSince(empty)
}

// Tombstones returns the records that delete the group: its members'
// tombstones, the assignment epoch's, the state partition metadata's and
// the group epoch's last (Kafka's share group tombstone records).
func (g *Group) Tombstones() []GroupRecord {
	var out []GroupRecord
	for _, id := range g.memberIDs() {
		out = append(out,
			GroupRecord{Kind: RecordCurrentAssignment, Group: g.ID, Member: id, Tombstone: true},
			GroupRecord{Kind: RecordTargetMember, Group: g.ID, Member: id, Tombstone: true},
			GroupRecord{Kind: RecordMemberMetadata, Group: g.ID, Member: id, Tombstone: true})
	}
	return append(out,
		GroupRecord{Kind: RecordTargetEpoch, Group: g.ID, Tombstone: true},
		GroupRecord{Kind: RecordStatePartitionMetadata, Group: g.ID, Tombstone: true},
		GroupRecord{Kind: RecordGroupEpoch, Group: g.ID, Tombstone: true})
}
