package group

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"
)

// Record key versions of the consumer group records in
// __consumer_offsets (Kafka's group-coordinator message schemas; the key
// version is the record type).
const (
	cgMetadataKeyVersion          = 3 // ConsumerGroupMetadataKey
	cgPartitionMetadataKeyVersion = 4 // ConsumerGroupPartitionMetadataKey
	cgMemberMetadataKeyVersion    = 5 // ConsumerGroupMemberMetadataKey
	cgTargetMetadataKeyVersion    = 6 // ConsumerGroupTargetAssignmentMetadataKey
	cgTargetMemberKeyVersion      = 7 // ConsumerGroupTargetAssignmentMemberKey
	cgCurrentAssignmentKeyVersion = 8 // ConsumerGroupCurrentMemberAssignmentKey
)

// CGRecordKind is the type of a consumer group record.
type CGRecordKind int8

// Consumer group record kinds, one per key version.
const (
	CGGroupEpoch        CGRecordKind = cgMetadataKeyVersion
	CGPartitionMetadata CGRecordKind = cgPartitionMetadataKeyVersion
	CGMemberMetadata    CGRecordKind = cgMemberMetadataKeyVersion
	CGTargetEpoch       CGRecordKind = cgTargetMetadataKeyVersion
	CGTargetMember      CGRecordKind = cgTargetMemberKeyVersion
	CGCurrentAssignment CGRecordKind = cgCurrentAssignmentKeyVersion
)

// CGRecord is one consumer group record, decoded. Tombstone records
// carry only Kind, Group and (for member records) Member.
type CGRecord struct {
	Kind      CGRecordKind
	Group     string
	Member    string
	Tombstone bool

	Epoch      int32                // CGGroupEpoch, CGTargetEpoch
	Topics     map[string]TopicInfo // CGPartitionMetadata
	Metadata   *ConsumerMember      // CGMemberMetadata: the subscription fields
	Assignment PartitionSet         // CGTargetMember
	// CGCurrentAssignment: Epoch (member epoch), PreviousEpoch, State,
	// Assigned, PendingRevocation.
	PreviousEpoch     int32
	State             MemberState
	Assigned          PartitionSet
	PendingRevocation PartitionSet
}

func groupEpochRecord(group string, epoch int32) CGRecord {
	return CGRecord{Kind: CGGroupEpoch, Group: group, Epoch: epoch}
}

func groupEpochTombstone(group string) CGRecord {
	return CGRecord{Kind: CGGroupEpoch, Group: group, Tombstone: true}
}

func partitionMetadataRecord(group string, topics map[string]TopicInfo) CGRecord {
	return CGRecord{Kind: CGPartitionMetadata, Group: group, Topics: topics}
}

func partitionMetadataTombstone(group string) CGRecord {
	return CGRecord{Kind: CGPartitionMetadata, Group: group, Tombstone: true}
}

func memberMetadataRecord(group string, m *ConsumerMember) CGRecord {
	return CGRecord{Kind: CGMemberMetadata, Group: group, Member: m.ID, Metadata: m.clone()}
}

func memberMetadataTombstone(group, member string) CGRecord {
	return CGRecord{Kind: CGMemberMetadata, Group: group, Member: member, Tombstone: true}
}

func targetEpochRecord(group string, epoch int32) CGRecord {
	return CGRecord{Kind: CGTargetEpoch, Group: group, Epoch: epoch}
}

func targetEpochTombstone(group string) CGRecord {
	return CGRecord{Kind: CGTargetEpoch, Group: group, Tombstone: true}
}

func targetMemberRecord(group, member string, a PartitionSet) CGRecord {
	return CGRecord{Kind: CGTargetMember, Group: group, Member: member, Assignment: a.clone()}
}

func targetMemberTombstone(group, member string) CGRecord {
	return CGRecord{Kind: CGTargetMember, Group: group, Member: member, Tombstone: true}
}

func currentAssignmentRecord(group string, m *ConsumerMember) CGRecord {
	return CGRecord{Kind: CGCurrentAssignment, Group: group, Member: m.ID, Epoch: m.Epoch, PreviousEpoch: m.PreviousEpoch,
		State: m.State, Assigned: m.Assigned.clone(), PendingRevocation: m.PendingRevocation.clone()}
}

func currentAssignmentTombstone(group, member string) CGRecord {
	return CGRecord{Kind: CGCurrentAssignment, Group: group, Member: member, Tombstone: true}
}

// ApplyRecord applies one record to the group, as the runtime does after
// writing it and the loader does when replaying it.
//
// Reference: Kafka GroupMetadataManager.replay for each record type.
func (g *ConsumerGroup) ApplyRecord(r CGRecord) {
	switch r.Kind {
	case CGGroupEpoch:
		if r.Tombstone {
			g.deleted = true
			return
		}
		g.deleted = false
		g.epoch = r.Epoch
	case CGPartitionMetadata:
		g.subscribed = map[string]TopicInfo{}
		for n, t := range r.Topics {
			g.subscribed[n] = t
		}
	case CGMemberMetadata:
		m := g.members[r.Member]
		if r.Tombstone {
			if m != nil {
				g.releaseOwned(m)
				if m.InstanceID != nil && g.instances[*m.InstanceID] == m.ID {
					delete(g.instances, *m.InstanceID)
				}
				delete(g.members, r.Member)
			}
			return
		}
		if m == nil {
			m = &ConsumerMember{ID: r.Member, Assigned: PartitionSet{}, PendingRevocation: PartitionSet{}}
			g.members[r.Member] = m
		}
		md := r.Metadata
		if m.InstanceID != nil && g.instances[*m.InstanceID] == m.ID {
			delete(g.instances, *m.InstanceID)
		}
		m.InstanceID, m.RackID = md.InstanceID, md.RackID
		m.ClientID, m.ClientHost = md.ClientID, md.ClientHost
		m.SubscribedTopicNames = slices.Clone(md.SubscribedTopicNames)
		m.SubscribedTopicRegex = md.SubscribedTopicRegex
		m.RebalanceTimeout = md.RebalanceTimeout
		m.ServerAssignor = md.ServerAssignor
		m.Classic = md.Classic.clone()
		if m.InstanceID != nil {
			g.instances[*m.InstanceID] = m.ID
		}
	case CGTargetEpoch:
		if r.Tombstone {
			g.assignmentEpoch = 0
			return
		}
		g.assignmentEpoch = r.Epoch
	case CGTargetMember:
		if r.Tombstone {
			delete(g.target, r.Member)
			return
		}
		g.target[r.Member] = r.Assignment.clone()
	case CGCurrentAssignment:
		m := g.members[r.Member]
		if m == nil {
			if r.Tombstone {
				return
			}
			// NB: Kafka writes the member metadata first; a current
			// assignment alone makes a member without subscription,
			// as Kafka's replay does.
			m = &ConsumerMember{ID: r.Member}
			g.members[r.Member] = m
		}
		g.releaseOwned(m)
		if r.Tombstone {
			m.Epoch, m.PreviousEpoch, m.State = 0, 0, MemberStable
			m.Assigned, m.PendingRevocation = PartitionSet{}, PartitionSet{}
			return
		}
		m.Epoch, m.PreviousEpoch, m.State = r.Epoch, r.PreviousEpoch, r.State
		m.Assigned, m.PendingRevocation = r.Assigned.clone(), r.PendingRevocation.clone()
		for _, a := range []PartitionSet{m.Assigned, m.PendingRevocation} {
			for t, ps := range a {
				for _, p := range ps {
					g.owners[topicPart{t, p}] = owner{member: m.ID, epoch: m.Epoch}
				}
			}
		}
	}
}

// releaseOwned drops a member's partitions from the owners index.
func (g *ConsumerGroup) releaseOwned(m *ConsumerMember) {
	for _, a := range []PartitionSet{m.Assigned, m.PendingRevocation} {
		for t, ps := range a {
			for _, p := range ps {
				k := topicPart{t, p}
				if g.owners[k].member == m.ID {
					delete(g.owners, k)
				}
			}
		}
	}
}

// Encoding. Keys are non-flexible: int16 version, then str16 fields.
// Values are int16 version 0, then flexible fields (compact strings and
// arrays as uvarint length+1, uuid as 16 bytes, a tag buffer per struct).

// KV encodes a record for __consumer_offsets.
func (r CGRecord) KV() KV {
	key := binary.BigEndian.AppendUint16(nil, uint16(r.Kind))
	key = appendStr16(key, r.Group)
	switch r.Kind {
	case CGMemberMetadata, CGTargetMember, CGCurrentAssignment:
		key = appendStr16(key, r.Member)
	}
	if r.Tombstone {
		return KV{Key: key}
	}
	v := []byte{0, 0} // value version 0
	switch r.Kind {
	case CGGroupEpoch, CGTargetEpoch:
		v = binary.BigEndian.AppendUint32(v, uint32(r.Epoch))
	case CGPartitionMetadata:
		names := sortedKeys(r.Topics)
		v = binary.AppendUvarint(v, uint64(len(names)+1))
		for _, n := range names {
			t := r.Topics[n]
			v = append(v, t.ID[:]...)
			v = appendCompactStr(v, n)
			v = binary.BigEndian.AppendUint32(v, uint32(t.Partitions))
			v = binary.AppendUvarint(v, 1) // PartitionMetadata: empty (unused since Kafka 4.0)
			v = append(v, 0)               // tags
		}
	case CGMemberMetadata:
		m := r.Metadata
		v = appendCompactNullStr(v, m.InstanceID)
		v = appendCompactNullStr(v, m.RackID)
		v = appendCompactStr(v, m.ClientID)
		v = appendCompactStr(v, m.ClientHost)
		v = binary.AppendUvarint(v, uint64(len(m.SubscribedTopicNames)+1))
		for _, n := range m.SubscribedTopicNames {
			v = appendCompactStr(v, n)
		}
		var re *string
		if m.SubscribedTopicRegex != "" {
			re = &m.SubscribedTopicRegex
		}
		v = appendCompactNullStr(v, re)
		rt := int32(-1)
		if m.RebalanceTimeout >= 0 {
			rt = int32(m.RebalanceTimeout.Milliseconds())
		}
		v = binary.BigEndian.AppendUint32(v, uint32(rt))
		var sa *string
		if m.ServerAssignor != "" {
			sa = &m.ServerAssignor
		}
		v = appendCompactNullStr(v, sa)
		if m.Classic != nil {
			// Tagged field 0, ClassicMemberMetadata: a nullable struct,
			// so a presence byte before it.
			st := binary.BigEndian.AppendUint32(nil, uint32(int32(m.Classic.SessionTimeout.Milliseconds())))
			st = binary.AppendUvarint(st, uint64(len(m.Classic.Protocols)+1))
			for _, p := range m.Classic.Protocols {
				st = appendCompactStr(st, p.Name)
				st = binary.AppendUvarint(st, uint64(len(p.Metadata)+1))
				st = append(st, p.Metadata...)
				st = append(st, 0) // tags
			}
			st = append(st, 0)  // tags
			v = append(v, 1, 0) // one tagged field, tag 0
			v = binary.AppendUvarint(v, uint64(len(st)+1))
			v = append(v, 1)
			v = append(v, st...)
			return KV{Key: key, Value: v}
		}
	case CGTargetMember:
		v = appendAssignment(v, r.Assignment)
	case CGCurrentAssignment:
		v = binary.BigEndian.AppendUint32(v, uint32(r.Epoch))
		v = binary.BigEndian.AppendUint32(v, uint32(r.PreviousEpoch))
		v = append(v, byte(r.State))
		v = appendAssignment(v, r.Assigned)
		v = appendAssignment(v, r.PendingRevocation)
	}
	v = append(v, 0) // tags
	return KV{Key: key, Value: v}
}

func appendStr16(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

func appendCompactStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)+1))
	return append(b, s...)
}

func appendCompactNullStr(b []byte, s *string) []byte {
	if s == nil {
		return append(b, 0)
	}
	return appendCompactStr(b, *s)
}

func appendAssignment(b []byte, a PartitionSet) []byte {
	l := a.list()
	b = binary.AppendUvarint(b, uint64(len(l)+1))
	for _, tp := range l {
		b = append(b, tp.TopicID[:]...)
		b = binary.AppendUvarint(b, uint64(len(tp.Partitions)+1))
		for _, p := range tp.Partitions {
			b = binary.BigEndian.AppendUint32(b, uint32(p))
		}
		b = append(b, 0) // tags
	}
	return b
}

// isConsumerGroupKey reports whether a __consumer_offsets key version is
// a consumer group record's.
func isConsumerGroupKey(version int16) bool {
	return version >= cgMetadataKeyVersion && version <= cgCurrentAssignmentKeyVersion
}

// isShareGroupKey reports whether a __consumer_offsets key version is a
// share group record's (ShareGroupPartitionMetadataKey, 9, to
// ShareGroupStatePartitionMetadataKey, 15). The coordinator keeps them
// for Config.ShareRecords; it does not decode their values.
func isShareGroupKey(version int16) bool { return version >= 9 && version <= 15 }

// reader decodes the fields of a record.
type reader struct {
	b   []byte
	err error
}

func (r *reader) fail() {
	if r.err == nil {
		r.err = errBadRecord
	}
}

func (r *reader) n(k int) []byte {
	if r.err != nil || len(r.b) < k {
		r.fail()
		return make([]byte, k)
	}
	out := r.b[:k]
	r.b = r.b[k:]
	return out
}

func (r *reader) i16() int16 { return int16(binary.BigEndian.Uint16(r.n(2))) }
func (r *reader) i32() int32 { return int32(binary.BigEndian.Uint32(r.n(4))) }
func (r *reader) i8() int8   { return int8(r.n(1)[0]) }

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, k := binary.Uvarint(r.b)
	if k <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[k:]
	return v
}

func (r *reader) str16() string {
	l := int(r.i16())
	if l < 0 {
		r.fail()
		return ""
	}
	return string(r.n(l))
}

// compactLen reads a compact length: -1 for null.
func (r *reader) compactLen() int {
	v := r.uvarint()
	if v > uint64(len(r.b))+1 {
		r.fail()
		return -1
	}
	return int(v) - 1
}

func (r *reader) compactNullStr() *string {
	l := r.compactLen()
	if l < 0 {
		return nil
	}
	s := string(r.n(l))
	return &s
}

func (r *reader) compactStr() string {
	s := r.compactNullStr()
	if s == nil {
		r.fail()
		return ""
	}
	return *s
}

// tags skips a tag buffer.
func (r *reader) tags() {
	n := r.uvarint()
	for range n {
		r.uvarint()
		l := r.uvarint()
		if l > uint64(len(r.b)) {
			r.fail()
			return
		}
		r.n(int(l))
	}
}

// memberTags reads the tag buffer of a member metadata value: tag 0 is
// the classic member metadata, others are skipped.
func (r *reader) memberTags() *ClassicMemberMetadata {
	var out *ClassicMemberMetadata
	n := r.uvarint()
	for range n {
		tag := r.uvarint()
		l := r.uvarint()
		if r.err != nil || l > uint64(len(r.b)) {
			r.fail()
			return nil
		}
		body := reader{b: r.n(int(l))}
		if tag != 0 {
			continue
		}
		if body.uvarint() == 0 {
			continue // null
		}
		c := &ClassicMemberMetadata{SessionTimeout: time.Duration(body.i32()) * time.Millisecond}
		k := body.compactLen()
		if k > len(body.b)/2 {
			body.fail()
		}
		for range max(k, 0) {
			p := Protocol{Name: body.compactStr()}
			ml := body.compactLen()
			if ml >= 0 {
				p.Metadata = slices.Clone(body.n(ml))
			}
			body.tags()
			c.Protocols = append(c.Protocols, p)
		}
		body.tags()
		if body.err != nil {
			r.fail()
			return nil
		}
		out = c
	}
	return out
}

func (r *reader) assignment() PartitionSet {
	a := PartitionSet{}
	n := r.compactLen()
	for range max(n, 0) {
		var t TopicID
		copy(t[:], r.n(16))
		k := r.compactLen()
		if k > len(r.b)/4 {
			r.fail()
			return a
		}
		ps := make([]int32, 0, max(k, 0))
		for range max(k, 0) {
			ps = append(ps, r.i32())
		}
		r.tags()
		if len(ps) > 0 {
			slices.Sort(ps)
			a[t] = slices.Compact(ps)
		}
	}
	return a
}

// parseCGRecord decodes a consumer group record's key and value (nil: a
// tombstone).
func parseCGRecord(key, value []byte) (CGRecord, error) {
	k := reader{b: key}
	rec := CGRecord{Kind: CGRecordKind(k.i16())}
	rec.Group = k.str16()
	switch rec.Kind {
	case CGMemberMetadata, CGTargetMember, CGCurrentAssignment:
		rec.Member = k.str16()
	}
	if k.err != nil {
		return rec, fmt.Errorf("group: consumer group record key: %w", k.err)
	}
	if value == nil {
		rec.Tombstone = true
		return rec, nil
	}
	v := reader{b: value}
	if ver := v.i16(); ver < 0 {
		return rec, fmt.Errorf("group: consumer group record value version %d: %w", ver, errBadRecord)
	}
	switch rec.Kind {
	case CGGroupEpoch, CGTargetEpoch:
		rec.Epoch = v.i32()
	case CGPartitionMetadata:
		rec.Topics = map[string]TopicInfo{}
		n := v.compactLen()
		for range max(n, 0) {
			var t TopicInfo
			copy(t.ID[:], v.n(16))
			t.Name = v.compactStr()
			t.Partitions = v.i32()
			pm := v.compactLen()
			for range max(pm, 0) {
				v.i32()
				racks := v.compactLen()
				for range max(racks, 0) {
					v.compactStr()
				}
				v.tags()
			}
			v.tags()
			rec.Topics[t.Name] = t
		}
	case CGMemberMetadata:
		m := &ConsumerMember{ID: rec.Member}
		m.InstanceID = v.compactNullStr()
		m.RackID = v.compactNullStr()
		m.ClientID = v.compactStr()
		m.ClientHost = v.compactStr()
		n := v.compactLen()
		for range max(n, 0) {
			m.SubscribedTopicNames = append(m.SubscribedTopicNames, v.compactStr())
		}
		sort.Strings(m.SubscribedTopicNames)
		if re := v.compactNullStr(); re != nil {
			m.SubscribedTopicRegex = *re
		}
		m.RebalanceTimeout = time.Duration(v.i32()) * time.Millisecond
		if sa := v.compactNullStr(); sa != nil {
			m.ServerAssignor = *sa
		}
		m.Classic = v.memberTags()
		rec.Metadata = m
		if v.err != nil {
			return rec, fmt.Errorf("group: consumer group record value (type %d): %w", rec.Kind, v.err)
		}
		return rec, nil
	case CGTargetMember:
		rec.Assignment = v.assignment()
	case CGCurrentAssignment:
		rec.Epoch = v.i32()
		rec.PreviousEpoch = v.i32()
		rec.State = MemberState(v.i8())
		rec.Assigned = v.assignment()
		rec.PendingRevocation = v.assignment()
	default:
		return rec, errors.New("group: not a consumer group record")
	}
	v.tags()
	if v.err != nil {
		return rec, fmt.Errorf("group: consumer group record value (type %d): %w", rec.Kind, v.err)
	}
	return rec, nil
}
