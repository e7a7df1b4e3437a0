package record

import (
	"errors"
	"fmt"
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
	// ErrMissingKey is a record without a key where
	// ValidateOptions.RequireKeys asks for one (a compacted topic); it
	// wraps ErrInvalidRecord.
	ErrMissingKey = fmt.Errorf("%w: record without a key", ErrInvalidRecord)
)

// corruptMark is the marker that MarkCorrupt puts around an error. It is a
// distinct type so that the mark survives any amount of %w wrapping and is
// found with errors.As.
type corruptMark struct{ err error }

func (e *corruptMark) Error() string { return e.err.Error() }
func (e *corruptMark) Unwrap() error { return e.err }

// Is makes errors.Is(err, ErrCorrupt) true for every marked error.
func (e *corruptMark) Is(target error) bool { return target == ErrCorrupt }

// MarkCorrupt wraps err so that IsCorrupt reports true for it and for any
// error wrapping it. The message is unchanged. MarkCorrupt(nil) is nil.
func MarkCorrupt(err error) error {
	if err == nil {
		return nil
	}
	return &corruptMark{err: err}
}

// IsCorrupt reports whether err (or anything it wraps) was marked corrupt,
// or is ErrCorrupt itself.
func IsCorrupt(err error) bool {
	if err == nil {
		return false
	}
	var m *corruptMark
	return errors.As(err, &m) || errors.Is(err, ErrCorrupt)
}

// corruptf returns a marked error that wraps ErrCorrupt.
func corruptf(format string, args ...any) error {
	return MarkCorrupt(fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...))
}

// invalidf returns an error that wraps ErrInvalidRecord.
func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidRecord}, args...)...)
}
