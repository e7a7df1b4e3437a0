package tlsconfig

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/asn1"
	"errors"
	"math/big"
	"testing"
	"time"
)

var (
	oidCN    = asn1.ObjectIdentifier{2, 5, 4, 3}
	oidC     = asn1.ObjectIdentifier{2, 5, 4, 6}
	oidL     = asn1.ObjectIdentifier{2, 5, 4, 7}
	oidST    = asn1.ObjectIdentifier{2, 5, 4, 8}
	oidO     = asn1.ObjectIdentifier{2, 5, 4, 10}
	oidOU    = asn1.ObjectIdentifier{2, 5, 4, 11}
	oidSN    = asn1.ObjectIdentifier{2, 5, 4, 5}
	oidDC    = asn1.ObjectIdentifier{0, 9, 2342, 19200300, 100, 1, 25}
	oidUID   = asn1.ObjectIdentifier{0, 9, 2342, 19200300, 100, 1, 1}
	oidEmail = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 1}
)

func str(tag int, s string) asn1.RawValue {
	return asn1.RawValue{Class: asn1.ClassUniversal, Tag: tag, Bytes: []byte(s)}
}

func ps(s string) asn1.RawValue { return str(asn1.TagPrintableString, s) }
func u8(s string) asn1.RawValue { return str(asn1.TagUTF8String, s) }

func rdn(atvs ...rawAttribute) rawRDNSET { return atvs }

func atv(oid asn1.ObjectIdentifier, v asn1.RawValue) rawAttribute {
	return rawAttribute{Type: oid, Value: v}
}

// certWithSubject returns a self-signed certificate whose subject is seq
// exactly as encoded.
func certWithSubject(t *testing.T, seq rawRDNSequence) *x509.Certificate {
	t.Helper()
	raw, err := asn1.Marshal(seq)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), RawSubject: raw, NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

// The expected strings are what Java's X500Principal.getName() returns for
// the same encodings.
func TestDistinguishedNameFormatsLikeJavaRFC2253(t *testing.T) {
	for _, tc := range []struct {
		name string
		seq  rawRDNSequence
		want string
	}{
		{
			"usual order reversed",
			rawRDNSequence{rdn(atv(oidC, ps("US"))), rdn(atv(oidST, ps("CA"))), rdn(atv(oidL, ps("Palo Alto"))), rdn(atv(oidO, ps("Example"))), rdn(atv(oidOU, ps("Eng"))), rdn(atv(oidCN, ps("alice")))},
			"CN=alice,OU=Eng,O=Example,L=Palo Alto,ST=CA,C=US",
		},
		{
			"encoded order kept, not sorted by type",
			rawRDNSequence{rdn(atv(oidCN, ps("bob"))), rdn(atv(oidO, ps("Example")))},
			"O=Example,CN=bob",
		},
		{
			"multi-valued RDN",
			rawRDNSequence{rdn(atv(oidO, ps("Example"))), rdn(atv(oidCN, ps("carol")), atv(oidUID, u8("c1")))},
			"CN=carol+UID=c1,O=Example",
		},
		{
			"DC and UID keywords",
			rawRDNSequence{rdn(atv(oidDC, str(asn1.TagIA5String, "com"))), rdn(atv(oidDC, str(asn1.TagIA5String, "example"))), rdn(atv(oidUID, u8("dave")))},
			"UID=dave,DC=example,DC=com",
		},
		{
			"e-mail address as OID and hex DER",
			rawRDNSequence{rdn(atv(oidCN, ps("erin"))), rdn(atv(oidEmail, str(asn1.TagIA5String, "e@x.io")))},
			"1.2.840.113549.1.9.1=#16066540782e696f,CN=erin",
		},
		{
			"serial number has no RFC 2253 keyword",
			rawRDNSequence{rdn(atv(oidSN, ps("42")))},
			"2.5.4.5=#13023432",
		},
		{
			"special characters escaped",
			rawRDNSequence{rdn(atv(oidCN, u8(`a,b=c+d<e>f#g;h"i\j`)))},
			`CN=a\,b\=c\+d\<e\>f\#g\;h\"i\\j`,
		},
		{
			"leading and trailing spaces escaped",
			rawRDNSequence{rdn(atv(oidCN, u8("  x y ")))},
			`CN=\ \ x y\ `,
		},
		{
			"non-ASCII kept",
			rawRDNSequence{rdn(atv(oidCN, u8("Zoë_1@host")))},
			"CN=Zoë_1@host",
		},
		{
			"BMPString decoded",
			rawRDNSequence{rdn(atv(oidCN, asn1.RawValue{Tag: asn1.TagBMPString, Bytes: []byte{0, 'h', 0, 'i'}}))},
			"CN=hi",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DistinguishedName(certWithSubject(t, tc.seq))
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

// Reference: KIP-371; cases in the spirit of Kafka's SslPrincipalMapperTest.
func TestMapperAppliesFirstMatchingRule(t *testing.T) {
	for _, tc := range []struct {
		rules, dn, want string
		wantErr         error
	}{
		{"", "CN=Duke,OU=ServiceUsers,O=Org,C=US", "CN=Duke,OU=ServiceUsers,O=Org,C=US", nil},
		{"DEFAULT", "CN=Duke,OU=ServiceUsers,O=Org,C=US", "CN=Duke,OU=ServiceUsers,O=Org,C=US", nil},
		{"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/", "CN=Duke,OU=ServiceUsers,O=Org,C=US", "Duke", nil},
		{"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,DEFAULT", "CN=Duke,OU=Humans,O=Org,C=US", "CN=Duke,OU=Humans,O=Org,C=US", nil},
		{"RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L", "CN=Duke,OU=JavaSoft,O=Sun Microsystems,L=Santa Clara,ST=CA,C=US", "duke@javasoft", nil},
		{"RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/U", "CN=Duke,OU=JavaSoft,O=Sun Microsystems,L=Santa Clara,ST=CA,C=US", "DUKE@JAVASOFT", nil},
		{"RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L", "OU=Users,CN=Bob.Smith,DC=example", "bob.smith", nil},
		{"RULE:^cn=(.?),ou=(.?),dc=(.?),dc=(.?)$/$1@$2/U", "cn=a,ou=b,dc=c,dc=d", "A@B", nil},
		{"RULE:^CN=([^,ADEFLTU,]+)(,.*|$)/$1/", "CN=Bob", "Bob", nil},
		{"  RULE:^CN=(.*)$/$1/L ,  DEFAULT  ", "CN=Eve", "eve", nil},
		{"RULE:^CN=admin$/root/\nRULE:^CN=(.*)$/user-$1/", "CN=Eve", "user-Eve", nil},
		// The first rule that matches wins, even before DEFAULT.
		{"RULE:^CN=(.*?),.*$/$1/,RULE:^.*$/second/", "CN=Eve,O=X", "Eve", nil},
		// An escaped slash in the pattern; a group number followed by a digit.
		{`RULE:^CN=a\/b,O=(.)$/$10/`, "CN=a/b,O=x", "x0", nil},
		// An escaped $ in the replacement is literal.
		{`RULE:^CN=(.*)$/\$$1/`, "CN=x", "$x", nil},
		// The pattern must match the whole DN.
		{"RULE:CN=Eve/x/", "CN=Eve,O=X", "", ErrNoRuleMatched},
		{"RULE:^CN=admin$/root/", "CN=Eve", "", ErrNoRuleMatched},
	} {
		t.Run(tc.rules+"|"+tc.dn, func(t *testing.T) {
			m, err := NewMapper(tc.rules)
			if err != nil {
				t.Fatalf("NewMapper: %v", err)
			}
			got, err := m.Map(tc.dn)
			if !errors.Is(err, tc.wantErr) || got != tc.want {
				t.Fatalf("Map = %q, %v; want %q, %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestNewMapperRefusesInvalidRules(t *testing.T) {
	for _, rules := range []string{
		"default",
		"DEFAUL",
		"RULE:^CN=(.*)$/$1",
		"RULE:^CN=(.*)$/$1/X",
		"RULE:^CN=(.*)$/$1/L junk",
		"RULE:^CN=(.*$/$1/",
		"RULE:^CN=(.*)$/$2/",
		"RULE:^CN=(.*)$/$/",
		"DEFAULT,,DEFAULT",
		"DEFAULT, foo",
	} {
		t.Run(rules, func(t *testing.T) {
			_, err := NewMapper(rules)
			if !errors.Is(err, ErrInvalidConfig) || !contains(err.Error(), "ssl.principal.mapping.rules: ") {
				t.Fatalf("err = %v, want ErrInvalidConfig naming ssl.principal.mapping.rules", err)
			}
		})
	}
}
