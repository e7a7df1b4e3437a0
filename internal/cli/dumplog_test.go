package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"samsa/internal/record"
)

// buildSegment returns a segment holding four batches at offsets 0, 3, 5
// and 6 that cover the header fields dump-log prints: plain, snappy, an
// idempotent transactional batch and a log-append-time batch.
func buildSegment(t *testing.T) []byte {
	t.Helper()
	var seg []byte
	add := func(bb *record.Builder, base int64, epoch int32, edit func(record.Batch)) {
		b, err := bb.Build()
		if err != nil {
			t.Fatal(err)
		}
		b.SetBaseOffset(base)
		b.SetLeaderEpoch(epoch)
		if edit != nil {
			edit(b)
		}
		seg = append(seg, b...)
	}

	bb := record.NewBuilder(record.CodecNone, 1700000000000)
	bb.Add(record.Record{Key: []byte("k1"), Value: []byte("hello"),
		Headers: []record.Header{{Key: "src", Value: []byte("cli")}, {Key: "empty", Value: nil}}})
	bb.Add(record.Record{TimestampDelta: 5, Value: []byte("null key")})
	bb.Add(record.Record{TimestampDelta: 9, Key: []byte("k\x00\xff"), Value: nil})
	add(bb, 0, 0, nil)

	bb = record.NewBuilder(record.CodecSnappy, 1700000001000)
	bb.Add(record.Record{Key: []byte("a"), Value: []byte(strings.Repeat("compressible ", 8))})
	bb.Add(record.Record{TimestampDelta: 1, Key: []byte("b"), Value: []byte("tail")})
	add(bb, 3, 1, nil)

	bb = record.NewBuilder(record.CodecNone, 1700000002000)
	bb.ProducerID, bb.ProducerEpoch, bb.BaseSequence = 4000, 2, 17
	bb.Transactional = true
	bb.Add(record.Record{Value: []byte("in a transaction")})
	add(bb, 5, 1, nil)

	bb = record.NewBuilder(record.CodecNone, 1700000003000)
	bb.Add(record.Record{Value: []byte("appended")})
	add(bb, 6, 2, func(b record.Batch) { b.SetLogAppendTime(1700000009999) })
	return seg
}

// dumpGolden runs dump-log on data written to a temporary file and returns
// the result with the directory replaced by DIR.
func dumpGolden(t *testing.T, data []byte, args ...string) result {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "00000000000000000000.log")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, "", append(append([]string{"dump-log"}, args...), path)...)
	r.stdout = strings.ReplaceAll(r.stdout, dir, "DIR")
	r.stderr = strings.ReplaceAll(r.stderr, dir, "DIR")
	return r
}

func TestDumpLogGolden(t *testing.T) {
	seg := buildSegment(t)
	tests := []struct {
		name   string
		data   func() []byte
		args   []string
		code   int
		stderr string
	}{
		{"batches", func() []byte { return seg }, nil, ExitOK, ""},
		{"print-data", func() []byte { return seg }, []string{"--print-data"}, ExitOK, ""},
		{"corrupt-crc", func() []byte {
			c := append([]byte(nil), seg...)
			c[len(c)-1] ^= 0xff // last byte of the last batch's last record
			return c
		}, []string{"--print-data"}, ExitFailure, "samsa: dump-log: DIR/00000000000000000000.log: 1 invalid batches\n"},
		{"torn-tail", func() []byte { return seg[:len(seg)-10] }, nil, ExitFailure,
			"samsa: dump-log: DIR/00000000000000000000.log: batch at position 324 is truncated: 66 of 76 bytes\n"},
		{"short-tail", func() []byte { return append(append([]byte(nil), seg...), 0, 0, 0) }, nil, ExitFailure,
			"samsa: dump-log: DIR/00000000000000000000.log: 3 trailing bytes at position 400 are not a whole batch\n"},
		{"bad-length", func() []byte {
			return append(append([]byte(nil), seg...), 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 3)
		}, nil, ExitFailure, "samsa: dump-log: DIR/00000000000000000000.log: batch at position 400 has impossible length 3\n"},
		{"empty", func() []byte { return nil }, nil, ExitOK, ""},
		// A file that is not a segment: the summary counts what could
		// not be read as invalid, as the error does.
		{"garbage", func() []byte { return []byte("this is not a log segment, just text\n") }, nil, ExitFailure,
			"samsa: dump-log: DIR/00000000000000000000.log: batch at position 0 has impossible length 1852797984\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := dumpGolden(t, tt.data(), tt.args...)
			if r.code != tt.code || r.stderr != tt.stderr {
				t.Fatalf("exit %d, stderr %q; want %d, %q", r.code, r.stderr, tt.code, tt.stderr)
			}
			checkGolden(t, "dump-log/"+tt.name+".golden", r.stdout)
		})
	}
}
