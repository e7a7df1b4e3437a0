package cli

import (
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"

	"samsa/internal/node"
	"samsa/internal/tlsconfig"
)

// Environment variables that client commands read when the matching flag
// is not given. Secrets can live there rather than on the command line.
const (
	EnvTLSCA         = "SAMSA_TLS_CA"
	EnvTLSCert       = "SAMSA_TLS_CERT"
	EnvTLSKey        = "SAMSA_TLS_KEY"
	EnvSASLMechanism = "SAMSA_SASL_MECHANISM"
	EnvUser          = "SAMSA_USER"
	EnvPassword      = "SAMSA_PASSWORD"
)

// clientSecurity holds the persistent flags that secure a client
// command's connections. Empty strings fall back to the environment.
type clientSecurity struct {
	getenv func(string) string

	tls           bool
	tlsCA         string
	tlsCert       string
	tlsKey        string
	tlsServerName string
	mechanism     string
	user          string
	password      string
}

// addFlags registers the security flags on cmd as persistent flags.
func (s *clientSecurity) addFlags(cmd *cobra.Command) {
	f := cmd.PersistentFlags()
	f.BoolVar(&s.tls, "tls", false, "connect with TLS (implied by any other --tls-* flag or SAMSA_TLS_* variable)")
	f.StringVar(&s.tlsCA, "tls-ca", "", "PEM file of CA certificates that verify the brokers (env "+EnvTLSCA+"; default: system roots)")
	f.StringVar(&s.tlsCert, "tls-cert", "", "PEM client certificate chain for brokers with ssl.client.auth (env "+EnvTLSCert+")")
	f.StringVar(&s.tlsKey, "tls-key", "", "PEM private key of --tls-cert (env "+EnvTLSKey+")")
	f.StringVar(&s.tlsServerName, "tls-server-name", "", "host name the brokers' certificates must match (default: the host dialed)")
	f.StringVar(&s.mechanism, "sasl-mechanism", "", "authenticate with PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (env "+EnvSASLMechanism+")")
	f.StringVar(&s.user, "user", "", "SASL user name (env "+EnvUser+")")
	f.StringVar(&s.password, "password", "", "SASL password (env "+EnvPassword+"; prefer the variable, a flag shows in the process list)")
}

// value returns the flag value v, or the environment variable env if v is
// empty.
func (s *clientSecurity) value(v, env string) string {
	if v != "" || s.getenv == nil {
		return v
	}
	return s.getenv(env)
}

// opts returns the kgo options for the flags and environment: a TLS dialer
// and a SASL mechanism, or none. Misuse (a mechanism without credentials,
// a certificate without its key, an unknown mechanism, a file that cannot
// be read) is a usage error.
func (s *clientSecurity) opts() ([]kgo.Opt, error) {
	var opts []kgo.Opt
	ca, cert, key := s.value(s.tlsCA, EnvTLSCA), s.value(s.tlsCert, EnvTLSCert), s.value(s.tlsKey, EnvTLSKey)
	if s.tls || ca != "" || cert != "" || key != "" || s.tlsServerName != "" {
		if (cert == "") != (key == "") {
			return nil, usagef("--tls-cert and --tls-key go together")
		}
		cfg := tlsconfig.DefaultConfig()
		cfg.TruststoreLocation = ca
		if cert != "" {
			chain, err := os.ReadFile(cert)
			if err != nil {
				return nil, usagef("--tls-cert: %w", err)
			}
			k, err := os.ReadFile(key)
			if err != nil {
				return nil, usagef("--tls-key: %w", err)
			}
			cfg.KeystoreCertificateChain, cfg.KeystoreKey = string(chain), string(k)
		}
		tc, err := tlsconfig.NewClient(cfg, s.tlsServerName)
		if err != nil {
			return nil, usagef("tls: %w", err)
		}
		opts = append(opts, kgo.DialTLSConfig(tc))
	}
	mech := strings.ToUpper(strings.TrimSpace(s.value(s.mechanism, EnvSASLMechanism)))
	user, pass := s.value(s.user, EnvUser), s.value(s.password, EnvPassword)
	if mech == "" {
		// NB: the resolved values, so that credentials given only in
		// the environment are not silently left unused.
		if user != "" || pass != "" {
			return nil, usagef("--user and --password (or %s and %s) need --sasl-mechanism (or %s)", EnvUser, EnvPassword, EnvSASLMechanism)
		}
		return opts, nil
	}
	if user == "" || pass == "" {
		return nil, usagef("--sasl-mechanism %s needs --user and --password (or %s and %s)", mech, EnvUser, EnvPassword)
	}
	m, ok := node.ClientMechanism(mech, user, pass)
	if !ok {
		return nil, usagef("--sasl-mechanism %q: want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", mech)
	}
	return append(opts, kgo.SASL(m)), nil
}
