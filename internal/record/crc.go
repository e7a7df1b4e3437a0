package record

import (
	"encoding/binary"
	"hash/crc32"
)

// castagnoli is made once: crc32 picks the SSE4.2/ARM64 instruction or the
// slicing-by-8 table for it, and MakeTable is too slow for the hot path.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ComputeCRC returns the CRC-32C of the CRC-covered bytes of b, [21, end).
// b must hold at least the header (see Split).
func (b Batch) ComputeCRC() uint32 { return crc32.Checksum(b[crcStart:], castagnoli) }

// UpdateCRC recomputes the CRC and stores it in the header.
func (b Batch) UpdateCRC() { binary.BigEndian.PutUint32(b[17:21], b.ComputeCRC()) }

// SetLogAppendTime sets the timestamp type to LogAppendTime and
// maxTimestamp to ts, and recomputes the CRC.
func (b Batch) SetLogAppendTime(ts int64) {
	attrs := uint16(b.Attributes()) | AttrTimestampType
	binary.BigEndian.PutUint16(b[21:23], attrs)
	binary.BigEndian.PutUint64(b[35:43], uint64(ts))
	b.UpdateCRC()
}
