package server

// FuzzAuthPhase writes arbitrary byte streams, cut into writes of
// arbitrary sizes, to a SASL_PLAINTEXT listener serving PLAIN with the
// real sasl package (users alice and bob; re-authentication allowed).
// Invariants:
//
//  1. Nothing panics: Stats().Panics stays 0 (a panic in the reader is
//     recovered and counted; one in the writer would end the process).
//  2. Until an exchange with a user's right password succeeds, the handler
//     sees no request but ApiVersions: a request it sees with principal
//     User:ANONYMOUS is ApiVersions, any other principal is a known user,
//     and the principal of a connection never changes.
//  3. Each complete frame of the stream is answered, or the connection is
//     closed, within fuzzAuthBound of the stream being written.
//
// The seed corpus in testdata/fuzz/FuzzAuthPhase holds well-formed
// exchanges (PLAIN over SaslAuthenticate and over raw tokens, wrong
// passwords, requests before authentication, re-authentication as the
// same and another user) whole and split; regenerate it with
// -update-seeds.

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/sasl"
)

const (
	// fuzzAuthBound is how long the server may take to answer or close.
	fuzzAuthBound = 5 * time.Second
	// fuzzAuthMaxStream caps one input; larger inputs are cut.
	fuzzAuthMaxStream = 64 << 10
)

// authCheckHandler answers every request kmsg knows with an empty
// response and records, per client address, every breach of invariant 2.
type authCheckHandler struct {
	mu sync.Mutex
	// guarded by mu:
	principal map[string]string   // the first authenticated principal seen
	breaches  map[string][]string // what went wrong
}

func (h *authCheckHandler) Versions(key int16) (int16, int16, bool) { return allVersions(key) }

func (h *authCheckHandler) Handle(_ context.Context, c *Conn, req *Request) Reply {
	remote := c.Remote.String()
	h.mu.Lock()
	switch p := c.Principal; {
	case p == Anonymous:
		if req.APIKey != apiVersionsKey {
			h.breaches[remote] = append(h.breaches[remote], fmt.Sprintf("%s before authentication", kmsg.NameForKey(req.APIKey)))
		}
	case p != "User:alice" && p != "User:bob":
		h.breaches[remote] = append(h.breaches[remote], "unknown principal "+p)
	case h.principal[remote] == "":
		h.principal[remote] = p
	case h.principal[remote] != p:
		h.breaches[remote] = append(h.breaches[remote], fmt.Sprintf("principal changed from %s to %s", h.principal[remote], p))
	}
	h.mu.Unlock()
	return Reply{Msg: req.Body.ResponseKind()}
}

// takeBreaches returns and forgets what was recorded for remote.
func (h *authCheckHandler) takeBreaches(remote string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	b := h.breaches[remote]
	delete(h.breaches, remote)
	delete(h.principal, remote)
	return b
}

// plainUsersAuth serves PLAIN for users with the real sasl package.
type plainUsersAuth struct{ users *sasl.PlainUsers }

func (a plainUsersAuth) Mechanisms() []string { return []string{sasl.PLAIN} }
func (a plainUsersAuth) NewSession(m string) (SASLSession, bool) {
	if m != sasl.PLAIN {
		return nil, false
	}
	return sasl.NewPlain(a.users), true
}

// completeFrames counts the frames of stream the server reads whole
// before it stops: at a size outside 1..MaxAuthFrameBytes (which closes
// the connection) or at a frame the stream cuts short.
func completeFrames(stream []byte) int {
	n := 0
	for len(stream) >= 4 {
		size := int32(binary.BigEndian.Uint32(stream))
		if size <= 0 || size > MaxAuthFrameBytes || int(size) > len(stream)-4 {
			break
		}
		stream = stream[4+size:]
		n++
	}
	return n
}

func FuzzAuthPhase(f *testing.F) {
	for _, s := range authSeeds() {
		f.Add(s.stream, s.chunk)
	}
	h := &authCheckHandler{principal: map[string]string{}, breaches: map[string][]string{}}
	s := New(Config{}, h)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.Fatal(err)
	}
	served := make(chan error, 1)
	go func() {
		served <- s.ServeListener(ln, ListenerConfig{
			Name: "SASL_PLAINTEXT", SecurityProtocol: ProtocolSASLPlaintext,
			SASL:      plainUsersAuth{sasl.NewPlainUsers(map[string]string{"alice": "secret", "bob": "hunter2"})},
			MaxReauth: time.Hour,
		})
	}()
	f.Cleanup(func() {
		s.Close()
		if err := <-served; err != nil {
			f.Errorf("ServeListener: %v", err)
		}
	})
	addr := ln.Addr().String()

	f.Fuzz(func(t *testing.T, stream []byte, chunk uint8) {
		if len(stream) > fuzzAuthMaxStream {
			stream = stream[:fuzzAuthMaxStream]
		}
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		remote := nc.LocalAddr().String()

		// The writer may fail once the server closes; that is allowed.
		wrote := make(chan struct{})
		go func() {
			defer close(wrote)
			for rest := stream; len(rest) > 0; {
				n := min(int(chunk)+1, len(rest))
				if _, err := nc.Write(rest[:n]); err != nil {
					return
				}
				rest = rest[n:]
			}
		}()

		want := completeFrames(stream)
		nc.SetReadDeadline(time.Now().Add(fuzzAuthBound))
		r := bufio.NewReader(nc)
		got, closed := 0, false
		for got < want && !closed {
			var size [4]byte
			_, err := io.ReadFull(r, size[:])
			if err == nil {
				_, err = io.CopyN(io.Discard, r, int64(binary.BigEndian.Uint32(size[:])))
			}
			var ne net.Error
			switch {
			case err == nil:
				got++
			case errors.As(err, &ne) && ne.Timeout():
				t.Fatalf("%d of %d frames answered and the connection still open after %v", got, want, fuzzAuthBound)
			default:
				closed = true // EOF or reset
			}
		}
		nc.Close()
		<-wrote

		if b := h.takeBreaches(remote); len(b) > 0 {
			t.Fatalf("handler saw: %q", b)
		}
		if p := s.Stats().Panics; p != 0 {
			t.Fatalf("%d panics recovered", p)
		}
	})
}

// authSeed is one input of the seed corpus.
type authSeed struct {
	name   string
	stream []byte
	chunk  uint8
}

// authSeeds are well-formed exchanges, each whole and cut into 3-byte
// writes.
func authSeeds() []authSeed {
	id := "seed"
	var corr int32
	req := func(body kmsg.Request, version int16) []byte {
		corr++
		body.SetVersion(version)
		r := &Request{APIKey: body.Key(), APIVersion: version, CorrelationID: corr, ClientID: &id, Body: body}
		return frame(r.AppendTo(nil))
	}
	apiVersions := func() []byte {
		r := kmsg.NewPtrApiVersionsRequest()
		r.ClientSoftwareName, r.ClientSoftwareVersion = "seed", "1.0"
		return req(r, 3)
	}
	hs := func(mech string, v int16) []byte {
		r := kmsg.NewPtrSASLHandshakeRequest()
		r.Mechanism = mech
		return req(r, v)
	}
	auth := func(msg string, v int16) []byte {
		r := kmsg.NewPtrSASLAuthenticateRequest()
		r.SASLAuthBytes = []byte(msg)
		return req(r, v)
	}
	md := func() []byte { return req(metadata("orders"), 9) }
	cat := func(parts ...[]byte) []byte {
		var out []byte
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	const alice, bob, wrong = "\x00alice\x00secret", "\x00bob\x00hunter2", "\x00alice\x00Secret"
	streams := map[string][]byte{
		"login":                    cat(apiVersions(), hs("PLAIN", 1), auth(alice, 2), md()),
		"login-v0-authenticate":    cat(hs("PLAIN", 1), auth(alice, 0), md()),
		"login-authzid":            cat(hs("PLAIN", 1), auth("alice"+alice, 1), md()),
		"wrong-password":           cat(apiVersions(), hs("PLAIN", 1), auth(wrong, 2), md()),
		"wrong-authzid":            cat(hs("PLAIN", 1), auth("bob"+alice, 2), md()),
		"metadata-first":           cat(md()),
		"metadata-after-versions":  cat(apiVersions(), md()),
		"metadata-after-handshake": cat(hs("PLAIN", 1), md()),
		"authenticate-first":       cat(auth(alice, 2), md()),
		"unknown-mechanism":        cat(hs("SCRAM-SHA-256", 1), auth(alice, 2), md()),
		"raw-token":                cat(hs("PLAIN", 0), frame([]byte(alice)), md()),
		"raw-token-wrong":          cat(hs("PLAIN", 0), frame([]byte(wrong)), md()),
		"reauth-same-user":         cat(hs("PLAIN", 1), auth(alice, 2), md(), hs("PLAIN", 1), auth(alice, 2), md()),
		"reauth-other-user":        cat(hs("PLAIN", 1), auth(alice, 2), md(), hs("PLAIN", 1), auth(bob, 2), md()),
		"reauth-v0-handshake":      cat(hs("PLAIN", 1), auth(alice, 2), hs("PLAIN", 0), frame([]byte(alice)), md()),
		"second-authenticate":      cat(hs("PLAIN", 1), auth(alice, 2), auth(alice, 2), md()),
		"empty-frame":              cat(hs("PLAIN", 1), []byte{0, 0, 0, 0}),
		"oversized-frame":          cat(apiVersions(), []byte{0x00, 0x08, 0x00, 0x01}, make([]byte, 16)),
		"unsupported-versions":     cat([]byte{0, 0, 0, 12, 0, 18, 0, 99, 0, 0, 0, 1, 0, 2, 'x', 'y'}, hs("PLAIN", 1), auth(alice, 2), md()),
	}
	var out []authSeed
	for _, name := range slices.Sorted(maps.Keys(streams)) {
		out = append(out, authSeed{name, streams[name], 255}, authSeed{name + "-split", streams[name], 2})
	}
	return out
}

// TestAuthPhaseSeeds writes the FuzzAuthPhase seed corpus under
// -update-seeds. Without the flag, go test runs the committed corpus as
// part of FuzzAuthPhase.
func TestAuthPhaseSeeds(t *testing.T) {
	if !*updateSeeds {
		t.Skip("run with -update-seeds to rewrite testdata/fuzz/FuzzAuthPhase")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzAuthPhase")
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, s := range authSeeds() {
		body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\nuint8(%d)\n", s.stream, s.chunk)
		if err := os.WriteFile(filepath.Join(dir, s.name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
