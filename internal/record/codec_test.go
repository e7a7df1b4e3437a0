package record

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
)

func testPayload(n int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, n)
	for i := range b {
		// Half compressible text, half noise.
		if i%2 == 0 {
			b[i] = "abcdefgh"[i%8]
		} else {
			b[i] = byte(r.Uint32())
		}
	}
	return b
}

func TestCompressDecompressRoundTrip(t *testing.T) {
	for _, c := range Codecs {
		for _, size := range []int{0, 1, 1000, 100 << 10} {
			src := testPayload(size)
			prefix := []byte("keep")
			comp, err := Compress(c, bytes.Clone(prefix), src)
			if err != nil {
				t.Fatalf("%v/%d: Compress: %v", c, size, err)
			}
			if !bytes.HasPrefix(comp, prefix) {
				t.Fatalf("%v/%d: Compress did not append to dst", c, size)
			}
			out, err := Decompress(c, comp[len(prefix):], size)
			if err != nil {
				t.Fatalf("%v/%d: Decompress: %v", c, size, err)
			}
			if !bytes.Equal(out, src) {
				t.Fatalf("%v/%d: round trip differs", c, size)
			}
			if size > 1 {
				if _, err := Decompress(c, comp[len(prefix):], size-1); !errors.Is(err, ErrDecompressedTooLarge) {
					t.Fatalf("%v/%d: one byte over the cap: %v", c, size, err)
				}
			}
		}
	}
	if _, err := Compress(7, nil, []byte("x")); !errors.Is(err, ErrUnsupportedCodec) {
		t.Fatalf("Compress codec 7: %v", err)
	}
	if _, err := Decompress(5, []byte("x"), 0); !errors.Is(err, ErrUnsupportedCodec) {
		t.Fatalf("Decompress codec 5: %v", err)
	}
}

func TestDecompressSnappyRawBlockAndXerialChunks(t *testing.T) {
	src := testPayload(100 << 10) // four xerial chunks
	raw := snappy.Encode(nil, src)
	out, err := Decompress(CodecSnappy, raw, 0)
	if err != nil || !bytes.Equal(out, src) {
		t.Fatalf("raw block: %v", err)
	}
	framed, _ := Compress(CodecSnappy, nil, src)
	if !bytes.HasPrefix(framed, xerialMagic) {
		t.Fatalf("snappy output lacks the xerial magic: %x", framed[:8])
	}
	out, err = Decompress(CodecSnappy, framed, 0)
	if err != nil || !bytes.Equal(out, src) {
		t.Fatalf("xerial: %v", err)
	}
	for _, cut := range []int{10, xerialHeaderSize + 2, len(framed) - 1} {
		if _, err := Decompress(CodecSnappy, framed[:cut], 0); !IsCorrupt(err) {
			t.Fatalf("xerial cut at %d: %v", cut, err)
		}
	}
	// A raw block whose header claims more than the cap is refused before
	// anything is allocated.
	if _, err := Decompress(CodecSnappy, raw, len(src)-1); !errors.Is(err, ErrDecompressedTooLarge) {
		t.Fatalf("raw over cap: %v", err)
	}
}

// bomb returns n zero bytes compressed with c, streamed so that the test
// itself does not hold n bytes.
func bomb(t *testing.T, c Codec, n int) []byte {
	t.Helper()
	zeros := make([]byte, 1<<20)
	var buf bytes.Buffer
	switch c {
	case CodecGzip:
		w, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		for i := 0; i < n; i += len(zeros) {
			w.Write(zeros)
		}
		w.Close()
	case CodecZstd:
		w, _ := zstd.NewWriter(&buf, zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(1<<20))
		for i := 0; i < n; i += len(zeros) {
			w.Write(zeros)
		}
		w.Close()
	default:
		b, err := Compress(c, nil, make([]byte, n))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	return buf.Bytes()
}

func TestDecompressionBombStaysUnderCap(t *testing.T) {
	const capBytes = 2 << 20
	big := 200 << 20 // 200 MiB of zeros, the headline bomb
	if raceEnabled {
		big = 32 << 20
	}
	// The bound is four times the cap: the output buffer doubles up to
	// cap+1 (about 2x in garbage) plus the codec's own state, which a
	// sync.Pool may drop (always possible, frequent under -race).
	tests := []struct {
		c     Codec
		size  int
		bound uint64 // bytes allocated per Decompress
	}{
		{CodecGzip, big, 4 * capBytes},
		{CodecZstd, big, 4 * capBytes},
		{CodecLZ4, 64 << 20, 4 * capBytes},
		{CodecSnappy, 64 << 20, 4 * capBytes},
	}
	for _, tt := range tests {
		t.Run("codec="+tt.c.String(), func(t *testing.T) {
			src := bomb(t, tt.c, tt.size)
			if _, err := Decompress(tt.c, src, capBytes); !errors.Is(err, ErrDecompressedTooLarge) {
				t.Fatalf("Decompress: %v", err)
			}
			// Batch-level too: the zeros as a batch's records section are
			// corrupt at once (a record of length 0); as one record's
			// value they are valid records, refused at the cap.
			b := assemble(t, CodecNone, 1, 0, src)
			b[22] |= byte(tt.c)
			b.UpdateCRC()
			if _, err := b.Validate(ValidateOptions{MaxDecompressedBytes: capBytes}); !IsCorrupt(err) {
				t.Fatalf("Validate of zeros: %v, want corrupt", err)
			}
			vb := assemble(t, tt.c, 1, 0, rawRecords(Record{Value: make([]byte, tt.size)}))
			if _, err := vb.Validate(ValidateOptions{MaxDecompressedBytes: capBytes}); !errors.Is(err, ErrDecompressedTooLarge) {
				t.Fatalf("Validate of a record of zeros: %v", err)
			}
			const runs = 4
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			for range runs {
				Decompress(tt.c, src, capBytes)
			}
			runtime.ReadMemStats(&after)
			per := (after.TotalAlloc - before.TotalAlloc) / runs
			t.Logf("%s: %d byte bomb of %d bytes, %d bytes allocated per call", tt.c, len(src), tt.size, per)
			if per > tt.bound {
				t.Fatalf("allocated %d bytes per call, cap %d, bound %d", per, capBytes, tt.bound)
			}
			runtime.GC()
			runtime.ReadMemStats(&before)
			for range runs {
				vb.Validate(ValidateOptions{MaxDecompressedBytes: capBytes})
			}
			runtime.ReadMemStats(&after)
			if per := (after.TotalAlloc - before.TotalAlloc) / runs; per > tt.bound {
				t.Fatalf("Validate allocated %d bytes per call, cap %d, bound %d", per, capBytes, tt.bound)
			}
		})
	}
}

// TestValidateStreamsCompressedRecords: a batch whose records decompress
// to far more than it holds (three 1 MiB records of zeros, a few KiB
// compressed) is valid, and Validate reads it without holding the
// decompressed records: per call it allocates far less than their size.
// Past the cap the same batch is refused.
func TestValidateStreamsCompressedRecords(t *testing.T) {
	t.Parallel()
	const recSize = 1 << 20
	for _, c := range []Codec{CodecGzip, CodecSnappy, CodecLZ4, CodecZstd} {
		t.Run("codec="+c.String(), func(t *testing.T) {
			raw := rawRecords(
				Record{OffsetDelta: 0, Key: []byte("a"), Value: make([]byte, recSize)},
				Record{OffsetDelta: 1, Key: []byte("b"), Value: make([]byte, recSize)},
				Record{OffsetDelta: 2, Key: []byte("c"), Value: make([]byte, recSize), Headers: []Header{{Key: "h", Value: []byte("v")}}},
			)
			b := assemble(t, c, 3, 2, raw)
			info, err := b.Validate(ValidateOptions{FromClient: true, RequireKeys: true})
			if err != nil {
				t.Fatalf("Validate of %d bytes (%d decompressed): %v", len(b), len(raw), err)
			}
			if info.NumRecords != 3 {
				t.Fatalf("NumRecords %d, want 3", info.NumRecords)
			}
			if _, err := b.Validate(ValidateOptions{MaxDecompressedBytes: len(raw) - 1}); !errors.Is(err, ErrDecompressedTooLarge) {
				t.Fatalf("Validate with a cap one byte short: %v, want ErrDecompressedTooLarge", err)
			}
			b.Validate(ValidateOptions{}) // warm the pools
			const runs = 8
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for range runs {
				b.Validate(ValidateOptions{})
			}
			runtime.ReadMemStats(&after)
			per := (after.TotalAlloc - before.TotalAlloc) / runs
			t.Logf("%s: %d byte batch, %d bytes of records, %d bytes allocated per Validate", c, len(b), len(raw), per)
			// NB: under -race sync.Pool drops what it is given at random,
			// so the pooled decoders are rebuilt and the bound does not
			// hold there.
			if !raceEnabled && per > uint64(len(raw))/4 {
				t.Fatalf("Validate allocated %d bytes per call for %d bytes of records", per, len(raw))
			}
		})
	}
}

// TestValidateCompressedMatchesUncompressed: the streaming check of a
// compressed batch refuses what the check of the same records uncompressed
// refuses, with the same kind of error.
func TestValidateCompressedMatchesUncompressed(t *testing.T) {
	t.Parallel()
	good := rawRecords(Record{OffsetDelta: 0, Key: []byte("k"), Value: []byte("v")}, Record{OffsetDelta: 1, Value: []byte("w")})
	tests := []struct {
		name  string
		raw   []byte
		count int32
		last  int32
		opts  ValidateOptions
	}{
		{"valid", good, 2, 1, ValidateOptions{}},
		{"missing key", good, 2, 1, ValidateOptions{RequireKeys: true}},
		{"one record short", good, 3, 2, ValidateOptions{}},
		{"trailing bytes", append(append([]byte{}, good...), 0), 2, 1, ValidateOptions{}},
		{"truncated", good[:len(good)-2], 2, 1, ValidateOptions{}},
		{"offset delta out of order", rawRecords(Record{OffsetDelta: 1}, Record{OffsetDelta: 0}), 2, 1, ValidateOptions{}},
		{"length past the end", append([]byte{0x7e}, good...), 2, 1, ValidateOptions{}},
	}
	kind := func(err error) string {
		switch {
		case err == nil:
			return "ok"
		case IsCorrupt(err):
			return "corrupt"
		case errors.Is(err, ErrMissingKey):
			return "missing key"
		case errors.Is(err, ErrInvalidRecord):
			return "invalid"
		}
		return err.Error()
	}
	for _, tt := range tests {
		_, plainErr := assemble(t, CodecNone, tt.count, tt.last, tt.raw).Validate(tt.opts)
		for _, c := range []Codec{CodecGzip, CodecSnappy, CodecLZ4, CodecZstd} {
			_, err := assemble(t, c, tt.count, tt.last, tt.raw).Validate(tt.opts)
			if kind(err) != kind(plainErr) {
				t.Errorf("%s, %s: %v; uncompressed: %v", tt.name, c, err, plainErr)
			}
		}
	}
}

// TestValidateCompressedAllocatesNothingPerRecord: the streaming check's
// allocations do not grow with the batch's record count (a per-record
// allocation on the produce path was 4 per record once).
func TestValidateCompressedAllocatesNothingPerRecord(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops at random under -race")
	}
	recs := make([]Record, 500)
	for i := range recs {
		recs[i] = Record{OffsetDelta: int32(i), Key: []byte("k"), Value: []byte("value"), Headers: []Header{{Key: "h", Value: []byte("v")}}}
	}
	for _, c := range []Codec{CodecGzip, CodecSnappy, CodecLZ4, CodecZstd} {
		b := assemble(t, c, int32(len(recs)), int32(len(recs)-1), rawRecords(recs...))
		if _, err := b.Validate(ValidateOptions{}); err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		if n := testing.AllocsPerRun(20, func() { b.Validate(ValidateOptions{}) }); n > 8 {
			t.Errorf("%s: %.0f allocations per Validate of %d records, want a few whatever the count", c, n, len(recs))
		}
	}
}
