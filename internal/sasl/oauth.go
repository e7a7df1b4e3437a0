package sasl

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// OAuthConfig configures an OAUTHBEARER Session. Its fields carry the
// names of Kafka's broker settings. The zero value accepts any issuer and
// audience, reads the principal from "sub" and allows 30 s of clock skew.
type OAuthConfig struct {
	// ExpectedAudience is sasl.oauthbearer.expected.audience: when not
	// empty, the token's aud must hold one of these.
	ExpectedAudience []string
	// ExpectedIssuer is sasl.oauthbearer.expected.issuer: when not empty,
	// the token's iss must equal it.
	ExpectedIssuer string
	// SubClaimName is sasl.oauthbearer.sub.claim.name, the claim that
	// names the principal. Empty means "sub".
	SubClaimName string
	// ScopeClaimName is sasl.oauthbearer.scope.claim.name. Empty means
	// "scope".
	ScopeClaimName string
	// ClockSkew is sasl.oauthbearer.clock.skew.seconds, the leeway for
	// exp, nbf and iat. Zero means 30 s; a negative value means none.
	ClockSkew time.Duration
	// Now returns the current time. Nil means time.Now.
	Now func() time.Time
	// MissingKey, when not nil, is called when a token names a kid that
	// the key set has no key for, as happens after the issuer rotated its
	// keys. It may block while it fetches a newer set, and returns the set
	// to look the kid up in again; nil keeps the refusal. It must be safe
	// for concurrent use.
	MissingKey func(kid string) *KeySet
}

const defaultClockSkew = 30 * time.Second

// invalidTokenJSON is the RFC 7628 §3.2.2 error the server sends for a
// token it refuses.
var invalidTokenJSON = []byte(`{"status":"invalid_token"}`)

// oauthSession is the OAUTHBEARER exchange:
//
//	initial response -> "" (done)
//	initial response -> {"status":"invalid_token"};  "\x01" -> error
type oauthSession struct {
	keys      func() *KeySet
	cfg       OAuthConfig
	st        state
	principal string
	lifetime  time.Duration
	scope     []string
	reason    string // why the token was refused, for the error after "\x01"
}

// NewOAuthBearer returns an OAUTHBEARER Session (RFC 7628, KIP-255,
// KIP-768) that accepts a signed JWT verified by the KeySet keys returns
// when the client's message arrives. keys must be safe for concurrent
// use; it may return nil, and then every token is refused. The Session is
// not safe for concurrent use.
func NewOAuthBearer(keys func() *KeySet, cfg OAuthConfig) Session {
	if cfg.SubClaimName == "" {
		cfg.SubClaimName = "sub"
	}
	if cfg.ScopeClaimName == "" {
		cfg.ScopeClaimName = "scope"
	}
	switch {
	case cfg.ClockSkew == 0:
		cfg.ClockSkew = defaultClockSkew
	case cfg.ClockSkew < 0:
		cfg.ClockSkew = 0
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &oauthSession{keys: keys, cfg: cfg}
}

func (s *oauthSession) Step(in []byte) ([]byte, bool, error) {
	switch s.st {
	case stateStart:
		s.st = stateFailed
		out, err := s.initial(in)
		if err != nil {
			return nil, false, err
		}
		if out != nil {
			s.st = stateTokenFailed
			return out, false, nil
		}
		s.st = stateComplete
		return []byte{}, true, nil
	case stateTokenFailed:
		// RFC 7628 §3.2.3: the client answers the error with a lone
		// %x01, and the server then fails the exchange. Anything else
		// fails it too.
		s.st = stateFailed
		return nil, false, errorf(ErrAuthenticationFailed, "invalid token: "+s.reason)
	default:
		return nil, false, errAfter(s.st)
	}
}

func (s *oauthSession) Principal() string {
	if s.st != stateComplete {
		return ""
	}
	return s.principal
}

func (s *oauthSession) Lifetime() time.Duration {
	if s.st != stateComplete {
		return 0
	}
	return s.lifetime
}

// Scope returns the token's scope claim once the exchange is complete;
// callers reach it through an interface{ Scope() []string } assertion.
// The caller must not modify the returned slice.
func (s *oauthSession) Scope() []string {
	if s.st != stateComplete {
		return nil
	}
	return s.scope
}

// FailureMessage returns the message a broker sends with
// SASL_AUTHENTICATION_FAILED once the exchange failed on a refused token:
// the RFC 7628 error JSON, which is what Kafka's OAuthBearerSaslServer
// puts there. It returns "" for any other failure (a malformed message,
// channel binding), for which the broker's generic message stands.
// Callers reach it through an interface{ FailureMessage() string }
// assertion. It never contains the token or the reason it was refused.
func (s *oauthSession) FailureMessage() string {
	if s.st != stateFailed || s.reason == "" {
		return ""
	}
	return string(invalidTokenJSON)
}

// initial handles the client's initial response
//
//	gs2-header %x01 "auth=Bearer " token %x01 *(key "=" value %x01) %x01
//
// It returns a non-nil out for a refused token.
func (s *oauthSession) initial(in []byte) ([]byte, error) {
	if len(in) > MaxMessageBytes {
		return nil, errorf(ErrMalformed, "OAUTHBEARER message too long")
	}
	flag, rest, ok := bytes.Cut(in, []byte(","))
	if !ok {
		return nil, errorf(ErrMalformed, "OAUTHBEARER message lacks a gs2 header")
	}
	switch {
	case string(flag) == "n":
	case string(flag) == "y" || bytes.HasPrefix(flag, []byte("p=")):
		return nil, errorf(ErrAuthenticationFailed, "channel binding is not supported")
	default:
		return nil, errorf(ErrMalformed, "OAUTHBEARER gs2 channel binding flag")
	}
	authzField, rest, ok := bytes.Cut(rest, []byte(","))
	if !ok {
		return nil, errorf(ErrMalformed, "OAUTHBEARER message lacks a gs2 header")
	}
	var authzid string
	if len(authzField) > 0 {
		v, ok := bytes.CutPrefix(authzField, []byte("a="))
		if !ok || !utf8.Valid(v) {
			return nil, errorf(ErrMalformed, "OAUTHBEARER gs2 authzid")
		}
		if authzid, ok = decodeSaslname(string(v)); !ok {
			return nil, errorf(ErrMalformed, "OAUTHBEARER gs2 authzid")
		}
	}
	// rest = %x01 kvpairs %x01, each kvpair ending in %x01.
	body, ok := bytes.CutPrefix(rest, []byte{1})
	if !ok || !bytes.HasSuffix(body, []byte{1, 1}) {
		return nil, errorf(ErrMalformed, "OAUTHBEARER message framing")
	}
	body = body[:len(body)-1]
	var token string
	seen := map[string]bool{}
	for len(body) > 0 {
		kv, next, _ := bytes.Cut(body, []byte{1})
		body = next
		k, v, ok := bytes.Cut(kv, []byte("="))
		if !ok || !validKey(k) || !validValue(v) || seen[string(k)] {
			return nil, errorf(ErrMalformed, "OAUTHBEARER key/value pair")
		}
		seen[string(k)] = true
		if string(k) != "auth" {
			continue // extensions (KIP-342) are accepted and unused
		}
		scheme, tok, ok := bytes.Cut(v, []byte(" "))
		tok = bytes.TrimLeft(tok, " ")
		if !ok || !strings.EqualFold(string(scheme), "bearer") || !validB64Token(tok) {
			return nil, errorf(ErrMalformed, "OAUTHBEARER auth value must be Bearer <token>")
		}
		token = string(tok)
	}
	if token == "" {
		return nil, errorf(ErrMalformed, "OAUTHBEARER message lacks auth")
	}

	claims, reason := s.validate(token)
	if reason != "" {
		s.reason = reason
		return bytes.Clone(invalidTokenJSON), nil
	}
	if authzid != "" && authzid != claims.sub {
		return nil, errorf(ErrAuthenticationFailed, "authorization id differs from the token's principal")
	}
	s.principal = "User:" + claims.sub
	s.lifetime = max(claims.exp.Sub(s.cfg.Now()), time.Nanosecond)
	s.scope = claims.scope
	return nil, nil
}

// validKey reports whether k is an RFC 7628 key: 1*ALPHA.
func validKey(k []byte) bool {
	if len(k) == 0 {
		return false
	}
	for _, c := range k {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// validValue reports whether v is an RFC 7628 value: *(VCHAR / SP / HTAB
// / CR / LF).
func validValue(v []byte) bool {
	for _, c := range v {
		if !(c >= 0x21 && c <= 0x7e || c == ' ' || c == '\t' || c == '\r' || c == '\n') {
			return false
		}
	}
	return true
}

// validB64Token reports whether t is an RFC 6750 b64token.
func validB64Token(t []byte) bool {
	if len(t) == 0 {
		return false
	}
	for i, c := range t {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '-' || c == '.' || c == '_' || c == '~' || c == '+' || c == '/' ||
			c == '=' && i > 0
		if !ok {
			return false
		}
	}
	return true
}

// tokenClaims is what a valid token yields.
type tokenClaims struct {
	sub   string
	exp   time.Time
	scope []string
}

// validate verifies token as a JWS-signed JWT and checks its claims. It
// returns a non-empty, secret-free reason when the token is refused.
func (s *oauthSession) validate(token string) (tokenClaims, string) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return tokenClaims{}, "not a signed JWT"
	}
	hdrJSON, err1 := b64url.DecodeString(parts[0])
	payload, err2 := b64url.DecodeString(parts[1])
	sig, err3 := b64url.DecodeString(parts[2])
	if err1 != nil || err2 != nil || err3 != nil {
		return tokenClaims{}, "token is not base64url"
	}
	var hdr struct {
		Alg  string          `json:"alg"`
		Kid  string          `json:"kid"`
		Crit json.RawMessage `json:"crit"`
	}
	if json.Unmarshal(hdrJSON, &hdr) != nil {
		return tokenClaims{}, "bad token header"
	}
	if hdr.Crit != nil {
		return tokenClaims{}, "critical header parameters are not supported"
	}
	alg, ok := jwsAlgs[hdr.Alg]
	if !ok {
		return tokenClaims{}, "signature algorithm not allowed"
	}
	keys := s.keys
	var ks *KeySet
	if keys != nil {
		ks = keys()
	}
	cands := ks.candidates(hdr.Kid, hdr.Alg, alg)
	if len(cands) == 0 && hdr.Kid != "" && !ks.hasKid(hdr.Kid) && s.cfg.MissingKey != nil {
		cands = s.cfg.MissingKey(hdr.Kid).candidates(hdr.Kid, hdr.Alg, alg)
	}
	if len(cands) == 0 {
		return tokenClaims{}, "no key for the token's kid and alg"
	}
	signingInput := []byte(token[:len(parts[0])+1+len(parts[1])])
	verified := false
	for _, k := range cands {
		if k.verify(alg, signingInput, sig) {
			verified = true
			break
		}
	}
	if !verified {
		return tokenClaims{}, "bad signature"
	}
	return s.checkClaims(payload)
}

// checkClaims checks the claims of a token whose signature verified.
func (s *oauthSession) checkClaims(payload []byte) (tokenClaims, string) {
	var raw map[string]json.RawMessage
	if json.Unmarshal(payload, &raw) != nil {
		return tokenClaims{}, "bad token claims"
	}
	now := s.cfg.Now()
	skew := s.cfg.ClockSkew

	exp, ok, bad := numericDate(raw["exp"])
	switch {
	case bad:
		return tokenClaims{}, "bad exp claim"
	case !ok:
		return tokenClaims{}, "token has no exp claim"
	case !now.Add(-skew).Before(exp):
		return tokenClaims{}, "token expired"
	}
	if nbf, ok, bad := numericDate(raw["nbf"]); bad {
		return tokenClaims{}, "bad nbf claim"
	} else if ok && now.Add(skew).Before(nbf) {
		return tokenClaims{}, "token not yet valid"
	}
	if iat, ok, bad := numericDate(raw["iat"]); bad {
		return tokenClaims{}, "bad iat claim"
	} else if ok && now.Add(skew).Before(iat) {
		return tokenClaims{}, "token issued in the future"
	}
	if s.cfg.ExpectedIssuer != "" {
		var iss string
		if json.Unmarshal(raw["iss"], &iss) != nil || iss != s.cfg.ExpectedIssuer {
			return tokenClaims{}, "unexpected issuer"
		}
	}
	if len(s.cfg.ExpectedAudience) > 0 {
		aud, ok := stringOrList(raw["aud"])
		if !ok || !slices.ContainsFunc(aud, func(a string) bool {
			return slices.Contains(s.cfg.ExpectedAudience, a)
		}) {
			return tokenClaims{}, "unexpected audience"
		}
	}
	var sub string
	if json.Unmarshal(raw[s.cfg.SubClaimName], &sub) != nil || strings.TrimSpace(sub) == "" {
		return tokenClaims{}, "token has no " + s.cfg.SubClaimName + " claim"
	}
	var scope []string
	if v, present := raw[s.cfg.ScopeClaimName]; present {
		var str string
		if json.Unmarshal(v, &str) == nil {
			scope = strings.Fields(str)
		} else if scope, ok = stringOrList(v); !ok {
			return tokenClaims{}, "bad " + s.cfg.ScopeClaimName + " claim"
		}
	}
	return tokenClaims{sub: sub, exp: exp, scope: scope}, ""
}

// numericDate parses an RFC 7519 NumericDate. ok is false for an absent
// or null claim; bad is true for one that is not a finite number in a
// sane range.
func numericDate(v json.RawMessage) (t time.Time, ok, bad bool) {
	if v == nil || string(v) == "null" {
		return time.Time{}, false, false
	}
	var f float64
	if json.Unmarshal(v, &f) != nil || math.IsNaN(f) || f < 0 || f > 1e11 {
		return time.Time{}, false, true
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9)), true, false
}

// stringOrList parses a claim that is a string or a list of strings.
func stringOrList(v json.RawMessage) ([]string, bool) {
	if v == nil {
		return nil, false
	}
	var one string
	if json.Unmarshal(v, &one) == nil {
		return []string{one}, true
	}
	var many []string
	if json.Unmarshal(v, &many) == nil {
		return many, true
	}
	return nil, false
}
