package tlsconfig

import (
	"crypto/tls"
	"errors"
	"os"
	"strings"
	"testing"
)

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func TestConfigErrorsNameTheSetting(t *testing.T) {
	p := newDevPKI(t)
	ks := p.files.Server
	garbage := t.TempDir() + "/garbage.pem"
	if err := os.WriteFile(garbage, []byte("not PEM at all\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	caOnly := p.files.CA // certificates, no key
	keyOnly := p.files.ClientKey
	mismatched := t.TempDir() + "/mismatched.pem"
	cliKey, _ := os.ReadFile(p.files.ClientKey)
	srvCert, _ := os.ReadFile(p.files.CA)
	if err := os.WriteFile(mismatched, append(cliKey, srvCert...), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		cfg     Config
		setting string
	}{
		{"no keystore", Config{}, "ssl.keystore.location"},
		{"JKS keystore", Config{KeystoreLocation: ks, KeystoreType: "JKS"}, "ssl.keystore.type"},
		{"PKCS12 keystore", Config{KeystoreLocation: ks, KeystoreType: "PKCS12"}, "ssl.keystore.type"},
		{"unknown keystore type", Config{KeystoreLocation: ks, KeystoreType: "BKS"}, "ssl.keystore.type"},
		{"JKS truststore", Config{KeystoreLocation: ks, TruststoreLocation: p.files.CA, TruststoreType: "JKS"}, "ssl.truststore.type"},
		{"location and inline", Config{KeystoreLocation: ks, KeystoreKey: "x", KeystoreCertificateChain: "y"}, "ssl.keystore.location"},
		{"inline chain without key", Config{KeystoreCertificateChain: "x"}, "ssl.keystore.key"},
		{"inline key without chain", Config{KeystoreKey: "x"}, "ssl.keystore.certificate.chain"},
		{"missing keystore file", Config{KeystoreLocation: ks + ".missing"}, "ssl.keystore.location"},
		{"keystore not PEM", Config{KeystoreLocation: garbage}, "ssl.keystore.location"},
		{"keystore without key", Config{KeystoreLocation: caOnly}, "ssl.keystore.location"},
		{"keystore without certificate", Config{KeystoreLocation: keyOnly}, "ssl.keystore.location"},
		{"key of another certificate", Config{KeystoreLocation: mismatched}, "ssl.keystore.location"},
		{"inline chain not PEM", Config{KeystoreCertificateChain: "junk", KeystoreKey: string(cliKey)}, "ssl.keystore.certificate.chain"},
		{"inline key not PEM", Config{KeystoreCertificateChain: string(srvCert), KeystoreKey: "junk"}, "ssl.keystore.key"},
		{"both truststores", Config{KeystoreLocation: ks, TruststoreLocation: p.files.CA, TruststoreCertificates: string(srvCert)}, "ssl.truststore.location"},
		{"missing truststore file", Config{KeystoreLocation: ks, TruststoreLocation: p.files.CA + ".missing"}, "ssl.truststore.location"},
		{"truststore not PEM", Config{KeystoreLocation: ks, TruststoreLocation: garbage}, "ssl.truststore.location"},
		{"inline truststore not PEM", Config{KeystoreLocation: ks, TruststoreCertificates: "junk"}, "ssl.truststore.certificates"},
		{"required without truststore", Config{KeystoreLocation: ks, ClientAuth: "required"}, "ssl.truststore.location"},
		{"requested without truststore", Config{KeystoreLocation: ks, ClientAuth: "requested"}, "ssl.truststore.location"},
		{"unknown client auth", Config{KeystoreLocation: ks, ClientAuth: "sometimes"}, "ssl.client.auth"},
		{"TLSv1", Config{KeystoreLocation: ks, EnabledProtocols: []string{"TLSv1.2", "TLSv1"}}, "ssl.enabled.protocols"},
		{"TLSv1.1", Config{KeystoreLocation: ks, EnabledProtocols: []string{"TLSv1.1"}}, "ssl.enabled.protocols"},
		{"unknown protocol", Config{KeystoreLocation: ks, EnabledProtocols: []string{"TLSv9"}}, "ssl.enabled.protocols"},
		{"unknown cipher suite", Config{KeystoreLocation: ks, CipherSuites: []string{"TLS_NOPE"}}, "ssl.cipher.suites"},
		{"insecure cipher suite", Config{KeystoreLocation: ks, CipherSuites: []string{"TLS_RSA_WITH_RC4_128_SHA"}}, "ssl.cipher.suites"},
		{"only TLS 1.3 suites with TLS 1.2 on", Config{KeystoreLocation: ks, CipherSuites: []string{"TLS_AES_128_GCM_SHA256"}}, "ssl.cipher.suites"},
		{"bad mapping rule", Config{KeystoreLocation: ks, PrincipalMappingRules: "RULE:^CN=(.*$/$1/"}, "ssl.principal.mapping.rules"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewServer(tc.cfg, nil)
			if !errors.Is(err, ErrInvalidConfig) || !contains(err.Error(), tc.setting+": ") {
				t.Fatalf("err = %v, want ErrInvalidConfig naming %s", err, tc.setting)
			}
		})
	}
}

func TestClientConfigErrorsNameTheSetting(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cfg     Config
		setting string
	}{
		{"unknown algorithm", Config{EndpointIdentificationAlgorithm: "ldaps"}, "ssl.endpoint.identification.algorithm"},
		{"TLSv1.1", Config{EnabledProtocols: []string{"TLSv1.1"}}, "ssl.enabled.protocols"},
		{"PKCS12 truststore", Config{TruststoreType: "PKCS12", TruststoreLocation: "x"}, "ssl.truststore.type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewClient(tc.cfg, "localhost")
			if !errors.Is(err, ErrInvalidConfig) || !contains(err.Error(), tc.setting+": ") {
				t.Fatalf("err = %v, want ErrInvalidConfig naming %s", err, tc.setting)
			}
		})
	}
}

func TestConfigMapsSettingsToTLSConfig(t *testing.T) {
	p := newDevPKI(t)
	for _, tc := range []struct {
		name       string
		cfg        Config
		min, max   uint16
		auth       tls.ClientAuthType
		suiteCount int
	}{
		{"defaults", Config{}, tls.VersionTLS12, tls.VersionTLS13, tls.NoClientCert, 0},
		{"DefaultConfig", DefaultConfig(), tls.VersionTLS12, tls.VersionTLS13, tls.NoClientCert, 0},
		{"TLSv1.3 only", Config{EnabledProtocols: []string{"TLSv1.3"}}, tls.VersionTLS13, tls.VersionTLS13, tls.NoClientCert, 0},
		{"TLSv1.2 only", Config{EnabledProtocols: []string{"TLSv1.2"}}, tls.VersionTLS12, tls.VersionTLS12, tls.NoClientCert, 0},
		{"requested", Config{ClientAuth: "requested", TruststoreLocation: p.files.CA}, tls.VersionTLS12, tls.VersionTLS13, tls.VerifyClientCertIfGiven, 0},
		{"REQUIRED", Config{ClientAuth: "REQUIRED", TruststoreLocation: p.files.CA}, tls.VersionTLS12, tls.VersionTLS13, tls.RequireAndVerifyClientCert, 0},
		{"none", Config{ClientAuth: "none"}, tls.VersionTLS12, tls.VersionTLS13, tls.NoClientCert, 0},
		{"cipher suites", Config{CipherSuites: []string{"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "TLS_AES_128_GCM_SHA256", "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256"}}, tls.VersionTLS12, tls.VersionTLS13, tls.NoClientCert, 2},
		{"TLS 1.3 suites with TLSv1.3 only", Config{EnabledProtocols: []string{"TLSv1.3"}, CipherSuites: []string{"TLS_AES_256_GCM_SHA384"}}, tls.VersionTLS13, tls.VersionTLS13, tls.NoClientCert, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.KeystoreLocation = p.files.Server
			srv, err := NewServer(cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			c := srv.TLSConfig()
			if c.MinVersion != tc.min || c.MaxVersion != tc.max || c.ClientAuth != tc.auth || len(c.CipherSuites) != tc.suiteCount {
				t.Fatalf("got min %x max %x auth %v suites %d; want %x %x %v %d", c.MinVersion, c.MaxVersion, c.ClientAuth, len(c.CipherSuites), tc.min, tc.max, tc.auth, tc.suiteCount)
			}
			if c.GetConfigForClient == nil {
				t.Fatal("no GetConfigForClient")
			}
		})
	}
}
