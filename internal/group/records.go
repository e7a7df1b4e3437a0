package group

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Record key versions of __consumer_offsets (see doc.go).
const (
	offsetKeyVersion   = 1
	offsetValueVersion = 3
	groupKeyVersion    = 2
	groupValueVersion  = 3
)

var errBadRecord = errors.New("group: malformed __consumer_offsets record")

func offsetKey(group, topic string, partition int32) []byte {
	k := kmsg.OffsetCommitKey{Version: offsetKeyVersion, Group: group, Topic: topic, Partition: partition}
	return k.AppendTo(nil)
}

func offsetValue(c Offset) []byte {
	v := kmsg.NewOffsetCommitValue()
	v.Version = offsetValueVersion
	v.Offset = c.Offset
	v.LeaderEpoch = c.LeaderEpoch
	v.Metadata = c.Metadata
	v.CommitTimestamp = c.CommitTime.UnixMilli()
	return v.AppendTo(nil)
}

func groupKey(group string) []byte {
	k := kmsg.GroupMetadataKey{Version: groupKeyVersion, Group: group}
	return k.AppendTo(nil)
}

// MetadataRecord returns the group metadata record of the current
// generation, as Kafka writes it after a rebalance and when the group
// becomes Empty.
func (g *Group) MetadataRecord() KV {
	v := kmsg.NewGroupMetadataValue()
	v.Version = groupValueVersion
	v.ProtocolType = g.protocolType
	v.Generation = g.generation
	if g.protocol != "" {
		p := g.protocol
		v.Protocol = &p
	}
	if g.leader != "" {
		l := g.leader
		v.Leader = &l
	}
	v.CurrentStateTimestamp = g.stateTime.UnixMilli()
	for _, m := range g.sortedMembers() {
		mv := kmsg.NewGroupMetadataValueMember()
		mv.MemberID = m.id
		mv.InstanceID = m.instanceID
		mv.ClientID = m.clientID
		mv.ClientHost = m.clientHost
		mv.RebalanceTimeoutMillis = int32(m.rebalanceTimeout.Milliseconds())
		mv.SessionTimeoutMillis = int32(m.sessionTimeout.Milliseconds())
		mv.Subscription = m.metadata(g.protocol)
		mv.Assignment = m.assignment
		v.Members = append(v.Members, mv)
	}
	return KV{Key: groupKey(g.id), Value: v.AppendTo(nil)}
}

// OffsetRecord returns the record of a committed offset (a tombstone when
// the group has none for the partition).
func (g *Group) OffsetRecord(topic string, partition int32) KV {
	kv := KV{Key: offsetKey(g.id, topic, partition)}
	if c, ok := g.offsets[topicPartition{topic, partition}]; ok {
		kv.Value = offsetValue(c)
	}
	return kv
}

// recordKind is what a __consumer_offsets key holds.
type recordKind int8

const (
	kindOther recordKind = iota
	kindOffset
	kindGroup
	kindConsumer // a KIP-848 consumer group record (key versions 3-8)
	kindShare    // a KIP-932 share group record (key versions 9-15)
)

// parsedKey is a decoded __consumer_offsets key.
type parsedKey struct {
	kind      recordKind
	group     string
	topic     string
	partition int32
}

func parseKey(b []byte) (parsedKey, error) {
	if len(b) < 2 {
		return parsedKey{}, errBadRecord
	}
	switch ver := int16(binary.BigEndian.Uint16(b)); ver {
	case 0, 1:
		var k kmsg.OffsetCommitKey
		if err := k.ReadFrom(b); err != nil {
			return parsedKey{}, fmt.Errorf("group: offset commit key: %w", err)
		}
		return parsedKey{kind: kindOffset, group: k.Group, topic: k.Topic, partition: k.Partition}, nil
	case 2:
		var k kmsg.GroupMetadataKey
		if err := k.ReadFrom(b); err != nil {
			return parsedKey{}, fmt.Errorf("group: group metadata key: %w", err)
		}
		return parsedKey{kind: kindGroup, group: k.Group}, nil
	default:
		if isConsumerGroupKey(ver) {
			r := newReader(b[2:])
			g := r.Str16()
			if r.Err != nil {
				return parsedKey{}, fmt.Errorf("group: consumer group record key: %w", r.Err)
			}
			return parsedKey{kind: kindConsumer, group: g}, nil
		}
		if isShareGroupKey(ver) {
			r := newReader(b[2:])
			g := r.Str16()
			if r.Err != nil {
				return parsedKey{}, fmt.Errorf("group: share group record key: %w", r.Err)
			}
			return parsedKey{kind: kindShare, group: g}, nil
		}
		return parsedKey{kind: kindOther}, nil
	}
}

// parseOffsetValue decodes an offset commit value whose record is at
// recordOffset.
func parseOffsetValue(b []byte, recordOffset int64) (Offset, error) {
	var v kmsg.OffsetCommitValue
	if err := v.ReadFrom(b); err != nil {
		return Offset{}, fmt.Errorf("group: offset commit value: %w", err)
	}
	c := Offset{Offset: v.Offset, LeaderEpoch: -1, Metadata: v.Metadata, CommitTime: time.UnixMilli(v.CommitTimestamp), RecordOffset: recordOffset}
	if v.Version >= 3 {
		c.LeaderEpoch = v.LeaderEpoch
	}
	return c, nil
}

func parseGroupValue(b []byte) (kmsg.GroupMetadataValue, error) {
	var v kmsg.GroupMetadataValue
	if err := v.ReadFrom(b); err != nil {
		return v, fmt.Errorf("group: group metadata value: %w", err)
	}
	return v, nil
}

// restore loads a group metadata record: a group with members comes back
// Stable (their sessions start at now), one without members Empty.
func (g *Group) restore(v kmsg.GroupMetadataValue, now time.Time) {
	g.protocolType = v.ProtocolType
	g.generation = v.Generation
	g.protocol = ""
	if v.Protocol != nil {
		g.protocol = *v.Protocol
	}
	g.leader = ""
	if v.Leader != nil {
		g.leader = *v.Leader
	}
	g.members = map[string]*member{}
	g.instances = map[string]string{}
	for _, mv := range v.Members {
		g.seq++
		m := &member{
			id:               mv.MemberID,
			instanceID:       mv.InstanceID,
			clientID:         mv.ClientID,
			clientHost:       mv.ClientHost,
			protocolType:     v.ProtocolType,
			protocols:        []Protocol{{Name: g.protocol, Metadata: mv.Subscription}},
			sessionTimeout:   time.Duration(mv.SessionTimeoutMillis) * time.Millisecond,
			rebalanceTimeout: time.Duration(mv.RebalanceTimeoutMillis) * time.Millisecond,
			assignment:       mv.Assignment,
			seq:              g.seq,
		}
		if m.rebalanceTimeout < 0 {
			m.rebalanceTimeout = m.sessionTimeout
		}
		m.deadline = now.Add(m.sessionTimeout)
		g.members[m.id] = m
		if m.instanceID != nil {
			g.instances[*m.instanceID] = m.id
		}
	}
	stateTime := now
	if v.Version >= 2 && v.CurrentStateTimestamp > 0 {
		stateTime = time.UnixMilli(v.CurrentStateTimestamp)
	}
	if len(g.members) == 0 {
		g.transition(stateTime, Empty)
	} else {
		g.transition(stateTime, Stable)
	}
	g.subscribed = g.computeSubscribed()
}
