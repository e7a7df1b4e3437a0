package node

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	kgosasl "github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"samsa/internal/cluster"
	"samsa/internal/config"
	"samsa/internal/sasl"
	"samsa/internal/server"
	"samsa/internal/tlsconfig"
)

// listenerTLS returns the tlsconfig settings of listener from cfg, with
// listener.name.<l>. overrides applied.
func listenerTLS(cfg *config.Broker, listener string) tlsconfig.Config {
	v := func(name string) string { return cfg.ListenerValue(listener, name) }
	return tlsconfig.Config{
		KeystoreType:                    v("ssl.keystore.type"),
		KeystoreLocation:                v("ssl.keystore.location"),
		KeystoreCertificateChain:        v("ssl.keystore.certificate.chain"),
		KeystoreKey:                     v("ssl.keystore.key"),
		KeyPassword:                     v("ssl.key.password"),
		TruststoreType:                  v("ssl.truststore.type"),
		TruststoreLocation:              v("ssl.truststore.location"),
		TruststoreCertificates:          v("ssl.truststore.certificates"),
		ClientAuth:                      v("ssl.client.auth"),
		EnabledProtocols:                splitCSV(v("ssl.enabled.protocols")),
		CipherSuites:                    splitCSV(v("ssl.cipher.suites")),
		EndpointIdentificationAlgorithm: v("ssl.endpoint.identification.algorithm"),
		PrincipalMappingRules:           v("ssl.principal.mapping.rules"),
	}
}

func splitCSV(s string) []string {
	var out []string
	for _, it := range strings.Split(s, ",") {
		if it = strings.TrimSpace(it); it != "" {
			out = append(out, it)
		}
	}
	return out
}

// listenerConfig builds the server's view of one listener: its TLS setup
// and SASL mechanisms. Any setting that is missing or does not load is
// an error naming the listener: a listener never serves with less
// security than it was configured for.
//
// An OAUTHBEARER listener whose JWKS is an http(s) URL fetches it here,
// under ctx; the returned authenticator's endpoint must then be run by
// the caller for refreshes.
func listenerConfig(ctx context.Context, cfg *config.Broker, l config.ListenerSecurity, cl *cluster.Cluster, log *slog.Logger) (server.ListenerConfig, error) {
	lc := server.ListenerConfig{
		Name:             l.Name,
		SecurityProtocol: l.SecurityProtocol,
		MaxReauth:        time.Duration(cfg.ListenerInt64(l.Name, "connections.max.reauth.ms", 0)) * time.Millisecond,
		FailedAuthDelay:  time.Duration(cfg.ConnectionFailedAuthDelayMs) * time.Millisecond,
	}
	if l.TLS() {
		ts, err := tlsconfig.NewServer(listenerTLS(cfg, l.Name), log.With(PkgKey, "tlsconfig", "listener", l.Name))
		if err != nil {
			return lc, fmt.Errorf("listener %s: %w", l.Name, err)
		}
		lc.TLS = ts.TLSConfig()
		lc.TLSPrincipal = ts.Principal
	}
	if l.SASL() {
		a, err := newAuthenticator(ctx, cfg, l.Name, cl, log.With("listener", l.Name))
		if err != nil {
			return lc, fmt.Errorf("listener %s: %w", l.Name, err)
		}
		lc.SASL = a
		for _, m := range a.mechanisms {
			if cfg.MechanismValue(l.Name, m, "connections.max.reauth.ms") == cfg.ListenerValue(l.Name, "connections.max.reauth.ms") {
				continue
			}
			if lc.MaxReauthByMechanism == nil {
				lc.MaxReauthByMechanism = make(map[string]time.Duration)
			}
			lc.MaxReauthByMechanism[m] = time.Duration(cfg.MechanismInt64(l.Name, m, "connections.max.reauth.ms", 0)) * time.Millisecond
		}
	}
	return lc, nil
}

// authenticator serves one listener's SASL mechanisms: PLAIN users from
// the listener's JAAS config, SCRAM credentials from etcd (the cluster
// image), OAUTHBEARER tokens checked against a JWKS file or endpoint.
type authenticator struct {
	mechanisms []string
	plain      *sasl.PlainUsers
	scram      scramStore
	jwks       func() *sasl.KeySet
	oauth      sasl.OAuthConfig
	// endpoint is the JWKS endpoint of OAUTHBEARER, nil for a file; its
	// owner runs it.
	endpoint *jwksEndpoint
}

func newAuthenticator(ctx context.Context, cfg *config.Broker, listener string, cl *cluster.Cluster, log *slog.Logger) (*authenticator, error) {
	a := &authenticator{mechanisms: cfg.SASLMechanisms(listener), scram: scramStore{cl}}
	for _, m := range a.mechanisms {
		switch m {
		case sasl.PLAIN:
			users, err := sasl.ParsePlainJAAS(cfg.MechanismValue(listener, m, "sasl.jaas.config"))
			if err != nil {
				return nil, fmt.Errorf("listener.name.%s.plain.sasl.jaas.config: %w", strings.ToLower(listener), err)
			}
			a.plain = users
		case sasl.OAuthBearer:
			v := func(name string) string { return cfg.MechanismValue(listener, m, name) }
			keys, ep, err := openJWKS(ctx, cfg, listener, log)
			if err != nil {
				return nil, err
			}
			a.jwks, a.endpoint = keys, ep
			skew := time.Duration(cfg.MechanismInt64(listener, m, "sasl.oauthbearer.clock.skew.seconds", 30)) * time.Second
			if skew == 0 {
				skew = -1 // OAuthConfig: zero is the default 30 s, negative none
			}
			a.oauth = sasl.OAuthConfig{
				ExpectedAudience: splitCSV(v("sasl.oauthbearer.expected.audience")),
				ExpectedIssuer:   v("sasl.oauthbearer.expected.issuer"),
				SubClaimName:     v("sasl.oauthbearer.sub.claim.name"),
				ScopeClaimName:   v("sasl.oauthbearer.scope.claim.name"),
				ClockSkew:        skew,
			}
			if ep != nil {
				a.oauth.MissingKey = ep.missingKey
			}
		}
	}
	return a, nil
}

// Mechanisms implements server.Authenticator.
func (a *authenticator) Mechanisms() []string { return a.mechanisms }

// NewSession implements server.Authenticator.
func (a *authenticator) NewSession(mechanism string) (server.SASLSession, bool) {
	enabled := false
	for _, m := range a.mechanisms {
		enabled = enabled || m == mechanism
	}
	if !enabled {
		return nil, false
	}
	switch mechanism {
	case sasl.PLAIN:
		return sasl.NewPlain(a.plain), true
	case sasl.ScramSHA256, sasl.ScramSHA512:
		return sasl.NewScram(mechanism, a.scram, sasl.Config{}), true
	case sasl.OAuthBearer:
		return sasl.NewOAuthBearer(a.jwks, a.oauth), true
	}
	return nil, false
}

// scramStore reads SCRAM credentials from the cluster image.
type scramStore struct{ cl *cluster.Cluster }

func (s scramStore) ScramCredential(mechanism, user string) (sasl.ScramCredential, bool) {
	c, ok := s.cl.Image().ScramCredentials[user][mechanism]
	if !ok {
		return sasl.ScramCredential{}, false
	}
	return sasl.ScramCredential{Salt: c.Salt, Iterations: c.Iterations, StoredKey: c.StoredKey, ServerKey: c.ServerKey}, true
}

// interBrokerSecurity is how this broker connects to the inter-broker
// listener of the others: TLS (nil: plaintext) and the SASL mechanism
// (nil: none).
type interBrokerSecurity struct {
	tls  *tls.Config
	mech kgosasl.Mechanism
}

// interBrokerSecurityOf returns how brokers connect to the inter-broker
// listener: TLS with the listener's trust store (and its key store as
// client certificate), SASL with the listener's JAAS username and password
// for sasl.mechanism.inter.broker.protocol.
func interBrokerSecurityOf(cfg *config.Broker) (interBrokerSecurity, error) {
	ib := cfg.InterBrokerListener()
	var sec interBrokerSecurity
	if ib.TLS() {
		tc := listenerTLS(cfg, ib.Name)
		tc.ClientAuth = ""
		tlsCfg, err := tlsconfig.NewClient(tc, "")
		if err != nil {
			return sec, fmt.Errorf("inter-broker listener %s: %w", ib.Name, err)
		}
		sec.tls = tlsCfg
	}
	if ib.SASL() {
		m := cfg.SASLMechanismInterBroker
		_, o, err := sasl.ParseJAAS(cfg.MechanismValue(ib.Name, m, "sasl.jaas.config"))
		if err != nil {
			return sec, fmt.Errorf("listener.name.%s.%s.sasl.jaas.config: %w", strings.ToLower(ib.Name), strings.ToLower(m), err)
		}
		user, pass := o["username"], o["password"]
		if user == "" || pass == "" {
			return sec, fmt.Errorf("listener.name.%s.%s.sasl.jaas.config: needs username and password for inter-broker connections",
				strings.ToLower(ib.Name), strings.ToLower(m))
		}
		mech, ok := ClientMechanism(m, user, pass)
		if !ok {
			return sec, errors.New("sasl.mechanism.inter.broker.protocol: " + m + " cannot be used between brokers")
		}
		sec.mech = mech
	}
	return sec, nil
}

// opts returns sec as franz-go client options.
func (sec interBrokerSecurity) opts() []kgo.Opt {
	var opts []kgo.Opt
	if sec.tls != nil {
		opts = append(opts, kgo.DialTLSConfig(sec.tls))
	}
	if sec.mech != nil {
		opts = append(opts, kgo.SASL(sec.mech))
	}
	return opts
}

// ClientMechanism returns franz-go's client side of a SASL mechanism
// with a username and password; ok is false for other mechanisms. The
// brokers' connections to each other use it, and so do the command
// line's clients.
func ClientMechanism(mechanism, user, pass string) (m kgosasl.Mechanism, ok bool) {
	switch mechanism {
	case sasl.PLAIN:
		return plain.Auth{User: user, Pass: pass}.AsMechanism(), true
	case sasl.ScramSHA256:
		return scram.Auth{User: user, Pass: pass}.AsSha256Mechanism(), true
	case sasl.ScramSHA512:
		return scram.Auth{User: user, Pass: pass}.AsSha512Mechanism(), true
	}
	return nil, false
}

// ensureInterBrokerCredential stores the SCRAM credential of the
// inter-broker user (the username and password of the inter-broker
// listener's JAAS config) when etcd has none, so that brokers can
// authenticate to each other on first start without a separate step. An
// existing credential is never replaced: change it with
// AlterUserScramCredentials (samsa user create).
func ensureInterBrokerCredential(ctx context.Context, cfg *config.Broker, cl *cluster.Cluster) error {
	ib := cfg.InterBrokerListener()
	m := cfg.SASLMechanismInterBroker
	if !ib.SASL() || (m != sasl.ScramSHA256 && m != sasl.ScramSHA512) {
		return nil
	}
	_, o, err := sasl.ParseJAAS(cfg.MechanismValue(ib.Name, m, "sasl.jaas.config"))
	if err != nil {
		return err
	}
	user := o["username"]
	if _, ok := cl.Image().ScramCredentials[user][m]; ok {
		return nil
	}
	salt := make([]byte, 32)
	if _, err := rand.Read(salt); err != nil {
		return err
	}
	c, err := sasl.NewScramCredential(m, o["password"], salt, sasl.MinScramIterations)
	if err != nil {
		return err
	}
	return cl.UpsertScramCredential(ctx, user, m, cluster.ScramCredential{
		Salt: c.Salt, Iterations: c.Iterations, StoredKey: c.StoredKey, ServerKey: c.ServerKey,
	})
}
