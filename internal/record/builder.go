package record

import "encoding/binary"

// Builder builds record batches (for tests, internal topics and tools).
// The zero Builder has ProducerID 0; use NewBuilder for a batch from a
// non-idempotent producer. A Builder is not safe for concurrent use.
type Builder struct {
	Codec         Codec
	BaseTimestamp int64
	ProducerID    int64 // NoProducerID unless idempotent
	ProducerEpoch int16
	BaseSequence  int32
	Transactional bool
	Control       bool
	records       []Record
}

// NewBuilder returns a Builder for a non-idempotent producer's batch:
// producer id, epoch and base sequence all -1.
func NewBuilder(c Codec, baseTimestamp int64) *Builder {
	return &Builder{
		Codec:         c,
		BaseTimestamp: baseTimestamp,
		ProducerID:    NoProducerID,
		ProducerEpoch: -1,
		BaseSequence:  -1,
	}
}

// Add appends a record; its OffsetDelta is set to its position. The
// Builder keeps r's slices until Build.
func (bb *Builder) Add(r Record) {
	r.OffsetDelta = int32(len(bb.records))
	bb.records = append(bb.records, r)
}

// Len is the number of records added.
func (bb *Builder) Len() int { return len(bb.records) }

// Reset drops the records added, keeping the header fields.
func (bb *Builder) Reset() { bb.records = bb.records[:0] }

// Build encodes the batch with baseOffset 0, leader epoch -1 (a producer's
// batch) and a valid CRC. The caller owns the returned bytes. Build fails
// with ErrInvalidRecord when no record was added, and with
// ErrUnsupportedCodec for an unknown codec.
func (bb *Builder) Build() (Batch, error) {
	n := len(bb.records)
	if n == 0 {
		return nil, invalidf("batch has no records")
	}
	var raw []byte
	var maxDelta int64
	for i := range bb.records {
		r := &bb.records[i]
		if i == 0 || r.TimestampDelta > maxDelta {
			maxDelta = r.TimestampDelta
		}
		raw = appendRecord(raw, r)
	}

	b := make([]byte, HeaderSize, HeaderSize+len(raw))
	var err error
	if bb.Codec == CodecNone {
		b = append(b, raw...)
	} else if b, err = Compress(bb.Codec, b, raw); err != nil {
		return nil, err
	}
	attrs := uint16(bb.Codec) & AttrCompressionMask
	if bb.Transactional {
		attrs |= AttrTransactional
	}
	if bb.Control {
		attrs |= AttrControl
	}
	be := binary.BigEndian
	be.PutUint64(b[0:8], 0)
	be.PutUint32(b[8:12], uint32(len(b)-LogOverhead))
	be.PutUint32(b[12:16], 0xffffffff) // leader epoch -1
	b[16] = 2
	be.PutUint16(b[21:23], attrs)
	be.PutUint32(b[23:27], uint32(n-1))
	be.PutUint64(b[27:35], uint64(bb.BaseTimestamp))
	be.PutUint64(b[35:43], uint64(bb.BaseTimestamp+maxDelta))
	be.PutUint64(b[43:51], uint64(bb.ProducerID))
	be.PutUint16(b[51:53], uint16(bb.ProducerEpoch))
	be.PutUint32(b[53:57], uint32(bb.BaseSequence))
	be.PutUint32(b[57:61], uint32(n))
	batch := Batch(b)
	batch.UpdateCRC()
	return batch, nil
}

// appendRecord appends r in the in-batch encoding, length prefix first.
func appendRecord(dst []byte, r *Record) []byte {
	size := 1 + varlongLen(r.TimestampDelta) + varintLen(r.OffsetDelta) +
		bytesLen(r.Key) + bytesLen(r.Value) + varintLen(int32(len(r.Headers)))
	for _, h := range r.Headers {
		size += varintLen(int32(len(h.Key))) + len(h.Key) + bytesLen(h.Value)
	}
	dst = appendVarint(dst, int32(size))
	dst = append(dst, byte(r.Attributes))
	dst = appendVarlong(dst, r.TimestampDelta)
	dst = appendVarint(dst, r.OffsetDelta)
	dst = appendBytes(dst, r.Key)
	dst = appendBytes(dst, r.Value)
	dst = appendVarint(dst, int32(len(r.Headers)))
	for _, h := range r.Headers {
		dst = appendVarint(dst, int32(len(h.Key)))
		dst = append(dst, h.Key...)
		dst = appendBytes(dst, h.Value)
	}
	return dst
}

func appendBytes(dst, b []byte) []byte {
	if b == nil {
		return appendVarint(dst, -1)
	}
	return append(appendVarint(dst, int32(len(b))), b...)
}

func bytesLen(b []byte) int {
	if b == nil {
		return 1
	}
	return varintLen(int32(len(b))) + len(b)
}
