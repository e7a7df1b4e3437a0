package txn

import (
	"errors"
	"reflect"
	"testing"

	"samsa/internal/record"
	"samsa/internal/vfs"
)

// buildBatch returns an idempotent producer's batch of n records.
func buildBatch(t *testing.T, pid int64, epoch int16, seq int32, n int, ts int64) record.Batch {
	t.Helper()
	bb := &record.Builder{Codec: record.CodecNone, BaseTimestamp: ts, ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq}
	for range n {
		bb.Add(record.Record{Value: []byte("v")})
	}
	rb, err := bb.Build()
	if err != nil {
		t.Fatal(err)
	}
	return rb
}

func TestBatchOfReadsProducerFields(t *testing.T) {
	rb := buildBatch(t, 0x1122334455, 513, 2147483646, 4, 10)
	got := BatchOf(rb)
	want := Batch{ProducerID: 0x1122334455, Epoch: 513, BaseSequence: 2147483646, LastOffsetDelta: 3}
	if got != want {
		t.Fatalf("BatchOf = %+v, want %+v", got, want)
	}
	if got.LastSeq() != 1 {
		t.Fatalf("LastSeq = %d, want 1", got.LastSeq())
	}
}

// partitionLog is a minimal append path: Check, append, Update, as the
// partition does under its append lock.
type partitionLog struct {
	batches []record.Batch
	leo     int64
	state   *State
}

// produce returns the batch's base offset (the original one for a
// duplicate) or the refusal.
func (l *partitionLog) produce(rb record.Batch, nowMs int64) (int64, error) {
	b := BatchOf(rb)
	dup, err := l.state.Check(b)
	if err != nil {
		return -1, err
	}
	if dup != nil {
		return dup.FirstOffset, nil
	}
	rb.SetBaseOffset(l.leo)
	l.batches = append(l.batches, rb)
	l.leo = rb.LastOffset() + 1
	l.state.Update(b, rb.BaseOffset(), rb.LastOffset(), rb.MaxTimestamp(), nowMs)
	return rb.BaseOffset(), nil
}

// TestRecoveryFromSnapshotAndReplayKeepsDeduplicating appends through a
// snapshot, "restarts" by loading the snapshot and replaying the log past
// it, and checks that the recovered state equals the live one and still
// answers retries with their original offsets.
func TestRecoveryFromSnapshotAndReplayKeepsDeduplicating(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		l := &partitionLog{state: NewState()}
		var offsets []int64
		seq := int32(0)
		for i := range 12 {
			now := int64(1000 + i)
			rb := buildBatch(t, 9, 0, seq, 3, now)
			off, err := l.produce(rb, now)
			if err != nil {
				t.Fatalf("batch %d: %v", i, err)
			}
			offsets = append(offsets, off)
			// A second producer interleaves with the first.
			if _, err := l.produce(buildBatch(t, 4, 2, int32(i), 1, now), now); err != nil {
				t.Fatalf("producer 4 batch %d: %v", i, err)
			}
			seq += 3
			if i == 5 {
				if err := WriteSnapshot(fs, dir, l.leo, l.state); err != nil {
					t.Fatal(err)
				}
			}
		}

		s, snapOff, ok, err := LoadSnapshot(fs, dir, l.leo)
		if err != nil || !ok {
			t.Fatalf("LoadSnapshot = ok %v, err %v", ok, err)
		}
		replayed := 0
		for _, rb := range l.batches {
			if rb.BaseOffset() < snapOff {
				continue
			}
			s.Replay(BatchOf(rb), rb.BaseOffset(), rb.LastOffset(), rb.MaxTimestamp(), rb.MaxTimestamp())
			replayed++
		}
		if replayed != 12 {
			t.Fatalf("replayed %d batches past offset %d, want 12", replayed, snapOff)
		}
		if !reflect.DeepEqual(s.Producers(), l.state.Producers()) {
			t.Fatalf("recovered state differs:\n got %+v\nwant %+v", s.Producers(), l.state.Producers())
		}

		l.state = s
		leo := l.leo
		for i := 12 - WindowSize; i < 12; i++ {
			off, err := l.produce(buildBatch(t, 9, 0, int32(3*i), 3, 1), 5000)
			if err != nil || off != offsets[i] {
				t.Fatalf("retry of batch %d = offset %d, err %v; want %d", i, off, err, offsets[i])
			}
		}
		if l.leo != leo {
			t.Fatalf("retries appended: log end %d, want %d", l.leo, leo)
		}
		if _, err := l.produce(buildBatch(t, 9, 0, int32(3*(11-WindowSize)), 3, 1), 5000); !errors.Is(err, ErrOutOfOrderSequence) {
			t.Fatalf("retry older than the window: err %v, want ErrOutOfOrderSequence", err)
		}
		if off, err := l.produce(buildBatch(t, 9, 0, seq, 2, 1), 5000); err != nil || off != leo {
			t.Fatalf("next batch = offset %d, err %v; want %d", off, err, leo)
		}
	})
}
