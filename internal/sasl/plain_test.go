package sasl

import (
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/sasl/plain"
)

func testPlainUsers() *PlainUsers {
	return NewPlainUsers(map[string]string{"alice": "alice-secret", "admin": "admin-secret"})
}

func TestPlainFranzClientAuthenticatesAsUser(t *testing.T) {
	for _, zid := range []string{"", "alice"} {
		t.Run("zid="+zid, func(t *testing.T) {
			s := NewPlain(testPlainUsers())
			err := drive(t, s, plain.Auth{Zid: zid, User: "alice", Pass: "alice-secret"}.AsMechanism())
			if err != nil {
				t.Fatalf("exchange: %v", err)
			}
			if got := s.Principal(); got != "User:alice" {
				t.Fatalf("Principal = %q, want User:alice", got)
			}
			if s.Lifetime() != 0 {
				t.Fatalf("Lifetime = %v, want 0", s.Lifetime())
			}
		})
	}
}

func TestPlainRefusesBadMessages(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want error
	}{
		{"wrong password", "\x00alice\x00wrong", ErrAuthenticationFailed},
		{"password prefix", "\x00alice\x00alice-secre", ErrAuthenticationFailed},
		{"other user's password", "\x00alice\x00admin-secret", ErrAuthenticationFailed},
		{"unknown user", "\x00mallory\x00alice-secret", ErrAuthenticationFailed},
		// Reference: CVE-2017-12610.
		{"authzid differs", "admin\x00alice\x00alice-secret", ErrAuthenticationFailed},
		{"empty user", "\x00\x00alice-secret", ErrAuthenticationFailed},
		{"empty password", "\x00alice\x00", ErrAuthenticationFailed},
		{"one NUL", "alice\x00alice-secret", ErrMalformed},
		{"three NULs", "\x00alice\x00alice-secret\x00", ErrMalformed},
		{"no NUL", "alicealice-secret", ErrMalformed},
		{"empty", "", ErrMalformed},
		{"user not UTF-8", "\x00\xffalice\x00alice-secret", ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewPlain(testPlainUsers())
			out, done, err := s.Step([]byte(tt.in))
			if !errors.Is(err, tt.want) || done || out != nil {
				t.Fatalf("Step = %q, %v, %v; want error %v", out, done, err, tt.want)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Fatalf("error %q leaks the password", err)
			}
			if s.Principal() != "" {
				t.Fatalf("Principal = %q after failure", s.Principal())
			}
			if _, _, err := s.Step([]byte("\x00alice\x00alice-secret")); !errors.Is(err, ErrIllegalState) {
				t.Fatalf("Step after failure = %v, want ErrIllegalState", err)
			}
		})
	}
}

func TestPlainStepAfterDoneIsIllegalState(t *testing.T) {
	s := NewPlain(testPlainUsers())
	if _, done, err := s.Step([]byte("\x00alice\x00alice-secret")); !done || err != nil {
		t.Fatalf("first Step: done=%v err=%v", done, err)
	}
	if _, _, err := s.Step([]byte("\x00alice\x00alice-secret")); !errors.Is(err, ErrIllegalState) {
		t.Fatalf("second Step = %v, want ErrIllegalState", err)
	}
	if s.Principal() != "User:alice" {
		t.Fatalf("Principal = %q", s.Principal())
	}
}

func TestParsePlainJAASKeepsOnlyUserOptions(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		users map[string]string // nil: expect ErrJAAS
	}{
		{"kafka example",
			`org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";`,
			map[string]string{"admin": "admin-secret", "alice": "alice-secret"}},
		{"escapes and single quotes and newlines",
			"org.apache.kafka.common.security.plain.PlainLoginModule required\n  user_bob=\"a\\\"b\\\\c\"\n  user_carol='x y';\n",
			map[string]string{"bob": `a"b\c`, "carol": "x y"}},
		{"bare word value", `org.apache.kafka.common.security.plain.PlainLoginModule optional user_dan=pw1 ;`,
			map[string]string{"dan": "pw1"}},
		{"no users", `org.apache.kafka.common.security.plain.PlainLoginModule required username="a" password="b";`,
			map[string]string{}},
		{"other module", `com.example.EvilLoginModule required user_a="b";`, nil},
		{"scram module", `org.apache.kafka.common.security.scram.ScramLoginModule required user_a="b";`, nil},
		{"bad flag", `org.apache.kafka.common.security.plain.PlainLoginModule always user_a="b";`, nil},
		{"missing semicolon", `org.apache.kafka.common.security.plain.PlainLoginModule required user_a="b"`, nil},
		{"unterminated quote", `org.apache.kafka.common.security.plain.PlainLoginModule required user_a="b;`, nil},
		{"two modules", `org.apache.kafka.common.security.plain.PlainLoginModule required user_a="b"; org.apache.kafka.common.security.plain.PlainLoginModule required;`, nil},
		{"duplicate user", `org.apache.kafka.common.security.plain.PlainLoginModule required user_a="b" user_a="c";`, nil},
		{"empty user name", `org.apache.kafka.common.security.plain.PlainLoginModule required user_="b";`, nil},
		{"missing equals", `org.apache.kafka.common.security.plain.PlainLoginModule required user_a "b";`, nil},
		{"empty", ``, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParsePlainJAAS(tt.in)
			if tt.users == nil {
				if !errors.Is(err, ErrJAAS) {
					t.Fatalf("err = %v, want ErrJAAS", err)
				}
				if strings.Contains(err.Error(), `"b`) {
					t.Fatalf("error %q quotes a value", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParsePlainJAAS: %v", err)
			}
			if got.Len() != len(tt.users) {
				t.Fatalf("Len = %d, want %d", got.Len(), len(tt.users))
			}
			for u, pw := range tt.users {
				if !got.Check(u, []byte(pw)) {
					t.Errorf("Check(%q) = false", u)
				}
				if got.Check(u, []byte(pw+"x")) {
					t.Errorf("Check(%q, wrong) = true", u)
				}
			}
		})
	}
}
