package server

import (
	"bufio"
	"io"
	"sync"
)

// Sizes of the per-connection read and write buffers (see bufferSize).
const (
	// bufferSize is the size on plaintext listeners: pipelined small
	// requests are read, and their responses written, with one syscall.
	bufferSize = 64 << 10
	// tlsBufferSize is the size on TLS listeners, the most plaintext one
	// TLS record carries (RFC 8446 section 5.1): tls.Conn reads and
	// decrypts one record per Read, and writes each record with its own
	// syscall, so a larger buffer saves no syscall.
	tlsBufferSize = 16 << 10
	// authBufferSize is the size until a SASL listener's connection is
	// authenticated: the exchange is a few small frames, and a connection
	// that never authenticates holds little.
	authBufferSize = 4 << 10
)

// bufferSize is the size of the connection's read and write buffers,
// before authentication (open false) and after.
func (c *conn) bufferSize(open bool) int {
	switch {
	case !open:
		return authBufferSize
	case c.lc.tls():
		return tlsBufferSize
	default:
		return bufferSize
	}
}

// The read and write buffers come from pools, one per size, as net/http's
// server takes its bufio.Readers and Writers: a connection's goroutine
// gives its buffer back when it exits or moves to a larger one, so
// connections that come and go reuse buffers instead of clearing new ones,
// and a pool holds no buffer for long once connections stop coming (a
// sync.Pool is emptied over two garbage collections).
var readerPools, writerPools [3]sync.Pool

// bufferPool is the index in readerPools and writerPools of size, one of
// the sizes above.
func bufferPool(size int) int {
	switch size {
	case authBufferSize:
		return 0
	case tlsBufferSize:
		return 1
	case bufferSize:
		return 2
	}
	panic("server: no pool for a buffer of this size")
}

// getReader returns a reader of size bytes on r, which the caller owns
// until it gives it to putReader.
func getReader(r io.Reader, size int) *bufio.Reader {
	if v := readerPools[bufferPool(size)].Get(); v != nil {
		br := v.(*bufio.Reader)
		br.Reset(r)
		return br
	}
	return bufio.NewReaderSize(r, size)
}

// putReader recycles br, whose buffered data is dropped. The caller must
// not use br afterwards.
func putReader(br *bufio.Reader) {
	br.Reset(nil)
	readerPools[bufferPool(br.Size())].Put(br)
}

// getWriter returns a writer of size bytes to w, which the caller owns
// until it gives it to putWriter.
func getWriter(w io.Writer, size int) *bufio.Writer {
	if v := writerPools[bufferPool(size)].Get(); v != nil {
		bw := v.(*bufio.Writer)
		bw.Reset(w)
		return bw
	}
	return bufio.NewWriterSize(w, size)
}

// putWriter recycles bw, whose unflushed data is dropped. The caller must
// not use bw afterwards.
func putWriter(bw *bufio.Writer) {
	bw.Reset(nil)
	writerPools[bufferPool(bw.Size())].Put(bw)
}
