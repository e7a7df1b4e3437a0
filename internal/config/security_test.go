package config

import (
	"errors"
	"strings"
	"testing"
)

func TestSecurityListenersResolve(t *testing.T) {
	b, err := FromRaw(map[string]string{
		"listeners":                                             "INTERNAL://127.0.0.1:9092,EXTERNAL://0.0.0.0:9094",
		"advertised.listeners":                                  "INTERNAL://broker1:9092,EXTERNAL://kafka.example.com:9094",
		"listener.security.protocol.map":                        "INTERNAL:SASL_SSL,EXTERNAL:SSL",
		"inter.broker.listener.name":                            "INTERNAL",
		"ssl.keystore.location":                                 "/etc/samsa/server.pem",
		"listener.name.external.ssl.keystore.location":          "/etc/samsa/external.pem",
		"listener.name.internal.scram-sha-512.sasl.jaas.config": `org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" password="s";`,
		"super.users":                                           "User:admin; User:broker",
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := b.SecureListeners; len(got) != 2 || got[0].SecurityProtocol != SASLSSL || got[1].SecurityProtocol != SSL {
		t.Fatalf("SecureListeners %+v", got)
	}
	if !b.SecureListeners[0].TLS() || !b.SecureListeners[0].SASL() || b.SecureListeners[1].SASL() {
		t.Errorf("TLS/SASL flags wrong: %+v", b.SecureListeners)
	}
	if v := b.ListenerValue("EXTERNAL", "ssl.keystore.location"); v != "/etc/samsa/external.pem" {
		t.Errorf("EXTERNAL keystore %q", v)
	}
	if v := b.ListenerValue("INTERNAL", "ssl.keystore.location"); v != "/etc/samsa/server.pem" {
		t.Errorf("INTERNAL keystore %q (the global value)", v)
	}
	if v := b.MechanismValue("INTERNAL", "SCRAM-SHA-512", "sasl.jaas.config"); !strings.Contains(v, `username="broker"`) {
		t.Errorf("jaas %q", v)
	}
	if got := b.SASLMechanisms("INTERNAL"); strings.Join(got, ",") != "SCRAM-SHA-256,SCRAM-SHA-512" {
		t.Errorf("mechanisms %v", got)
	}
	if ib := b.InterBrokerListener(); ib.Name != "INTERNAL" || ib.SecurityProtocol != SASLSSL {
		t.Errorf("inter-broker listener %+v", ib)
	}
	if got := strings.Join(b.SuperUsers, "|"); got != "User:admin|User:broker" {
		t.Errorf("super users %q", got)
	}
	if a, ok := b.AdvertisedFor("EXTERNAL"); !ok || a.Host != "kafka.example.com" {
		t.Errorf("advertised EXTERNAL %+v %v", a, ok)
	}
}

func TestSecurityInterBrokerProtocolNamesTheListener(t *testing.T) {
	b, err := FromRaw(map[string]string{
		"listeners":                      "PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9093",
		"ssl.keystore.location":          "/k.pem",
		"security.inter.broker.protocol": "SSL",
	})
	if err != nil {
		t.Fatal(err)
	}
	if b.InterBrokerListenerName != "SSL" {
		t.Errorf("inter-broker listener %q, want SSL", b.InterBrokerListenerName)
	}
}

// A listener whose protocol needs settings that are missing does not
// start: nothing is served in plain text where TLS or SASL was asked for.
func TestSecurityMissingSettingsAreErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  map[string]string
		want string
	}{
		{"SSL without keystore", map[string]string{"listeners": "SSL://127.0.0.1:9093"}, "ssl.keystore.location"},
		{"SASL_SSL without keystore", map[string]string{"listeners": "SASL_SSL://127.0.0.1:9093"}, "ssl.keystore.location"},
		{"unmapped listener name", map[string]string{"listeners": "CLIENT://127.0.0.1:9093"}, "no security protocol for listener CLIENT"},
		{"client auth without truststore", map[string]string{"listeners": "SSL://127.0.0.1:9093",
			"ssl.keystore.location": "/k.pem", "ssl.client.auth": "required"}, "ssl.truststore.location"},
		{"PLAIN without users", map[string]string{"listeners": "SASL_PLAINTEXT://127.0.0.1:9093,PLAINTEXT://127.0.0.1:9092",
			"inter.broker.listener.name": "PLAINTEXT", "sasl.enabled.mechanisms": "PLAIN"}, "plain.sasl.jaas.config"},
		{"OAUTHBEARER without JWKS", map[string]string{"listeners": "SASL_PLAINTEXT://127.0.0.1:9093,PLAINTEXT://127.0.0.1:9092",
			"inter.broker.listener.name": "PLAINTEXT", "sasl.enabled.mechanisms": "OAUTHBEARER"}, "sasl.oauthbearer.jwks.endpoint.url"},
		{"SASL inter-broker without credentials", map[string]string{"listeners": "SASL_PLAINTEXT://127.0.0.1:9093"}, "scram-sha-512.sasl.jaas.config"},
		{"inter-broker mechanism not enabled", map[string]string{"listeners": "SASL_PLAINTEXT://127.0.0.1:9093",
			"sasl.enabled.mechanisms": "SCRAM-SHA-256"}, "sasl.mechanism.inter.broker.protocol"},
		{"both inter-broker settings", map[string]string{"listeners": "PLAINTEXT://127.0.0.1:9092",
			"inter.broker.listener.name": "PLAINTEXT", "security.inter.broker.protocol": "PLAINTEXT"}, "set only one"},
		{"TLS 1.1", map[string]string{"ssl.enabled.protocols": "TLSv1.1"}, "ssl.enabled.protocols"},
		{"GSSAPI", map[string]string{"sasl.enabled.mechanisms": "GSSAPI"}, "sasl.enabled.mechanisms"},
		{"JKS keystore", map[string]string{"ssl.keystore.type": "JKS"}, "ssl.keystore.type"},
		{"scoped unknown mechanism", map[string]string{"listener.name.sasl_ssl.gssapi.sasl.jaas.config": "x"}, "listener.name.sasl_ssl.gssapi.sasl.jaas.config"},
		{"scoped unknown config", map[string]string{"listener.name.sasl_ssl.log.dirs": "x"}, "listener.name.sasl_ssl.log.dirs"},
		{"scoped bad value", map[string]string{"listener.name.ssl.ssl.client.auth": "always"}, "listener.name.ssl.ssl.client.auth"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := map[string]string{}
			for k, v := range tc.set {
				raw[k] = v
			}
			_, err := FromRaw(raw)
			if err == nil {
				t.Fatal("accepted")
			}
			if !errors.Is(err, ErrInvalidConfig) && !errors.Is(err, ErrUnknownConfig) {
				t.Errorf("error %v wraps neither sentinel", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not name %q", err, tc.want)
			}
		})
	}
}

// Reference: Kafka's KafkaConfig: quota windows and connection limits, with
// Int.MaxValue (no limit) as the default of every limit.
func TestQuotaAndConnectionConfigsResolve(t *testing.T) {
	b, err := FromRaw(map[string]string{"listeners": "PLAINTEXT://127.0.0.1:9092"})
	if err != nil {
		t.Fatal(err)
	}
	if b.QuotaWindowNum != 11 || b.QuotaWindowSizeSeconds != 1 {
		t.Errorf("quota window %d x %ds, want 11 x 1s", b.QuotaWindowNum, b.QuotaWindowSizeSeconds)
	}
	const unlimited = 2147483647
	if b.MaxConnections != unlimited || b.MaxConnectionsPerIP != unlimited || b.MaxConnectionCreationRate != unlimited || b.MaxConnectionsPerIPOverrides != "" {
		t.Errorf("connection limits %d %d %d %q", b.MaxConnections, b.MaxConnectionsPerIP, b.MaxConnectionCreationRate, b.MaxConnectionsPerIPOverrides)
	}
	b, err = FromRaw(map[string]string{
		"listeners":                                            "PLAINTEXT://127.0.0.1:9092",
		"max.connections.per.ip":                               "2",
		"max.connections.per.ip.overrides":                     "10.0.0.1:5, ::1:0",
		"listener.name.plaintext.max.connections":              "7",
		"listener.name.plaintext.max.connection.creation.rate": "3",
	})
	if err != nil {
		t.Fatal(err)
	}
	if b.MaxConnectionsPerIP != 2 || b.MaxConnectionsPerIPOverrides != "10.0.0.1:5, ::1:0" {
		t.Errorf("per-ip %d %q", b.MaxConnectionsPerIP, b.MaxConnectionsPerIPOverrides)
	}
	if n := b.ListenerInt64("PLAINTEXT", "max.connections", 0); n != 7 {
		t.Errorf("listener max.connections %d, want 7", n)
	}
	if n := b.ListenerInt64("PLAINTEXT", "max.connection.creation.rate", 0); n != 3 {
		t.Errorf("listener max.connection.creation.rate %d, want 3", n)
	}
	for _, bad := range []map[string]string{
		{"max.connections.per.ip.overrides": "10.0.0.1"},
		{"max.connections.per.ip.overrides": "host.example:3"},
		{"max.connections.per.ip.overrides": "10.0.0.1:-1"},
		{"max.connections.per.ip": "0"},
		{"quota.window.num": "0"},
		{"max.connections": "0"},
		{"listener.name.plaintext.max.connection.creation.rate": "0"},
	} {
		bad["listeners"] = "PLAINTEXT://127.0.0.1:9092"
		if _, err := FromRaw(bad); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%v: err %v, want ErrInvalidConfig", bad, err)
		}
	}
}

// An OAUTHBEARER JWKS URL to fetch must be listed, exactly, in
// sasl.oauthbearer.allowed.urls, and the error names both settings; files
// (a path or file:// URL) need not be. Other schemes and URLs with user
// information are refused, listed or not.
// Reference: Kafka 4.0 org.apache.kafka.sasl.oauthbearer.allowed.urls
// (CVE-2025-27817).
func TestOAuthBearerJWKSURLMustBeAllowed(t *testing.T) {
	const jwks = "https://idp.example/keys"
	for _, tc := range []struct {
		name string
		set  map[string]string
		want string // "" accepted, else a part of the error
	}{
		{"https not listed", map[string]string{"sasl.oauthbearer.jwks.endpoint.url": jwks},
			"sasl.oauthbearer.jwks.endpoint.url " + jwks + " is not in sasl.oauthbearer.allowed.urls"},
		{"https listed", map[string]string{"sasl.oauthbearer.jwks.endpoint.url": jwks,
			"sasl.oauthbearer.allowed.urls": "https://other.example/keys, " + jwks}, ""},
		{"listed with another path", map[string]string{"sasl.oauthbearer.jwks.endpoint.url": jwks + "/v2",
			"sasl.oauthbearer.allowed.urls": jwks}, "is not in sasl.oauthbearer.allowed.urls"},
		{"listener-scoped URL not listed", map[string]string{
			"sasl.oauthbearer.jwks.endpoint.url":                                          "/etc/jwks.json",
			"listener.name.sasl_plaintext.oauthbearer.sasl.oauthbearer.jwks.endpoint.url": jwks,
			"sasl.oauthbearer.allowed.urls":                                               "https://other.example/keys",
		}, "listener SASL_PLAINTEXT: sasl.oauthbearer.jwks.endpoint.url " + jwks},
		{"http not listed", map[string]string{"sasl.oauthbearer.jwks.endpoint.url": "http://idp.example/keys",
			"sasl.oauthbearer.allowed.urls": jwks}, "is not in sasl.oauthbearer.allowed.urls"},
		{"http listed", map[string]string{"sasl.oauthbearer.jwks.endpoint.url": "http://idp.example/keys",
			"sasl.oauthbearer.allowed.urls": "http://idp.example/keys"}, ""},
		{"path", map[string]string{"sasl.oauthbearer.jwks.endpoint.url": "/etc/jwks.json"}, ""},
		{"file URL", map[string]string{"sasl.oauthbearer.jwks.endpoint.url": "file:///etc/jwks.json"}, ""},
		{"ftp listed", map[string]string{"sasl.oauthbearer.jwks.endpoint.url": "ftp://idp.example/keys",
			"sasl.oauthbearer.allowed.urls": "ftp://idp.example/keys"}, "want a path, or a file://, https:// or http:// URL"},
		{"user information", map[string]string{"sasl.oauthbearer.jwks.endpoint.url": "https://u:secret@idp.example/keys",
			"sasl.oauthbearer.allowed.urls": "https://u:secret@idp.example/keys"}, "user information"},
		{"backoff above its maximum", map[string]string{"sasl.oauthbearer.jwks.endpoint.url": jwks, "sasl.oauthbearer.allowed.urls": jwks,
			"listener.name.sasl_plaintext.oauthbearer.sasl.oauthbearer.jwks.endpoint.retry.backoff.ms": "20000"},
			"sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms (10000) is less than sasl.oauthbearer.jwks.endpoint.retry.backoff.ms (20000)"},
		{"allowed.urls is not per listener", map[string]string{"sasl.oauthbearer.jwks.endpoint.url": jwks,
			"listener.name.sasl_plaintext.sasl.oauthbearer.allowed.urls": jwks}, "listener.name.sasl_plaintext.sasl.oauthbearer.allowed.urls"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := map[string]string{
				"listeners":                  "SASL_PLAINTEXT://127.0.0.1:9093,PLAINTEXT://127.0.0.1:9092",
				"inter.broker.listener.name": "PLAINTEXT",
				"sasl.enabled.mechanisms":    "OAUTHBEARER",
			}
			for k, v := range tc.set {
				raw[k] = v
			}
			_, err := FromRaw(raw)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want == "":
			case err == nil:
				t.Fatal("accepted")
			case !strings.Contains(err.Error(), tc.want):
				t.Fatalf("error %q does not say %q", err, tc.want)
			case !errors.Is(err, ErrInvalidConfig) && !errors.Is(err, ErrUnknownConfig):
				t.Fatalf("error %v wraps neither sentinel", err)
			}
		})
	}
}

func TestIsSensitiveCoversListenerScopedSecrets(t *testing.T) {
	for name, want := range map[string]bool{
		"listener.name.sasl_ssl.plain.sasl.jaas.config": true,
		"listener.name.ssl.ssl.key.password":            true,
		"listener.name.ssl.ssl.keystore.key":            true,
		"sasl.jaas.config":                              true,
		"etcd.password":                                 true,
		"listener.name.ssl.ssl.keystore.location":       false,
		"log.dirs":       false,
		"no.such.config": true,
	} {
		if got := IsSensitive(name); got != want {
			t.Errorf("IsSensitive(%q) = %v, want %v", name, got, want)
		}
	}
}
