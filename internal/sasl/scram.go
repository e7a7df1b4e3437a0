package sasl

import (
	"bytes"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"fmt"
	"hash"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Iteration bounds that Kafka's AlterUserScramCredentials enforces. A
// stored credential below MinScramIterations never authenticates
// (Reference: CVE-2024-56128 class; Kafka's ScramMechanism.minIterations).
const (
	MinScramIterations = 4096
	MaxScramIterations = 16384
)

// ScramCredential is what the server stores for one SCRAM user and
// mechanism: never the password, only the salt, the iteration count and
// the two keys derived from the salted password (RFC 5802 §3). The byte
// slices are owned by whoever built the credential and must not be
// modified after it is shared.
type ScramCredential struct {
	Salt       []byte
	Iterations int
	StoredKey  []byte // H(HMAC(SaltedPassword, "Client Key"))
	ServerKey  []byte // HMAC(SaltedPassword, "Server Key")
}

// ScramStore looks up SCRAM credentials. Implementations must be safe for
// concurrent use, because every connection's Session calls them; they
// must not block for long, because Step runs on a connection's reading
// goroutine.
type ScramStore interface {
	// ScramCredential returns user's credential for mechanism
	// (ScramSHA256 or ScramSHA512) and whether it exists.
	ScramCredential(mechanism, user string) (ScramCredential, bool)
}

func scramHash(mechanism string) (func() hash.Hash, error) {
	switch mechanism {
	case ScramSHA256:
		return sha256.New, nil
	case ScramSHA512:
		return sha512.New, nil
	}
	return nil, fmt.Errorf("sasl: scram mechanism %q: %w", mechanism, ErrUnsupportedMechanism)
}

func checkIterations(iterations int) error {
	if iterations < MinScramIterations || iterations > MaxScramIterations {
		return fmt.Errorf("sasl: %d iterations, want %d..%d: %w",
			iterations, MinScramIterations, MaxScramIterations, ErrIterations)
	}
	return nil
}

// NewScramCredential derives the credential for password with salt and
// iterations: SaltedPassword = PBKDF2-HMAC(password, salt, iterations).
// It returns ErrIterations outside 4096..16384, ErrInvalidCredential for
// an empty password or salt and ErrUnsupportedMechanism for a mechanism
// other than SCRAM-SHA-256/512. The password is used as UTF-8 bytes
// without SASLprep, as Kafka does. It does not retain salt.
func NewScramCredential(mechanism, password string, salt []byte, iterations int) (ScramCredential, error) {
	h, err := scramHash(mechanism)
	if err != nil {
		return ScramCredential{}, err
	}
	if err := checkIterations(iterations); err != nil {
		return ScramCredential{}, err
	}
	if len(password) == 0 || len(salt) == 0 {
		return ScramCredential{}, errorf(ErrInvalidCredential, "empty password or salt")
	}
	salted, err := pbkdf2.Key(h, password, salt, iterations, h().Size())
	if err != nil {
		return ScramCredential{}, fmt.Errorf("sasl: derive salted password: %w", err)
	}
	return credentialFromSalted(h, salt, salted, iterations), nil
}

// CredentialFromSaltedPassword returns the credential for a salted
// password computed by the client, as AlterUserScramCredentials carries it
// (KIP-554: salt, SaltedPassword, iterations). Its errors are those of
// NewScramCredential. It does not retain salt or saltedPassword.
func CredentialFromSaltedPassword(mechanism string, salt, saltedPassword []byte, iterations int) (ScramCredential, error) {
	h, err := scramHash(mechanism)
	if err != nil {
		return ScramCredential{}, err
	}
	if err := checkIterations(iterations); err != nil {
		return ScramCredential{}, err
	}
	if len(salt) == 0 || len(saltedPassword) == 0 {
		return ScramCredential{}, errorf(ErrInvalidCredential, "empty salt or salted password")
	}
	return credentialFromSalted(h, salt, saltedPassword, iterations), nil
}

func credentialFromSalted(h func() hash.Hash, salt, salted []byte, iterations int) ScramCredential {
	clientKey := hmacSum(h, salted, []byte("Client Key"))
	d := h()
	d.Write(clientKey)
	return ScramCredential{
		Salt:       bytes.Clone(salt),
		Iterations: iterations,
		StoredKey:  d.Sum(nil),
		ServerKey:  hmacSum(h, salted, []byte("Server Key")),
	}
}

func hmacSum(h func() hash.Hash, key []byte, parts ...[]byte) []byte {
	m := hmac.New(h, key)
	for _, p := range parts {
		m.Write(p)
	}
	return m.Sum(nil)
}

// scramSession is one SCRAM exchange:
//
//	client-first  -> server-first
//	client-final  -> server-final (done)
type scramSession struct {
	mechanism string
	h         func() hash.Hash
	store     ScramStore
	cfg       Config
	st        state
	mechErr   error

	// Set by the client-first step.
	user        string
	gs2Header   string
	clientBare  string
	serverFirst string
	nonce       string // client nonce + server nonce
	cnonce      string // client nonce
	cred        ScramCredential
	mock        bool   // unknown user or unusable credential: always fails
	fixedNonce  string // tests only: the server nonce to use
	principal   string
}

// NewScram returns a SCRAM-SHA-256 or SCRAM-SHA-512 Session (RFC 5802,
// RFC 7677) that looks users up in store. For any other mechanism every
// Step fails with ErrUnsupportedMechanism. The Session is not safe for
// concurrent use.
func NewScram(mechanism string, store ScramStore, cfg Config) Session {
	h, err := scramHash(mechanism)
	return &scramSession{mechanism: mechanism, h: h, store: store, cfg: cfg, mechErr: err}
}

func (s *scramSession) Step(in []byte) ([]byte, bool, error) {
	if s.mechErr != nil {
		return nil, false, s.mechErr
	}
	switch s.st {
	case stateStart:
		s.st = stateFailed
		out, err := s.clientFirst(in)
		if err != nil {
			return nil, false, err
		}
		s.st = stateFirstDone
		return out, false, nil
	case stateFirstDone:
		s.st = stateFailed
		out, err := s.clientFinal(in)
		if err != nil {
			return nil, false, err
		}
		s.st = stateComplete
		s.principal = "User:" + s.user
		return out, true, nil
	default:
		return nil, false, errAfter(s.st)
	}
}

func (s *scramSession) Principal() string {
	if s.st != stateComplete {
		return ""
	}
	return s.principal
}

func (s *scramSession) Lifetime() time.Duration { return 0 }

// clientFirst handles
//
//	gs2-cbind-flag "," [ "a=" saslname ] "," [ "m=" ... "," ] "n=" saslname "," "r=" nonce [ "," ext ]*
func (s *scramSession) clientFirst(in []byte) ([]byte, error) {
	if len(in) > MaxMessageBytes {
		return nil, errorf(ErrMalformed, "SCRAM client-first too long")
	}
	if !utf8.Valid(in) {
		return nil, errorf(ErrMalformed, "SCRAM client-first is not UTF-8")
	}
	msg := string(in)
	flag, rest, ok := strings.Cut(msg, ",")
	if !ok {
		return nil, errorf(ErrMalformed, "SCRAM client-first lacks a gs2 header")
	}
	switch {
	case flag == "n":
	case flag == "y" || strings.HasPrefix(flag, "p="):
		// Kafka does not support channel binding.
		return nil, errorf(ErrAuthenticationFailed, "channel binding is not supported")
	default:
		return nil, errorf(ErrMalformed, "SCRAM gs2 channel binding flag")
	}
	authzField, bare, ok := strings.Cut(rest, ",")
	if !ok {
		return nil, errorf(ErrMalformed, "SCRAM client-first lacks a gs2 header")
	}
	var authzid string
	if authzField != "" {
		v, ok := strings.CutPrefix(authzField, "a=")
		if !ok {
			return nil, errorf(ErrMalformed, "SCRAM gs2 authzid")
		}
		if authzid, ok = decodeSaslname(v); !ok {
			return nil, errorf(ErrMalformed, "SCRAM gs2 authzid")
		}
	}
	s.gs2Header = flag + "," + authzField + ","
	s.clientBare = bare

	fields := strings.Split(bare, ",")
	if strings.HasPrefix(fields[0], "m=") {
		return nil, errorf(ErrAuthenticationFailed, "mandatory SCRAM extension is not supported")
	}
	if len(fields) < 2 {
		return nil, errorf(ErrMalformed, "SCRAM client-first lacks n= or r=")
	}
	name, ok := strings.CutPrefix(fields[0], "n=")
	if !ok {
		return nil, errorf(ErrMalformed, "SCRAM client-first lacks n=")
	}
	user, ok := decodeSaslname(name)
	if !ok {
		return nil, errorf(ErrMalformed, "SCRAM username")
	}
	cnonce, ok := strings.CutPrefix(fields[1], "r=")
	if !ok || !validNonce(cnonce) {
		return nil, errorf(ErrMalformed, "SCRAM client nonce")
	}
	for _, ext := range fields[2:] {
		k, _, ok := strings.Cut(ext, "=")
		if !ok || k == "" {
			return nil, errorf(ErrMalformed, "SCRAM extension")
		}
		// Kafka's one extension, tokenauth=true (delegation tokens, KIP-48),
		// is not supported; neither is any other.
		return nil, errorf(ErrAuthenticationFailed, "SCRAM extensions are not supported")
	}
	if authzid != "" && authzid != user {
		return nil, errorf(ErrAuthenticationFailed, "authorization id differs from username")
	}
	s.user = user

	cred, found := ScramCredential{}, false
	if s.store != nil {
		cred, found = s.store.ScramCredential(s.mechanism, user)
	}
	if !found || cred.Iterations < MinScramIterations || len(cred.Salt) == 0 ||
		len(cred.StoredKey) != s.h().Size() || len(cred.ServerKey) != s.h().Size() {
		// RFC 5802 §5.1: carry on with a made-up credential so the reply
		// does not tell whether user exists; the final step always fails.
		s.mock = true
		cred = ScramCredential{
			Salt:       hmacSum(sha256.New, s.mockKey(), []byte(s.mechanism), []byte{0}, []byte(user)),
			Iterations: MinScramIterations,
		}
	}
	s.cred = cred

	snonce := s.fixedNonce
	if snonce == "" {
		var err error
		if snonce, err = s.newNonce(); err != nil {
			return nil, err
		}
	}
	s.nonce = cnonce + snonce
	s.cnonce = cnonce
	s.serverFirst = "r=" + s.nonce + ",s=" + base64.StdEncoding.EncodeToString(cred.Salt) +
		",i=" + strconv.Itoa(cred.Iterations)
	return []byte(s.serverFirst), nil
}

// clientFinal handles
//
//	"c=" base64(gs2-header) "," "r=" nonce "," "p=" base64(proof)
func (s *scramSession) clientFinal(in []byte) ([]byte, error) {
	if len(in) > MaxMessageBytes {
		return nil, errorf(ErrMalformed, "SCRAM client-final too long")
	}
	msg := string(in)
	fields := strings.Split(msg, ",")
	if len(fields) != 3 {
		return nil, errorf(ErrMalformed, "SCRAM client-final must hold c=, r= and p=")
	}
	cb, ok1 := strings.CutPrefix(fields[0], "c=")
	nonce, ok2 := strings.CutPrefix(fields[1], "r=")
	proofB64, ok3 := strings.CutPrefix(fields[2], "p=")
	if !ok1 || !ok2 || !ok3 {
		return nil, errorf(ErrMalformed, "SCRAM client-final must hold c=, r= and p=")
	}
	cbData, err := b64Strict.DecodeString(cb)
	if err != nil {
		return nil, errorf(ErrMalformed, "SCRAM channel binding is not base64")
	}
	proof, err := b64Strict.DecodeString(proofB64)
	if err != nil {
		return nil, errorf(ErrMalformed, "SCRAM proof is not base64")
	}
	// NB: the nonce is public but compared in constant time like
	// everything else here, so no comparison on this path leaks timing.
	// Reference: CVE-2024-56128 (Kafka did not check this nonce).
	//
	// librdkafka before 2.6.1 sends its own nonce again in front of the
	// combined one (client nonce + client nonce + server nonce), and
	// Kafka 3.8.1 to 3.9 accept that; so does samsa, since Debian and
	// many images ship such a librdkafka. Either form proves the client
	// saw this exchange's server nonce, which is what the check is for.
	if !hmac.Equal([]byte(nonce), []byte(s.nonce)) && !hmac.Equal([]byte(nonce), []byte(s.cnonce+s.nonce)) {
		return nil, errorf(ErrAuthenticationFailed, "invalid nonce")
	}
	if !hmac.Equal(cbData, []byte(s.gs2Header)) {
		return nil, errorf(ErrAuthenticationFailed, "channel binding does not match the gs2 header")
	}
	withoutProof := msg[:len(msg)-len(fields[2])-1]
	authMsg := []byte(s.clientBare + "," + s.serverFirst + "," + withoutProof)

	// ClientKey = ClientProof XOR HMAC(StoredKey, AuthMessage); the proof
	// is right when H(ClientKey) equals StoredKey.
	size := s.h().Size()
	clientKey := hmacSum(s.h, s.cred.StoredKey, authMsg)
	if len(proof) != size {
		clear(clientKey)
	} else {
		for i := range clientKey {
			clientKey[i] ^= proof[i]
		}
	}
	d := s.h()
	d.Write(clientKey)
	ok := hmac.Equal(d.Sum(nil), s.cred.StoredKey)
	if !ok || s.mock || len(proof) != size {
		return nil, errorf(ErrAuthenticationFailed, "invalid credentials")
	}
	sig := hmacSum(s.h, s.cred.ServerKey, authMsg)
	return []byte("v=" + base64.StdEncoding.EncodeToString(sig)), nil
}

var b64Strict = base64.StdEncoding.Strict()

// decodeSaslname undoes RFC 5802's escaping of ',' as "=2C" and '=' as
// "=3D"; any other '=' is malformed, as is an empty name.
func decodeSaslname(v string) (string, bool) {
	if v == "" {
		return "", false
	}
	if !strings.Contains(v, "=") {
		return v, true
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] != '=' {
			b.WriteByte(v[i])
			continue
		}
		switch {
		case strings.HasPrefix(v[i:], "=2C"):
			b.WriteByte(',')
		case strings.HasPrefix(v[i:], "=3D"):
			b.WriteByte('=')
		default:
			return "", false
		}
		i += 2
	}
	return b.String(), true
}

// validNonce reports whether v is a printable nonce: %x21-7E except ','.
func validNonce(v string) bool {
	if v == "" {
		return false
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x21 || c > 0x7e || c == ',' {
			return false
		}
	}
	return true
}

func (s *scramSession) newNonce() (string, error) {
	r := s.cfg.Rand
	if r == nil {
		r = rand.Reader
	}
	var b [24]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return "", fmt.Errorf("sasl: read server nonce: %w", err)
	}
	return base64.RawStdEncoding.EncodeToString(b[:]), nil
}

// processMockKey keys mock salts when Config.MockSaltKey is nil.
var processMockKey = sync.OnceValue(func() []byte {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never returns an error
	return b
})

func (s *scramSession) mockKey() []byte {
	if s.cfg.MockSaltKey != nil {
		return s.cfg.MockSaltKey
	}
	return processMockKey()
}

// AttemptedUser returns the user name of the client's first message, ""
// before it was read.
func (s *scramSession) AttemptedUser() string { return s.user }
