package chaos

import (
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// link is a TCP proxy in the test process that stands for one network
// path, so a test can partition it. Unlike testutil.Proxy it copies bytes
// without reading any framing, so it also carries etcd's gRPC traffic.
//
// A link that carries Kafka connections (tagKafka) reads the first
// request header of each connection to learn its client id, which is
// the connection's tag; a broker's replica fetcher sends
// "samsa-replica-<node id>". The block rule then decides per tag:
//
//	call            | effect
//	----------------+---------------------------------------------------
//	cut(rule)       | close every connection whose tag rule matches; hold
//	                | every new one it matches (nothing is forwarded, the
//	                | client waits) until heal
//	heal()          | forward everything again, held connections included
//
// A link in front of a TLS listener (startTLSLink) ends TLS on both
// sides: it serves the listener's certificate, requires the client's, reads
// the first request inside TLS for the tag, and opens TLS of its own to the
// listener with the same key store. Everything after the handshakes
// (SASL included) is forwarded as it is. Tagging needs the plain text, and
// a TLS record hides the client id.
//
// A cut connection looks to both ends like a reset; a new connection
// into a cut looks like a black hole, so clients time out and retry
// rather than take an immediate close for a protocol mismatch (franz-go
// reports a close during its first ApiVersions as "is TLS missing?" and
// fails the records instead of retrying).
//
// link is safe for concurrent use. Its goroutines (one accept loop, two
// per connection) are started by startLink and ended by close, which
// waits for them; the test's cleanup closes it.
type link struct {
	name     string
	ln       net.Listener
	network  string // of target: "tcp" or "unix"
	target   string
	tagKafka bool
	tls      *linkTLS // nil: bytes are copied as they come

	// rule is the block rule; nil forwards everything.
	rule atomic.Pointer[func(tag string) bool]
	// healed is closed (and replaced) by heal, waking held connections.
	healed atomic.Pointer[chan struct{}]
	stop   chan struct{} // closed by close

	wg sync.WaitGroup
	mu struct {
		sync.Mutex
		conns  map[*linkConn]struct{}
		closed bool
	}
	cutConns atomic.Int64 // connections closed or refused by a rule
	// replicaConns counts connections tagged by a replica fetcher.
	replicaConns atomic.Int64
}

// linkTLS is how a link ends TLS: server for the side facing the
// connecting broker, client for its own connection to the listener.
type linkTLS struct {
	server, client *tls.Config
}

// tlsHandshakeTimeout bounds each of a TLS link's handshakes.
const tlsHandshakeTimeout = 10 * time.Second

// linkConn is one proxied connection. tag is written by serve before
// the connection is forwarded and read by cut under link.mu.
type linkConn struct {
	client net.Conn
	mu     struct {
		sync.Mutex
		tag    string
		server net.Conn // nil until dialed
		closed bool
	}
}

// close closes both sides; a server side attached later is closed by
// attach.
func (c *linkConn) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.closed {
		return
	}
	c.mu.closed = true
	c.client.Close()
	if c.mu.server != nil {
		c.mu.server.Close()
	}
}

// attach sets the server side; it reports false (and closes server) if
// the connection was closed meanwhile.
func (c *linkConn) attach(server net.Conn) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.closed {
		server.Close()
		return false
	}
	c.mu.server = server
	return true
}

func (c *linkConn) tag() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.tag
}

// startLink listens on a free loopback port and forwards to target, which
// is host:port, or an etcd URL (http://host:port, unix:///path).
func startLink(t *testing.T, name, target string, tagKafka bool) *link {
	t.Helper()
	return newLink(t, name, target, tagKafka, nil)
}

// startTLSLink is startLink for a Kafka listener that speaks TLS: the link
// ends TLS on both sides (see link) and tags by client id.
func startTLSLink(t *testing.T, name, target string, cfg *linkTLS) *link {
	t.Helper()
	return newLink(t, name, target, true, cfg)
}

func newLink(t *testing.T, name, target string, tagKafka bool, cfg *linkTLS) *link {
	t.Helper()
	ln := listenFresh(t)
	l := &link{name: name, ln: ln, network: "tcp", target: target, tagKafka: tagKafka, tls: cfg, stop: make(chan struct{})}
	healed := make(chan struct{})
	l.healed.Store(&healed)
	switch {
	case strings.HasPrefix(target, "unix://"):
		l.network, l.target = "unix", strings.TrimPrefix(target, "unix://")
	case strings.HasPrefix(target, "http://"):
		l.target = strings.TrimPrefix(target, "http://")
	}
	l.mu.conns = make(map[*linkConn]struct{})
	l.wg.Add(1)
	go l.accept()
	t.Cleanup(l.close)
	return l
}

// addr is where the link listens.
func (l *link) addr() string { return l.ln.Addr().String() }

// cut blocks every connection whose tag rule matches: open ones are
// closed now, new ones as soon as their tag is known.
func (l *link) cut(rule func(tag string) bool) {
	l.rule.Store(&rule)
	l.mu.Lock()
	var victims []*linkConn
	for c := range l.mu.conns {
		if rule(c.tag()) {
			victims = append(victims, c)
		}
	}
	l.mu.Unlock()
	for _, c := range victims {
		l.cutConns.Add(1)
		c.close()
	}
}

// heal lets every connection through again.
func (l *link) heal() {
	l.rule.Store(nil)
	next := make(chan struct{})
	close(*l.healed.Swap(&next))
}

func (l *link) blocked(tag string) bool {
	r := l.rule.Load()
	return r != nil && (*r)(tag)
}

// close stops the link and waits for its goroutines; it is idempotent.
func (l *link) close() {
	l.mu.Lock()
	if l.mu.closed {
		l.mu.Unlock()
		return
	}
	l.mu.closed = true
	close(l.stop)
	conns := make([]*linkConn, 0, len(l.mu.conns))
	for c := range l.mu.conns {
		conns = append(conns, c)
	}
	l.mu.Unlock()
	l.ln.Close()
	for _, c := range conns {
		c.close()
	}
	l.wg.Wait()
}

func (l *link) accept() {
	defer l.wg.Done()
	for {
		client, err := l.ln.Accept()
		if err != nil {
			return
		}
		c := &linkConn{client: client}
		l.mu.Lock()
		if l.mu.closed {
			l.mu.Unlock()
			client.Close()
			return
		}
		l.mu.conns[c] = struct{}{}
		l.wg.Add(1)
		l.mu.Unlock()
		go l.serve(c)
	}
}

// serve learns the connection's tag, dials the target and copies both
// ways until either side ends or a cut closes it.
func (l *link) serve(c *linkConn) {
	defer l.wg.Done()
	defer func() {
		c.close()
		l.mu.Lock()
		delete(l.mu.conns, c)
		l.mu.Unlock()
	}()
	// front and back are what serve reads and writes: the raw sockets, or
	// TLS over them. Closing c closes the raw sockets, which ends both.
	var front net.Conn = c.client
	if l.tls != nil {
		tc := tls.Server(c.client, l.tls.server)
		_ = c.client.SetDeadline(time.Now().Add(tlsHandshakeTimeout))
		if err := tc.Handshake(); err != nil {
			return
		}
		_ = c.client.SetDeadline(time.Time{})
		front = tc
	}
	var first []byte
	if l.tagKafka {
		var tag string
		var err error
		if first, tag, err = readClientID(front); err != nil {
			return
		}
		c.mu.Lock()
		c.mu.tag = tag
		c.mu.Unlock()
		if isReplica(tag) {
			l.replicaConns.Add(1)
		}
	}
	if l.blocked(c.tag()) {
		l.cutConns.Add(1)
	}
	for {
		healed := *l.healed.Load()
		if !l.blocked(c.tag()) {
			break
		}
		select {
		case <-healed:
		case <-l.stop:
			return
		}
	}
	server, err := net.DialTimeout(l.network, l.target, 5*time.Second)
	if err != nil || !c.attach(server) {
		return
	}
	// NB: a cut that ran between the check above and attach saw c with
	// its tag but closed only the client side, which attach noticed; a
	// cut after attach closes both. Either way nothing is forwarded past
	// a cut.
	var back net.Conn = server
	if l.tls != nil {
		tc := tls.Client(server, l.tls.client)
		_ = server.SetDeadline(time.Now().Add(tlsHandshakeTimeout))
		if err := tc.Handshake(); err != nil {
			return
		}
		_ = server.SetDeadline(time.Time{})
		back = tc
	}
	if _, err := back.Write(first); err != nil {
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(front, back)
		c.close()
	}()
	_, _ = io.Copy(back, front)
	c.close()
	<-done
}

// errBadFrame is a first Kafka frame too short or too large to hold a
// request header.
var errBadFrame = errors.New("chaos: link: bad first frame")

// readClientID reads the first Kafka request frame of a connection and
// returns it whole with the request header's client id (every request
// header version from v1 has api key, api version, correlation id, then
// the client id as a nullable int16-length string):
//
//	size int32 | api_key int16 | api_version int16 | correlation_id int32 | client_id_len int16 | client_id
func readClientID(r io.Reader) ([]byte, string, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, "", err
	}
	n := int(binary.BigEndian.Uint32(size[:]))
	if n < 10 || n > 1<<20 {
		return nil, "", fmt.Errorf("%w: size %d", errBadFrame, n)
	}
	buf := make([]byte, 4+n)
	copy(buf, size[:])
	if _, err := io.ReadFull(r, buf[4:]); err != nil {
		return nil, "", err
	}
	idLen := int(int16(binary.BigEndian.Uint16(buf[12:14])))
	if idLen < 0 || 14+idLen > len(buf) {
		return buf, "", nil
	}
	return buf, string(buf[14 : 14+idLen]), nil
}

// replicaTag is the client id of node's replica fetcher.
func replicaTag(node int32) string { return fmt.Sprintf("samsa-replica-%d", node) }

// isReplica matches any broker's replica fetcher.
func isReplica(tag string) bool { return strings.HasPrefix(tag, "samsa-replica-") }

// all matches every connection.
func all(string) bool { return true }
