package broker

import (
	"bytes"
	"testing"

	"samsa/internal/record"
	"samsa/internal/storage"
)

// TestBatchHeadersListsEveryBatch reads the headers of batches smaller
// and larger than the 64 KiB window, in two regions, and stops at a batch
// cut short.
func TestBatchHeadersListsEveryBatch(t *testing.T) {
	var file []byte
	type want struct {
		base, last int64
		pos, size  int64
	}
	var wants []want
	next := int64(0)
	for _, rb := range []struct{ n, size int }{{1, 10}, {3, 100}, {2, 70 << 10}, {1, 10}, {5, 200 << 10}, {2, 5}} {
		bb := record.NewBuilder(record.CodecNone, 1_700_000_000_000)
		for range rb.n {
			bb.Add(record.Record{Value: bytes.Repeat([]byte("v"), rb.size)})
		}
		b, err := bb.Build()
		if err != nil {
			t.Fatal(err)
		}
		b.SetBaseOffset(next)
		wants = append(wants, want{next, next + int64(rb.n) - 1, int64(len(file)), int64(len(b))})
		next += int64(rb.n)
		file = append(file, b...)
	}
	f := fileOf(t, file)

	h := newBatchHeaders()
	defer h.release()
	split := wants[3].pos // two regions of one file, split between batches
	res := storage.ReadResult{Regions: []storage.Region{
		{File: f, Pos: 0, Size: split},
		{File: f, Pos: split, Size: int64(len(file)) - split},
	}}
	if err := h.read(res); err != nil {
		t.Fatal(err)
	}
	if len(h.headers) != len(wants) {
		t.Fatalf("%d headers, want %d", len(h.headers), len(wants))
	}
	for i, w := range wants {
		if got := h.headers[i]; got.BaseOffset() != w.base || got.LastOffset() != w.last {
			t.Errorf("batch %d: offsets %d-%d, want %d-%d", i, got.BaseOffset(), got.LastOffset(), w.base, w.last)
		}
		if r := h.regions[i]; r.Pos != w.pos || r.Size != w.size {
			t.Errorf("batch %d: region %d+%d, want %d+%d", i, r.Pos, r.Size, w.pos, w.size)
		}
	}

	// A read whose last batch is cut short lists the whole ones only.
	cut := storage.ReadResult{Regions: []storage.Region{{File: f, Pos: 0, Size: wants[2].pos + wants[2].size/2}}}
	if err := h.read(cut); err != nil {
		t.Fatal(err)
	}
	if len(h.headers) != 2 || h.headers[1].BaseOffset() != wants[1].base {
		t.Fatalf("cut read: %d headers", len(h.headers))
	}

	// A region cut short ends the list: the next region's batches are
	// not listed after the gap.
	gap := storage.ReadResult{Regions: []storage.Region{
		{File: f, Pos: 0, Size: wants[1].pos + wants[1].size/2},
		{File: f, Pos: wants[2].pos, Size: int64(len(file)) - wants[2].pos},
	}}
	if err := h.read(gap); err != nil {
		t.Fatal(err)
	}
	if len(h.headers) != 1 || h.headers[0].BaseOffset() != wants[0].base {
		t.Fatalf("read with a cut region: %d headers", len(h.headers))
	}
	if err := h.read(cut); err != nil {
		t.Fatal(err)
	}

	// The batches of one read are answered as one region.
	var rs []storage.Region
	for _, r := range h.regions {
		rs = appendRegion(rs, r)
	}
	if len(rs) != 1 || rs[0].Pos != 0 || rs[0].Size != wants[2].pos {
		t.Fatalf("merged regions %+v", rs)
	}
	if rs = appendRegion(rs, storage.Region{File: f, Pos: wants[4].pos, Size: wants[4].size}); len(rs) != 2 {
		t.Fatalf("a region after a gap was merged: %+v", rs)
	}
}
