package record

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ControlType is the type field of a control record's key.
type ControlType int16

// Control record types that end a transaction. Kafka defines more (KRaft's
// leader change and snapshot markers); they are not end-transaction markers.
const (
	ControlAbort  ControlType = 0
	ControlCommit ControlType = 1
)

func (t ControlType) String() string {
	switch t {
	case ControlAbort:
		return "ABORT"
	case ControlCommit:
		return "COMMIT"
	}
	return fmt.Sprintf("ControlType(%d)", int16(t))
}

// Sizes and versions of the end-transaction marker record; the layout is
// drawn in doc.go.
const (
	controlKeySize      = 4 // version int16, type int16
	endTxnMarkerSize    = 6 // version int16, coordinator epoch int32
	controlKeyVersion   = 0
	endTxnMarkerVersion = 0
)

// Errors of ParseEndTxnMarker and Batch.EndTxnMarker. Each is wrapped with
// what was found; compare with errors.Is. The broker maps ErrBadControlKey
// and ErrBadEndTxnMarker to INVALID_RECORD (87).
var (
	// ErrNotControlBatch: the batch does not have the control attribute,
	// or does not hold exactly one record.
	ErrNotControlBatch = errors.New("record: not a control batch of one record")
	// ErrBadControlKey: the key is null, shorter than 4 bytes, or has a
	// negative version.
	ErrBadControlKey = errors.New("record: malformed control record key")
	// ErrNotEndTxnMarker: the key is well formed but its type is neither
	// ABORT nor COMMIT.
	ErrNotEndTxnMarker = errors.New("record: control record is not an end-transaction marker")
	// ErrBadEndTxnMarker: the value is null, shorter than 6 bytes, or has a
	// negative version.
	ErrBadEndTxnMarker = errors.New("record: malformed end-transaction marker value")
)

// EndTxnMarker is the content of the control record a transaction
// coordinator writes to each partition of a transaction to end it.
type EndTxnMarker struct {
	Type             ControlType // ControlAbort or ControlCommit
	CoordinatorEpoch int32
}

// Commit reports whether the marker commits (rather than aborts) the
// transaction.
func (m EndTxnMarker) Commit() bool { return m.Type == ControlCommit }

// AppendKey appends the control record key of m (version 0).
func (m EndTxnMarker) AppendKey(dst []byte) []byte {
	dst = binary.BigEndian.AppendUint16(dst, controlKeyVersion)
	return binary.BigEndian.AppendUint16(dst, uint16(m.Type))
}

// AppendValue appends the end-transaction marker value of m (version 0).
func (m EndTxnMarker) AppendValue(dst []byte) []byte {
	dst = binary.BigEndian.AppendUint16(dst, endTxnMarkerVersion)
	return binary.BigEndian.AppendUint32(dst, uint32(m.CoordinatorEpoch))
}

// BuildEndTxnMarker returns a control batch holding one end-transaction
// marker, as a partition leader writes it for WriteTxnMarkers: uncompressed,
// transactional and control attributes set, producerId and producerEpoch of
// the transaction, baseSequence -1, baseOffset 0 and leader epoch -1 (both
// patched on append), and one record at offset delta 0 with the given
// timestamp. The caller owns the returned bytes. It fails with
// ErrNotEndTxnMarker when m.Type is neither ABORT nor COMMIT.
func BuildEndTxnMarker(producerID int64, producerEpoch int16, timestamp int64, m EndTxnMarker) (Batch, error) {
	if m.Type != ControlAbort && m.Type != ControlCommit {
		return nil, fmt.Errorf("%w: type %d", ErrNotEndTxnMarker, int16(m.Type))
	}
	bb := Builder{
		Codec:         CodecNone,
		BaseTimestamp: timestamp,
		ProducerID:    producerID,
		ProducerEpoch: producerEpoch,
		BaseSequence:  -1,
		Transactional: true,
		Control:       true,
	}
	key := m.AppendKey(make([]byte, 0, controlKeySize))
	value := m.AppendValue(make([]byte, 0, endTxnMarkerSize))
	bb.Add(Record{Key: key, Value: value})
	return bb.Build()
}

// ParseEndTxnMarker decodes the key and value of a control record as an
// end-transaction marker. Like Kafka, it accepts versions above the ones it
// writes and ignores bytes after the fields it knows, so that a newer
// writer's markers still read. Errors: ErrBadControlKey,
// ErrNotEndTxnMarker, ErrBadEndTxnMarker (wrapped). It does not allocate.
func ParseEndTxnMarker(key, value []byte) (EndTxnMarker, error) {
	// Reference: Kafka ControlRecordType.parseTypeId and
	// EndTransactionMarker.deserializeValue.
	if len(key) < controlKeySize {
		return EndTxnMarker{}, fmt.Errorf("%w: %d bytes, want at least %d", ErrBadControlKey, len(key), controlKeySize)
	}
	if v := int16(binary.BigEndian.Uint16(key[0:2])); v < 0 {
		return EndTxnMarker{}, fmt.Errorf("%w: version %d", ErrBadControlKey, v)
	}
	t := ControlType(binary.BigEndian.Uint16(key[2:4]))
	if t != ControlAbort && t != ControlCommit {
		return EndTxnMarker{}, fmt.Errorf("%w: type %d", ErrNotEndTxnMarker, int16(t))
	}
	if len(value) < endTxnMarkerSize {
		return EndTxnMarker{}, fmt.Errorf("%w: %d bytes, want at least %d", ErrBadEndTxnMarker, len(value), endTxnMarkerSize)
	}
	if v := int16(binary.BigEndian.Uint16(value[0:2])); v < 0 {
		return EndTxnMarker{}, fmt.Errorf("%w: version %d", ErrBadEndTxnMarker, v)
	}
	return EndTxnMarker{Type: t, CoordinatorEpoch: int32(binary.BigEndian.Uint32(value[2:6]))}, nil
}

// EndTxnMarker decodes the end-transaction marker that control batch b
// holds. It checks framing but not the CRC (call Validate first for bytes
// from the network or the disk). Errors: ErrNotControlBatch when b lacks the
// control attribute or does not hold exactly one record, errors marked
// corrupt for malformed records, and the errors of ParseEndTxnMarker.
// maxDecompressed caps decompression as for Records; Kafka never compresses
// control batches but a reader need not rely on it.
func (b Batch) EndTxnMarker(maxDecompressed int) (EndTxnMarker, error) {
	if err := b.checkFraming(); err != nil {
		return EndTxnMarker{}, err
	}
	if !b.Control() {
		return EndTxnMarker{}, fmt.Errorf("%w: attributes %#04x", ErrNotControlBatch, uint16(b.Attributes()))
	}
	if n := b.NumRecords(); n != 1 {
		return EndTxnMarker{}, fmt.Errorf("%w: %d records", ErrNotControlBatch, n)
	}
	recs, err := b.Records(maxDecompressed)
	if err != nil {
		return EndTxnMarker{}, err
	}
	return ParseEndTxnMarker(recs[0].Key, recs[0].Value)
}
