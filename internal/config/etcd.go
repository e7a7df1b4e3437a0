package config

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/url"
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
//	| (empty: embedded etcd)            | any set     | see below                            |
//	+-----------------------------------+-------------+--------------------------------------+
//
// The embedded etcd member (etcd.endpoints empty) serves TLS under the
// names of etcd's own flags, one set for its peers (etcd.peer.ssl.*: etcd
// --peer-cert-file, --peer-key-file, --peer-trusted-ca-file) and one for
// its clients (etcd.client.ssl.*: --cert-file, --key-file,
// --trusted-ca-file). Peer TLS is always mutual, so it takes all three
// files. Client TLS takes a certificate and key; with a CA file too, every
// client must present a certificate from it, and once etcd authentication
// is on, that certificate's common name is the client's etcd user, so the
// broker needs no password (etcd.username and etcd.password stay
// external-only). etcd serves an http:// or unix:// URL in plain text even
// when given certificates, so with TLS on every URL of that side must say
// TLS, and without it none may:
//
//	+----------------------+-------------------------------------+--------------------------+
//	| side                 | URLs                                | with TLS on              |
//	+----------------------+-------------------------------------+--------------------------+
//	| etcd.peer.ssl.*      | etcd.initial.cluster (every entry), | https:// only            |
//	|                      | etcd.listen/advertise.peer.urls     |                          |
//	| etcd.client.ssl.*    | etcd.listen/advertise.client.urls   | https:// or unixs://;    |
//	|                      |                                     | the default becomes      |
//	|                      |                                     | https://127.0.0.1:<port> |
//	+----------------------+-------------------------------------+--------------------------+
//
// The broker's own client of the member speaks TLS exactly when
// etcd.client.ssl.* is set. It presents etcd.ssl.cert.file if set, else
// the member's etcd.client.ssl.cert.file (as etcd's own gateway does with
// --cert-file), and checks the members against etcd.ssl.ca.file if set,
// else etcd.client.ssl.ca.file, else the system's roots. etcd.ssl.* set
// without etcd.client.ssl.* is refused: the member would serve plain text.

// etcdSSLConfigs are the configs that turn TLS on for the etcd client.
var etcdSSLConfigs = []string{"etcd.ssl.ca.file", "etcd.ssl.cert.file", "etcd.ssl.key.file", "etcd.ssl.server.name"}

// EtcdTLSOn reports whether the etcd client connects with TLS: to an
// external etcd, when some endpoint is https:// or unixs:// or some
// etcd.ssl.* config is set; to the embedded member, when it serves TLS
// (EtcdClientTLSOn).
func (b *Broker) EtcdTLSOn() bool {
	if len(b.EtcdEndpoints) == 0 {
		return b.EtcdClientTLSOn()
	}
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

// EtcdPeerTLSOn reports whether some etcd.peer.ssl.* config is set: the
// embedded member speaks mutual TLS with its peers.
func (b *Broker) EtcdPeerTLSOn() bool {
	return b.EtcdPeerSSLCertFile != "" || b.EtcdPeerSSLKeyFile != "" || b.EtcdPeerSSLCAFile != ""
}

// EtcdClientTLSOn reports whether some etcd.client.ssl.* config is set:
// the embedded member serves its clients over TLS.
func (b *Broker) EtcdClientTLSOn() bool {
	return b.EtcdClientSSLCertFile != "" || b.EtcdClientSSLKeyFile != "" || b.EtcdClientSSLCAFile != ""
}

// etcdMemberSSLSet returns the name of the first etcd.peer.ssl.* or
// etcd.client.ssl.* config that is set, or "".
func (b *Broker) etcdMemberSSLSet() string {
	for _, v := range []struct{ name, value string }{
		{"etcd.peer.ssl.cert.file", b.EtcdPeerSSLCertFile},
		{"etcd.peer.ssl.key.file", b.EtcdPeerSSLKeyFile},
		{"etcd.peer.ssl.ca.file", b.EtcdPeerSSLCAFile},
		{"etcd.client.ssl.cert.file", b.EtcdClientSSLCertFile},
		{"etcd.client.ssl.key.file", b.EtcdClientSSLKeyFile},
		{"etcd.client.ssl.ca.file", b.EtcdClientSSLCAFile},
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
		return b.checkEmbeddedEtcd()
	}
	if n := b.etcdMemberSSLSet(); n != "" {
		return fmt.Errorf("%w: %s secures the embedded etcd member, but etcd.endpoints names an external etcd", ErrInvalidConfig, n)
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

// checkEmbeddedEtcd enforces the rules of the embedded member's TLS (see
// the second table above) and loads its files, so that a missing file, a
// key that does not match its certificate or a certificate not made for
// its use is reported when the config loads rather than by etcd.
func (b *Broker) checkEmbeddedEtcd() error {
	if b.EtcdUsername != "" || b.EtcdPassword != "" {
		return fmt.Errorf("%w: etcd.username and etcd.password apply only to an external etcd (etcd.endpoints); "+
			"an embedded member with etcd.client.ssl.ca.file knows the broker by its certificate's common name", ErrInvalidConfig)
	}
	peerOn, clientOn := b.EtcdPeerTLSOn(), b.EtcdClientTLSOn()
	if peerOn {
		if b.EtcdPeerSSLCertFile == "" || b.EtcdPeerSSLKeyFile == "" || b.EtcdPeerSSLCAFile == "" {
			return fmt.Errorf("%w: etcd.peer.ssl.cert.file, etcd.peer.ssl.key.file and etcd.peer.ssl.ca.file: "+
				"set all three (mutual TLS between members) or none", ErrInvalidConfig)
		}
		// Members present their peer certificate when they connect to
		// each other, too.
		if _, err := checkKeyPair("etcd.peer.ssl", b.EtcdPeerSSLCertFile, b.EtcdPeerSSLKeyFile,
			x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth); err != nil {
			return err
		}
		if _, err := loadCAFile(b.EtcdPeerSSLCAFile); err != nil {
			return fmt.Errorf("%w: etcd.peer.ssl.ca.file=%q: %w", ErrInvalidConfig, b.EtcdPeerSSLCAFile, err)
		}
	}
	if clientOn {
		if b.EtcdClientSSLCertFile == "" || b.EtcdClientSSLKeyFile == "" {
			return fmt.Errorf("%w: etcd.client.ssl.cert.file and etcd.client.ssl.key.file: set both for TLS on the embedded member's client URLs "+
				"(etcd.client.ssl.ca.file needs them too)", ErrInvalidConfig)
		}
		usages := []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		if b.EtcdClientSSLCAFile != "" && b.EtcdSSLCertFile == "" && b.EtcdSSLKeyFile == "" {
			// The member asks for client certificates, and the broker
			// presents this one.
			usages = append(usages, x509.ExtKeyUsageClientAuth)
		}
		if _, err := checkKeyPair("etcd.client.ssl", b.EtcdClientSSLCertFile, b.EtcdClientSSLKeyFile, usages...); err != nil {
			return err
		}
		if b.EtcdClientSSLCAFile != "" {
			if _, err := loadCAFile(b.EtcdClientSSLCAFile); err != nil {
				return fmt.Errorf("%w: etcd.client.ssl.ca.file=%q: %w", ErrInvalidConfig, b.EtcdClientSSLCAFile, err)
			}
		} else {
			// TLS without client certificates on a port others can
			// reach lets anyone read SCRAM credentials and write ACLs:
			// whoever can write etcd owns the cluster.
			for _, u := range b.EtcdListenClientURLs {
				if !localURL(u) {
					return fmt.Errorf("%w: etcd.listen.client.urls has %s, reachable from other hosts, but etcd.client.ssl.ca.file is not set: "+
						"set it so that the member asks clients for a certificate", ErrInvalidConfig, u)
				}
			}
		}
	} else if n := b.etcdSSLSet(); n != "" {
		return fmt.Errorf("%w: %s is set but etcd.endpoints is empty and the embedded etcd member serves plain text: "+
			"set etcd.client.ssl.cert.file and etcd.client.ssl.key.file, or etcd.endpoints", ErrInvalidConfig, n)
	}
	var initial []string
	for _, kv := range splitList(b.EtcdInitialCluster) {
		if _, u, ok := strings.Cut(kv, "="); ok {
			initial = append(initial, u)
		}
	}
	for _, set := range []struct {
		name   string
		urls   []string
		client bool
	}{
		{"etcd.initial.cluster", initial, false},
		{"etcd.listen.peer.urls", b.EtcdListenPeerURLs, false},
		{"etcd.advertise.peer.urls", b.EtcdAdvertisePeerURLs, false},
		{"etcd.listen.client.urls", b.EtcdListenClientURLs, true},
		{"etcd.advertise.client.urls", b.EtcdAdvertiseClientURLs, true},
	} {
		tlsOn, tlsName, want := peerOn, "etcd.peer.ssl.*", "https://"
		if set.client {
			tlsOn, tlsName, want = clientOn, "etcd.client.ssl.*", "https:// or unixs://"
		}
		for _, u := range set.urls {
			scheme := endpointScheme(u)
			secure := scheme == "https" || (set.client && scheme == "unixs")
			switch {
			case tlsOn && !secure:
				return fmt.Errorf("%w: %s: %s is plain text but %s is set: write it %s", ErrInvalidConfig, set.name, u, tlsName, want)
			case !tlsOn && secure:
				return fmt.Errorf("%w: %s: %s needs TLS: set %s", ErrInvalidConfig, set.name, u, tlsName)
			}
		}
	}
	_, err := b.EtcdTLS()
	return err
}

// checkKeyPair loads the key pair of the configs <prefix>.cert.file and
// <prefix>.key.file and checks that the certificate has not expired and
// may be used for each of usages (a certificate that lists no extended
// key usage may be used for any).
func checkKeyPair(prefix, certFile, keyFile string, usages ...x509.ExtKeyUsage) (tls.Certificate, error) {
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return pair, fmt.Errorf("%w: %s.cert.file=%q, %s.key.file=%q: %w", ErrInvalidConfig, prefix, certFile, prefix, keyFile, err)
	}
	leaf := pair.Leaf
	if leaf == nil {
		return pair, nil
	}
	if time.Now().After(leaf.NotAfter) {
		return pair, fmt.Errorf("%w: %s.cert.file=%q: certificate expired at %s",
			ErrInvalidConfig, prefix, certFile, leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	for _, u := range usages {
		if !hasUsage(leaf, u) {
			what := "server"
			if u == x509.ExtKeyUsageClientAuth {
				what = "client"
			}
			return pair, fmt.Errorf("%w: %s.cert.file=%q: the certificate's extended key usage does not allow TLS %s authentication, which it is used for",
				ErrInvalidConfig, prefix, certFile, what)
		}
	}
	return pair, nil
}

// hasUsage reports whether c may be used for u.
func hasUsage(c *x509.Certificate, u x509.ExtKeyUsage) bool {
	if len(c.ExtKeyUsage) == 0 && len(c.UnknownExtKeyUsage) == 0 {
		return true
	}
	for _, e := range c.ExtKeyUsage {
		if e == u || e == x509.ExtKeyUsageAny {
			return true
		}
	}
	return false
}

// EtcdTLS returns the TLS configuration of the etcd client, or nil when it
// connects in plain text (EtcdTLSOn is false). The CA bundle and the client
// key pair are read now. The key pair is read again at every TLS handshake,
// so a renewed certificate is used from the next connection on; should the
// files fail to load then (a renewal half written), the last pair that
// loaded is used. A new CA bundle needs a restart.
//
// For the embedded member, the files are etcd.ssl.* where set, else the
// member's own etcd.client.ssl.* (see the comment at the top).
//
// Errors wrap ErrInvalidConfig and name the config at fault: a file that
// cannot be read, holds no PEM certificate, or a key that does not match
// its certificate, or a client certificate that has expired. The returned
// config is the caller's.
func (b *Broker) EtcdTLS() (*tls.Config, error) {
	if !b.EtcdTLSOn() {
		return nil, nil
	}
	caFile, caName := b.EtcdSSLCAFile, "etcd.ssl.ca.file"
	certFile, keyFile, prefix := b.EtcdSSLCertFile, b.EtcdSSLKeyFile, "etcd.ssl"
	if len(b.EtcdEndpoints) == 0 {
		if caFile == "" {
			caFile, caName = b.EtcdClientSSLCAFile, "etcd.client.ssl.ca.file"
		}
		if certFile == "" && keyFile == "" {
			certFile, keyFile, prefix = b.EtcdClientSSLCertFile, b.EtcdClientSSLKeyFile, "etcd.client.ssl"
		}
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: b.EtcdSSLServerName}
	if caFile != "" {
		pool, err := loadCAFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("%w: %s=%q: %w", ErrInvalidConfig, caName, caFile, err)
		}
		cfg.RootCAs = pool
	}
	if certFile != "" || keyFile != "" {
		if certFile == "" || keyFile == "" {
			return nil, fmt.Errorf("%w: %s.cert.file and %s.key.file: set both or neither", ErrInvalidConfig, prefix, prefix)
		}
		pair, err := checkKeyPair(prefix, certFile, keyFile)
		if err != nil {
			return nil, err
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

// localURL reports whether an etcd URL is reachable only from this host:
// a unix socket, or a loopback address or localhost.
func localURL(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	if u.Scheme == "unix" || u.Scheme == "unixs" {
		return true
	}
	host := u.Hostname()
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
