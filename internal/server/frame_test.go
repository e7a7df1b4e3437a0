package server

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"testing/iotest"
)

// framed returns size bytes of a pattern behind their 4-byte size.
func framed(size int, seed uint64) (frame, body []byte) {
	body = make([]byte, size)
	r := rand.New(rand.NewPCG(seed, seed))
	for i := range body {
		body[i] = byte(r.Uint32())
	}
	frame = binary.BigEndian.AppendUint32(nil, uint32(size))
	return append(frame, body...), body
}

// TestReadFrameReadsLargeFramesWhole reads frames around and far above
// exactFrameMax, back to back, through a reader that hands out a few bytes
// at a time: each comes back whole and exact, none takes a byte of the
// next, and recycling one does not change the next.
func TestReadFrameReadsLargeFramesWhole(t *testing.T) {
	t.Parallel()
	sizes := []int{1, 4095, 4096, 70_000, exactFrameMax - 1, exactFrameMax, exactFrameMax + 1, 3*exactFrameMax + 17, 9 << 20}
	var stream bytes.Buffer
	var bodies [][]byte
	for i, n := range sizes {
		f, b := framed(n, uint64(i+1))
		stream.Write(f)
		bodies = append(bodies, b)
	}
	for _, name := range []string{"bufio", "half", "bufio-whole", "half-whole"} {
		var r io.Reader = bufio.NewReaderSize(bytes.NewReader(stream.Bytes()), 64<<10)
		if strings.HasPrefix(name, "half") {
			r = iotest.HalfReader(bytes.NewReader(stream.Bytes()))
		}
		var whole *frameBudget
		if strings.HasSuffix(name, "whole") {
			whole = &frameBudget{}
			whole.left.Store(wholeFrameBudget)
		}
		for i, want := range bodies {
			got, _, err := readFrame(r, 100<<20, whole)
			if err != nil {
				t.Fatalf("%s: frame %d (%d bytes): %v", name, i, len(want), err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%s: frame %d (%d bytes): got %d bytes, not the ones sent", name, i, len(want), len(got))
			}
			putFrame(got)
		}
		if _, _, err := readFrame(r, 100<<20, whole); err != io.EOF {
			t.Fatalf("%s: after the last frame: %v, want EOF", name, err)
		}
		if whole != nil && whole.left.Load() != wholeFrameBudget {
			t.Fatalf("%s: %d bytes of the whole-frame budget left after the reads, want all %d", name, whole.left.Load(), wholeFrameBudget)
		}
	}
}

// TestReadFrameOfAStalledClientHoldsWhatArrived declares 64 MiB frames,
// sends 1.5 MiB of each and ends. Each read fails with ErrUnexpectedEOF
// and gives its budget back; once the whole-frame budget is spent by reads
// under way, a frame's buffer is no larger than twice what arrived.
func TestReadFrameOfAStalledClientHoldsWhatArrived(t *testing.T) {
	t.Parallel()
	sent := 3 << 19
	stalled := func(whole *frameBudget) *capReader {
		hdr := binary.BigEndian.AppendUint32(nil, 64<<20)
		cr := &capReader{r: io.MultiReader(bytes.NewReader(hdr), bytes.NewReader(make([]byte, sent)))}
		if _, _, err := readFrame(cr, 100<<20, whole); err != io.ErrUnexpectedEOF {
			t.Fatalf("read: %v, want ErrUnexpectedEOF", err)
		}
		return cr
	}
	whole := &frameBudget{}
	whole.left.Store(wholeFrameBudget)
	if cr := stalled(whole); cr.maxAsked != 64<<20 {
		t.Fatalf("within the budget a read was offered %d bytes, want the whole 64 MiB frame", cr.maxAsked)
	}
	if whole.left.Load() != wholeFrameBudget {
		t.Fatalf("a failed read kept %d bytes of the budget", wholeFrameBudget-whole.left.Load())
	}
	whole.left.Store(32 << 20) // the rest is held by other connections' reads
	for _, w := range []*frameBudget{whole, nil} {
		if cr := stalled(w); cr.maxAsked > 2*sent {
			t.Fatalf("past the budget a read was offered %d bytes after %d arrived", cr.maxAsked, sent)
		}
	}
	if whole.left.Load() != 32<<20 {
		t.Fatalf("a read that did not take the budget changed it to %d", whole.left.Load())
	}
}

// capReader records the largest buffer a Read was offered.
type capReader struct {
	r        io.Reader
	maxAsked int
}

func (c *capReader) Read(p []byte) (int, error) {
	c.maxAsked = max(c.maxAsked, len(p))
	return c.r.Read(p)
}

// BenchmarkReadFrameLarge reads an 8 MiB frame, the size of a request
// carrying 1 MiB batches for 8 partitions, and recycles it as a Produce
// frame is: whole (within the budget) and grown through the size classes.
func BenchmarkReadFrameLarge(b *testing.B) {
	f, _ := framed(8<<20, 1)
	for _, mode := range []string{"whole", "grown"} {
		b.Run(mode, func(b *testing.B) {
			var whole *frameBudget
			if mode == "whole" {
				whole = &frameBudget{}
				whole.left.Store(wholeFrameBudget)
			}
			rd := bytes.NewReader(f)
			b.SetBytes(int64(len(f)))
			b.ReportAllocs()
			for b.Loop() {
				rd.Reset(f)
				got, _, err := readFrame(rd, 100<<20, whole)
				if err != nil {
					b.Fatal(err)
				}
				putFrame(got)
			}
		})
	}
}
