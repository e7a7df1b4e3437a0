package server

// This file holds the API contract of package server that is not yet
// implemented. Replace each stub with its real implementation in a file
// named for its concern and delete this file once it is empty.

import (
	"context"
	"io"
	"log/slog"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Handler serves decoded requests. The server calls Handle on the
// connection's read goroutine, one request at a time in arrival order, so
// side effects (appends to a log) happen in request order. Work that must
// wait (acks=all durability, a Fetch long-poll) goes in the returned Reply's
// Wait, which the connection's write goroutine calls in request order, while
// the read goroutine goes on decoding and handling later requests.
type Handler interface {
	// Versions reports the version range the handler supports for an API
	// key; ok is false for an API it does not serve.
	Versions(key int16) (min, max int16, ok bool)
	Handle(ctx context.Context, c *Conn, req *Request) Reply
}

// Request is one decoded request.
type Request struct {
	APIKey        int16
	APIVersion    int16
	CorrelationID int32
	ClientID      *string
	// Body is decoded at APIVersion, or, for an ApiVersions request with a
	// version above the supported maximum, left at version 0 and not decoded
	// (UnsupportedVersion is set; answer with an ApiVersions v0 response
	// carrying UNSUPPORTED_VERSION and the supported ranges).
	Body               kmsg.Request
	UnsupportedVersion bool
	// Size is the frame size in bytes.
	Size int
}

// Reply is a handler's answer. Set exactly one of Msg, Body, Wait, or None.
type Reply struct {
	// Msg is encoded with AppendTo at the request's version (the server
	// calls SetVersion on it).
	Msg kmsg.Response
	// Body is a response body already laid out in pieces (the Fetch
	// sendfile path); it is written as is after the response header.
	Body Body
	// Wait is called on the write goroutine, in request order; its result
	// is written. ctx is done when the connection or server closes.
	Wait func(ctx context.Context) Reply
	// None means no response is sent (Produce with acks=0).
	None bool
}

// Body is a pre-encoded response body.
type Body interface {
	// Len is the exact number of bytes WriteTo writes.
	Len() int
	// WriteTo writes the body to the connection. w is the connection itself
	// (a *net.TCPConn for plaintext listeners) so that file regions can go
	// out through sendfile.
	WriteTo(w io.Writer) (int64, error)
}

// Conn is one client connection, as handlers see it.
type Conn struct {
	// Remote is the client's address.
	Remote net.Addr
	// Local is the listener address the client connected to.
	Local net.Addr
}

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
	Logger            *slog.Logger
}

// Server accepts Kafka connections on listeners and serves them with a
// Handler.
type Server struct{}

// New returns a server; it starts nothing.
func New(cfg Config, h Handler) *Server { panic("unimplemented") }

// Serve accepts connections on ln until Shutdown or Close. It returns
// nil after Shutdown/Close, or the accept error.
func (s *Server) Serve(ln net.Listener) error { panic("unimplemented") }

// Shutdown stops accepting, lets in-flight requests finish and their
// responses be written (until ctx is done), then closes every connection
// and waits for the connection goroutines to exit.
func (s *Server) Shutdown(ctx context.Context) error { panic("unimplemented") }

// Close closes listeners and connections at once and waits for goroutines.
func (s *Server) Close() error { panic("unimplemented") }
