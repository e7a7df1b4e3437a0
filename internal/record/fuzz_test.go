package record

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

var writeSeeds = flag.Bool("write-seeds", false, "rewrite the committed seeds under testdata/fuzz")

// fuzzCap is the decompression cap FuzzValidate uses.
const fuzzCap = 1 << 20

// FuzzValidate checks, for any input:
//   - Validate and Records never panic;
//   - allocation stays within a few times the input plus the cap;
//   - a batch that validates has Records that succeed, count what the
//     header says, carry offset deltas 0..n-1, and whose largest timestamp
//     is ValidationInfo.MaxTimestamp.
func FuzzValidate(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		b := Batch(data)
		info, err := b.Validate(ValidateOptions{MaxDecompressedBytes: fuzzCap, FromClient: true})
		_, _ = b.Validate(ValidateOptions{MaxDecompressedBytes: fuzzCap, AllowCompacted: true})
		runtime.ReadMemStats(&after)
		if got, bound := after.TotalAlloc-before.TotalAlloc, uint64(8*len(data)+8*fuzzCap); got > bound {
			t.Fatalf("Validate allocated %d bytes for %d input bytes", got, len(data))
		}
		_, _ = b.Records(fuzzCap) // must not panic whatever the input
		if err != nil {
			return
		}
		recs, err := b.Records(fuzzCap)
		if err != nil {
			t.Fatalf("valid batch, Records: %v", err)
		}
		if int32(len(recs)) != info.NumRecords || info.NumRecords != b.NumRecords() {
			t.Fatalf("%d records, info %d, header %d", len(recs), info.NumRecords, b.NumRecords())
		}
		maxTs := recs[0].TimestampDelta
		for i, r := range recs {
			if r.OffsetDelta != int32(i) {
				t.Fatalf("record %d offsetDelta %d", i, r.OffsetDelta)
			}
			maxTs = max(maxTs, r.TimestampDelta)
		}
		if b.BaseTimestamp()+maxTs != info.MaxTimestamp {
			t.Fatalf("MaxTimestamp %d, records say %d", info.MaxTimestamp, b.BaseTimestamp()+maxTs)
		}
	})
}

// fuzzSeeds are a few valid batches per codec and some corrupt ones. They
// are also committed under testdata/fuzz/FuzzValidate (see -write-seeds).
func fuzzSeeds(tb testing.TB) [][]byte {
	var seeds [][]byte
	for _, c := range Codecs {
		seeds = append(seeds, mustBuild(tb, NewBuilder(c, 1_700_000_000_000), sampleRecords()))
		seeds = append(seeds, mustBuild(tb, NewBuilder(c, 5), []Record{{Value: []byte("one")}}))
	}
	good := mustBuild(tb, NewBuilder(CodecNone, 1000), threeRecords())
	flip := bytes.Clone(good)
	flip[len(flip)-3] ^= 0xff
	seeds = append(seeds,
		flip, // bad crc
		mutate(good, func(b Batch) { b[16] = 1 }), // bad magic
		assemble(tb, CodecNone, 4, 3, rawRecords(threeRecords()...)),
		assemble(tb, CodecNone, 3, 2, append(rawRecords(threeRecords()...), 0)),
		assemble(tb, CodecGzip, 1<<30, 1<<30-1, rawRecords(threeRecords()...)),
		good[:HeaderSize+3],
	)
	return seeds
}

func TestWriteFuzzSeeds(t *testing.T) {
	if !*writeSeeds {
		t.Skip("run with -write-seeds to rewrite the committed corpus")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzValidate")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i, s := range fuzzSeeds(t) {
		body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", s)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed-%02d", i)), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
