package server

import (
	"context"
	"io"
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
	// Versions reports the version range the handler decodes for an API
	// key (a version outside it closes the connection); ok is false for
	// an API it does not serve.
	Versions(key int16) (min, max int16, ok bool)
	Handle(ctx context.Context, c *Conn, req *Request) Reply
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
	// Close, in a Reply from Handle (not from Wait), closes the
	// connection once the reply is written (at once with None) and reads
	// no further request: how Kafka refuses an acks=0 Produce, whose
	// client waits for no response.
	Close bool
	// Throttle mutes the connection (KIP-219): from when the server gets
	// this Reply (Handle or Wait returned it), it reads and handles no
	// further request of the connection until Throttle has passed. It goes
	// with any of the fields above, a Reply from Wait included; the
	// handler puts the same time in the response's throttle_time_ms.
	Throttle time.Duration
	// Parked is how long a Wait that returned this Reply waited by design
	// (a Fetch long-poll up to max wait, a JoinGroup or SyncGroup waiting
	// for the other members); the slow request log leaves it out.
	Parked time.Duration

	// raw is a bare SASL token written with only a size prefix (the
	// exchange after SaslHandshake v0).
	raw []byte
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

// Conn is one client connection, as handlers see it. Its fields are set
// before the first request is handed to Handle and do not change after,
// except Principal on a SASL listener: it is set, once, when the first
// authentication completes, and before that only ApiVersions reaches
// Handle. The read goroutine sets it: the Wait of an ApiVersions reply
// must not read it.
type Conn struct {
	// Remote is the client's address.
	Remote net.Addr
	// Local is the listener address the client connected to.
	Local net.Addr
	// Listener is the name of the listener the client connected to
	// (PLAINTEXT, EXTERNAL, ...); "" for a listener served with Serve.
	Listener string
	// SecurityProtocol is the listener's protocol: PLAINTEXT, SSL,
	// SASL_PLAINTEXT or SASL_SSL.
	SecurityProtocol string
	// Host is the client's IP address in canonical text form (IPv4 for
	// IPv4-mapped addresses, compressed lower-case IPv6), as ACL hosts
	// are compared; "" when the connection is not TCP.
	Host string
	// Principal is the authenticated principal ("User:alice"), or
	// User:ANONYMOUS on a listener that authenticates nobody.
	Principal string
}
