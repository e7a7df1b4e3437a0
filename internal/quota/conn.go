package quota

import (
	"errors"
	"fmt"
	"math"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Reasons a ConnLimiter refuses a connection, carried in Decision.Reason.
var (
	ErrMaxConnections           = errors.New("quota: max.connections reached")
	ErrListenerMaxConnections   = errors.New("quota: listener max.connections reached")
	ErrConnectionRate           = errors.New("quota: max.connection.creation.rate exceeded")
	ErrListenerConnectionRate   = errors.New("quota: listener max.connection.creation.rate exceeded")
	ErrMaxConnectionsPerIP      = errors.New("quota: max.connections.per.ip reached")
	ErrIPConnectionRate         = errors.New("quota: ip connection_creation_rate exceeded")
	ErrReleaseWithoutConnection = errors.New("quota: release of a connection that was not accepted")
)

// ConnConfig configures a ConnLimiter with Kafka's broker settings. A zero count or rate
// means unlimited (Kafka's default is Int.MaxValue for all of them).
type ConnConfig struct {
	MaxConnections int            // max.connections, broker-wide
	PerListener    map[string]int // listener.name.X.max.connections, by listener name
	// MaxConnectionsPerIP is max.connections.per.ip. A negative value refuses every address
	// that has no override: Kafka's max.connections.per.ip=0, which zero cannot say here.
	MaxConnectionsPerIP int
	// PerIPOverrides is max.connections.per.ip.overrides (see ParseOverrides), by address.
	// An override of 0 refuses every connection from that address.
	PerIPOverrides map[string]int
	// MaxConnectionCreationRate is max.connection.creation.rate, broker-wide.
	MaxConnectionCreationRate float64
	// ListenerCreationRate is listener.name.X.max.connection.creation.rate.
	ListenerCreationRate map[string]float64
	// InterBrokerListener names the inter-broker listener. When more than one listener is
	// listed in Listeners it is exempt from the broker-wide count and rate (KIP-402).
	InterBrokerListener string
	Listeners           []string
	// Window is the rate window (quota.window.num, quota.window.size.seconds).
	Window WindowConfig
	// IPRates supplies connection_creation_rate per ip and for the default ip entity
	// (KIP-612). nil means no ip rate limits; replace it with ConnLimiter.SetImage.
	IPRates *Image
}

// Verdict is what the acceptor does with a new connection.
type Verdict uint8

const (
	// Accept: the connection is counted; call Release when it closes.
	Accept Verdict = iota
	// Reject: close the connection; it is not counted. For the per-ip rate Kafka delays the
	// close by Decision.Wait so that the client cannot reconnect at once (KIP-612).
	Reject
	// Delay: a broker-wide or listener limit applies. Kafka blocks the acceptor: hold the
	// connection, wait Decision.Wait (for a count limit, 0: wait until a Release), then call
	// Accept again. Nothing was recorded or counted.
	Delay
)

// Decision is the result of ConnLimiter.Accept.
type Decision struct {
	Verdict Verdict
	Wait    time.Duration // see Verdict
	Reason  error         // one of the ConnLimiter sentinels, nil for Accept
}

// ConnLimiter enforces Kafka's connection limits (ConnectionQuotas in SocketServer.scala):
// broker-wide and per-listener counts and creation rates (KIP-402, KIP-612), the per-ip count
// with overrides, and the per-ip creation rate from connection_creation_rate.
//
// ConnLimiter is safe for concurrent use: one mutex guards the counts and rate sensors, as
// Kafka synchronises on its counts map, because a decision reads and updates several of
// them at once. Accept never blocks; it returns Delay for the caller to wait.
type ConnLimiter struct {
	cfg ConnConfig // immutable after NewConnLimiter, except IPRates under mu

	mu struct {
		sync.Mutex
		total     int
		listeners map[string]int
		ips       map[string]int
		ipRates   *Image
		broker    Rate
		listener  map[string]*Rate
		ip        map[string]*sensor
	}
}

// NewConnLimiter returns a ConnLimiter with no connections. It keeps cfg's PerListener and
// ListenerCreationRate maps; the caller must not change them afterwards.
func NewConnLimiter(cfg ConnConfig) *ConnLimiter {
	cfg.Window = cfg.Window.withDefaults()
	if len(cfg.PerIPOverrides) > 0 {
		o := make(map[string]int, len(cfg.PerIPOverrides))
		for ip, n := range cfg.PerIPOverrides {
			o[canonicalIP(ip)] = n
		}
		cfg.PerIPOverrides = o
	}
	l := &ConnLimiter{cfg: cfg}
	l.mu.listeners = make(map[string]int)
	l.mu.ips = make(map[string]int)
	l.mu.listener = make(map[string]*Rate)
	l.mu.ip = make(map[string]*sensor)
	l.mu.ipRates = cfg.IPRates
	return l
}

// SetImage replaces the quota image that supplies ip connection rates.
func (l *ConnLimiter) SetImage(img *Image) {
	l.mu.Lock()
	l.mu.ipRates = img
	l.mu.Unlock()
}

func canonicalIP(ip string) string {
	if a, err := netip.ParseAddr(ip); err == nil {
		return a.String()
	}
	return ip
}

// protected reports whether listener is exempt from broker-wide limits: the inter-broker
// listener, when the broker has more than one listener.
func (l *ConnLimiter) protected(listener string) bool {
	return l.cfg.InterBrokerListener != "" && listener == l.cfg.InterBrokerListener && len(l.cfg.Listeners) > 1
}

func limitOK(count, max int) bool { return max <= 0 || count < max }

// recordRate records one connection into r and returns the throttle time, capped at one
// window sample as ConnectionQuotas caps it.
func (l *ConnLimiter) recordRate(r *Rate, now time.Time, quota float64) time.Duration {
	r.Record(l.cfg.Window, now, 1)
	if quota <= 0 {
		return 0
	}
	obs, win := r.Measure(l.cfg.Window, now)
	return min(ThrottleTime(obs, quota, win), l.cfg.Window.Size)
}

// Accept decides on a new connection from ip on listener at now, in Kafka's order:
//
//  1. Record it in the broker-wide (unless protected) and listener creation rates. If
//     either is over its quota, or the listener or broker-wide count is at its maximum,
//     un-record and return Delay.
//  2. If ip has a connection_creation_rate and this connection exceeds it, un-record it
//     everywhere and return Reject with the throttle time as Wait.
//  3. If ip is at its max.connections.per.ip (or override), return Reject at once; the
//     connection stays recorded in the rates, as in Kafka.
//  4. Count the connection and return Accept.
func (l *ConnLimiter) Accept(now time.Time, listener, ip string) Decision {
	ip = canonicalIP(ip)
	protected := l.protected(listener)
	l.mu.Lock()
	defer l.mu.Unlock()

	lr := l.mu.listener[listener]
	if lr == nil {
		lr = &Rate{}
		l.mu.listener[listener] = lr
	}
	var wait time.Duration
	var reason error
	if !protected {
		if th := l.recordRate(&l.mu.broker, now, l.cfg.MaxConnectionCreationRate); th > 0 {
			wait, reason = th, ErrConnectionRate
		}
	}
	if th := l.recordRate(lr, now, l.cfg.ListenerCreationRate[listener]); th > wait {
		wait, reason = th, ErrListenerConnectionRate
	}
	if reason == nil {
		switch {
		case !limitOK(l.mu.listeners[listener], l.cfg.PerListener[listener]):
			reason = ErrListenerMaxConnections
		case !protected && !limitOK(l.mu.total, l.cfg.MaxConnections):
			reason = ErrMaxConnections
		}
	}
	unrecord := func() {
		if !protected {
			l.mu.broker.Record(l.cfg.Window, now, -1)
		}
		lr.Record(l.cfg.Window, now, -1)
	}
	if reason != nil {
		unrecord()
		return Decision{Verdict: Delay, Wait: wait, Reason: reason}
	}

	if q, ok := l.mu.ipRates.IPConnectionRate(ip); ok {
		s := l.mu.ip[ip]
		if s == nil {
			s = &sensor{}
			l.mu.ip[ip] = s
		}
		s.last = now.UnixNano()
		if th := l.recordRate(&s.rate, now, q); th > 0 {
			s.rate.Record(l.cfg.Window, now, -1)
			unrecord()
			return Decision{Verdict: Reject, Wait: th, Reason: ErrIPConnectionRate}
		}
	}

	max := l.cfg.MaxConnectionsPerIP
	if o, ok := l.cfg.PerIPOverrides[ip]; ok {
		if o <= 0 {
			return Decision{Verdict: Reject, Reason: ErrMaxConnectionsPerIP}
		}
		max = o
	}
	if max < 0 || !limitOK(l.mu.ips[ip], max) {
		return Decision{Verdict: Reject, Reason: ErrMaxConnectionsPerIP}
	}
	l.mu.ips[ip]++
	l.mu.listeners[listener]++
	l.mu.total++
	return Decision{Verdict: Accept}
}

// Release uncounts a connection that Accept accepted, when it closes. It fails with
// ErrReleaseWithoutConnection if ip has no counted connection on listener's broker.
func (l *ConnLimiter) Release(listener, ip string) error {
	ip = canonicalIP(ip)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.ips[ip] <= 0 || l.mu.listeners[listener] <= 0 {
		return fmt.Errorf("%w: %s on %s", ErrReleaseWithoutConnection, ip, listener)
	}
	if l.mu.ips[ip]--; l.mu.ips[ip] == 0 {
		delete(l.mu.ips, ip)
	}
	l.mu.listeners[listener]--
	l.mu.total--
	return nil
}

// MaxConnectionsExceeded reports whether the broker is over max.connections and listener
// is not the protected one. Kafka's processors then close the least recently used
// connection of such a listener, one per poll, because the inter-broker listener may go
// past the broker-wide limit.
func (l *ConnLimiter) MaxConnectionsExceeded(listener string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cfg.MaxConnections > 0 && l.mu.total > l.cfg.MaxConnections && !l.protected(listener)
}

// Count returns the connections counted for ip.
func (l *ConnLimiter) Count(ip string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.ips[canonicalIP(ip)]
}

// Expire drops per-ip rate sensors not used for DefaultInactiveExpiry and returns how many.
func (l *ConnLimiter) Expire(now time.Time) int {
	cutoff := now.UnixNano() - int64(DefaultInactiveExpiry)
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for ip, s := range l.mu.ip {
		if s.last < cutoff {
			delete(l.mu.ip, ip)
			n++
		}
	}
	return n
}

// ParseOverrides parses max.connections.per.ip.overrides, "host:count,host:count", into a
// map by canonical address. Whitespace around entries is ignored; the count follows the
// last colon, so IPv6 addresses need no brackets. It fails with ErrInvalidOverride on an
// entry without a colon, a count that is not a non-negative integer, or a host that is not
// an IP address (Kafka resolves host names; this package does no IO).
func ParseOverrides(s string) (map[string]int, error) {
	out := make(map[string]int)
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for _, ent := range strings.Split(s, ",") {
		ent = strings.TrimSpace(ent)
		i := strings.LastIndexByte(ent, ':')
		if i < 0 {
			return nil, fmt.Errorf("%w: %q: want host:count", ErrInvalidOverride, ent)
		}
		host := strings.Trim(strings.TrimSpace(ent[:i]), "[]")
		n, err := strconv.Atoi(strings.TrimSpace(ent[i+1:]))
		if err != nil || n < 0 || n > math.MaxInt32 {
			return nil, fmt.Errorf("%w: %q: count must be a non-negative integer", ErrInvalidOverride, ent)
		}
		a, err := netip.ParseAddr(host)
		if err != nil {
			return nil, fmt.Errorf("%w: %q: %w", ErrInvalidOverride, ent, err)
		}
		out[a.String()] = n
	}
	return out, nil
}
