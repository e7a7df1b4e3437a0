package sasl

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sasl/oauth"
)

func testKeySet(t *testing.T) *KeySet {
	t.Helper()
	return jwksOf(t,
		jwkJSON("rsa1", testRSAKey()),
		jwkJSON("ec256", testECKey()),
		jwkJSON("ec384", testEC384()),
		jwkJSON("ec521", testEC521()),
		map[string]any{"kty": "oct", "kid": "hmac", "k": "c2VjcmV0"}, // skipped
		map[string]any{"kty": "RSA", "kid": "enc", "use": "enc", "n": "AQAB", "e": "AQAB"},
	)
}

func TestOAuthBearerFranzClientAuthenticatesAsSub(t *testing.T) {
	ks := testKeySet(t)
	tests := []struct {
		alg, kid string
		key      any
	}{
		{"RS256", "rsa1", testRSAKey()}, {"RS384", "rsa1", testRSAKey()}, {"RS512", "rsa1", testRSAKey()},
		{"PS256", "rsa1", testRSAKey()}, {"PS384", "rsa1", testRSAKey()}, {"PS512", "rsa1", testRSAKey()},
		{"ES256", "ec256", testECKey()}, {"ES384", "ec384", testEC384()}, {"ES512", "ec521", testEC521()},
	}
	for _, tt := range tests {
		t.Run(tt.alg, func(t *testing.T) {
			tok := signJWT(t, tt.alg, tt.kid, tt.key, goodClaims())
			s := NewOAuthBearer(func() *KeySet { return ks }, oauthTestConfig())
			a := oauth.Auth{Token: tok, Extensions: map[string]string{"traceId": "123"}}
			if err := drive(t, s, a.AsMechanism()); err != nil {
				t.Fatalf("exchange: %v", err)
			}
			if s.Principal() != "User:alice" {
				t.Fatalf("Principal = %q", s.Principal())
			}
			if s.Lifetime() != time.Hour {
				t.Fatalf("Lifetime = %v, want 1h", s.Lifetime())
			}
			scope := s.(interface{ Scope() []string }).Scope()
			if strings.Join(scope, " ") != "produce consume" {
				t.Fatalf("Scope = %q", scope)
			}
		})
	}
}

func TestOAuthBearerNoKidUsesTheOnlyKey(t *testing.T) {
	ks := jwksOf(t, jwkJSON("", testECKey()))
	s := NewOAuthBearer(func() *KeySet { return ks }, oauthTestConfig())
	out, done, err := s.Step(oauthMsg(signJWT(t, "ES256", "", testECKey(), goodClaims())))
	if err != nil || !done || len(out) != 0 {
		t.Fatalf("Step = %q, %v, %v", out, done, err)
	}
}

func TestOAuthBearerRefusesBadTokens(t *testing.T) {
	ks := testKeySet(t)
	other := mustEC(testECKey().Curve)
	with := func(k string, v any) map[string]any {
		c := goodClaims()
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
		return c
	}
	good := signJWT(t, "RS256", "rsa1", testRSAKey(), goodClaims())
	parts := strings.Split(good, ".")
	tests := []struct {
		name  string
		token string
		cfg   func(*OAuthConfig)
	}{
		{"bad signature", signJWT(t, "ES256", "ec256", other, goodClaims()), nil},
		{"payload swapped", parts[0] + "." + strings.Split(signJWT(t, "RS256", "rsa1", testRSAKey(), with("sub", "admin")), ".")[1] + "." + parts[2], nil},
		{"wrong audience", signJWT(t, "RS256", "rsa1", testRSAKey(), with("aud", "elsewhere")), nil},
		{"no audience", signJWT(t, "RS256", "rsa1", testRSAKey(), with("aud", nil)), nil},
		{"wrong issuer", signJWT(t, "RS256", "rsa1", testRSAKey(), with("iss", "https://evil.example")), nil},
		{"expired", signJWT(t, "RS256", "rsa1", testRSAKey(), with("exp", testNow.Add(-31*time.Second).Unix())), nil},
		{"expired no skew", signJWT(t, "RS256", "rsa1", testRSAKey(), with("exp", testNow.Add(-time.Second).Unix())),
			func(c *OAuthConfig) { c.ClockSkew = -1 }},
		{"no exp", signJWT(t, "RS256", "rsa1", testRSAKey(), with("exp", nil)), nil},
		{"exp string", signJWT(t, "RS256", "rsa1", testRSAKey(), with("exp", "tomorrow")), nil},
		{"not yet valid", signJWT(t, "RS256", "rsa1", testRSAKey(), with("nbf", testNow.Add(time.Minute).Unix())), nil},
		{"issued in future", signJWT(t, "RS256", "rsa1", testRSAKey(), with("iat", testNow.Add(time.Minute).Unix())), nil},
		{"alg none", signJWT(t, "none", "rsa1", nil, goodClaims()), nil},
		{"HS256", signJWT(t, "HS256", "hmac", []byte("secret"), goodClaims()), nil},
		{"HS256 keyed with the RSA modulus", signJWT(t, "HS256", "rsa1", testRSAKey().N.Bytes(), goodClaims()), nil},
		{"unknown kid", signJWT(t, "RS256", "rsa2", testRSAKey(), goodClaims()), nil},
		{"no kid with many keys", signJWT(t, "RS256", "", testRSAKey(), goodClaims()), nil},
		{"ES256 on RSA kid", signJWT(t, "ES256", "rsa1", testECKey(), goodClaims()), nil},
		{"ES384 on P-256 key", signJWT(t, "ES384", "ec256", testECKey(), goodClaims()), nil},
		{"missing sub", signJWT(t, "RS256", "rsa1", testRSAKey(), with("sub", nil)), nil},
		{"empty sub", signJWT(t, "RS256", "rsa1", testRSAKey(), with("sub", "")), nil},
		{"sub claim renamed", good, func(c *OAuthConfig) { c.SubClaimName = "upn" }},
		{"no keys", good, nil},
		{"two segments", parts[0] + "." + parts[1], nil},
		{"bad base64", parts[0] + "." + parts[1] + "." + parts[2][:len(parts[2])-1] + "~", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := oauthTestConfig()
			if tt.cfg != nil {
				tt.cfg(&cfg)
			}
			keys := func() *KeySet { return ks }
			if tt.name == "no keys" {
				keys = func() *KeySet { return nil }
			}
			s := NewOAuthBearer(keys, cfg)
			out, done, err := s.Step(oauthMsg(tt.token))
			if err != nil || done || string(out) != `{"status":"invalid_token"}` {
				t.Fatalf("Step = %q, %v, %v; want the invalid_token JSON", out, done, err)
			}
			// Reference: RFC 7628 §3.2.3: the client acknowledges with %x01.
			_, done, err = s.Step([]byte{1})
			if !errors.Is(err, ErrAuthenticationFailed) || done {
				t.Fatalf("Step(0x01) = %v, %v; want ErrAuthenticationFailed", done, err)
			}
			if strings.Contains(err.Error(), tt.token) || s.Principal() != "" {
				t.Fatalf("error %q quotes the token or principal %q set", err, s.Principal())
			}
			if m := s.(interface{ FailureMessage() string }).FailureMessage(); m != `{"status":"invalid_token"}` {
				t.Fatalf("FailureMessage = %q, want the invalid_token JSON, as Kafka sends it", m)
			}
			if _, _, err := s.Step(oauthMsg(good)); !errors.Is(err, ErrIllegalState) {
				t.Fatalf("Step after failure = %v, want ErrIllegalState", err)
			}
		})
	}
}

func TestOAuthBearerFranzClientWithBadTokenFails(t *testing.T) {
	ks := testKeySet(t)
	tok := signJWT(t, "RS256", "rsa1", testRSAKey(), map[string]any{"sub": "alice", "exp": testNow.Add(-time.Hour).Unix()})
	s := NewOAuthBearer(func() *KeySet { return ks }, OAuthConfig{Now: fixedNow})
	err := drive(t, s, oauth.Auth{Token: tok}.AsMechanism())
	if !errors.Is(err, ErrAuthenticationFailed) {
		t.Fatalf("err = %v, want ErrAuthenticationFailed", err)
	}
}

func TestOAuthBearerRefusesMalformedMessages(t *testing.T) {
	ks := testKeySet(t)
	tok := signJWT(t, "RS256", "rsa1", testRSAKey(), goodClaims())
	tests := []struct {
		name string
		in   string
		want error
	}{
		{"authzid differs", "n,a=bob,\x01auth=Bearer " + tok + "\x01\x01", ErrAuthenticationFailed},
		{"channel binding y", "y,,\x01auth=Bearer " + tok + "\x01\x01", ErrAuthenticationFailed},
		{"channel binding p", "p=tls-unique,,\x01auth=Bearer " + tok + "\x01\x01", ErrAuthenticationFailed},
		{"no gs2 header", "\x01auth=Bearer " + tok + "\x01\x01", ErrMalformed},
		{"no final 0x01", "n,,\x01auth=Bearer " + tok + "\x01", ErrMalformed},
		{"no auth", "n,,\x01host=x\x01\x01", ErrMalformed},
		{"not bearer", "n,,\x01auth=Basic " + tok + "\x01\x01", ErrMalformed},
		{"duplicate auth", "n,,\x01auth=Bearer " + tok + "\x01auth=Bearer " + tok + "\x01\x01", ErrMalformed},
		{"bad key", "n,,\x01auth=Bearer " + tok + "\x01k1=v\x01\x01", ErrMalformed},
		{"empty", "", ErrMalformed},
		{"token with space", "n,,\x01auth=Bearer a b\x01\x01", ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewOAuthBearer(func() *KeySet { return ks }, oauthTestConfig())
			out, done, err := s.Step([]byte(tt.in))
			if !errors.Is(err, tt.want) || done || out != nil {
				t.Fatalf("Step = %q, %v, %v; want %v", out, done, err, tt.want)
			}
		})
	}
	s := NewOAuthBearer(func() *KeySet { return ks }, oauthTestConfig())
	if _, done, err := s.Step([]byte("n,a=alice,\x01auth=bearer " + tok + "\x01\x01")); !done || err != nil {
		t.Fatalf("matching authzid, lower-case scheme: %v, %v", done, err)
	}
	if _, _, err := s.Step([]byte{1}); !errors.Is(err, ErrIllegalState) {
		t.Fatalf("Step after done = %v, want ErrIllegalState", err)
	}
}

func TestOAuthBearerLifetimeWithinSkewIsPositive(t *testing.T) {
	ks := testKeySet(t)
	c := goodClaims()
	c["exp"] = testNow.Add(-10 * time.Second).Unix()
	s := NewOAuthBearer(func() *KeySet { return ks }, oauthTestConfig())
	if _, done, err := s.Step(oauthMsg(signJWT(t, "RS256", "rsa1", testRSAKey(), c))); !done || err != nil {
		t.Fatalf("Step: %v, %v", done, err)
	}
	if s.Lifetime() <= 0 {
		t.Fatalf("Lifetime = %v, want > 0", s.Lifetime())
	}
}

func TestParseJWKSRefusesBrokenKeys(t *testing.T) {
	tests := []struct {
		name string
		json string
		keys int // -1: ErrJWKS
	}{
		{"not json", `{`, -1},
		{"empty set", `{"keys":[]}`, 0},
		{"unknown kty", `{"keys":[{"kty":"OKP","crv":"Ed25519","x":"AA"}]}`, 0},
		{"rsa bad n", `{"keys":[{"kty":"RSA","n":"!!","e":"AQAB"}]}`, -1},
		{"rsa even e", `{"keys":[{"kty":"RSA","n":"AQAB","e":"Ag"}]}`, -1},
		{"rsa short", `{"keys":[{"kty":"RSA","n":"AQAB","e":"AQAB"}]}`, 0},
		{"ec off curve", `{"keys":[{"kty":"EC","crv":"P-256","x":"` + strings.Repeat("A", 43) + `","y":"` + strings.Repeat("A", 42) + `E"}]}`, -1},
		{"ec short x", `{"keys":[{"kty":"EC","crv":"P-256","x":"AA","y":"AA"}]}`, -1},
		{"ec unknown curve", `{"keys":[{"kty":"EC","crv":"secp256k1","x":"AA","y":"AA"}]}`, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ks, err := ParseJWKS([]byte(tt.json))
			if tt.keys < 0 {
				if !errors.Is(err, ErrJWKS) {
					t.Fatalf("err = %v, want ErrJWKS", err)
				}
				return
			}
			if err != nil || ks.Len() != tt.keys {
				t.Fatalf("ParseJWKS = %d keys, %v; want %d", ks.Len(), err, tt.keys)
			}
		})
	}
}

// A token whose kid the key set lacks is looked up again in the set that
// MissingKey returns, so a key the issuer rotated in is accepted on the
// first try. MissingKey is not asked for a kid the set holds (even with
// another alg), nor for a token without a kid, and a nil set from it
// keeps the refusal.
func TestOAuthBearerMissingKidAsksMissingKeyForANewerSet(t *testing.T) {
	old := jwksOf(t, jwkJSON("rsa1", testRSAKey()))
	rotated := jwksOf(t, jwkJSON("rsa1", testRSAKey()), jwkJSON("ec256", testECKey()))
	var asked []string
	cfg := oauthTestConfig()
	newer := rotated
	cfg.MissingKey = func(kid string) *KeySet {
		asked = append(asked, kid)
		return newer
	}
	step := func(tok string) error {
		t.Helper()
		s := NewOAuthBearer(func() *KeySet { return old }, cfg)
		out, done, err := s.Step(oauthMsg(tok))
		if err == nil && (!done || len(out) != 0) {
			return errors.New("refused: " + string(out))
		}
		return err
	}

	if err := step(signJWT(t, "ES256", "ec256", testECKey(), goodClaims())); err != nil {
		t.Fatalf("token of the rotated-in key: %v", err)
	}
	if strings.Join(asked, ",") != "ec256" {
		t.Fatalf("MissingKey asked for %q, want ec256 once", asked)
	}

	asked = nil
	if err := step(signJWT(t, "RS256", "rsa1", testRSAKey(), goodClaims())); err != nil {
		t.Fatalf("token of a key in the set: %v", err)
	}
	// rsa1 is in the set, as an RSA key; an ES256 token naming it does
	// not make a refresh worthwhile.
	if err := step(signJWT(t, "ES256", "rsa1", testECKey(), goodClaims())); err == nil {
		t.Fatal("ES256 token naming an RSA key: accepted")
	}
	if err := step(signJWT(t, "ES256", "", testECKey(), goodClaims())); err == nil {
		t.Fatal("token without kid, set of one RSA key: accepted")
	}
	if len(asked) != 0 {
		t.Fatalf("MissingKey asked for %q, want no calls", asked)
	}

	newer = nil
	if err := step(signJWT(t, "ES256", "ec256", testECKey(), goodClaims())); err == nil {
		t.Fatal("unknown kid with MissingKey returning nil: accepted")
	}
}
