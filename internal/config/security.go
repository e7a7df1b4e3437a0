package config

import (
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// Security protocols, as listener.security.protocol.map names them.
const (
	Plaintext     = "PLAINTEXT"
	SSL           = "SSL"
	SASLPlaintext = "SASL_PLAINTEXT"
	SASLSSL       = "SASL_SSL"
)

// SASL mechanisms samsa serves.
var saslMechanisms = []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"}

// listenerScoped are the configs that may also be set for one listener as
// listener.name.<listener>.<config> (Kafka's per-listener override). The
// listener name in the prefix is lower case, as in Kafka.
var listenerScoped = map[string]bool{
	"ssl.keystore.type": true, "ssl.keystore.location": true, "ssl.keystore.certificate.chain": true,
	"ssl.keystore.key": true, "ssl.key.password": true, "ssl.truststore.type": true,
	"ssl.truststore.location": true, "ssl.truststore.certificates": true, "ssl.client.auth": true,
	"ssl.enabled.protocols": true, "ssl.cipher.suites": true, "ssl.principal.mapping.rules": true,
	"ssl.endpoint.identification.algorithm": true,
	"sasl.enabled.mechanisms":               true, "sasl.jaas.config": true,
	"sasl.oauthbearer.jwks.endpoint.url": true, "sasl.oauthbearer.expected.audience": true,
	"sasl.oauthbearer.expected.issuer": true, "sasl.oauthbearer.sub.claim.name": true,
	"sasl.oauthbearer.scope.claim.name": true, "sasl.oauthbearer.clock.skew.seconds": true,
	"sasl.oauthbearer.jwks.endpoint.refresh.ms": true, "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms": true,
	"sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms": true, "connections.max.reauth.ms": true,
	"max.connections": true, "max.connection.creation.rate": true,
}

// mechanismScoped are the configs that may be set per listener and SASL
// mechanism: listener.name.<listener>.<mechanism>.<config>, the mechanism
// in lower case (listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config).
var mechanismScoped = map[string]bool{
	"sasl.jaas.config": true, "connections.max.reauth.ms": true,
	"sasl.oauthbearer.jwks.endpoint.url": true, "sasl.oauthbearer.expected.audience": true,
	"sasl.oauthbearer.expected.issuer": true, "sasl.oauthbearer.sub.claim.name": true,
	"sasl.oauthbearer.scope.claim.name": true, "sasl.oauthbearer.clock.skew.seconds": true,
	"sasl.oauthbearer.jwks.endpoint.refresh.ms": true, "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms": true,
	"sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms": true,
}

// IsSensitive reports whether the broker config name, or the config a
// listener.name.<l>.[<mechanism>.] name sets, holds a secret (a password,
// a key, a JAAS config). An unknown name is treated as sensitive, so a
// value whose meaning is not known is never shown.
func IsSensitive(name string) bool {
	d, ok := LookupBroker(name)
	if !ok {
		d, ok = lookupScoped(name)
	}
	return !ok || d.Sensitive
}

// lookupScoped resolves a listener.name.<l>.[<mech>.]<config> name to the
// def of <config>. ok is false for names of another shape.
func lookupScoped(name string) (Def, bool) {
	rest, ok := strings.CutPrefix(name, "listener.name.")
	if !ok {
		return Def{}, false
	}
	lname, cfg, ok := strings.Cut(rest, ".")
	if !ok || lname == "" || lname != strings.ToLower(lname) {
		return Def{}, false
	}
	if listenerScoped[cfg] {
		if d, ok := LookupBroker(cfg); ok {
			return d, true
		}
	}
	mech, cfg, ok := strings.Cut(cfg, ".")
	if ok && slices.Contains(saslMechanisms, strings.ToUpper(mech)) && mech == strings.ToLower(mech) && mechanismScoped[cfg] {
		if d, ok := LookupBroker(cfg); ok {
			return d, true
		}
	}
	return Def{}, false
}

// securityDefs are the configs of TLS, SASL, authorization, quotas and
// connection limits. Kafka's names and, where samsa serves it, Kafka's
// default.
var securityDefs = []Def{
	{Name: "security.inter.broker.protocol", Type: TypeString, Null: true, ReadOnly: true,
		Validate: oneOf(Plaintext, SSL, SASLPlaintext, SASLSSL),
		Doc:      "Security protocol brokers use to reach each other; names the listener of that name. Set this or inter.broker.listener.name, not both."},
	{Name: "ssl.keystore.type", Type: TypeString, Default: "PEM", ReadOnly: true, Validate: oneOf("PEM"),
		Doc: "Format of the key store; samsa reads PEM only (KIP-651)."},
	{Name: "ssl.keystore.location", Type: TypeString, Null: true, ReadOnly: true,
		Doc: "PEM file holding the private key and the certificate chain of an SSL or SASL_SSL listener. Reread when it changes."},
	{Name: "ssl.keystore.certificate.chain", Type: TypePassword, Null: true, ReadOnly: true, Sensitive: true,
		Doc: "Certificate chain in PEM, inline, instead of ssl.keystore.location."},
	{Name: "ssl.keystore.key", Type: TypePassword, Null: true, ReadOnly: true, Sensitive: true,
		Doc: "Private key in PEM, inline, instead of ssl.keystore.location."},
	{Name: "ssl.key.password", Type: TypePassword, Null: true, ReadOnly: true, Sensitive: true,
		Doc: "Password of an encrypted private key."},
	{Name: "ssl.truststore.type", Type: TypeString, Default: "PEM", ReadOnly: true, Validate: oneOf("PEM"),
		Doc: "Format of the trust store; samsa reads PEM only."},
	{Name: "ssl.truststore.location", Type: TypeString, Null: true, ReadOnly: true,
		Doc: "PEM file of the CA certificates that verify client certificates (and, for inter-broker connections, the other brokers). Reread when it changes."},
	{Name: "ssl.truststore.certificates", Type: TypePassword, Null: true, ReadOnly: true, Sensitive: true,
		Doc: "CA certificates in PEM, inline, instead of ssl.truststore.location."},
	{Name: "ssl.client.auth", Type: TypeString, Default: "none", ReadOnly: true, Validate: oneOf("none", "requested", "required"),
		Doc: "Whether SSL listeners ask clients for a certificate: none, requested or required."},
	{Name: "ssl.enabled.protocols", Type: TypeList, Default: "TLSv1.2,TLSv1.3", ReadOnly: true, Validate: listOf("TLSv1.2", "TLSv1.3"),
		Doc: "TLS versions served; TLS 1.0 and 1.1 are never served."},
	{Name: "ssl.protocol", Type: TypeString, Default: "TLSv1.3", ReadOnly: true, Validate: oneOf("TLSv1.2", "TLSv1.3", "TLS"),
		Doc: "Accepted for compatibility; ssl.enabled.protocols decides the versions."},
	{Name: "ssl.cipher.suites", Type: TypeList, Default: "", ReadOnly: true,
		Doc: "TLS 1.2 cipher suites by IANA name; empty uses Go's secure defaults."},
	{Name: "ssl.endpoint.identification.algorithm", Type: TypeString, Default: "https", ReadOnly: true, Validate: oneOf("https", ""),
		Doc: "https: brokers verify the host name of the brokers they connect to; empty turns that off."},
	{Name: "ssl.principal.mapping.rules", Type: TypeString, Default: "DEFAULT", ReadOnly: true,
		Doc: "Rules mapping a client certificate's subject to a principal name (KIP-371)."},
	{Name: "sasl.enabled.mechanisms", Type: TypeList, Default: "SCRAM-SHA-256,SCRAM-SHA-512", ReadOnly: true,
		Validate: listOf(saslMechanisms...),
		Doc:      "SASL mechanisms of SASL listeners: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER. Kafka's default is GSSAPI, which samsa does not serve."},
	{Name: "sasl.mechanism.inter.broker.protocol", Type: TypeString, Default: "SCRAM-SHA-512", ReadOnly: true,
		Validate: oneOf(saslMechanisms[:3]...),
		Doc:      "SASL mechanism brokers use to reach each other over a SASL inter-broker listener; the credentials are the username and password of that listener's sasl.jaas.config for the mechanism."},
	{Name: "sasl.jaas.config", Type: TypePassword, Null: true, ReadOnly: true, Sensitive: true,
		Doc: "JAAS configuration; samsa reads PlainLoginModule (user_NAME=\"password\" entries, and username/password for inter-broker use), ScramLoginModule (username/password) and, for a JWKS fetched over https, OAuthBearerLoginModule (ssl.truststore.location, ssl.truststore.certificates, ssl.truststore.type). Usually set per listener and mechanism: listener.name.<l>.<mechanism>.sasl.jaas.config."},
	{Name: "sasl.oauthbearer.jwks.endpoint.url", Type: TypeString, Null: true, ReadOnly: true,
		Doc: "JWKS holding the keys that verify OAUTHBEARER tokens: a path or file:// URL, reread when it changes (checked at most once a second), or an https:// (or http://) URL, which must be listed in sasl.oauthbearer.allowed.urls; fetched at startup, every sasl.oauthbearer.jwks.endpoint.refresh.ms, and when a token names a key id the set lacks (at most once in 10 s)."},
	{Name: "sasl.oauthbearer.allowed.urls", Type: TypeList, Default: "", ReadOnly: true,
		Doc: "URLs the broker may fetch an OAUTHBEARER JWKS from (Kafka's org.apache.kafka.sasl.oauthbearer.allowed.urls system property): an http or https sasl.oauthbearer.jwks.endpoint.url must equal one of them. Empty allows none. Files need not be listed."},
	{Name: "sasl.oauthbearer.jwks.endpoint.refresh.ms", Type: TypeLong, Default: "3600000", ReadOnly: true, Validate: atLeast(1000),
		Doc: "How often a JWKS fetched from an http or https URL is fetched again. A JWKS file is checked for changes every second instead."},
	{Name: "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms", Type: TypeLong, Default: "100", ReadOnly: true, Validate: atLeast(1),
		Doc: "Wait before the first retry of a JWKS fetch that failed; the wait doubles with each failure, up to sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms. The last good key set stays in use meanwhile."},
	{Name: "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms", Type: TypeLong, Default: "10000", ReadOnly: true, Validate: atLeast(1),
		Doc: "Longest wait between retries of a JWKS fetch that keeps failing."},
	{Name: "sasl.oauthbearer.expected.audience", Type: TypeList, Default: "", ReadOnly: true,
		Doc: "Audiences of which an OAUTHBEARER token's aud claim must name one; empty checks nothing."},
	{Name: "sasl.oauthbearer.expected.issuer", Type: TypeString, Null: true, ReadOnly: true,
		Doc: "Issuer an OAUTHBEARER token's iss claim must equal; unset checks nothing."},
	{Name: "sasl.oauthbearer.sub.claim.name", Type: TypeString, Default: "sub", ReadOnly: true,
		Doc: "Claim that names the principal of an OAUTHBEARER token."},
	{Name: "sasl.oauthbearer.scope.claim.name", Type: TypeString, Default: "scope", ReadOnly: true,
		Doc: "Claim holding an OAUTHBEARER token's scopes."},
	{Name: "sasl.oauthbearer.clock.skew.seconds", Type: TypeInt, Default: "30", ReadOnly: true, Validate: atLeast(0),
		Doc: "Clock difference tolerated when checking a token's exp, nbf and iat."},
	{Name: "connections.max.reauth.ms", Type: TypeLong, Default: "0", ReadOnly: true, Validate: atLeast(0),
		Doc: "Longest a SASL session lasts before the client must re-authenticate (KIP-368); 0: no bound."},
	{Name: "connection.failed.authentication.delay.ms", Type: TypeInt, Default: "100", ReadOnly: true, Validate: atLeast(0),
		Doc: "Delay before a connection that failed authentication is closed."},
	{Name: "authorizer.class.name", Type: TypeString, Default: "", ReadOnly: true,
		Validate: oneOf("", "samsa", "org.apache.kafka.metadata.authorizer.StandardAuthorizer", "kafka.security.authorizer.AclAuthorizer"),
		Doc:      "Empty: every request is allowed. samsa (or Kafka's StandardAuthorizer or AclAuthorizer, accepted as aliases): ACLs stored in etcd decide."},
	{Name: "super.users", Type: TypeString, Default: "", ReadOnly: true,
		Doc: "Principals allowed everything, separated by semicolons (User:admin;User:broker)."},
	{Name: "allow.everyone.if.no.acl.found", Type: TypeBoolean, Default: "false", ReadOnly: true,
		Doc: "Allow a request on a resource that no ACL names."},
	{Name: "quota.window.num", Type: TypeInt, Default: "11", ReadOnly: true, Validate: atLeast(1),
		Doc: "Number of samples a client quota rate is measured over."},
	{Name: "quota.window.size.seconds", Type: TypeInt, Default: "1", ReadOnly: true, Validate: atLeast(1),
		Doc: "Length of one sample of a client quota rate, in seconds."},
	{Name: "max.connections", Type: TypeInt, Default: maxInt32, ReadOnly: true, Validate: atLeast(1),
		Doc: "Most connections the broker holds open (at least 1); a new one waits in the acceptor until one closes. Also settable per listener as listener.name.<l>.max.connections. With several listeners the inter-broker listener is exempt from the broker-wide count (KIP-402)."},
	{Name: "max.connections.per.ip", Type: TypeInt, Default: maxInt32, ReadOnly: true, Validate: atLeast(0),
		Doc: "Most connections from one IP address; a connection beyond it is closed at once."},
	{Name: "max.connections.per.ip.overrides", Type: TypeString, Default: "", ReadOnly: true, Validate: ipOverrides,
		Doc: "Per-address exceptions to max.connections.per.ip: ip:count entries, comma separated. samsa takes IP addresses only, no host names."},
	{Name: "max.connection.creation.rate", Type: TypeInt, Default: maxInt32, ReadOnly: true, Validate: atLeast(1),
		Doc: "Most new connections per second the broker accepts (at least 1); beyond it the acceptor waits (KIP-612). Also settable per listener as listener.name.<l>.max.connection.creation.rate."},
}

// maxInt32 is Kafka's default for the connection limits: Int.MaxValue, no limit.
const maxInt32 = "2147483647"

// ipOverrides checks max.connections.per.ip.overrides: ip:count entries, the
// count after the last colon (so IPv6 addresses need no brackets).
func ipOverrides(v string) error {
	for _, it := range splitList(v) {
		i := strings.LastIndexByte(it, ':')
		if i < 0 {
			return fmt.Errorf("entry %q: want ip:count", it)
		}
		host, count := strings.TrimSpace(it[:i]), strings.TrimSpace(it[i+1:])
		if _, err := netip.ParseAddr(host); err != nil {
			return fmt.Errorf("entry %q: %q is not an IP address", it, host)
		}
		if n, err := strconv.ParseInt(count, 10, 32); err != nil || n < 0 {
			return fmt.Errorf("entry %q: count must be a non-negative integer", it)
		}
	}
	return nil
}

// ListenerSecurity is one listener with its security protocol.
type ListenerSecurity struct {
	Listener
	// SecurityProtocol is PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL.
	SecurityProtocol string
}

// TLS reports whether the listener's protocol runs over TLS.
func (l ListenerSecurity) TLS() bool {
	return l.SecurityProtocol == SSL || l.SecurityProtocol == SASLSSL
}

// SASL reports whether the listener's protocol authenticates with SASL.
func (l ListenerSecurity) SASL() bool {
	return l.SecurityProtocol == SASLPlaintext || l.SecurityProtocol == SASLSSL
}

// parseProtocolMap parses listener.security.protocol.map: NAME:PROTOCOL
// pairs, comma separated.
func parseProtocolMap(v string) (map[string]string, error) {
	m := make(map[string]string)
	for _, it := range splitList(v) {
		name, proto, ok := strings.Cut(it, ":")
		name, proto = strings.ToUpper(strings.TrimSpace(name)), strings.ToUpper(strings.TrimSpace(proto))
		if !ok || name == "" {
			return nil, fmt.Errorf("entry %q: want NAME:PROTOCOL", it)
		}
		switch proto {
		case Plaintext, SSL, SASLPlaintext, SASLSSL:
		default:
			return nil, fmt.Errorf("entry %q: unknown security protocol %s", it, proto)
		}
		if _, dup := m[name]; dup {
			return nil, fmt.Errorf("entry %q: listener %s mapped twice", it, name)
		}
		m[name] = proto
	}
	return m, nil
}

// ListenerValue returns the value of config name for listener: the
// listener.name.<listener>.<name> override if set, else name's own value
// (or default). It returns "" for an unknown name or a null value.
func (b *Broker) ListenerValue(listener, name string) string {
	if v, ok := b.Raw["listener.name."+strings.ToLower(listener)+"."+name]; ok {
		return v
	}
	return b.value(name)
}

// MechanismValue returns the value of config name for a SASL mechanism of
// listener: listener.name.<l>.<mechanism>.<name>, else ListenerValue.
func (b *Broker) MechanismValue(listener, mechanism, name string) string {
	if v, ok := b.Raw["listener.name."+strings.ToLower(listener)+"."+strings.ToLower(mechanism)+"."+name]; ok {
		return v
	}
	return b.ListenerValue(listener, name)
}

// ListenerIsSet reports whether name is set for listener, by its
// listener.name prefix or globally.
func (b *Broker) ListenerIsSet(listener, name string) bool {
	if _, ok := b.Raw["listener.name."+strings.ToLower(listener)+"."+name]; ok {
		return true
	}
	_, ok := b.Raw[name]
	return ok
}

// value returns a config's set value or default ("" if null or unknown).
func (b *Broker) value(name string) string {
	if v, ok := b.Raw[name]; ok {
		return v
	}
	d, ok := LookupBroker(name)
	if !ok || d.Null {
		return ""
	}
	return d.Default
}

// ListenerInt64 is ListenerValue parsed as an integer; def if unset or
// malformed (values were checked when set).
func (b *Broker) ListenerInt64(listener, name string, def int64) int64 {
	v, err := strconv.ParseInt(strings.TrimSpace(b.ListenerValue(listener, name)), 10, 64)
	if err != nil {
		return def
	}
	return v
}

// MechanismInt64 is MechanismValue parsed as an integer; def if unset or
// malformed (values were checked when set).
func (b *Broker) MechanismInt64(listener, mechanism, name string, def int64) int64 {
	v, err := strconv.ParseInt(strings.TrimSpace(b.MechanismValue(listener, mechanism, name)), 10, 64)
	if err != nil {
		return def
	}
	return v
}

// SASLMechanisms returns the SASL mechanisms enabled on listener.
func (b *Broker) SASLMechanisms(listener string) []string {
	var out []string
	for _, m := range splitList(b.ListenerValue(listener, "sasl.enabled.mechanisms")) {
		out = append(out, strings.ToUpper(m))
	}
	return out
}

// InterBrokerListener returns the listener brokers use to reach each
// other.
func (b *Broker) InterBrokerListener() ListenerSecurity {
	for _, l := range b.SecureListeners {
		if l.Name == b.InterBrokerListenerName {
			return l
		}
	}
	return ListenerSecurity{}
}

// AdvertisedFor returns the advertised address of a listener.
func (b *Broker) AdvertisedFor(name string) (Listener, bool) {
	for _, l := range b.AdvertisedListeners {
		if l.Name == name {
			return l, true
		}
	}
	return Listener{}, false
}

// resolveSecurity fills the security fields of b from the resolver.
func (b *Broker) resolveSecurity(r *resolver) {
	b.ListenerProtocols = map[string]string{}
	pm, err := parseProtocolMap(r.str("listener.security.protocol.map"))
	if err != nil {
		r.fail(fmt.Errorf("%w: listener.security.protocol.map: %w", ErrInvalidConfig, err))
		return
	}
	b.ListenerProtocols = pm
	for _, l := range b.Listeners {
		b.SecureListeners = append(b.SecureListeners, ListenerSecurity{Listener: l, SecurityProtocol: pm[l.Name]})
	}
	b.SecurityInterBrokerProtocol = strings.ToUpper(strings.TrimSpace(r.str("security.inter.broker.protocol")))
	b.SASLMechanismInterBroker = strings.ToUpper(strings.TrimSpace(r.str("sasl.mechanism.inter.broker.protocol")))
	b.ConnectionsMaxReauthMs = r.int64("connections.max.reauth.ms")
	b.ConnectionFailedAuthDelayMs = r.int32("connection.failed.authentication.delay.ms")
	b.SASLOAuthBearerAllowedURLs = splitList(r.str("sasl.oauthbearer.allowed.urls"))
	b.AuthorizerClassName = strings.TrimSpace(r.str("authorizer.class.name"))
	for _, u := range strings.Split(r.str("super.users"), ";") {
		if u = strings.TrimSpace(u); u != "" {
			b.SuperUsers = append(b.SuperUsers, u)
		}
	}
	b.AllowEveryoneIfNoACLFound = r.bool("allow.everyone.if.no.acl.found")
	b.QuotaWindowNum = r.int32("quota.window.num")
	b.QuotaWindowSizeSeconds = r.int32("quota.window.size.seconds")
	b.MaxConnections = r.int32("max.connections")
	b.MaxConnectionsPerIP = r.int32("max.connections.per.ip")
	b.MaxConnectionsPerIPOverrides = strings.TrimSpace(r.str("max.connections.per.ip.overrides"))
	b.MaxConnectionCreationRate = r.int32("max.connection.creation.rate")
}

// checkSecurity enforces the rules that span the security configs. A
// listener whose protocol needs settings that are missing is an error
// naming the setting: nothing is ever served in plain text where TLS or
// SASL was asked for.
func (b *Broker) checkSecurity() error {
	for _, l := range b.SecureListeners {
		if l.SecurityProtocol == "" {
			return fmt.Errorf("%w: listener.security.protocol.map: no security protocol for listener %s (add %s:PLAINTEXT, %s:SSL, %s:SASL_PLAINTEXT or %s:SASL_SSL)",
				ErrInvalidConfig, l.Name, l.Name, l.Name, l.Name, l.Name)
		}
		if l.TLS() {
			loc := b.ListenerValue(l.Name, "ssl.keystore.location")
			chain := b.ListenerValue(l.Name, "ssl.keystore.certificate.chain")
			key := b.ListenerValue(l.Name, "ssl.keystore.key")
			if loc == "" && (chain == "" || key == "") {
				return fmt.Errorf("%w: listener %s is %s: set ssl.keystore.location (or listener.name.%s.ssl.keystore.location), or ssl.keystore.certificate.chain with ssl.keystore.key",
					ErrInvalidConfig, l.Name, l.SecurityProtocol, strings.ToLower(l.Name))
			}
			if ca := b.ListenerValue(l.Name, "ssl.client.auth"); ca != "none" && ca != "" &&
				b.ListenerValue(l.Name, "ssl.truststore.location") == "" && b.ListenerValue(l.Name, "ssl.truststore.certificates") == "" {
				return fmt.Errorf("%w: listener %s: ssl.client.auth=%s needs ssl.truststore.location (or ssl.truststore.certificates) to verify client certificates",
					ErrInvalidConfig, l.Name, ca)
			}
		}
		if l.SASL() {
			mechs := b.SASLMechanisms(l.Name)
			if len(mechs) == 0 {
				return fmt.Errorf("%w: listener %s is %s: sasl.enabled.mechanisms is empty", ErrInvalidConfig, l.Name, l.SecurityProtocol)
			}
			for _, m := range mechs {
				switch m {
				case "PLAIN":
					if b.MechanismValue(l.Name, m, "sasl.jaas.config") == "" {
						return fmt.Errorf("%w: listener %s enables PLAIN: set listener.name.%s.plain.sasl.jaas.config with user_NAME=\"password\" entries",
							ErrInvalidConfig, l.Name, strings.ToLower(l.Name))
					}
				case "OAUTHBEARER":
					if b.MechanismValue(l.Name, m, "sasl.oauthbearer.jwks.endpoint.url") == "" {
						return fmt.Errorf("%w: listener %s enables OAUTHBEARER: set sasl.oauthbearer.jwks.endpoint.url (or listener.name.%s.oauthbearer.sasl.oauthbearer.jwks.endpoint.url)",
							ErrInvalidConfig, l.Name, strings.ToLower(l.Name))
					}
					if err := b.checkJWKSEndpoint(l.Name); err != nil {
						return err
					}
				}
			}
		}
	}
	if b.MaxConnectionsPerIP == 0 && b.MaxConnectionsPerIPOverrides == "" {
		// Kafka's rule: a per-ip limit of 0 refuses everyone unless some
		// address is let in by an override.
		return fmt.Errorf("%w: max.connections.per.ip is 0: set max.connections.per.ip.overrides too", ErrInvalidConfig)
	}
	if b.SecurityInterBrokerProtocol != "" {
		if _, set := b.Raw["inter.broker.listener.name"]; set {
			return fmt.Errorf("%w: inter.broker.listener.name and security.inter.broker.protocol: set only one", ErrInvalidConfig)
		}
	}
	ib := b.InterBrokerListener()
	if ib.SASL() {
		m := b.SASLMechanismInterBroker
		if !slices.Contains(b.SASLMechanisms(ib.Name), m) {
			return fmt.Errorf("%w: sasl.mechanism.inter.broker.protocol: %s is not in the sasl.enabled.mechanisms of the inter-broker listener %s",
				ErrInvalidConfig, m, ib.Name)
		}
		if b.MechanismValue(ib.Name, m, "sasl.jaas.config") == "" {
			return fmt.Errorf("%w: the inter-broker listener %s is %s: set listener.name.%s.%s.sasl.jaas.config with the username and password brokers authenticate with",
				ErrInvalidConfig, ib.Name, ib.SecurityProtocol, strings.ToLower(ib.Name), strings.ToLower(m))
		}
	}
	return nil
}

// JWKSEndpoint is what a sasl.oauthbearer.jwks.endpoint.url names: a file
// (Path set) or an http or https URL (URL set).
type JWKSEndpoint struct {
	Path string // a local file: the value as a path, or the path of a file:// URL
	URL  string // an http:// or https:// URL, trimmed of blanks
}

// ParseJWKSEndpoint reads a sasl.oauthbearer.jwks.endpoint.url value: a
// path, a file:// URL, or an http:// or https:// URL with a host. Any
// other scheme, and a URL with user information (a password there would
// end up in logs and errors), is an error. It does not check
// sasl.oauthbearer.allowed.urls; Load does.
func ParseJWKSEndpoint(v string) (JWKSEndpoint, error) {
	v = strings.TrimSpace(v)
	scheme, rest, ok := strings.Cut(v, "://")
	if !ok {
		return JWKSEndpoint{Path: v}, nil
	}
	switch strings.ToLower(scheme) {
	case "file":
		return JWKSEndpoint{Path: rest}, nil
	case "http", "https":
		u, err := url.Parse(v)
		if err != nil {
			return JWKSEndpoint{}, fmt.Errorf("%q: %w", v, err)
		}
		if u.Host == "" {
			return JWKSEndpoint{}, fmt.Errorf("%q: no host", v)
		}
		if u.User != nil {
			return JWKSEndpoint{}, fmt.Errorf("%s://%s: user information in the URL is not supported", u.Scheme, u.Host)
		}
		return JWKSEndpoint{URL: v}, nil
	}
	return JWKSEndpoint{}, fmt.Errorf("%q: want a path, or a file://, https:// or http:// URL", v)
}

// checkJWKSEndpoint checks the OAUTHBEARER JWKS settings of listener: a
// URL to fetch must be listed in sasl.oauthbearer.allowed.urls, exactly,
// as Kafka's org.apache.kafka.sasl.oauthbearer.allowed.urls requires
// (CVE-2025-27817), and its retry backoff must not exceed its maximum.
func (b *Broker) checkJWKSEndpoint(listener string) error {
	const m = "OAUTHBEARER"
	e, err := ParseJWKSEndpoint(b.MechanismValue(listener, m, "sasl.oauthbearer.jwks.endpoint.url"))
	if err != nil {
		return fmt.Errorf("%w: listener %s: sasl.oauthbearer.jwks.endpoint.url: %w", ErrInvalidConfig, listener, err)
	}
	if e.URL == "" {
		return nil
	}
	if !slices.Contains(b.SASLOAuthBearerAllowedURLs, e.URL) {
		return fmt.Errorf("%w: listener %s: sasl.oauthbearer.jwks.endpoint.url %s is not in sasl.oauthbearer.allowed.urls; add it there, exactly as written, to let the broker fetch it",
			ErrInvalidConfig, listener, e.URL)
	}
	backoff := b.MechanismInt64(listener, m, "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms", 0)
	backoffMax := b.MechanismInt64(listener, m, "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms", 0)
	if backoffMax < backoff {
		return fmt.Errorf("%w: listener %s: sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms (%d) is less than sasl.oauthbearer.jwks.endpoint.retry.backoff.ms (%d)",
			ErrInvalidConfig, listener, backoffMax, backoff)
	}
	return nil
}
