package record

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// streamBufSize is the buffer the records of a compressed batch are read
// through when it is validated: what Validate holds of the decompressed
// output at any time, whatever the compression ratio.
const streamBufSize = 32 << 10

var streamReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, streamBufSize) }}

// validateCompressed is scanRecords for a compressed records section: it
// reads the records through codec c's decompressor and a fixed buffer,
// skipping keys, values and headers rather than holding them, so memory
// stays bounded by the buffer and the decompressor's window whatever the
// ratio. It fails with ErrDecompressedTooLarge once the records would need
// more than max decompressed bytes (which bounds the CPU a compression
// bomb costs). With requireKeys a record without a key fails with
// ErrMissingKey.
func validateCompressed(c Codec, src []byte, n int32, strict bool, lastDelta int32, requireKeys bool, max int64) (ts tsRange, err error) {
	r, release, err := decompressor(c, src, max)
	if err != nil {
		return tsRange{}, err
	}
	defer release()
	br := streamReaders.Get().(*bufio.Reader)
	br.Reset(r)
	defer func() {
		br.Reset(nil)
		streamReaders.Put(br)
	}()
	s := recordStream{r: br, left: max, name: c.String()}
	prev := int32(-1)
	for i := int32(0); i < n; i++ {
		s.open = false
		length, err := s.varint(i, "length")
		if err != nil {
			return tsRange{}, err
		}
		if length < minRecordBody {
			return tsRange{}, corruptf("record %d: length %d", i, length)
		}
		if int64(length) > s.left {
			return tsRange{}, ErrDecompressedTooLarge
		}
		s.open, s.rec = true, int64(length)
		if _, err := s.byte(i, "attributes"); err != nil {
			return tsRange{}, err
		}
		tsDelta, err := s.varlong(i, "timestampDelta")
		if err != nil {
			return tsRange{}, err
		}
		offDelta, err := s.varint(i, "offsetDelta")
		if err != nil {
			return tsRange{}, err
		}
		if err := checkOffsetDelta(i, offDelta, prev, lastDelta, strict); err != nil {
			return tsRange{}, err
		}
		prev = offDelta
		if i == 0 || tsDelta > ts.max {
			ts.max = tsDelta
		}
		if i == 0 || tsDelta < ts.min {
			ts.min = tsDelta
		}
		keyLen, err := s.bytes(i, "key", "key length", true)
		if err != nil {
			return tsRange{}, err
		}
		if requireKeys && keyLen < 0 {
			return tsRange{}, fmt.Errorf("%w: record %d", ErrMissingKey, i)
		}
		if _, err := s.bytes(i, "value", "value length", true); err != nil {
			return tsRange{}, err
		}
		hc, err := s.varint(i, "header count")
		if err != nil {
			return tsRange{}, err
		}
		if hc < 0 || int64(hc)*minHeaderSize > s.rec {
			return tsRange{}, corruptf("record %d: %d headers in %d bytes", i, hc, s.rec)
		}
		for range hc {
			if _, err := s.bytes(i, "header key", "header key length", false); err != nil {
				return tsRange{}, err
			}
			if _, err := s.bytes(i, "header value", "header value length", true); err != nil {
				return tsRange{}, err
			}
		}
		if s.rec != 0 {
			return tsRange{}, corruptf("record %d: %d bytes left over in a %d byte record", i, s.rec, length)
		}
	}
	switch _, err := br.ReadByte(); {
	case err == nil:
		return tsRange{}, corruptf("bytes after the last of %d records", n)
	case !errors.Is(err, io.EOF):
		return tsRange{}, s.readErr(n, err)
	}
	return ts, nil
}

// recordStream reads the fields of one record at a time from a
// decompressed records section.
type recordStream struct {
	r    *bufio.Reader
	left int64 // decompressed bytes the limit still allows
	open bool  // inside a record, whose length is known
	rec  int64 // bytes left in the open record
	name string
}

// readErr maps a read error inside record i: the section ending early or
// the decompressor failing is corruption.
func (s *recordStream) readErr(i int32, err error) error {
	if errors.Is(err, ErrDecompressedTooLarge) {
		return err
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return corruptf("record %d: records end early", i)
	}
	return corruptf("%s: %w", s.name, err)
}

// take accounts for k bytes of record i's field what.
func (s *recordStream) take(i int32, k int64, what string) error {
	if s.open && s.rec < k {
		return corruptf("record %d: bad %s length", i, what)
	}
	s.left -= k
	s.rec -= k
	return nil
}

func (s *recordStream) byte(i int32, what string) (byte, error) {
	if err := s.take(i, 1, what); err != nil {
		return 0, err
	}
	c, err := s.r.ReadByte()
	if err != nil {
		return 0, s.readErr(i, err)
	}
	return c, nil
}

// uvarint reads an unsigned varint of at most maxBytes bytes whose last
// byte carries at most lastMax, as readVarint and readVarlong accept.
func (s *recordStream) uvarint(i int32, what string, maxBytes int, lastMax byte) (uint64, error) {
	var ux uint64
	for k := range maxBytes {
		c, err := s.byte(i, what)
		if err != nil {
			return 0, err
		}
		if k == maxBytes-1 && c > lastMax {
			return 0, corruptf("record %d: malformed %s", i, what)
		}
		ux |= uint64(c&0x7f) << (7 * k)
		if c < 0x80 {
			return ux, nil
		}
	}
	return 0, corruptf("record %d: malformed %s", i, what)
}

// varint reads a zigzag int32.
func (s *recordStream) varint(i int32, what string) (int32, error) {
	ux, err := s.uvarint(i, what, 5, 0x0f)
	if err != nil {
		return 0, err
	}
	u := uint32(ux)
	return int32(u>>1) ^ -int32(u&1), nil
}

func (s *recordStream) varlong(i int32, what string) (int64, error) {
	ux, err := s.uvarint(i, what, 10, 0x01)
	if err != nil {
		return 0, err
	}
	return int64(ux>>1) ^ -int64(ux&1), nil
}

// bytes reads a length (-1 for null when nullable) and skips that many
// bytes of the record; it returns the length. what and lenWhat name the
// field and its length in errors (two constants, so that nothing is
// built per record).
func (s *recordStream) bytes(i int32, what, lenWhat string, nullable bool) (int32, error) {
	l, err := s.varint(i, lenWhat)
	if err != nil {
		return 0, err
	}
	if l < 0 {
		if l == -1 && nullable {
			return l, nil
		}
		return 0, corruptf("record %d: bad %s length", i, what)
	}
	if err := s.take(i, int64(l), what); err != nil {
		return 0, err
	}
	if _, err := s.r.Discard(int(l)); err != nil {
		return 0, s.readErr(i, err)
	}
	return l, nil
}

// decompressor returns a reader of src decompressed with c, and the
// function that returns its decoder to its pool. Snappy decodes a block
// at a time (a raw block whole: snappy's format bounds its output to a
// small multiple of its input), capped by max.
func decompressor(c Codec, src []byte, max int64) (io.Reader, func(), error) {
	switch c {
	case CodecGzip:
		r, err := gzipReader(src)
		if err != nil {
			return nil, nil, err
		}
		return r, func() { gzipReaders.Put(r) }, nil
	case CodecLZ4:
		r := lz4Readers.Get().(*lz4.Reader)
		r.Reset(bytes.NewReader(src))
		return r, func() { r.Reset(nil); lz4Readers.Put(r) }, nil
	case CodecZstd:
		d := zstdDecoders.Get().(*zstd.Decoder)
		if err := d.Reset(bytes.NewReader(src)); err != nil {
			zstdDecoders.Put(d)
			return nil, nil, corruptf("zstd: %w", err)
		}
		return d, func() { _ = d.Reset(nil); zstdDecoders.Put(d) }, nil
	case CodecSnappy:
		bp := snappyBufs.Get().(*[]byte)
		release := func() {
			if cap(*bp) <= maxPooledSnappy {
				snappyBufs.Put(bp)
			}
		}
		if !bytes.HasPrefix(src, xerialMagic) {
			n, err := snappy.DecodedLen(src)
			if err != nil {
				release()
				return nil, nil, corruptf("snappy: %w", err)
			}
			if int64(n) > max {
				release()
				return nil, nil, ErrDecompressedTooLarge
			}
			if cap(*bp) < n {
				*bp = make([]byte, n)
			}
			out, err := snappy.Decode((*bp)[:n], src)
			if err != nil {
				release()
				return nil, nil, corruptf("snappy: %w", err)
			}
			return bytes.NewReader(out), release, nil
		}
		if len(src) < xerialHeaderSize {
			release()
			return nil, nil, corruptf("snappy: short xerial header")
		}
		x := &xerialReader{src: src[xerialHeaderSize:], max: max, out: *bp}
		return x, func() { *bp = x.out; release() }, nil
	}
	return nil, nil, fmt.Errorf("%w: %d", ErrUnsupportedCodec, int8(c))
}

// snappyBufs holds the buffers snappy blocks are decoded into (a raw
// block whole, the xerial chunks one at a time); a buffer above
// maxPooledSnappy is dropped rather than kept.
var snappyBufs = sync.Pool{New: func() any { return new([]byte) }}

const maxPooledSnappy = 4 << 20

// xerialReader decodes xerial-framed snappy one chunk at a time.
type xerialReader struct {
	src []byte
	buf []byte // the current chunk, decoded, not yet read
	max int64  // decoded bytes still allowed
	out []byte // buffer buf slices
}

func (x *xerialReader) Read(p []byte) (int, error) {
	for len(x.buf) == 0 {
		if len(x.src) == 0 {
			return 0, io.EOF
		}
		if len(x.src) < 4 {
			return 0, corruptf("snappy: short xerial chunk header")
		}
		n := int(binary.BigEndian.Uint32(x.src))
		x.src = x.src[4:]
		if n < 0 || n > len(x.src) {
			return 0, corruptf("snappy: xerial chunk of %d bytes with %d left", n, len(x.src))
		}
		chunk := x.src[:n]
		x.src = x.src[n:]
		dl, err := snappy.DecodedLen(chunk)
		if err != nil {
			return 0, corruptf("snappy: %w", err)
		}
		if int64(dl) > x.max {
			return 0, ErrDecompressedTooLarge
		}
		x.max -= int64(dl)
		if cap(x.out) < dl {
			x.out = make([]byte, dl)
		}
		if x.buf, err = snappy.Decode(x.out[:dl], chunk); err != nil {
			return 0, corruptf("snappy: %w", err)
		}
	}
	k := copy(p, x.buf)
	x.buf = x.buf[k:]
	return k, nil
}
