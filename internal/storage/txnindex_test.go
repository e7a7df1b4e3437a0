package storage

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

func mustTxnIndex(t *testing.T, txns ...AbortedTxn) *txnIndex {
	t.Helper()
	x := &txnIndex{}
	for _, tx := range txns {
		if err := x.append(tx); err != nil {
			t.Fatalf("append %+v: %v", tx, err)
		}
	}
	return x
}

// Reference: Kafka AbortedTxn, version int16 then four int64, big endian.
func TestAbortedTxnEncodesKafkaLayout(t *testing.T) {
	got := AbortedTxn{ProducerID: 0x0102030405060708, FirstOffset: 10, LastOffset: 20, LastStableOffset: -1}.encode(nil)
	want := []byte{
		0, 0,
		1, 2, 3, 4, 5, 6, 7, 8,
		0, 0, 0, 0, 0, 0, 0, 10,
		0, 0, 0, 0, 0, 0, 0, 20,
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	}
	if len(got) != abortedTxnSize || !bytes.Equal(got, want) {
		t.Fatalf("encode = %x, want %x", got, want)
	}
}

func TestTxnIndexAppendKeepsLastOffsetOrder(t *testing.T) {
	base := AbortedTxn{ProducerID: 1, FirstOffset: 5, LastOffset: 10, LastStableOffset: 5}
	tests := []struct {
		name    string
		next    AbortedTxn
		wantErr bool
	}{
		{"later marker", AbortedTxn{ProducerID: 2, FirstOffset: 3, LastOffset: 11}, false},
		{"single-offset transaction", AbortedTxn{ProducerID: 2, FirstOffset: 12, LastOffset: 12}, false},
		{"same last offset", AbortedTxn{ProducerID: 2, FirstOffset: 3, LastOffset: 10}, true},
		{"earlier last offset", AbortedTxn{ProducerID: 2, FirstOffset: 3, LastOffset: 9}, true},
		{"first after last", AbortedTxn{ProducerID: 2, FirstOffset: 30, LastOffset: 20}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := mustTxnIndex(t, base)
			err := x.append(tt.next)
			if tt.wantErr != (err != nil) || (err != nil && !errors.Is(err, errTxnIndexOrder)) {
				t.Fatalf("append error %v, want error %v", err, tt.wantErr)
			}
			if wantLen := map[bool]int{false: 2, true: 1}[tt.wantErr]; len(x.entries) != wantLen {
				t.Fatalf("%d entries, want %d", len(x.entries), wantLen)
			}
		})
	}
}

func sampleTxnIndex(t *testing.T) *txnIndex {
	return mustTxnIndex(t,
		AbortedTxn{ProducerID: 1, FirstOffset: 0, LastOffset: 4, LastStableOffset: 0},
		AbortedTxn{ProducerID: 2, FirstOffset: 2, LastOffset: 9, LastStableOffset: 2},
		AbortedTxn{ProducerID: 3, FirstOffset: 12, LastOffset: 15, LastStableOffset: 16},
		AbortedTxn{ProducerID: 4, FirstOffset: 20, LastOffset: 30, LastStableOffset: 31},
	)
}

func TestTxnIndexRoundTripsAndTruncatesTornTail(t *testing.T) {
	x := sampleTxnIndex(t)
	img := x.encode(nil)
	if len(img) != 4*abortedTxnSize {
		t.Fatalf("image of %d bytes", len(img))
	}
	for _, cut := range []int{0, 1, abortedTxnSize - 1, abortedTxnSize, 2*abortedTxnSize + 17, len(img) - 1, len(img)} {
		got, valid, err := decodeTxnIndex(img[:cut])
		if err != nil {
			t.Fatalf("cut %d: %v", cut, err)
		}
		whole := cut / abortedTxnSize
		if valid != int64(whole*abortedTxnSize) {
			t.Fatalf("cut %d: valid %d, want %d", cut, valid, whole*abortedTxnSize)
		}
		if !reflect.DeepEqual(got.entries, x.entries[:whole]) {
			t.Fatalf("cut %d: entries %+v, want %+v", cut, got.entries, x.entries[:whole])
		}
	}
}

func TestDecodeTxnIndexStopsAtBadEntry(t *testing.T) {
	good := sampleTxnIndex(t).encode(nil)
	tests := []struct {
		name   string
		edit   func(b []byte)
		wantOK int // entries kept
	}{
		{"version 1 in entry 2", func(b []byte) { b[2*abortedTxnSize+1] = 1 }, 2},
		{"zero-filled entry 3", func(b []byte) { clear(b[3*abortedTxnSize:]) }, 3},
		{"last offset going back in entry 1", func(b []byte) { b[abortedTxnSize+25] = 3 }, 1},
		{"first offset after last in entry 0", func(b []byte) { b[17] = 99 }, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := bytes.Clone(good)
			tt.edit(b)
			got, valid, err := decodeTxnIndex(b)
			if !errors.Is(err, errBadIndex) {
				t.Fatalf("error %v, want errBadIndex", err)
			}
			if len(got.entries) != tt.wantOK || valid != int64(tt.wantOK*abortedTxnSize) {
				t.Fatalf("%d entries, valid %d; want %d entries", len(got.entries), valid, tt.wantOK)
			}
		})
	}
}

// Reference: Kafka TransactionIndex.collectAbortedTxns, an aborted
// transaction overlaps [fetchOffset, upperBound) when lastOffset >=
// fetchOffset and firstOffset < upperBound; the search is complete once an
// entry's lastStableOffset >= upperBound.
func TestTxnIndexCollectAbortedOverlappingRange(t *testing.T) {
	x := sampleTxnIndex(t)
	tests := []struct {
		name         string
		start, end   int64
		wantPIDs     []int64
		wantComplete bool
	}{
		{"whole segment", 0, 100, []int64{1, 2, 3, 4}, false},
		{"before any", -10, 0, nil, true},
		{"start at first marker", 4, 5, []int64{1, 2}, true},
		{"start after first marker", 5, 12, []int64{2}, true},
		{"end excludes first offset", 10, 12, nil, true},
		{"end includes first offset", 10, 13, []int64{3}, true},
		{"inside long transaction", 22, 25, []int64{4}, true},
		{"after all markers", 31, 40, nil, false},
		{"empty range", 3, 3, []int64{1, 2}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, complete := x.collectAborted(nil, tt.start, tt.end)
			var pids []int64
			for _, a := range got {
				pids = append(pids, a.ProducerID)
			}
			if !reflect.DeepEqual(pids, tt.wantPIDs) || complete != tt.wantComplete {
				t.Fatalf("producers %v complete %v, want %v %v", pids, complete, tt.wantPIDs, tt.wantComplete)
			}
		})
	}
}

func TestTxnIndexTruncateFromDropsMarkersAtOrAfterOffset(t *testing.T) {
	tests := []struct {
		offset   int64
		wantKeep int
	}{{0, 0}, {4, 0}, {5, 1}, {15, 2}, {16, 3}, {100, 4}}
	for _, tt := range tests {
		x := sampleTxnIndex(t)
		if size := x.truncateFrom(tt.offset); size != int64(tt.wantKeep*abortedTxnSize) || len(x.entries) != tt.wantKeep {
			t.Fatalf("truncateFrom(%d): size %d, %d entries; want %d entries", tt.offset, size, len(x.entries), tt.wantKeep)
		}
		if err := x.append(AbortedTxn{ProducerID: 9, FirstOffset: 200, LastOffset: 200}); err != nil {
			t.Fatalf("append after truncateFrom(%d): %v", tt.offset, err)
		}
	}
}
