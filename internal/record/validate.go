package record

import "fmt"

// ValidateOptions bound what Validate accepts.
type ValidateOptions struct {
	// MaxDecompressedBytes caps the decompressed size of a compressed
	// batch's records; beyond it Validate fails with
	// ErrDecompressedTooLarge. Validate streams the records through a
	// fixed buffer, so the cap bounds the CPU a batch costs, not the
	// memory. When <= 0, DefaultMaxDecompressedBytes applies.
	MaxDecompressedBytes int
	// RequireKeys refuses a record without a key with ErrMissingKey (a
	// compacted topic's batch).
	RequireKeys bool
	// FromClient requires baseOffset == 0 (a producer never sets it) and
	// refuses control batches (only coordinators write them).
	FromClient bool
	// AllowCompacted accepts what the log cleaner leaves behind: zero
	// records, and offset deltas that increase with gaps up to
	// lastOffsetDelta. Use it for batches read back from a log or fetched
	// from a leader, never for a producer's batch.
	AllowCompacted bool
}

// ValidationInfo is what Validate learned while checking.
type ValidationInfo struct {
	MaxTimestamp int64 // largest record timestamp, computed from the records
	MinTimestamp int64 // smallest record timestamp
	NumRecords   int32
}

// tsRange is the smallest and largest timestampDelta of a batch's records.
type tsRange struct{ min, max int64 }

// Validate checks b completely: magic 2, batchLength equal to len(b)-12, CRC,
// record count, record lengths, offset deltas 0..n-1 in order with the last
// equal to lastOffsetDelta, and varint encodings. A compressed batch's
// records are read through the decompressor and a fixed buffer, never held
// whole, with opts.MaxDecompressedBytes as a hard cap. A CRC mismatch
// or an impossible length is marked corrupt; other inconsistencies wrap
// ErrInvalidRecord.
//
// Errors, in the order they are checked:
//   - marked corrupt (and wrapping ErrCorrupt): short header, batchLength,
//     magic, CRC, negative record count, a count the bytes cannot hold, any
//     malformed varint, length or trailing byte in the records;
//   - ErrUnsupportedCodec: attributes name a codec above zstd;
//   - ErrInvalidRecord: zero records, lastOffsetDelta != count-1, offset
//     deltas out of order, with FromClient a non-zero baseOffset or a
//     control batch, with RequireKeys a record without a key
//     (ErrMissingKey);
//   - ErrDecompressedTooLarge: the cap was reached.
//
// For an uncompressed batch Validate does not allocate; for a compressed
// one it holds a pooled buffer and decompressor. It only reads b and is
// safe for concurrent use on the same bytes.
func (b Batch) Validate(opts ValidateOptions) (ValidationInfo, error) {
	if err := b.checkFraming(); err != nil {
		return ValidationInfo{}, err
	}
	if got, want := b.CRC(), b.ComputeCRC(); got != want {
		return ValidationInfo{}, corruptf("crc %#08x, computed %#08x", got, want)
	}
	n := b.NumRecords()
	last := b.LastOffsetDelta()
	switch {
	case n < 0:
		return ValidationInfo{}, corruptf("negative record count %d", n)
	case opts.AllowCompacted:
		if last < n-1 {
			return ValidationInfo{}, invalidf("lastOffsetDelta %d with %d records", last, n)
		}
	case n == 0:
		// Reference: Kafka LogValidator, a producer's batch must hold records.
		return ValidationInfo{}, invalidf("batch has no records")
	case last != n-1:
		return ValidationInfo{}, invalidf("lastOffsetDelta %d with %d records", last, n)
	}
	if opts.FromClient {
		if b.BaseOffset() != 0 {
			return ValidationInfo{}, invalidf("baseOffset %d from a producer, want 0", b.BaseOffset())
		}
		if b.Control() {
			return ValidationInfo{}, invalidf("control batch from a producer")
		}
	}
	c := b.Codec()
	if c > CodecZstd {
		return ValidationInfo{}, fmt.Errorf("%w: attributes name codec %d", ErrUnsupportedCodec, int8(c))
	}
	data := []byte(b[HeaderSize:])
	var ts tsRange
	var err error
	if c != CodecNone {
		// NB: a compressed section can legitimately be far smaller than
		// n records; the stream ends (corrupt) or reaches the cap first,
		// and nothing is allocated per record.
		max := int64(opts.MaxDecompressedBytes)
		if max <= 0 {
			max = DefaultMaxDecompressedBytes
		}
		if ts, err = validateCompressed(c, data, n, !opts.AllowCompacted, last, opts.RequireKeys, max); err != nil {
			return ValidationInfo{}, fmt.Errorf("record: %s batch: %w", c, err)
		}
		return ValidationInfo{MaxTimestamp: b.BaseTimestamp() + ts.max, MinTimestamp: b.BaseTimestamp() + ts.min, NumRecords: n}, nil
	}
	if int64(n)*minRecordSize > int64(len(data)) {
		return ValidationInfo{}, corruptf("%d records cannot fit in %d bytes", n, len(data))
	}
	if ts, err = scanRecords(data, n, !opts.AllowCompacted, last, opts.RequireKeys, nil); err != nil {
		return ValidationInfo{}, err
	}
	return ValidationInfo{MaxTimestamp: b.BaseTimestamp() + ts.max, MinTimestamp: b.BaseTimestamp() + ts.min, NumRecords: n}, nil
}
