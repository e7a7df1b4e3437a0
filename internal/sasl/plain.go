package sasl

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// PlainUsers holds the users and passwords that PLAIN accepts. It keeps
// only the SHA-256 digest of each password, which it compares in constant
// time. A PlainUsers is immutable after NewPlainUsers or ParsePlainJAAS
// and safe for concurrent use; replace it to change users.
type PlainUsers struct {
	digests map[string][sha256.Size]byte
}

// NewPlainUsers returns the PlainUsers for users, a map from user name to
// password. It does not retain users.
func NewPlainUsers(users map[string]string) *PlainUsers {
	p := &PlainUsers{digests: make(map[string][sha256.Size]byte, len(users))}
	for u, pw := range users {
		p.digests[u] = sha256.Sum256([]byte(pw))
	}
	return p
}

// Len returns the number of users.
func (p *PlainUsers) Len() int {
	if p == nil {
		return 0
	}
	return len(p.digests)
}

// Check reports whether password is user's password. It takes the same
// time for an unknown user as for a wrong password.
func (p *PlainUsers) Check(user string, password []byte) bool {
	got := sha256.Sum256(password)
	want, ok := [sha256.Size]byte{}, false
	if p != nil {
		want, ok = p.digests[user]
	}
	eq := subtle.ConstantTimeCompare(got[:], want[:]) == 1
	return ok && eq
}

// plainSession is the PLAIN exchange: one client message, one empty reply.
type plainSession struct {
	users     *PlainUsers
	st        state
	principal string
	attempted string // the authcid the client sent, for AttemptedUser
}

// NewPlain returns a PLAIN (RFC 4616) Session that checks users. The
// Session is not safe for concurrent use; users may be shared.
func NewPlain(users *PlainUsers) Session {
	return &plainSession{users: users}
}

func (s *plainSession) Step(in []byte) ([]byte, bool, error) {
	if s.st != stateStart {
		return nil, false, errAfter(s.st)
	}
	s.st = stateFailed
	if len(in) > MaxMessageBytes {
		return nil, false, errorf(ErrMalformed, "PLAIN message too long")
	}
	// message = [authzid] UTF8NUL authcid UTF8NUL passwd
	if bytes.Count(in, []byte{0}) != 2 {
		return nil, false, errorf(ErrMalformed, "PLAIN message must hold exactly two NUL separators")
	}
	authzid, rest, _ := bytes.Cut(in, []byte{0})
	authcid, passwd, _ := bytes.Cut(rest, []byte{0})
	if !utf8.Valid(authzid) || !utf8.Valid(authcid) {
		return nil, false, errorf(ErrMalformed, "PLAIN identity is not UTF-8")
	}
	if len(authcid) == 0 {
		return nil, false, errorf(ErrAuthenticationFailed, "username not specified")
	}
	if len(passwd) == 0 {
		return nil, false, errorf(ErrAuthenticationFailed, "password not specified")
	}
	user := string(authcid)
	s.attempted = user
	if !s.users.Check(user, passwd) {
		return nil, false, errorf(ErrAuthenticationFailed, "invalid username or password")
	}
	// Reference: CVE-2017-12610. An authorization id other than the
	// authenticated user would let a client act as anyone.
	if len(authzid) != 0 && string(authzid) != user {
		return nil, false, errorf(ErrAuthenticationFailed, "authorization id differs from username")
	}
	s.st = stateComplete
	s.principal = "User:" + user
	return []byte{}, true, nil
}

func (s *plainSession) Principal() string {
	if s.st != stateComplete {
		return ""
	}
	return s.principal
}

func (s *plainSession) Lifetime() time.Duration { return 0 }

// plainLoginModule is the only login module class ParsePlainJAAS accepts.
const plainLoginModule = "org.apache.kafka.common.security.plain.PlainLoginModule"

// ParsePlainJAAS parses a listener's sasl.jaas.config value for PLAIN,
//
//	org.apache.kafka.common.security.plain.PlainLoginModule required
//	    username="admin" password="admin-secret"
//	    user_admin="admin-secret" user_alice="alice-secret";
//
// and returns the users its user_NAME="password" options define. Values
// are quoted with " or ' (backslash escapes \n, \t, \r and any other
// character as itself) or are bare words. The value must hold exactly one
// login module, and it must be PlainLoginModule: a configuration cannot
// name code to load. Other options, such as the broker's own username and
// password, are ignored. Errors wrap ErrJAAS and never quote a value.
func ParsePlainJAAS(s string) (*PlainUsers, error) {
	p := jaasParser{s: s}
	class := p.word()
	if class == "" {
		return nil, p.fail("missing login module class")
	}
	if class != plainLoginModule {
		return nil, p.fail("login module must be " + plainLoginModule)
	}
	switch flag := p.word(); flag {
	case "required", "requisite", "sufficient", "optional":
	default:
		return nil, p.fail("missing or unknown control flag")
	}
	users := make(map[string]string)
	for {
		p.space()
		if p.peek() == ';' {
			p.pos++
			break
		}
		key := p.word()
		if key == "" {
			return nil, p.fail("expected option name or ';'")
		}
		p.space()
		if p.peek() != '=' {
			return nil, p.fail("expected '=' after option name")
		}
		p.pos++
		p.space()
		val, ok := p.value()
		if !ok {
			return nil, p.fail("bad option value")
		}
		name, isUser := strings.CutPrefix(key, "user_")
		if !isUser {
			continue
		}
		if name == "" {
			return nil, p.fail("user_ option without a user name")
		}
		if _, dup := users[name]; dup {
			return nil, p.fail("user defined twice")
		}
		users[name] = val
	}
	p.space()
	if p.pos != len(p.s) {
		return nil, p.fail("text after ';' (exactly one login module is allowed)")
	}
	return NewPlainUsers(users), nil
}

// jaasParser scans a JAAS configuration entry. Kafka tokenises it with
// java.io.StreamTokenizer; this accepts the same entries minus comments.
type jaasParser struct {
	s   string
	pos int
}

func (p *jaasParser) fail(reason string) error {
	return errorf(ErrJAAS, reason+" at offset "+strconv.Itoa(p.pos))
}

func (p *jaasParser) peek() byte {
	if p.pos < len(p.s) {
		return p.s[p.pos]
	}
	return 0
}

func (p *jaasParser) space() {
	for p.pos < len(p.s) {
		switch p.s[p.pos] {
		case ' ', '\t', '\r', '\n':
			p.pos++
		default:
			return
		}
	}
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '_' || c == '.' || c == '$' || c == '-'
}

// word skips space and returns the run of word bytes that follows.
func (p *jaasParser) word() string {
	p.space()
	start := p.pos
	for p.pos < len(p.s) && isWordByte(p.s[p.pos]) {
		p.pos++
	}
	return p.s[start:p.pos]
}

// value reads a quoted string or a bare word.
func (p *jaasParser) value() (string, bool) {
	q := p.peek()
	if q != '"' && q != '\'' {
		w := p.word()
		return w, w != ""
	}
	p.pos++
	var b strings.Builder
	for p.pos < len(p.s) {
		c := p.s[p.pos]
		p.pos++
		switch c {
		case q:
			return b.String(), true
		case '\\':
			if p.pos >= len(p.s) {
				return "", false
			}
			e := p.s[p.pos]
			p.pos++
			switch e {
			case 'n':
				e = '\n'
			case 't':
				e = '\t'
			case 'r':
				e = '\r'
			}
			b.WriteByte(e)
		case '\n':
			return "", false // StreamTokenizer ends a quoted string at a newline
		default:
			b.WriteByte(c)
		}
	}
	return "", false
}

// AttemptedUser returns the user name the client sent, "" before it did.
func (s *plainSession) AttemptedUser() string { return s.attempted }
