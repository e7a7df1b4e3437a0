package broker

import (
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"samsa/internal/group"
	"samsa/internal/record"
)

// TestReplayBatchEntries: what the group coordinator is told of each kind
// of __consumer_offsets batch at load.
// Reference: Kafka CoordinatorLoaderImpl (control records of other types
// than COMMIT/ABORT are skipped; a transactional batch's records belong to
// its producer).
func TestReplayBatchEntries(t *testing.T) {
	build := func(t *testing.T, bb *record.Builder, base int64, recs ...record.Record) record.Batch {
		t.Helper()
		for _, r := range recs {
			bb.Add(r)
		}
		b, err := bb.Build()
		if err != nil {
			t.Fatal(err)
		}
		binary.BigEndian.PutUint64(b[0:8], uint64(base))
		return b
	}
	kv := func(k, v string) record.Record {
		r := record.Record{Key: []byte(k)}
		if v != "" {
			r.Value = []byte(v)
		}
		return r
	}
	plain := func(t *testing.T) record.Batch {
		return build(t, record.NewBuilder(record.CodecNone, 0), 10, kv("a", "1"), record.Record{Value: []byte("no key")}, kv("b", ""))
	}
	txnal := func(t *testing.T) record.Batch {
		bb := record.NewBuilder(record.CodecNone, 0)
		bb.ProducerID, bb.ProducerEpoch, bb.Transactional = 7, 2, true
		return build(t, bb, 20, kv("c", "3"))
	}
	idempotent := func(t *testing.T) record.Batch {
		bb := record.NewBuilder(record.CodecNone, 0)
		bb.ProducerID, bb.ProducerEpoch, bb.BaseSequence = 8, 0, 0
		return build(t, bb, 30, kv("d", "4"))
	}
	marker := func(commit bool) func(t *testing.T) record.Batch {
		return func(t *testing.T) record.Batch {
			typ := record.ControlAbort
			if commit {
				typ = record.ControlCommit
			}
			b, err := record.BuildEndTxnMarker(7, 2, 0, record.EndTxnMarker{Type: typ})
			if err != nil {
				t.Fatal(err)
			}
			binary.BigEndian.PutUint64(b[0:8], 40)
			return b
		}
	}
	otherControl := func(t *testing.T) record.Batch {
		bb := record.NewBuilder(record.CodecNone, 0)
		bb.ProducerID, bb.ProducerEpoch, bb.Transactional, bb.Control = 7, 2, true, true
		// Control type 3 (a KRaft record type), not an end of transaction.
		return build(t, bb, 50, record.Record{Key: []byte{0, 0, 0, 3}, Value: []byte{0, 0}})
	}
	for _, tc := range []struct {
		name  string
		batch func(t *testing.T) record.Batch
		want  string
	}{
		{"plain", plain, "10 pid=-1 a=1; 12 pid=-1 b=<nil>"},
		{"transactional", txnal, "20 pid=7 c=3"},
		{"idempotent, not transactional", idempotent, "30 pid=-1 d=4"},
		{"commit marker", marker(true), "40 pid=7 COMMIT"},
		{"abort marker", marker(false), "40 pid=7 ABORT"},
		{"other control record", otherControl, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			err := replayBatch(tc.batch(t), func(e group.Entry) error {
				switch {
				case e.Marker && e.Commit:
					got = append(got, fmt.Sprintf("%d pid=%d COMMIT", e.Offset, e.ProducerID))
				case e.Marker:
					got = append(got, fmt.Sprintf("%d pid=%d ABORT", e.Offset, e.ProducerID))
				case e.Value == nil:
					got = append(got, fmt.Sprintf("%d pid=%d %s=<nil>", e.Offset, e.ProducerID, e.Key))
				default:
					got = append(got, fmt.Sprintf("%d pid=%d %s=%s", e.Offset, e.ProducerID, e.Key, e.Value))
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if s := strings.Join(got, "; "); s != tc.want {
				t.Errorf("got %q, want %q", s, tc.want)
			}
		})
	}
}
