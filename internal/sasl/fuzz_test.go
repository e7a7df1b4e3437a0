package sasl

// Fuzz invariants, for every mechanism:
//
//  1. Step never panics, whatever the bytes.
//  2. Step never completes without the right credential: PLAIN only for
//     alice's exact password; SCRAM only with the proof a client holding
//     the password computes for that exchange; OAUTHBEARER only for a
//     token whose signed part this test signed.
//  3. An error wraps exactly one of ErrAuthenticationFailed, ErrMalformed
//     or ErrIllegalState, and a failed Session stays failed.

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"errors"
	"strings"
	"testing"
)

func checkStepErr(t *testing.T, err error) {
	t.Helper()
	n := 0
	for _, s := range []error{ErrAuthenticationFailed, ErrMalformed, ErrIllegalState} {
		if errors.Is(err, s) {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("error %v wraps %d sentinels, want 1", err, n)
	}
}

func FuzzPlain(f *testing.F) {
	f.Add([]byte("\x00alice\x00alice-secret"))
	f.Add([]byte("alice\x00alice\x00alice-secret"))
	users := NewPlainUsers(map[string]string{"alice": "alice-secret"})
	f.Fuzz(func(t *testing.T, in []byte) {
		s := NewPlain(users)
		_, done, err := s.Step(in)
		if err != nil {
			checkStepErr(t, err)
			return
		}
		msg := string(in)
		if !done || s.Principal() != "User:alice" ||
			(msg != "\x00alice\x00alice-secret" && msg != "alice\x00alice\x00alice-secret") {
			t.Fatalf("Step(%q) succeeded: done=%v principal=%q", in, done, s.Principal())
		}
	})
}

func FuzzScram(f *testing.F) {
	store := rfcStore(f)
	cred := store[[2]string{ScramSHA256, "user"}]
	f.Add([]byte(rfcClientFirst), []byte(rfcClientFinal))
	f.Add([]byte("n,a=user,n=user,r=abc"), []byte("c=bixhPXVzZXIs,r=abc"+rfcServerNonce+",p=AAAA"))
	f.Fuzz(func(t *testing.T, first, final []byte) {
		s := newFixedScram(ScramSHA256, store, rfcServerNonce)
		_, done, err := s.Step(first)
		if err != nil {
			checkStepErr(t, err)
			if _, _, err := s.Step(final); !errors.Is(err, ErrIllegalState) {
				t.Fatalf("Step after failure = %v", err)
			}
			return
		}
		if done {
			t.Fatalf("client-first completed the exchange")
		}
		_, done, err = s.Step(final)
		if err != nil {
			checkStepErr(t, err)
			return
		}
		// Only the password's proof for this very exchange may succeed.
		want := clientFinalFor(sha256.New, "pencil", cred, s.gs2Header, s.clientBare, s.serverFirst, s.nonce)
		if !done || s.Principal() != "User:user" || string(final) != want {
			t.Fatalf("client-final %q succeeded, want only %q", final, want)
		}
	})
}

// fuzzECKey is a fixed P-256 key so that committed seeds can carry tokens
// it signed.
func fuzzECKey(f *testing.F) *ecdsa.PrivateKey {
	d := sha256.Sum256([]byte("samsa sasl fuzz key"))
	k, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), d[:])
	if err != nil {
		f.Fatal(err)
	}
	return k
}

func FuzzOAuthBearer(f *testing.F) {
	key := fuzzECKey(f)
	ks := jwksOf(f, jwkJSON("k1", key))
	signed := map[string]bool{}
	for _, claims := range []map[string]any{goodClaims(), {"sub": "bob", "exp": testNow.Unix() + 60}} {
		tok := signJWT(f, "ES256", "k1", key, claims)
		signed[tok[:strings.LastIndex(tok, ".")]] = true
		f.Add(oauthMsg(tok))
		f.Add([]byte("n,a=alice,\x01auth=Bearer " + tok + "\x01x=y\x01\x01"))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		s := NewOAuthBearer(func() *KeySet { return ks }, OAuthConfig{Now: fixedNow})
		out, done, err := s.Step(in)
		if err != nil {
			checkStepErr(t, err)
			return
		}
		if !done {
			if string(out) != `{"status":"invalid_token"}` {
				t.Fatalf("refusal reply %q", out)
			}
			if _, _, err := s.Step([]byte{1}); !errors.Is(err, ErrAuthenticationFailed) {
				t.Fatalf("Step(0x01) after refusal = %v", err)
			}
			return
		}
		// After the gs2 header (two commas), keys are unique and values
		// hold no 0x01, so "\x01auth=" marks the one auth pair.
		_, rest, _ := strings.Cut(string(in), ",")
		_, rest, _ = strings.Cut(rest, ",")
		_, auth, _ := strings.Cut(rest, "\x01auth=")
		auth, _, _ = strings.Cut(auth, "\x01")
		tok := strings.TrimLeft(auth[len("Bearer"):], " ")
		if !signed[tok[:strings.LastIndex(tok, ".")]] {
			t.Fatalf("unsigned token %q accepted", tok)
		}
	})
}
