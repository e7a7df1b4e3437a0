// Package coordrec encodes and decodes the fields of Kafka's coordinator
// records, as the group coordinator writes them to __consumer_offsets and
// the share coordinator to __share_group_state: keys are non-flexible (an
// int16 version, then str16 fields), values an int16 version followed by
// flexible fields (compact strings and arrays as uvarint length+1, a tag
// buffer per struct). It is the encoding only; each coordinator owns its
// record types.
//
// Reader never panics on bad input: a field it cannot read sets Err (to
// Bad, the caller's error for a bad record) and reads as zero, and every
// later read is a no-op, so a decoder reads all its fields and checks Err
// once.
package coordrec

import "encoding/binary"

// AppendStr16 appends s as an int16 length and its bytes.
func AppendStr16(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

// AppendCompactStr appends s as a compact string.
func AppendCompactStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)+1))
	return append(b, s...)
}

// AppendCompactNullStr appends s as a compact nullable string.
func AppendCompactNullStr(b []byte, s *string) []byte {
	if s == nil {
		return append(b, 0)
	}
	return AppendCompactStr(b, *s)
}

// Reader decodes the fields of one record key or value from B.
type Reader struct {
	B   []byte
	Err error
	// Bad is the error Err takes at the first field that cannot be read.
	Bad error
}

// Fail records that the record is bad.
func (r *Reader) Fail() {
	if r.Err == nil {
		r.Err = r.Bad
	}
}

// N returns the next k bytes; past the end, or after a failure, k zero
// bytes.
func (r *Reader) N(k int) []byte {
	if r.Err != nil || k < 0 || len(r.B) < k {
		r.Fail()
		return make([]byte, max(k, 0))
	}
	out := r.B[:k]
	r.B = r.B[k:]
	return out
}

func (r *Reader) I8() int8   { return int8(r.N(1)[0]) }
func (r *Reader) I16() int16 { return int16(binary.BigEndian.Uint16(r.N(2))) }
func (r *Reader) I32() int32 { return int32(binary.BigEndian.Uint32(r.N(4))) }
func (r *Reader) I64() int64 { return int64(binary.BigEndian.Uint64(r.N(8))) }

// Uvarint reads an unsigned varint.
func (r *Reader) Uvarint() uint64 {
	if r.Err != nil {
		return 0
	}
	v, k := binary.Uvarint(r.B)
	if k <= 0 {
		r.Fail()
		return 0
	}
	r.B = r.B[k:]
	return v
}

// Str16 reads an int16-length string; a null one fails.
func (r *Reader) Str16() string {
	l := int(r.I16())
	if l < 0 {
		r.Fail()
		return ""
	}
	return string(r.N(l))
}

// CompactLen reads a compact length: -1 for null. A length past what is
// left fails, so that no caller allocates for it.
func (r *Reader) CompactLen() int {
	v := r.Uvarint()
	if v > uint64(len(r.B))+1 {
		r.Fail()
		return -1
	}
	return int(v) - 1
}

// CompactNullStr reads a compact nullable string.
func (r *Reader) CompactNullStr() *string {
	l := r.CompactLen()
	if l < 0 {
		return nil
	}
	s := string(r.N(l))
	return &s
}

// CompactStr reads a compact string; a null one fails.
func (r *Reader) CompactStr() string {
	s := r.CompactNullStr()
	if s == nil {
		r.Fail()
		return ""
	}
	return *s
}

// Tags skips a tag buffer.
func (r *Reader) Tags() {
	n := r.Uvarint()
	for range n {
		r.Uvarint()
		l := r.Uvarint()
		if l > uint64(len(r.B)) {
			r.Fail()
			return
		}
		r.N(int(l))
	}
}
