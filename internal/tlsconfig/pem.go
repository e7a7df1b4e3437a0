package tlsconfig

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"

	"github.com/youmark/pkcs8"
)

// PEM block types this package reads.
const (
	pemCertificate      = "CERTIFICATE"
	pemPrivateKey       = "PRIVATE KEY"           // PKCS#8
	pemEncryptedKey     = "ENCRYPTED PRIVATE KEY" // PKCS#8 with PBES2
	pemRSAPrivateKey    = "RSA PRIVATE KEY"       // PKCS#1
	pemECPrivateKey     = "EC PRIVATE KEY"        // SEC 1
	pemECParameters     = "EC PARAMETERS"         // written by openssl ecparam; skipped
	legacyEncryptHeader = "Proc-Type"
)

// keystore is the result of loading a keystore: the certificate to present
// and the Kafka setting it came from (for messages).
type keystore struct {
	cert    tls.Certificate
	setting string
}

// loadKeystore reads the keystore named by c: the file at
// ssl.keystore.location (key and chain in one PEM file) or the inline
// ssl.keystore.certificate.chain and ssl.keystore.key. It returns nil, nil
// when c has no keystore.
func (c *Config) loadKeystore() (*keystore, error) {
	switch {
	case c.KeystoreLocation != "":
		data, err := os.ReadFile(c.KeystoreLocation)
		if err != nil {
			return nil, settingError(settingKeystoreLocation, err, "")
		}
		cert, err := parseKeyPair(data, data, c.KeyPassword, settingKeystoreLocation, settingKeystoreLocation)
		if err != nil {
			return nil, err
		}
		return &keystore{cert: cert, setting: settingKeystoreLocation}, nil
	case c.KeystoreCertificateChain != "" || c.KeystoreKey != "":
		cert, err := parseKeyPair([]byte(c.KeystoreCertificateChain), []byte(c.KeystoreKey), c.KeyPassword, settingKeystoreChain, settingKeystoreKey)
		if err != nil {
			return nil, err
		}
		return &keystore{cert: cert, setting: settingKeystoreChain}, nil
	}
	return nil, nil
}

// loadTruststore reads the CA certificates named by c. It returns nil, nil
// when c has no truststore.
func (c *Config) loadTruststore() (*x509.CertPool, error) {
	switch {
	case c.TruststoreLocation != "":
		data, err := os.ReadFile(c.TruststoreLocation)
		if err != nil {
			return nil, settingError(settingTruststoreLocation, err, "")
		}
		return parseCertPool(data, settingTruststoreLocation)
	case c.TruststoreCertificates != "":
		return parseCertPool([]byte(c.TruststoreCertificates), settingTruststoreCerts)
	}
	return nil, nil
}

// parseCertPool returns a pool of every CERTIFICATE block in data; other
// blocks are ignored. No certificate at all is an error.
func parseCertPool(data []byte, setting string) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	n := 0
	for rest := data; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type != pemCertificate {
			continue
		}
		cert, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, settingError(setting, err, "certificate %d", n+1)
		}
		pool.AddCert(cert)
		n++
	}
	if n == 0 {
		return nil, settingError(setting, nil, "no PEM CERTIFICATE block")
	}
	return pool, nil
}

// parseKeyPair reads the certificate chain (CERTIFICATE blocks, leaf first)
// from certPEM and the one private key from keyPEM, decrypting it with
// password if it is an encrypted PKCS#8 key, and checks that the key belongs
// to the leaf. certPEM and keyPEM may be the same bytes.
func parseKeyPair(certPEM, keyPEM []byte, password, certSetting, keySetting string) (tls.Certificate, error) {
	var cert tls.Certificate
	for rest := certPEM; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type == pemCertificate {
			cert.Certificate = append(cert.Certificate, b.Bytes)
		}
	}
	if len(cert.Certificate) == 0 {
		return cert, settingError(certSetting, nil, "no PEM CERTIFICATE block")
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		return cert, settingError(certSetting, err, "leaf certificate")
	}
	cert.Leaf = leaf
	for i, der := range cert.Certificate[1:] {
		if _, err := x509.ParseCertificate(der); err != nil {
			return cert, settingError(certSetting, err, "chain certificate %d", i+2)
		}
	}

	var keyBlock *pem.Block
	for rest := keyPEM; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		switch b.Type {
		case pemPrivateKey, pemEncryptedKey, pemRSAPrivateKey, pemECPrivateKey:
			if keyBlock != nil {
				return cert, settingError(keySetting, nil, "more than one private key")
			}
			keyBlock = b
		}
	}
	if keyBlock == nil {
		return cert, settingError(keySetting, nil, "no PEM private key block (want PRIVATE KEY or ENCRYPTED PRIVATE KEY)")
	}
	key, err := parsePrivateKey(keyBlock, password, keySetting)
	if err != nil {
		return cert, err
	}
	pub, ok := key.(interface{ Public() crypto.PublicKey })
	if !ok {
		return cert, settingError(keySetting, nil, "unsupported private key type %T", key)
	}
	eq, ok := pub.Public().(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !eq.Equal(leaf.PublicKey) {
		return cert, settingError(keySetting, nil, "private key does not match the leaf certificate (%s)", leaf.Subject)
	}
	cert.PrivateKey = key
	return cert, nil
}

// parsePrivateKey decodes one private key block. Kafka reads PKCS#8 keys,
// encrypted (PBES2) or not; PKCS#1 and SEC 1 keys are accepted too when not
// encrypted. Keys encrypted the legacy OpenSSL way (Proc-Type header) are
// refused: that scheme is insecure and Go no longer supports it.
func parsePrivateKey(b *pem.Block, password, setting string) (crypto.Signer, error) {
	if _, legacy := b.Headers[legacyEncryptHeader]; legacy {
		return nil, settingError(setting, nil, "legacy encrypted PEM key (Proc-Type header) is not supported; convert it with `openssl pkcs8 -topk8 -v2 aes-256-cbc`")
	}
	var (
		key any
		err error
	)
	switch b.Type {
	case pemEncryptedKey:
		if password == "" {
			return nil, fmt.Errorf("%w: %s: the private key is encrypted: %w", ErrInvalidConfig, settingKeyPassword, ErrKeyPassword)
		}
		key, err = pkcs8.ParsePKCS8PrivateKey(b.Bytes, []byte(password))
		if err != nil {
			return nil, fmt.Errorf("%w: %s: decrypting the key from %s: %w: %w", ErrInvalidConfig, settingKeyPassword, setting, ErrKeyPassword, err)
		}
	case pemPrivateKey:
		key, err = x509.ParsePKCS8PrivateKey(b.Bytes)
	case pemRSAPrivateKey:
		key, err = x509.ParsePKCS1PrivateKey(b.Bytes)
	case pemECPrivateKey:
		key, err = x509.ParseECPrivateKey(b.Bytes)
	}
	if err != nil {
		return nil, settingError(setting, err, "private key")
	}
	switch k := key.(type) {
	case *rsa.PrivateKey:
		return k, nil
	case *ecdsa.PrivateKey:
		return k, nil
	case ed25519.PrivateKey:
		return k, nil
	default:
		return nil, settingError(setting, nil, "unsupported private key type %T", key)
	}
}
