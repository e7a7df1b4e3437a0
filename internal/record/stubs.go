package record

// This file holds the API contract of package record that is not yet
// implemented. Each function is replaced by its real implementation in its
// own file; delete this file once it is empty.

import "errors"

// Codec is a batch compression codec, attributes bits 0-2.
type Codec int8

const (
	CodecNone   Codec = 0
	CodecGzip   Codec = 1
	CodecSnappy Codec = 2
	CodecLZ4    Codec = 3
	CodecZstd   Codec = 4
)

// Sentinel errors. The broker maps them to Kafka error codes:
// corrupt -> CORRUPT_MESSAGE (2), ErrInvalidRecord -> INVALID_RECORD (87),
// ErrUnsupportedCodec -> UNSUPPORTED_COMPRESSION_TYPE (76),
// ErrDecompressedTooLarge -> INVALID_RECORD (87).
var (
	ErrCorrupt              = errors.New("record: corrupt batch")
	ErrInvalidRecord        = errors.New("record: invalid record")
	ErrUnsupportedCodec     = errors.New("record: unsupported compression codec")
	ErrDecompressedTooLarge = errors.New("record: decompressed batch exceeds the limit")
)

// MarkCorrupt wraps err so that IsCorrupt reports true for it and for any
// error wrapping it.
func MarkCorrupt(err error) error { panic("unimplemented") }

// IsCorrupt reports whether err (or anything it wraps) was marked corrupt.
func IsCorrupt(err error) bool { panic("unimplemented") }

// ComputeCRC returns the CRC-32C of the CRC-covered bytes of b.
func (b Batch) ComputeCRC() uint32 { panic("unimplemented") }

// SetLogAppendTime sets the timestamp type to LogAppendTime and
// maxTimestamp to ts, and recomputes the CRC.
func (b Batch) SetLogAppendTime(ts int64) { panic("unimplemented") }

// ValidateOptions bound what Validate accepts.
type ValidateOptions struct {
	// MaxDecompressedBytes caps the output of decompressing a compressed
	// batch; beyond it Validate fails with ErrDecompressedTooLarge.
	MaxDecompressedBytes int
	// FromClient requires baseOffset == 0 (a producer never sets it).
	FromClient bool
}

// ValidationInfo is what Validate learned while checking.
type ValidationInfo struct {
	MaxTimestamp int64 // largest record timestamp, computed from the records
	NumRecords   int32
}

// Validate checks b completely: magic 2, batchLength equal to len(b)-12, CRC,
// record count, record lengths, offset deltas 0..n-1 in order with the last
// equal to lastOffsetDelta, and varint encodings. A compressed batch is
// decompressed with opts.MaxDecompressedBytes as a hard cap. A CRC mismatch
// or an impossible length is marked corrupt; other inconsistencies wrap
// ErrInvalidRecord.
func (b Batch) Validate(opts ValidateOptions) (ValidationInfo, error) { panic("unimplemented") }

// Header is a record header.
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

// Records decodes all records of b, decompressing with maxDecompressed as a
// hard cap. The returned records alias a decompressed buffer or b.
func (b Batch) Records(maxDecompressed int) ([]Record, error) { panic("unimplemented") }

// Builder builds record batches (for tests, internal topics and tools).
type Builder struct {
	Codec           Codec
	BaseTimestamp   int64
	ProducerID      int64 // NoProducerID unless idempotent
	ProducerEpoch   int16
	BaseSequence    int32
	Transactional   bool
	Control         bool
	records         []Record
}

// Add appends a record; its OffsetDelta is set to its position.
func (bb *Builder) Add(r Record) { panic("unimplemented") }

// Build encodes the batch with baseOffset 0, leader epoch -1 (a producer's
// batch) and a valid CRC.
func (bb *Builder) Build() (Batch, error) { panic("unimplemented") }
