package share

import (
	"errors"
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

// TestInitializeAndDeleteFenceWritersOfTheOlderState: a writer that read a
// share-partition's state before it was initialized again (altered) or
// deleted carries an older state epoch and is fenced; one that read it
// afterwards is not. Reference: KIP-932, "Share group state epoch".
func TestInitializeAndDeleteFenceWritersOfTheOlderState(t *testing.T) {
	k := StateKey{Group: "g", TopicID: [16]byte{9}, Partition: 0}
	s := NewStates()
	// A leader that found no state holds epoch 0 and writes.
	if err := s.CheckStateEpoch(k, 0); err != nil {
		t.Fatal(err)
	}
	s.Put(k, s.Next(k, 1, State{StartOffset: 5}))
	if got := s.StateEpoch(k); got != 0 {
		t.Fatalf("state epoch after a write %d, want 0", got)
	}
	// AlterShareGroupOffsets: start over at 2, next epoch.
	v := s.Initialize(k, -1, 2)
	s.Put(k, v)
	if v.StateEpoch != 1 || v.StartOffset != 2 || len(v.Batches) != 0 || v.LeaderEpoch != 1 {
		t.Fatalf("initialized %+v", v)
	}
	if err := s.CheckStateEpoch(k, 0); !errors.Is(err, ErrFencedStateEpoch) {
		t.Fatalf("a writer of epoch 0 after the alter: %v", err)
	}
	if err := s.CheckStateEpoch(k, 1); err != nil {
		t.Fatal(err)
	}
	// A write keeps the state epoch.
	s.Put(k, s.Next(k, 1, State{StartOffset: 3}))
	if got := s.StateEpoch(k); got != 1 {
		t.Fatalf("state epoch %d after a write, want 1", got)
	}
	// Deleted: gone, but writers of epoch 1 are fenced; a new state
	// starts at epoch 2.
	s.Delete(k)
	if _, ok := s.Get(k); ok {
		t.Fatal("deleted state still there")
	}
	if err := s.CheckStateEpoch(k, 1); !errors.Is(err, ErrFencedStateEpoch) {
		t.Fatalf("a writer of epoch 1 after the delete: %v", err)
	}
	s.Put(k, s.Next(k, 1, State{StartOffset: 0}))
	if got := s.StateEpoch(k); got != 2 {
		t.Fatalf("state epoch of a state written after the delete %d, want 2", got)
	}
	// An initialization of a share-partition that never had state
	// still moves past epoch 0.
	k2 := StateKey{Group: "g", TopicID: [16]byte{9}, Partition: 1}
	if v := s.Initialize(k2, -1, 7); v.StateEpoch != 1 {
		t.Fatalf("first initialization at state epoch %d, want 1", v.StateEpoch)
	}
}

// TestDeleteRecordKeepsTheFenceAcrossAReplay: the record a delete writes
// makes a share coordinator that replays the log fence the writers of
// the deleted state, and start the next state at the next state epoch.
func TestDeleteRecordKeepsTheFenceAcrossAReplay(t *testing.T) {
	k := StateKey{Group: "g", TopicID: [16]byte{7}, Partition: 2}
	s := NewStates()
	if _, ok := s.DeleteRecord(k); ok {
		t.Fatal("a delete record for a share-partition without state")
	}
	v := s.Initialize(k, -1, 4) // state epoch 1
	s.Put(k, v)
	del, ok := s.DeleteRecord(k)
	if !ok {
		t.Fatal("no delete record")
	}
	s.Delete(k)
	// Another coordinator replays the snapshot and then the delete.
	r := NewStates()
	for _, val := range [][]byte{EncodeValue(v), del} {
		if err := r.Replay(EncodeKey(k), val); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := r.Get(k); ok {
		t.Fatal("the replayed delete kept the state")
	}
	if err := r.CheckStateEpoch(k, 1); !errors.Is(err, ErrFencedStateEpoch) {
		t.Fatalf("a writer of epoch 1 after the replayed delete: %v", err)
	}
	if got := r.Next(k, 0, State{StartOffset: 0}).StateEpoch; got != 2 {
		t.Fatalf("a state after the replayed delete starts at epoch %d, want 2", got)
	}
	if err := r.Replay(EncodeKey(k), del[:4]); err == nil {
		t.Fatal("a short delete record replayed")
	}
}
