package tlsconfig

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"
	"time"
)

// NewClient returns a configuration for dialing a TLS listener: to another
// broker or from the CLI. The truststore verifies the server (none set
// means the system's roots); a keystore, if set, is the client certificate
// offered for ssl.client.auth. With EndpointIdentificationAlgorithm "https"
// the server's certificate must also match serverName; when serverName is
// empty, tls.Dial fills it in from the address dialed. With "" only the
// chain is verified, and serverName is sent for SNI alone.
//
// Files are read once; call NewClient again to pick up changed ones. A
// missing or invalid setting is an error wrapping ErrInvalidConfig that
// names the setting. The caller owns the returned tls.Config.
func NewClient(cfg Config, serverName string) (*tls.Config, error) {
	if err := cfg.checkStores(); err != nil {
		return nil, err
	}
	c, err := cfg.baseConfig()
	if err != nil {
		return nil, err
	}
	ks, err := cfg.loadKeystore()
	if err != nil {
		return nil, err
	}
	if ks != nil {
		c.Certificates = []tls.Certificate{ks.cert}
	}
	pool, err := cfg.loadTruststore()
	if err != nil {
		return nil, err
	}
	c.RootCAs = pool
	c.ServerName = serverName
	switch strings.ToLower(strings.TrimSpace(cfg.EndpointIdentificationAlgorithm)) {
	case endpointIdentificationHTTP:
	case "":
		// NB: InsecureSkipVerify turns off Go's whole verification; the
		// chain is verified again below, only the host name check is gone.
		c.InsecureSkipVerify = true
		c.VerifyConnection = func(cs tls.ConnectionState) error {
			return verifyChain(cs, pool, cfg.now)
		}
	default:
		return nil, settingError(settingEndpointID, nil, "unknown algorithm %q; want https or the empty string", cfg.EndpointIdentificationAlgorithm)
	}
	return c, nil
}

var errNoServerCert = errors.New("tlsconfig: server sent no certificate")

// verifyChain verifies the server's certificate chain against roots (nil
// means the system's) without checking the host name.
func verifyChain(cs tls.ConnectionState, roots *x509.CertPool, now func() time.Time) error {
	if len(cs.PeerCertificates) == 0 {
		return errNoServerCert
	}
	opts := x509.VerifyOptions{
		Roots:         roots,
		CurrentTime:   now(),
		Intermediates: x509.NewCertPool(),
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, c := range cs.PeerCertificates[1:] {
		opts.Intermediates.AddCert(c)
	}
	if _, err := cs.PeerCertificates[0].Verify(opts); err != nil {
		return fmt.Errorf("tlsconfig: verify server certificate: %w", err)
	}
	return nil
}
