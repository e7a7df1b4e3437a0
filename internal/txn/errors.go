package txn

import "errors"

// Sentinel errors. The broker maps them to Kafka error codes:
// ErrOutOfOrderSequence -> OUT_OF_ORDER_SEQUENCE_NUMBER (45),
// ErrInvalidProducerEpoch -> INVALID_PRODUCER_EPOCH (47),
// ErrUnknownProducerID -> UNKNOWN_PRODUCER_ID (59),
// ErrInvalidSequence -> INVALID_RECORD (87).
// ErrCorruptSnapshot never reaches a client: a corrupt snapshot is deleted
// and the state is rebuilt from the log.
var (
	ErrOutOfOrderSequence   = errors.New("txn: out of order sequence number")
	ErrInvalidProducerEpoch = errors.New("txn: invalid producer epoch")
	ErrUnknownProducerID    = errors.New("txn: unknown producer id")
	ErrInvalidSequence      = errors.New("txn: invalid producer epoch or sequence on an idempotent batch")
	ErrCorruptSnapshot      = errors.New("txn: corrupt producer state snapshot")
)
