package share

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// ErrFencedLeaderEpoch: a write or read of a share-partition's state from
// a leader older than the one the state last heard from.
var ErrFencedLeaderEpoch = errors.New("share: fenced leader epoch")

// ErrFencedStateEpoch: a write of a share-partition's state made from a
// state older than the one the share coordinator holds: the start offset
// was altered (AlterShareGroupOffsets) or the state deleted since the
// writer read it (FENCED_STATE_EPOCH).
var ErrFencedStateEpoch = errors.New("share: fenced state epoch")

// errBadRecord: a __share_group_state record that does not decode.
var errBadRecord = errors.New("share: bad __share_group_state record")

// StateKey names one share-partition's state in __share_group_state.
type StateKey struct {
	Group     string
	TopicID   [16]byte
	Partition int32
}

// CoordinatorKey is the string the share coordinator of k is found by:
// "group:topicId:partition", as Kafka forms it (SharePartitionKey).
func (k StateKey) CoordinatorKey() string {
	return fmt.Sprintf("%s:%x:%d", k.Group, k.TopicID, k.Partition)
}

// Snapshot is a share-partition's whole state as the share coordinator
// keeps it: the fields of Kafka's ShareSnapshot record.
type Snapshot struct {
	SnapshotEpoch int32
	StateEpoch    int32
	LeaderEpoch   int32
	State
}

// Records of __share_group_state. Every write stores the whole state of
// one share-partition (Kafka's ShareSnapshot; samsa writes no
// ShareUpdate deltas), so compaction keeps the last record per key and a
// reload reads one record per share-partition. All big endian:
//
//	key (type 0, ShareSnapshot)
//	+-------+-------+----------+-----------+
//	| int16 | str16 | uuid     | int32     |
//	| 0     | group | topic id | partition |
//	+-------+-------+----------+-----------+
//
//	value (version 0)
//	+-------+----------+-------+--------+--------+-------+---------------------------------------+
//	| int16 | int32    | int32 | int32  | int64  | int32 | n x (int64 first, int64 last,         |
//	| 0     | snapshot | state | leader | start  | n     |      int8 delivery state, int16 count) |
//	|       | epoch    | epoch | epoch  | offset |       |                                       |
//	+-------+----------+-------+--------+--------+-------+---------------------------------------+
//
//	value (version 1: deleted)
//	+-------+-------------+
//	| int16 | int32       |
//	| 1     | next state  |
//	|       | epoch       |
//	+-------+-------------+
//
// DeleteShareGroupState writes a version 1 value, not a tombstone: the
// share-partition has no state, but a state made later starts at the
// state epoch it names, so a partition leader that read the state before
// the delete stays fenced (FENCED_STATE_EPOCH) after the share
// coordinator moves. Kafka writes a tombstone and relies on its group
// coordinator initializing share-partitions before they are written; samsa's
// leaders make a share-partition's first state themselves, so the fence
// must outlive the state. The record stays until the share-partition has
// state again (one small record per deleted share-partition). A nil
// value (a tombstone) is still read as a delete.

// EncodeKey returns the record key of k.
func EncodeKey(k StateKey) []byte {
	b := make([]byte, 0, 2+2+len(k.Group)+16+4)
	b = binary.BigEndian.AppendUint16(b, 0)
	b = binary.BigEndian.AppendUint16(b, uint16(len(k.Group)))
	b = append(b, k.Group...)
	b = append(b, k.TopicID[:]...)
	return binary.BigEndian.AppendUint32(b, uint32(k.Partition))
}

// DecodeKey decodes a record key; ok is false for a key of another type.
func DecodeKey(b []byte) (k StateKey, ok bool, err error) {
	if len(b) < 4 {
		return k, false, errBadRecord
	}
	if binary.BigEndian.Uint16(b) != 0 {
		return k, false, nil
	}
	n := int(binary.BigEndian.Uint16(b[2:]))
	if len(b) != 4+n+16+4 {
		return k, false, errBadRecord
	}
	k.Group = string(b[4 : 4+n])
	copy(k.TopicID[:], b[4+n:])
	k.Partition = int32(binary.BigEndian.Uint32(b[4+n+16:]))
	return k, true, nil
}

// EncodeValue returns the record value of s.
func EncodeValue(s Snapshot) []byte {
	b := make([]byte, 0, 30+len(s.Batches)*19)
	b = binary.BigEndian.AppendUint16(b, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(s.SnapshotEpoch))
	b = binary.BigEndian.AppendUint32(b, uint32(s.StateEpoch))
	b = binary.BigEndian.AppendUint32(b, uint32(s.LeaderEpoch))
	b = binary.BigEndian.AppendUint64(b, uint64(s.StartOffset))
	b = binary.BigEndian.AppendUint32(b, uint32(len(s.Batches)))
	for _, x := range s.Batches {
		b = binary.BigEndian.AppendUint64(b, uint64(x.First))
		b = binary.BigEndian.AppendUint64(b, uint64(x.Last))
		b = append(b, byte(x.State))
		b = binary.BigEndian.AppendUint16(b, uint16(x.DeliveryCount))
	}
	return b
}

// encodeDeleted returns the value of a deleted share-partition's record
// whose next state starts at stateEpoch.
func encodeDeleted(stateEpoch int32) []byte {
	b := binary.BigEndian.AppendUint16(make([]byte, 0, 6), 1)
	return binary.BigEndian.AppendUint32(b, uint32(stateEpoch))
}

// decodeDeleted decodes a version 1 value: ok is false for another
// version.
func decodeDeleted(b []byte) (stateEpoch int32, ok bool, err error) {
	if len(b) < 2 || binary.BigEndian.Uint16(b) != 1 {
		return 0, false, nil
	}
	if len(b) != 6 {
		return 0, true, errBadRecord
	}
	return int32(binary.BigEndian.Uint32(b[2:])), true, nil
}

// DecodeValue decodes a record value.
func DecodeValue(b []byte) (Snapshot, error) {
	var s Snapshot
	if len(b) < 26 || binary.BigEndian.Uint16(b) != 0 {
		return s, errBadRecord
	}
	s.SnapshotEpoch = int32(binary.BigEndian.Uint32(b[2:]))
	s.StateEpoch = int32(binary.BigEndian.Uint32(b[6:]))
	s.LeaderEpoch = int32(binary.BigEndian.Uint32(b[10:]))
	s.StartOffset = int64(binary.BigEndian.Uint64(b[14:]))
	n := binary.BigEndian.Uint32(b[22:])
	rest := b[26:]
	if n > math.MaxInt32 || uint64(len(rest)) != uint64(n)*19 {
		return s, errBadRecord
	}
	s.Batches = make([]StateBatch, n)
	for i := range s.Batches {
		x := rest[i*19:]
		s.Batches[i] = StateBatch{
			First:         int64(binary.BigEndian.Uint64(x)),
			Last:          int64(binary.BigEndian.Uint64(x[8:])),
			State:         RecordState(x[16]),
			DeliveryCount: int16(binary.BigEndian.Uint16(x[17:])),
		}
	}
	return s, nil
}

// States is the share coordinator's state of one __share_group_state
// partition: the last snapshot of every share-partition it maps. Not safe
// for concurrent use.
type States struct {
	m map[StateKey]Snapshot
	// gone is the state epoch a deleted share-partition's state would
	// have next: a writer that read the state before the delete is
	// fenced by it. Persisted by the delete's record (DeleteRecord).
	gone map[StateKey]int32
}

// NewStates returns an empty set.
func NewStates() *States { return &States{m: map[StateKey]Snapshot{}, gone: map[StateKey]int32{}} }

// Replay applies one record of the partition, in log order (loading).
func (s *States) Replay(key, value []byte) error {
	k, ok, err := DecodeKey(key)
	if err != nil || !ok {
		return err
	}
	if value == nil {
		s.Delete(k)
		return nil
	}
	if epoch, ok, err := decodeDeleted(value); ok {
		if err != nil {
			return err
		}
		delete(s.m, k)
		s.gone[k] = epoch
		return nil
	}
	v, err := DecodeValue(value)
	if err != nil {
		return err
	}
	s.m[k] = v
	return nil
}

// Get returns the state of k.
func (s *States) Get(k StateKey) (Snapshot, bool) {
	v, ok := s.m[k]
	return v, ok
}

// CheckLeader returns ErrFencedLeaderEpoch if leaderEpoch (-1: not
// checked) is older than the one k's state last heard from.
func (s *States) CheckLeader(k StateKey, leaderEpoch int32) error {
	if v, ok := s.m[k]; ok && leaderEpoch >= 0 && leaderEpoch < v.LeaderEpoch {
		return fmt.Errorf("%w: %d < %d", ErrFencedLeaderEpoch, leaderEpoch, v.LeaderEpoch)
	}
	return nil
}

// StateEpoch returns the state epoch of k: that of its state, or, once
// deleted, the one its next state starts with (0 if never written).
func (s *States) StateEpoch(k StateKey) int32 {
	if v, ok := s.m[k]; ok {
		return v.StateEpoch
	}
	return s.gone[k]
}

// CheckStateEpoch returns ErrFencedStateEpoch if stateEpoch (-1: not
// checked) is older than k's state epoch: the writer's view predates an
// initialization or a delete.
func (s *States) CheckStateEpoch(k StateKey, stateEpoch int32) error {
	if cur := s.StateEpoch(k); stateEpoch >= 0 && stateEpoch < cur {
		return fmt.Errorf("%w: %d < %d", ErrFencedStateEpoch, stateEpoch, cur)
	}
	return nil
}

// Initialize returns the snapshot that starts k over at start with
// nothing in flight (InitializeShareGroupState, AlterShareGroupOffsets):
// its state epoch is stateEpoch or one past the current one (0 when k
// never had state), whichever is greater, so every writer that read the state before is fenced. The
// leader epoch is kept, so older leaders stay fenced too. The caller
// appends it, then Puts it once durable.
func (s *States) Initialize(k StateKey, stateEpoch int32, start int64) Snapshot {
	v := s.m[k]
	v.SnapshotEpoch++
	// NB: always past the current epoch, 0 included: a leader that
	// read no state holds epoch 0 and may not overwrite this one.
	v.StateEpoch = max(stateEpoch, s.StateEpoch(k)+1)
	v.State = State{StartOffset: start}
	return v
}

// Next returns the snapshot a write of st by leaderEpoch makes (the caller
// appends it, then Puts it once durable).
func (s *States) Next(k StateKey, leaderEpoch int32, st State) Snapshot {
	v, ok := s.m[k]
	if !ok {
		v.StateEpoch = s.gone[k]
	}
	v.SnapshotEpoch++
	if leaderEpoch > v.LeaderEpoch {
		v.LeaderEpoch = leaderEpoch
	}
	v.State = st
	return v
}

// Put stores a snapshot that is durable in the log.
func (s *States) Put(k StateKey, v Snapshot) {
	s.m[k] = v
	delete(s.gone, k)
}

// DeleteRecord returns the record value that deletes k's state (the
// caller appends it, then calls Delete once durable); ok is false when k
// has no state to delete.
func (s *States) DeleteRecord(k StateKey) (value []byte, ok bool) {
	v, ok := s.m[k]
	if !ok {
		return nil, false
	}
	return encodeDeleted(v.StateEpoch + 1), true
}

// Delete removes k's state; a later state of k starts at the next state
// epoch.
func (s *States) Delete(k StateKey) {
	if v, ok := s.m[k]; ok {
		s.gone[k] = v.StateEpoch + 1
	}
	delete(s.m, k)
}

// Keys returns every share-partition of group with state here.
func (s *States) Keys(group string) []StateKey {
	var out []StateKey
	for k := range s.m {
		if k.Group == group {
			out = append(out, k)
		}
	}
	return out
}
