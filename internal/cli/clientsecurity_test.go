package cli

import (
	"errors"
	"strings"
	"testing"
)

func TestClientSecurityReadsEnvironmentAndFlagsWin(t *testing.T) {
	t.Parallel()
	environ := map[string]string{
		EnvSASLMechanism: "scram-sha-256",
		EnvUser:          "env-user",
		EnvPassword:      "env-pass",
	}
	s := clientSecurity{getenv: func(k string) string { return environ[k] }, user: "flag-user"}
	if got := s.value(s.user, EnvUser); got != "flag-user" {
		t.Fatalf("user %q, want the flag's", got)
	}
	if got := s.value(s.password, EnvPassword); got != "env-pass" {
		t.Fatalf("password %q, want the environment's", got)
	}
	opts, err := s.opts()
	if err != nil || len(opts) != 1 {
		t.Fatalf("opts: %d options, %v; want one SASL option", len(opts), err)
	}
}

func TestClientSecurityRefusesMisuse(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name     string
		s        clientSecurity
		env      map[string]string
		contains string
	}{
		{"mechanism without password", clientSecurity{mechanism: "PLAIN", user: "u"}, nil, "needs --user and --password"},
		{"mechanism from env without user", clientSecurity{}, map[string]string{EnvSASLMechanism: "PLAIN", EnvPassword: "p"}, "needs --user"},
		{"unknown mechanism", clientSecurity{mechanism: "GSSAPI", user: "u", password: "p"}, nil, "want PLAIN"},
		{"user without mechanism", clientSecurity{user: "u", password: "p"}, nil, "need --sasl-mechanism"},
		{"credentials in env without mechanism", clientSecurity{}, map[string]string{EnvUser: "u", EnvPassword: "p"}, "need --sasl-mechanism"},
		{"cert without key", clientSecurity{tlsCert: "c.pem"}, nil, "go together"},
		{"missing CA file", clientSecurity{tlsCA: "/nonexistent/ca.pem"}, nil, "tls"},
		{"missing cert file from env", clientSecurity{}, map[string]string{EnvTLSCert: "/nonexistent/c.pem", EnvTLSKey: "/nonexistent/k.pem"}, "--tls-cert"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := c.s
			s.getenv = func(k string) string { return c.env[k] }
			_, err := s.opts()
			if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), c.contains) {
				t.Fatalf("err %v, want a usage error mentioning %q", err, c.contains)
			}
		})
	}
}

func TestClientSecurityTLSWithSystemRoots(t *testing.T) {
	t.Parallel()
	s := clientSecurity{getenv: func(string) string { return "" }, tls: true, tlsServerName: "broker.example"}
	opts, err := s.opts()
	if err != nil || len(opts) != 1 {
		t.Fatalf("--tls: %d options, %v; want one dialer option", len(opts), err)
	}
	s = clientSecurity{getenv: func(string) string { return "" }}
	if opts, err := s.opts(); err != nil || len(opts) != 0 {
		t.Fatalf("no flags: %d options, %v; want none", len(opts), err)
	}
}
