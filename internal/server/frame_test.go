package server

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"io"
	"math/rand/v2"
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
	for _, name := range []string{"bufio", "half"} {
		var r io.Reader = bufio.NewReaderSize(bytes.NewReader(stream.Bytes()), 64<<10)
		if name == "half" {
			r = iotest.HalfReader(bytes.NewReader(stream.Bytes()))
		}
		for i, want := range bodies {
			got, _, err := readFrame(r, 100<<20)
			if err != nil {
				t.Fatalf("%s: frame %d (%d bytes): %v", name, i, len(want), err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%s: frame %d (%d bytes): got %d bytes, not the ones sent", name, i, len(want), len(got))
			}
			putFrame(got)
		}
		if _, _, err := readFrame(r, 100<<20); err != io.EOF {
			t.Fatalf("%s: after the last frame: %v, want EOF", name, err)
		}
	}
}

// TestReadFrameOfAStalledClientHoldsWhatArrived declares a 64 MiB frame,
// sends 1.5 MiB of it and ends: the read fails with ErrUnexpectedEOF and
// the buffer it grew to was no larger than twice what arrived.
func TestReadFrameOfAStalledClientHoldsWhatArrived(t *testing.T) {
	t.Parallel()
	sent := 3 << 19
	hdr := binary.BigEndian.AppendUint32(nil, 64<<20)
	cr := &capReader{r: io.MultiReader(bytes.NewReader(hdr), bytes.NewReader(make([]byte, sent)))}
	_, _, err := readFrame(cr, 100<<20)
	if err != io.ErrUnexpectedEOF {
		t.Fatalf("read: %v, want ErrUnexpectedEOF", err)
	}
	if cr.maxAsked > 2*sent {
		t.Fatalf("a read asked for %d bytes of buffer after %d arrived", cr.maxAsked, sent)
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
// frame is.
func BenchmarkReadFrameLarge(b *testing.B) {
	f, _ := framed(8<<20, 1)
	rd := bytes.NewReader(f)
	b.SetBytes(int64(len(f)))
	b.ReportAllocs()
	for b.Loop() {
		rd.Reset(f)
		got, _, err := readFrame(rd, 100<<20)
		if err != nil {
			b.Fatal(err)
		}
		putFrame(got)
	}
}
