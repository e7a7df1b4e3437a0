package txn

import (
	"errors"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestRecordRoundTripKeepsMetadata(t *testing.T) {
	t.Parallel()
	base := TxnMetadata{
		TransactionalID: "t1", ProducerID: 7, LastProducerID: NoProducerID, ProducerEpoch: 3,
		LastProducerEpoch: NoProducerEpoch, NextProducerID: NoProducerID, TimeoutMs: 60000,
		TxnStartMs: -1, LastUpdateMs: 100,
	}
	with := func(f func(*TxnMetadata)) TxnMetadata {
		m := base.clone()
		f(&m)
		return m
	}
	for _, tc := range []struct {
		name    string
		m       TxnMetadata
		version int16
	}{
		{"empty", base, 0},
		{"ongoing", with(func(m *TxnMetadata) {
			m.State, m.TxnStartMs = TxnOngoing, 50
			m.Partitions = []TopicPartition{{"a", 0}, {"a", 2}, {"b", 1}}
		}), 0},
		{"prepare commit", with(func(m *TxnMetadata) {
			m.State, m.TxnStartMs, m.Partitions = TxnPrepareCommit, 50, []TopicPartition{{"a", 0}}
		}), 0},
		{"complete abort", with(func(m *TxnMetadata) { m.State = TxnCompleteAbort }), 0},
		{"rotated v2", with(func(m *TxnMetadata) {
			m.State, m.LastProducerID, m.NextProducerID, m.V2 = TxnPrepareAbort, 5, 9, true
			m.Partitions = []TopicPartition{{"x", 3}}
		}), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			val := EncodeValue(tc.m)
			var v kmsg.TxnMetadataValue
			if err := v.ReadFrom(val); err != nil || v.Version != tc.version {
				t.Fatalf("kmsg reads version %d, %v; want version %d", v.Version, err, tc.version)
			}
			id, got, ok, err := DecodeRecord(EncodeKey(tc.m.TransactionalID), val)
			if err != nil || !ok || id != tc.m.TransactionalID {
				t.Fatalf("decode: id %q ok %v err %v", id, ok, err)
			}
			if !reflect.DeepEqual(got, tc.m) {
				t.Fatalf("round trip:\n got %+v\nwant %+v", got, tc.m)
			}
		})
	}
}

func TestRecordDeadIsTombstone(t *testing.T) {
	t.Parallel()
	if v := EncodeValue(TxnMetadata{TransactionalID: "t", State: TxnDead}); v != nil {
		t.Fatalf("dead value %x, want nil", v)
	}
	id, _, ok, err := DecodeRecord(EncodeKey("t"), nil)
	if id != "t" || ok || err != nil {
		t.Fatalf("tombstone: %q %v %v", id, ok, err)
	}
}

// Reference: Kafka TransactionLog.readTxnRecordValue: partitions of an
// Empty id are ignored.
func TestRecordEmptyIgnoresPartitions(t *testing.T) {
	t.Parallel()
	v := kmsg.NewTxnMetadataValue()
	v.ProducerID, v.TimeoutMillis = 1, 1000
	tp := kmsg.NewTxnMetadataValueTopic()
	tp.Topic, tp.Partitions = "a", []int32{0}
	v.Topics = []kmsg.TxnMetadataValueTopic{tp}
	_, m, _, err := DecodeRecord(EncodeKey("t"), v.AppendTo(nil))
	if err != nil || len(m.Partitions) != 0 {
		t.Fatalf("got %v %v", m.Partitions, err)
	}
}

func TestRecordBadInputFails(t *testing.T) {
	t.Parallel()
	good := EncodeValue(TxnMetadata{TransactionalID: "t", ProducerID: 1, TimeoutMs: 1000, State: TxnOngoing,
		LastProducerID: NoProducerID, NextProducerID: NoProducerID})
	badVersion := func(b []byte, ver byte) []byte {
		c := append([]byte(nil), b...)
		c[1] = ver
		return c
	}
	withState := func(s int8) []byte {
		v := kmsg.NewTxnMetadataValue()
		v.ProducerID, v.TimeoutMillis, v.State = 1, 1000, kmsg.TransactionState(s)
		return v.AppendTo(nil)
	}
	for _, tc := range []struct {
		name       string
		key, value []byte
	}{
		{"empty key", []byte{}, good},
		{"short key", []byte{0}, good},
		{"key version", badVersion(EncodeKey("t"), 1), good},
		{"truncated key", EncodeKey("abc")[:4], good},
		{"short value", EncodeKey("t"), []byte{0}},
		{"value version", EncodeKey("t"), badVersion(good, 2)},
		{"truncated value", EncodeKey("t"), good[:len(good)-3]},
		{"state", EncodeKey("t"), withState(8)},
		{"negative state", EncodeKey("t"), withState(-1)},
		{"zero timeout", EncodeKey("t"), func() []byte {
			v := kmsg.NewTxnMetadataValue()
			v.ProducerID = 1
			return v.AppendTo(nil)
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if _, _, _, err := DecodeRecord(tc.key, tc.value); !errors.Is(err, ErrCorruptRecord) {
				t.Fatalf("err %v, want ErrCorruptRecord", err)
			}
		})
	}
}

// FuzzDecodeRecord feeds arbitrary keys and values to DecodeRecord.
// Invariants:
//   - it never panics;
//   - it fails only with ErrCorruptRecord;
//   - decoded metadata re-encodes to a record that decodes to the same
//     metadata, with sorted, distinct partitions.
func FuzzDecodeRecord(f *testing.F) {
	m := TxnMetadata{TransactionalID: "t", ProducerID: 1, LastProducerID: 4, NextProducerID: NoProducerID,
		ProducerEpoch: 2, TimeoutMs: 1000, State: TxnOngoing, Partitions: []TopicPartition{{"a", 1}}, V2: true}
	f.Add(EncodeKey("t"), EncodeValue(m))
	m.LastProducerID, m.V2 = NoProducerID, false
	f.Add(EncodeKey("t"), EncodeValue(m))
	f.Add(EncodeKey(""), []byte{})
	f.Fuzz(func(t *testing.T, key, value []byte) {
		id, m, ok, err := DecodeRecord(key, value)
		if err != nil {
			if !errors.Is(err, ErrCorruptRecord) {
				t.Fatalf("error %v is not ErrCorruptRecord", err)
			}
			return
		}
		if !ok {
			return
		}
		for i := 1; i < len(m.Partitions); i++ {
			if compareTP(m.Partitions[i-1], m.Partitions[i]) >= 0 {
				t.Fatalf("partitions not sorted: %v", m.Partitions)
			}
		}
		id2, m2, ok2, err := DecodeRecord(EncodeKey(id), EncodeValue(m))
		if m.State == TxnDead {
			if ok2 || err != nil {
				t.Fatalf("dead re-decodes as %v %v", ok2, err)
			}
			return
		}
		if err != nil || !ok2 || id2 != id || !reflect.DeepEqual(m, m2) {
			t.Fatalf("re-decode: %v %v\n got %+v\nwant %+v", ok2, err, m2, m)
		}
	})
}
