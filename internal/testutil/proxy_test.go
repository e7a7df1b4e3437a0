package testutil

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// noLeaks checks, after every other cleanup of t, that no goroutine of
// the proxy or the target is left.
func noLeaks(t *testing.T) {
	t.Helper()
	t.Cleanup(func() { goleak.VerifyNone(t) })
}

// frameEcho is a target that answers every size-prefixed frame with the
// same frame and counts the frames it received.
type frameEcho struct {
	ln       net.Listener
	received atomic.Int64
	wg       sync.WaitGroup
	mu       sync.Mutex
	conns    []net.Conn
}

func startFrameEcho(t *testing.T) *frameEcho {
	t.Helper()
	noLeaks(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e := &frameEcho{ln: ln}
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			e.mu.Lock()
			e.conns = append(e.conns, c)
			e.mu.Unlock()
			e.wg.Add(1)
			go func() {
				defer e.wg.Done()
				defer c.Close()
				for {
					buf, err := readFrame(c)
					if err != nil {
						return
					}
					e.received.Add(1)
					if _, err := c.Write(buf); err != nil {
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		e.mu.Lock()
		for _, c := range e.conns {
			c.Close()
		}
		e.mu.Unlock()
		e.wg.Wait()
	})
	return e
}

// frame returns a request frame with apiKey and a payload.
func frame(apiKey int16, payload string) []byte {
	b := make([]byte, 4+2+len(payload))
	binary.BigEndian.PutUint32(b, uint32(2+len(payload)))
	binary.BigEndian.PutUint16(b[4:], uint16(apiKey))
	copy(b[6:], payload)
	return b
}

func roundTrip(t *testing.T, c net.Conn, req []byte) ([]byte, error) {
	t.Helper()
	if _, err := c.Write(req); err != nil {
		return nil, err
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	return readFrame(c)
}

func TestProxyForwardsFramesBothWays(t *testing.T) {
	e := startFrameEcho(t)
	p := NewProxy(t, e.ln.Addr().String())
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i, s := range []string{"a", "", "hello world"} {
		req := frame(int16(i), s)
		got, err := roundTrip(t, c, req)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if !bytes.Equal(got, req) {
			t.Fatalf("frame %d: got %x, want %x", i, got, req)
		}
	}
	if p.Requests() != 3 || e.received.Load() != 3 {
		t.Fatalf("proxy forwarded %d, target received %d, want 3 and 3", p.Requests(), e.received.Load())
	}
}

func TestProxyDropAfterRequestsDeliversRequestLosesResponse(t *testing.T) {
	e := startFrameEcho(t)
	p := NewProxy(t, e.ln.Addr().String())
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := roundTrip(t, c, frame(3, "first")); err != nil {
		t.Fatal(err)
	}
	p.SetDropAfterRequests(1)
	_, err = roundTrip(t, c, frame(0, "second"))
	if err == nil {
		t.Fatal("response to the cut request reached the client")
	}
	if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
		var ne net.Error
		if !errors.As(err, &ne) || ne.Timeout() {
			t.Fatalf("read after cut: %v, want EOF or reset", err)
		}
	}
	Eventually(t, 5*time.Second, func() error {
		if n := e.received.Load(); n != 2 {
			return Errorf("target received %d requests, want 2", n)
		}
		return nil
	})
	// NB: the proxy counts the cut after closing the client's side, so
	// the client can see the close first.
	Eventually(t, 5*time.Second, func() error {
		if n := p.Cuts(); n != 1 {
			return Errorf("cuts = %d, want 1", n)
		}
		return nil
	})
	// One-shot: a new connection works again.
	c2, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if _, err := roundTrip(t, c2, frame(0, "third")); err != nil {
		t.Fatalf("after the one-shot cut: %v", err)
	}
}

func TestProxyDropAPIKeysCutsOnlyThoseKeys(t *testing.T) {
	e := startFrameEcho(t)
	p := NewProxy(t, e.ln.Addr().String())
	p.SetDropAPIKeys(0)
	p.SetDropProbability(1)
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := 0; i < 5; i++ {
		if _, err := roundTrip(t, c, frame(3, "metadata")); err != nil {
			t.Fatalf("request %d with key 3 was cut: %v", i, err)
		}
	}
	if _, err := roundTrip(t, c, frame(0, "produce")); err == nil {
		t.Fatal("request with key 0 was not cut")
	}
}

func TestProxyResponseDelayKeepsOrder(t *testing.T) {
	e := startFrameEcho(t)
	p := NewProxy(t, e.ln.Addr().String())
	const delay = 50 * time.Millisecond
	p.SetResponseDelay(delay, 20*time.Millisecond)
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	began := time.Now()
	var reqs [][]byte
	for i := 0; i < 10; i++ {
		req := frame(1, string(rune('a'+i)))
		reqs = append(reqs, req)
		if _, err := c.Write(req); err != nil {
			t.Fatal(err)
		}
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	for i, want := range reqs {
		got, err := readFrame(c)
		if err != nil {
			t.Fatalf("response %d: %v", i, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("response %d: got %q, want %q", i, got, want)
		}
	}
	if el := time.Since(began); el < delay {
		t.Fatalf("10 pipelined responses took %v, want at least %v", el, delay)
	}
}

func TestProxyDropAllAndCloseEndEveryConnection(t *testing.T) {
	e := startFrameEcho(t)
	p := NewProxy(t, e.ln.Addr().String())
	var conns []net.Conn
	for i := 0; i < 3; i++ {
		c, err := net.Dial("tcp", p.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := roundTrip(t, c, frame(18, "hi")); err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	p.DropAll()
	for i, c := range conns {
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err == nil {
			t.Fatalf("conn %d still open after DropAll", i)
		} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatalf("conn %d still open after DropAll", i)
		}
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := net.DialTimeout("tcp", p.Addr(), time.Second); err == nil {
		t.Fatal("proxy still accepts after Close")
	}
}
