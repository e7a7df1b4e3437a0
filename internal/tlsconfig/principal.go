package tlsconfig

import (
	"crypto/x509"
	"encoding/asn1"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf16"
)

// Anonymous is the principal of a connection without a client certificate,
// as Kafka's KafkaPrincipal.ANONYMOUS prints.
const Anonymous = "User:ANONYMOUS"

// rfc2253Keywords are the attribute types that Java's X500Principal.getName()
// writes by keyword in RFC 2253 form. Every other type is written as its
// dotted OID with a #-prefixed hex DER value (RFC 2253 section 2.4), which is
// why an e-mail address shows up as 1.2.840.113549.1.9.1=#16... in Kafka.
var rfc2253Keywords = map[string]string{
	"2.5.4.3":                    "CN",
	"2.5.4.6":                    "C",
	"2.5.4.7":                    "L",
	"2.5.4.8":                    "ST",
	"2.5.4.9":                    "STREET",
	"2.5.4.10":                   "O",
	"2.5.4.11":                   "OU",
	"0.9.2342.19200300.100.1.25": "DC",
	"0.9.2342.19200300.100.1.1":  "UID",
}

// DistinguishedName returns cert's subject the way Java's
// X500Principal.getName() (RFC 2253 form) prints it, which is the string
// Kafka's ssl.principal.mapping.rules match against: relative distinguished
// names in reverse order of the encoded sequence, separated by ',' without
// spaces; the values of a multi-valued RDN joined by '+'; attribute types as
// CN, C, L, ST, STREET, O, OU, DC or UID, otherwise the dotted OID with the
// hex DER value.
//
// Go's pkix.Name.String differs: it reorders attributes by type, knows other
// keywords (SERIALNUMBER, POSTALCODE) and not DC or UID, and escapes a
// different set of characters.
func DistinguishedName(cert *x509.Certificate) (string, error) {
	var seq rawRDNSequence
	rest, err := asn1.Unmarshal(cert.RawSubject, &seq)
	if err != nil {
		return "", fmt.Errorf("tlsconfig: subject of certificate %s: %w", cert.SerialNumber, err)
	}
	if len(rest) != 0 {
		return "", fmt.Errorf("tlsconfig: subject of certificate %s: %w", cert.SerialNumber, errTrailingData)
	}
	var b strings.Builder
	for i := len(seq) - 1; i >= 0; i-- {
		if i != len(seq)-1 {
			b.WriteByte(',')
		}
		for j, atv := range seq[i] {
			if j > 0 {
				b.WriteByte('+')
			}
			writeAttribute(&b, atv)
		}
	}
	return b.String(), nil
}

var errTrailingData = errors.New("tlsconfig: trailing data after the subject")

// rawRDNSequence is a Name with each value kept as encoded: Java prints
// the DER of a value it does not print as a string, so the tag matters.
// (encoding/asn1 treats a slice type whose name ends in SET as a SET OF.)
type rawRDNSequence []rawRDNSET

type rawRDNSET []rawAttribute

type rawAttribute struct {
	Type  asn1.ObjectIdentifier
	Value asn1.RawValue
}

// writeAttribute writes one type=value pair in Java's RFC 2253 form.
func writeAttribute(b *strings.Builder, atv rawAttribute) {
	oid := atv.Type.String()
	kw, known := rfc2253Keywords[oid]
	s, isString := directoryString(atv.Value)
	if !known || !isString {
		// Java writes values of types without an RFC 2253 keyword, and
		// values that are not strings, as their DER encoding in hex.
		if kw == "" {
			kw = oid
		}
		b.WriteString(kw)
		b.WriteString("=#")
		b.WriteString(hex.EncodeToString(atv.Value.FullBytes))
		return
	}
	b.WriteString(kw)
	b.WriteByte('=')
	b.WriteString(escapeDNValue(s))
}

// directoryString decodes the string types Java prints as text.
func directoryString(v asn1.RawValue) (string, bool) {
	if v.Class != asn1.ClassUniversal {
		return "", false
	}
	switch v.Tag {
	case asn1.TagPrintableString, asn1.TagIA5String, asn1.TagUTF8String, asn1.TagGeneralString:
		return string(v.Bytes), true
	case asn1.TagT61String:
		// Read as ISO 8859-1, as Java does.
		r := make([]rune, len(v.Bytes))
		for i, c := range v.Bytes {
			r[i] = rune(c)
		}
		return string(r), true
	case asn1.TagBMPString:
		if len(v.Bytes)%2 != 0 {
			return "", false
		}
		u := make([]uint16, len(v.Bytes)/2)
		for i := range u {
			u[i] = uint16(v.Bytes[2*i])<<8 | uint16(v.Bytes[2*i+1])
		}
		return string(utf16.Decode(u)), true
	}
	return "", false
}

// escapeDNValue escapes a string value as Java's RFC 2253 writer does: a
// backslash before each of , = + < > # ; " \ anywhere, NUL as \00, and a
// backslash before each leading or trailing space or carriage return. Other
// characters, including non-ASCII ones, are written as they are.
func escapeDNValue(s string) string {
	const escapees = ",=+<>#;\"\\"
	lead := 0
	for lead < len(s) && (s[lead] == ' ' || s[lead] == '\r') {
		lead++
	}
	trail := len(s)
	for trail > lead && (s[trail-1] == ' ' || s[trail-1] == '\r') {
		trail--
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == 0:
			b.WriteString(`\00`)
		case strings.IndexByte(escapees, c) >= 0, i < lead, i >= trail:
			b.WriteByte('\\')
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// Mapper applies ssl.principal.mapping.rules (KIP-371) to distinguished
// names. A Mapper is immutable and safe for concurrent use.
type Mapper struct {
	rules []mappingRule
}

type mappingRule struct {
	isDefault bool
	source    string         // the rule as written, for messages
	re        *regexp.Regexp // anchored: the whole DN must match
	tmpl      string         // replacement as a regexp.Expand template
	lower     bool
	upper     bool
}

// ruleSplit finds one rule at a time: DEFAULT, or RULE:pattern/replacement/
// with an optional L or U flag, where pattern and replacement may contain
// backslash-escaped characters (so \/ is a slash). Rules are separated by a
// comma or a newline with optional white space around.
var ruleSplit = regexp.MustCompile(`^\s*(?:(DEFAULT)|RULE:((?:\\.|[^\\/])*)/((?:\\.|[^\\/])*)/([LU]?))\s*(?:[,\n]|$)`)

// NewMapper parses ssl.principal.mapping.rules. Empty (or only white space)
// means the single rule DEFAULT. An error wraps ErrInvalidConfig and names
// the first rule that does not parse.
//
// Each rule is RULE:pattern/replacement/ with an optional trailing L or U
// (lower- or upper-case the result), or DEFAULT, which yields the DN as it
// is. The pattern uses Go's regexp syntax, which covers the part of Java's
// syntax that mapping rules use (groups, classes, lazy quantifiers), and
// must match the whole DN. The replacement is Java's: $n is group n, \x is
// a literal x.
//
// Kafka rewrites the DN with String.replaceAll, which for a pattern that
// can also match the empty string (such as .*) appends the replacement a
// second time; here the replacement is applied once, to the whole match.
func NewMapper(rules string) (*Mapper, error) {
	rest := strings.TrimSpace(rules)
	if rest == "" {
		return &Mapper{rules: []mappingRule{{isDefault: true, source: "DEFAULT"}}}, nil
	}
	m := &Mapper{}
	for rest != "" {
		loc := ruleSplit.FindStringSubmatchIndex(rest)
		if loc == nil {
			bad := rest
			if i := strings.IndexAny(bad, ",\n"); i >= 0 {
				bad = bad[:i]
			}
			return nil, settingError(settingPrincipalMapping, nil, "invalid rule %q", strings.TrimSpace(bad))
		}
		sub := func(i int) string {
			if loc[2*i] < 0 {
				return ""
			}
			return rest[loc[2*i]:loc[2*i+1]]
		}
		source := strings.TrimSpace(strings.TrimRight(strings.TrimSpace(rest[:loc[1]]), ",\n"))
		if sub(1) != "" {
			m.rules = append(m.rules, mappingRule{isDefault: true, source: source})
		} else {
			r, err := newMappingRule(source, sub(2), sub(3), sub(4))
			if err != nil {
				return nil, err
			}
			m.rules = append(m.rules, r)
		}
		rest = strings.TrimSpace(rest[loc[1]:])
	}
	return m, nil
}

func newMappingRule(source, pattern, replacement, flag string) (mappingRule, error) {
	re, err := regexp.Compile(`^(?:` + pattern + `)$`)
	if err != nil {
		return mappingRule{}, settingError(settingPrincipalMapping, err, "rule %q", source)
	}
	tmpl, err := javaReplacement(replacement, re.NumSubexp())
	if err != nil {
		return mappingRule{}, settingError(settingPrincipalMapping, err, "rule %q", source)
	}
	return mappingRule{
		source: source,
		re:     re,
		tmpl:   tmpl,
		lower:  flag == "L",
		upper:  flag == "U",
	}, nil
}

// javaReplacement turns a java.util.regex replacement string into a
// regexp.Expand template. In Java, $ followed by digits names a group (the
// longest number not above the group count), ${name} a named group, and a
// backslash makes the next character literal.
func javaReplacement(r string, groups int) (string, error) {
	var b strings.Builder
	for i := 0; i < len(r); i++ {
		c := r[i]
		switch c {
		case '\\':
			i++
			if i == len(r) {
				return "", fmt.Errorf("replacement %q ends in a backslash", r)
			}
			if r[i] == '$' {
				b.WriteString("$$")
			} else {
				b.WriteByte(r[i])
			}
		case '$':
			i++
			if i == len(r) {
				return "", fmt.Errorf("replacement %q ends in $", r)
			}
			if r[i] == '{' {
				end := strings.IndexByte(r[i:], '}')
				if end < 0 {
					return "", fmt.Errorf("replacement %q: unclosed ${", r)
				}
				b.WriteString("${" + r[i+1:i+end] + "}")
				i += end
				continue
			}
			if r[i] < '0' || r[i] > '9' {
				return "", fmt.Errorf("replacement %q: $ not followed by a group number", r)
			}
			n := int(r[i] - '0')
			if n > groups {
				return "", fmt.Errorf("replacement %q: no group %d", r, n)
			}
			for i+1 < len(r) && r[i+1] >= '0' && r[i+1] <= '9' {
				next := n*10 + int(r[i+1]-'0')
				if next > groups {
					break
				}
				n = next
				i++
			}
			b.WriteString("${" + strconv.Itoa(n) + "}")
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

// Map returns the short name for a distinguished name: the result of the
// first rule that matches it. It returns an error wrapping ErrNoRuleMatched
// if none does.
func (m *Mapper) Map(dn string) (string, error) {
	for _, r := range m.rules {
		if r.isDefault {
			return dn, nil
		}
		sm := r.re.FindStringSubmatchIndex(dn)
		if sm == nil {
			continue
		}
		out := string(r.re.ExpandString(nil, r.tmpl, dn, sm))
		switch {
		case r.lower:
			out = strings.ToLower(out)
		case r.upper:
			out = strings.ToUpper(out)
		}
		return out, nil
	}
	return "", fmt.Errorf("%w: %q (rules: %s)", ErrNoRuleMatched, dn, m)
}

// String returns the rules, comma-separated.
func (m *Mapper) String() string {
	s := make([]string, len(m.rules))
	for i, r := range m.rules {
		s[i] = r.source
	}
	return strings.Join(s, ", ")
}
