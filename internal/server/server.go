package server

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Config configures a Server, under Kafka's config names.
type Config struct {
	// MaxRequestBytes is socket.request.max.bytes (default 100 MiB). A frame
	// larger than this closes the connection before anything is allocated.
	MaxRequestBytes int32
	// IdleTimeout is connections.max.idle.ms (default 10 min).
	IdleTimeout time.Duration
	// QueuedMaxRequests is queued.max.requests (default 500): how many
	// requests of one connection may wait for their response before the
	// server stops reading from it.
	QueuedMaxRequests int
	// Connections, if not nil, limits connections in the acceptor
	// (max.connections, max.connections.per.ip and their kin).
	Connections ConnLimits
	// Observer, if not nil, gets each request's timings and error codes.
	Observer Observer
	Logger   *slog.Logger
	// SlowRequest is log.slow.request.ms: a request whose broker time
	// (slow.go) exceeds it is logged at WARN. Zero disables.
	SlowRequest time.Duration
}

// Defaults of Config fields left zero.
const (
	DefaultMaxRequestBytes   = 100 << 20
	DefaultIdleTimeout       = 10 * time.Minute
	DefaultQueuedMaxRequests = 500
)

// maxTrackedKey bounds the per-key request counters; keys above it are
// counted under maxTrackedKey.
const maxTrackedKey = 127

// Server accepts Kafka connections on listeners and serves them with a
// Handler. Its methods are safe for concurrent use.
type Server struct {
	cfg Config
	h   Handler
	log *slog.Logger
	obs Observer // cfg.Observer

	// ctx is the parent of every connection's context; cancel ends it on
	// Close or when Shutdown gives up.
	ctx    context.Context
	cancel context.CancelFunc

	// wg counts every goroutine the server started (two per connection).
	wg sync.WaitGroup

	// mu guards the fields in the struct below.
	mu struct {
		sync.Mutex
		// stopping is set once Shutdown or Close starts; after that no
		// listener or connection is added and no goroutine started.
		stopping  bool
		listeners map[net.Listener]string // listener -> its name
		conns     map[*conn]struct{}
	}
	// drained is signalled (non-blocking) whenever a connection is removed,
	// so that Shutdown can re-check whether all are gone.
	drained chan struct{}
	// released is signalled (non-blocking) whenever a connection counted by
	// Config.Connections is released, to wake an acceptor that holds one.
	released chan struct{}

	panics atomic.Int64
	// authFailures counts failed TLS handshakes and SASL exchanges.
	authFailures atomic.Int64
	connsOpen    atomic.Int64
	connsAll     atomic.Int64
	connsRefused atomic.Int64
	bytesIn      atomic.Int64
	bytesOut     atomic.Int64
	requests     [maxTrackedKey + 1]atomic.Int64
	// wholeFrames is what large frames may take at once (readFrame).
	wholeFrames frameBudget
}

// New returns a server; it starts nothing. Zero Config fields take their
// defaults.
func New(cfg Config, h Handler) *Server {
	if cfg.MaxRequestBytes <= 0 {
		cfg.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.QueuedMaxRequests <= 0 {
		cfg.QueuedMaxRequests = DefaultQueuedMaxRequests
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg, h: h, log: cfg.Logger, obs: cfg.Observer, drained: make(chan struct{}, 1), released: make(chan struct{}, 1)}
	s.wholeFrames.left.Store(wholeFrameBudget)
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.mu.listeners = make(map[net.Listener]string)
	s.mu.conns = make(map[*conn]struct{})
	return s
}

// goFunc runs f on a goroutine counted in s.wg. s.mu must be held, and
// s.mu.stopping false, so that no Add races with the Wait in Close.
func (s *Server) goFunc(f func()) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		f()
	}()
}

// acceptRetryable reports whether an Accept error is a passing shortage
// (out of descriptors or kernel memory, a connection reset before it was
// accepted) after which the listener still works. net.Error's Temporary,
// which net/http asks, is deprecated; these are the errors it covers.
func acceptRetryable(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	for _, e := range []error{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.ECONNABORTED, syscall.ECONNRESET} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// Serve accepts plaintext connections on ln until Shutdown or Close. It
// returns nil after Shutdown/Close, or the accept error. ln is closed when
// Serve returns.
func (s *Server) Serve(ln net.Listener) error {
	return s.ServeListener(ln, ListenerConfig{})
}

// ServeListener is Serve for a listener secured as lc says: a TLS
// handshake first on SSL and SASL_SSL listeners, SASL authentication
// before any other request on SASL_PLAINTEXT and SASL_SSL listeners. It
// returns an error at once, and serves nothing, if lc lacks what its
// protocol needs.
func (s *Server) ServeListener(ln net.Listener, lc ListenerConfig) error {
	if err := lc.check(); err != nil {
		ln.Close()
		return err
	}
	s.mu.Lock()
	if s.mu.stopping {
		s.mu.Unlock()
		ln.Close()
		return nil
	}
	s.mu.listeners[ln] = lc.Name
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.mu.listeners, ln)
		s.mu.Unlock()
		ln.Close()
	}()

	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.isStopping() {
				return nil
			}
			if acceptRetryable(err) {
				// Out of file descriptors and the like: back off, as
				// net/http does, and try again. The socket waits in
				// the listen backlog meanwhile.
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				s.log.Warn("server: accept failed, retrying", "listener", lc.Name, "err", err, "retry_in", backoff)
				select {
				case <-time.After(backoff):
				case <-s.ctx.Done():
					return nil
				}
				continue
			}
			return err
		}
		backoff = 0
		// NB: admit may block, as Kafka's acceptor blocks while a
		// broker-wide or listener limit holds: later connections wait in
		// the listen backlog.
		ip, ok := s.admit(nc, &lc)
		if !ok {
			if s.isStopping() {
				return nil
			}
			continue
		}
		s.startConn(nc, &lc, ip)
	}
}

func (s *Server) isStopping() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.stopping
}

// startConn registers nc and starts its read and write goroutines.
// limitIP is the ip Config.Connections counted it under, "" if none.
func (s *Server) startConn(nc net.Conn, lc *ListenerConfig, limitIP string) {
	c := newConn(s, nc, lc)
	c.limitIP = limitIP
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.stopping {
		nc.Close()
		c.cancel()
		s.release(c)
		return
	}
	s.mu.conns[c] = struct{}{}
	s.connsOpen.Add(1)
	s.connsAll.Add(1)
	s.goFunc(c.readLoop)
	s.goFunc(c.writeLoop)
}

// removeConn forgets c; it is called once, when both its goroutines are
// done.
func (s *Server) removeConn(c *conn) {
	s.mu.Lock()
	delete(s.mu.conns, c)
	s.mu.Unlock()
	s.release(c)
	s.connsOpen.Add(-1)
	select {
	case s.drained <- struct{}{}:
	default:
	}
}

// stop marks the server stopping and closes its listeners. It reports
// whether this call was the first.
func (s *Server) stop() []*conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.stopping = true
	for ln := range s.mu.listeners {
		ln.Close()
	}
	conns := make([]*conn, 0, len(s.mu.conns))
	for c := range s.mu.conns {
		conns = append(conns, c)
	}
	return conns
}

func (s *Server) connCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.mu.conns)
}

// Shutdown stops accepting, lets in-flight requests finish and their
// responses be written (until ctx is done), then closes every connection
// and waits for the connection goroutines to exit. It returns ctx's error
// if ctx ended first. It is idempotent and may run alongside Close.
func (s *Server) Shutdown(ctx context.Context) error {
	for _, c := range s.stop() {
		c.stopReading()
	}
	var err error
wait:
	for s.connCount() > 0 {
		select {
		case <-s.drained:
		case <-ctx.Done():
			err = ctx.Err()
			break wait
		case <-s.ctx.Done():
			break wait
		}
	}
	s.closeAll()
	return err
}

// Close closes listeners and connections at once and waits for the
// goroutines. It is idempotent.
func (s *Server) Close() error {
	s.stop()
	s.closeAll()
	return nil
}

func (s *Server) closeAll() {
	s.mu.Lock()
	for c := range s.mu.conns {
		c.close()
	}
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
}

// Panics returns how many panics in Handle or Wait were recovered (each
// closed its connection).
func (s *Server) Panics() int64 { return s.panics.Load() }

// Stats is a snapshot of the server's counters.
type Stats struct {
	// ConnectionsOpen is the number of connections now open.
	ConnectionsOpen int64
	// ConnectionsAccepted counts connections ever accepted.
	ConnectionsAccepted int64
	// Requests counts decoded requests by API key (keys above 127 are
	// counted under 127).
	Requests map[int16]int64
	// BytesIn counts request bytes read, size prefixes included.
	BytesIn int64
	// BytesOut counts response bytes written, size prefixes included.
	BytesOut int64
	// Panics counts recovered handler panics.
	Panics int64
	// AuthenticationFailures counts failed TLS handshakes and SASL
	// authentications.
	AuthenticationFailures int64
	// ConnectionsRefused counts connections closed by the connection
	// limits (Config.Connections).
	ConnectionsRefused int64
	// ConnectionsByListener is the number of connections open now, by
	// listener name ("" for a listener served with Serve).
	ConnectionsByListener map[string]int64
}

// Stats returns a snapshot of the counters. The caller owns the map.
func (s *Server) Stats() Stats {
	st := Stats{
		ConnectionsOpen:     s.connsOpen.Load(),
		ConnectionsAccepted: s.connsAll.Load(),
		Requests:            make(map[int16]int64),
		BytesIn:             s.bytesIn.Load(),
		BytesOut:            s.bytesOut.Load(),
		Panics:              s.panics.Load(),

		AuthenticationFailures: s.authFailures.Load(),
		ConnectionsRefused:     s.connsRefused.Load(),
	}
	for k := range s.requests {
		if n := s.requests[k].Load(); n > 0 {
			st.Requests[int16(k)] = n
		}
	}
	st.ConnectionsByListener = make(map[string]int64)
	s.mu.Lock()
	for _, name := range s.mu.listeners {
		if _, ok := st.ConnectionsByListener[name]; !ok {
			st.ConnectionsByListener[name] = 0
		}
	}
	for c := range s.mu.conns {
		st.ConnectionsByListener[c.lc.Name]++
	}
	s.mu.Unlock()
	return st
}

func (s *Server) countRequest(key int16) {
	k := int(key)
	if k < 0 || k > maxTrackedKey {
		k = maxTrackedKey
	}
	s.requests[k].Add(1)
}
