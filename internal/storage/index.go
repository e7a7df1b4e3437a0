package storage

import (
	"encoding/binary"
	"fmt"
	"sort"
)

// offsetEntrySize is the size of one .index entry: relative offset int32,
// file position int32.
const offsetEntrySize = 8

// offsetEntry maps the last offset of a batch (relative to the segment's base
// offset) to the file position where that batch starts.
type offsetEntry struct {
	rel int32
	pos int32
}

// offsetIndex is a segment's sparse offset index, held in memory and mirrored
// to its .index file by appends. The owning Log's mu guards entries; file
// writes happen under the Log's appendMu.
type offsetIndex struct {
	file       indexFile
	entries    []offsetEntry
	maxEntries int
}

func (x *offsetIndex) full() bool { return len(x.entries) >= x.maxEntries }

// lookup returns the position of the last entry whose offset is <= rel, or
// 0. The batch that holds rel starts at or after the returned position.
func (x *offsetIndex) lookup(rel int32) int64 {
	i := sort.Search(len(x.entries), func(i int) bool { return x.entries[i].rel > rel })
	if i == 0 {
		return 0
	}
	return int64(x.entries[i-1].pos)
}

// encode appends e's on-disk form to dst.
func (e offsetEntry) encode(dst []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(e.rel))
	return binary.BigEndian.AppendUint32(dst, uint32(e.pos))
}

// decodeOffsetIndex parses an .index file's bytes and checks it: entries must
// be strictly increasing in both offset and position, positions must lie
// inside (0, logSize) and the file must hold whole entries. A zero-filled or
// torn index fails these checks.
func decodeOffsetIndex(buf []byte, logSize int64) ([]offsetEntry, error) {
	if len(buf)%offsetEntrySize != 0 {
		return nil, fmt.Errorf("%w: index size %d is not a multiple of %d", errBadIndex, len(buf), offsetEntrySize)
	}
	entries := make([]offsetEntry, 0, len(buf)/offsetEntrySize)
	for i := 0; i < len(buf); i += offsetEntrySize {
		e := offsetEntry{
			rel: int32(binary.BigEndian.Uint32(buf[i:])),
			pos: int32(binary.BigEndian.Uint32(buf[i+4:])),
		}
		if e.rel < 0 || e.pos <= 0 || int64(e.pos) >= logSize {
			return nil, fmt.Errorf("%w: entry %d (%d, %d) out of range", errBadIndex, i/offsetEntrySize, e.rel, e.pos)
		}
		if n := len(entries); n > 0 && (e.rel <= entries[n-1].rel || e.pos <= entries[n-1].pos) {
			return nil, fmt.Errorf("%w: entry %d not increasing", errBadIndex, i/offsetEntrySize)
		}
		entries = append(entries, e)
	}
	return entries, nil
}

// truncateAfterPos drops the entries at or after pos, in memory and in the
// file.
func (x *offsetIndex) truncateAfterPos(pos int64) error {
	i := sort.Search(len(x.entries), func(i int) bool { return int64(x.entries[i].pos) >= pos })
	x.entries = x.entries[:i:i]
	return x.file.truncate(int64(i) * offsetEntrySize)
}
