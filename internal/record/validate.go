package record

import (
	"fmt"
	"sync"
)

// ValidateOptions bound what Validate accepts.
type ValidateOptions struct {
	// MaxDecompressedBytes caps the output of decompressing a compressed
	// batch; beyond it Validate fails with ErrDecompressedTooLarge. When
	// <= 0, DefaultMaxDecompressedBytes applies.
	MaxDecompressedBytes int
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
	NumRecords   int32
}

// validateBufs holds *[]byte buffers that Validate decompresses into.
var validateBufs = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledValidateBuf is the largest buffer Validate gives back to
// validateBufs, so one huge batch does not stay in the pool.
const maxPooledValidateBuf = 4 << 20

// Validate checks b completely: magic 2, batchLength equal to len(b)-12, CRC,
// record count, record lengths, offset deltas 0..n-1 in order with the last
// equal to lastOffsetDelta, and varint encodings. A compressed batch is
// decompressed with opts.MaxDecompressedBytes as a hard cap. A CRC mismatch
// or an impossible length is marked corrupt; other inconsistencies wrap
// ErrInvalidRecord.
//
// Errors, in the order they are checked:
//   - marked corrupt (and wrapping ErrCorrupt): short header, batchLength,
//     magic, CRC, negative record count, a count the bytes cannot hold, any
//     malformed varint, length or trailing byte in the records;
//   - ErrUnsupportedCodec: attributes name a codec above zstd;
//   - ErrInvalidRecord: zero records, lastOffsetDelta != count-1, offset
//     deltas out of order, and with FromClient a non-zero baseOffset or a
//     control batch;
//   - ErrDecompressedTooLarge: the cap was reached.
//
// For an uncompressed batch Validate does not allocate; a compressed one is
// decompressed into a pooled buffer. It only reads b and is safe for
// concurrent use on the same bytes.
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
	// NB: a compressed section can legitimately be far smaller than n
	// records, so the count is bounded after decompression (which the cap
	// bounds) and before anything is allocated per record.
	if c != CodecNone {
		// NB: the records are only scanned, so they are decompressed into
		// a pooled buffer: a fresh one per produced batch was most of the
		// broker's allocation under compressed produce.
		bp := validateBufs.Get().(*[]byte)
		defer func() {
			if cap(data) <= maxPooledValidateBuf {
				*bp = data[:0]
			}
			validateBufs.Put(bp)
		}()
		var err error
		if data, err = decompressTo(c, data, opts.MaxDecompressedBytes, *bp); err != nil {
			return ValidationInfo{}, fmt.Errorf("record: decompress %s batch: %w", c, err)
		}
	}
	if int64(n)*minRecordSize > int64(len(data)) {
		return ValidationInfo{}, corruptf("%d records cannot fit in %d bytes", n, len(data))
	}
	maxDelta, err := scanRecords(data, n, !opts.AllowCompacted, last, nil)
	if err != nil {
		return ValidationInfo{}, err
	}
	return ValidationInfo{MaxTimestamp: b.BaseTimestamp() + maxDelta, NumRecords: n}, nil
}
