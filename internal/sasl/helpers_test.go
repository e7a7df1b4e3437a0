package sasl

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"strings"
	"sync"
	"testing"
	"time"

	kgosasl "github.com/twmb/franz-go/pkg/sasl"
)

// memStore is a ScramStore over a map keyed by mechanism and user.
type memStore map[[2]string]ScramCredential

func (m memStore) ScramCredential(mechanism, user string) (ScramCredential, bool) {
	c, ok := m[[2]string{mechanism, user}]
	return c, ok
}

// drive runs client against server until both finish or one fails. It
// returns the server's error, or the client's when the server accepted.
func drive(t *testing.T, server Session, client kgosasl.Mechanism) error {
	t.Helper()
	cs, msg, err := client.Authenticate(context.Background(), "broker")
	if err != nil {
		t.Fatalf("client Authenticate: %v", err)
	}
	for range 5 {
		out, done, err := server.Step(msg)
		if err != nil {
			return err
		}
		cdone, next, cerr := cs.Challenge(out)
		if cerr != nil {
			return cerr
		}
		if done && cdone {
			return nil
		}
		msg = next
	}
	return errors.New("exchange did not finish")
}

var testNow = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

func fixedNow() time.Time { return testNow }

// Test keys, made once per test binary: RSA generation is slow.
var (
	testRSAKey = sync.OnceValue(func() *rsa.PrivateKey {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			panic(err)
		}
		return k
	})
	testECKey = sync.OnceValue(func() *ecdsa.PrivateKey { return mustEC(elliptic.P256()) })
	testEC384 = sync.OnceValue(func() *ecdsa.PrivateKey { return mustEC(elliptic.P384()) })
	testEC521 = sync.OnceValue(func() *ecdsa.PrivateKey { return mustEC(elliptic.P521()) })
)

func mustEC(c elliptic.Curve) *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(c, rand.Reader)
	if err != nil {
		panic(err)
	}
	return k
}

// jwkJSON returns the public JWK of key as a JSON object.
func jwkJSON(kid string, key crypto.Signer) map[string]any {
	m := map[string]any{"use": "sig"}
	if kid != "" {
		m["kid"] = kid
	}
	b64 := base64.RawURLEncoding.EncodeToString
	switch k := key.(type) {
	case *rsa.PrivateKey:
		m["kty"] = "RSA"
		m["n"] = b64(k.N.Bytes())
		m["e"] = b64(big.NewInt(int64(k.E)).Bytes())
	case *ecdsa.PrivateKey:
		pub, err := k.PublicKey.Bytes()
		if err != nil {
			panic(err)
		}
		size := (len(pub) - 1) / 2
		m["kty"] = "EC"
		m["crv"] = k.Curve.Params().Name
		m["x"] = b64(pub[1 : 1+size])
		m["y"] = b64(pub[1+size:])
	}
	return m
}

func jwksOf(t testing.TB, keys ...map[string]any) *KeySet {
	t.Helper()
	ks, err := ParseJWKS(mustJSON(map[string]any{"keys": keys}))
	if err != nil {
		t.Fatalf("ParseJWKS: %v", err)
	}
	return ks
}

// signJWT returns a JWS compact token over claims with header alg and
// kid. key is a crypto.Signer for RS/PS/ES algs, a []byte for HS256, and
// ignored for "none".
func signJWT(t testing.TB, alg, kid string, key any, claims map[string]any) string {
	t.Helper()
	hdr := map[string]any{"alg": alg, "typ": "JWT"}
	if kid != "" {
		hdr["kid"] = kid
	}
	hj, _ := json.Marshal(hdr)
	cj, _ := json.Marshal(claims)
	b64 := base64.RawURLEncoding.EncodeToString
	input := b64(hj) + "." + b64(cj)
	var sig []byte
	var err error
	digest := func(h crypto.Hash) []byte { d := h.New(); d.Write([]byte(input)); return d.Sum(nil) }
	hashOf := map[string]crypto.Hash{"256": crypto.SHA256, "384": crypto.SHA384, "512": crypto.SHA512}
	switch {
	case alg == "none":
	case alg == "HS256":
		m := hmac.New(sha256.New, key.([]byte))
		m.Write([]byte(input))
		sig = m.Sum(nil)
	case strings.HasPrefix(alg, "RS"):
		h := hashOf[alg[2:]]
		sig, err = rsa.SignPKCS1v15(nil, key.(*rsa.PrivateKey), h, digest(h))
	case strings.HasPrefix(alg, "PS"):
		h := hashOf[alg[2:]]
		sig, err = rsa.SignPSS(rand.Reader, key.(*rsa.PrivateKey), h, digest(h),
			&rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash})
	case strings.HasPrefix(alg, "ES"):
		h := hashOf[alg[2:]]
		k := key.(*ecdsa.PrivateKey)
		var r, s *big.Int
		r, s, err = ecdsa.Sign(rand.Reader, k, digest(h))
		size := (k.Curve.Params().BitSize + 7) / 8
		sig = make([]byte, 2*size)
		if err == nil {
			r.FillBytes(sig[:size])
			s.FillBytes(sig[size:])
		}
	default:
		t.Fatalf("signJWT: alg %s", alg)
	}
	if err != nil {
		t.Fatalf("sign %s: %v", alg, err)
	}
	return input + "." + b64(sig)
}

// goodClaims returns claims that pass with oauthTestConfig.
func goodClaims() map[string]any {
	return map[string]any{
		"sub":   "alice",
		"iss":   "https://idp.example",
		"aud":   []string{"kafka", "other"},
		"exp":   testNow.Add(time.Hour).Unix(),
		"iat":   testNow.Add(-time.Minute).Unix(),
		"nbf":   testNow.Add(-time.Minute).Unix(),
		"scope": "produce consume",
	}
}

func oauthTestConfig() OAuthConfig {
	return OAuthConfig{
		ExpectedAudience: []string{"kafka"},
		ExpectedIssuer:   "https://idp.example",
		Now:              fixedNow,
	}
}

func oauthMsg(token string) []byte {
	return []byte("n,,\x01auth=Bearer " + token + "\x01\x01")
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
