package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testHandler serves ApiVersions and an echoing Metadata. The first
// requested topic name steers the reply:
//
//	gate          reply through a Wait that blocks until the gate opens
//	panic-handle  panic in Handle
//	panic-wait    panic in Wait
//	none          no response
//	body          the response as a pre-encoded Body
//	throttle-N    an immediate Msg that mutes the connection for N ms
//	wthrottle-N   a Msg from Wait that mutes the connection for N ms
//	wait-N        a Msg from a Wait that sleeps N ms
//	err-N         an immediate Msg whose topic has error code N
//	anything else an immediate Msg echoing the topic names
type testHandler struct {
	handled atomic.Int64
	gate    chan struct{}
	waitCtx atomic.Pointer[context.Context]
}

func newTestHandler() *testHandler { return &testHandler{gate: make(chan struct{})} }

func (h *testHandler) Versions(key int16) (int16, int16, bool) {
	switch key {
	case 18:
		return 0, kmsg.NewPtrApiVersionsRequest().MaxVersion(), true
	case 3:
		return 1, kmsg.NewPtrMetadataRequest().MaxVersion(), true
	}
	return 0, 0, false
}

func (h *testHandler) apiVersions(errCode int16) *kmsg.ApiVersionsResponse {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.ErrorCode = errCode
	for _, k := range []int16{3, 18} {
		lo, hi, _ := h.Versions(k)
		resp.ApiKeys = append(resp.ApiKeys, kmsg.ApiVersionsResponseApiKey{ApiKey: k, MinVersion: lo, MaxVersion: hi})
	}
	return resp
}

func echo(req *kmsg.MetadataRequest) *kmsg.MetadataResponse {
	resp := kmsg.NewPtrMetadataResponse()
	for _, t := range req.Topics {
		rt := kmsg.NewMetadataResponseTopic()
		rt.Topic = t.Topic
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func (h *testHandler) Handle(ctx context.Context, c *Conn, req *Request) Reply {
	h.handled.Add(1)
	switch body := req.Body.(type) {
	case *kmsg.ApiVersionsRequest:
		if req.UnsupportedVersion {
			return Reply{Msg: h.apiVersions(35)}
		}
		return Reply{Msg: h.apiVersions(0)}
	case *kmsg.MetadataRequest:
		name := ""
		if len(body.Topics) > 0 && body.Topics[0].Topic != nil {
			name = *body.Topics[0].Topic
		}
		resp := echo(body)
		switch name {
		case "gate":
			return Reply{Wait: func(ctx context.Context) Reply {
				h.waitCtx.Store(&ctx)
				select {
				case <-h.gate:
				case <-ctx.Done():
				}
				return Reply{Msg: resp}
			}}
		case "panic-handle":
			panic("handle boom")
		case "panic-wait":
			return Reply{Wait: func(context.Context) Reply { panic("wait boom") }}
		case "none":
			return Reply{None: true}
		case "body":
			resp.SetVersion(req.APIVersion)
			return Reply{Body: bytesBody(resp.AppendTo(nil))}
		}
		var ms int
		if _, err := fmt.Sscanf(name, "throttle-%d", &ms); err == nil {
			return Reply{Msg: resp, Throttle: time.Duration(ms) * time.Millisecond}
		}
		if _, err := fmt.Sscanf(name, "wait-%d", &ms); err == nil {
			return Reply{Wait: func(context.Context) Reply {
				time.Sleep(time.Duration(ms) * time.Millisecond)
				return Reply{Msg: resp}
			}}
		}
		if _, err := fmt.Sscanf(name, "err-%d", &ms); err == nil {
			resp.Topics[0].ErrorCode = int16(ms)
			return Reply{Msg: resp}
		}
		if _, err := fmt.Sscanf(name, "wthrottle-%d", &ms); err == nil {
			return Reply{Wait: func(context.Context) Reply {
				return Reply{Msg: resp, Throttle: time.Duration(ms) * time.Millisecond}
			}}
		}
		return Reply{Msg: resp}
	}
	panic(fmt.Sprintf("unexpected request %T", req.Body))
}

type bytesBody []byte

func (b bytesBody) Len() int                           { return len(b) }
func (b bytesBody) WriteTo(w io.Writer) (int64, error) { n, err := w.Write(b); return int64(n), err }

// start runs a server on 127.0.0.1:0 and stops it when the test ends.
func start(t *testing.T, cfg Config, h Handler) (*Server, string) {
	t.Helper()
	ln := listen(t)
	s := New(cfg, h)
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	t.Cleanup(func() {
		s.Close()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return s, ln.Addr().String()
}

func listen(tb testing.TB) net.Listener {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	return ln
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// client is a raw Kafka connection for tests.
type client struct {
	t  testing.TB
	nc net.Conn
	r  *bufio.Reader
}

func dial(t testing.TB, addr string) *client {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &client{t: t, nc: nc, r: bufio.NewReader(nc)}
}

func frame(payload []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(payload))), payload...)
}

func encode(corr int32, body kmsg.Request, version int16) []byte {
	body.SetVersion(version)
	id := "test"
	r := &Request{APIKey: body.Key(), APIVersion: version, CorrelationID: corr, ClientID: &id, Body: body}
	return frame(r.AppendTo(nil))
}

func metadata(topics ...string) *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	for _, name := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(name)
		req.Topics = append(req.Topics, rt)
	}
	return req
}

func (c *client) write(b []byte) {
	c.t.Helper()
	if _, err := c.nc.Write(b); err != nil {
		c.t.Fatal(err)
	}
}

// readResponse reads one response frame and returns its correlation id and
// body, with headerTags bytes of tagged fields skipped.
func (c *client) readResponse(headerTags bool) (int32, []byte, error) {
	c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	var hdr [4]byte
	if _, err := io.ReadFull(c.r, hdr[:]); err != nil {
		return 0, nil, err
	}
	buf := make([]byte, binary.BigEndian.Uint32(hdr[:]))
	if _, err := io.ReadFull(c.r, buf); err != nil {
		return 0, nil, err
	}
	corr := int32(binary.BigEndian.Uint32(buf))
	buf = buf[4:]
	if headerTags {
		if len(buf) == 0 || buf[0] != 0 {
			return 0, nil, fmt.Errorf("want empty header tags, got % x", buf[:min(1, len(buf))])
		}
		buf = buf[1:]
	}
	return corr, buf, nil
}

// readMetadata reads a Metadata response at version v and returns its
// correlation id and topic names.
func (c *client) readMetadata(v int16) (int32, []string) {
	c.t.Helper()
	corr, body, err := c.readResponse(v >= 9)
	if err != nil {
		c.t.Fatalf("read response: %v", err)
	}
	resp := kmsg.NewPtrMetadataResponse()
	resp.SetVersion(v)
	if err := resp.ReadFrom(body); err != nil {
		c.t.Fatalf("decode response: %v", err)
	}
	var names []string
	for _, t := range resp.Topics {
		names = append(names, *t.Topic)
	}
	return corr, names
}

// expectClosed asserts that the server closes the connection (EOF or
// reset) within d, without sending anything.
func (c *client) expectClosed(d time.Duration) {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(d))
	var b [1]byte
	n, err := c.r.Read(b[:])
	if n > 0 {
		c.t.Fatalf("got a byte %#x, want a closed connection", b[0])
	}
	if isTimeout(err) {
		c.t.Fatalf("connection still open after %v", d)
	}
	if err == nil {
		c.t.Fatal("read returned no error")
	}
}

func TestKgoClientRequests(t *testing.T) {
	h := newTestHandler()
	s, addr := start(t, Config{}, h)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	resp, err := cl.Request(ctx, kmsg.NewPtrApiVersionsRequest())
	if err != nil {
		t.Fatal(err)
	}
	av := resp.(*kmsg.ApiVersionsResponse)
	if av.ErrorCode != 0 || len(av.ApiKeys) != 2 || av.ApiKeys[0].ApiKey != 3 {
		t.Fatalf("ApiVersions response %+v", av)
	}

	// Metadata at a non-flexible and a flexible version, through clients
	// pinned to them.
	for _, v := range []int16{4, 8, 9, kmsg.NewPtrMetadataRequest().MaxVersion()} {
		vs := kversion.Stable()
		vs.SetMaxKeyVersion(3, v)
		vcl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.MaxVersions(vs))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := vcl.Request(ctx, metadata("a", "b-"+fmt.Sprint(v)))
		vcl.Close()
		if err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		md := resp.(*kmsg.MetadataResponse)
		if md.Version != v || len(md.Topics) != 2 || *md.Topics[0].Topic != "a" || *md.Topics[1].Topic != "b-"+fmt.Sprint(v) {
			t.Fatalf("v%d: version %d topics %+v", v, md.Version, md.Topics)
		}
	}
	st := s.Stats()
	if st.Requests[18] < 1 || st.Requests[3] < 4 || st.BytesIn == 0 || st.BytesOut == 0 || st.ConnectionsOpen < 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestPipelinedInOrderWithDelayedWait(t *testing.T) {
	h := newTestHandler()
	_, addr := start(t, Config{}, h)
	c := dial(t, addr)
	const n = 100
	const v = 12
	var out []byte
	for i := range n {
		name := fmt.Sprintf("t%d", i)
		if i == 1 {
			name = "gate"
		}
		out = append(out, encode(int32(i), metadata(name), v)...)
	}
	c.write(out)
	if corr, names := c.readMetadata(v); corr != 0 || names[0] != "t0" {
		t.Fatalf("first response corr %d %v", corr, names)
	}
	// Every request is handled while request 1 waits...
	waitFor(t, 5*time.Second, "all requests handled", func() bool { return h.handled.Load() == n })
	// ...but nothing after it is answered before it.
	c.nc.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	var b [1]byte
	if k, err := c.r.Read(b[:]); k != 0 || !isTimeout(err) {
		t.Fatalf("read %d bytes (%v) while request 1 waits", k, err)
	}
	close(h.gate)
	for i := 1; i < n; i++ {
		corr, names := c.readMetadata(v)
		want := fmt.Sprintf("t%d", i)
		if i == 1 {
			want = "gate"
		}
		if corr != int32(i) || len(names) != 1 || names[0] != want {
			t.Fatalf("response %d: corr %d names %v", i, corr, names)
		}
	}
}

func TestManyPipelinedRequests(t *testing.T) { // B-18
	h := newTestHandler()
	_, addr := start(t, Config{QueuedMaxRequests: 16}, h)
	c := dial(t, addr)
	n := 10000
	if raceEnabled {
		n = 2000
	}
	const v = 9
	werr := make(chan error, 1)
	go func() {
		var out []byte
		for i := range n {
			out = append(out, encode(int32(i), metadata(fmt.Sprintf("t%d", i)), v)...)
		}
		_, err := c.nc.Write(out)
		werr <- err
	}()
	for i := range n {
		corr, names := c.readMetadata(v)
		if corr != int32(i) || len(names) != 1 || names[0] != fmt.Sprintf("t%d", i) {
			t.Fatalf("response %d: corr %d names %v", i, corr, names)
		}
	}
	if err := <-werr; err != nil {
		t.Fatal(err)
	}
}

func TestQueueBackPressure(t *testing.T) { // B-18
	h := newTestHandler()
	const queued = 2
	_, addr := start(t, Config{QueuedMaxRequests: queued}, h)
	c := dial(t, addr)
	var out []byte
	out = append(out, encode(0, metadata("gate"), 4)...)
	for i := 1; i < 20; i++ {
		out = append(out, encode(int32(i), metadata("x"), 4)...)
	}
	c.write(out)
	// One reply in the writer (blocked in Wait), queued in the channel, and
	// one reader blocked handing its reply over.
	const limit = 1 + queued + 1
	waitFor(t, 5*time.Second, "queue to fill", func() bool { return h.handled.Load() == limit })
	time.Sleep(50 * time.Millisecond) // NB: checks that no more are read; a poll cannot show absence
	if got := h.handled.Load(); got != limit {
		t.Fatalf("handled %d requests with the queue full, want %d", got, limit)
	}
	close(h.gate)
	for i := range 20 {
		if corr, _ := c.readMetadata(4); corr != int32(i) {
			t.Fatalf("response %d has corr %d", i, corr)
		}
	}
}

func TestReplyKinds(t *testing.T) {
	h := newTestHandler()
	_, addr := start(t, Config{}, h)
	c := dial(t, addr)
	for _, v := range []int16{4, 9} {
		var out []byte
		out = append(out, encode(1, metadata("none"), v)...)
		out = append(out, encode(2, metadata("body", "y"), v)...)
		out = append(out, encode(3, metadata("z"), v)...)
		c.write(out)
		if corr, names := c.readMetadata(v); corr != 2 || strings.Join(names, ",") != "body,y" {
			t.Fatalf("v%d: corr %d names %v", v, corr, names)
		}
		if corr, names := c.readMetadata(v); corr != 3 || strings.Join(names, ",") != "z" {
			t.Fatalf("v%d: corr %d names %v", v, corr, names)
		}
	}
}

func TestApiVersionsUnsupportedVersion(t *testing.T) { // B-07
	h := newTestHandler()
	_, addr := start(t, Config{}, h)
	c := dial(t, addr)
	// Header v2 layout with a body the server cannot know.
	payload := []byte{0, 18, 0, 99, 0, 0, 0, 7, 0, 2, 'i', 'd', 0, 0xde, 0xad, 0xbe, 0xef}
	c.write(frame(payload))
	corr, body, err := c.readResponse(false)
	if err != nil {
		t.Fatal(err)
	}
	if corr != 7 {
		t.Fatalf("corr %d", corr)
	}
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(0)
	if err := resp.ReadFrom(body); err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != 35 || len(resp.ApiKeys) != 2 {
		t.Fatalf("response %+v", resp)
	}
	// v0 layout exactly: error code, array of (key, min, max).
	want := []byte{0, 35, 0, 0, 0, 2}
	if !bytes.HasPrefix(body, want) || len(body) != 6+2*6 {
		t.Fatalf("body % x", body)
	}
	// The connection stays usable.
	c.write(encode(8, kmsg.NewPtrApiVersionsRequest(), 3))
	if corr, _, err := c.readResponse(false); err != nil || corr != 8 {
		t.Fatalf("corr %d err %v", corr, err)
	}
}

func TestBadInputClosesConnection(t *testing.T) {
	h := newTestHandler()
	_, addr := start(t, Config{MaxRequestBytes: 1 << 20}, h)
	be32 := func(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }
	flexHeader := []byte{0, 3, 0, 12, 0, 0, 0, 1, 0xff, 0xff} // Metadata v12, null client id
	for _, tc := range []struct {
		name string
		in   []byte
	}{
		{"B-01 zero size", be32(0)},
		{"B-01 negative size", be32(0xffffffff)},
		{"B-02 above max", be32(1<<20 + 1)},
		{"B-02 huge", be32(0x7fffffff)},
		{"B-04 TLS ClientHello", []byte{0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03}},
		{"B-06 unknown key", frame([]byte{0x03, 0xe8, 0, 0, 0, 0, 0, 1, 0xff, 0xff})},
		{"B-06 key not served", encode(1, kmsg.NewPtrProduceRequest(), 9)},
		{"B-08 version above max", frame([]byte{0, 3, 0, 99, 0, 0, 0, 1, 0xff, 0xff})},
		{"B-08 version below min", encode(1, metadata("x"), 0)},
		{"B-09 array count 2^31-1", frame(append([]byte{0, 3, 0, 1, 0, 0, 0, 1, 0xff, 0xff}, 0x7f, 0xff, 0xff, 0xff, 0, 1, 'a'))},
		{"B-09 overlong varint", frame(append(append([]byte{}, flexHeader...), 0xff, 0xff, 0xff, 0xff, 0xff, 0x01))},
		{"B-09 tag size past end", frame(append(append([]byte{}, flexHeader...), 1, 0, 100, 1, 2))},
		{"B-09 duplicate tags", frame(append(append([]byte{}, flexHeader...), 2, 5, 0, 5, 0, 0, 0))},
		{"B-09 header too short", frame([]byte{0, 3, 0, 1})},
		{"B-09 client id past end", frame([]byte{0, 3, 0, 1, 0, 0, 0, 1, 0x7f, 0xff, 'a'})},
		{"B-09 truncated body", frame([]byte{0, 3, 0, 4, 0, 0, 0, 1, 0xff, 0xff, 0, 0, 0, 1})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dial(t, addr)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			c.write(tc.in)
			c.expectClosed(5 * time.Second)
			runtime.ReadMemStats(&after)
			if d := after.TotalAlloc - before.TotalAlloc; d > 4<<20 {
				t.Fatalf("allocated %d bytes", d)
			}
		})
	}
}

func TestIdleTimeout(t *testing.T) { // B-05
	h := newTestHandler()
	_, addr := start(t, Config{IdleTimeout: 200 * time.Millisecond}, h)

	t.Run("stalled frame", func(t *testing.T) {
		c := dial(t, addr)
		c.write(append(binary.BigEndian.AppendUint32(nil, 1000), make([]byte, 10)...))
		began := time.Now()
		c.expectClosed(5 * time.Second)
		if el := time.Since(began); el < 150*time.Millisecond {
			t.Fatalf("closed after %v, before the idle timeout", el)
		}
	})
	t.Run("silent", func(t *testing.T) {
		c := dial(t, addr)
		c.expectClosed(5 * time.Second)
	})
	t.Run("long Wait keeps the connection", func(t *testing.T) {
		h := newTestHandler()
		_, addr := start(t, Config{IdleTimeout: 100 * time.Millisecond}, h)
		c := dial(t, addr)
		c.write(encode(1, metadata("gate"), 4))
		waitFor(t, 5*time.Second, "request handled", func() bool { return h.waitCtx.Load() != nil })
		time.Sleep(400 * time.Millisecond) // NB: several idle timeouts pass while the Wait blocks
		close(h.gate)
		if corr, names := c.readMetadata(4); corr != 1 || names[0] != "gate" {
			t.Fatalf("corr %d names %v", corr, names)
		}
		c.expectClosed(5 * time.Second) // and idles out afterwards
	})
	t.Run("active connection stays", func(t *testing.T) {
		c := dial(t, addr)
		for i := range 5 {
			c.write(encode(int32(i), metadata("x"), 4))
			c.readMetadata(4)
			time.Sleep(100 * time.Millisecond)
		}
	})
}

func TestPanicIsolation(t *testing.T) {
	h := newTestHandler()
	s, addr := start(t, Config{}, h)
	for i, name := range []string{"panic-handle", "panic-wait"} {
		c := dial(t, addr)
		c.write(encode(1, metadata(name), 4))
		c.expectClosed(5 * time.Second)
		if got := s.Panics(); got != int64(i+1) {
			t.Fatalf("Panics() = %d, want %d", got, i+1)
		}
	}
	c := dial(t, addr)
	c.write(encode(5, metadata("ok"), 4))
	if corr, names := c.readMetadata(4); corr != 5 || names[0] != "ok" {
		t.Fatalf("after panics: corr %d names %v", corr, names)
	}
}

func TestShutdownLetsWaitFinish(t *testing.T) {
	h := newTestHandler()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := New(Config{}, h)
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	c := dial(t, ln.Addr().String())
	c.write(encode(1, metadata("gate"), 4))
	waitFor(t, 5*time.Second, "request handled", func() bool { return h.waitCtx.Load() != nil })

	done := make(chan error, 1)
	go func() { done <- s.Shutdown(context.Background()) }()
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		t.Fatal("listener still accepts")
	}
	select {
	case err := <-done:
		t.Fatalf("Shutdown returned %v while a Wait is pending", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(h.gate)
	if corr, names := c.readMetadata(4); corr != 1 || names[0] != "gate" {
		t.Fatalf("corr %d names %v", corr, names)
	}
	if err := <-done; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	c.expectClosed(5 * time.Second)
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatalf("second Shutdown: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestShutdownDeadline(t *testing.T) {
	h := newTestHandler()
	s, addr := start(t, Config{}, h)
	c := dial(t, addr)
	c.write(encode(1, metadata("gate"), 4))
	waitFor(t, 5*time.Second, "request handled", func() bool { return h.waitCtx.Load() != nil })
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := s.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown = %v", err)
	}
	if err := (*h.waitCtx.Load()).Err(); err == nil {
		t.Fatal("Wait context still live after Shutdown gave up")
	}
	c.expectClosed(5 * time.Second)
}

func TestServeAfterClose(t *testing.T) {
	s := New(Config{}, newTestHandler())
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Serve(ln); err != nil {
		t.Fatalf("Serve after Close = %v", err)
	}
	if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		t.Fatal("listener left open")
	}
}

func TestCloseManyConnections(t *testing.T) {
	h := newTestHandler()
	s, addr := start(t, Config{}, h)
	var wg sync.WaitGroup
	for range 20 {
		c := dial(t, addr)
		c.write(encode(1, metadata("gate"), 4))
		wg.Add(1)
		go func() { defer wg.Done(); c.expectClosed(5 * time.Second) }()
	}
	waitFor(t, 5*time.Second, "all handled", func() bool { return h.handled.Load() == 20 })
	if got := s.Stats().ConnectionsOpen; got != 20 {
		t.Fatalf("ConnectionsOpen = %d", got)
	}
	s.Close()
	wg.Wait()
	if got := s.Stats().ConnectionsOpen; got != 0 {
		t.Fatalf("ConnectionsOpen after Close = %d", got)
	}
}

// Reference: KIP-219: a throttled response goes out at once and the
// connection is muted afterwards: no later request of the connection is
// handled until the throttle time has passed, whether the throttle came
// from Handle (a request pipelined behind it waits too) or from Wait (a
// request sent after the response waits; one the reader took while Wait
// ran was handled before the throttle was known).
func TestThrottleMutesTheConnectionAfterTheResponse(t *testing.T) {
	for _, first := range []string{"throttle-2000", "wthrottle-2000"} {
		t.Run(first, func(t *testing.T) {
			h := newTestHandler()
			_, addr := start(t, Config{}, h)
			c := dial(t, addr)
			const v = 12
			began := time.Now()
			pipelined := first == "throttle-2000"
			out := encode(0, metadata(first), v)
			if pipelined {
				out = append(out, encode(1, metadata("next"), v)...)
			}
			c.write(out)
			if corr, names := c.readMetadata(v); corr != 0 || names[0] != first {
				t.Fatalf("first response corr %d %v", corr, names)
			}
			if !pipelined {
				c.write(encode(1, metadata("next"), v))
			}
			if d := time.Since(began); d >= 2*time.Second {
				t.Errorf("throttled response took %v; it must not wait for the throttle", d)
			}
			// NB: a long throttle, so that a loaded machine cannot make
			// the first response look late or the mute look over.
			time.Sleep(200 * time.Millisecond)
			if n := h.handled.Load(); n != 1 {
				t.Fatalf("%d requests handled while muted, want 1", n)
			}
			if corr, _ := c.readMetadata(v); corr != 1 {
				t.Fatalf("second response corr %d", corr)
			}
			if d := time.Since(began); d < 2*time.Second {
				t.Errorf("second response after %v, before the 2 s throttle ended", d)
			}
		})
	}
}

// A long mute does not hold up Shutdown.
func TestShutdownEndsAMute(t *testing.T) {
	h := newTestHandler()
	s, addr := start(t, Config{}, h)
	c := dial(t, addr)
	c.write(encode(0, metadata("throttle-3600000"), 12))
	c.readMetadata(12)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	began := time.Now()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if d := time.Since(began); d > 2*time.Second {
		t.Errorf("Shutdown took %v with a muted connection", d)
	}
}
