package testutil

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Proxy is a TCP fault proxy for Kafka connections: it listens on
// 127.0.0.1 and forwards every accepted connection to a target address,
// and tests inject faults into the traffic while it runs.
//
// The proxy reads Kafka framing (a 4-byte big-endian size, then the
// request) in both directions, so it can cut a connection exactly between
// a request and its response: the request reaches the broker whole and is
// applied, and its response never reaches the client. That is the case an
// idempotent producer's retry must survive without a duplicate.
//
// Faults:
//
//	DropAll                 close every proxied connection now
//	SetDropAfterRequests(n) cut the connection that forwards the n-th
//	                        request from now (counted over all connections)
//	SetDropProbability(p)   cut after each forwarded request with chance p
//	SetResponseDelay(d, j)  hold every broker->client frame d plus a random
//	                        0..j after it arrived (order is kept)
//	SetDropAPIKeys(k...)    only requests with these API keys are cut
//
// A cut closes the client side at once and keeps the broker side open
// until the broker has answered every request forwarded on it (or 5 s
// pass), so a cut never races the broker's read of the request it follows.
//
// Proxy is safe for concurrent use. Its goroutines (one accept loop, three
// per connection) are started by NewProxy and stopped by Close, which
// waits for them.
type Proxy struct {
	ln     net.Listener
	target atomic.Pointer[string]

	dropAfter atomic.Int64 // requests left until a cut; <= 0: off
	dropProb  atomic.Uint64
	delay     atomic.Int64 // time.Duration
	jitter    atomic.Int64 // time.Duration
	keysMask  atomic.Uint64
	keysSet   atomic.Bool

	cuts     atomic.Int64
	requests atomic.Int64
	accepted atomic.Int64

	stop chan struct{} // closed by Close: asks every goroutine to end
	wg   sync.WaitGroup

	mu struct {
		sync.Mutex
		conns  map[*proxyConn]struct{}
		closed bool
		rng    *rand.Rand
	}
}

// NewProxy starts a proxy forwarding to target. It is closed when the test
// ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	p, err := StartProxy(target)
	if err != nil {
		t.Fatalf("proxy: %v", err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// StartProxy starts a proxy forwarding to target. The caller must Close
// it.
func StartProxy(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("testutil: proxy listen: %w", err)
	}
	p := &Proxy{ln: ln, stop: make(chan struct{})}
	p.target.Store(&target)
	p.mu.conns = make(map[*proxyConn]struct{})
	p.mu.rng = rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0x5a3a))
	p.wg.Add(1)
	go p.acceptLoop()
	return p, nil
}

// Addr is the address clients connect to.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// SetTarget changes where new connections are forwarded; established
// ones stay. It lets a test start the proxy before the broker whose
// advertised address is the proxy's.
func (p *Proxy) SetTarget(target string) { p.target.Store(&target) }

// Dialer returns a dial function that connects to the proxy whatever
// address it is asked for, for kgo.Dialer: brokers advertise their own
// address in Metadata, and a client must not bypass the proxy by dialing
// it.
func (p *Proxy) Dialer() func(ctx context.Context, network, host string) (net.Conn, error) {
	var d net.Dialer
	return func(ctx context.Context, network, _ string) (net.Conn, error) {
		return d.DialContext(ctx, network, p.Addr())
	}
}

// DropAll closes every proxied connection now. New connections are
// accepted as before.
func (p *Proxy) DropAll() {
	p.mu.Lock()
	conns := make([]*proxyConn, 0, len(p.mu.conns))
	for c := range p.mu.conns {
		conns = append(conns, c)
	}
	p.mu.Unlock()
	for _, c := range conns {
		c.closeBoth()
	}
}

// SetDropAfterRequests arms a one-shot cut: the connection that forwards
// the n-th request from now on (counting all connections) is cut right
// after that request reaches the broker. n <= 0 disarms it.
func (p *Proxy) SetDropAfterRequests(n int) { p.dropAfter.Store(int64(n)) }

// SetDropProbability makes every forwarded request cut its connection
// with probability prob (0 turns random cuts off).
func (p *Proxy) SetDropProbability(prob float64) {
	p.dropProb.Store(uint64(prob * (1 << 32)))
}

// SetDropAPIKeys restricts cuts to requests with these API keys (for
// example 0, Produce). With no keys, any request may be cut.
func (p *Proxy) SetDropAPIKeys(keys ...int16) {
	var m uint64
	for _, k := range keys {
		if k >= 0 && k < 64 {
			m |= 1 << uint(k)
		}
	}
	p.keysMask.Store(m)
	p.keysSet.Store(len(keys) > 0)
}

// SetResponseDelay holds each broker->client frame until delay plus a
// random duration in [0, jitter) has passed since it arrived. Frames of
// one connection keep their order. Zero for both turns delays off.
func (p *Proxy) SetResponseDelay(delay, jitter time.Duration) {
	p.delay.Store(int64(delay))
	p.jitter.Store(int64(jitter))
}

// Cuts returns how many connections were cut after a request.
func (p *Proxy) Cuts() int64 { return p.cuts.Load() }

// Requests returns how many requests were forwarded to the target.
func (p *Proxy) Requests() int64 { return p.requests.Load() }

// Accepted returns how many client connections were accepted.
func (p *Proxy) Accepted() int64 { return p.accepted.Load() }

// Close stops accepting, closes every connection and waits for every
// goroutine of the proxy to exit. It is idempotent.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.mu.closed {
		p.mu.Unlock()
		return nil
	}
	p.mu.closed = true
	close(p.stop)
	p.mu.Unlock()
	err := p.ln.Close()
	p.DropAll()
	p.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

func (p *Proxy) acceptLoop() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.accepted.Add(1)
		broker, err := net.DialTimeout("tcp", *p.target.Load(), 5*time.Second)
		if err != nil {
			client.Close()
			continue
		}
		c := &proxyConn{
			p:      p,
			client: client,
			broker: broker,
			frames: make(chan delayedFrame, 64),
			done:   make(chan struct{}),
		}
		p.mu.Lock()
		if p.mu.closed {
			p.mu.Unlock()
			client.Close()
			broker.Close()
			return
		}
		p.mu.conns[c] = struct{}{}
		p.wg.Add(3)
		p.mu.Unlock()
		go c.forwardRequests()
		go c.readResponses()
		go c.writeResponses()
	}
}

// shouldCut decides, for one forwarded request with apiKey, whether its
// connection is cut after it.
func (p *Proxy) shouldCut(apiKey int16) bool {
	if p.keysSet.Load() && (apiKey < 0 || apiKey >= 64 || p.keysMask.Load()&(1<<uint(apiKey)) == 0) {
		return false
	}
	if p.dropAfter.Load() > 0 && p.dropAfter.Add(-1) == 0 {
		return true
	}
	if prob := p.dropProb.Load(); prob > 0 {
		p.mu.Lock()
		r := p.mu.rng.Uint32()
		p.mu.Unlock()
		return uint64(r) < prob
	}
	return false
}

// responseDelay returns how long to hold the next frame after it arrived.
func (p *Proxy) responseDelay() time.Duration {
	d := time.Duration(p.delay.Load())
	if j := time.Duration(p.jitter.Load()); j > 0 {
		p.mu.Lock()
		d += time.Duration(p.mu.rng.Int64N(int64(j)))
		p.mu.Unlock()
	}
	return d
}

func (p *Proxy) remove(c *proxyConn) {
	p.mu.Lock()
	delete(p.mu.conns, c)
	p.mu.Unlock()
}

// delayedFrame is one broker->client frame and when it may be written.
type delayedFrame struct {
	buf []byte
	at  time.Time
}

// proxyConn is one proxied connection. forwardRequests copies
// client->broker frame by frame; readResponses reads broker->client frames
// and hands them to writeResponses through frames, which holds them for
// the configured delay.
type proxyConn struct {
	p              *Proxy
	client, broker net.Conn

	frames chan delayedFrame // readResponses -> writeResponses
	done   chan struct{}     // closed by closeBoth

	sent     atomic.Int64 // requests forwarded to the broker
	answered atomic.Int64 // responses read from the broker
	cut      atomic.Bool  // the client side was cut; responses are discarded

	closeOnce sync.Once
}

// closeBoth closes both sides; every goroutine of the connection then
// ends.
func (c *proxyConn) closeBoth() {
	c.closeOnce.Do(func() {
		close(c.done)
		c.client.Close()
		c.broker.Close()
		c.p.remove(c)
	})
}

// maxProxyFrame bounds a frame the proxy will buffer.
const maxProxyFrame = 256 << 20

// readFrame reads one size-prefixed frame from r into a new buffer that
// includes the size.
func readFrame(r io.Reader) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if n < 0 || n > maxProxyFrame {
		return nil, fmt.Errorf("testutil: proxy: frame size %d", n)
	}
	buf := make([]byte, 4+int(n))
	copy(buf, size[:])
	if _, err := io.ReadFull(r, buf[4:]); err != nil {
		return nil, err
	}
	return buf, nil
}

func (c *proxyConn) forwardRequests() {
	defer c.p.wg.Done()
	for {
		buf, err := readFrame(c.client)
		if err != nil {
			if !c.cut.Load() {
				c.closeBoth()
			}
			return
		}
		apiKey := int16(-1)
		if len(buf) >= 6 {
			apiKey = int16(binary.BigEndian.Uint16(buf[4:6]))
		}
		// NB: count the request before marking a cut, so readResponses
		// waits for this request's answer before closing the broker side.
		c.sent.Add(1)
		c.p.requests.Add(1)
		cut := c.p.shouldCut(apiKey)
		if cut {
			// Mark the cut before the request leaves, so its response (or
			// one still in flight ahead of it) cannot slip through to the
			// client before the client side is closed.
			c.cut.Store(true)
		}
		if _, err := c.broker.Write(buf); err != nil {
			c.closeBoth()
			return
		}
		if cut {
			c.p.cuts.Add(1)
			c.cutClient()
			return
		}
	}
}

// cutClient closes the client side now and lets the broker side drain:
// readResponses closes both once every forwarded request is answered.
func (c *proxyConn) cutClient() {
	c.client.Close()
	// The broker gets no more requests; bound how long it may take to
	// answer the ones it has.
	_ = c.broker.SetReadDeadline(time.Now().Add(5 * time.Second))
	if c.answered.Load() >= c.sent.Load() {
		c.closeBoth()
	}
}

func (c *proxyConn) readResponses() {
	defer c.p.wg.Done()
	defer close(c.frames)
	for {
		if c.cut.Load() && c.answered.Load() >= c.sent.Load() {
			c.closeBoth()
			return
		}
		buf, err := readFrame(c.broker)
		if err != nil {
			c.closeBoth()
			return
		}
		c.answered.Add(1)
		if c.cut.Load() {
			continue
		}
		select {
		case c.frames <- delayedFrame{buf: buf, at: time.Now().Add(c.p.responseDelay())}:
		case <-c.done:
			return
		}
	}
}

func (c *proxyConn) writeResponses() {
	defer c.p.wg.Done()
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	var last time.Time
	for f := range c.frames {
		// Keep order: a frame is never written before the one ahead of it.
		at := f.at
		if at.Before(last) {
			at = last
		}
		last = at
		if d := time.Until(at); d > 0 {
			if timer == nil {
				timer = time.NewTimer(d)
			} else {
				timer.Reset(d)
			}
			select {
			case <-timer.C:
			case <-c.done:
				return
			}
		}
		if c.cut.Load() {
			continue
		}
		if _, err := c.client.Write(f.buf); err != nil {
			if !c.cut.Load() {
				c.closeBoth()
			}
			// Drain so readResponses never blocks on a full channel.
			for range c.frames {
			}
			return
		}
	}
}
