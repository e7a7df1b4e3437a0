package testutil

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TokenIssuer signs JWTs with one RSA key (RS256), as an OAuth
// authorization server would, for OAUTHBEARER tests (KIP-768). It is
// safe for concurrent use.
type TokenIssuer struct {
	// Kid is the key id in the JWK Set and in every token's header.
	Kid string
	key *rsa.PrivateKey
}

// NewTokenIssuer makes a 2048-bit RSA key named kid. It fails the test
// if key generation fails.
func NewTokenIssuer(t testing.TB, kid string) *TokenIssuer {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatalf("rsa key: %v", err)
	}
	return &TokenIssuer{Kid: kid, key: k}
}

// JWKS returns a JWK Set (RFC 7517) holding the issuer's public key.
func (i *TokenIssuer) JWKS() []byte {
	b64 := base64.RawURLEncoding.EncodeToString
	doc := map[string]any{"keys": []map[string]string{{
		"kty": "RSA", "use": "sig", "alg": "RS256", "kid": i.Kid,
		"n": b64(i.key.N.Bytes()),
		"e": b64(big.NewInt(int64(i.key.E)).Bytes()),
	}}}
	out, err := json.Marshal(doc)
	if err != nil {
		panic(err) // a map of strings always marshals
	}
	return out
}

// WriteJWKS writes the issuer's JWK Set to path, replacing any file there
// in one rename, so that a reader never sees half a file.
func (i *TokenIssuer) WriteJWKS(t testing.TB, path string) {
	t.Helper()
	tmp, err := os.CreateTemp(filepath.Dir(path), ".jwks-*")
	if err != nil {
		t.Fatal(err)
	}
	_, err = tmp.Write(i.JWKS())
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		t.Fatalf("write jwks: %v", err)
	}
}

// Sign returns a compact JWS of claims, signed with RS256 under the
// issuer's kid.
func (i *TokenIssuer) Sign(claims map[string]any) string {
	b64 := base64.RawURLEncoding.EncodeToString
	hdr, err1 := json.Marshal(map[string]string{"alg": "RS256", "typ": "JWT", "kid": i.Kid})
	payload, err2 := json.Marshal(claims)
	if err1 != nil || err2 != nil {
		panic(fmt.Sprint("jwt: ", err1, err2))
	}
	input := b64(hdr) + "." + b64(payload)
	digest := sha256.Sum256([]byte(input))
	sig, err := rsa.SignPKCS1v15(rand.Reader, i.key, crypto.SHA256, digest[:])
	if err != nil {
		panic(err) // signing with a valid 2048-bit key does not fail
	}
	return input + "." + b64(sig)
}

// Token returns a token for sub, valid from now for life, with aud and
// iss set when not empty.
func (i *TokenIssuer) Token(sub, aud, iss string, life time.Duration) string {
	now := time.Now()
	claims := map[string]any{"sub": sub, "iat": now.Unix(), "exp": now.Add(life).Unix()}
	if aud != "" {
		claims["aud"] = aud
	}
	if iss != "" {
		claims["iss"] = iss
	}
	return i.Sign(claims)
}
