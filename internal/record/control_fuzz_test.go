package record

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// FuzzEndTxnMarker checks, for any key and value of a control record:
//   - ParseEndTxnMarker never panics and fails only with its sentinels;
//   - a parsed marker re-encodes (version 0) to a key and value that parse
//     to the same marker;
//   - a control batch carrying the key and value gives, through
//     Batch.EndTxnMarker, the same marker or the same sentinel;
//   - Batch.EndTxnMarker never panics on the raw key bytes taken as a batch.
func FuzzEndTxnMarker(f *testing.F) {
	for _, s := range endTxnMarkerSeeds() {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, key, value []byte) {
		_, _ = Batch(key).EndTxnMarker(fuzzCap)
		m, err := ParseEndTxnMarker(key, value)
		if err != nil {
			if !errors.Is(err, ErrBadControlKey) && !errors.Is(err, ErrNotEndTxnMarker) && !errors.Is(err, ErrBadEndTxnMarker) {
				t.Fatalf("unexpected error %v", err)
			}
		} else {
			again, err := ParseEndTxnMarker(m.AppendKey(nil), m.AppendValue(nil))
			if err != nil || again != m {
				t.Fatalf("re-encoded %+v parses to %+v, %v", m, again, err)
			}
		}
		bb := &Builder{Control: true, Transactional: true, ProducerID: 1, BaseSequence: -1}
		bb.Add(Record{Key: key, Value: value})
		b, berr := bb.Build()
		if berr != nil {
			t.Fatalf("Build: %v", berr)
		}
		if _, verr := b.Validate(ValidateOptions{}); verr != nil {
			t.Fatalf("built control batch does not validate: %v", verr)
		}
		got, gerr := b.EndTxnMarker(fuzzCap)
		if got != m || (err == nil) != (gerr == nil) || (err != nil && err.Error() != gerr.Error()) {
			t.Fatalf("batch gives %+v, %v; record gives %+v, %v", got, gerr, m, err)
		}
	})
}

// endTxnMarkerSeeds are key/value pairs: both markers, forward-compatible
// versions, and each kind of malformed input. They are also committed under
// testdata/fuzz/FuzzEndTxnMarker (see -write-seeds).
func endTxnMarkerSeeds() [][2][]byte {
	return [][2][]byte{
		{{0, 0, 0, 0}, {0, 0, 0, 0, 0, 5}},
		{{0, 0, 0, 1}, {0, 0, 0x7f, 0xff, 0xff, 0xff}},
		{{0, 1, 0, 1, 9}, {0, 2, 0, 0, 0, 1, 9, 9}},
		{{0, 0, 0}, {0, 0, 0, 0, 0, 5}},
		{{0xff, 0xfe, 0, 1}, {0, 0, 0, 0, 0, 5}},
		{{0, 0, 0, 3}, {0, 0, 0, 0, 0, 5}},
		{{0, 0, 0, 1}, {0, 0, 0, 0, 5}},
		{{0, 0, 0, 1}, {0x80, 0, 0, 0, 0, 5}},
		{nil, nil},
	}
}

func TestWriteEndTxnMarkerFuzzSeeds(t *testing.T) {
	if !*writeSeeds {
		t.Skip("run with -write-seeds to rewrite the committed corpus")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzEndTxnMarker")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i, s := range endTxnMarkerSeeds() {
		body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n[]byte(%q)\n", s[0], s[1])
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed-%02d", i)), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
