package chaos

import (
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

// delayProxy is a Kafka-framing TCP proxy in the test process that
// delays chosen requests (TESTPLAN S-19: late requests). Unlike link, it
// reads every request frame of a connection:
//
//	size int32 | api_key int16 | api_version int16 | correlation_id int32 | client_id_len int16 | client_id | ...
//
// and asks its rule whether to hold the frame, and for how long, before
// forwarding it. Frames of one connection are forwarded in the order the
// client sent them: a held frame holds the ones behind it, as TCP would.
//
// What makes a held request late is that it is delivered even after the
// client gave up on it: when the client closes its connection (franz-go
// does on a request timeout, then retries elsewhere), the proxy keeps its
// connection to the broker open, forwards every frame the client had
// sent when each one is due, waits up to lateResponseWait for the
// broker's answers, and only then closes. Each request delivered after
// its client had closed the connection is recorded as a lateRequest with
// the broker's response, so a test can prove the fault happened and see
// what the broker made of it. Responses flow back to the client while it
// is connected and are dropped afterwards.
//
// Bounds: a frame's size is checked against delayMaxFrame before
// anything is allocated for it; at most delayQueue frames wait per
// connection (the client's reads then block); at most delayMaxLate late
// requests are kept (the counters go on counting).
//
// delayProxy is safe for concurrent use. Its goroutines (one accept loop,
// three per connection) are started by startDelayProxy and ended by
// close, which waits for them; the test's cleanup closes it.
type delayProxy struct {
	name   string
	ln     net.Listener
	target string
	rule   *delayRule

	stop chan struct{} // closed by close
	wg   sync.WaitGroup
	mu   struct {
		sync.Mutex
		conns  map[*delayConn]struct{}
		closed bool
		late   []lateRequest
	}
	// delayed counts held frames by api key, late those delivered after
	// their client had closed the connection.
	delayed, late [delayKeys]atomic.Int64
	// held counts the frames chosen for a delay and not yet forwarded.
	held atomic.Int64
}

// delayKeys bounds the api keys counted (Kafka's are below 100).
const delayKeys = 128

const (
	// delayMaxFrame bounds a request frame; larger ones close the
	// connection before anything is allocated.
	delayMaxFrame = 16 << 20
	// delayQueue bounds the frames waiting per connection.
	delayQueue = 256
	// delayMaxLate bounds the late requests kept.
	delayMaxLate = 10_000
	// lateResponseWait bounds how long the proxy waits for the broker to
	// answer the requests it delivered after the client left.
	lateResponseWait = 30 * time.Second
)

// delayRule decides which request frames a delayProxy holds: those with
// an api key in keys from a client id that clients matches, each with
// probability prob, for a time drawn uniformly from [min, max] by a
// generator seeded by the test. It is safe for concurrent use; mu guards
// rnd.
type delayRule struct {
	keys     map[int16]bool
	clients  func(clientID string) bool
	prob     float64
	min, max time.Duration

	mu  sync.Mutex
	rnd *rand.Rand
}

// newDelayRule returns a rule drawing from seed.
func newDelayRule(seed uint64, keys []int16, clients func(string) bool, prob float64, min, max time.Duration) *delayRule {
	r := &delayRule{keys: make(map[int16]bool), clients: clients, prob: prob, min: min, max: max,
		rnd: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	for _, k := range keys {
		r.keys[k] = true
	}
	return r
}

// delay returns how long to hold a frame, 0 to forward it at once.
func (r *delayRule) delay(h requestHeader) time.Duration {
	if !r.keys[h.key] || !r.clients(h.clientID) {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.rnd.Float64() >= r.prob {
		return 0
	}
	return r.min + time.Duration(r.rnd.Int64N(int64(r.max-r.min)+1))
}

// requestHeader is the part of a request header every version from v1
// has.
type requestHeader struct {
	key, version  int16
	correlationID int32
	clientID      string
}

// lateRequest is a request the proxy delivered after its client had
// closed the connection. request is the whole frame (size included) and
// response the broker's whole answer, nil if none came within
// lateResponseWait.
type lateRequest struct {
	header      requestHeader
	delay       time.Duration
	sentAt      time.Time // when the client's frame was read
	clientGone  time.Time // when the client's connection ended
	deliveredAt time.Time
	request     []byte
	response    []byte
}

// delayFrame is a request frame on its way to the broker.
type delayFrame struct {
	header requestHeader
	data   []byte
	readAt time.Time
	delay  time.Duration
	late   *lateRequest // set when delivered after the client left
}

// delayConn is one proxied connection.
type delayConn struct {
	client, server net.Conn
	queue          chan *delayFrame // reader -> writer; closed by the reader
	writerDone     chan struct{}    // closed by the writer
	clientGone     chan struct{}    // closed by the reader when the client's side ends
	goneAt         atomic.Pointer[time.Time]
	// inflight are the frames delivered and not yet answered, in order;
	// answered is signalled on each answer. mu guards inflight.
	mu       sync.Mutex
	inflight []*delayFrame
	answered chan struct{}
}

// startDelayProxy listens on a free loopback port and forwards to target
// (host:port) under rule.
func startDelayProxy(t *testing.T, name, target string, rule *delayRule) *delayProxy {
	t.Helper()
	ln := listenFresh(t)
	p := &delayProxy{name: name, ln: ln, target: target, rule: rule, stop: make(chan struct{})}
	p.mu.conns = make(map[*delayConn]struct{})
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

// addr is where the proxy listens.
func (p *delayProxy) addr() string { return p.ln.Addr().String() }

// close stops the proxy, dropping whatever it still holds, and waits for
// its goroutines; it is idempotent.
func (p *delayProxy) close() {
	p.mu.Lock()
	if p.mu.closed {
		p.mu.Unlock()
		return
	}
	p.mu.closed = true
	close(p.stop)
	conns := make([]*delayConn, 0, len(p.mu.conns))
	for c := range p.mu.conns {
		conns = append(conns, c)
	}
	p.mu.Unlock()
	p.ln.Close()
	for _, c := range conns {
		c.client.Close()
		c.server.Close()
	}
	p.wg.Wait()
}

// lateRequests returns a copy of the late requests recorded so far.
func (p *delayProxy) lateRequests() []lateRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]lateRequest(nil), p.mu.late...)
}

func (p *delayProxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.DialTimeout("tcp", p.target, 5*time.Second)
		if err != nil {
			client.Close()
			continue
		}
		c := &delayConn{client: client, server: server, queue: make(chan *delayFrame, delayQueue),
			writerDone: make(chan struct{}), clientGone: make(chan struct{}), answered: make(chan struct{}, 1)}
		p.mu.Lock()
		if p.mu.closed {
			p.mu.Unlock()
			client.Close()
			server.Close()
			return
		}
		p.mu.conns[c] = struct{}{}
		p.wg.Add(3)
		p.mu.Unlock()
		go p.read(c)
		go p.write(c)
		go p.respond(c)
	}
}

// read reads the client's frames into the queue until the client's side
// ends.
func (p *delayProxy) read(c *delayConn) {
	defer p.wg.Done()
	defer func() {
		now := time.Now()
		c.goneAt.Store(&now)
		close(c.clientGone)
		close(c.queue)
	}()
	for {
		data, h, err := readRequestFrame(c.client)
		if err != nil {
			return
		}
		f := &delayFrame{header: h, data: data, readAt: time.Now(), delay: p.rule.delay(h)}
		if f.delay > 0 {
			p.held.Add(1)
			if h.key >= 0 && h.key < delayKeys {
				p.delayed[h.key].Add(1)
			}
		}
		select {
		case c.queue <- f:
		case <-c.writerDone:
			p.unhold(f)
			return
		case <-p.stop:
			return
		}
	}
}

// write forwards each queued frame when it is due, then, once the
// client is gone and the queue drained, waits for the broker's answers
// and closes the connection to the broker.
func (p *delayProxy) write(c *delayConn) {
	defer p.wg.Done()
	defer func() {
		p.mu.Lock()
		delete(p.mu.conns, c)
		p.mu.Unlock()
	}()
	defer close(c.writerDone)
	defer c.server.Close()
	for f := range c.queue {
		if due := time.Until(f.readAt.Add(f.delay)); due > 0 {
			tm := time.NewTimer(due)
			select {
			case <-tm.C:
			case <-p.stop:
				tm.Stop()
				return
			}
		}
		p.unhold(f)
		select {
		case <-c.clientGone:
			gone := *c.goneAt.Load()
			f.late = &lateRequest{header: f.header, delay: f.delay, sentAt: f.readAt, clientGone: gone,
				deliveredAt: time.Now(), request: f.data}
		default:
		}
		c.mu.Lock()
		c.inflight = append(c.inflight, f)
		c.mu.Unlock()
		if _, err := c.server.Write(f.data); err != nil {
			return
		}
		if f.late != nil && f.header.key >= 0 && f.header.key < delayKeys {
			p.late[f.header.key].Add(1)
		}
	}
	// The client is gone: give the broker time to answer what it was
	// sent, so that it handles each request whole, and the late ones'
	// answers are recorded.
	deadline := time.NewTimer(lateResponseWait)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		n := len(c.inflight)
		c.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-c.answered:
		case <-deadline.C:
			p.recordUnanswered(c)
			return
		case <-p.stop:
			return
		}
	}
}

// unhold counts f as no longer held.
func (p *delayProxy) unhold(f *delayFrame) {
	if f.delay > 0 {
		p.held.Add(-1)
	}
}

// quiet reports whether the proxy holds no frame and every late request
// delivered is recorded (answered, or given up on).
func (p *delayProxy) quiet() bool {
	var late int64
	for i := range p.late {
		late += p.late[i].Load()
	}
	p.mu.Lock()
	recorded := len(p.mu.late)
	p.mu.Unlock()
	return p.held.Load() == 0 && (int64(recorded) >= late || recorded >= delayMaxLate)
}

// recordUnanswered records the late requests still waiting for an answer
// when the proxy gave up on them.
func (p *delayProxy) recordUnanswered(c *delayConn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, f := range c.inflight {
		if f.late != nil {
			p.recordLate(*f.late)
		}
	}
	c.inflight = nil
}

func (p *delayProxy) recordLate(l lateRequest) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.mu.late) < delayMaxLate {
		p.mu.late = append(p.mu.late, l)
	}
}

// respond copies the broker's responses to the client while it is
// connected, matching each to the oldest unanswered frame; it ends when
// the broker's side ends, and then closes the client's.
func (p *delayProxy) respond(c *delayConn) {
	defer p.wg.Done()
	defer c.client.Close()
	clientOK := true
	for {
		var size [4]byte
		if _, err := io.ReadFull(c.server, size[:]); err != nil {
			return
		}
		n := int(int32(binary.BigEndian.Uint32(size[:])))
		if n < 4 || n > delayMaxFrame {
			return
		}
		data := make([]byte, 4+n)
		copy(data, size[:])
		if _, err := io.ReadFull(c.server, data[4:]); err != nil {
			return
		}
		c.mu.Lock()
		var f *delayFrame
		if len(c.inflight) > 0 {
			f, c.inflight = c.inflight[0], c.inflight[1:]
		}
		c.mu.Unlock()
		select {
		case c.answered <- struct{}{}:
		default:
		}
		if f != nil && f.late != nil {
			f.late.response = data
			p.recordLate(*f.late)
		}
		if clientOK {
			if _, err := c.client.Write(data); err != nil {
				clientOK = false
			}
		}
	}
}

// errBadRequestFrame is a request frame too short or too large.
var errBadRequestFrame = errors.New("chaos: delay proxy: bad request frame")

// readRequestFrame reads one request frame whole and its header.
func readRequestFrame(r io.Reader) ([]byte, requestHeader, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, requestHeader{}, err
	}
	n := int(int32(binary.BigEndian.Uint32(size[:])))
	if n < 10 || n > delayMaxFrame {
		return nil, requestHeader{}, fmt.Errorf("%w: size %d", errBadRequestFrame, n)
	}
	data := make([]byte, 4+n)
	copy(data, size[:])
	if _, err := io.ReadFull(r, data[4:]); err != nil {
		return nil, requestHeader{}, err
	}
	h := requestHeader{
		key:           int16(binary.BigEndian.Uint16(data[4:6])),
		version:       int16(binary.BigEndian.Uint16(data[6:8])),
		correlationID: int32(binary.BigEndian.Uint32(data[8:12])),
	}
	if idLen := int(int16(binary.BigEndian.Uint16(data[12:14]))); idLen > 0 && 14+idLen <= len(data) {
		h.clientID = string(data[14 : 14+idLen])
	}
	return data, h, nil
}
