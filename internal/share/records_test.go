package share

import (
	"reflect"
	"testing"
)

func TestStateRecordsRoundTripAndReplayKeepsLast(t *testing.T) {
	k := StateKey{Group: "g", TopicID: [16]byte{1, 2}, Partition: 3}
	got, ok, err := DecodeKey(EncodeKey(k))
	if err != nil || !ok || got != k {
		t.Fatalf("key %+v %v %v", got, ok, err)
	}
	v := Snapshot{SnapshotEpoch: 2, StateEpoch: 1, LeaderEpoch: 7, State: State{StartOffset: 10, Batches: []StateBatch{{10, 12, Available, 3}, {13, 13, Acknowledged, 1}}}}
	dv, err := DecodeValue(EncodeValue(v))
	if err != nil || !reflect.DeepEqual(dv, v) {
		t.Fatalf("value %+v %v", dv, err)
	}
	if _, err := DecodeValue(EncodeValue(v)[:30]); err == nil {
		t.Fatal("a short value decoded")
	}
	s := NewStates()
	v2 := v
	v2.StartOffset = 14
	v2.Batches = nil
	for _, val := range [][]byte{EncodeValue(v), EncodeValue(v2)} {
		if err := s.Replay(EncodeKey(k), val); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := s.Get(k); got.StartOffset != 14 {
		t.Fatalf("replayed %+v", got)
	}
	if err := s.CheckLeader(k, 6); err == nil {
		t.Fatal("an older leader epoch was not fenced")
	}
	if err := s.Replay(EncodeKey(k), nil); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Get(k); ok {
		t.Fatal("tombstone kept the state")
	}
}
