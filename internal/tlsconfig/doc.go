// Package tlsconfig turns Kafka's ssl.* settings into crypto/tls
// configurations: for a listener (NewServer), and for a connection to a
// listener, from another broker or from the CLI (NewClient). It also maps a
// client certificate to a Kafka principal (ssl.principal.mapping.rules,
// KIP-371) and makes development certificates (CA, GenerateDevCerts).
//
// Only PEM stores are supported (KIP-651): ssl.keystore.location names one
// PEM file with the private key and the certificate chain, or
// ssl.keystore.certificate.chain and ssl.keystore.key hold them inline; the
// truststore is ssl.truststore.location or ssl.truststore.certificates.
// Private keys are PKCS#8, encrypted with ssl.key.password or not; PKCS#1
// and SEC 1 keys are accepted unencrypted. JKS and PKCS12 stores and keys
// encrypted with the legacy OpenSSL Proc-Type header are refused.
//
// Usage on a listener:
//
//	srv, err := tlsconfig.NewServer(tlsconfig.Config{
//		KeystoreLocation:   "/etc/samsa/server.pem",
//		TruststoreLocation: "/etc/samsa/ca.pem",
//		ClientAuth:         "required",
//	}, log)
//	if err != nil { ... } // names the setting: "ssl.keystore.location: ..."
//	ln = tls.NewListener(ln, srv.TLSConfig())
//	...
//	conn := c.(*tls.Conn)
//	if err := conn.HandshakeContext(ctx); err != nil { ... }
//	principal, err := srv.Principal(conn.ConnectionState()) // "User:CN=alice,O=example"
//
// and on a client:
//
//	cfg := tlsconfig.DefaultConfig()
//	cfg.TruststoreLocation = "/etc/samsa/ca.pem"
//	tc, err := tlsconfig.NewClient(cfg, "broker1.example.com")
//	conn, err := tls.Dial("tcp", "broker1.example.com:9093", tc)
//
// Invariants:
//
//  1. TLS 1.0 and 1.1 are never negotiated: MinVersion is at least TLS 1.2,
//     and ssl.enabled.protocols may only narrow TLSv1.2,TLSv1.3.
//  2. A Server answers every handshake with one consistent snapshot of
//     keystore and truststore. A changed file (modification time or size)
//     is read at the next handshake at least ReloadInterval after the last
//     check; until it parses, the previous snapshot stays in use and the
//     error is logged once per version of the file. Established connections
//     are never touched. No goroutine, timer or open file is kept.
//  3. A Server does not resume TLS sessions, so every connection's client
//     certificate is verified against the truststore current at its
//     handshake.
//  4. Principal only names a certificate that was verified against the
//     truststore; without one the principal is User:ANONYMOUS.
//  5. Errors about settings wrap ErrInvalidConfig and contain the Kafka name
//     of the setting.
//
// The distinguished name matched by mapping rules is written as Java's
// X500Principal.getName() writes it (see DistinguishedName), so rules
// written for Kafka match the same certificates here.
//
// Locks: Server.reload is taken only with TryLock on the handshake path and
// guards the file stamps; the current snapshot is an atomic pointer. There
// is no lock order to keep.
package tlsconfig
