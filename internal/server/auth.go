package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Security protocols of a listener.
const (
	ProtocolPlaintext     = "PLAINTEXT"
	ProtocolSSL           = "SSL"
	ProtocolSASLPlaintext = "SASL_PLAINTEXT"
	ProtocolSASLSSL       = "SASL_SSL"
)

// Anonymous is the principal of a connection nobody authenticated.
const Anonymous = "User:ANONYMOUS"

// Sizes and times of the authentication phase.
const (
	// MaxAuthFrameBytes caps frames until SASL authentication completes
	// (Kafka's SaslServerAuthenticator limit; CVE-2022-34917).
	MaxAuthFrameBytes = 512 << 10
	// DefaultHandshakeTimeout bounds a TLS handshake, so a client that
	// stops mid-handshake is dropped.
	DefaultHandshakeTimeout = 10 * time.Second
)

// API keys the connection layer answers itself.
const (
	saslHandshakeKey    = 17
	saslAuthenticateKey = 36
)

// ListenerConfig says how the connections of one listener are secured.
type ListenerConfig struct {
	// Name is the listener name (PLAINTEXT, EXTERNAL, ...).
	Name string
	// SecurityProtocol is PLAINTEXT (""), SSL, SASL_PLAINTEXT or SASL_SSL.
	SecurityProtocol string
	// TLS is the server TLS config of SSL and SASL_SSL listeners; a
	// listener with such a protocol and no TLS config is refused by
	// ServeListener.
	TLS *tls.Config
	// TLSPrincipal maps the finished handshake of an SSL listener to a
	// principal; nil gives User:ANONYMOUS.
	TLSPrincipal func(tls.ConnectionState) (string, error)
	// SASL serves the mechanisms of SASL listeners; required for them.
	SASL Authenticator
	// MaxReauth is connections.max.reauth.ms: the longest a SASL session
	// lasts before the client must authenticate again (KIP-368); zero
	// is no bound beyond the credential's own lifetime.
	MaxReauth time.Duration
	// MaxReauthByMechanism overrides MaxReauth for the sessions of one
	// mechanism (listener.name.<l>.<mechanism>.connections.max.reauth.ms);
	// the server does not modify it.
	MaxReauthByMechanism map[string]time.Duration
	// FailedAuthDelay is connection.failed.authentication.delay.ms: a
	// failed authentication is answered, and the connection closed,
	// after this delay (KIP-306).
	FailedAuthDelay time.Duration
	// HandshakeTimeout bounds the TLS handshake; zero is
	// DefaultHandshakeTimeout.
	HandshakeTimeout time.Duration
	// Now is the clock of session expiry; nil is time.Now.
	Now func() time.Time
}

func (lc *ListenerConfig) sasl() bool {
	return lc.SecurityProtocol == ProtocolSASLPlaintext || lc.SecurityProtocol == ProtocolSASLSSL
}

// maxReauth is connections.max.reauth.ms for mechanism.
func (lc *ListenerConfig) maxReauth(mechanism string) time.Duration {
	if m, ok := lc.MaxReauthByMechanism[mechanism]; ok {
		return m
	}
	return lc.MaxReauth
}

func (lc *ListenerConfig) tls() bool {
	return lc.SecurityProtocol == ProtocolSSL || lc.SecurityProtocol == ProtocolSASLSSL
}

func (lc *ListenerConfig) check() error {
	switch lc.SecurityProtocol {
	case "", ProtocolPlaintext, ProtocolSSL, ProtocolSASLPlaintext, ProtocolSASLSSL:
	default:
		return fmt.Errorf("server: listener %s: unknown security protocol %q", lc.Name, lc.SecurityProtocol)
	}
	if lc.tls() && lc.TLS == nil {
		return fmt.Errorf("server: listener %s is %s but has no TLS config", lc.Name, lc.SecurityProtocol)
	}
	if lc.sasl() && lc.SASL == nil {
		return fmt.Errorf("server: listener %s is %s but has no SASL authenticator", lc.Name, lc.SecurityProtocol)
	}
	return nil
}

// Authenticator serves the SASL mechanisms of a listener. It must be safe
// for concurrent use.
type Authenticator interface {
	// Mechanisms lists the enabled mechanisms, as SaslHandshake reports
	// them.
	Mechanisms() []string
	// NewSession starts an exchange with mechanism; ok is false for a
	// mechanism that is not enabled.
	NewSession(mechanism string) (s SASLSession, ok bool)
}

// SASLSession is one SASL exchange; the connection calls it from one
// goroutine.
type SASLSession interface {
	// Step takes the client's bytes and returns the server's. done
	// reports a successful end; an error is a failed authentication whose
	// message may be shown to the client (it holds no secret).
	Step(in []byte) (out []byte, done bool, err error)
	// Principal is the authenticated principal once done.
	Principal() string
	// Lifetime is how long the credential stays valid after done
	// (a token's expiry); zero is no bound.
	Lifetime() time.Duration
}

// authState is where a connection is in its authentication.
type authState int8

const (
	// stateOpen: authenticated (or a listener without SASL); requests
	// are served.
	stateOpen authState = iota
	// stateHandshake: a SASL listener waiting for SaslHandshake (or
	// ApiVersions before it).
	stateHandshake
	// stateAuthenticate: after SaslHandshake v1, SaslAuthenticate
	// requests carry the exchange.
	stateAuthenticate
	// stateRawToken: after SaslHandshake v0, the exchange goes in raw
	// frames without request headers.
	stateRawToken
)

// errIllegalSASL reports a request out of place in the SASL exchange.
var errIllegalSASL = errors.New("server: request out of place in the SASL exchange")

// auth is a connection's authentication state. Only the read goroutine
// touches it.
type auth struct {
	lc    *ListenerConfig
	state authState
	// authenticated is set once a first authentication succeeded; a
	// later handshake is a re-authentication (KIP-368).
	authenticated bool
	mechanism     string
	session       SASLSession
	// expires is when the session ends (zero: never); a request other
	// than a re-authentication after it closes the connection.
	expires time.Time
}

func (a *auth) now() time.Time {
	if a.lc.Now != nil {
		return a.lc.Now()
	}
	return time.Now()
}

// open reports whether requests are served: the connection is
// authenticated, or its listener has no SASL.
func (a *auth) open() bool { return a.state == stateOpen }

// maxFrame is the frame cap in the current state.
func (a *auth) maxFrame(configured int32) int32 {
	if a.state != stateOpen {
		return min(configured, MaxAuthFrameBytes)
	}
	return configured
}

// handshakeTLS runs the TLS handshake of a TLS listener under its
// timeout, and sets the principal of an SSL listener.
func (c *conn) handshakeTLS() error {
	tc, ok := c.nc.(*tls.Conn)
	if !ok {
		return nil
	}
	timeout := c.lc.HandshakeTimeout
	if timeout <= 0 {
		timeout = DefaultHandshakeTimeout
	}
	ctx, cancel := context.WithTimeout(c.ctx, timeout)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		c.s.authFailures.Add(1)
		c.s.log.Info("server: TLS handshake failed", "listener", c.lc.Name, "remote", c.pub.Remote, "err", err)
		return err
	}
	if c.lc.SecurityProtocol == ProtocolSSL && c.lc.TLSPrincipal != nil {
		p, err := c.lc.TLSPrincipal(tc.ConnectionState())
		if err != nil {
			c.s.authFailures.Add(1)
			c.s.log.Warn("server: client certificate maps to no principal", "listener", c.lc.Name, "remote", c.pub.Remote, "err", err)
			return err
		}
		c.pub.Principal = p
	}
	return nil
}

// serveAuth handles a decoded request in the authentication phase, or a
// SASL request at any time. handled reports whether it did (then reply
// is queued by the caller, with close set if the connection must close
// after it, after delay); a request it refuses closes the connection at
// once (err).
func (c *conn) serveAuth(req *Request) (reply Reply, handled bool, after closeAfter, err error) {
	a := &c.auth
	switch req.APIKey {
	case saslHandshakeKey:
		r := req.Body.(*kmsg.SASLHandshakeRequest)
		resp := r.ResponseKind().(*kmsg.SASLHandshakeResponse)
		if !c.lc.sasl() {
			// Kafka's KafkaApis answers a SaslHandshake on a listener
			// without SASL with ILLEGAL_SASL_STATE.
			resp.ErrorCode = kerr.IllegalSaslState.Code
			return Reply{Msg: resp}, true, closeAfter{}, nil
		}
		if a.state != stateHandshake && (a.state != stateOpen || !a.reauthAllowed()) {
			// A second handshake in the middle of an exchange, or
			// after authentication when re-authentication is off:
			// ILLEGAL_SASL_STATE, and the connection closes, as
			// Kafka's SaslServerAuthenticator does.
			resp.ErrorCode = kerr.IllegalSaslState.Code
			return Reply{Msg: resp}, true, closeAfter{close: true}, nil
		}
		resp.SupportedMechanisms = c.lc.SASL.Mechanisms()
		s, ok := c.lc.SASL.NewSession(r.Mechanism)
		if !ok || (a.authenticated && r.Mechanism != a.mechanism) {
			resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
			c.s.authFailures.Add(1)
			c.s.log.Info("server: SASL mechanism refused", "listener", c.lc.Name, "remote", c.pub.Remote, "mechanism", r.Mechanism)
			return Reply{Msg: resp}, true, closeAfter{close: true}, nil
		}
		a.session, a.mechanism = s, r.Mechanism
		if r.Version == 0 {
			if a.authenticated {
				// Re-authentication needs SaslAuthenticate (KIP-368).
				resp.ErrorCode = kerr.IllegalSaslState.Code
				return Reply{Msg: resp}, true, closeAfter{close: true}, nil
			}
			a.state = stateRawToken
		} else {
			a.state = stateAuthenticate
		}
		return Reply{Msg: resp}, true, closeAfter{}, nil

	case saslAuthenticateKey:
		r := req.Body.(*kmsg.SASLAuthenticateRequest)
		resp := r.ResponseKind().(*kmsg.SASLAuthenticateResponse)
		if !c.lc.sasl() {
			resp.ErrorCode = kerr.IllegalSaslState.Code
			msg := "SaslAuthenticate on a listener without SASL"
			resp.ErrorMessage = &msg
			return Reply{Msg: resp}, true, closeAfter{}, nil
		}
		if a.state != stateAuthenticate {
			resp.ErrorCode = kerr.IllegalSaslState.Code
			msg := "SaslAuthenticate before SaslHandshake"
			resp.ErrorMessage = &msg
			return Reply{Msg: resp}, true, closeAfter{close: true}, nil
		}
		out, done, ferr := a.session.Step(r.SASLAuthBytes)
		if ferr != nil {
			return c.authFailed(resp, ferr)
		}
		resp.SASLAuthBytes = out
		if !done {
			return Reply{Msg: resp}, true, closeAfter{}, nil
		}
		if ferr := c.authenticated(); ferr != nil {
			return c.authFailed(resp, ferr)
		}
		if r.Version >= 1 && !a.expires.IsZero() {
			resp.SessionLifetimeMillis = max(a.expires.Sub(a.now()).Milliseconds(), 1)
		}
		return Reply{Msg: resp}, true, closeAfter{}, nil
	}
	if a.state == stateOpen {
		if !a.expires.IsZero() && !a.now().Before(a.expires) {
			return Reply{}, false, closeAfter{}, fmt.Errorf("%w: SASL session of %s expired (connections.max.reauth.ms)", errIllegalSASL, c.pub.Principal)
		}
		return Reply{}, false, closeAfter{}, nil
	}
	if a.state == stateHandshake && req.APIKey == apiVersionsKey {
		return Reply{}, false, closeAfter{}, nil // the handler answers it
	}
	return Reply{}, false, closeAfter{}, fmt.Errorf("%w: api key %d before authentication", errIllegalSASL, req.APIKey)
}

// reauthAllowed reports whether an authenticated connection may
// authenticate again: when its session has a bound (KIP-368).
func (a *auth) reauthAllowed() bool {
	return a.authenticated && !a.expires.IsZero()
}

// authenticated records a completed exchange: the principal, and the
// session's end. A re-authentication must keep the principal.
func (c *conn) authenticated() error {
	a := &c.auth
	p := a.session.Principal()
	if a.authenticated && p != c.pub.Principal {
		return fmt.Errorf("re-authentication as %s on a connection of %s", p, c.pub.Principal)
	}
	life := a.session.Lifetime()
	if m := c.lc.maxReauth(a.mechanism); m > 0 && (life <= 0 || m < life) {
		life = m
	}
	a.expires = time.Time{}
	if life > 0 {
		a.expires = a.now().Add(life)
	}
	if !a.authenticated {
		c.pub.Principal = p
		c.s.log.Debug("server: authenticated", "listener", c.lc.Name, "remote", c.pub.Remote, "principal", p, "mechanism", a.mechanism)
	}
	a.authenticated = true
	a.state = stateOpen
	a.session = nil
	return nil
}

// failureMessenger is implemented by a SASLSession whose failure has a
// message of its own for the client: OAUTHBEARER's RFC 7628 error JSON,
// which Kafka sends as the error message. "" keeps the generic message.
type failureMessenger interface{ FailureMessage() string }

// attemptedUser is implemented by a SASLSession that knows the user name
// the client asked to authenticate as (PLAIN, SCRAM), logged on failure.
type attemptedUser interface{ AttemptedUser() string }

// logAuthFailure logs a failed authentication at WARN, with the user the
// client named when the mechanism tells it (never the password).
func (c *conn) logAuthFailure(err error) {
	attrs := []any{"listener", c.lc.Name, "remote", c.pub.Remote, "mechanism", c.auth.mechanism}
	if au, ok := c.auth.session.(attemptedUser); ok {
		if u := au.AttemptedUser(); u != "" {
			attrs = append(attrs, "user", u)
		}
	}
	c.s.log.Warn("server: authentication failed", append(attrs, "err", err)...)
}

// authFailed answers a failed exchange with SASL_AUTHENTICATION_FAILED
// after connection.failed.authentication.delay.ms, then closes.
func (c *conn) authFailed(resp *kmsg.SASLAuthenticateResponse, err error) (Reply, bool, closeAfter, error) {
	c.s.authFailures.Add(1)
	c.logAuthFailure(err)
	resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
	msg := fmt.Sprintf("Authentication failed during authentication due to invalid credentials with SASL mechanism %s", c.auth.mechanism)
	if fm, ok := c.auth.session.(failureMessenger); ok {
		if m := fm.FailureMessage(); m != "" {
			msg = m
		}
	}
	resp.ErrorMessage = &msg
	resp.SASLAuthBytes = nil
	return Reply{Msg: resp}, true, closeAfter{close: true, delay: c.lc.FailedAuthDelay}, nil
}

// serveRawToken handles a frame after SaslHandshake v0: a bare SASL
// token, answered with a bare token. A failure closes the connection
// after the delay, with no answer (the v0 exchange has no error field).
func (c *conn) serveRawToken(frame []byte) (reply Reply, after closeAfter) {
	a := &c.auth
	out, done, err := a.session.Step(frame)
	if err == nil && done {
		err = c.authenticated()
	}
	if err != nil {
		c.s.authFailures.Add(1)
		c.logAuthFailure(err)
		return Reply{None: true}, closeAfter{close: true, delay: c.lc.FailedAuthDelay}
	}
	if out == nil {
		out = []byte{}
	}
	return Reply{raw: out}, closeAfter{}
}

// closeAfter asks the writer to close the connection once a reply is
// written, waiting delay before writing it.
type closeAfter struct {
	close bool
	delay time.Duration
}
