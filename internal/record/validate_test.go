package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
)

// assemble wraps a raw records section (compressed with c) in a header
// with the given count and lastOffsetDelta and a valid CRC.
func assemble(t testing.TB, c Codec, count, last int32, raw []byte) Batch {
	t.Helper()
	b := make([]byte, HeaderSize)
	b, err := Compress(c, b, raw)
	if err != nil {
		t.Fatal(err)
	}
	be := binary.BigEndian
	be.PutUint32(b[8:12], uint32(len(b)-LogOverhead))
	be.PutUint32(b[12:16], 0xffffffff)
	b[16] = 2
	be.PutUint16(b[21:23], uint16(c))
	be.PutUint32(b[23:27], uint32(last))
	be.PutUint64(b[27:35], 1000)
	be.PutUint64(b[35:43], 1000)
	be.PutUint64(b[43:51], ^uint64(0))
	be.PutUint32(b[57:61], uint32(count))
	Batch(b).UpdateCRC()
	return b
}

// rawRecords encodes records with the offset deltas given in them.
func rawRecords(recs ...Record) []byte {
	var raw []byte
	for i := range recs {
		raw = appendRecord(raw, &recs[i])
	}
	return raw
}

func threeRecords() []Record {
	return []Record{
		{OffsetDelta: 0, TimestampDelta: 1, Key: []byte("a"), Value: []byte("1")},
		{OffsetDelta: 1, TimestampDelta: 7, Key: []byte("b"), Value: []byte("2")},
		{OffsetDelta: 2, TimestampDelta: 3, Key: []byte("c"), Value: []byte("3")},
	}
}

// mutate returns a copy of b changed by f, with the CRC recomputed.
func mutate(b Batch, f func(b Batch)) Batch {
	c := Batch(bytes.Clone(b))
	f(c)
	c.UpdateCRC()
	return c
}

type wantErr int

const (
	wantOK wantErr = iota
	wantCorrupt
	wantInvalid
	wantCodec
	wantTooLarge
)

func checkErr(t *testing.T, err error, want wantErr) {
	t.Helper()
	ok := false
	switch want {
	case wantOK:
		ok = err == nil
	case wantCorrupt:
		ok = IsCorrupt(err) && errors.Is(err, ErrCorrupt)
	case wantInvalid:
		ok = errors.Is(err, ErrInvalidRecord) && !IsCorrupt(err)
	case wantCodec:
		ok = errors.Is(err, ErrUnsupportedCodec)
	case wantTooLarge:
		ok = errors.Is(err, ErrDecompressedTooLarge)
	}
	if !ok {
		t.Fatalf("error %v, want kind %d", err, want)
	}
}

func TestValidate(t *testing.T) {
	good := assemble(t, CodecNone, 3, 2, rawRecords(threeRecords()...))
	goodRaw := rawRecords(threeRecords()...)
	gaps := threeRecords()
	gaps[1].OffsetDelta, gaps[2].OffsetDelta = 3, 4
	swapped := threeRecords()
	swapped[1].OffsetDelta, swapped[2].OffsetDelta = 2, 1

	// A record whose length varint takes 6 bytes.
	overlongLen := append([]byte{0x80 | 14, 0x80, 0x80, 0x80, 0x80, 0x00}, goodRaw[1:]...)
	// The first record with its timestampDelta (1 byte, value 1 -> 0x02)
	// spread over 11 bytes, its length fixed up.
	first := rawRecords(threeRecords()[0])
	rest := goodRaw[len(first):]
	body := append([]byte{first[1]}, 0x82, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00)
	body = append(body, first[3:]...)
	overlongTs := append(appendVarint(nil, int32(len(body))), body...)
	overlongTs = append(overlongTs, rest...)
	// A record claiming one more byte than the section holds.
	truncated := bytes.Clone(goodRaw[:len(goodRaw)-1])
	// A record with a padding byte inside its length.
	padded := rawRecords(threeRecords()[:2]...)
	last := rawRecords(threeRecords()[2])
	last[0] += 2 // zigzag: length + 1
	padded = append(append(padded, last...), 0)
	// Key length -2.
	badKey := rawRecords(Record{Key: []byte("a")})
	badKey[4] = 0x03 // zigzag -2, was len 1 (0x02)

	tests := []struct {
		name string
		b    Batch
		opts ValidateOptions
		want wantErr
	}{
		{"valid", good, ValidateOptions{FromClient: true}, wantOK},
		{"short header", good[:HeaderSize-1], ValidateOptions{}, wantCorrupt},
		{"batchLength too big", mutate(good, func(b Batch) { binary.BigEndian.PutUint32(b[8:12], uint32(len(b)-LogOverhead+1)) }), ValidateOptions{}, wantCorrupt},
		{"batchLength too small", mutate(good, func(b Batch) { binary.BigEndian.PutUint32(b[8:12], uint32(len(b)-LogOverhead-1)) }), ValidateOptions{}, wantCorrupt},
		{"bad magic", mutate(good, func(b Batch) { b[16] = 1 }), ValidateOptions{}, wantCorrupt},
		{"bad crc", func() Batch { c := Batch(bytes.Clone(good)); c[len(c)-1] ^= 1; return c }(), ValidateOptions{}, wantCorrupt},
		{"crc field flipped", func() Batch { c := Batch(bytes.Clone(good)); c[17] ^= 0x80; return c }(), ValidateOptions{}, wantCorrupt},
		{"count above records, last matches", assemble(t, CodecNone, 4, 3, goodRaw), ValidateOptions{}, wantCorrupt},
		{"count mismatch lastOffsetDelta", assemble(t, CodecNone, 4, 2, goodRaw), ValidateOptions{}, wantInvalid},
		{"count below records", assemble(t, CodecNone, 2, 1, goodRaw), ValidateOptions{}, wantCorrupt},
		{"zero records", assemble(t, CodecNone, 0, -1, nil), ValidateOptions{}, wantInvalid},
		{"negative count", assemble(t, CodecNone, -1, -2, goodRaw), ValidateOptions{}, wantCorrupt},
		{"huge count", assemble(t, CodecNone, 1<<30, 1<<30-1, goodRaw), ValidateOptions{}, wantCorrupt},
		{"offset deltas with gaps", assemble(t, CodecNone, 3, 4, rawRecords(gaps...)), ValidateOptions{}, wantInvalid},
		{"offset deltas out of order", assemble(t, CodecNone, 3, 2, rawRecords(swapped...)), ValidateOptions{}, wantInvalid},
		{"trailing garbage", assemble(t, CodecNone, 3, 2, append(bytes.Clone(goodRaw), 0)), ValidateOptions{}, wantCorrupt},
		{"truncated record", assemble(t, CodecNone, 3, 2, truncated), ValidateOptions{}, wantCorrupt},
		{"padding inside record", assemble(t, CodecNone, 3, 2, padded), ValidateOptions{}, wantCorrupt},
		{"overlong length varint", assemble(t, CodecNone, 3, 2, overlongLen), ValidateOptions{}, wantCorrupt},
		{"overlong timestamp varlong", assemble(t, CodecNone, 3, 2, overlongTs), ValidateOptions{}, wantCorrupt},
		{"key length -2", assemble(t, CodecNone, 1, 0, badKey), ValidateOptions{}, wantCorrupt},
		{"baseOffset from client", mutate(good, func(b Batch) { b.SetBaseOffset(5) }), ValidateOptions{FromClient: true}, wantInvalid},
		{"baseOffset from log", mutate(good, func(b Batch) { b.SetBaseOffset(5) }), ValidateOptions{}, wantOK},
		{"control from client", mutate(good, func(b Batch) { b[22] |= AttrControl }), ValidateOptions{FromClient: true}, wantInvalid},
		{"codec 6", mutate(good, func(b Batch) { b[22] |= 6 }), ValidateOptions{}, wantCodec},
		{"gzip garbage", mutate(good, func(b Batch) { b[22] |= byte(CodecGzip) }), ValidateOptions{}, wantCorrupt},
		{"zstd garbage", mutate(good, func(b Batch) { b[22] |= byte(CodecZstd) }), ValidateOptions{}, wantCorrupt},
		{"lz4 garbage", mutate(good, func(b Batch) { b[22] |= byte(CodecLZ4) }), ValidateOptions{}, wantCorrupt},
		{"snappy garbage", mutate(good, func(b Batch) { b[22] |= byte(CodecSnappy) }), ValidateOptions{}, wantCorrupt},
		{"gzip out of order", assemble(t, CodecGzip, 3, 2, rawRecords(swapped...)), ValidateOptions{}, wantInvalid},
		{"zstd trailing garbage", assemble(t, CodecZstd, 3, 2, append(bytes.Clone(goodRaw), 1, 2)), ValidateOptions{}, wantCorrupt},
		{"zstd over cap", assemble(t, CodecZstd, 3, 2, goodRaw), ValidateOptions{MaxDecompressedBytes: len(goodRaw) - 1}, wantTooLarge},
		{"zstd at cap", assemble(t, CodecZstd, 3, 2, goodRaw), ValidateOptions{MaxDecompressedBytes: len(goodRaw)}, wantOK},
		{"compacted gaps allowed", assemble(t, CodecNone, 3, 4, rawRecords(gaps...)), ValidateOptions{AllowCompacted: true}, wantOK},
		{"compacted delta past last", assemble(t, CodecNone, 3, 3, rawRecords(gaps...)), ValidateOptions{AllowCompacted: true}, wantInvalid},
		{"compacted empty", assemble(t, CodecNone, 0, 7, nil), ValidateOptions{AllowCompacted: true}, wantOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			info, err := tt.b.Validate(tt.opts)
			checkErr(t, err, tt.want)
			if err == nil && tt.b.NumRecords() == 3 && info.MaxTimestamp != 1007 {
				t.Fatalf("MaxTimestamp %d, want 1007", info.MaxTimestamp)
			}
			if err == nil {
				recs, rerr := tt.b.Records(tt.opts.MaxDecompressedBytes)
				if rerr != nil || int32(len(recs)) != tt.b.NumRecords() {
					t.Fatalf("Records after Validate: %d records, %v", len(recs), rerr)
				}
			}
		})
	}
}

func TestValidateUncompressedDoesNotAllocate(t *testing.T) {
	b := mustBuild(t, NewBuilder(CodecNone, 1), sampleRecords())
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := b.Validate(ValidateOptions{FromClient: true}); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per Validate, want 0", allocs)
	}
}

// TestValidateCompressedReusesBuffersCorrectly validates compressed
// batches of alternating sizes in every codec, so each decompresses into a
// buffer a larger or smaller batch used before: every one is read whole
// and alone (count and timestamps), and a snappy batch whose raw block is
// one byte short still fails after a larger batch left its buffer.
func TestValidateCompressedReusesBuffersCorrectly(t *testing.T) {
	build := func(c Codec, n int) Batch {
		bb := NewBuilder(c, 1000)
		for i := range n {
			bb.Add(Record{TimestampDelta: int64(i), Value: bytes.Repeat([]byte{byte(i)}, 100+i)})
		}
		return mustBuild(t, bb, nil)
	}
	for _, c := range Codecs[1:] {
		for round := range 3 {
			for _, n := range []int{200, 3, 50, 1} {
				b := build(c, n)
				info, err := b.Validate(ValidateOptions{FromClient: true})
				if err != nil || info.NumRecords != int32(n) || info.MaxTimestamp != 1000+int64(n-1) {
					t.Fatalf("%v round %d, %d records: %+v, %v", c, round, n, info, err)
				}
			}
		}
	}
	big := build(CodecSnappy, 200)
	if _, err := big.Validate(ValidateOptions{}); err != nil {
		t.Fatal(err)
	}
	small := build(CodecSnappy, 3)
	short := append(Batch(nil), small[:len(small)-1]...)
	binary.BigEndian.PutUint32(short[8:12], uint32(len(short)-12))
	short.UpdateCRC()
	if _, err := short.Validate(ValidateOptions{}); err == nil {
		t.Fatal("a snappy batch cut short validated")
	}
}

func TestSplit(t *testing.T) {
	a := mustBuild(t, NewBuilder(CodecNone, 1), threeRecords())
	b := mustBuild(t, NewBuilder(CodecGzip, 2), sampleRecords())
	buf := append(bytes.Clone(a), b...)

	first, rest, err := Split(buf)
	if err != nil || !bytes.Equal(first, a) || !bytes.Equal(rest, b) {
		t.Fatalf("first split: %v, %d+%d bytes", err, len(first), len(rest))
	}
	second, rest, err := Split(rest)
	if err != nil || !bytes.Equal(second, b) || len(rest) != 0 {
		t.Fatalf("second split: %v, %d+%d bytes", err, len(second), len(rest))
	}
	if _, _, err := Split(buf[:len(a)-1]); !errors.Is(err, ErrShortBatch) {
		t.Fatalf("partial batch: %v", err)
	}
	if _, _, err := Split(buf[:5]); !errors.Is(err, ErrShortBatch) {
		t.Fatalf("partial length: %v", err)
	}
	bad := bytes.Clone(a)
	binary.BigEndian.PutUint32(bad[8:12], 10)
	if _, _, err := Split(bad); !IsCorrupt(err) {
		t.Fatalf("impossible batchLength: %v", err)
	}
	binary.BigEndian.PutUint32(bad[8:12], 0x80000000)
	if _, _, err := Split(bad); !IsCorrupt(err) {
		t.Fatalf("negative batchLength: %v", err)
	}
	if cap(first) != len(first) {
		t.Fatalf("split batch has spare capacity %d", cap(first)-len(first))
	}
}

func TestSetLogAppendTimeKeepsBatchValid(t *testing.T) {
	b := mustBuild(t, NewBuilder(CodecLZ4, 100), threeRecords())
	b.SetLogAppendTime(555)
	if !b.LogAppendTime() || b.MaxTimestamp() != 555 || b.Codec() != CodecLZ4 {
		t.Fatalf("attributes %#x maxTimestamp %d", b.Attributes(), b.MaxTimestamp())
	}
	if _, err := b.Validate(ValidateOptions{}); err != nil {
		t.Fatalf("Validate after SetLogAppendTime: %v", err)
	}
	recs, err := b.Records(0)
	if err != nil {
		t.Fatal(err)
	}
	if recs[1].Timestamp(b) != 555 {
		t.Fatalf("timestamp %d, want the log append time", recs[1].Timestamp(b))
	}
}

func TestPatchingOffsetAndEpochKeepsCRC(t *testing.T) {
	b := mustBuild(t, NewBuilder(CodecNone, 100), threeRecords())
	crc := b.CRC()
	b.SetBaseOffset(1 << 40)
	b.SetLeaderEpoch(9)
	if b.ComputeCRC() != crc || b.LastOffset() != 1<<40+2 || b.LeaderEpoch() != 9 {
		t.Fatalf("crc %#x/%#x last %d epoch %d", b.ComputeCRC(), crc, b.LastOffset(), b.LeaderEpoch())
	}
	if _, err := b.Validate(ValidateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestMarkCorruptSurvivesWrapping(t *testing.T) {
	base := errors.New("disk said no")
	marked := MarkCorrupt(base)
	wrapped := errors.Join(errors.New("other"), fmtWrap(fmtWrap(marked)))
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"plain", base, false},
		{"marked", marked, true},
		{"wrapped twice and joined", wrapped, true},
		{"sentinel", ErrCorrupt, true},
		{"invalid record", ErrInvalidRecord, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsCorrupt(tt.err); got != tt.want {
				t.Fatalf("IsCorrupt = %v", got)
			}
		})
	}
	if !errors.Is(wrapped, base) || !errors.Is(wrapped, ErrCorrupt) || marked.Error() != base.Error() {
		t.Fatalf("mark lost the cause or the message: %v", wrapped)
	}
	if MarkCorrupt(nil) != nil {
		t.Fatal("MarkCorrupt(nil) != nil")
	}
}

func fmtWrap(err error) error { return fmt.Errorf("read segment: %w", err) }

func TestVarints(t *testing.T) {
	for _, v := range []int32{0, 1, -1, 63, -64, 64, 1 << 20, -(1 << 20), 1<<31 - 1, -1 << 31} {
		enc := appendVarint(nil, v)
		got, n := readVarint(enc, 0)
		if got != v || n != len(enc) || n != varintLen(v) {
			t.Errorf("varint %d: got %d n %d len %d", v, got, n, len(enc))
		}
	}
	for _, v := range []int64{0, -1, 1 << 40, 1<<63 - 1, -1 << 63} {
		enc := appendVarlong(nil, v)
		got, n := readVarlong(enc, 0)
		if got != v || n != len(enc) || n != varlongLen(v) {
			t.Errorf("varlong %d: got %d n %d len %d", v, got, n, len(enc))
		}
	}
	bad := []struct {
		name string
		b    []byte
		long bool
	}{
		{"empty", nil, false},
		{"unterminated", []byte{0x80, 0x80}, false},
		{"6 bytes", []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x00}, false},
		{"5th byte over 32 bits", []byte{0xff, 0xff, 0xff, 0xff, 0x1f}, false},
		{"11 bytes", []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00}, true},
		{"10th byte over 64 bits", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02}, true},
	}
	for _, tt := range bad {
		var n int
		if tt.long {
			_, n = readVarlong(tt.b, 0)
		} else {
			_, n = readVarint(tt.b, 0)
		}
		if n != 0 {
			t.Errorf("%s: accepted, n=%d", tt.name, n)
		}
	}
}

// TestVarintShortAgreesWithReadVarint checks the inlined fast path on every
// one- and two-byte input, whole or cut short: where it decodes, it must
// decode what readVarint does; where it declines, readVarint must need
// more than two bytes or find none.
func TestVarintShortAgreesWithReadVarint(t *testing.T) {
	for x := 0; x < 1<<16; x++ {
		full := []byte{byte(x), byte(x >> 8)}
		for _, b := range [][]byte{full, full[:1], append(full, 0x01)} {
			v, n := varintShort(b, 0)
			want, wantN := readVarint(b, 0)
			switch {
			case n > 0 && (v != want || n != wantN):
				t.Fatalf("% x: varintShort %d (%d bytes), readVarint %d (%d bytes)", b, v, n, want, wantN)
			case n == 0 && wantN > 0 && wantN <= 2:
				t.Fatalf("% x: varintShort declined a %d byte varint", b, wantN)
			}
		}
	}
	if _, n := varintShort(nil, 0); n != 0 {
		t.Fatalf("empty input decoded")
	}
	if _, n := varintShort([]byte{0x02}, 1); n != 0 {
		t.Fatalf("position past the end decoded")
	}
}
