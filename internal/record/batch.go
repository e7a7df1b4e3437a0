package record

import (
	"encoding/binary"
	"errors"
)

// Sizes and offsets of the batch header; the layout is drawn in doc.go.
const (
	// HeaderSize is the size of the batch header, up to the first record.
	HeaderSize = 61
	// LogOverhead is the size of baseOffset and batchLength, the part of a
	// batch that batchLength does not count.
	LogOverhead = 12
	// crcStart is where the CRC-covered bytes begin.
	crcStart = 21
)

// Attribute bits.
const (
	AttrCompressionMask = 0x07
	AttrTimestampType   = 0x08 // set: LogAppendTime
	AttrTransactional   = 0x10
	AttrControl         = 0x20
	AttrDeleteHorizon   = 0x40
)

// NoProducerID is the producer id of a batch from a non-idempotent producer.
const NoProducerID = -1

// Batch is a view over the bytes of exactly one record batch (magic v2),
// header included. Accessors read straight from the bytes; they do not check
// the length, so call Split or Validate before trusting a Batch that came from
// the network or the disk. A Batch does not own its bytes: setters write into
// the slice it views.
type Batch []byte

var (
	// ErrShortBatch means fewer bytes remain than a batch header says.
	ErrShortBatch = errors.New("record: short batch")
)

// Split returns the first batch in buf and the bytes after it. It checks only
// that the header fits and that batchLength is consistent with the bytes in
// buf; it returns ErrShortBatch when buf holds less than one whole batch, and
// an error marked corrupt when batchLength is impossible.
func Split(buf []byte) (b Batch, rest []byte, err error) {
	if len(buf) < LogOverhead {
		return nil, buf, ErrShortBatch
	}
	n := int64(int32(binary.BigEndian.Uint32(buf[8:12])))
	if n < HeaderSize-LogOverhead {
		return nil, buf, MarkCorrupt(errBadBatchLength)
	}
	total := LogOverhead + n
	if int64(len(buf)) < total {
		return nil, buf, ErrShortBatch
	}
	return Batch(buf[:total:total]), buf[total:], nil
}

var errBadBatchLength = errors.New("record: batch length smaller than the header")

// Header accessors. Each reads or writes one field of the header at the
// offset drawn in doc.go; none checks the length (see Split and Validate).
// Setters of fields inside the CRC-covered range leave the CRC stale: call
// UpdateCRC after them. SetBaseOffset and SetLeaderEpoch do not need it.

func (b Batch) BaseOffset() int64      { return int64(binary.BigEndian.Uint64(b[0:8])) }
func (b Batch) SetBaseOffset(o int64)  { binary.BigEndian.PutUint64(b[0:8], uint64(o)) }
func (b Batch) BatchLength() int32     { return int32(binary.BigEndian.Uint32(b[8:12])) }
func (b Batch) LeaderEpoch() int32     { return int32(binary.BigEndian.Uint32(b[12:16])) }
func (b Batch) SetLeaderEpoch(e int32) { binary.BigEndian.PutUint32(b[12:16], uint32(e)) }
func (b Batch) Magic() int8            { return int8(b[16]) }
func (b Batch) CRC() uint32            { return binary.BigEndian.Uint32(b[17:21]) }
func (b Batch) Attributes() int16      { return int16(binary.BigEndian.Uint16(b[21:23])) }
func (b Batch) Codec() Codec           { return Codec(b.Attributes() & AttrCompressionMask) }
func (b Batch) LogAppendTime() bool    { return b.Attributes()&AttrTimestampType != 0 }
func (b Batch) Transactional() bool    { return b.Attributes()&AttrTransactional != 0 }
func (b Batch) Control() bool          { return b.Attributes()&AttrControl != 0 }
func (b Batch) LastOffsetDelta() int32 { return int32(binary.BigEndian.Uint32(b[23:27])) }
func (b Batch) BaseTimestamp() int64   { return int64(binary.BigEndian.Uint64(b[27:35])) }
func (b Batch) MaxTimestamp() int64    { return int64(binary.BigEndian.Uint64(b[35:43])) }
func (b Batch) ProducerID() int64      { return int64(binary.BigEndian.Uint64(b[43:51])) }
func (b Batch) ProducerEpoch() int16   { return int16(binary.BigEndian.Uint16(b[51:53])) }
func (b Batch) BaseSequence() int32    { return int32(binary.BigEndian.Uint32(b[53:57])) }
func (b Batch) NumRecords() int32      { return int32(binary.BigEndian.Uint32(b[57:61])) }

// DeleteHorizonMs returns the delete horizon of b and true when its
// attributes have the delete horizon bit: the log cleaner then keeps the
// horizon in the base timestamp, and record timestamp deltas are relative
// to it (Reference: KIP-534). The batch's tombstones and removable
// transaction marker may go once the time reaches it.
func (b Batch) DeleteHorizonMs() (int64, bool) {
	if b.Attributes()&AttrDeleteHorizon == 0 {
		return 0, false
	}
	return b.BaseTimestamp(), true
}

// LastOffset is the offset of the last record, BaseOffset + LastOffsetDelta.
func (b Batch) LastOffset() int64 { return b.BaseOffset() + int64(b.LastOffsetDelta()) }

// Size is the number of bytes of the batch, header included.
func (b Batch) Size() int { return len(b) }
