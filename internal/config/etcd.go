package config

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"time"
)

// The connection to an external etcd cluster (etcd.endpoints): TLS and
// etcd authentication.
//
// Names. Kafka named the TLS settings of the client of its former metadata
// store zookeeper.ssl.* (zookeeper.ssl.truststore.location, ...); samsa's
// metadata store is etcd, so its settings are etcd.ssl.*. Kafka's take Java
// key stores, but etcd and its tools take PEM files: a CA bundle, a
// certificate and its key (etcdctl --cacert, --cert, --key; etcd
// --trusted-ca-file, --cert-file, --key-file). So the names end in the file
// they want: etcd.ssl.ca.file, etcd.ssl.cert.file, etcd.ssl.key.file.
// etcd.ssl.server.name overrides the host name checked in the servers'
// certificates. etcd.username and etcd.password are etcd's own user
// authentication (etcdctl --user), independent of TLS.
//
// Whether the client speaks TLS follows from the endpoints and the files.
// etcd's client decides per URL scheme: it drops TLS for http:// even when
// given a TLS configuration, and uses the first endpoint's scheme for all
// of them, so a mix could silently send everything in plain text. Those
// cases are refused:
//
//	+-----------------------------------+-------------+--------------------------------------+
//	| etcd.endpoints                    | etcd.ssl.*  | connection                           |
//	+-----------------------------------+-------------+--------------------------------------+
//	| http://, unix:// or host:port     | none set    | plain text                           |
//	| https://, unixs://                | none set    | TLS, servers checked against the     |
//	|                                   |             | system's CA roots                    |
//	| https://, unixs:// or host:port   | any set     | TLS with the files given             |
//	| http://, unix://                  | any set     | refused: use https:// or unixs://    |
//	| TLS and plain-text schemes mixed  | any         | refused                              |
//	| (empty: embedded etcd)            | any set     | refused: the embedded member's       |
//	|                                   |             | client URL is local and plain text   |
//	+-----------------------------------+-------------+--------------------------------------+

// etcdSSLConfigs are the configs that turn TLS on for the etcd client.
var etcdSSLConfigs = []string{"etcd.ssl.ca.file", "etcd.ssl.cert.file", "etcd.ssl.key.file", "etcd.ssl.server.name"}

// EtcdTLSOn reports whether the etcd client connects with TLS: some
// endpoint is https:// or unixs://, or some etcd.ssl.* config is set.
func (b *Broker) EtcdTLSOn() bool {
	for _, ep := range b.EtcdEndpoints {
		if s := endpointScheme(ep); s == "https" || s == "unixs" {
			return true
		}
	}
	return b.etcdSSLSet() != ""
}

// etcdSSLSet returns the name of the first etcd.ssl.* config that is set,
// or "".
func (b *Broker) etcdSSLSet() string {
	for _, v := range []struct{ name, value string }{
		{"etcd.ssl.ca.file", b.EtcdSSLCAFile},
		{"etcd.ssl.cert.file", b.EtcdSSLCertFile},
		{"etcd.ssl.key.file", b.EtcdSSLKeyFile},
		{"etcd.ssl.server.name", b.EtcdSSLServerName},
	} {
		if v.value != "" {
			return v.name
		}
	}
	return ""
}

// endpointScheme returns the lower-cased scheme of an etcd endpoint, "" for
// a bare host:port. etcd also takes unix:path and unixs:path.
func endpointScheme(ep string) string {
	if s, _, ok := strings.Cut(ep, "://"); ok {
		return strings.ToLower(s)
	}
	for _, s := range []string{"unixs", "unix"} {
		if strings.HasPrefix(strings.ToLower(ep), s+":") {
			return s
		}
	}
	return ""
}

// checkEtcd enforces the rules between the etcd client configs (see the
// table above) and loads the TLS files, so that a missing file or bad PEM
// is reported when the config loads rather than at the first handshake.
func (b *Broker) checkEtcd() error {
	if len(b.EtcdEndpoints) == 0 {
		if n := b.etcdSSLSet(); n != "" {
			return fmt.Errorf("%w: %s is set but etcd.endpoints is empty: TLS applies only to an external etcd (the embedded member serves a local plain-text URL)", ErrInvalidConfig, n)
		}
		if b.EtcdUsername != "" || b.EtcdPassword != "" {
			return fmt.Errorf("%w: etcd.username and etcd.password apply only to an external etcd (etcd.endpoints)", ErrInvalidConfig)
		}
		return nil
	}
	if (b.EtcdUsername == "") != (b.EtcdPassword == "") {
		return fmt.Errorf("%w: etcd.username and etcd.password: set both or neither", ErrInvalidConfig)
	}
	tlsOn := b.EtcdTLSOn()
	var secure, plain string
	for _, ep := range b.EtcdEndpoints {
		switch endpointScheme(ep) {
		case "https", "unixs":
			secure = ep
		case "http", "unix":
			plain = ep
		case "":
		default:
			return fmt.Errorf("%w: etcd.endpoints: %q: want http://, https://, unix://, unixs:// or host:port", ErrInvalidConfig, ep)
		}
	}
	switch {
	case secure != "" && plain != "":
		return fmt.Errorf("%w: etcd.endpoints: %s uses TLS but %s does not: use one scheme for every endpoint", ErrInvalidConfig, secure, plain)
	case tlsOn && plain != "":
		return fmt.Errorf("%w: etcd.endpoints: %s is plain text but %s is set: write it https:// (or unixs://)", ErrInvalidConfig, plain, b.etcdSSLSet())
	}
	_, err := b.EtcdTLS()
	return err
}

// EtcdTLS returns the TLS configuration of the etcd client, or nil when it
// connects in plain text (EtcdTLSOn is false). The CA bundle and the client
// key pair are read now. The key pair is read again at every TLS handshake,
// so a renewed certificate is used from the next connection on; should the
// files fail to load then (a renewal half written), the last pair that
// loaded is used. A new CA bundle needs a restart.
//
// Errors wrap ErrInvalidConfig and name the config at fault: a file that
// cannot be read, holds no PEM certificate, or a key that does not match
// its certificate, or a client certificate that has expired. The returned
// config is the caller's.
func (b *Broker) EtcdTLS() (*tls.Config, error) {
	if !b.EtcdTLSOn() {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: b.EtcdSSLServerName}
	if b.EtcdSSLCAFile != "" {
		pool, err := loadCAFile(b.EtcdSSLCAFile)
		if err != nil {
			return nil, fmt.Errorf("%w: etcd.ssl.ca.file=%q: %w", ErrInvalidConfig, b.EtcdSSLCAFile, err)
		}
		cfg.RootCAs = pool
	}
	if b.EtcdSSLCertFile != "" || b.EtcdSSLKeyFile != "" {
		if b.EtcdSSLCertFile == "" || b.EtcdSSLKeyFile == "" {
			return nil, fmt.Errorf("%w: etcd.ssl.cert.file and etcd.ssl.key.file: set both or neither", ErrInvalidConfig)
		}
		certFile, keyFile := b.EtcdSSLCertFile, b.EtcdSSLKeyFile
		pair, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("%w: etcd.ssl.cert.file=%q, etcd.ssl.key.file=%q: %w", ErrInvalidConfig, certFile, keyFile, err)
		}
		if pair.Leaf != nil && time.Now().After(pair.Leaf.NotAfter) {
			return nil, fmt.Errorf("%w: etcd.ssl.cert.file=%q: certificate expired at %s",
				ErrInvalidConfig, certFile, pair.Leaf.NotAfter.UTC().Format(time.RFC3339))
		}
		var last atomic.Pointer[tls.Certificate]
		last.Store(&pair)
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			c, err := tls.LoadX509KeyPair(certFile, keyFile)
			if err != nil {
				return last.Load(), nil
			}
			last.Store(&c)
			return &c, nil
		}
	}
	return cfg, nil
}

// loadCAFile reads a PEM bundle of CA certificates. Blocks other than
// CERTIFICATE are skipped; a bundle with no certificate, or with one that
// does not parse, is an error.
func loadCAFile(path string) (*x509.CertPool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	n := 0
	for rest := data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("certificate %d: %w", n+1, err)
		}
		pool.AddCert(c)
		n++
	}
	if n == 0 {
		return nil, errors.New("no PEM CERTIFICATE block")
	}
	return pool, nil
}
