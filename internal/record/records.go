package record

import "fmt"

// Header is a record header. Value is nil when null; Key is never null.
type Header struct {
	Key   string
	Value []byte
}

// Record is one decoded record. Key and Value are nil when null.
type Record struct {
	Attributes     int8
	TimestampDelta int64
	OffsetDelta    int32
	Key            []byte
	Value          []byte
	Headers        []Header
}

// Offset returns the record's absolute offset within batch b.
func (r *Record) Offset(b Batch) int64 { return b.BaseOffset() + int64(r.OffsetDelta) }

// Timestamp returns the record's timestamp within batch b (maxTimestamp
// when the batch uses LogAppendTime).
func (r *Record) Timestamp(b Batch) int64 {
	if b.LogAppendTime() {
		return b.MaxTimestamp()
	}
	return b.BaseTimestamp() + r.TimestampDelta
}

const (
	// minRecordSize is the smallest encoded record: a length varint and a
	// body of six one-byte fields (attributes, timestampDelta,
	// offsetDelta, keyLen -1, valueLen -1, headers 0).
	minRecordSize = 7
	minRecordBody = minRecordSize - 1
	// minHeaderSize is the smallest encoded header: keyLen 0, valueLen -1.
	minHeaderSize = 2
)

// Records decodes all records of b, decompressing with maxDecompressed as a
// hard cap (DefaultMaxDecompressedBytes when <= 0). The returned records
// alias a decompressed buffer or b; the caller owns the slice.
//
// Records does not check the CRC (Validate does) and accepts the offset
// gaps of a compacted batch: offset deltas must increase and stay within
// lastOffsetDelta. Malformed bytes give an error marked corrupt.
func (b Batch) Records(maxDecompressed int) ([]Record, error) {
	if err := b.checkFraming(); err != nil {
		return nil, err
	}
	n := b.NumRecords()
	if n < 0 {
		return nil, corruptf("negative record count %d", n)
	}
	data, err := b.recordsData(maxDecompressed)
	if err != nil {
		return nil, err
	}
	if int64(n)*minRecordSize > int64(len(data)) {
		return nil, corruptf("%d records cannot fit in %d bytes", n, len(data))
	}
	out := make([]Record, n)
	if _, err := scanRecords(data, n, false, b.LastOffsetDelta(), false, out); err != nil {
		return nil, err
	}
	return out, nil
}

// checkFraming checks what every reader of a batch relies on: the header
// fits, batchLength matches the bytes, the magic is 2.
func (b Batch) checkFraming() error {
	if len(b) < HeaderSize {
		return corruptf("batch of %d bytes is shorter than the %d byte header", len(b), HeaderSize)
	}
	if int64(b.BatchLength()) != int64(len(b)-LogOverhead) {
		return corruptf("batchLength %d, but %d bytes follow it", b.BatchLength(), len(b)-LogOverhead)
	}
	if b.Magic() != 2 {
		return corruptf("magic %d, want 2", b.Magic())
	}
	return nil
}

// recordsData returns the records section, decompressed.
func (b Batch) recordsData(maxDecompressed int) ([]byte, error) {
	data := []byte(b[HeaderSize:])
	c := b.Codec()
	if c == CodecNone {
		return data, nil
	}
	if c > CodecZstd {
		return nil, fmt.Errorf("%w: attributes name codec %d", ErrUnsupportedCodec, int8(c))
	}
	out, err := Decompress(c, data, maxDecompressed)
	if err != nil {
		return nil, fmt.Errorf("record: decompress %s batch: %w", c, err)
	}
	return out, nil
}

// scanRecords walks the n records encoded in data without allocating.
// With strict, offset deltas must be 0..n-1; otherwise they must increase
// and not exceed lastDelta (a compacted batch). With requireKeys a record
// without a key fails with ErrMissingKey. When out is non-nil (len n)
// the records are decoded into it, aliasing data. It returns the largest
// timestampDelta. The caller has checked n*minRecordSize <= len(data).
func scanRecords(data []byte, n int32, strict bool, lastDelta int32, requireKeys bool, out []Record) (ts tsRange, err error) {
	// NB: this loop runs for every record of every produced batch. Each
	// varint is first tried as one or two bytes (varintShort, which
	// inlines) before the general readVarint; the key and value lengths and
	// the offset check are spelled out here, since readBytes and
	// checkOffsetDelta do not inline; errors are built only on failure.
	pos := 0
	prev := int32(-1)
	for i := int32(0); i < n; i++ {
		length, k := varintShort(data, pos)
		if k == 0 {
			if length, k = readVarint(data, pos); k == 0 {
				return tsRange{}, corruptf("record %d: malformed length varint", i)
			}
		}
		pos += k
		if length < minRecordBody || int(length) > len(data)-pos {
			return tsRange{}, corruptf("record %d: length %d with %d bytes left", i, length, len(data)-pos)
		}
		rec := data[pos : pos+int(length)]
		pos += int(length)

		p := 1 // attributes
		var tsDelta int64
		if d, dk := varintShort(rec, p); dk > 0 {
			tsDelta, k = int64(d), dk
		} else if tsDelta, k = readVarlong(rec, p); k == 0 {
			return tsRange{}, corruptf("record %d: malformed timestampDelta", i)
		}
		p += k
		offDelta, k := varintShort(rec, p)
		if k == 0 {
			if offDelta, k = readVarint(rec, p); k == 0 {
				return tsRange{}, corruptf("record %d: malformed offsetDelta", i)
			}
		}
		p += k
		if strict && offDelta != i || !strict && (offDelta <= prev || offDelta > lastDelta) {
			return tsRange{}, checkOffsetDelta(i, offDelta, prev, lastDelta, strict)
		}
		prev = offDelta
		if i == 0 || tsDelta > ts.max {
			ts.max = tsDelta
		}
		if i == 0 || tsDelta < ts.min {
			ts.min = tsDelta
		}

		var key, value []byte
		var ok bool
		l, k := varintShort(rec, p)
		if k == 0 {
			l, k = readVarint(rec, p)
		}
		if p, key, ok = bytesAfter(rec, p, l, k); !ok {
			return tsRange{}, corruptf("record %d: bad key length", i)
		}
		if requireKeys && key == nil {
			return tsRange{}, fmt.Errorf("%w: record %d", ErrMissingKey, i)
		}
		if l, k = varintShort(rec, p); k == 0 {
			l, k = readVarint(rec, p)
		}
		if p, value, ok = bytesAfter(rec, p, l, k); !ok {
			return tsRange{}, corruptf("record %d: bad value length", i)
		}
		hc, k := varintShort(rec, p)
		if k == 0 {
			if hc, k = readVarint(rec, p); k == 0 {
				return tsRange{}, corruptf("record %d: malformed header count", i)
			}
		}
		p += k
		if hc < 0 || int64(hc)*minHeaderSize > int64(len(rec)-p) {
			return tsRange{}, corruptf("record %d: %d headers in %d bytes", i, hc, len(rec)-p)
		}
		var headers []Header
		if out != nil && hc > 0 {
			headers = make([]Header, hc)
		}
		for h := int32(0); h < hc; h++ {
			var hk, hv []byte
			if p, hk, ok = readBytes(rec, p); !ok || hk == nil {
				return tsRange{}, corruptf("record %d header %d: bad key length", i, h)
			}
			if p, hv, ok = readBytes(rec, p); !ok {
				return tsRange{}, corruptf("record %d: bad header value length", i)
			}
			if headers != nil {
				headers[h] = Header{Key: string(hk), Value: hv}
			}
		}
		if p != len(rec) {
			return tsRange{}, corruptf("record %d: %d bytes left over in a %d byte record", i, len(rec)-p, len(rec))
		}
		if out != nil {
			out[i] = Record{
				Attributes:     int8(rec[0]),
				TimestampDelta: tsDelta,
				OffsetDelta:    offDelta,
				Key:            key,
				Value:          value,
				Headers:        headers,
			}
		}
	}
	if pos != len(data) {
		return tsRange{}, corruptf("%d bytes after the last of %d records", len(data)-pos, n)
	}
	return ts, nil
}

// checkOffsetDelta checks record i's offset delta: with strict it must be
// i (a producer's batch), otherwise above the previous record's prev and
// at most lastDelta (a compacted batch).
func checkOffsetDelta(i, offDelta, prev, lastDelta int32, strict bool) error {
	if strict {
		if offDelta != i {
			return invalidf("record %d has offsetDelta %d", i, offDelta)
		}
	} else if offDelta <= prev || offDelta > lastDelta {
		return invalidf("record %d has offsetDelta %d after %d, lastOffsetDelta %d", i, offDelta, prev, lastDelta)
	}
	return nil
}

// readBytes reads a varint length (-1 for null) and that many bytes; ok
// is false when the length is malformed or overruns rec. The returned
// slice is capped so that appending to it cannot clobber data. The
// caller builds the error.
func readBytes(rec []byte, p int) (next int, b []byte, ok bool) {
	l, k := varintShort(rec, p)
	if k == 0 {
		l, k = readVarint(rec, p)
	}
	return bytesAfter(rec, p, l, k)
}

// bytesAfter is readBytes once the length l (a varint of k bytes at p, k
// 0 when malformed) is decoded.
func bytesAfter(rec []byte, p int, l int32, k int) (next int, b []byte, ok bool) {
	if k == 0 || l < -1 || int(l) > len(rec)-p-k {
		return p, nil, false
	}
	p += k
	if l < 0 {
		return p, nil, true
	}
	end := p + int(l)
	return end, rec[p:end:end], true
}
