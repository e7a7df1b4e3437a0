package broker

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"syscall"

	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/storage"
)

// fetchBody is a Fetch response laid out as encoded bytes interleaved with
// segment file regions, so that record batches go from the page cache to the
// socket with sendfile and are never copied through user space. Its encoding
// is byte for byte what kmsg's FetchResponse.AppendTo produces for the same
// response (fetch_body_test.go checks every version), with each partition's
// RecordBatches taken from its regions.
//
// Tagged fields are always empty: samsa sets none of Fetch's tagged fields
// (DivergingEpoch, CurrentLeader, SnapshotID, NodeEndpoints).
type fetchBody struct {
	pieces []fetchPiece
	n      int
	// resp is the response encoded, for its error codes.
	resp *kmsg.FetchResponse
}

// ErrorCodes calls f with the response's error codes (server.ErrorCoder).
func (b *fetchBody) ErrorCodes(f func(code int16)) {
	if b.resp == nil {
		return
	}
	f(b.resp.ErrorCode)
	for i := range b.resp.Topics {
		for j := range b.resp.Topics[i].Partitions {
			f(b.resp.Topics[i].Partitions[j].ErrorCode)
		}
	}
}

// fetchPiece is either encoded bytes or one file region.
type fetchPiece struct {
	b      []byte
	region storage.Region
}

// fetchEncoder builds a fetchBody.
type fetchEncoder struct {
	body fetchBody
	cur  []byte
}

func (e *fetchEncoder) flushBytes() {
	if len(e.cur) > 0 {
		e.body.pieces = append(e.body.pieces, fetchPiece{b: e.cur})
		e.body.n += len(e.cur)
		e.cur = nil
	}
}

func (e *fetchEncoder) region(r storage.Region) {
	e.flushBytes()
	e.body.pieces = append(e.body.pieces, fetchPiece{region: r})
	e.body.n += int(r.Size)
}

func (e *fetchEncoder) i16(v int16) { e.cur = binary.BigEndian.AppendUint16(e.cur, uint16(v)) }
func (e *fetchEncoder) i32(v int32) { e.cur = binary.BigEndian.AppendUint32(e.cur, uint32(v)) }
func (e *fetchEncoder) i64(v int64) { e.cur = binary.BigEndian.AppendUint64(e.cur, uint64(v)) }
func (e *fetchEncoder) uvarint(v uint64) {
	e.cur = binary.AppendUvarint(e.cur, v)
}

// arrayLen writes an array length (compact in flexible versions); n < 0 is
// null.
func (e *fetchEncoder) arrayLen(flex bool, n int) {
	if flex {
		e.uvarint(uint64(n + 1))
	} else {
		e.i32(int32(n))
	}
}

func (e *fetchEncoder) str(flex bool, s string) {
	if flex {
		e.uvarint(uint64(len(s) + 1))
	} else {
		e.i16(int16(len(s)))
	}
	e.cur = append(e.cur, s...)
}

// regionsAt returns regions[i][j], or none when the layout has fewer.
func regionsAt(regions [][][]storage.Region, i, j int) []storage.Region {
	if i < len(regions) && j < len(regions[i]) {
		return regions[i][j]
	}
	return nil
}

// regionBytes writes a bytes field (compact in flexible versions) whose
// content is the file regions rs.
func (e *fetchEncoder) regionBytes(flex bool, rs []storage.Region) {
	var size int64
	for _, r := range rs {
		size += r.Size
	}
	if flex {
		e.uvarint(uint64(size + 1))
	} else {
		e.i32(int32(size))
	}
	for _, r := range rs {
		e.region(r)
	}
}

// nullableStr writes a compact nullable string.
func (e *fetchEncoder) nullableStr(s *string) {
	if s == nil {
		e.uvarint(0)
		return
	}
	e.str(true, *s)
}

// encodeFetchResponse lays out resp at its version. regions[i][j] are the
// record batches of resp.Topics[i].Partitions[j]; a partition's
// RecordBatches field is ignored.
func encodeFetchResponse(resp *kmsg.FetchResponse, regions [][][]storage.Region) *fetchBody {
	v := resp.Version
	flex := v >= 12
	e := &fetchEncoder{cur: make([]byte, 0, 256)}
	e.body.resp = resp
	if v >= 1 {
		e.i32(resp.ThrottleMillis)
	}
	if v >= 7 {
		e.i16(resp.ErrorCode)
		e.i32(resp.SessionID)
	}
	e.arrayLen(flex, len(resp.Topics))
	for i := range resp.Topics {
		t := &resp.Topics[i]
		if v < 13 {
			e.str(flex, t.Topic)
		} else {
			e.cur = append(e.cur, t.TopicID[:]...)
		}
		e.arrayLen(flex, len(t.Partitions))
		for j := range t.Partitions {
			p := &t.Partitions[j]
			e.i32(p.Partition)
			e.i16(p.ErrorCode)
			e.i64(p.HighWatermark)
			if v >= 4 {
				e.i64(p.LastStableOffset)
			}
			if v >= 5 {
				e.i64(p.LogStartOffset)
			}
			if v >= 4 {
				if p.AbortedTransactions == nil {
					e.arrayLen(flex, -1)
				} else {
					e.arrayLen(flex, len(p.AbortedTransactions))
					for _, a := range p.AbortedTransactions {
						e.i64(a.ProducerID)
						e.i64(a.FirstOffset)
						if flex {
							e.uvarint(0)
						}
					}
				}
			}
			if v >= 11 {
				e.i32(p.PreferredReadReplica)
			}
			e.regionBytes(flex, regionsAt(regions, i, j))
			if flex {
				e.uvarint(0) // partition tags
			}
		}
		if flex {
			e.uvarint(0) // topic tags
		}
	}
	if flex {
		e.uvarint(0) // response tags
	}
	e.flushBytes()
	return &e.body
}

// Len implements server.Body.
func (b *fetchBody) Len() int { return b.n }

// WriteTo implements server.Body: encoded pieces are written, regions go
// out with sendfile when w is a TCP connection and the file has a
// descriptor, else through a read into memory.
func (b *fetchBody) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for _, p := range b.pieces {
		var n int64
		var err error
		if p.b != nil {
			var k int
			k, err = w.Write(p.b)
			n = int64(k)
		} else {
			n, err = writeRegion(w, p.region)
		}
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// AppendTo appends the whole body to dst (for tests and non-socket writers).
func (b *fetchBody) AppendTo(dst []byte) ([]byte, error) {
	for _, p := range b.pieces {
		if p.b != nil {
			dst = append(dst, p.b...)
			continue
		}
		start := len(dst)
		dst = append(dst, make([]byte, p.region.Size)...)
		if _, err := p.region.File.ReadAt(dst[start:], p.region.Pos); err != nil {
			return dst, err
		}
	}
	return dst, nil
}

// copyBuffers are the buffers of region copies that cannot use sendfile
// (TLS listeners). 64 KiB is four TLS records.
var copyBuffers = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

// onlyWriter hides a writer's ReadFrom, so that io.CopyBuffer uses the
// pooled buffer instead of the writer's own copy loop.
type onlyWriter struct{ w io.Writer }

func (o onlyWriter) Write(p []byte) (int, error) { return o.w.Write(p) }

var errShortRegion = errors.New("broker: segment file shorter than the region read")

// writeRegion copies a file region to w, with sendfile(2) when possible.
// The offset is passed to sendfile, so the file's own offset is untouched
// and concurrent fetches of one segment do not interfere. The file's
// descriptor is used only inside its RawConn.Control, which keeps it from
// being closed (and its number reused by another file) meanwhile: a
// segment deleted under a slow fetch fails that fetch instead of sending
// another file's bytes.
func writeRegion(w io.Writer, r storage.Region) (int64, error) {
	tc, ok := w.(*net.TCPConn)
	fc, fok := r.File.(syscallConner)
	if !ok || !fok || r.File.Fd() == ^uintptr(0) {
		// TLS connections and files without a descriptor: a copy through
		// a pooled buffer (io.Copy would allocate one per region).
		bp := copyBuffers.Get().(*[]byte)
		defer copyBuffers.Put(bp)
		return io.CopyBuffer(onlyWriter{w}, io.NewSectionReader(r.File, r.Pos, r.Size), *bp)
	}
	sock, err := tc.SyscallConn()
	if err != nil {
		return 0, err
	}
	file, err := fc.SyscallConn()
	if err != nil {
		return 0, err
	}
	var written int64
	var serr error
	off, remain := r.Pos, r.Size
	werr := sock.Write(func(sfd uintptr) bool {
		again := false
		cerr := file.Control(func(ffd uintptr) {
			for remain > 0 {
				n, err := syscall.Sendfile(int(sfd), int(ffd), &off, int(min(remain, 1<<30)))
				if n > 0 {
					written += int64(n)
					remain -= int64(n)
				}
				switch {
				case err == syscall.EAGAIN:
					again = true // wait until the socket is writable
					return
				case err == syscall.EINTR:
					continue
				case err != nil:
					serr = err
					return
				case n == 0:
					serr = errShortRegion
					return
				}
			}
		})
		if cerr != nil && serr == nil {
			serr = cerr
		}
		return !again || serr != nil
	})
	if serr == nil {
		serr = werr
	}
	return written, serr
}

// syscallConner is a file whose descriptor can be used safely from
// syscalls (*os.File).
type syscallConner interface {
	SyscallConn() (syscall.RawConn, error)
}
