package console

import (
	"context"
	"crypto/tls"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Prefix is the path the console is served under, on the admin listener
// and on its own.
const Prefix = "/console"

// The SASL mechanisms a user can log in with: those that take a user
// name and a password, and OAUTHBEARER, which takes a token the user
// pastes (the broker checks it; the console never reads it for trust).
const (
	PLAIN       = "PLAIN"
	ScramSHA256 = "SCRAM-SHA-256"
	ScramSHA512 = "SCRAM-SHA-512"
	OAuthBearer = "OAUTHBEARER"
)

// Counters are this broker's traffic counters since it started: what its
// partitions appended from producers and sent to consumers. They only
// grow, except when a partition leaves the broker.
type Counters struct {
	RecordsIn, BytesIn, RecordsOut, BytesOut int64
	// ByTopic is the same per topic.
	ByTopic map[string]TopicCounters
}

// TopicCounters is one topic's share of Counters.
type TopicCounters struct {
	RecordsIn, BytesIn, RecordsOut, BytesOut int64
}

// Config configures New.
type Config struct {
	// Bootstrap is where the console's Kafka clients start: this
	// broker's own listener. They learn the other brokers from its
	// metadata, so a page shows the whole cluster.
	Bootstrap []string
	// TLS is the client side of the listener's TLS; nil for plain text.
	TLS *tls.Config
	// Mechanisms are the SASL mechanisms of the listener that users log
	// in with (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER). Empty: the listener
	// has no SASL, nobody logs in, and the console acts as the
	// listener's anonymous principal.
	Mechanisms []string
	// ReadOnly refuses every change (console.read.only).
	ReadOnly bool
	// NodeID and Version name this broker on the pages.
	NodeID  int32
	Version string
	// Counters reads this broker's traffic counters for the throughput
	// charts; nil shows no charts.
	Counters func() Counters
	// SampleInterval is how often Counters is sampled (5 s when zero);
	// the console keeps 15 minutes of samples.
	SampleInterval time.Duration
	// SessionIdle ends a session unused for this long (30 min when
	// zero).
	SessionIdle time.Duration
	// Logger receives the console's log lines; nil discards.
	Logger *slog.Logger
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// Server is the web console: an http.Handler for the paths under Prefix.
// It is safe for concurrent use. It owns one goroutine (the counter
// sampler), started by New and stopped by Close.
type Server struct {
	cfg   Config
	log   *slog.Logger
	now   func() time.Time
	pages map[string]*template.Template
	mux   *http.ServeMux
	rates *rateRing
	lags  *lagHistory

	sessions *sessionStore
	// anon is the client of every session when nobody logs in
	// (Mechanisms empty); created on first use.
	anonMu sync.Mutex
	anon   *kgo.Client

	stop chan struct{} // closed by Close: the sampler exits
	done chan struct{} // closed when the sampler has exited

	closeOnce sync.Once
}

// New returns a console for cfg with its sampler running.
func New(cfg Config) (*Server, error) {
	if len(cfg.Bootstrap) == 0 {
		return nil, errors.New("console: no bootstrap address")
	}
	for _, m := range cfg.Mechanisms {
		if m != PLAIN && m != ScramSHA256 && m != ScramSHA512 && m != OAuthBearer {
			return nil, fmt.Errorf("console: SASL mechanism %s cannot log in from a form", m)
		}
	}
	if cfg.SampleInterval <= 0 {
		cfg.SampleInterval = 5 * time.Second
	}
	if cfg.SessionIdle <= 0 {
		cfg.SessionIdle = 30 * time.Minute
	}
	s := &Server{cfg: cfg, log: cfg.Logger, now: cfg.Now, stop: make(chan struct{}), done: make(chan struct{})}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.sessions = newSessionStore(maxSessions, cfg.SessionIdle, s.now)
	if err := s.parseTemplates(); err != nil {
		return nil, err
	}
	s.rates = newRateRing(int(15*time.Minute/cfg.SampleInterval) + 1)
	// The group pages poll every 5 s: 180 points are 15 minutes.
	s.lags = newLagHistory(1000, 180, 5*time.Second)
	s.routes()
	go s.sample()
	return s, nil
}

// Close stops the sampler and closes every session's Kafka client. It is
// idempotent.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		close(s.stop)
		<-s.done
		s.sessions.closeAll()
		s.anonMu.Lock()
		if s.anon != nil {
			s.anon.Close()
		}
		s.anonMu.Unlock()
	})
	return nil
}

// LoginRequired reports whether users log in (the listener has SASL).
func (s *Server) LoginRequired() bool { return len(s.cfg.Mechanisms) > 0 }

// sample reads the counters every SampleInterval into the ring until
// Close.
func (s *Server) sample() {
	defer close(s.done)
	if s.cfg.Counters == nil {
		<-s.stop
		return
	}
	t := time.NewTicker(s.cfg.SampleInterval)
	defer t.Stop()
	s.rates.add(s.now(), s.cfg.Counters())
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.rates.add(s.now(), s.cfg.Counters())
		}
	}
}

// clientOpts returns the options of a console client: the bootstrap
// listener, its TLS, and the user's SASL mechanism if any.
func (s *Server) clientOpts(mech, user, pass string) ([]kgo.Opt, error) {
	opts := []kgo.Opt{
		kgo.SeedBrokers(s.cfg.Bootstrap...),
		kgo.ClientID("samsa-console"),
		// A page waits for at most pageTimeout; a request that cannot
		// be answered (a broker down, a leader moving) is retried only
		// within it.
		kgo.RetryTimeout(pageTimeout),
		kgo.RequestRetries(3),
		kgo.DialTimeout(3 * time.Second),
		kgo.MetadataMinAge(time.Second),
		kgo.RecordPartitioner(consolePartitioner()),
		kgo.ProducerLinger(0),
	}
	if s.cfg.TLS != nil {
		opts = append(opts, kgo.DialTLSConfig(s.cfg.TLS.Clone()))
	}
	switch mech {
	case "":
	case PLAIN:
		opts = append(opts, kgo.SASL(plain.Auth{User: user, Pass: pass}.AsMechanism()))
	case ScramSHA256:
		opts = append(opts, kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha256Mechanism()))
	case ScramSHA512:
		opts = append(opts, kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha512Mechanism()))
	case OAuthBearer:
		// NB: the token is sent as it is at every (re)authentication;
		// once it expires the broker refuses it and the user logs in
		// again with a new one.
		opts = append(opts, kgo.SASL(oauth.Auth{Token: pass}.AsMechanism()))
	default:
		return nil, fmt.Errorf("console: unknown SASL mechanism %q", mech)
	}
	return opts, nil
}

// anonClient returns the shared client of the anonymous principal.
func (s *Server) anonClient() (*kgo.Client, error) {
	s.anonMu.Lock()
	defer s.anonMu.Unlock()
	if s.anon != nil {
		return s.anon, nil
	}
	select {
	case <-s.stop:
		return nil, errors.New("console: closed")
	default:
	}
	opts, err := s.clientOpts("", "", "")
	if err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	s.anon = cl
	return cl, nil
}

// pageTimeout bounds the Kafka requests of one page or action.
const pageTimeout = 6 * time.Second

// ServeHTTP serves the console's pages under Prefix.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	// Scripts and styles come only from the console's own files: no
	// inline script runs, so an escaped value that still looked like
	// markup could not execute either.
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	s.mux.ServeHTTP(w, r)
}

// request is what a handler works with: the session, its admin client,
// and a context bounded by pageTimeout.
type request struct {
	w    http.ResponseWriter
	r    *http.Request
	ctx  context.Context
	sess *session
	cl   *kgo.Client
	adm  *kadm.Client
	log  *slog.Logger
}

// handle wraps a page or action: it finds (or, for pages, makes) the
// session, sends a user who must log in to the login page, checks the
// CSRF token and read-only mode on a POST, and bounds the work.
func (s *Server) handle(post bool, f func(*request) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sess := s.sessionFor(w, r, !post)
		if post {
			if sess == nil || !s.checkCSRF(r, sess) {
				s.fail(w, r, sess, http.StatusForbidden, errCSRF)
				return
			}
			if s.cfg.ReadOnly {
				s.fail(w, r, sess, http.StatusForbidden, errReadOnly)
				return
			}
		}
		if sess == nil || (s.LoginRequired() && sess.user == "") {
			http.Redirect(w, r, Prefix+"/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		cl := sess.client
		if cl == nil {
			var err error
			if cl, err = s.anonClient(); err != nil {
				s.fail(w, r, sess, http.StatusServiceUnavailable, err)
				return
			}
		}
		ctx, cancel := context.WithTimeout(r.Context(), pageTimeout)
		defer cancel()
		rq := &request{w: w, r: r, ctx: ctx, sess: sess, cl: cl, adm: kadm.NewClient(cl), log: s.log}
		if err := f(rq); err != nil {
			status := http.StatusBadGateway
			var ue userError
			if errors.As(err, &ue) {
				status = http.StatusBadRequest
			}
			s.fail(w, r, sess, status, err)
		}
	}
}

// userError is a request the console refuses before asking the cluster:
// a missing or malformed field. It is answered 400.
type userError struct{ msg string }

func (e userError) Error() string { return e.msg }

func badRequest(format string, args ...any) error { return userError{fmt.Sprintf(format, args...)} }

var (
	errCSRF     = errors.New("the form's CSRF token is missing or wrong: reload the page and try again")
	errReadOnly = errors.New("the console is read-only (console.read.only=true)")
)

// fail renders the error page with status.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, sess *session, status int, err error) {
	s.render(w, r, sess, status, "error", "Error", map[string]any{"Status": status, "Message": err.Error()})
}

// routes builds the mux.
func (s *Server) routes() {
	m := http.NewServeMux()
	static, _ := fs.Sub(staticFS, "static")
	m.Handle("GET "+Prefix+"/static/", http.StripPrefix(Prefix+"/static/", http.FileServerFS(static)))
	m.HandleFunc("GET "+Prefix+"/login", s.loginPage)
	m.HandleFunc("POST "+Prefix+"/login", s.login)
	m.HandleFunc("POST "+Prefix+"/logout", s.logout)
	m.HandleFunc("GET "+Prefix+"/{$}", s.handle(false, s.overview))
	m.HandleFunc("GET "+Prefix+"/api/throughput", s.handle(false, s.throughputJSON))
	m.HandleFunc("GET "+Prefix+"/topics", s.handle(false, s.topics))
	m.HandleFunc("POST "+Prefix+"/topics", s.handle(true, s.createTopic))
	m.HandleFunc("GET "+Prefix+"/topic", s.handle(false, s.topic))
	m.HandleFunc("POST "+Prefix+"/topic/delete", s.handle(true, s.deleteTopic))
	m.HandleFunc("POST "+Prefix+"/topic/partitions", s.handle(true, s.addPartitions))
	m.HandleFunc("POST "+Prefix+"/topic/configs", s.handle(true, s.alterTopicConfig))
	m.HandleFunc("GET "+Prefix+"/messages", s.handle(false, s.messages))
	m.HandleFunc("POST "+Prefix+"/messages", s.handle(true, s.produce))
	m.HandleFunc("GET "+Prefix+"/groups", s.handle(false, s.groups))
	m.HandleFunc("GET "+Prefix+"/group", s.handle(false, s.group))
	m.HandleFunc("GET "+Prefix+"/api/group-lag", s.handle(false, s.groupLagJSON))
	m.HandleFunc("POST "+Prefix+"/group/reset", s.handle(true, s.resetOffsets))
	m.HandleFunc("POST "+Prefix+"/group/delete", s.handle(true, s.deleteGroup))
	m.HandleFunc("GET "+Prefix+"/brokers", s.handle(false, s.brokers))
	m.HandleFunc("POST "+Prefix+"/brokers/elect", s.handle(true, s.electLeaders))
	m.HandleFunc("GET "+Prefix+"/security", s.handle(false, s.security))
	m.HandleFunc("POST "+Prefix+"/security/acls", s.handle(true, s.createACL))
	m.HandleFunc("POST "+Prefix+"/security/acls/delete", s.handle(true, s.deleteACL))
	m.HandleFunc("POST "+Prefix+"/security/users", s.handle(true, s.upsertUser))
	m.HandleFunc("POST "+Prefix+"/security/users/delete", s.handle(true, s.deleteUser))
	m.HandleFunc("POST "+Prefix+"/security/quotas", s.handle(true, s.alterQuota))
	m.HandleFunc("GET "+Prefix+"/transactions", s.handle(false, s.transactions))
	m.HandleFunc("POST "+Prefix+"/transactions/abort", s.handle(true, s.abortTransaction))
	m.HandleFunc(Prefix, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, Prefix+"/", http.StatusMovedPermanently)
	})
	s.mux = m
}

// formValue returns a trimmed form or query value.
func formValue(r *http.Request, name string) string { return strings.TrimSpace(r.FormValue(name)) }
