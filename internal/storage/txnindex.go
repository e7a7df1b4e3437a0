package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
)

// Sizes of the .txnindex format; the layout is drawn in doc.go.
const (
	// abortedTxnSize is the size of one .txnindex entry: version int16,
	// producer id, first offset, last offset and last stable offset int64.
	abortedTxnSize = 34
	// abortedTxnVersion is the only entry version written and read.
	abortedTxnVersion = 0
)

// errTxnIndexOrder is returned by txnIndex.append for an entry that would
// break the index's order.
var errTxnIndexOrder = errors.New("storage: aborted transaction out of order")

// AbortedTxn is one aborted transaction of a partition, as a segment's
// .txnindex records it and as Fetch at read_committed reports it in
// AbortedTransactions (which carries ProducerID and FirstOffset).
type AbortedTxn struct {
	ProducerID  int64
	FirstOffset int64 // offset of the transaction's first record in the partition
	LastOffset  int64 // offset of the ABORT marker
	// LastStableOffset is the partition's last stable offset once the
	// marker was written: no transaction open then starts below it.
	LastStableOffset int64
}

// encode appends t's on-disk form to dst.
func (t AbortedTxn) encode(dst []byte) []byte {
	dst = binary.BigEndian.AppendUint16(dst, abortedTxnVersion)
	dst = binary.BigEndian.AppendUint64(dst, uint64(t.ProducerID))
	dst = binary.BigEndian.AppendUint64(dst, uint64(t.FirstOffset))
	dst = binary.BigEndian.AppendUint64(dst, uint64(t.LastOffset))
	return binary.BigEndian.AppendUint64(dst, uint64(t.LastStableOffset))
}

// txnIndex is a segment's aborted transactions in the order their markers
// were written, so with strictly increasing LastOffset. It is a plain value:
// not safe for concurrent use; its owner guards it.
type txnIndex struct {
	entries []AbortedTxn
}

// append adds t after the existing entries. It fails, wrapping
// errTxnIndexOrder, when t.FirstOffset > t.LastOffset or when t.LastOffset
// is not greater than the last entry's (Kafka's TransactionIndex rule).
func (x *txnIndex) append(t AbortedTxn) error {
	if err := x.check(t); err != nil {
		return err
	}
	x.entries = append(x.entries, t)
	return nil
}

// check returns the error append would return for t, changing nothing.
func (x *txnIndex) check(t AbortedTxn) error {
	if t.FirstOffset > t.LastOffset {
		return fmt.Errorf("%w: first offset %d after last offset %d", errTxnIndexOrder, t.FirstOffset, t.LastOffset)
	}
	if n := len(x.entries); n > 0 && t.LastOffset <= x.entries[n-1].LastOffset {
		return fmt.Errorf("%w: last offset %d not after %d", errTxnIndexOrder, t.LastOffset, x.entries[n-1].LastOffset)
	}
	return nil
}

// encode appends the .txnindex file image of all entries to dst.
func (x *txnIndex) encode(dst []byte) []byte {
	for _, t := range x.entries {
		dst = t.encode(dst)
	}
	return dst
}

// collectAborted appends to dst the aborted transactions that overlap the
// offsets [start, end): LastOffset >= start and FirstOffset < end. complete
// reports that some entry has LastStableOffset >= end, so no later segment
// can hold a transaction that began below end and the search may stop
// (Kafka's TxnIndexSearchResult.isComplete). The caller owns the returned
// slice.
func (x *txnIndex) collectAborted(dst []AbortedTxn, start, end int64) (txns []AbortedTxn, complete bool) {
	// Entries before i ended before start. FirstOffset is not ordered, so
	// the rest are scanned.
	i := sort.Search(len(x.entries), func(i int) bool { return x.entries[i].LastOffset >= start })
	for _, t := range x.entries[i:] {
		if t.FirstOffset < end {
			dst = append(dst, t)
		}
		if t.LastStableOffset >= end {
			return dst, true
		}
	}
	return dst, false
}

// truncateFrom drops the entries whose marker is at or after offset, as a
// log truncation to offset does (Kafka's TransactionIndex.truncateTo), and
// returns the new size of the file image.
func (x *txnIndex) truncateFrom(offset int64) int64 {
	i := sort.Search(len(x.entries), func(i int) bool { return x.entries[i].LastOffset >= offset })
	x.entries = x.entries[:i:i]
	return int64(i) * abortedTxnSize
}

// decodeTxnIndex parses a .txnindex file's bytes. A torn tail, fewer bytes
// than an entry after the last whole one, is dropped without error: valid
// is then the length of the whole entries, and the caller truncates the file
// to it. An entry with an unknown version, FirstOffset > LastOffset or a
// LastOffset not above the previous one ends the index too: decodeTxnIndex
// returns the entries before it, valid at its start, and an error wrapping
// errBadIndex. The count is bounded by len(buf) before allocating.
func decodeTxnIndex(buf []byte) (x txnIndex, valid int64, err error) {
	n := len(buf) / abortedTxnSize
	x.entries = make([]AbortedTxn, 0, n)
	for i := range n {
		e := buf[i*abortedTxnSize : (i+1)*abortedTxnSize]
		if v := int16(binary.BigEndian.Uint16(e[0:2])); v != abortedTxnVersion {
			return x, int64(i) * abortedTxnSize, fmt.Errorf("%w: aborted transaction %d has version %d", errBadIndex, i, v)
		}
		t := AbortedTxn{
			ProducerID:       int64(binary.BigEndian.Uint64(e[2:10])),
			FirstOffset:      int64(binary.BigEndian.Uint64(e[10:18])),
			LastOffset:       int64(binary.BigEndian.Uint64(e[18:26])),
			LastStableOffset: int64(binary.BigEndian.Uint64(e[26:34])),
		}
		if err := x.append(t); err != nil {
			return x, int64(i) * abortedTxnSize, fmt.Errorf("%w: aborted transaction %d: %w", errBadIndex, i, err)
		}
	}
	return x, int64(n) * abortedTxnSize, nil
}
