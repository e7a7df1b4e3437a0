package txn

import (
	"bytes"
	"reflect"
	"testing"
)

// FuzzUnmarshalSnapshot feeds arbitrary bytes to UnmarshalSnapshot.
// Invariants:
//   - it never panics;
//   - it either fails with ErrCorruptSnapshot or returns a state whose
//     snapshot re-encodes to exactly the input bytes (the format has one
//     encoding per state; a version 1 input re-encodes as version 2, which
//     decodes to the same state);
//   - a decoded state obeys the window invariants (at most WindowSize
//     batches per producer).
func FuzzUnmarshalSnapshot(f *testing.F) {
	f.Add([]byte{})
	f.Add(NewState().MarshalSnapshot())
	f.Add(sampleState().MarshalSnapshot())
	f.Add(stateAt(3).MarshalSnapshot())
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := UnmarshalSnapshot(b)
		if err != nil {
			if s != nil {
				t.Fatalf("state %v with error %v", s, err)
			}
			return
		}
		again := s.MarshalSnapshot()
		if b[5] == snapshotVersionV1 {
			// An old version is written back as the current one.
			b = again
		}
		if !bytes.Equal(again, b) {
			t.Fatalf("re-encoding differs:\n got %x\nwant %x", again, b)
		}
		s2, err := UnmarshalSnapshot(again)
		if err != nil || !reflect.DeepEqual(s2.Producers(), s.Producers()) {
			t.Fatalf("second decode: %v", err)
		}
		for _, p := range s.Producers() {
			if len(p.Batches) > WindowSize {
				t.Fatalf("producer %d has %d batches", p.ID, len(p.Batches))
			}
		}
	})
}
