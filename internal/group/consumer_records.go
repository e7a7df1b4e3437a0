package group

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"samsa/internal/coordrec"
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
	key = coordrec.AppendStr16(key, r.Group)
	switch r.Kind {
	case CGMemberMetadata, CGTargetMember, CGCurrentAssignment:
		key = coordrec.AppendStr16(key, r.Member)
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
			v = coordrec.AppendCompactStr(v, n)
			v = binary.BigEndian.AppendUint32(v, uint32(t.Partitions))
			v = binary.AppendUvarint(v, 1) // PartitionMetadata: empty (unused since Kafka 4.0)
			v = append(v, 0)               // tags
		}
	case CGMemberMetadata:
		m := r.Metadata
		v = coordrec.AppendCompactNullStr(v, m.InstanceID)
		v = coordrec.AppendCompactNullStr(v, m.RackID)
		v = coordrec.AppendCompactStr(v, m.ClientID)
		v = coordrec.AppendCompactStr(v, m.ClientHost)
		v = binary.AppendUvarint(v, uint64(len(m.SubscribedTopicNames)+1))
		for _, n := range m.SubscribedTopicNames {
			v = coordrec.AppendCompactStr(v, n)
		}
		var re *string
		if m.SubscribedTopicRegex != "" {
			re = &m.SubscribedTopicRegex
		}
		v = coordrec.AppendCompactNullStr(v, re)
		rt := int32(-1)
		if m.RebalanceTimeout >= 0 {
			rt = int32(m.RebalanceTimeout.Milliseconds())
		}
		v = binary.BigEndian.AppendUint32(v, uint32(rt))
		var sa *string
		if m.ServerAssignor != "" {
			sa = &m.ServerAssignor
		}
		v = coordrec.AppendCompactNullStr(v, sa)
		if m.Classic != nil {
			// Tagged field 0, ClassicMemberMetadata: a nullable struct,
			// so a presence byte before it.
			st := binary.BigEndian.AppendUint32(nil, uint32(int32(m.Classic.SessionTimeout.Milliseconds())))
			st = binary.AppendUvarint(st, uint64(len(m.Classic.Protocols)+1))
			for _, p := range m.Classic.Protocols {
				st = coordrec.AppendCompactStr(st, p.Name)
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
type reader struct{ coordrec.Reader }

func newReader(b []byte) *reader { return &reader{coordrec.Reader{B: b, Bad: errBadRecord}} }

// memberTags reads the tag buffer of a member metadata value: tag 0 is
// the classic member metadata, others are skipped.
func (r *reader) memberTags() *ClassicMemberMetadata {
	var out *ClassicMemberMetadata
	n := r.Uvarint()
	for range n {
		tag := r.Uvarint()
		l := r.Uvarint()
		if r.Err != nil || l > uint64(len(r.B)) {
			r.Fail()
			return nil
		}
		body := newReader(r.N(int(l)))
		if tag != 0 {
			continue
		}
		if body.Uvarint() == 0 {
			continue // null
		}
		c := &ClassicMemberMetadata{SessionTimeout: time.Duration(body.I32()) * time.Millisecond}
		k := body.CompactLen()
		if k > len(body.B)/2 {
			body.Fail()
		}
		for range max(k, 0) {
			p := Protocol{Name: body.CompactStr()}
			ml := body.CompactLen()
			if ml >= 0 {
				p.Metadata = slices.Clone(body.N(ml))
			}
			body.Tags()
			c.Protocols = append(c.Protocols, p)
		}
		body.Tags()
		if body.Err != nil {
			r.Fail()
			return nil
		}
		out = c
	}
	return out
}

func (r *reader) assignment() PartitionSet {
	a := PartitionSet{}
	n := r.CompactLen()
	for range max(n, 0) {
		var t TopicID
		copy(t[:], r.N(16))
		k := r.CompactLen()
		if k > len(r.B)/4 {
			r.Fail()
			return a
		}
		ps := make([]int32, 0, max(k, 0))
		for range max(k, 0) {
			ps = append(ps, r.I32())
		}
		r.Tags()
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
	k := newReader(key)
	rec := CGRecord{Kind: CGRecordKind(k.I16())}
	rec.Group = k.Str16()
	switch rec.Kind {
	case CGMemberMetadata, CGTargetMember, CGCurrentAssignment:
		rec.Member = k.Str16()
	}
	if k.Err != nil {
		return rec, fmt.Errorf("group: consumer group record key: %w", k.Err)
	}
	if value == nil {
		rec.Tombstone = true
		return rec, nil
	}
	v := newReader(value)
	if ver := v.I16(); ver < 0 {
		return rec, fmt.Errorf("group: consumer group record value version %d: %w", ver, errBadRecord)
	}
	switch rec.Kind {
	case CGGroupEpoch, CGTargetEpoch:
		rec.Epoch = v.I32()
	case CGPartitionMetadata:
		rec.Topics = map[string]TopicInfo{}
		n := v.CompactLen()
		for range max(n, 0) {
			var t TopicInfo
			copy(t.ID[:], v.N(16))
			t.Name = v.CompactStr()
			t.Partitions = v.I32()
			pm := v.CompactLen()
			for range max(pm, 0) {
				v.I32()
				racks := v.CompactLen()
				for range max(racks, 0) {
					v.CompactStr()
				}
				v.Tags()
			}
			v.Tags()
			rec.Topics[t.Name] = t
		}
	case CGMemberMetadata:
		m := &ConsumerMember{ID: rec.Member}
		m.InstanceID = v.CompactNullStr()
		m.RackID = v.CompactNullStr()
		m.ClientID = v.CompactStr()
		m.ClientHost = v.CompactStr()
		n := v.CompactLen()
		for range max(n, 0) {
			m.SubscribedTopicNames = append(m.SubscribedTopicNames, v.CompactStr())
		}
		sort.Strings(m.SubscribedTopicNames)
		if re := v.CompactNullStr(); re != nil {
			m.SubscribedTopicRegex = *re
		}
		m.RebalanceTimeout = time.Duration(v.I32()) * time.Millisecond
		if sa := v.CompactNullStr(); sa != nil {
			m.ServerAssignor = *sa
		}
		m.Classic = v.memberTags()
		rec.Metadata = m
		if v.Err != nil {
			return rec, fmt.Errorf("group: consumer group record value (type %d): %w", rec.Kind, v.Err)
		}
		return rec, nil
	case CGTargetMember:
		rec.Assignment = v.assignment()
	case CGCurrentAssignment:
		rec.Epoch = v.I32()
		rec.PreviousEpoch = v.I32()
		rec.State = MemberState(v.I8())
		rec.Assigned = v.assignment()
		rec.PendingRevocation = v.assignment()
	default:
		return rec, errors.New("group: not a consumer group record")
	}
	v.Tags()
	if v.Err != nil {
		return rec, fmt.Errorf("group: consumer group record value (type %d): %w", rec.Kind, v.Err)
	}
	return rec, nil
}
