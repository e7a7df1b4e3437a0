package sasl

import (
	"errors"
	"io"
	"time"
)

// Mechanism names, as a client sends them in SaslHandshake.
const (
	PLAIN       = "PLAIN"
	ScramSHA256 = "SCRAM-SHA-256"
	ScramSHA512 = "SCRAM-SHA-512"
	OAuthBearer = "OAUTHBEARER"
)

// Errors returned by Step and by the constructors and parsers of this
// package. Step's errors wrap exactly one of ErrAuthenticationFailed,
// ErrIllegalState or ErrMalformed; none of their messages contains a
// password, proof, token or any other byte the client sent.
var (
	// ErrAuthenticationFailed means the client's credentials were wrong,
	// unknown or refused. The broker answers SASL_AUTHENTICATION_FAILED
	// with the error's message.
	ErrAuthenticationFailed = errors.New("sasl: authentication failed")
	// ErrIllegalState means a message arrived when the exchange expected
	// none: after it completed or failed. The broker answers
	// ILLEGAL_SASL_STATE.
	ErrIllegalState = errors.New("sasl: illegal state")
	// ErrMalformed means a client message does not follow the mechanism's
	// grammar. The broker answers SASL_AUTHENTICATION_FAILED.
	ErrMalformed = errors.New("sasl: malformed message")
	// ErrUnsupportedMechanism means a mechanism name this package does not
	// implement. The broker answers UNSUPPORTED_SASL_MECHANISM.
	ErrUnsupportedMechanism = errors.New("sasl: unsupported mechanism")
	// ErrIterations means a SCRAM iteration count outside
	// MinScramIterations..MaxScramIterations.
	ErrIterations = errors.New("sasl: scram iterations out of range")
	// ErrInvalidCredential means a SCRAM credential that cannot be built:
	// an empty password, salt or salted password.
	ErrInvalidCredential = errors.New("sasl: invalid credential")
	// ErrJAAS means a sasl.jaas.config value that does not parse or names
	// a login module other than PlainLoginModule.
	ErrJAAS = errors.New("sasl: invalid jaas config")
	// ErrJWKS means a JWK set that does not parse.
	ErrJWKS = errors.New("sasl: invalid jwks")
)

// MaxMessageBytes bounds one client message, as Kafka's
// SaslServerAuthenticator bounds a SASL receive (512 KiB). Step refuses a
// longer message with ErrMalformed before parsing it.
const MaxMessageBytes = 512 << 10

// Session is one authentication exchange on one connection. Not safe for
// concurrent use: the connection's reading goroutine owns it.
type Session interface {
	// Step consumes one client message (SaslAuthenticate auth_bytes) and
	// returns the server's reply. done is true when the exchange completed
	// successfully; Principal is valid then. An error ends the exchange:
	// it wraps ErrAuthenticationFailed (wrong credentials; the message is
	// safe to send to the client and to log: it never contains a secret)
	// or ErrIllegalState / ErrMalformed. For OAUTHBEARER a failed token
	// yields out = the RFC 7628 JSON error and err == nil, done == false,
	// and the next Step (the client's "\x01") returns
	// ErrAuthenticationFailed. Step does not retain in; the caller owns
	// out.
	Step(in []byte) (out []byte, done bool, err error)
	// Principal returns the Kafka principal, "User:alice", once Step has
	// returned done; before that it returns "".
	Principal() string
	// Lifetime returns the credential's remaining lifetime at completion
	// (OAUTHBEARER exp - now, at least 1 ns); 0 means no bound. The
	// broker uses it for connections.max.reauth.ms (KIP-368).
	Lifetime() time.Duration
}

// AttemptedUser is implemented by the PLAIN and SCRAM sessions: the user
// name the client asked to authenticate as, "" before the client's first
// message was read. It is for logging a failed authentication; it is not
// authenticated and may be anything the client sent.
type AttemptedUser interface{ AttemptedUser() string }

// Config configures a SCRAM Session. The zero value is ready to use.
type Config struct {
	// Rand is the source of server nonces. Nil means crypto/rand.
	Rand io.Reader
	// Now returns the current time. Nil means time.Now. SCRAM does not
	// read the clock today; the field keeps Config uniform with
	// OAuthConfig.
	Now func() time.Time
	// MockSaltKey keys the salt that the exchange for an unknown user
	// shows (RFC 5802 §5.1), so that the same unknown user always sees the
	// same salt and cannot be told apart from a known one before the final
	// message. Nil means a random key made once per process.
	MockSaltKey []byte
}

// Supported reports whether mechanism is one this package implements.
func Supported(mechanism string) bool {
	switch mechanism {
	case PLAIN, ScramSHA256, ScramSHA512, OAuthBearer:
		return true
	}
	return false
}

// state is the step an exchange is at; the mechanisms share it.
type state uint8

const (
	stateStart state = iota
	stateFirstDone
	stateTokenFailed // OAUTHBEARER: JSON error sent, awaiting "\x01"
	stateComplete
	stateFailed
)

func errAfter(st state) error {
	if st == stateComplete {
		return errorf(ErrIllegalState, "exchange already complete")
	}
	return errorf(ErrIllegalState, "exchange already failed")
}
