package server

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"net"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// Sizes of the per-connection frame and encode buffers.
const (
	// exactFrameMax is the largest frame read into a buffer of the declared
	// size at once; larger frames grow their buffer as bytes arrive, so a
	// client that declares a large frame and stalls does not pin it.
	exactFrameMax = 1 << 20
	// wholeFrameBudget is how many bytes of frames above exactFrameMax a
	// server reads into buffers of their declared size at once, all
	// connections together; past it they grow as bytes arrive.
	wholeFrameBudget = 256 << 20
	// scratchKeepMax is the largest encode buffer kept between responses.
	scratchKeepMax = 1 << 20
)

// errEmptyReply reports a Reply with none of its fields set.
var errEmptyReply = errors.New("server: handler returned an empty Reply")

// pending is a handled request whose reply is queued for the writer.
type pending struct {
	req   *Request
	reply Reply
	// after closes the connection once this reply is written.
	after closeAfter
	// open says that the connection was authenticated (or needs no
	// authentication) when the reply was queued; the writer sizes its
	// buffer by it.
	open bool
	// received is when the request's frame was read, handled when Handle
	// returned; zero when the server has no Observer.
	received, handled time.Time
	// queue is the time from received to Handle starting.
	queue time.Duration
	// slow is what the slow request log needs (slow.go); zero when it is
	// off.
	slow slowTiming
}

// conn is one client connection. The read goroutine (readLoop) owns
// reading and calling Handle, and is the only one to push on replies,
// which it closes when it exits. The write goroutine (writeLoop) owns writing and
// calling Wait; it closes the socket when it is done and, once the reader
// has exited too, removes the connection from the server.
type conn struct {
	s   *Server
	nc  net.Conn // a *tls.Conn on TLS listeners
	pub *Conn
	lc  *ListenerConfig
	// limitIP is the ip Config.Connections counts the connection under;
	// "" when it is not counted.
	limitIP string
	// auth is the authentication state; only the reader touches it.
	auth auth

	// ctx is passed to Handle and Wait; it ends when the connection closes.
	ctx    context.Context
	cancel context.CancelFunc

	replies *replyQueue
	// inflight counts replies handed to the writer and not yet written.
	inflight atomic.Int64
	// stopReading is set by Shutdown: the reader stops, the writer drains.
	readStopped atomic.Bool
	// readStop is closed with readStopped set, to wake a muted reader.
	readStop   chan struct{}
	readerDone chan struct{}
	// mutedUntil is the unix time in nanoseconds until which the reader
	// takes no request (Reply.Throttle); the reader and the writer move it
	// forward, never back.
	mutedUntil atomic.Int64
	closeOnce  sync.Once
}

func newConn(s *Server, nc net.Conn, lc *ListenerConfig) *conn {
	proto := lc.SecurityProtocol
	if proto == "" {
		proto = ProtocolPlaintext
	}
	pub := &Conn{Remote: nc.RemoteAddr(), Local: nc.LocalAddr(), Listener: lc.Name, SecurityProtocol: proto, Principal: Anonymous}
	if ta, ok := pub.Remote.(*net.TCPAddr); ok {
		pub.Host = ta.AddrPort().Addr().Unmap().String()
	}
	if lc.tls() {
		// No IO yet: the reader runs the handshake under a timeout.
		nc = tls.Server(nc, lc.TLS)
	}
	c := &conn{
		s:          s,
		nc:         nc,
		pub:        pub,
		lc:         lc,
		replies:    newReplyQueue(s.cfg.QueuedMaxRequests),
		readStop:   make(chan struct{}),
		readerDone: make(chan struct{}),
	}
	c.auth.lc = lc
	if lc.sasl() {
		c.auth.state = stateHandshake
	}
	c.ctx, c.cancel = context.WithCancel(s.ctx)
	return c
}

// close ends the connection at once: Handle and Wait contexts end, and
// blocked reads and writes fail. Safe to call many times from any
// goroutine.
func (c *conn) close() {
	c.closeOnce.Do(func() {
		c.cancel()
		c.nc.Close()
	})
}

// stopReading asks the reader to stop taking requests; replies already
// queued are still written.
func (c *conn) stopReading() {
	if c.readStopped.CompareAndSwap(false, true) {
		close(c.readStop)
	}
	c.nc.SetReadDeadline(time.Now())
}

// mute keeps the reader from taking a request for d from now.
func (c *conn) mute(d time.Duration) {
	if d <= 0 {
		return
	}
	until := time.Now().Add(d).UnixNano()
	for {
		cur := c.mutedUntil.Load()
		if cur >= until || c.mutedUntil.CompareAndSwap(cur, until) {
			return
		}
	}
}

// waitMuted blocks while the connection is muted. It reports false if the
// connection closed or the reader was asked to stop meanwhile.
func (c *conn) waitMuted() bool {
	for {
		d := time.Until(time.Unix(0, c.mutedUntil.Load()))
		if d <= 0 {
			return true
		}
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-c.ctx.Done():
			t.Stop()
			return false
		case <-c.readStop:
			t.Stop()
			return false
		}
	}
}

// deadliner moves a socket deadline forward. Setting a deadline costs a
// lock and a timer update, so it is moved only once a sixteenth of the
// timeout has passed since the last move: a connection is closed between
// timeout and timeout*17/16 after its last activity.
type deadliner struct{ last time.Time }

func (d *deadliner) extend(set func(time.Time) error, timeout time.Duration) {
	now := time.Now()
	if !d.last.IsZero() && now.Sub(d.last) < timeout/16 {
		return
	}
	d.last = now
	set(now.Add(timeout))
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func (c *conn) readLoop() {
	defer close(c.readerDone)
	defer c.replies.close()
	if err := c.handshakeTLS(); err != nil {
		c.close()
		return
	}
	// Pipelined small requests are read with one syscall; a large frame
	// bypasses the buffer.
	br := getReader(c.nc, c.bufferSize(c.auth.open()))
	defer func() { putReader(br) }()
	var deadline deadliner
	for {
		if c.readStopped.Load() || !c.waitMuted() {
			return
		}
		if br.Size() < c.bufferSize(c.auth.open()) && br.Buffered() == 0 {
			// Authenticated: the full buffer from the next frame on. A
			// frame already buffered is read from the small one first.
			putReader(br)
			br = getReader(c.nc, c.bufferSize(true))
		}
		deadline.extend(c.nc.SetReadDeadline, c.s.cfg.IdleTimeout)
		// NB: checked again after setting the deadline, so that a
		// stopReading that ran before the Set above is not lost.
		if c.readStopped.Load() {
			return
		}
		frame, started, err := readFrame(br, c.auth.maxFrame(c.s.cfg.MaxRequestBytes), &c.s.wholeFrames)
		if err != nil {
			if c.readStopped.Load() {
				return
			}
			if !started && isTimeout(err) && c.inflight.Load() > 0 {
				// Idle only counts while nothing is in flight: a long
				// Wait keeps the connection active.
				deadline = deadliner{}
				continue
			}
			c.debug("read", err)
			c.close()
			return
		}
		c.s.bytesIn.Add(4 + int64(len(frame)))
		var received time.Time
		if c.s.obs != nil {
			received = time.Now()
		}
		// NB: a mute that the writer set while the reader waited for this
		// frame holds it back too.
		if !c.waitMuted() {
			return
		}
		if !c.serve(frame, received) {
			return
		}
	}
}

// readFrame reads one frame: a 4-byte big-endian size, checked to lie in
// 1..max before anything is allocated, then that many bytes. started
// reports whether any byte was read, so that an idle timeout between
// frames can be told from a stall inside one.
func readFrame(r io.Reader, max int32, whole *frameBudget) (frame []byte, started bool, err error) {
	var hdr [4]byte
	n, err := io.ReadFull(r, hdr[:])
	if err != nil {
		return nil, n > 0, err
	}
	size := int32(binary.BigEndian.Uint32(hdr[:]))
	if size <= 0 || size > max {
		return nil, true, fmt.Errorf("%w: %d (max %d)", ErrFrameSize, size, max)
	}
	frame, err = readFrameBody(r, int(size), whole)
	return frame, true, err
}

// frameBudget bounds the bytes that frames above exactFrameMax hold in
// buffers of their declared size while they arrive. A producer's request
// of many partitions is several MiB; reading it into its full buffer at
// once saves copying it through each size class on the way up, and the
// budget keeps clients that declare large frames and stall from pinning
// more than it, whatever their number: once it is spent, large frames grow
// as bytes arrive (readFrameBody).
type frameBudget struct{ left atomic.Int64 }

func (b *frameBudget) take(n int64) bool {
	for {
		l := b.left.Load()
		if l < n {
			return false
		}
		if b.left.CompareAndSwap(l, l-n) {
			return true
		}
	}
}

func (b *frameBudget) give(n int64) { b.left.Add(n) }

// readFrameBody reads a frame of size bytes. Up to exactFrameMax, or while
// the whole budget lasts, the buffer has the declared size from the start;
// beyond, it grows as bytes arrive, each step a buffer
// of the next size class, so memory stays within twice what the client has
// sent. The steps come from the frame pools and go back to them, so a large
// Produce request neither zeroes nor leaves for the collector the megabytes
// it passes through.
func readFrameBody(r io.Reader, size int, whole *frameBudget) ([]byte, error) {
	if size <= exactFrameMax || whole != nil && whole.take(int64(size)) {
		buf := getFrame(size)
		_, err := io.ReadFull(r, buf)
		if size > exactFrameMax {
			whole.give(int64(size))
		}
		return buf, err
	}
	buf := getFrame(exactFrameMax)[:0]
	for len(buf) < size {
		if len(buf) == cap(buf) {
			nb := getFrame(min(2*cap(buf), size))[:len(buf)]
			copy(nb, buf)
			putFrame(buf)
			buf = nb
		}
		n, err := r.Read(buf[len(buf):min(cap(buf), size)])
		buf = buf[:len(buf)+n]
		if err != nil {
			if err == io.EOF && len(buf) < size {
				err = io.ErrUnexpectedEOF
			}
			if len(buf) < size {
				putFrame(buf)
				return nil, err
			}
		}
	}
	return buf, nil
}

// serve decodes and handles one frame and queues its reply. It reports
// whether the reader should go on.
func (c *conn) serve(frame []byte, received time.Time) (ok bool) {
	var req *Request
	defer func() {
		if v := recover(); v != nil {
			c.recovered("handle", req, v)
			ok = false
		}
	}()
	if c.auth.state == stateRawToken {
		reply, after := c.serveRawToken(frame)
		return c.queue(pending{req: &Request{APIKey: saslHandshakeKey}, reply: reply, after: after, received: received, handled: received})
	}
	req, err := DecodeRequest(frame, c.s.h.Versions)
	if err != nil {
		c.debug("decode", err)
		c.close()
		return false
	}
	c.s.countRequest(req.APIKey)
	reply, handled, after, err := c.serveAuth(req)
	if err != nil {
		c.s.log.Info("server: closing connection", "listener", c.lc.Name, "remote", c.pub.Remote, "err", err)
		c.close()
		return false
	}
	p := pending{req: req, after: after, received: received}
	if !handled {
		start := received
		if c.s.obs != nil || c.s.cfg.SlowRequest > 0 {
			start = time.Now()
		}
		reply = c.s.h.Handle(c.ctx, c.pub, req)
		p.slow = c.slowHandled(start)
		if req.APIKey == produceKey {
			putFrame(frame)
		}
		c.mute(reply.Throttle)
		if c.s.obs != nil {
			p.handled = time.Now()
			p.queue = start.Sub(received)
		}
	} else {
		p.handled = received
	}
	p.reply = reply
	p.after.close = p.after.close || reply.Close
	return c.queue(p)
}

// queue hands a reply to the writer. It reports whether the reader
// should go on: not once a reply that closes the connection is queued.
func (c *conn) queue(p pending) bool {
	p.open = c.auth.open()
	c.inflight.Add(1)
	if !c.replies.push(c.ctx.Done(), p) {
		return false
	}
	return !p.after.close
}

// produceKey is the API key of Produce, whose frames are recycled.
const produceKey = 0

// Frames of 4 KiB up to maxPooledFrame come from pools by power-of-two
// size class. Only Produce frames go back, and the steps a large frame grew
// through: a Produce handler copies the records into the log before Handle
// returns and keeps nothing that aliases the frame, while other decoded
// requests alias their frame (kmsg does not copy bytes fields) and may be
// retained, e.g. group member metadata. Smaller frames, most requests other
// than Produce, are allocated at their size: a small allocation costs no
// more than a pool round trip, and rounding them up to 4 KiB made every one
// of them clear 4 KiB that was never recycled. The classes reach 64 MiB, so
// a producer's request of several 1 MiB batches (franz-go's and the Java
// client's batches of many partitions in one request) is recycled too;
// frames above it, up to socket.request.max.bytes, are allocated. A
// sync.Pool lets go of buffers unused for two collections, so the pools
// hold about what the busiest moments used.
const (
	minFrameShift = 12
	maxFrameShift = 26
	frameClasses  = maxFrameShift - minFrameShift + 1 // 4 KiB .. 64 MiB
)

var framePools [frameClasses]sync.Pool

func frameClass(size int) int {
	if size <= 1<<minFrameShift {
		return 0
	}
	return bits.Len(uint(size-1)) - minFrameShift
}

// getFrame returns a buffer of size bytes (not zeroed).
func getFrame(size int) []byte {
	c := frameClass(size)
	if size < 1<<minFrameShift || c >= frameClasses {
		return make([]byte, size)
	}
	if v := framePools[c].Get(); v != nil {
		return (*v.(*[]byte))[:size]
	}
	return make([]byte, size, 1<<(c+minFrameShift))
}

// putFrame recycles a buffer from getFrame. The caller must hold no
// reference into it.
func putFrame(b []byte) {
	n := cap(b)
	if n < 1<<minFrameShift || n&(n-1) != 0 {
		return
	}
	c := frameClass(n)
	if c >= frameClasses {
		return
	}
	b = b[:0]
	framePools[c].Put(&b)
}

// recovered records a panic of the handler and closes the connection.
func (c *conn) recovered(where string, req *Request, v any) {
	c.s.panics.Add(1)
	args := []any{"where", where, "remote", c.pub.Remote, "panic", v, "stack", string(debug.Stack())}
	if req != nil {
		args = append(args, "api_key", req.APIKey, "api_version", req.APIVersion, "correlation_id", req.CorrelationID)
	}
	c.s.log.Error("server: recovered panic; closing connection", args...)
	c.close()
}

func (c *conn) debug(what string, err error) {
	c.s.log.Debug("server: closing connection", "remote", c.pub.Remote, "what", what, "err", err)
}

// countingWriter counts bytes written to the socket.
type countingWriter struct {
	w io.Writer
	n *atomic.Int64
}

func (cw countingWriter) Write(p []byte) (int, error) {
	n, err := cw.w.Write(p)
	cw.n.Add(int64(n))
	return n, err
}

func (c *conn) writeLoop() {
	// bw is taken at the first reply, and again, larger, at the first
	// reply after authentication.
	var bw *bufio.Writer
	defer func() {
		c.close()
		if bw != nil {
			putWriter(bw)
		}
		<-c.readerDone
		c.s.removeConn(c)
	}()
	var scratch []byte
	var deadline deadliner
	for {
		p, ok := c.replies.pop(c.ctx.Done())
		if !ok {
			if c.ctx.Err() == nil { // the reader is done and everything queued is written
				c.flush(bw, &deadline)
			}
			return
		}
		if size := c.bufferSize(p.open); bw == nil || bw.Size() < size {
			if err := c.flush(bw, &deadline); err != nil {
				return
			}
			if bw != nil {
				putWriter(bw)
			}
			bw = getWriter(countingWriter{c.nc, &c.s.bytesOut}, size)
		}
		obs := c.s.obs
		var t RequestTimes
		var mark time.Time
		if obs != nil {
			mark = time.Now()
			t.Queue = p.queue
			t.Local = p.handled.Sub(p.received) - p.queue
			t.ResponseQueue = mark.Sub(p.handled)
		}
		r := p.reply
		t.Throttle = r.Throttle
		for r.Wait != nil {
			// Earlier responses go out before waiting: Wait may block for
			// a long time (a Fetch long-poll).
			if bw.Buffered() > 0 {
				if err := c.flush(bw, &deadline); err != nil {
					return
				}
			}
			if obs != nil || p.slow.on {
				mark = time.Now()
			}
			if r, ok = c.wait(p.req, r.Wait); !ok || c.ctx.Err() != nil {
				return
			}
			if obs != nil {
				t.Remote += time.Since(mark)
			}
			p.slow.waited(mark, r.Parked)
			t.Throttle += r.Throttle
			c.mute(r.Throttle)
		}
		c.logIfSlow(&p)
		if d := p.after.delay; d > 0 {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-c.ctx.Done():
				t.Stop()
				return
			}
		}
		if obs != nil {
			mark = time.Now()
		}
		deadline.extend(c.nc.SetWriteDeadline, c.s.cfg.IdleTimeout)
		err := c.writeReply(bw, p.req, r, &scratch)
		c.inflight.Add(-1)
		if err != nil {
			c.debug("write", err)
			return
		}
		if p.after.close {
			c.flush(bw, &deadline)
			return
		}
		if c.replies.len() == 0 {
			if err := c.flush(bw, &deadline); err != nil {
				return
			}
		}
		if obs != nil {
			now := time.Now()
			t.Send = now.Sub(mark)
			t.Total = now.Sub(p.received)
			obs.ObserveRequest(p.req.APIKey, t)
			observeErrors(obs, p.req.APIKey, r)
		}
	}
}

// flush writes what bw holds; bw may be nil.
func (c *conn) flush(bw *bufio.Writer, deadline *deadliner) error {
	if bw == nil || bw.Buffered() == 0 {
		return nil
	}
	deadline.extend(c.nc.SetWriteDeadline, c.s.cfg.IdleTimeout)
	err := bw.Flush()
	if err != nil {
		c.debug("flush", err)
	}
	return err
}

// wait calls f, recovering a panic (which closes the connection).
func (c *conn) wait(req *Request, f func(context.Context) Reply) (r Reply, ok bool) {
	defer func() {
		if v := recover(); v != nil {
			c.recovered("wait", req, v)
			ok = false
		}
	}()
	return f(c.ctx), true
}

// writeReply encodes one response: size, correlation id, for flexible
// versions except ApiVersions an empty tag section, then the body.
func (c *conn) writeReply(bw *bufio.Writer, req *Request, r Reply, scratch *[]byte) error {
	if r.None {
		return nil
	}
	if r.raw != nil {
		buf := binary.BigEndian.AppendUint32((*scratch)[:0], uint32(len(r.raw)))
		buf = append(buf, r.raw...)
		_, err := bw.Write(buf)
		return err
	}
	version := req.APIVersion
	flexible := req.Body.IsFlexible()
	if req.UnsupportedVersion {
		version, flexible = 0, false
	}
	if req.APIKey == apiVersionsKey {
		flexible = false // ApiVersions responses always use header v0
	}
	buf := (*scratch)[:0]
	buf = append(buf, 0, 0, 0, 0)
	buf = binary.BigEndian.AppendUint32(buf, uint32(req.CorrelationID))
	if flexible {
		buf = append(buf, 0)
	}
	switch {
	case r.Msg != nil:
		r.Msg.SetVersion(version)
		buf = r.Msg.AppendTo(buf)
		if len(buf)-4 > int(^uint32(0)>>1) {
			return fmt.Errorf("server: response of %d bytes", len(buf))
		}
		binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
		if _, err := bw.Write(buf); err != nil {
			return err
		}
	case r.Body != nil:
		n := r.Body.Len()
		binary.BigEndian.PutUint32(buf, uint32(len(buf)-4+n))
		if _, err := bw.Write(buf); err != nil {
			return err
		}
		if err := bw.Flush(); err != nil {
			return err
		}
		written, err := r.Body.WriteTo(c.nc)
		c.s.bytesOut.Add(written)
		if err != nil {
			return fmt.Errorf("server: write body: %w", err)
		}
		if written != int64(n) {
			return fmt.Errorf("server: body wrote %d bytes, declared %d", written, n)
		}
	default:
		return errEmptyReply
	}
	if cap(buf) <= scratchKeepMax {
		*scratch = buf
	} else {
		*scratch = nil
	}
	return nil
}
