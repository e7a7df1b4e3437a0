package record

// Kafka's record fields use zigzag varints (protobuf sint32/sint64): an
// int32 takes at most 5 bytes, an int64 at most 10. Longer encodings, and
// final bytes carrying bits beyond the type's width, are rejected.

// readVarint decodes a zigzag int32 from b at pos. n is the number of bytes
// read, 0 when b ends first or the encoding is too long.
func readVarint(b []byte, pos int) (v int32, n int) {
	var ux uint32
	for i := 0; i < 5; i++ {
		if pos+i >= len(b) {
			return 0, 0
		}
		c := b[pos+i]
		if i == 4 && c > 0x0f {
			return 0, 0 // more than 32 bits, or a continuation bit
		}
		ux |= uint32(c&0x7f) << (7 * i)
		if c < 0x80 {
			return int32(ux>>1) ^ -int32(ux&1), i + 1
		}
	}
	return 0, 0
}

// varintShort decodes the zigzag varint at b[pos] when it is one or two
// bytes long, as a record's lengths, counts and deltas under 8192 are; n
// is 0 when it is longer or b ends first, and readVarint must decode it.
// Unlike readVarint it is small enough to inline, which is what makes it
// worth trying first in scanRecords's loop.
func varintShort(b []byte, pos int) (v int32, n int) {
	if uint(pos) >= uint(len(b)) {
		return 0, 0
	}
	u := uint32(b[pos])
	if u < 0x80 {
		return int32(u>>1) ^ -int32(u&1), 1
	}
	if uint(pos+1) >= uint(len(b)) || b[pos+1] >= 0x80 {
		return 0, 0
	}
	u = u&0x7f | uint32(b[pos+1])<<7
	return int32(u>>1) ^ -int32(u&1), 2
}

// readVarlong decodes a zigzag int64 from b at pos, as readVarint.
func readVarlong(b []byte, pos int) (v int64, n int) {
	var ux uint64
	for i := 0; i < 10; i++ {
		if pos+i >= len(b) {
			return 0, 0
		}
		c := b[pos+i]
		if i == 9 && c > 0x01 {
			return 0, 0
		}
		ux |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return int64(ux>>1) ^ -int64(ux&1), i + 1
		}
	}
	return 0, 0
}

// appendVarint appends the zigzag encoding of v.
func appendVarint(dst []byte, v int32) []byte {
	return appendUvarint(dst, uint64(uint32(v<<1)^uint32(v>>31)))
}

// appendVarlong appends the zigzag encoding of v.
func appendVarlong(dst []byte, v int64) []byte {
	return appendUvarint(dst, uint64(v<<1)^uint64(v>>63))
}

func appendUvarint(dst []byte, u uint64) []byte {
	for u >= 0x80 {
		dst = append(dst, byte(u)|0x80)
		u >>= 7
	}
	return append(dst, byte(u))
}

// varintLen is the encoded size of v.
func varintLen(v int32) int {
	u := uint32(v<<1) ^ uint32(v>>31)
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}

// varlongLen is the encoded size of v.
func varlongLen(v int64) int {
	u := uint64(v<<1) ^ uint64(v>>63)
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}
