package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sync"

	"samsa/internal/record"
	"samsa/internal/vfs"
)

// ErrCorrupt marks a stored batch that failed its check on a read: a bad
// length, a magic other than 2, a CRC-32C mismatch, or offsets that do not
// fit the segment. It always comes wrapped in a *CorruptBatchError, which
// says where. The broker answers KAFKA_STORAGE_ERROR for the partition.
var ErrCorrupt = errors.New("storage: corrupt batch")

// CorruptBatchError is a batch of a segment that failed its check on a
// read (see Log.Read). It wraps ErrCorrupt and the reason.
type CorruptBatchError struct {
	TP TopicPartition
	// Segment is the path of the .log file, Position the batch's byte
	// position in it.
	Segment  string
	Position int64
	// Offset is an offset at or below the corrupt batch's first offset,
	// and above every good batch before it in the segment that the read
	// saw: truncating the log to Offset removes the batch. When the header
	// itself is damaged the batch's own base offset cannot be trusted, so
	// Offset is the end of the last good batch the read walked, or the
	// segment's base offset.
	Offset int64
	Reason error
}

func (e *CorruptBatchError) Error() string {
	return fmt.Sprintf("storage: corrupt batch in %s at position %d (offset %d or later) of %s-%d: %v",
		e.Segment, e.Position, e.Offset, e.TP.Topic, e.TP.Partition, e.Reason)
}

// Unwrap returns ErrCorrupt and the reason.
func (e *CorruptBatchError) Unwrap() []error { return []error{ErrCorrupt, e.Reason} }

// Reasons a stored batch fails its check, wrapped in a CorruptBatchError.
var (
	errBadMagic   = errors.New("magic is not 2")
	errBadCRC     = errors.New("crc mismatch")
	errBadOffsets = errors.New("offsets outside the segment or not increasing")
)

// CorruptBatches returns how many stored batches reads of this log dir
// found corrupt (samsa_log_corrupt_batches_total). A batch read again is
// counted again.
func (m *Manager) CorruptBatches() int64 { return m.corruptBatches.Load() }

// crcBufSize is the window a read checks batches through (batchWindow),
// so that checking a batch costs a fixed buffer whatever its declared
// length.
const crcBufSize = 64 << 10

var crcBufs = sync.Pool{New: func() any { b := make([]byte, crcBufSize); return &b }}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// batchCheck walks the batches a read returns and checks each one.
// The zero value is not usable; see newBatchCheck.
type batchCheck struct {
	seg *segment
	// limit is the first offset past the segment (the next segment's base
	// offset), or -1 for the last segment, whose end moves.
	limit int64
	// next is the end (last offset + 1) of the previous batch checked or
	// skipped in this segment, or the segment's base offset.
	next int64
}

func newBatchCheck(segs []*segment, i int) batchCheck {
	c := batchCheck{seg: segs[i], limit: -1, next: segs[i].baseOffset}
	if i+1 < len(segs) {
		c.limit = segs[i+1].baseOffset
	}
	return c
}

// skip records a batch the read passed over without returning it.
func (c *batchCheck) skip(h batchHeader) { c.next = max(c.next, h.lastOffset+1) }

// corrupt builds the error for the batch at pos.
func (c *batchCheck) corrupt(l *Log, pos int64, reason error) error {
	if l.m != nil {
		l.m.corruptBatches.Add(1)
	}
	return &CorruptBatchError{TP: l.tp, Segment: c.seg.path(logSuffix), Position: pos, Offset: c.next, Reason: reason}
}

// headerErr turns a header read error at pos into a CorruptBatchError if
// it is damage (a bad length, or one that runs past the data of a segment
// that is no longer written to), and leaves other errors alone. A short
// header at the end of the active segment is a race with nothing: Read
// only looks below the size Append published.
func (c *batchCheck) headerErr(l *Log, pos int64, err error) error {
	if record.IsCorrupt(err) || (errors.Is(err, errTornTail) && c.limit >= 0) {
		return c.corrupt(l, pos, err)
	}
	return nil
}

// check verifies the batch at pos with header h and raw header bytes hb:
// magic 2, offsets inside the segment and after the previous batch, and
// the CRC-32C over attributes..end, read through w (the segment's window,
// below end). hb may be w's own bytes: it is read before w moves.
func (c *batchCheck) check(l *Log, pos int64, h batchHeader, hb []byte, w *batchWindow, end int64) error {
	switch {
	case h.magic != 2:
		return c.corrupt(l, pos, fmt.Errorf("%w: %d", errBadMagic, h.magic))
	case h.baseOffset < c.next || (c.limit >= 0 && h.lastOffset >= c.limit):
		return c.corrupt(l, pos, fmt.Errorf("%w: batch %d..%d after offset %d, segment ends at %d",
			errBadOffsets, h.baseOffset, h.lastOffset, c.next, c.limit))
	}
	if l.skipVerify {
		c.next = h.lastOffset + 1
		return nil
	}
	want := binary.BigEndian.Uint32(hb[17:21])
	got, err := w.crc(pos+21, h.size-21, end)
	if err != nil {
		if errors.Is(err, io.EOF) && c.limit >= 0 {
			return c.corrupt(l, pos, err)
		}
		return err
	}
	if got != want {
		return c.corrupt(l, pos, fmt.Errorf("%w: stored %#08x, computed %#08x", errBadCRC, want, got))
	}
	c.next = h.lastOffset + 1
	return nil
}

// batchWindow is a read's view of one segment file through a pooled
// buffer: the headers it walks and the bytes it checksums come from a
// window read ahead of them, one pread for as many batches as fit in it,
// instead of a pread for each header and another for each batch's bytes.
// It never reads at or past the end it is given (the segment size the
// read loaded), so it sees only published bytes.
//
// A batchWindow belongs to one read; it is not safe for concurrent use.
type batchWindow struct {
	f     vfs.File
	pool  *[]byte // from crcBufs; buf is *pool
	buf   []byte
	start int64 // file position of buf[0]
	n     int64 // bytes of buf read
}

// windowMin is the least a window read takes, so that a read of one small
// batch still gets its neighbours' headers with it.
const windowMin = 8 << 10

// newBatchWindow takes a window's buffer from the pool; release gives it
// back.
func newBatchWindow() *batchWindow {
	p := crcBufs.Get().(*[]byte)
	return &batchWindow{pool: p, buf: *p}
}

// release returns the buffer to the pool; nothing read through w may be
// used after.
func (w *batchWindow) release() {
	w.buf = nil
	crcBufs.Put(w.pool)
}

// reset points the window at f, holding nothing.
func (w *batchWindow) reset(f vfs.File) { w.f, w.start, w.n = f, 0, 0 }

// fill reads a new window at pos: ahead bytes (at least windowMin, at most
// the buffer), below end.
func (w *batchWindow) fill(pos, ahead, end int64) error {
	n := min(max(ahead, windowMin), int64(len(w.buf)), end-pos)
	if n <= 0 {
		return io.EOF
	}
	k, err := w.f.ReadAt(w.buf[:n], pos)
	w.start, w.n = pos, int64(k)
	if int64(k) < n {
		if err == nil || errors.Is(err, io.EOF) {
			err = io.EOF
		}
		return err
	}
	return nil
}

// header returns the header of the batch at pos, which must end by end,
// and its raw bytes; ahead is how many bytes from pos the read may still
// look at. The bytes are the window's: valid until the next header or crc
// call moves it.
func (w *batchWindow) header(pos, ahead, end int64) (batchHeader, []byte, error) {
	if end-pos < scanHeaderSize {
		return batchHeader{}, nil, errTornTail
	}
	if pos < w.start || pos+scanHeaderSize > w.start+w.n {
		if err := w.fill(pos, max(ahead, scanHeaderSize), end); err != nil && w.n < scanHeaderSize {
			if errors.Is(err, io.EOF) {
				return batchHeader{}, nil, errTornTail
			}
			return batchHeader{}, nil, err
		}
	}
	hb := w.buf[pos-w.start : pos-w.start+scanHeaderSize]
	h, err := parseHeader(hb, pos, end)
	return h, hb, err
}

// crc returns the CRC-32C of the n bytes at pos, below end: what the
// window holds of them, then further windows.
func (w *batchWindow) crc(pos, n, end int64) (uint32, error) {
	var crc uint32
	for n > 0 {
		if pos < w.start || pos >= w.start+w.n {
			if err := w.fill(pos, n, end); err != nil && pos >= w.start+w.n {
				return 0, err
			}
		}
		k := min(n, w.start+w.n-pos)
		crc = crc32.Update(crc, castagnoli, w.buf[pos-w.start:pos-w.start+k])
		pos += k
		n -= k
	}
	return crc, nil
}
