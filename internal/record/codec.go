package record

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Codec is a batch compression codec, attributes bits 0-2.
type Codec int8

const (
	CodecNone   Codec = 0
	CodecGzip   Codec = 1
	CodecSnappy Codec = 2
	CodecLZ4    Codec = 3
	CodecZstd   Codec = 4
)

// Codecs lists every codec, CodecNone first.
var Codecs = []Codec{CodecNone, CodecGzip, CodecSnappy, CodecLZ4, CodecZstd}

// String returns Kafka's name for the codec (compression.type).
func (c Codec) String() string {
	switch c {
	case CodecNone:
		return "none"
	case CodecGzip:
		return "gzip"
	case CodecSnappy:
		return "snappy"
	case CodecLZ4:
		return "lz4"
	case CodecZstd:
		return "zstd"
	}
	return fmt.Sprintf("codec(%d)", int8(c))
}

// DefaultMaxDecompressedBytes is the cap Decompress, Validate and Records
// use when given a cap <= 0.
const DefaultMaxDecompressedBytes = 64 << 20

// zstdMaxWindow bounds the history a zstd frame may ask for. Level 19
// without long mode uses an 8 MiB window, the largest a producer is likely
// to send; a frame that declares more is refused rather than trusted.
const zstdMaxWindow = 8 << 20

// xerialMagic starts a snappy stream framed the way the Java client's
// xerial SnappyOutputStream frames it: magic, version int32, compatible
// version int32, then chunks of (length int32, snappy block).
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

const (
	xerialHeaderSize = 16
	xerialChunk      = 32 << 10 // the Java client's default block size
)

var (
	gzipReaders sync.Pool // *gzip.Reader
	gzipWriters = sync.Pool{New: func() any {
		w, _ := gzip.NewWriterLevel(nil, gzip.DefaultCompression)
		return w
	}}
	lz4Readers = sync.Pool{New: func() any { return lz4.NewReader(nil) }}
	lz4Writers = sync.Pool{New: func() any {
		w := lz4.NewWriter(nil)
		// NB: Kafka's Java LZ4 stream reads only independent blocks of
		// 64 KiB to 4 MiB; 64 KiB keeps the writer's buffers small.
		_ = w.Apply(lz4.BlockSizeOption(lz4.Block64Kb), lz4.ConcurrencyOption(1))
		return w
	}}
	zstdDecoders = sync.Pool{New: func() any {
		// Concurrency 1 decodes synchronously in the caller's goroutine,
		// so a pooled decoder owns no goroutines and needs no Close.
		d, err := zstd.NewReader(nil,
			zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderLowmem(true),
			zstd.WithDecoderMaxWindow(zstdMaxWindow),
			zstd.WithDecoderMaxMemory(DefaultMaxDecompressedBytes+1))
		if err != nil {
			panic(err) // the options are constant
		}
		return d
	}}
	zstdEncoder = sync.OnceValue(func() *zstd.Encoder {
		// EncodeAll is safe for concurrent use and starts no goroutines.
		e, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
		if err != nil {
			panic(err)
		}
		return e
	})
)

// Compress appends the compressed form of src to dst and returns it. It is
// safe for concurrent use. Snappy output uses the xerial framing that every
// Kafka client reads. CodecNone appends src unchanged.
func Compress(c Codec, dst, src []byte) ([]byte, error) {
	switch c {
	case CodecNone:
		return append(dst, src...), nil
	case CodecGzip:
		buf := bytes.NewBuffer(dst)
		w := gzipWriters.Get().(*gzip.Writer)
		defer gzipWriters.Put(w)
		w.Reset(buf)
		if _, err := w.Write(src); err != nil {
			return dst, fmt.Errorf("record: gzip: %w", err)
		}
		if err := w.Close(); err != nil {
			return dst, fmt.Errorf("record: gzip: %w", err)
		}
		return buf.Bytes(), nil
	case CodecSnappy:
		return appendXerial(dst, src), nil
	case CodecLZ4:
		buf := bytes.NewBuffer(dst)
		w := lz4Writers.Get().(*lz4.Writer)
		defer lz4Writers.Put(w)
		w.Reset(buf)
		if _, err := w.Write(src); err != nil {
			return dst, fmt.Errorf("record: lz4: %w", err)
		}
		if err := w.Close(); err != nil {
			return dst, fmt.Errorf("record: lz4: %w", err)
		}
		return buf.Bytes(), nil
	case CodecZstd:
		return zstdEncoder().EncodeAll(src, dst), nil
	}
	return dst, fmt.Errorf("%w: %d", ErrUnsupportedCodec, int8(c))
}

// appendXerial appends src snappy-compressed in xerial framing.
func appendXerial(dst, src []byte) []byte {
	dst = append(dst, xerialMagic...)
	dst = binary.BigEndian.AppendUint32(dst, 1) // version
	dst = binary.BigEndian.AppendUint32(dst, 1) // compatible version
	for len(src) > 0 {
		n := min(len(src), xerialChunk)
		dst = slices.Grow(dst, 4+snappy.MaxEncodedLen(n))
		at := len(dst)
		enc := snappy.Encode(dst[at+4:cap(dst)], src[:n])
		binary.BigEndian.PutUint32(dst[at:at+4], uint32(len(enc)))
		dst = dst[:at+4+len(enc)]
		src = src[n:]
	}
	return dst
}

// Decompress returns src decompressed with codec c. It reads at most max
// bytes of output (DefaultMaxDecompressedBytes when max <= 0) and fails
// with ErrDecompressedTooLarge beyond that, so it never allocates much more
// than max whatever the input claims. Malformed input gives an error marked
// corrupt. For CodecNone it returns src itself. The caller owns the result.
// It is safe for concurrent use.
func Decompress(c Codec, src []byte, max int) ([]byte, error) {
	if max <= 0 {
		max = DefaultMaxDecompressedBytes
	}
	switch c {
	case CodecNone:
		if len(src) > max {
			return nil, ErrDecompressedTooLarge
		}
		return src, nil
	case CodecGzip:
		r, err := gzipReader(src)
		if err != nil {
			return nil, err
		}
		defer gzipReaders.Put(r)
		return readCapped(r, len(src), max, "gzip")
	case CodecSnappy:
		return decodeSnappy(src, max)
	case CodecLZ4:
		r := lz4Readers.Get().(*lz4.Reader)
		defer lz4Readers.Put(r)
		r.Reset(bytes.NewReader(src))
		out, err := readCapped(r, len(src), max, "lz4")
		r.Reset(nil)
		return out, err
	case CodecZstd:
		d := zstdDecoders.Get().(*zstd.Decoder)
		defer zstdDecoders.Put(d)
		if err := d.Reset(bytes.NewReader(src)); err != nil {
			return nil, corruptf("zstd: %w", err)
		}
		out, err := readCapped(d, len(src), max, "zstd")
		_ = d.Reset(nil)
		return out, err
	}
	return nil, fmt.Errorf("%w: %d", ErrUnsupportedCodec, int8(c))
}

// gzipReader returns a pooled gzip reader of src; put it back in
// gzipReaders when done. A bad header is corrupt.
func gzipReader(src []byte) (*gzip.Reader, error) {
	r, _ := gzipReaders.Get().(*gzip.Reader)
	var err error
	if r == nil {
		r, err = gzip.NewReader(bytes.NewReader(src))
	} else {
		err = r.Reset(bytes.NewReader(src))
	}
	if err != nil {
		return nil, corruptf("gzip: %w", err)
	}
	return r, nil
}

// readCapped reads r to the end into a buffer that grows from a guess based
// on the compressed size, failing once more than max bytes come out.
func readCapped(r io.Reader, srcLen, maxOut int, name string) ([]byte, error) {
	limit := int64(maxOut) + 1
	lr := io.LimitedReader{R: r, N: limit}
	buf := make([]byte, 0, min(limit, int64(max(4*srcLen, 512))))
	for {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, int(min(int64(cap(buf)), limit-int64(len(buf)))))
		}
		n, err := lr.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if len(buf) > maxOut {
			return nil, ErrDecompressedTooLarge
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, corruptf("%s: %w", name, err)
		}
	}
}

// decodeSnappy decodes xerial-framed or raw-block snappy. Each block's
// decoded length is checked against what remains of the cap before any
// output is allocated; the block decoder then checks the length exactly.
func decodeSnappy(src []byte, maxOut int) ([]byte, error) {
	if !bytes.HasPrefix(src, xerialMagic) {
		n, err := snappy.DecodedLen(src)
		if err != nil {
			return nil, corruptf("snappy: %w", err)
		}
		if n > maxOut {
			return nil, ErrDecompressedTooLarge
		}
		out, err := snappy.Decode(make([]byte, n), src)
		if err != nil {
			return nil, corruptf("snappy: %w", err)
		}
		return out, nil
	}
	if len(src) < xerialHeaderSize {
		return nil, corruptf("snappy: short xerial header")
	}
	src = src[xerialHeaderSize:]
	var out []byte
	for len(src) > 0 {
		if len(src) < 4 {
			return nil, corruptf("snappy: short xerial chunk header")
		}
		clen := binary.BigEndian.Uint32(src)
		src = src[4:]
		if uint64(clen) > uint64(len(src)) {
			return nil, corruptf("snappy: xerial chunk of %d bytes, %d left", clen, len(src))
		}
		chunk := src[:clen]
		src = src[clen:]
		n, err := snappy.DecodedLen(chunk)
		if err != nil {
			return nil, corruptf("snappy: %w", err)
		}
		if n > maxOut-len(out) {
			return nil, ErrDecompressedTooLarge
		}
		if cap(out)-len(out) < n {
			// Double rather than let append grow by 1.25x, so that
			// the garbage left behind stays near the output size.
			grown := make([]byte, len(out), min(max(2*cap(out), len(out)+n), maxOut))
			copy(grown, out)
			out = grown
		}
		dec, err := snappy.Decode(out[len(out):len(out)+n], chunk)
		if err != nil {
			return nil, corruptf("snappy: %w", err)
		}
		out = out[:len(out)+len(dec)]
	}
	if out == nil {
		out = []byte{}
	}
	return out, nil
}
