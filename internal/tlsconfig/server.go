package tlsconfig

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// ReloadInterval is the least time between two checks of a Server's
// keystore and truststore files.
const ReloadInterval = time.Second

// Server is a listener's TLS setup: the tls.Config to accept connections
// with, reloaded from ssl.keystore.location and ssl.truststore.location
// when those files change, and the principal of each accepted connection.
// A Server starts no goroutines and holds no open files. It is safe for
// concurrent use.
type Server struct {
	cfg    Config
	log    *slog.Logger
	base   *tls.Config // versions, suites, client auth; never modified after NewServer
	mapper *Mapper

	// cur is the configuration handed to new handshakes. It is swapped
	// whole, so a handshake sees one keystore and truststore that belong
	// together, and connections already open keep what they negotiated.
	cur atomic.Pointer[snapshot]
	// lastCheck is when the files were last stat'ed, in Unix nanoseconds
	// by cfg.Now.
	lastCheck atomic.Int64

	// reload serialises file checks. A handshake that finds it held does
	// not wait: it uses cur as it is. reload guards seen.
	reload sync.Mutex
	// seen holds the stamps of the files as last read, whether or not
	// they parsed, so a broken file is reported once, not every second.
	seen stamps
}

// snapshot is one immutable server configuration.
type snapshot struct {
	tls  *tls.Config
	leaf *x509.Certificate
}

// stamp identifies a version of a file by modification time and size.
type stamp struct {
	mod     time.Time
	size    int64
	missing bool
}

type stamps struct {
	keystore, truststore stamp
}

// NewServer checks cfg, reads its keystore and truststore and parses its
// principal mapping rules. log receives reload events; nil discards them.
// A missing or invalid setting is an error wrapping ErrInvalidConfig that
// names the setting, for example "ssl.keystore.location: ...".
func NewServer(cfg Config, log *slog.Logger) (*Server, error) {
	if err := cfg.checkStores(); err != nil {
		return nil, err
	}
	if !cfg.hasKeystore() {
		return nil, settingError(settingKeystoreLocation, nil, "a listener needs a keystore (or %s and %s)", settingKeystoreChain, settingKeystoreKey)
	}
	auth, err := clientAuth(cfg.ClientAuth)
	if err != nil {
		return nil, err
	}
	if auth != tls.NoClientCert && !cfg.hasTruststore() {
		return nil, settingError(settingTruststoreLocation, nil, "required when %s is %s (or set %s)", settingClientAuth, cfg.ClientAuth, settingTruststoreCerts)
	}
	mapper, err := NewMapper(cfg.PrincipalMappingRules)
	if err != nil {
		return nil, err
	}
	base, err := cfg.baseConfig()
	if err != nil {
		return nil, err
	}
	base.ClientAuth = auth
	// NB: a resumed session skips certificate verification, so a CA taken
	// out of the truststore would still admit clients holding tickets.
	// Kafka connections are long-lived; full handshakes cost little.
	base.SessionTicketsDisabled = true

	s := &Server{cfg: cfg, log: discardLogger(log), base: base, mapper: mapper}
	s.seen = s.statFiles()
	ks, err := cfg.loadKeystore()
	if err != nil {
		return nil, err
	}
	pool, err := cfg.loadTruststore()
	if err != nil {
		return nil, err
	}
	s.cur.Store(s.newSnapshot(ks, pool))
	s.lastCheck.Store(cfg.now().UnixNano())
	if now := cfg.now(); now.After(ks.cert.Leaf.NotAfter) {
		s.log.Warn("tlsconfig: server certificate has expired", "setting", ks.setting, "subject", ks.cert.Leaf.Subject.String(), "not_after", ks.cert.Leaf.NotAfter)
	}
	return s, nil
}

func (s *Server) newSnapshot(ks *keystore, pool *x509.CertPool) *snapshot {
	c := s.base.Clone()
	c.Certificates = []tls.Certificate{ks.cert}
	c.ClientCAs = pool
	return &snapshot{tls: c, leaf: ks.cert.Leaf}
}

// TLSConfig returns a configuration for tls.Server or tls.NewListener. Its
// GetConfigForClient re-reads the keystore and truststore files when their
// modification time or size changed, checking at most once per
// ReloadInterval, at handshake time; a file that no longer parses is logged
// and the previous version kept. Connections already established are not
// affected. Each call returns a new tls.Config, which the caller owns.
func (s *Server) TLSConfig() *tls.Config {
	c := s.cur.Load().tls.Clone()
	c.GetConfigForClient = s.configForClient
	return c
}

// Certificate returns the leaf certificate that new handshakes present.
// The caller must not modify it.
func (s *Server) Certificate() *x509.Certificate {
	s.maybeReload()
	return s.cur.Load().leaf
}

func (s *Server) configForClient(*tls.ClientHelloInfo) (*tls.Config, error) {
	s.maybeReload()
	return s.cur.Load().tls, nil
}

// maybeReload checks the files if ReloadInterval has passed since the last
// check and no other goroutine is checking, and swaps in a new snapshot if
// a changed file parses.
func (s *Server) maybeReload() {
	if s.cfg.KeystoreLocation == "" && s.cfg.TruststoreLocation == "" {
		return // inline PEM never changes
	}
	now := s.cfg.now().UnixNano()
	if now-s.lastCheck.Load() < int64(ReloadInterval) {
		return
	}
	if !s.reload.TryLock() {
		return
	}
	defer s.reload.Unlock()
	if now-s.lastCheck.Load() < int64(ReloadInterval) {
		return // another goroutine just checked
	}
	s.lastCheck.Store(now)
	s.reloadLocked()
}

// reloadLocked re-reads the files whose stamps changed. s.reload is held.
func (s *Server) reloadLocked() {
	st := s.statFiles()
	keyChanged := st.keystore != s.seen.keystore
	trustChanged := st.truststore != s.seen.truststore
	if !keyChanged && !trustChanged {
		return
	}
	s.seen = st
	cur := s.cur.Load()
	ks := &keystore{cert: cur.tls.Certificates[0], setting: settingKeystoreLocation}
	pool := cur.tls.ClientCAs
	applied := false
	if keyChanged {
		if k, err := s.cfg.loadKeystore(); err != nil {
			s.log.Error("tlsconfig: keeping the previous server certificate", "err", err)
		} else {
			ks, applied = k, true
		}
	}
	if trustChanged {
		if p, err := s.cfg.loadTruststore(); err != nil {
			s.log.Error("tlsconfig: keeping the previous truststore", "err", err)
		} else {
			pool, applied = p, true
		}
	}
	if !applied {
		return
	}
	s.cur.Store(s.newSnapshot(ks, pool))
	s.log.Info("tlsconfig: reloaded", "keystore", keyChanged, "truststore", trustChanged,
		"subject", ks.cert.Leaf.Subject.String(), "serial", ks.cert.Leaf.SerialNumber.String(), "not_after", ks.cert.Leaf.NotAfter)
}

// statFiles stamps the keystore and truststore files; inline settings get
// the zero stamp.
func (s *Server) statFiles() stamps {
	return stamps{keystore: statFile(s.cfg.KeystoreLocation), truststore: statFile(s.cfg.TruststoreLocation)}
}

func statFile(path string) stamp {
	if path == "" {
		return stamp{}
	}
	fi, err := os.Stat(path)
	if err != nil {
		return stamp{missing: errors.Is(err, fs.ErrNotExist), size: -1}
	}
	return stamp{mod: fi.ModTime(), size: fi.Size()}
}

// Principal returns the Kafka principal of a connection accepted with
// TLSConfig: "User:" and the subject of the verified client certificate,
// formatted by DistinguishedName and mapped by ssl.principal.mapping.rules,
// or Anonymous ("User:ANONYMOUS") when the client sent no certificate. It
// returns an error wrapping ErrNoRuleMatched if no rule matches, and one
// wrapping ErrUnverifiedPeer if the handshake has not completed or the
// certificate was not verified.
func (s *Server) Principal(state tls.ConnectionState) (string, error) {
	if !state.HandshakeComplete {
		return "", ErrUnverifiedPeer
	}
	if len(state.PeerCertificates) == 0 {
		return Anonymous, nil
	}
	if len(state.VerifiedChains) == 0 || len(state.VerifiedChains[0]) == 0 {
		return "", ErrUnverifiedPeer
	}
	dn, err := DistinguishedName(state.VerifiedChains[0][0])
	if err != nil {
		return "", err
	}
	name, err := s.mapper.Map(dn)
	if err != nil {
		return "", err
	}
	return "User:" + name, nil
}
