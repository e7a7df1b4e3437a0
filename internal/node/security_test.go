package node

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"samsa/internal/config"
)

// Settings given per listener and mechanism
// (listener.name.<l>.<mechanism>.<setting>) win over the listener's and
// the global ones, as in Kafka: connections.max.reauth.ms applies to the
// sessions of that mechanism only, and the OAUTHBEARER clock skew is read
// from its mechanism prefix.
func TestListenerConfigReadsPerMechanismSettings(t *testing.T) {
	jwks := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(jwks, []byte(`{"keys":[]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load("", []string{
		"listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
		"inter.broker.listener.name=PLAINTEXT",
		"log.dirs=" + t.TempDir(),
		"sasl.enabled.mechanisms=OAUTHBEARER,PLAIN",
		`listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_a="a";`,
		"listener.name.sasl_plaintext.oauthbearer.sasl.oauthbearer.jwks.endpoint.url=" + jwks,
		"connections.max.reauth.ms=90000",
		"listener.name.sasl_plaintext.connections.max.reauth.ms=60000",
		"listener.name.sasl_plaintext.oauthbearer.connections.max.reauth.ms=2000",
		"sasl.oauthbearer.clock.skew.seconds=30",
		"listener.name.sasl_plaintext.oauthbearer.sasl.oauthbearer.clock.skew.seconds=5",
	})
	if err != nil {
		t.Fatal(err)
	}
	var l config.ListenerSecurity
	for _, sl := range cfg.SecureListeners {
		if sl.Name == "SASL_PLAINTEXT" {
			l = sl
		}
	}
	lc, err := listenerConfig(context.Background(), cfg, l, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if lc.MaxReauth != time.Minute {
		t.Errorf("MaxReauth %v, want the listener's 1m0s", lc.MaxReauth)
	}
	if got := lc.MaxReauthByMechanism; len(got) != 1 || got["OAUTHBEARER"] != 2*time.Second {
		t.Errorf("MaxReauthByMechanism %v, want OAUTHBEARER:2s only", got)
	}
	if skew := lc.SASL.(*authenticator).oauth.ClockSkew; skew != 5*time.Second {
		t.Errorf("OAUTHBEARER clock skew %v, want 5s", skew)
	}
}
