package tlsconfig

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// Errors returned by this package. Errors about a setting wrap
// ErrInvalidConfig and contain the Kafka name of that setting, for example
// "tlsconfig: invalid configuration: ssl.keystore.location: open ...".
var (
	// ErrInvalidConfig marks a missing, conflicting or unsupported ssl.*
	// setting, or a file or inline PEM named by one that cannot be used.
	ErrInvalidConfig = errors.New("tlsconfig: invalid configuration")
	// ErrKeyPassword marks an encrypted private key whose ssl.key.password
	// is missing or wrong. It comes wrapped together with ErrInvalidConfig.
	ErrKeyPassword = errors.New("tlsconfig: private key password missing or wrong")
	// ErrNoRuleMatched is returned by Principal (and Mapper.Map) when no
	// ssl.principal.mapping.rules rule matches the certificate's subject.
	ErrNoRuleMatched = errors.New("tlsconfig: no principal mapping rule matched")
	// ErrUnverifiedPeer is returned by Principal for a connection whose
	// handshake has not completed, or whose peer certificate was not verified.
	ErrUnverifiedPeer = errors.New("tlsconfig: peer certificate not verified")
)

// Kafka's names of the settings in Config, used in error messages.
const (
	settingKeystoreType        = "ssl.keystore.type"
	settingKeystoreLocation    = "ssl.keystore.location"
	settingKeystoreChain       = "ssl.keystore.certificate.chain"
	settingKeystoreKey         = "ssl.keystore.key"
	settingKeyPassword         = "ssl.key.password"
	settingTruststoreType      = "ssl.truststore.type"
	settingTruststoreLocation  = "ssl.truststore.location"
	settingTruststoreCerts     = "ssl.truststore.certificates"
	settingClientAuth          = "ssl.client.auth"
	settingEnabledProtocols    = "ssl.enabled.protocols"
	settingCipherSuites        = "ssl.cipher.suites"
	settingEndpointID          = "ssl.endpoint.identification.algorithm"
	settingPrincipalMapping    = "ssl.principal.mapping.rules"
	defaultStoreType           = "PEM"
	endpointIdentificationHTTP = "https"
)

// Config holds Kafka's ssl.* settings for one listener or client. Each
// field's comment names the Kafka config it carries. The zero value of a
// field means Kafka's default, with one exception:
// EndpointIdentificationAlgorithm "" turns host name verification off (as
// setting it to the empty string does in Kafka); DefaultConfig returns a
// Config with Kafka's default "https" there.
//
// A Config is a plain value; NewServer and NewClient copy what they need.
type Config struct {
	KeystoreType             string   // ssl.keystore.type: "PEM" (default); JKS and PKCS12 are refused
	KeystoreLocation         string   // ssl.keystore.location: PEM file holding the private key and the certificate chain
	KeystoreCertificateChain string   // ssl.keystore.certificate.chain: inline PEM certificate chain, leaf first
	KeystoreKey              string   // ssl.keystore.key: inline PEM private key (PKCS#8, encrypted or not)
	KeyPassword              string   // ssl.key.password: password of an encrypted private key; ignored for an unencrypted one
	TruststoreType           string   // ssl.truststore.type: "PEM" (default)
	TruststoreLocation       string   // ssl.truststore.location: PEM file of CA certificates
	TruststoreCertificates   string   // ssl.truststore.certificates: inline PEM CA certificates
	ClientAuth               string   // ssl.client.auth: none (default) | requested | required; servers only
	EnabledProtocols         []string // ssl.enabled.protocols: TLSv1.2, TLSv1.3 (default both)
	CipherSuites             []string // ssl.cipher.suites: IANA names; empty means Go's defaults

	// EndpointIdentificationAlgorithm is ssl.endpoint.identification.algorithm:
	// "https" makes a client check the server's certificate against the host
	// name; "" only checks the chain. Servers ignore it.
	EndpointIdentificationAlgorithm string

	// PrincipalMappingRules is ssl.principal.mapping.rules (servers): comma-
	// or newline-separated RULE:pattern/replacement/[LU] and DEFAULT entries.
	// Empty means "DEFAULT".
	PrincipalMappingRules string

	// Now is the clock for certificate validity and for pacing file reloads.
	// Nil means time.Now.
	Now func() time.Time
}

// DefaultConfig returns a Config holding Kafka's defaults: PEM stores, no
// client authentication, TLSv1.2 and TLSv1.3, host name verification on
// ("https") and the DEFAULT principal mapping rule.
func DefaultConfig() Config {
	return Config{
		KeystoreType:                    defaultStoreType,
		TruststoreType:                  defaultStoreType,
		ClientAuth:                      "none",
		EnabledProtocols:                []string{"TLSv1.2", "TLSv1.3"},
		EndpointIdentificationAlgorithm: endpointIdentificationHTTP,
		PrincipalMappingRules:           "DEFAULT",
	}
}

// settingError returns an error wrapping ErrInvalidConfig (and cause, if not
// nil) whose text starts with the setting's Kafka name.
func settingError(setting string, cause error, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if cause == nil {
		return fmt.Errorf("%w: %s: %s", ErrInvalidConfig, setting, msg)
	}
	if msg == "" {
		return fmt.Errorf("%w: %s: %w", ErrInvalidConfig, setting, cause)
	}
	return fmt.Errorf("%w: %s: %s: %w", ErrInvalidConfig, setting, msg, cause)
}

func (c *Config) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

func (c *Config) hasKeystore() bool {
	return c.KeystoreLocation != "" || c.KeystoreCertificateChain != "" || c.KeystoreKey != ""
}

func (c *Config) hasTruststore() bool {
	return c.TruststoreLocation != "" || c.TruststoreCertificates != ""
}

// checkStores validates the store types and that each store is set in at
// most one way.
func (c *Config) checkStores() error {
	for _, st := range []struct{ setting, v string }{
		{settingKeystoreType, c.KeystoreType},
		{settingTruststoreType, c.TruststoreType},
	} {
		switch strings.ToUpper(strings.TrimSpace(st.v)) {
		case "", defaultStoreType:
		case "JKS", "PKCS12":
			return settingError(st.setting, nil, "%s is not supported; convert the store to PEM (for example with keytool and openssl)", st.v)
		default:
			return settingError(st.setting, nil, "unknown store type %q; only PEM is supported", st.v)
		}
	}
	if c.KeystoreLocation != "" && (c.KeystoreCertificateChain != "" || c.KeystoreKey != "") {
		return settingError(settingKeystoreLocation, nil, "set either it or %s and %s, not both", settingKeystoreChain, settingKeystoreKey)
	}
	if c.KeystoreLocation == "" {
		if c.KeystoreCertificateChain != "" && c.KeystoreKey == "" {
			return settingError(settingKeystoreKey, nil, "missing; %s is set", settingKeystoreChain)
		}
		if c.KeystoreKey != "" && c.KeystoreCertificateChain == "" {
			return settingError(settingKeystoreChain, nil, "missing; %s is set", settingKeystoreKey)
		}
	}
	if c.TruststoreLocation != "" && c.TruststoreCertificates != "" {
		return settingError(settingTruststoreLocation, nil, "set either it or %s, not both", settingTruststoreCerts)
	}
	return nil
}

// versions maps ssl.enabled.protocols to a Go version range. Kafka's
// protocol names are case-sensitive; so is this.
func versions(protocols []string) (minV, maxV uint16, err error) {
	if len(protocols) == 0 {
		return tls.VersionTLS12, tls.VersionTLS13, nil
	}
	for _, p := range protocols {
		var v uint16
		switch strings.TrimSpace(p) {
		case "TLSv1.2":
			v = tls.VersionTLS12
		case "TLSv1.3":
			v = tls.VersionTLS13
		case "TLSv1", "TLSv1.1", "SSLv3", "SSLv2Hello":
			return 0, 0, settingError(settingEnabledProtocols, nil, "%s is refused; only TLSv1.2 and TLSv1.3 are supported", p)
		default:
			return 0, 0, settingError(settingEnabledProtocols, nil, "unknown protocol %q; want TLSv1.2 or TLSv1.3", p)
		}
		if minV == 0 || v < minV {
			minV = v
		}
		if v > maxV {
			maxV = v
		}
	}
	return minV, maxV, nil
}

// tls13Suites are the TLS 1.3 suite names that Kafka accepts in
// ssl.cipher.suites. Go always enables all of them, so they are accepted
// and otherwise ignored.
var tls13Suites = map[string]bool{
	"TLS_AES_128_GCM_SHA256":       true,
	"TLS_AES_256_GCM_SHA384":       true,
	"TLS_CHACHA20_POLY1305_SHA256": true,
}

// cipherSuites maps ssl.cipher.suites to Go suite IDs. Suites Go lists as
// insecure are refused. A list naming only TLS 1.3 suites while TLS 1.2 is
// enabled is refused too: Kafka would then fail every TLS 1.2 handshake,
// while Go would quietly fall back to its defaults.
func cipherSuites(names []string, minV uint16) ([]uint16, error) {
	if len(names) == 0 {
		return nil, nil
	}
	known := make(map[string]uint16)
	for _, s := range tls.CipherSuites() {
		known[s.Name] = s.ID
	}
	insecure := make(map[string]bool)
	for _, s := range tls.InsecureCipherSuites() {
		insecure[s.Name] = true
	}
	var ids []uint16
	for _, n := range names {
		n = strings.TrimSpace(n)
		switch {
		case n == "":
		case tls13Suites[n]:
		case insecure[n]:
			return nil, settingError(settingCipherSuites, nil, "%s is insecure and refused", n)
		default:
			id, ok := known[n]
			if !ok {
				return nil, settingError(settingCipherSuites, nil, "unknown cipher suite %q (want IANA names such as TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256)", n)
			}
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 && minV <= tls.VersionTLS12 {
		return nil, settingError(settingCipherSuites, nil, "names no TLS 1.2 suite while %s includes TLSv1.2", settingEnabledProtocols)
	}
	return ids, nil
}

// clientAuth maps ssl.client.auth, case-insensitively as Kafka does.
func clientAuth(v string) (tls.ClientAuthType, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", "none":
		return tls.NoClientCert, nil
	case "requested":
		return tls.VerifyClientCertIfGiven, nil
	case "required":
		return tls.RequireAndVerifyClientCert, nil
	default:
		return 0, settingError(settingClientAuth, nil, "unknown value %q; want none, requested or required", v)
	}
}

// baseConfig returns the settings shared by servers and clients: version
// range and cipher suites.
func (c *Config) baseConfig() (*tls.Config, error) {
	minV, maxV, err := versions(c.EnabledProtocols)
	if err != nil {
		return nil, err
	}
	suites, err := cipherSuites(c.CipherSuites, minV)
	if err != nil {
		return nil, err
	}
	tc := &tls.Config{
		MinVersion:   minV,
		MaxVersion:   maxV,
		CipherSuites: suites,
	}
	if c.Now != nil {
		tc.Time = c.Now
	}
	return tc, nil
}

func discardLogger(log *slog.Logger) *slog.Logger {
	if log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return log
}
