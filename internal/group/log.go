package group

import (
	"context"
	"unicode/utf16"
)

// Log is one __consumer_offsets partition as the coordinator needs it.
// The broker implements it over its replica of the partition.
type Log interface {
	// Append writes the records (key/value, value nil = tombstone) as one
	// batch and returns once they are durable (or fails).
	Append(ctx context.Context, recs []KV) error
	// Replay calls fn for every record in the partition from the start, in
	// order.
	Replay(ctx context.Context, fn func(key, value []byte) error) error
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
