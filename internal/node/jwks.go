package node

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"samsa/internal/config"
	"samsa/internal/sasl"
	"samsa/internal/tlsconfig"
)

// jwksFile is a JWKS file, read again when it changes (checked at most
// once a second). Readers never wait for the disk: the key set is an
// atomic pointer, and the check runs in whichever caller wins TryLock.
type jwksFile struct {
	path string
	set  atomic.Pointer[sasl.KeySet]
	// checked is when the file was last checked (UnixNano).
	checked atomic.Int64
	// mu serialises checks; mod and size, guarded by mu, are the file's
	// stamp when set was loaded.
	mu   sync.Mutex
	mod  time.Time
	size int64
}

// openJWKSFile loads the JWKS file at path.
func openJWKSFile(path string) (*jwksFile, error) {
	j := &jwksFile{path: path}
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.loadLocked(); err != nil {
		return nil, err
	}
	j.checked.Store(time.Now().UnixNano())
	return j, nil
}

// loadLocked reads and parses the file. j.mu is held.
func (j *jwksFile) loadLocked() error {
	st, err := os.Stat(j.path)
	if err != nil {
		return fmt.Errorf("jwks file: %w", err)
	}
	data, err := os.ReadFile(j.path)
	if err != nil {
		return fmt.Errorf("jwks file: %w", err)
	}
	set, err := sasl.ParseJWKS(data)
	if err != nil {
		return fmt.Errorf("jwks file %s: %w", j.path, err)
	}
	j.set.Store(set)
	j.mod, j.size = st.ModTime(), st.Size()
	return nil
}

// keys returns the current key set, rereading the file if it changed. A
// file that no longer parses keeps the last good set.
func (j *jwksFile) keys() *sasl.KeySet {
	now := time.Now().UnixNano()
	if now-j.checked.Load() >= int64(time.Second) && j.mu.TryLock() {
		if now-j.checked.Load() >= int64(time.Second) {
			j.checked.Store(now)
			if st, err := os.Stat(j.path); err == nil && (!st.ModTime().Equal(j.mod) || st.Size() != j.size) {
				_ = j.loadLocked()
			}
		}
		j.mu.Unlock()
	}
	return j.set.Load()
}

// Limits of a JWKS fetched over http or https. They are fixed: Kafka has
// no settings for them on the broker side.
const (
	// jwksFetchTimeout bounds one fetch: connecting, the TLS handshake,
	// the request and reading the whole response.
	jwksFetchTimeout = 10 * time.Second
	// jwksMaxBytes bounds the response body; a real JWKS is a few KiB.
	jwksMaxBytes = 1 << 20
	// jwksMissingKidInterval is the least time between two fetches asked
	// for by tokens naming a kid the key set lacks, so that clients
	// sending made-up kids cannot make the broker hammer the endpoint.
	jwksMissingKidInterval = 10 * time.Second
)

// jwksEndpointConfig configures a jwksEndpoint. Its fields carry Kafka's
// settings.
type jwksEndpointConfig struct {
	// URL is sasl.oauthbearer.jwks.endpoint.url, an http:// or https://
	// URL that sasl.oauthbearer.allowed.urls lists.
	URL string
	// TLS verifies an https endpoint. Nil means the system's roots and
	// the host name of URL.
	TLS *tls.Config
	// Refresh is sasl.oauthbearer.jwks.endpoint.refresh.ms.
	Refresh time.Duration
	// Backoff and BackoffMax are
	// sasl.oauthbearer.jwks.endpoint.retry.backoff.ms and
	// sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms.
	Backoff, BackoffMax time.Duration
	Log                 *slog.Logger
	// Now is the clock of the missing-kid rate limit. Nil means time.Now.
	Now func() time.Time
}

// jwksEndpoint is a JWKS fetched over http or https, as Kafka's
// RefreshingHttpsJwks does: once when it is opened, then every Refresh by
// run, and early when a token names a kid the current set lacks (at most
// once per jwksMissingKidInterval). A fetch that fails is retried after
// Backoff, doubled with each failure up to BackoffMax, until one
// succeeds; the last good key set stays in use meanwhile.
//
// The owner calls run in a goroutine and cancels its context to stop it.
// keys and missingKey are safe for concurrent use, also before run
// starts and after it returned.
type jwksEndpoint struct {
	cfg    jwksEndpointConfig
	client *http.Client

	set  atomic.Pointer[sasl.KeySet]
	wake chan struct{} // capacity 1: asks run for a fetch now
	done chan struct{} // closed when run returns

	mu struct {
		sync.Mutex
		// lastMissing is when a missing kid last asked for a fetch.
		lastMissing time.Time
		// waiting, when not nil, is closed once the next fetch run
		// starts has ended.
		waiting chan struct{}
		// fetching, when not nil, is closed once the fetch under way
		// has ended.
		fetching chan struct{}
	}
}

// openJWKSEndpoint fetches the JWKS at cfg.URL once and returns the
// endpoint holding it, or an error naming the URL and the cause. It does
// not retry: a broker whose JWKS cannot be fetched does not start, as in
// Kafka. The caller starts run.
func openJWKSEndpoint(ctx context.Context, cfg jwksEndpointConfig) (*jwksEndpoint, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Refresh <= 0 {
		cfg.Refresh = time.Hour
	}
	cfg.Backoff = max(cfg.Backoff, time.Millisecond)
	cfg.BackoffMax = max(cfg.BackoffMax, cfg.Backoff)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = cfg.TLS
	// NB: a fetch at most every few seconds does not need a pool, and
	// without one no connection (and none of its goroutines) outlives
	// the fetch.
	tr.DisableKeepAlives = true
	e := &jwksEndpoint{
		cfg: cfg,
		client: &http.Client{
			Transport: tr,
			// The allowlist names the URL fetched; a redirect would
			// lead elsewhere.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		wake: make(chan struct{}, 1),
		done: make(chan struct{}),
	}
	set, err := e.fetch(ctx)
	if err != nil {
		return nil, err
	}
	e.set.Store(set)
	return e, nil
}

var errNoUsableKeys = errors.New("no usable keys")

// fetch gets and parses the JWKS. It blocks for at most jwksFetchTimeout.
// A key set without a usable key is an error: it would refuse every
// token, which is more likely a broken endpoint than the issuer's wish.
func (e *jwksEndpoint) fetch(ctx context.Context) (*sasl.KeySet, error) {
	ctx, cancel := context.WithTimeout(ctx, jwksFetchTimeout)
	defer cancel()
	fail := func(err error) (*sasl.KeySet, error) {
		return nil, fmt.Errorf("GET %s: %w", e.cfg.URL, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.cfg.URL, nil)
	if err != nil {
		return fail(err)
	}
	req.Header.Set("Accept", "application/json, application/jwk-set+json")
	resp, err := e.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its text repeats the URL
		}
		return fail(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fail(fmt.Errorf("status %s", resp.Status))
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, jwksMaxBytes+1))
	if err != nil {
		return fail(fmt.Errorf("read response: %w", err))
	}
	if len(body) > jwksMaxBytes {
		return fail(fmt.Errorf("response larger than %d bytes", jwksMaxBytes))
	}
	set, err := sasl.ParseJWKS(body)
	if err != nil {
		return fail(err)
	}
	if set.Len() == 0 {
		return fail(errNoUsableKeys)
	}
	return set, nil
}

// keys returns the current key set. It never blocks.
func (e *jwksEndpoint) keys() *sasl.KeySet { return e.set.Load() }

// missingKey is sasl.OAuthConfig.MissingKey: a token names kid, which the
// current set lacks. While a fetch is asked for or under way, it waits for
// that one. Otherwise, unless a missing kid asked for a fetch less than
// jwksMissingKidInterval ago, it asks run for a fetch now and waits for
// it. It waits at most jwksFetchTimeout, less if run stops, and returns
// the key set current when it returns.
func (e *jwksEndpoint) missingKey(kid string) *sasl.KeySet {
	e.mu.Lock()
	ch := e.mu.waiting
	if ch == nil {
		ch = e.mu.fetching
	}
	asked := false
	if ch == nil {
		now := e.cfg.Now()
		if !e.mu.lastMissing.IsZero() && now.Sub(e.mu.lastMissing) < jwksMissingKidInterval {
			e.mu.Unlock()
			return e.set.Load()
		}
		e.mu.lastMissing = now
		ch = make(chan struct{})
		e.mu.waiting = ch
		asked = true
		select {
		case e.wake <- struct{}{}:
		default: // a fetch is asked for already
		}
	}
	e.mu.Unlock()
	if asked {
		e.cfg.Log.Info("OAUTHBEARER token names an unknown key id; fetching the JWKS again",
			"url", e.cfg.URL, "kid", kid[:min(len(kid), 64)])
	}
	t := time.NewTimer(jwksFetchTimeout)
	defer t.Stop()
	select {
	case <-ch:
	case <-e.done:
	case <-t.C:
	}
	return e.set.Load()
}

// run fetches the JWKS every Refresh, when missingKey asks, and after a
// failure with backoff, until ctx is done. It returns once ctx is done
// and no fetch is under way.
func (e *jwksEndpoint) run(ctx context.Context) {
	defer close(e.done)
	failures := 0
	t := time.NewTimer(e.cfg.Refresh)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-e.wake:
		}
		e.mu.Lock()
		fetching := e.mu.waiting
		if fetching == nil {
			fetching = make(chan struct{})
		}
		e.mu.waiting, e.mu.fetching = nil, fetching
		e.mu.Unlock()

		set, err := e.fetch(ctx)
		next := e.cfg.Refresh
		switch {
		case err == nil:
			e.set.Store(set)
			if failures > 0 {
				e.cfg.Log.Info("JWKS fetched again after failures", "url", e.cfg.URL, "failures", failures, "keys", set.Len())
			}
			failures = 0
		case ctx.Err() != nil:
		default:
			next = jwksBackoff(failures, e.cfg.Backoff, e.cfg.BackoffMax)
			failures++
			e.cfg.Log.Warn("JWKS fetch failed; keeping the last good key set", "url", e.cfg.URL,
				"err", err, "failures", failures, "retry_in", next)
		}
		e.mu.Lock()
		e.mu.fetching = nil
		e.mu.Unlock()
		close(fetching)
		t.Reset(next)
	}
}

// jwksBackoff returns the wait before retrying a fetch that failed
// failures+1 times in a row: base doubled failures times, at most max.
func jwksBackoff(failures int, base, max time.Duration) time.Duration {
	d := base
	for range failures {
		if d >= max {
			break
		}
		d *= 2
	}
	return min(d, max)
}

// jwksTLS returns the TLS configuration for an https JWKS endpoint from
// the options of the listener's OAUTHBEARER JAAS config, as Kafka reads
// them: ssl.truststore.location, ssl.truststore.certificates and
// ssl.truststore.type (PEM). Without them it returns nil: the system's
// roots. The host name is always verified. Other ssl.* options are
// refused rather than ignored.
func jwksTLS(jaas string) (*tls.Config, error) {
	if strings.TrimSpace(jaas) == "" {
		return nil, nil
	}
	module, o, err := sasl.ParseJAAS(jaas)
	if err != nil {
		return nil, err
	}
	if module != sasl.OAuthBearerLoginModule {
		return nil, fmt.Errorf("login module %s, want %s", module, sasl.OAuthBearerLoginModule)
	}
	tc := tlsconfig.Config{EndpointIdentificationAlgorithm: "https"}
	for k, v := range o {
		switch k {
		case "ssl.truststore.location":
			tc.TruststoreLocation = v
		case "ssl.truststore.certificates":
			tc.TruststoreCertificates = v
		case "ssl.truststore.type":
			tc.TruststoreType = v
		default:
			if strings.HasPrefix(k, "ssl.") {
				return nil, fmt.Errorf("option %s is not supported for the JWKS endpoint (only ssl.truststore.location, ssl.truststore.certificates and ssl.truststore.type)", k)
			}
		}
	}
	if tc.TruststoreLocation == "" && tc.TruststoreCertificates == "" {
		return nil, nil
	}
	return tlsconfig.NewClient(tc, "")
}

// openJWKS opens the JWKS of an OAUTHBEARER listener: a file, reread
// when it changes, or an http(s) endpoint (which config.Load checked
// against sasl.oauthbearer.allowed.urls), fetched now. The endpoint is
// nil for a file; its run must be started by the caller.
func openJWKS(ctx context.Context, cfg *config.Broker, listener string, log *slog.Logger) (keys func() *sasl.KeySet, ep *jwksEndpoint, err error) {
	const m = sasl.OAuthBearer
	loc, err := config.ParseJWKSEndpoint(cfg.MechanismValue(listener, m, "sasl.oauthbearer.jwks.endpoint.url"))
	if err != nil {
		return nil, nil, fmt.Errorf("sasl.oauthbearer.jwks.endpoint.url: %w", err)
	}
	if loc.URL == "" {
		f, err := openJWKSFile(loc.Path)
		if err != nil {
			return nil, nil, fmt.Errorf("sasl.oauthbearer.jwks.endpoint.url: %w", err)
		}
		return f.keys, nil, nil
	}
	// NB: checked by config.Load already; checked again because this is
	// what makes the broker fetch.
	allowed := false
	for _, u := range cfg.SASLOAuthBearerAllowedURLs {
		allowed = allowed || u == loc.URL
	}
	if !allowed {
		return nil, nil, fmt.Errorf("sasl.oauthbearer.jwks.endpoint.url %s is not in sasl.oauthbearer.allowed.urls", loc.URL)
	}
	tlsCfg, err := jwksTLS(cfg.MechanismValue(listener, m, "sasl.jaas.config"))
	if err != nil {
		return nil, nil, fmt.Errorf("listener.name.%s.oauthbearer.sasl.jaas.config: %w", strings.ToLower(listener), err)
	}
	ms := func(name string) time.Duration {
		return time.Duration(cfg.MechanismInt64(listener, m, name, 0)) * time.Millisecond
	}
	ep, err = openJWKSEndpoint(ctx, jwksEndpointConfig{
		URL:        loc.URL,
		TLS:        tlsCfg,
		Refresh:    ms("sasl.oauthbearer.jwks.endpoint.refresh.ms"),
		Backoff:    ms("sasl.oauthbearer.jwks.endpoint.retry.backoff.ms"),
		BackoffMax: ms("sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms"),
		Log:        log,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("sasl.oauthbearer.jwks.endpoint.url: %w", err)
	}
	return ep.keys, ep, nil
}
