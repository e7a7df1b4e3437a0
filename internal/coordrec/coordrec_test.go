package coordrec

import (
	"encoding/binary"
	"errors"
	"testing"
)

var errBad = errors.New("bad record")

// TestReaderReadsWhatTheAppendersWrite: each field written comes back.
func TestReaderReadsWhatTheAppendersWrite(t *testing.T) {
	s := "member-1"
	b := AppendStr16(nil, "group")
	b = AppendCompactStr(b, "topic")
	b = AppendCompactNullStr(b, nil)
	b = AppendCompactNullStr(b, &s)
	b = binary.BigEndian.AppendUint32(b, 42)
	b = append(b, 2, 7, 1, 9, 0, 0) // tags: 2 fields, tag 7 of 1 byte, tag 0 empty
	b = append(b, 0xff)
	r := &Reader{B: b, Bad: errBad}
	if got := r.Str16(); got != "group" {
		t.Errorf("Str16 %q", got)
	}
	if got := r.CompactStr(); got != "topic" {
		t.Errorf("CompactStr %q", got)
	}
	if got := r.CompactNullStr(); got != nil {
		t.Errorf("null CompactNullStr %q", *got)
	}
	if got := r.CompactNullStr(); got == nil || *got != s {
		t.Errorf("CompactNullStr %v", got)
	}
	if got := r.I32(); got != 42 {
		t.Errorf("I32 %d", got)
	}
	r.Tags()
	if got := r.I8(); got != -1 || r.Err != nil || len(r.B) != 0 {
		t.Errorf("after the tags: I8 %d, err %v, %d bytes left", got, r.Err, len(r.B))
	}
}

// TestReaderFailsOnBadInput: truncated or oversized fields set Err to
// Bad and read as zero, without a panic or an allocation of the claimed
// size, and every later read stays failed.
func TestReaderFailsOnBadInput(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    []byte
		read func(r *Reader)
	}{
		{"short int32", []byte{1, 2}, func(r *Reader) { r.I32() }},
		{"str16 past the end", []byte{0, 9, 'a'}, func(r *Reader) { r.Str16() }},
		{"null str16", []byte{0xff, 0xff}, func(r *Reader) { r.Str16() }},
		{"compact length past the end", []byte{0xff, 0xff, 0xff, 0x7f}, func(r *Reader) { r.CompactStr() }},
		{"null compact string", []byte{0}, func(r *Reader) { r.CompactStr() }},
		{"unterminated varint", []byte{0x80, 0x80}, func(r *Reader) { r.Uvarint() }},
		{"tag past the end", []byte{1, 0, 50, 1}, func(r *Reader) { r.Tags() }},
		{"empty", nil, func(r *Reader) { r.I8() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Reader{B: tc.b, Bad: errBad}
			tc.read(r)
			if !errors.Is(r.Err, errBad) {
				t.Fatalf("err %v, want the reader's Bad", r.Err)
			}
			if got := r.I16(); got != 0 || !errors.Is(r.Err, errBad) {
				t.Fatalf("a read after the failure: %d, err %v", got, r.Err)
			}
		})
	}
}
