package storage

import (
	"encoding/binary"
	"fmt"
	"sort"
)

// timeEntrySize is the size of one .timeindex entry: timestamp int64,
// relative offset int32.
const timeEntrySize = 12

// timeEntry says that the records up to and including relative offset rel
// have timestamps up to ts, and that rel holds ts.
type timeEntry struct {
	ts  int64
	rel int32
}

// timeIndex is a segment's sparse time index, held in memory and mirrored to
// its .timeindex file. Locking as for offsetIndex.
type timeIndex struct {
	file       indexFile
	entries    []timeEntry
	maxEntries int
}

func (x *timeIndex) full() bool { return len(x.entries) >= x.maxEntries }

// last returns the last entry, ok false when there is none.
func (x *timeIndex) last() (timeEntry, bool) {
	if len(x.entries) == 0 {
		return timeEntry{}, false
	}
	return x.entries[len(x.entries)-1], true
}

// lookup returns the relative offset from which to scan for the first
// record with timestamp >= ts: the offset of the last entry with a timestamp
// < ts (records before it all have smaller timestamps), or 0.
func (x *timeIndex) lookup(ts int64) int32 {
	i := sort.Search(len(x.entries), func(i int) bool { return x.entries[i].ts >= ts })
	if i == 0 {
		return 0
	}
	return x.entries[i-1].rel
}

func (e timeEntry) encode(dst []byte) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(e.ts))
	return binary.BigEndian.AppendUint32(dst, uint32(e.rel))
}

// decodeTimeIndex parses a .timeindex file's bytes: timestamps and offsets
// strictly increasing, offsets inside [0, maxRel].
func decodeTimeIndex(buf []byte, maxRel int64) ([]timeEntry, error) {
	if len(buf)%timeEntrySize != 0 {
		return nil, fmt.Errorf("%w: time index size %d is not a multiple of %d", errBadIndex, len(buf), timeEntrySize)
	}
	entries := make([]timeEntry, 0, len(buf)/timeEntrySize)
	for i := 0; i < len(buf); i += timeEntrySize {
		e := timeEntry{
			ts:  int64(binary.BigEndian.Uint64(buf[i:])),
			rel: int32(binary.BigEndian.Uint32(buf[i+8:])),
		}
		if e.rel < 0 || int64(e.rel) > maxRel {
			return nil, fmt.Errorf("%w: time entry %d offset %d out of range", errBadIndex, i/timeEntrySize, e.rel)
		}
		if n := len(entries); n > 0 && (e.ts <= entries[n-1].ts || e.rel <= entries[n-1].rel) {
			return nil, fmt.Errorf("%w: time entry %d not increasing", errBadIndex, i/timeEntrySize)
		}
		entries = append(entries, e)
	}
	return entries, nil
}

// truncateFromRel drops entries whose offset is >= rel.
func (x *timeIndex) truncateFromRel(rel int32) error {
	i := sort.Search(len(x.entries), func(i int) bool { return x.entries[i].rel >= rel })
	x.entries = x.entries[:i:i]
	return x.file.truncate(int64(i) * timeEntrySize)
}
