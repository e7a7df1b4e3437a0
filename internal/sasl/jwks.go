package sasl

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
)

// minRSABits is the smallest RSA modulus ParseJWKS keeps (RFC 7518 §3.3
// requires 2048 bits for RS*/PS*).
const minRSABits = 2048

// KeySet is a set of public keys that verify JWT signatures, parsed from a
// JWK Set (RFC 7517 §5). A KeySet is immutable and safe for concurrent
// use; to rotate keys, parse a new one and return it from the function
// given to NewOAuthBearer.
type KeySet struct {
	keys []jwk
}

// jwk is one usable verification key.
type jwk struct {
	kid string
	alg string // the JWK's "alg", or "" to allow any alg of its type
	rsa *rsa.PublicKey
	ec  *ecdsa.PublicKey
}

// Len returns the number of keys the set kept.
func (k *KeySet) Len() int {
	if k == nil {
		return 0
	}
	return len(k.keys)
}

// ParseJWKS parses a JWK Set, {"keys":[...]}, keeping RSA keys (n, e) of
// at least 2048 bits and EC keys (crv P-256, P-384 or P-521; x, y) whose
// "use" is "sig" or absent. It skips keys of any other kty or use and RSA
// keys that are too short, and fails with ErrJWKS on JSON it cannot parse
// or on a kept key whose fields are invalid (for example an EC point not
// on its curve). It does not retain data.
func ParseJWKS(data []byte) (*KeySet, error) {
	var doc struct {
		Keys []struct {
			Kty string `json:"kty"`
			Use string `json:"use"`
			Kid string `json:"kid"`
			Alg string `json:"alg"`
			N   string `json:"n"`
			E   string `json:"e"`
			Crv string `json:"crv"`
			X   string `json:"x"`
			Y   string `json:"y"`
		} `json:"keys"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("sasl: parse jwks: %w: %w", ErrJWKS, err)
	}
	ks := &KeySet{}
	for i, k := range doc.Keys {
		if k.Use != "" && k.Use != "sig" {
			continue
		}
		key := jwk{kid: k.Kid, alg: k.Alg}
		switch k.Kty {
		case "RSA":
			n, err1 := b64urlInt(k.N)
			e, err2 := b64urlInt(k.E)
			if err1 != nil || err2 != nil || n.Sign() <= 0 || !e.IsInt64() ||
				e.Int64() < 3 || e.Int64() > 1<<31-1 || e.Bit(0) == 0 {
				return nil, fmt.Errorf("sasl: jwks key %d: %w: bad RSA n or e", i, ErrJWKS)
			}
			if n.BitLen() < minRSABits {
				continue
			}
			key.rsa = &rsa.PublicKey{N: n, E: int(e.Int64())}
		case "EC":
			curve, size := curveByName(k.Crv)
			if curve == nil {
				continue
			}
			x, err1 := b64url.DecodeString(k.X)
			y, err2 := b64url.DecodeString(k.Y)
			if err1 != nil || err2 != nil || len(x) != size || len(y) != size {
				return nil, fmt.Errorf("sasl: jwks key %d: %w: bad EC x or y", i, ErrJWKS)
			}
			point := append(append([]byte{4}, x...), y...)
			pub, err := ecdsa.ParseUncompressedPublicKey(curve, point)
			if err != nil {
				return nil, fmt.Errorf("sasl: jwks key %d: %w: %w", i, ErrJWKS, err)
			}
			key.ec = pub
		default:
			continue
		}
		ks.keys = append(ks.keys, key)
	}
	return ks, nil
}

var b64url = base64.RawURLEncoding.Strict()

func b64urlInt(s string) (*big.Int, error) {
	b, err := b64url.DecodeString(s)
	if err != nil {
		return nil, err
	}
	if len(b) == 0 {
		return nil, errEmptyInt
	}
	return new(big.Int).SetBytes(b), nil
}

func curveByName(crv string) (elliptic.Curve, int) {
	switch crv {
	case "P-256":
		return elliptic.P256(), 32
	case "P-384":
		return elliptic.P384(), 48
	case "P-521":
		return elliptic.P521(), 66
	}
	return nil, 0
}

// jwsAlg describes one accepted JWS algorithm (RFC 7518 §3.1). HMAC
// algorithms and "none" are absent on purpose: a public key set cannot
// verify a MAC, and a key-confusion attack would use one.
type jwsAlg struct {
	hash  crypto.Hash
	kind  byte // 'R' RSASSA-PKCS1-v1_5, 'P' RSASSA-PSS, 'E' ECDSA
	curve string
}

var jwsAlgs = map[string]jwsAlg{
	"RS256": {crypto.SHA256, 'R', ""},
	"RS384": {crypto.SHA384, 'R', ""},
	"RS512": {crypto.SHA512, 'R', ""},
	"PS256": {crypto.SHA256, 'P', ""},
	"PS384": {crypto.SHA384, 'P', ""},
	"PS512": {crypto.SHA512, 'P', ""},
	"ES256": {crypto.SHA256, 'E', "P-256"},
	"ES384": {crypto.SHA384, 'E', "P-384"},
	"ES512": {crypto.SHA512, 'E', "P-521"},
}

// fits reports whether key can verify alg.
func (k *jwk) fits(name string, a jwsAlg) bool {
	if k.alg != "" && k.alg != name {
		return false
	}
	switch a.kind {
	case 'R', 'P':
		return k.rsa != nil
	case 'E':
		return k.ec != nil && k.ec.Curve.Params().Name == a.curve
	}
	return false
}

// verify checks sig over signingInput with key under alg a.
func (k *jwk) verify(a jwsAlg, signingInput, sig []byte) bool {
	h := a.hash.New()
	h.Write(signingInput)
	digest := h.Sum(nil)
	switch a.kind {
	case 'R':
		return rsa.VerifyPKCS1v15(k.rsa, a.hash, digest, sig) == nil
	case 'P':
		opts := &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash, Hash: a.hash}
		return rsa.VerifyPSS(k.rsa, a.hash, digest, sig, opts) == nil
	case 'E':
		size := (k.ec.Curve.Params().BitSize + 7) / 8
		if len(sig) != 2*size {
			return false
		}
		r := new(big.Int).SetBytes(sig[:size])
		s := new(big.Int).SetBytes(sig[size:])
		return ecdsa.Verify(k.ec, digest, r, s)
	}
	return false
}

// candidates returns the keys that may verify a token with header kid
// and alg: those with that kid, or, when the token names no kid, the only
// key of the set.
func (k *KeySet) candidates(kid, name string, a jwsAlg) []*jwk {
	if k == nil {
		return nil
	}
	var out []*jwk
	if kid == "" {
		if len(k.keys) == 1 && k.keys[0].fits(name, a) {
			out = append(out, &k.keys[0])
		}
		return out
	}
	for i := range k.keys {
		if k.keys[i].kid == kid && k.keys[i].fits(name, a) {
			out = append(out, &k.keys[i])
		}
	}
	return out
}

// hasKid reports whether the set holds a key named kid, whatever its
// algorithm.
func (k *KeySet) hasKid(kid string) bool {
	if k == nil {
		return false
	}
	for i := range k.keys {
		if k.keys[i].kid == kid {
			return true
		}
	}
	return false
}

var errEmptyInt = errors.New("sasl: empty integer")
