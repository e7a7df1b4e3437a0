package storage

import (
	"bytes"
	"errors"
	"samsa/internal/vfs"
	"testing"
)

func TestAppendReadRoundTripAcrossSegments(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		m := openManager(t, fs, dir, nil)
		defer m.Close()
		l, err := m.Create(testTP, [16]byte{1}, smallConfig())
		if err != nil {
			t.Fatal(err)
		}
		want := appendN(t, l, 0, 200, 1000)
		if n := len(segmentFiles(t, fs, l.Dir(), ".log")); n < 10 {
			t.Fatalf("%d segments, want many", n)
		}
		checkLog(t, l, want)

		// maxOffset cuts before the batch holding it.
		cut := want[50].base + 1
		got := readBytes(t, l, 0, 1<<40, cut, false)
		if !bytes.Equal(got, concat(want[:50])) {
			t.Fatalf("maxOffset cut: %d bytes, want %d", len(got), len(concat(want[:50])))
		}
		// maxBytes without minOneBatch returns nothing when the first batch
		// does not fit, and whole batches otherwise.
		if got := readBytes(t, l, 0, int64(len(want[0].bytes))-1, 1<<62, false); len(got) != 0 {
			t.Fatalf("maxBytes below first batch: %d bytes", len(got))
		}
		two := int64(len(want[10].bytes) + len(want[11].bytes))
		if got := readBytes(t, l, want[10].base, two+5, 1<<62, false); !bytes.Equal(got, concat(want[10:12])) {
			t.Fatalf("maxBytes two batches: %d bytes", len(got))
		}
		// At the log end: empty; past it: out of range.
		if got := readBytes(t, l, l.LogEndOffset(), 1<<20, 1<<62, true); len(got) != 0 {
			t.Fatalf("read at LEO: %d bytes", len(got))
		}
		if _, err := l.Read(l.LogEndOffset()+1, 1<<20, 1<<62, true); !errors.Is(err, ErrOffsetOutOfRange) {
			t.Fatalf("read past LEO: %v", err)
		}
	})
}
