package group

import (
	"context"
	"unicode/utf16"
)

// Log is one __consumer_offsets partition as the coordinator needs it.
// The broker implements it over its replica of the partition.
type Log interface {
	// Append writes the records (key/value, value nil = tombstone) as one
	// batch and returns, once they are durable, the log offset of the
	// first (record i is at that offset + i).
	Append(ctx context.Context, recs []KV) (int64, error)
	// AppendTxn is Append for a TxnOffsetCommit: one transactional batch
	// of producer pid at epoch (Kafka's format: base sequence -1). A
	// partition that knows a newer epoch of the producer refuses it with
	// an error wrapping ErrInvalidProducerEpoch. guard is the request's
	// TxnOffsetCommitRequest.Guard: the log refuses the batch when a
	// marker of pid reached it since the guard was taken.
	AppendTxn(ctx context.Context, pid int64, epoch int16, guard any, recs []KV) (int64, error)
	// Replay calls fn for every record and every end-transaction marker in
	// the partition from the start, in log order.
	Replay(ctx context.Context, fn func(Entry) error) error
}

// Entry is one record, or one end-transaction marker, of a replayed
// __consumer_offsets partition.
type Entry struct {
	// Offset is the record's offset in the log.
	Offset int64
	// ProducerID is the producer of a transactional batch's record, or of
	// the marker; -1 for a record outside any transaction.
	ProducerID int64
	// Key and Value of a record (Value nil = tombstone); nil for a marker.
	Key, Value []byte
	// Marker is set for an end-transaction marker of ProducerID, Commit
	// for a COMMIT (else ABORT).
	Marker, Commit bool
}

// KV is one record of __consumer_offsets. A nil Value is a tombstone.
type KV struct{ Key, Value []byte }

// Partition returns the __consumer_offsets partition of a group:
// (javaHashCode(group) & 0x7fffffff) % numPartitions.
func Partition(group string, numPartitions int32) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(group)) {
		h = 31*h + int32(u)
	}
	return (h & 0x7fffffff) % numPartitions
}
