package tlsconfig

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha1"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/youmark/pkcs8"
)

// clockSkew is how far before its "now" a CA's validity starts, so that a
// peer whose clock is slightly behind accepts it.
const clockSkew = 5 * time.Minute

// CA is a certificate authority for development and tests: it issues
// ECDSA P-256 server and client certificates. A CA is immutable after
// NewCA or LoadCA and safe for concurrent use.
type CA struct {
	cert    *x509.Certificate
	key     crypto.Signer
	certPEM []byte
	keyPEM  []byte
}

// NewCA creates a self-signed CA named cn, valid from clockSkew before now
// until now+validity.
func NewCA(cn string, now time.Time, validity time.Duration) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("tlsconfig: CA key: %w", err)
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, err
	}
	ski, err := subjectKeyID(key.Public())
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             now.Add(-clockSkew),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
		SubjectKeyId:          ski,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("tlsconfig: create CA certificate: %w", err)
	}
	keyPEM, err := marshalKeyPEM(key)
	if err != nil {
		return nil, err
	}
	return LoadCA(pem.EncodeToMemory(&pem.Block{Type: pemCertificate, Bytes: der}), keyPEM)
}

// LoadCA reads a CA from its PEM certificate and unencrypted PEM private
// key, as CertPEM and KeyPEM return them.
func LoadCA(certPEM, keyPEM []byte) (*CA, error) {
	pair, err := parseKeyPair(certPEM, keyPEM, "", "CA certificate", "CA key")
	if err != nil {
		return nil, err
	}
	if !pair.Leaf.IsCA {
		return nil, fmt.Errorf("%w: CA certificate: %s is not a CA", ErrInvalidConfig, pair.Leaf.Subject)
	}
	return &CA{
		cert:    pair.Leaf,
		key:     pair.PrivateKey.(crypto.Signer),
		certPEM: pem.EncodeToMemory(&pem.Block{Type: pemCertificate, Bytes: pair.Leaf.Raw}),
		keyPEM:  append([]byte(nil), keyPEM...),
	}, nil
}

// CertPEM returns the CA certificate in PEM, for a truststore. The caller
// owns the returned slice.
func (ca *CA) CertPEM() []byte { return append([]byte(nil), ca.certPEM...) }

// KeyPEM returns the CA's private key in PEM. The caller owns the returned
// slice.
func (ca *CA) KeyPEM() []byte { return append([]byte(nil), ca.keyPEM...) }

// Certificate returns the CA certificate. The caller must not modify it.
func (ca *CA) Certificate() *x509.Certificate { return ca.cert }

// Issue creates a key and a certificate for cn signed by ca, valid from
// notBefore to notAfter (either may lie in the past, for tests of expired
// certificates). hosts become subject alternative names: IP addresses as IP
// SANs, anything else as DNS SANs. A server certificate (client false) may
// be used for both server and client authentication, as a broker presents
// the same keystore on its listeners and on inter-broker connections; a
// client certificate only for client authentication. certPEM is the leaf
// followed by the CA certificate; keyPEM is an unencrypted PKCS#8 key.
func (ca *CA) Issue(cn string, hosts []string, notBefore, notAfter time.Time, client bool) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("tlsconfig: key for %s: %w", cn, err)
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, nil, err
	}
	ski, err := subjectKeyID(key.Public())
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
		SubjectKeyId:          ski,
	}
	if client {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		return nil, nil, fmt.Errorf("tlsconfig: create certificate for %s: %w", cn, err)
	}
	keyPEM, err = marshalKeyPEM(key)
	if err != nil {
		return nil, nil, err
	}
	certPEM = pem.EncodeToMemory(&pem.Block{Type: pemCertificate, Bytes: der})
	certPEM = append(certPEM, ca.certPEM...)
	return certPEM, keyPEM, nil
}

// EncryptKeyPEM encrypts an unencrypted PEM private key as an ENCRYPTED
// PRIVATE KEY (PKCS#8, PBES2 with PBKDF2-SHA256 and AES-256-CBC), the form
// Kafka reads with ssl.key.password.
func EncryptKeyPEM(keyPEM []byte, password string) ([]byte, error) {
	if password == "" {
		return nil, fmt.Errorf("%w: %s: empty password", ErrInvalidConfig, settingKeyPassword)
	}
	b, _ := pem.Decode(keyPEM)
	if b == nil {
		return nil, fmt.Errorf("%w: no PEM private key", ErrInvalidConfig)
	}
	key, err := parsePrivateKey(b, "", "key")
	if err != nil {
		return nil, err
	}
	der, err := pkcs8.MarshalPrivateKey(key, []byte(password), nil)
	if err != nil {
		return nil, fmt.Errorf("tlsconfig: encrypt key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: pemEncryptedKey, Bytes: der}), nil
}

func marshalKeyPEM(key crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("tlsconfig: marshal key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: pemPrivateKey, Bytes: der}), nil
}

func randomSerial() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("tlsconfig: serial number: %w", err)
	}
	return n.Add(n, big.NewInt(1)), nil
}

// subjectKeyID is the SHA-1 of the public key, RFC 5280 section 4.2.1.2
// method (1) applied to the PKIX encoding.
func subjectKeyID(pub crypto.PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, fmt.Errorf("tlsconfig: marshal public key: %w", err)
	}
	sum := sha1.Sum(der)
	return sum[:], nil
}

// Files are the paths GenerateDevCerts wrote.
type Files struct {
	CA           string // ca.pem: the CA certificate; ssl.truststore.location for brokers and clients
	CAKey        string // ca.key: the CA's private key, to issue more certificates (LoadCA)
	Server       string // server.pem: key, certificate and CA; ssl.keystore.location for brokers
	Client       string // client.pem: the client certificate and the CA (CN=client)
	ClientKey    string // client.key: the client's private key
	ClientBundle string // client-bundle.pem: key, certificate and CA; ssl.keystore.location for clients
}

// DevCAValidity and DevCertValidity are how long GenerateDevCerts's CA and
// certificates stay valid.
const (
	DevCAValidity   = 10 * 365 * 24 * time.Hour
	DevCertValidity = 365 * 24 * time.Hour
)

// GenerateDevCerts writes a development CA, a server certificate for hosts
// (localhost, 127.0.0.1 and ::1 when empty) and a client certificate
// (CN=client) into dir, which must exist. Files holding private keys are
// written with mode 0600. It refuses to overwrite: if any of the files
// exists it writes nothing and returns an error wrapping fs.ErrExist.
func GenerateDevCerts(dir string, hosts []string, now time.Time) (Files, error) {
	if len(hosts) == 0 {
		hosts = []string{"localhost", "127.0.0.1", "::1"}
	}
	f := Files{
		CA:           filepath.Join(dir, "ca.pem"),
		CAKey:        filepath.Join(dir, "ca.key"),
		Server:       filepath.Join(dir, "server.pem"),
		Client:       filepath.Join(dir, "client.pem"),
		ClientKey:    filepath.Join(dir, "client.key"),
		ClientBundle: filepath.Join(dir, "client-bundle.pem"),
	}
	paths := []string{f.CA, f.CAKey, f.Server, f.Client, f.ClientKey, f.ClientBundle}
	for _, p := range paths {
		if _, err := os.Lstat(p); err == nil {
			return Files{}, fmt.Errorf("tlsconfig: %s: %w", p, fs.ErrExist)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return Files{}, fmt.Errorf("tlsconfig: %w", err)
		}
	}
	ca, err := NewCA("samsa dev CA", now, DevCAValidity)
	if err != nil {
		return Files{}, err
	}
	srvCert, srvKey, err := ca.Issue(hosts[0], hosts, now.Add(-clockSkew), now.Add(DevCertValidity), false)
	if err != nil {
		return Files{}, err
	}
	cliCert, cliKey, err := ca.Issue("client", nil, now.Add(-clockSkew), now.Add(DevCertValidity), true)
	if err != nil {
		return Files{}, err
	}
	files := []struct {
		path string
		data []byte
		mode os.FileMode
	}{
		{f.CA, ca.CertPEM(), 0o644},
		{f.CAKey, ca.KeyPEM(), 0o600},
		{f.Server, concat(srvKey, srvCert), 0o600},
		{f.Client, cliCert, 0o644},
		{f.ClientKey, cliKey, 0o600},
		{f.ClientBundle, concat(cliKey, cliCert), 0o600},
	}
	var written []string
	for _, w := range files {
		if err := writeNew(w.path, w.data, w.mode); err != nil {
			for _, p := range written {
				_ = os.Remove(p)
			}
			return Files{}, err
		}
		written = append(written, w.path)
	}
	return f, nil
}

func concat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// writeNew creates path, failing if it exists, and syncs it.
func writeNew(path string, data []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return fmt.Errorf("tlsconfig: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		_ = os.Remove(path)
		return fmt.Errorf("tlsconfig: write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		_ = os.Remove(path)
		return fmt.Errorf("tlsconfig: sync %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		_ = os.Remove(path)
		return fmt.Errorf("tlsconfig: close %s: %w", path, err)
	}
	return nil
}
