// Package server is samsa's Kafka listener: it accepts connections, reads
// request frames with size limits, decodes the request header and body,
// hands each request to a Handler, and writes the responses back in request
// order.
//
// Usage:
//
//	s := server.New(server.Config{MaxRequestBytes: 100 << 20}, handler)
//	go s.Serve(ln)                 // one call per listener
//	...
//	err := s.Shutdown(ctx)         // or s.Close() to stop at once
//
// # Wire format
//
// A request frame:
//
//	+----------------+---------------------------------------------------+
//	| size    int32  | bytes that follow; 1..socket.request.max.bytes     |
//	+----------------+---------------------------------------------------+
//	| api key        int16                                               |
//	| api version    int16                                               |
//	| correlation id int32                                               |
//	| client id      int16 length + bytes, -1 null  (header v1 and v2)    |
//	| tagged fields  uvarint count, then per field   (header v2 only:     |
//	|                uvarint tag, uvarint size,       flexible versions)  |
//	|                size bytes; tags increasing                         |
//	+--------------------------------------------------------------------+
//	| body           kmsg encoding at api version                        |
//	+--------------------------------------------------------------------+
//
// A response frame:
//
//	+----------------+---------------------------------------------------+
//	| size    int32  | bytes that follow                                 |
//	| correlation id int32                                               |
//	| tagged fields  one 0 byte: header v1, for flexible versions except  |
//	|                ApiVersions, whose responses always use header v0    |
//	| body           Reply.Msg.AppendTo at the request's version, or       |
//	|                Reply.Body.WriteTo straight onto the socket          |
//	+--------------------------------------------------------------------+
//
// # Goroutines and ordering
//
// The Server owns two goroutines per connection, started through one
// helper and counted in a WaitGroup; Serve runs on its caller's goroutine.
//
//  1. The reader reads a frame, decodes it, calls Handler.Handle and queues
//     the Reply on a queue of at most queued.max.requests entries, whose
//     storage grows with use. Handle runs one request at a time in arrival
//     order. A full queue blocks the reader, which stops reading from the
//     socket: that is the back-pressure.
//  2. The writer takes replies in queue order, calls Reply.Wait (which may
//     block) and writes the result through a buffered writer. It flushes
//     when the queue is momentarily empty, so pipelined small responses
//     share a write syscall, and before calling a Wait.
//
// The read and write buffers are 64 KiB on plaintext listeners and 16 KiB,
// one TLS record, on TLS listeners. Until a connection of a SASL listener
// is authenticated they are 4 KiB, so that connections that never
// authenticate hold little memory; the write buffer is allocated at the
// first reply.
//
// Responses therefore go out in request order, and a slow Wait holds back
// the responses after it but not the handling of later requests.
//
// A Reply with Throttle set mutes its connection (KIP-219): from when the
// reader (Handle returned it) or the writer (Wait returned it) gets the
// Reply, the reader takes no further request, neither reading the next
// frame nor handling one it has already read, until the throttle has
// passed. The mute is one atomic deadline per connection that only moves
// forward; Shutdown and Close end it.
//
// # What closes a connection
//
//   - the connection limits (Config.Connections) refusing it in the
//     acceptor, before it is served: over max.connections.per.ip, at once;
//     over an ip's connection_creation_rate, after the throttle time. A
//     broker-wide or listener limit instead holds the acceptor until a
//     connection closes or the rate allows, as Kafka's acceptor blocks;
//   - a frame size <= 0 or above socket.request.max.bytes (checked before
//     anything is allocated; a TLS ClientHello on a plaintext port falls
//     here);
//   - an API key the Handler does not serve or kmsg does not know;
//   - a version outside the Handler's range, except for ApiVersions, which
//     is answered with an ApiVersions v0 response (UnsupportedVersion);
//   - a Reply with Close, once it is written (the broker's answer to an
//     acks=0 Produce at a version it refuses);
//   - a header or body that does not decode (short or overlong lengths,
//     varints over 5 bytes, tagged fields out of order or past the end);
//   - no complete request for connections.max.idle.ms while nothing is in
//     flight, including a frame declared and then not sent;
//   - a panic in Handle or Wait (recovered, logged with its stack and
//     counted in Panics);
//   - a write error or a write stalled for connections.max.idle.ms;
//   - Close, or Shutdown once its context is done.
//
// Shutdown stops the listeners and the readers, lets the writers write
// every queued reply (until its context is done), then closes the
// connections and waits for every goroutine. Close does the same at once.
// Both are idempotent.
//
// Lock order: Server.mu is a leaf lock; no IO is done under it except
// closing listeners and sockets.
package server
