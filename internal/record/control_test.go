package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Reference: Kafka ControlRecordType (key: version int16, type int16;
// ABORT 0, COMMIT 1) and EndTransactionMarker (value: version int16,
// coordinatorEpoch int32).
func TestEndTxnMarkerKeyAndValueBytes(t *testing.T) {
	tests := []struct {
		name      string
		m         EndTxnMarker
		key, vale []byte
	}{
		{"abort", EndTxnMarker{ControlAbort, 0}, []byte{0, 0, 0, 0}, []byte{0, 0, 0, 0, 0, 0}},
		{"commit", EndTxnMarker{ControlCommit, 7}, []byte{0, 0, 0, 1}, []byte{0, 0, 0, 0, 0, 7}},
		{"commit epoch max", EndTxnMarker{ControlCommit, 1<<31 - 1}, []byte{0, 0, 0, 1}, []byte{0, 0, 0x7f, 0xff, 0xff, 0xff}},
		{"abort epoch -1", EndTxnMarker{ControlAbort, -1}, []byte{0, 0, 0, 0}, []byte{0, 0, 0xff, 0xff, 0xff, 0xff}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.m.AppendKey(nil); !bytes.Equal(got, tt.key) {
				t.Fatalf("key %x, want %x", got, tt.key)
			}
			if got := tt.m.AppendValue(nil); !bytes.Equal(got, tt.vale) {
				t.Fatalf("value %x, want %x", got, tt.vale)
			}
			got, err := ParseEndTxnMarker(tt.key, tt.vale)
			if err != nil || got != tt.m {
				t.Fatalf("ParseEndTxnMarker = %+v, %v; want %+v", got, err, tt.m)
			}
		})
	}
}

func TestParseEndTxnMarker(t *testing.T) {
	commitKey := []byte{0, 0, 0, 1}
	value := []byte{0, 0, 0, 0, 0, 9}
	tests := []struct {
		name       string
		key, value []byte
		want       EndTxnMarker
		wantErr    error
	}{
		{"commit", commitKey, value, EndTxnMarker{ControlCommit, 9}, nil},
		{"abort", []byte{0, 0, 0, 0}, value, EndTxnMarker{ControlAbort, 9}, nil},
		// A newer writer's versions and trailing fields still read.
		{"key version 1", []byte{0, 1, 0, 1}, value, EndTxnMarker{ControlCommit, 9}, nil},
		{"key trailing bytes", []byte{0, 0, 0, 1, 0xaa}, value, EndTxnMarker{ControlCommit, 9}, nil},
		{"value version 3 trailing", commitKey, []byte{0, 3, 0, 0, 0, 9, 1, 2}, EndTxnMarker{ControlCommit, 9}, nil},
		{"null key", nil, value, EndTxnMarker{}, ErrBadControlKey},
		{"empty key", []byte{}, value, EndTxnMarker{}, ErrBadControlKey},
		{"short key", []byte{0, 0, 0}, value, EndTxnMarker{}, ErrBadControlKey},
		{"negative key version", []byte{0xff, 0xff, 0, 1}, value, EndTxnMarker{}, ErrBadControlKey},
		{"leader change type", []byte{0, 0, 0, 2}, value, EndTxnMarker{}, ErrNotEndTxnMarker},
		{"negative type", []byte{0, 0, 0xff, 0xff}, value, EndTxnMarker{}, ErrNotEndTxnMarker},
		{"null value", commitKey, nil, EndTxnMarker{}, ErrBadEndTxnMarker},
		{"short value", commitKey, []byte{0, 0, 0, 0, 9}, EndTxnMarker{}, ErrBadEndTxnMarker},
		{"negative value version", commitKey, []byte{0x80, 0, 0, 0, 0, 9}, EndTxnMarker{}, ErrBadEndTxnMarker},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseEndTxnMarker(tt.key, tt.value)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Fatalf("error %v, want %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func mustMarker(t testing.TB, pid int64, epoch int16, ts int64, m EndTxnMarker) Batch {
	t.Helper()
	b, err := BuildEndTxnMarker(pid, epoch, ts, m)
	if err != nil {
		t.Fatalf("BuildEndTxnMarker: %v", err)
	}
	return b
}

func TestBuildEndTxnMarkerWritesKafkaControlBatch(t *testing.T) {
	for _, m := range []EndTxnMarker{{ControlAbort, 3}, {ControlCommit, 0}} {
		t.Run(m.Type.String(), func(t *testing.T) {
			b := mustMarker(t, 4242, 5, 1_700_000_000_000, m)
			if !b.Control() || !b.Transactional() || b.Codec() != CodecNone {
				t.Fatalf("attributes %#x", b.Attributes())
			}
			if b.ProducerID() != 4242 || b.ProducerEpoch() != 5 || b.BaseSequence() != -1 {
				t.Fatalf("producer fields %d/%d/%d", b.ProducerID(), b.ProducerEpoch(), b.BaseSequence())
			}
			if b.NumRecords() != 1 || b.LastOffsetDelta() != 0 || b.BaseOffset() != 0 || b.LeaderEpoch() != -1 {
				t.Fatalf("count %d last %d base %d epoch %d", b.NumRecords(), b.LastOffsetDelta(), b.BaseOffset(), b.LeaderEpoch())
			}
			if b.BaseTimestamp() != 1_700_000_000_000 || b.MaxTimestamp() != 1_700_000_000_000 {
				t.Fatalf("timestamps %d %d", b.BaseTimestamp(), b.MaxTimestamp())
			}
			got, err := b.EndTxnMarker(0)
			if err != nil || got != m {
				t.Fatalf("EndTxnMarker = %+v, %v; want %+v", got, err, m)
			}
		})
	}
}

func TestBuildEndTxnMarkerRefusesOtherTypes(t *testing.T) {
	if _, err := BuildEndTxnMarker(1, 0, 0, EndTxnMarker{Type: 2}); !errors.Is(err, ErrNotEndTxnMarker) {
		t.Fatalf("error %v, want ErrNotEndTxnMarker", err)
	}
}

// Reference: Kafka LogValidator refuses control batches from clients and
// accepts them from the coordinator and from replication.
func TestValidateAcceptsControlBatchExceptFromClient(t *testing.T) {
	b := mustMarker(t, 7, 1, 100, EndTxnMarker{ControlCommit, 2})
	// As appended: offset and leader epoch patched outside the CRC.
	b.SetBaseOffset(12345)
	b.SetLeaderEpoch(9)
	for _, opts := range []ValidateOptions{{}, {AllowCompacted: true}} {
		info, err := b.Validate(opts)
		if err != nil || info.NumRecords != 1 || info.MaxTimestamp != 100 {
			t.Fatalf("Validate(%+v) = %+v, %v", opts, info, err)
		}
	}
	b.SetBaseOffset(0)
	_, err := b.Validate(ValidateOptions{FromClient: true})
	checkErr(t, err, wantInvalid)
}

func TestEndTxnMarkerOfBatch(t *testing.T) {
	good := mustMarker(t, 7, 1, 100, EndTxnMarker{ControlAbort, 2})
	data := mustBuild(t, NewBuilder(CodecNone, 0), []Record{{Value: []byte("x")}})
	two := &Builder{Control: true, Transactional: true, ProducerID: 7, BaseSequence: -1}
	twoRecs := mustBuild(t, two, []Record{
		{Key: []byte{0, 0, 0, 1}, Value: []byte{0, 0, 0, 0, 0, 1}},
		{Key: []byte{0, 0, 0, 1}, Value: []byte{0, 0, 0, 0, 0, 1}},
	})
	badKey := mustBuild(t, &Builder{Control: true}, []Record{{Key: []byte{0}, Value: []byte{0, 0, 0, 0, 0, 1}}})
	badValue := mustBuild(t, &Builder{Control: true}, []Record{{Key: []byte{0, 0, 0, 0}, Value: nil}})
	leaderChange := mustBuild(t, &Builder{Control: true}, []Record{{Key: []byte{0, 0, 0, 2}, Value: []byte{0, 0, 0, 0, 0, 1}}})
	gzipped := mustBuild(t, &Builder{Codec: CodecGzip, Control: true}, []Record{{Key: []byte{0, 0, 0, 1}, Value: []byte{0, 0, 0, 0, 0, 4}}})
	tests := []struct {
		name    string
		b       Batch
		want    EndTxnMarker
		wantErr error
	}{
		{"marker", good, EndTxnMarker{ControlAbort, 2}, nil},
		{"compressed marker", gzipped, EndTxnMarker{ControlCommit, 4}, nil},
		{"data batch", data, EndTxnMarker{}, ErrNotControlBatch},
		{"two records", twoRecs, EndTxnMarker{}, ErrNotControlBatch},
		{"bad key", badKey, EndTxnMarker{}, ErrBadControlKey},
		{"null value", badValue, EndTxnMarker{}, ErrBadEndTxnMarker},
		{"leader change", leaderChange, EndTxnMarker{}, ErrNotEndTxnMarker},
		{"truncated", good[:len(good)-2], EndTxnMarker{}, ErrCorrupt},
		{"short header", good[:HeaderSize-1], EndTxnMarker{}, ErrCorrupt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.b.EndTxnMarker(0)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Fatalf("error %v, want %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestKmsgDecodesEndTxnMarker reads what BuildEndTxnMarker writes with
// franz-go's kmsg types, an independent decoder of the same format.
func TestKmsgDecodesEndTxnMarker(t *testing.T) {
	b := mustMarker(t, 99, 3, 555, EndTxnMarker{ControlCommit, 11})
	var kb kmsg.RecordBatch
	if err := kb.ReadFrom(b); err != nil {
		t.Fatalf("kmsg RecordBatch: %v", err)
	}
	const kmsgControl, kmsgTransactional = 0x20, 0x10
	if kb.Attributes&kmsgControl == 0 || kb.Attributes&kmsgTransactional == 0 ||
		kb.ProducerID != 99 || kb.ProducerEpoch != 3 || kb.FirstSequence != -1 || kb.NumRecords != 1 {
		t.Fatalf("kmsg batch %+v", kb)
	}
	var kr kmsg.Record
	if err := kr.ReadFrom(kb.Records); err != nil {
		t.Fatalf("kmsg Record: %v", err)
	}
	if _, n := binary.Varint(kb.Records); int(kr.Length) != len(kb.Records)-n {
		t.Fatalf("record length %d of %d bytes", kr.Length, len(kb.Records)-n)
	}
	var key kmsg.ControlRecordKey
	if err := key.ReadFrom(kr.Key); err != nil {
		t.Fatalf("kmsg ControlRecordKey: %v", err)
	}
	var val kmsg.EndTxnMarker
	if err := val.ReadFrom(kr.Value); err != nil {
		t.Fatalf("kmsg EndTxnMarker: %v", err)
	}
	if key.Version != 0 || key.Type != kmsg.ControlRecordKeyTypeCommit || val.Version != 0 || val.CoordinatorEpoch != 11 {
		t.Fatalf("kmsg key %+v value %+v", key, val)
	}
}
