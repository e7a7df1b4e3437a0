package node

import (
	"testing"
	"time"

	"samsa/internal/config"
	"samsa/internal/server"
)

// Kafka's connection settings reach the limiter: per.ip=0 with overrides
// admits only the overridden addresses, and a listener's own
// max.connections holds the acceptor.
func TestConnLimiterFollowsTheBrokerConfig(t *testing.T) {
	cfg, err := config.FromRaw(map[string]string{
		"listeners":                               "PLAINTEXT://127.0.0.1:9092,OTHER://127.0.0.1:9093",
		"listener.security.protocol.map":          "PLAINTEXT:PLAINTEXT,OTHER:PLAINTEXT",
		"max.connections.per.ip":                  "0",
		"max.connections.per.ip.overrides":        "10.0.0.1:5,10.0.0.2:1",
		"listener.name.plaintext.max.connections": "2",
	})
	if err != nil {
		t.Fatal(err)
	}
	l, err := connLimiter(cfg)
	if err != nil {
		t.Fatal(err)
	}
	lim := connLimits{l}
	now := time.Now()
	for _, step := range []struct {
		listener, ip string
		want         server.Admission
	}{
		{"PLAINTEXT", "10.0.0.9", server.Refuse}, // no override
		{"PLAINTEXT", "10.0.0.2", server.Admit},
		{"PLAINTEXT", "10.0.0.2", server.Refuse}, // its override is 1
		{"PLAINTEXT", "10.0.0.1", server.Admit},
		{"PLAINTEXT", "10.0.0.1", server.Hold}, // the listener holds 2
		{"OTHER", "10.0.0.1", server.Admit},    // OTHER has no listener cap
	} {
		if got, _ := lim.Accept(now, step.listener, step.ip); got != step.want {
			t.Errorf("%s from %s: %d, want %d", step.listener, step.ip, got, step.want)
		}
	}
	if err := lim.Release("PLAINTEXT", "10.0.0.2"); err != nil {
		t.Fatal(err)
	}
	if got, _ := lim.Accept(now, "PLAINTEXT", "10.0.0.1"); got != server.Admit {
		t.Errorf("after a release: %d, want Admit", got)
	}
}
