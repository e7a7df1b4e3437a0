package sasl

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"hash"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// scramTestStore holds alice (password "alice-secret") for both
// mechanisms, "low" with 4095 stored iterations, and "a,b=c".
func scramTestStore(t *testing.T) memStore {
	t.Helper()
	m := memStore{}
	for _, mech := range []string{ScramSHA256, ScramSHA512} {
		for user, pw := range map[string]string{"alice": "alice-secret", "a,b=c": "pw"} {
			c, err := NewScramCredential(mech, pw, []byte("salt-"+user), 4096)
			if err != nil {
				t.Fatal(err)
			}
			m[[2]string{mech, user}] = c
		}
		// A credential stored before the iteration floor was enforced.
		c, _ := NewScramCredential(mech, "low-secret", []byte("salt"), 4096)
		c.Iterations = 4095
		m[[2]string{mech, "low"}] = c
	}
	return m
}

func TestScramFranzClientAuthenticatesAsUser(t *testing.T) {
	store := scramTestStore(t)
	tests := []struct {
		mech, zid, user, pass string
	}{
		{ScramSHA256, "", "alice", "alice-secret"},
		{ScramSHA512, "", "alice", "alice-secret"},
		{ScramSHA256, "alice", "alice", "alice-secret"},
		{ScramSHA512, "", "a,b=c", "pw"},
	}
	for _, tt := range tests {
		t.Run(tt.mech+"/"+tt.user+"/zid="+tt.zid, func(t *testing.T) {
			a := scram.Auth{Zid: tt.zid, User: tt.user, Pass: tt.pass}
			m := a.AsSha256Mechanism()
			if tt.mech == ScramSHA512 {
				m = a.AsSha512Mechanism()
			}
			s := NewScram(tt.mech, store, Config{})
			if err := drive(t, s, m); err != nil {
				t.Fatalf("exchange: %v", err)
			}
			if got, want := s.Principal(), "User:"+tt.user; got != want {
				t.Fatalf("Principal = %q, want %q", got, want)
			}
		})
	}
}

func TestScramFranzClientWithWrongPasswordFails(t *testing.T) {
	store := scramTestStore(t)
	for _, user := range []string{"alice", "nobody", "low"} {
		t.Run(user, func(t *testing.T) {
			s := NewScram(ScramSHA256, store, Config{})
			err := drive(t, s, scram.Auth{User: user, Pass: "wrong"}.AsSha256Mechanism())
			if !errors.Is(err, ErrAuthenticationFailed) {
				t.Fatalf("err = %v, want ErrAuthenticationFailed", err)
			}
		})
	}
}

// RFC 7677 §3's SCRAM-SHA-256 example.
const (
	rfcClientFirst = "n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
	rfcServerNonce = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
	rfcServerFirst = "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
	rfcClientFinal = "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
	rfcServerFinal = "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
)

func rfcStore(t testing.TB) memStore {
	t.Helper()
	salt, _ := base64.StdEncoding.DecodeString("W22ZaJ0SNY7soEsUEjb6gQ==")
	c, err := NewScramCredential(ScramSHA256, "pencil", salt, 4096)
	if err != nil {
		t.Fatal(err)
	}
	return memStore{{ScramSHA256, "user"}: c}
}

// newFixedScram returns a SCRAM session whose server nonce is nonce.
func newFixedScram(mech string, store ScramStore, nonce string) *scramSession {
	s := NewScram(mech, store, Config{}).(*scramSession)
	s.fixedNonce = nonce
	return s
}

// Reference: RFC 7677 §3.
func TestScramRFC7677ExchangeMatchesTestVector(t *testing.T) {
	s := newFixedScram(ScramSHA256, rfcStore(t), rfcServerNonce)
	out, done, err := s.Step([]byte(rfcClientFirst))
	if err != nil || done || string(out) != rfcServerFirst {
		t.Fatalf("server-first = %q, %v, %v; want %q", out, done, err, rfcServerFirst)
	}
	out, done, err = s.Step([]byte(rfcClientFinal))
	if err != nil || !done || string(out) != rfcServerFinal {
		t.Fatalf("server-final = %q, %v, %v; want %q", out, done, err, rfcServerFinal)
	}
	if s.Principal() != "User:user" {
		t.Fatalf("Principal = %q", s.Principal())
	}
	// Reference: RFC 5802 §5: one exchange, one completion.
	if _, _, err := s.Step([]byte(rfcClientFinal)); !errors.Is(err, ErrIllegalState) {
		t.Fatalf("replayed client-final after completion = %v, want ErrIllegalState", err)
	}
}

// Reference: KIP-554. The salted password a client sends yields the same
// credential as the password.
func TestCredentialFromSaltedPasswordMatchesPasswordDerivation(t *testing.T) {
	salt := []byte("some-salt")
	for _, mech := range []string{ScramSHA256, ScramSHA512} {
		t.Run(mech, func(t *testing.T) {
			h := sha256.New
			if mech == ScramSHA512 {
				h = sha512.New
			}
			want, err := NewScramCredential(mech, "pencil", salt, 8192)
			if err != nil {
				t.Fatal(err)
			}
			salted := pbkdf2Ref(h, "pencil", salt, 8192)
			got, err := CredentialFromSaltedPassword(mech, salt, salted, 8192)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.StoredKey, want.StoredKey) || !bytes.Equal(got.ServerKey, want.ServerKey) ||
				!bytes.Equal(got.Salt, salt) || got.Iterations != 8192 {
				t.Fatalf("credential from salted password differs from the password's")
			}
		})
	}
}

// pbkdf2Ref is RFC 2898's PBKDF2 for one block, written out as a
// reference independent of crypto/pbkdf2.
func pbkdf2Ref(h func() hash.Hash, password string, salt []byte, iter int) []byte {
	m := hmac.New(h, []byte(password))
	m.Write(salt)
	m.Write([]byte{0, 0, 0, 1})
	u := m.Sum(nil)
	out := bytes.Clone(u)
	for range iter - 1 {
		m.Reset()
		m.Write(u)
		u = m.Sum(u[:0])
		for i := range out {
			out[i] ^= u[i]
		}
	}
	return out
}

func TestScramCredentialRefusesIterationsOutsideKafkaRange(t *testing.T) {
	tests := []struct {
		iter int
		want error
	}{
		{4095, ErrIterations}, {16385, ErrIterations}, {0, ErrIterations}, {-1, ErrIterations},
		{4096, nil}, {16384, nil},
	}
	for _, tt := range tests {
		t.Run(strconv.Itoa(tt.iter), func(t *testing.T) {
			_, err := NewScramCredential(ScramSHA256, "pw", []byte("salt"), tt.iter)
			if !errors.Is(err, tt.want) {
				t.Fatalf("NewScramCredential: %v, want %v", err, tt.want)
			}
			_, err = CredentialFromSaltedPassword(ScramSHA512, []byte("salt"), make([]byte, 64), tt.iter)
			if !errors.Is(err, tt.want) {
				t.Fatalf("CredentialFromSaltedPassword: %v, want %v", err, tt.want)
			}
		})
	}
	if _, err := NewScramCredential("SCRAM-SHA-1", "pw", []byte("s"), 4096); !errors.Is(err, ErrUnsupportedMechanism) {
		t.Fatalf("SCRAM-SHA-1: %v", err)
	}
	if _, err := NewScramCredential(ScramSHA256, "", []byte("s"), 4096); !errors.Is(err, ErrInvalidCredential) {
		t.Fatalf("empty password: %v", err)
	}
	if _, err := CredentialFromSaltedPassword(ScramSHA256, nil, []byte("x"), 4096); !errors.Is(err, ErrInvalidCredential) {
		t.Fatalf("empty salt: %v", err)
	}
}

// clientFinalFor computes the client-final message a client with password
// sends for the exchange so far: gs2 is the header it binds to (in c=).
func clientFinalFor(h func() hash.Hash, password string, cred ScramCredential, gs2, clientBare, serverFirst, nonce string) string {
	salted := pbkdf2Ref(h, password, cred.Salt, cred.Iterations)
	ck := hmac.New(h, salted)
	ck.Write([]byte("Client Key"))
	clientKey := ck.Sum(nil)
	d := h()
	d.Write(clientKey)
	storedKey := d.Sum(nil)
	without := "c=" + base64.StdEncoding.EncodeToString([]byte(gs2)) + ",r=" + nonce
	m := hmac.New(h, storedKey)
	m.Write([]byte(clientBare + "," + serverFirst + "," + without))
	proof := m.Sum(nil)
	for i := range proof {
		proof[i] ^= clientKey[i]
	}
	return without + ",p=" + base64.StdEncoding.EncodeToString(proof)
}

// firstFails marks a row whose client-first must fail.
const firstFails = "<client-first fails>"

func TestScramRefusesBadExchanges(t *testing.T) {
	store := scramTestStore(t)
	const cnonce = "clientnonce"
	const snonce = "servernonce"
	cred := store[[2]string{ScramSHA256, "alice"}]
	first := "n,,n=alice,r=" + cnonce
	serverFirst := "r=" + cnonce + snonce + ",s=" + base64.StdEncoding.EncodeToString(cred.Salt) + ",i=4096"
	final := func(pw, gs2, nonce string) string {
		return clientFinalFor(sha256.New, pw, cred, gs2, "n=alice,r="+cnonce, serverFirst, nonce)
	}
	good := final("alice-secret", "n,,", cnonce+snonce)
	flipProof := func(m string) string {
		b := []byte(m)
		i := strings.LastIndex(m, "p=") + 3
		b[i] ^= 1
		if b[i] == '+' || b[i] == '/' || b[i] == '=' || b[i] == '*' || b[i] == '.' {
			b[i] = 'A'
		}
		return string(b)
	}
	tests := []struct {
		name         string
		first, final string // final firstFails means the first message must fail
		want         error
	}{
		{"valid exchange", first, good, nil},
		{"wrong password", first, final("wrong", "n,,", cnonce+snonce), ErrAuthenticationFailed},
		{"bad proof", first, flipProof(good), ErrAuthenticationFailed},
		{"short proof", first, strings.Split(good, ",p=")[0] + ",p=AAAA", ErrAuthenticationFailed},
		{"empty proof", first, strings.Split(good, ",p=")[0] + ",p=", ErrAuthenticationFailed},
		// Reference: CVE-2024-56128: the nonce must be the combined nonce.
		{"client nonce only", first, final("alice-secret", "n,,", cnonce), ErrAuthenticationFailed},
		{"wrong server nonce", first, final("alice-secret", "n,,", cnonce+"other"), ErrAuthenticationFailed},
		{"channel binding mismatch", first, final("alice-secret", "n,a=alice,", cnonce+snonce), ErrAuthenticationFailed},
		{"channel binding y flag", first, final("alice-secret", "y,,", cnonce+snonce), ErrAuthenticationFailed},
		{"proof bad base64", first, strings.Split(good, ",p=")[0] + ",p=!!!!", ErrMalformed},
		{"c= bad base64", first, "c=b!ws,r=" + cnonce + snonce + ",p=AAAA", ErrMalformed},
		{"extra comma", first, strings.Replace(good, ",r=", ",,r=", 1), ErrMalformed},
		{"extension in final", first, strings.Replace(good, ",p=", ",x=1,p=", 1), ErrMalformed},
		{"missing proof", first, strings.Split(good, ",p=")[0], ErrMalformed},
		{"missing c=", first, strings.TrimPrefix(good, "c=biws,"), ErrMalformed},
		{"empty final", first, "", ErrMalformed},
		// Reference: Kafka ScramSaslServer: authzid must equal the user.
		{"authzid differs", "n,a=bob,n=alice,r=" + cnonce, firstFails, ErrAuthenticationFailed},
		{"channel binding y", "y,,n=alice,r=" + cnonce, firstFails, ErrAuthenticationFailed},
		{"channel binding p", "p=tls-unique,,n=alice,r=" + cnonce, firstFails, ErrAuthenticationFailed},
		{"mandatory extension", "n,,m=ext,n=alice,r=" + cnonce, firstFails, ErrAuthenticationFailed},
		{"tokenauth", "n,,n=alice,r=" + cnonce + ",tokenauth=true", firstFails, ErrAuthenticationFailed},
		{"bad flag", "x,,n=alice,r=" + cnonce, firstFails, ErrMalformed},
		{"no gs2 header", "n=alice,r=" + cnonce, firstFails, ErrMalformed},
		{"missing nonce", "n,,n=alice", firstFails, ErrMalformed},
		{"empty nonce", "n,,n=alice,r=", firstFails, ErrMalformed},
		{"missing user", "n,,r=" + cnonce, firstFails, ErrMalformed},
		{"empty user", "n,,n=,r=" + cnonce, firstFails, ErrMalformed},
		{"bad escape", "n,,n=al=ice,r=" + cnonce, firstFails, ErrMalformed},
		{"empty", "", firstFails, ErrMalformed},
		{"not UTF-8", "n,,n=\xff,r=" + cnonce, firstFails, ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newFixedScram(ScramSHA256, store, snonce)
			out, done, err := s.Step([]byte(tt.first))
			if tt.final == firstFails {
				if !errors.Is(err, tt.want) || done || out != nil {
					t.Fatalf("client-first: %q, %v, %v; want %v", out, done, err, tt.want)
				}
				if _, _, err := s.Step([]byte(good)); !errors.Is(err, ErrIllegalState) {
					t.Fatalf("Step after failure = %v, want ErrIllegalState", err)
				}
				return
			}
			if err != nil || string(out) != serverFirst {
				t.Fatalf("client-first: %q, %v; want %q", out, err, serverFirst)
			}
			out, done, err = s.Step([]byte(tt.final))
			if !errors.Is(err, tt.want) || done != (tt.want == nil) {
				t.Fatalf("client-final: %q, %v, %v; want %v", out, done, err, tt.want)
			}
			if tt.want == nil {
				if s.Principal() != "User:alice" {
					t.Fatalf("Principal = %q", s.Principal())
				}
				return
			}
			if s.Principal() != "" || out != nil {
				t.Fatalf("failed exchange has principal %q, out %q", s.Principal(), out)
			}
			if strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), cnonce) {
				t.Fatalf("error %q quotes client data", err)
			}
		})
	}
}

// A client-final from an earlier exchange fails against a new one, whose
// server nonce differs.
func TestScramReplayedClientFinalFails(t *testing.T) {
	store := scramTestStore(t)
	c := scram.Auth{User: "alice", Pass: "alice-secret", Nonce: []byte("fixed-client-nonce")}.AsSha256Mechanism()
	cs, first, _ := c.Authenticate(t.Context(), "")
	s1 := NewScram(ScramSHA256, store, Config{})
	sf, _, err := s1.Step(first)
	if err != nil {
		t.Fatal(err)
	}
	_, final, err := cs.Challenge(sf)
	if err != nil {
		t.Fatal(err)
	}
	s2 := NewScram(ScramSHA256, store, Config{})
	if _, _, err := s2.Step(first); err != nil {
		t.Fatal(err)
	}
	if _, done, err := s2.Step(final); !errors.Is(err, ErrAuthenticationFailed) || done {
		t.Fatalf("replayed client-final: done=%v err=%v, want ErrAuthenticationFailed", done, err)
	}
	if _, done, err := s1.Step(final); err != nil || !done {
		t.Fatalf("original exchange: done=%v err=%v", done, err)
	}
	if _, _, err := s1.Step(final); !errors.Is(err, ErrIllegalState) {
		t.Fatalf("second client-final = %v, want ErrIllegalState", err)
	}
}

// An unknown user and a stored credential below 4096 iterations get a
// server-first like a known user's, and fail only at the proof. The same
// unknown user sees the same salt each time.
// Reference: RFC 5802 §5.1; CVE-2024-56128 class.
func TestScramUnknownUserLooksLikeKnownUser(t *testing.T) {
	store := scramTestStore(t)
	key := []byte("mock-key")
	first := func(user string) string {
		s := NewScram(ScramSHA256, store, Config{MockSaltKey: key})
		out, _, err := s.Step([]byte("n,,n=" + user + ",r=abc"))
		if err != nil {
			t.Fatalf("client-first for %s: %v", user, err)
		}
		return string(out)
	}
	salt := func(sf string) string { return strings.Split(sf, ",")[1] }
	if a, b := first("nobody"), first("nobody"); salt(a) != salt(b) || !strings.HasSuffix(a, ",i=4096") {
		t.Fatalf("unknown user's server-first not stable: %q vs %q", a, b)
	}
	if salt(first("nobody")) == salt(first("somebody")) {
		t.Fatalf("two unknown users share a salt")
	}
	if sf := first("low"); !strings.HasSuffix(sf, ",i=4096") {
		t.Fatalf("low-iteration user's server-first = %q", sf)
	}
}

func TestScramUnsupportedMechanismFailsEveryStep(t *testing.T) {
	s := NewScram("SCRAM-SHA-1", memStore{}, Config{})
	if _, _, err := s.Step([]byte(rfcClientFirst)); !errors.Is(err, ErrUnsupportedMechanism) {
		t.Fatalf("Step = %v", err)
	}
	if Supported("SCRAM-SHA-1") || !Supported(ScramSHA512) {
		t.Fatalf("Supported is wrong")
	}
}

func TestScramNonceComesFromConfigRand(t *testing.T) {
	s := NewScram(ScramSHA256, rfcStore(t), Config{Rand: bytes.NewReader(make([]byte, 24))})
	out, _, err := s.Step([]byte(rfcClientFirst))
	if err != nil {
		t.Fatal(err)
	}
	if want := "r=rOprNGfwEbeRWgbNEkqO" + strings.Repeat("A", 32) + ","; !strings.HasPrefix(string(out), want) {
		t.Fatalf("server-first = %q, want prefix %q", out, want)
	}
	s = NewScram(ScramSHA256, rfcStore(t), Config{Rand: bytes.NewReader(nil)})
	if _, _, err := s.Step([]byte(rfcClientFirst)); err == nil {
		t.Fatalf("Step with an empty Rand succeeded")
	}
}
