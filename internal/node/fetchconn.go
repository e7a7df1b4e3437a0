package node

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"net"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	kgosasl "github.com/twmb/franz-go/pkg/sasl"
)

// fetchConn is the connection a follower fetches from one leader on:
// its own TCP connection, outside the franz-go client that carries the
// other inter-broker requests, so that a fetch response is read into a
// pooled buffer and the records the follower appends come straight from
// it. franz-go reads every response into a new buffer; a follower
// replicating a busy leader spent a fifth of its CPU collecting them.
//
// It is used by one fetch at a time (leaderConn.fetchMu); a response's
// buffer is returned to the pool by its release func, so a fetcher still
// appending from an old response while its replacement fetches never
// sees its records overwritten.
type fetchConn struct {
	conn      net.Conn
	corrID    int32
	fetchV    int16     // the Fetch version both ends serve
	reauthBy  time.Time // zero: the session never expires
	formatter *kmsg.RequestFormatter
	reqBuf    []byte
	sizeBuf   [4]byte
}

// fetchConnMaxResponse bounds a fetch response: the follower asks for at
// most 10 MiB of records (replica.Manager's MaxBytes); anything far
// larger is a broken peer, not a reason to allocate.
const fetchConnMaxResponse = 1 << maxRespClass

// fetchConnIOTimeout bounds a request's round trip beyond the fetch's own
// max wait, as franz-go's request timeout overhead does.
const fetchConnIOTimeout = 30 * time.Second

// dialFetchConn connects to addr and prepares the connection: TLS, the
// API versions of the peer, and SASL authentication.
func dialFetchConn(ctx context.Context, addr, clientID string, sec interBrokerSecurity) (*fetchConn, error) {
	ctx, cancel := context.WithTimeout(ctx, fetchConnIOTimeout)
	defer cancel()
	var d net.Dialer
	raw, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	conn := raw
	if sec.tls != nil {
		cfg := sec.tls.Clone()
		if cfg.ServerName == "" {
			host, _, _ := net.SplitHostPort(addr)
			cfg.ServerName = host
		}
		tc := tls.Client(raw, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			raw.Close()
			return nil, fmt.Errorf("node: TLS handshake with %s: %w", addr, err)
		}
		conn = tc
	}
	fc := &fetchConn{conn: conn, formatter: kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID))}
	if err := fc.start(ctx, addr, sec.mech); err != nil {
		conn.Close()
		return nil, err
	}
	return fc, nil
}

// start asks the peer's API versions and authenticates.
func (fc *fetchConn) start(ctx context.Context, addr string, mech kgosasl.Mechanism) error {
	av := kmsg.NewPtrApiVersionsRequest()
	av.Version = 3
	av.ClientSoftwareName, av.ClientSoftwareVersion = "samsa-replica", "1"
	var avResp kmsg.ApiVersionsResponse
	if err := fc.roundTrip(ctx, av, &avResp, nil); err != nil {
		return fmt.Errorf("node: ApiVersions to %s: %w", addr, err)
	}
	if err := kerr.ErrorForCode(avResp.ErrorCode); err != nil {
		return fmt.Errorf("node: ApiVersions to %s: %w", addr, err)
	}
	fc.fetchV = -1
	maxV := map[int16]int16{}
	for _, k := range avResp.ApiKeys {
		maxV[k.ApiKey] = k.MaxVersion
	}
	if v, ok := maxV[kmsg.Fetch.Int16()]; ok {
		fc.fetchV = min(v, kmsg.NewPtrFetchRequest().MaxVersion())
	}
	// Fetch sessions (KIP-227) need v7; samsa serves far newer ones.
	if fc.fetchV < 7 {
		return fmt.Errorf("node: broker at %s serves Fetch up to v%d, replication needs v7", addr, fc.fetchV)
	}
	if mech == nil {
		return nil
	}
	if v, ok := maxV[kmsg.SASLAuthenticate.Int16()]; !ok || v < 1 {
		return fmt.Errorf("node: broker at %s does not serve SaslAuthenticate v1", addr)
	}
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version = 1
	hs.Mechanism = mech.Name()
	var hsResp kmsg.SASLHandshakeResponse
	if err := fc.roundTrip(ctx, hs, &hsResp, nil); err != nil {
		return fmt.Errorf("node: SaslHandshake with %s: %w", addr, err)
	}
	if err := kerr.ErrorForCode(hsResp.ErrorCode); err != nil {
		return fmt.Errorf("node: SaslHandshake with %s (%s): %w", addr, mech.Name(), err)
	}
	host, _, _ := net.SplitHostPort(addr)
	session, out, err := mech.Authenticate(ctx, host)
	if err != nil {
		return fmt.Errorf("node: SASL %s with %s: %w", mech.Name(), addr, err)
	}
	authVersion := min(maxV[kmsg.SASLAuthenticate.Int16()], 2)
	for done := false; !done || out != nil; {
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.Version = authVersion
		req.SASLAuthBytes = out
		sent := time.Now()
		var resp kmsg.SASLAuthenticateResponse
		if err := fc.roundTrip(ctx, req, &resp, nil); err != nil {
			return fmt.Errorf("node: SaslAuthenticate with %s: %w", addr, err)
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			msg := ""
			if resp.ErrorMessage != nil {
				msg = ": " + *resp.ErrorMessage
			}
			return fmt.Errorf("node: SaslAuthenticate with %s: %w%s", addr, err, msg)
		}
		if ms := resp.SessionLifetimeMillis; ms > 0 {
			// KIP-368: the peer closes the connection on the first
			// request after the lifetime; reconnect well before it.
			life := time.Duration(min(ms, int64(365*24*time.Hour/time.Millisecond))) * time.Millisecond
			fc.reauthBy = sent.Add(life * 9 / 10)
		}
		out = nil
		if !done {
			if done, out, err = session.Challenge(resp.SASLAuthBytes); err != nil {
				return fmt.Errorf("node: SASL %s with %s: %w", mech.Name(), addr, err)
			}
		}
	}
	return nil
}

// expired reports whether the connection's SASL session ends within
// wait, so that a request sent now might reach the peer after it.
func (fc *fetchConn) expired(wait time.Duration) bool {
	return !fc.reauthBy.IsZero() && time.Now().Add(wait).After(fc.reauthBy)
}

// fetch sends req (at the connection's Fetch version) and reads the
// response into a pooled buffer; its record batches point into that
// buffer, so release must be called once the caller is done with them,
// and not before.
func (fc *fetchConn) fetch(ctx context.Context, req *kmsg.FetchRequest) (*kmsg.FetchResponse, func(), error) {
	req.Version = fc.fetchV
	resp := kmsg.NewPtrFetchResponse()
	var buf *[]byte
	if err := fc.roundTrip(ctx, req, resp, &buf); err != nil {
		return nil, nil, err
	}
	// NB: once only: a buffer in the pool twice would be handed to two
	// responses at once.
	return resp, sync.OnceFunc(func() { putRespBuf(buf) }), nil
}

// roundTrip writes req, reads its response into resp. With pooled nil
// the response body is read into a fresh buffer; otherwise into a pooled
// one, returned in *pooled for the caller to put back. Any error leaves
// the connection unusable.
func (fc *fetchConn) roundTrip(ctx context.Context, req kmsg.Request, resp kmsg.Response, pooled **[]byte) error {
	deadline := time.Now().Add(fetchConnIOTimeout)
	if fr, ok := req.(*kmsg.FetchRequest); ok {
		deadline = deadline.Add(time.Duration(fr.MaxWaitMillis) * time.Millisecond)
	}
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if err := fc.conn.SetDeadline(deadline); err != nil {
		return err
	}
	// A cancelled context ends a parked fetch at once. Once the func has
	// run (or started) the connection's deadline is in the past, so the
	// round trip fails even if it got its answer first: the caller then
	// drops the connection rather than reuse it.
	stop := context.AfterFunc(ctx, func() { fc.conn.SetDeadline(time.Unix(1, 0)) })
	err := fc.exchange(ctx, req, resp, pooled)
	if !stop() && err == nil {
		if pooled != nil {
			putRespBuf(*pooled)
			*pooled = nil
		}
		err = ctx.Err()
	}
	return err
}

// exchange is roundTrip's write and read, under the deadlines it set.
func (fc *fetchConn) exchange(ctx context.Context, req kmsg.Request, resp kmsg.Response, pooled **[]byte) error {
	fc.corrID++
	fc.reqBuf = fc.formatter.AppendRequest(fc.reqBuf[:0], req, fc.corrID)
	if _, err := fc.conn.Write(fc.reqBuf); err != nil {
		return ctxErr(ctx, err)
	}
	if cap(fc.reqBuf) > 1<<20 {
		fc.reqBuf = nil // a one-off full fetch of many partitions
	}
	if _, err := io.ReadFull(fc.conn, fc.sizeBuf[:]); err != nil {
		return ctxErr(ctx, err)
	}
	n := int(binary.BigEndian.Uint32(fc.sizeBuf[:]))
	if n < 4 || n > fetchConnMaxResponse {
		return fmt.Errorf("node: response of %d bytes from a broker", n)
	}
	var body []byte
	if pooled != nil {
		*pooled = getRespBuf(n)
		body = (**pooled)[:n]
	} else {
		body = make([]byte, n)
	}
	if _, err := io.ReadFull(fc.conn, body); err != nil {
		if pooled != nil {
			putRespBuf(*pooled)
			*pooled = nil
		}
		return ctxErr(ctx, err)
	}
	err := fc.decode(req, resp, body)
	if err != nil && pooled != nil {
		putRespBuf(*pooled)
		*pooled = nil
	}
	return err
}

// decode checks the response header of body and decodes the rest into
// resp at req's version.
func (fc *fetchConn) decode(req kmsg.Request, resp kmsg.Response, body []byte) error {
	if corr := int32(binary.BigEndian.Uint32(body)); corr != fc.corrID {
		return fmt.Errorf("node: response correlation id %d, want %d", corr, fc.corrID)
	}
	body = body[4:]
	// Response headers are flexible (v1: tagged fields) with the
	// request, but ApiVersions' is always v0.
	if req.IsFlexible() && req.Key() != kmsg.ApiVersions.Int16() {
		var err error
		if body, err = skipTags(body); err != nil {
			return err
		}
	}
	resp.SetVersion(req.GetVersion())
	return resp.ReadFrom(body)
}

// skipTags skips the tagged fields at the start of b.
func skipTags(b []byte) ([]byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 {
		return nil, errors.New("node: bad tagged fields in a response header")
	}
	b = b[k:]
	for range n {
		if _, k = binary.Uvarint(b); k <= 0 {
			return nil, errors.New("node: bad tag in a response header")
		}
		b = b[k:]
		size, k := binary.Uvarint(b)
		if k <= 0 || size > uint64(len(b)-k) {
			return nil, errors.New("node: bad tag size in a response header")
		}
		b = b[k+int(size):]
	}
	return b, nil
}

// ctxErr prefers the context's error to the connection error it caused.
func ctxErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

func (fc *fetchConn) close() { fc.conn.Close() }

// Response buffers come in power-of-two classes from 64 KiB to
// fetchConnMaxResponse; a class's pool holds buffers of exactly its size.
const (
	minRespClass = 16 // 64 KiB
	maxRespClass = 28 // 256 MiB
)

var respPools [maxRespClass - minRespClass + 1]sync.Pool

func respClass(n int) int {
	if n <= 1<<minRespClass {
		return 0
	}
	return bits.Len(uint(n-1)) - minRespClass
}

func getRespBuf(n int) *[]byte {
	c := respClass(n)
	if b, ok := respPools[c].Get().(*[]byte); ok {
		return b
	}
	b := make([]byte, 1<<(c+minRespClass))
	return &b
}

func putRespBuf(b *[]byte) {
	if b != nil {
		respPools[respClass(cap(*b))].Put(b)
	}
}
