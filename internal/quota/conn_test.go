package quota

import (
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// connStep is one Accept (or Release, when release is set) and the decision it must get.
type connStep struct {
	at       time.Duration
	listener string
	ip       string
	release  bool
	times    int // repeat the step this many times (0 means 1)
	want     Decision
}

func accept() Decision { return Decision{Verdict: Accept} }
func reject(err error, wait time.Duration) Decision {
	return Decision{Verdict: Reject, Reason: err, Wait: wait}
}
func delay(err error, wait time.Duration) Decision {
	return Decision{Verdict: Delay, Reason: err, Wait: wait}
}

func ipRates(t *testing.T, rates map[string]float64) *Image {
	t.Helper()
	c := make(Config)
	for ip, r := range rates {
		e := Entity{IP: Named(ip)}
		if ip == DefaultName {
			e = Entity{IP: Default()}
		}
		mustAlter(t, c, e, KeyConnectionCreationRate, r)
	}
	return NewImage(c)
}

// Reference: KIP-402 (listener and broker-wide max.connections, inter-broker listener
// exempt), KIP-612 (connection creation rates, per ip connection_creation_rate), Kafka
// ConnectionQuotas (max.connections.per.ip and overrides, delay capped at one window sample).
func TestConnLimiterDecisions(t *testing.T) {
	tests := []struct {
		name  string
		cfg   func(t *testing.T) ConnConfig
		steps []connStep
	}{
		{
			name: "per-ip cap rejects at once and frees on release",
			cfg:  func(*testing.T) ConnConfig { return ConnConfig{MaxConnectionsPerIP: 2} },
			steps: []connStep{
				{ip: "10.0.0.1", times: 2, want: accept()},
				{ip: "10.0.0.1", want: reject(ErrMaxConnectionsPerIP, 0)},
				{ip: "10.0.0.2", want: accept()},
				{ip: "10.0.0.1", release: true},
				{ip: "10.0.0.1", want: accept()},
			},
		},
		{
			name: "per-ip overrides raise, lower and block",
			cfg: func(t *testing.T) ConnConfig {
				o, err := ParseOverrides("10.0.0.1:3, 10.0.0.2:0 ,::1:2")
				if err != nil {
					t.Fatal(err)
				}
				return ConnConfig{MaxConnectionsPerIP: 1, PerIPOverrides: o}
			},
			steps: []connStep{
				{ip: "10.0.0.1", times: 3, want: accept()},
				{ip: "10.0.0.1", want: reject(ErrMaxConnectionsPerIP, 0)},
				{ip: "10.0.0.2", want: reject(ErrMaxConnectionsPerIP, 0)},
				{ip: "0:0::1", times: 2, want: accept()},
				{ip: "::1", want: reject(ErrMaxConnectionsPerIP, 0)},
				{ip: "10.0.0.3", want: accept()},
				{ip: "10.0.0.3", want: reject(ErrMaxConnectionsPerIP, 0)},
			},
		},
		{
			// Kafka's max.connections.per.ip=0: only addresses with an override get in.
			name: "a negative per-ip cap admits only overridden addresses",
			cfg: func(*testing.T) ConnConfig {
				return ConnConfig{MaxConnectionsPerIP: -1, PerIPOverrides: map[string]int{"10.0.0.1": 1}}
			},
			steps: []connStep{
				{ip: "10.0.0.2", want: reject(ErrMaxConnectionsPerIP, 0)},
				{ip: "10.0.0.1", want: accept()},
				{ip: "10.0.0.1", want: reject(ErrMaxConnectionsPerIP, 0)},
			},
		},
		{
			name: "listener cap delays until a release",
			cfg:  func(*testing.T) ConnConfig { return ConnConfig{PerListener: map[string]int{"PLAIN": 1}} },
			steps: []connStep{
				{listener: "PLAIN", ip: "10.0.0.1", want: accept()},
				{listener: "PLAIN", ip: "10.0.0.2", want: delay(ErrListenerMaxConnections, 0)},
				{listener: "SSL", ip: "10.0.0.2", want: accept()},
				{listener: "PLAIN", ip: "10.0.0.1", release: true},
				{listener: "PLAIN", ip: "10.0.0.2", want: accept()},
			},
		},
		{
			name: "broker-wide cap exempts the inter-broker listener",
			cfg: func(*testing.T) ConnConfig {
				return ConnConfig{MaxConnections: 2, InterBrokerListener: "BROKER", Listeners: []string{"CLIENT", "BROKER"}}
			},
			steps: []connStep{
				{listener: "CLIENT", ip: "10.0.0.1", times: 2, want: accept()},
				{listener: "CLIENT", ip: "10.0.0.1", want: delay(ErrMaxConnections, 0)},
				{listener: "BROKER", ip: "10.0.0.9", times: 2, want: accept()},
			},
		},
		{
			name: "a lone inter-broker listener is not exempt",
			cfg: func(*testing.T) ConnConfig {
				return ConnConfig{MaxConnections: 1, InterBrokerListener: "BROKER", Listeners: []string{"BROKER"}}
			},
			steps: []connStep{
				{listener: "BROKER", ip: "10.0.0.9", want: accept()},
				{listener: "BROKER", ip: "10.0.0.9", want: delay(ErrMaxConnections, 0)},
			},
		},
		{
			// 20 connections at t0 measure 20 / 10 s = 2/s; the 21st 2.1/s: (2.1-2)/2 * 10 s.
			// It is un-recorded, so at +500 ms 21 / 10.5 s = 2/s is accepted.
			name: "broker creation rate delays by Kafka's formula",
			cfg:  func(*testing.T) ConnConfig { return ConnConfig{MaxConnectionCreationRate: 2} },
			steps: []connStep{
				{ip: "10.0.0.1", times: 20, want: accept()},
				{ip: "10.0.0.2", want: delay(ErrConnectionRate, 500*time.Millisecond)},
				{ip: "10.0.0.2", want: delay(ErrConnectionRate, 500*time.Millisecond)},
				{at: 500 * time.Millisecond, ip: "10.0.0.2", want: accept()},
			},
		},
		{
			// 2/10 s = 0.2/s against 0.1: 10 s, capped at one window sample.
			name: "creation rate delay is capped at quota.window.size.seconds",
			cfg:  func(*testing.T) ConnConfig { return ConnConfig{MaxConnectionCreationRate: 0.1} },
			steps: []connStep{
				{ip: "10.0.0.1", want: accept()},
				{ip: "10.0.0.1", want: delay(ErrConnectionRate, time.Second)},
			},
		},
		{
			name: "listener creation rate, inter-broker listener exempt from the broker rate",
			cfg: func(*testing.T) ConnConfig {
				return ConnConfig{MaxConnectionCreationRate: 1, ListenerCreationRate: map[string]float64{"CLIENT": 0.5},
					InterBrokerListener: "BROKER", Listeners: []string{"CLIENT", "BROKER"}}
			},
			steps: []connStep{
				{listener: "CLIENT", ip: "10.0.0.1", times: 5, want: accept()},
				// 6 / 10 s = 0.6 against 0.5: 0.2 * 10 s = 2 s, capped.
				{listener: "CLIENT", ip: "10.0.0.1", want: delay(ErrListenerConnectionRate, time.Second)},
				{listener: "BROKER", ip: "10.0.0.9", times: 30, want: accept()},
			},
		},
		{
			// Window 11 x 10 s: 100 connections at t0 are 1/s; the 101st 1.01/s: 0.01 * 100 s.
			// It is un-recorded, so the 102nd gets the same 1 s, and other ips are unaffected.
			name: "ip creation rate rejects with a delayed close",
			cfg: func(t *testing.T) ConnConfig {
				return ConnConfig{Window: WindowConfig{Samples: 11, Size: 10 * time.Second},
					IPRates: ipRates(t, map[string]float64{DefaultName: 1, "10.0.0.9": 5})}
			},
			steps: []connStep{
				{ip: "10.0.0.1", times: 100, want: accept()},
				{ip: "10.0.0.1", want: reject(ErrIPConnectionRate, time.Second)},
				{ip: "10.0.0.1", want: reject(ErrIPConnectionRate, time.Second)},
				{ip: "10.0.0.2", want: accept()},
				{ip: "10.0.0.9", times: 500, want: accept()},
				{ip: "10.0.0.9", want: reject(ErrIPConnectionRate, 200*time.Millisecond)},
			},
		},
		{
			// The ip-rate refusal un-records the broker rate too: 20 accepted connections
			// fill the broker rate of 2/s whatever the 10 refused attempts in between.
			name: "ip rate refusal does not count against the broker rate",
			cfg: func(t *testing.T) ConnConfig {
				return ConnConfig{MaxConnectionCreationRate: 2, IPRates: ipRates(t, map[string]float64{"10.0.0.2": 1})}
			},
			steps: []connStep{
				{ip: "10.0.0.2", times: 10, want: accept()},
				{ip: "10.0.0.2", times: 10, want: reject(ErrIPConnectionRate, time.Second)},
				{ip: "10.0.0.1", times: 10, want: accept()},
				{ip: "10.0.0.1", want: delay(ErrConnectionRate, 500*time.Millisecond)},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := NewConnLimiter(tt.cfg(t))
			for i, s := range tt.steps {
				n := max(s.times, 1)
				for j := 0; j < n; j++ {
					if s.release {
						if err := l.Release(s.listener, s.ip); err != nil {
							t.Fatalf("step %d: Release: %v", i, err)
						}
						continue
					}
					got := l.Accept(at(s.at), s.listener, s.ip)
					if !reflect.DeepEqual(got, s.want) {
						t.Fatalf("step %d #%d: Accept(%s, %s) = %+v, want %+v", i, j, s.listener, s.ip, got, s.want)
					}
				}
			}
		})
	}
}

func TestMaxConnectionsExceededSparesTheInterBrokerListener(t *testing.T) {
	l := NewConnLimiter(ConnConfig{MaxConnections: 1, InterBrokerListener: "B", Listeners: []string{"C", "B"}})
	if d := l.Accept(at(0), "C", "10.0.0.1"); d.Verdict != Accept {
		t.Fatal(d)
	}
	if d := l.Accept(at(0), "B", "10.0.0.2"); d.Verdict != Accept {
		t.Fatal(d)
	}
	if !l.MaxConnectionsExceeded("C") || l.MaxConnectionsExceeded("B") {
		t.Fatalf("exceeded: C %v B %v; want true false", l.MaxConnectionsExceeded("C"), l.MaxConnectionsExceeded("B"))
	}
}

func TestReleaseWithoutAcceptFails(t *testing.T) {
	l := NewConnLimiter(ConnConfig{})
	if err := l.Release("C", "10.0.0.1"); !errors.Is(err, ErrReleaseWithoutConnection) {
		t.Fatalf("Release = %v", err)
	}
	l.Accept(at(0), "C", "10.0.0.1")
	if err := l.Release("D", "10.0.0.1"); !errors.Is(err, ErrReleaseWithoutConnection) {
		t.Fatalf("Release on another listener = %v", err)
	}
	if err := l.Release("C", "10.0.0.1"); err != nil || l.Count("10.0.0.1") != 0 {
		t.Fatalf("Release = %v, count %d", err, l.Count("10.0.0.1"))
	}
}

func TestSetImageChangesIPRates(t *testing.T) {
	l := NewConnLimiter(ConnConfig{})
	for i := 0; i < 20; i++ {
		if d := l.Accept(at(0), "C", "10.0.0.1"); d.Verdict != Accept {
			t.Fatalf("#%d without ip rates: %+v", i, d)
		}
	}
	l.SetImage(ipRates(t, map[string]float64{DefaultName: 1}))
	if d := l.Accept(at(0), "C", "10.0.0.2"); d.Verdict != Accept {
		t.Fatalf("first under the new rate: %+v", d)
	}
	if n := l.Expire(at(time.Hour + time.Millisecond)); n != 1 {
		t.Fatalf("Expire dropped %d ip sensors, want 1", n)
	}
}

// Reference: Kafka max.connections.per.ip.overrides ("hostName:100,127.0.0.1:200").
func TestParseOverrides(t *testing.T) {
	tests := []struct {
		in   string
		want map[string]int
		err  bool
	}{
		{"", map[string]int{}, false},
		{"127.0.0.1:200", map[string]int{"127.0.0.1": 200}, false},
		{" 10.0.0.1 : 5 ,10.0.0.2:0", map[string]int{"10.0.0.1": 5, "10.0.0.2": 0}, false},
		{"2001:db8::0001:7,[::1]:3", map[string]int{"2001:db8::1": 7, "::1": 3}, false},
		{"10.0.0.1", nil, true},
		{"10.0.0.1:-1", nil, true},
		{"10.0.0.1:x", nil, true},
		{"broker.example:3", nil, true},
		{"10.0.0.1:1,", nil, true},
	}
	for _, tt := range tests {
		got, err := ParseOverrides(tt.in)
		if (err != nil) != tt.err || (err != nil && !errors.Is(err, ErrInvalidOverride)) {
			t.Errorf("ParseOverrides(%q) err = %v, want error %v", tt.in, err, tt.err)
			continue
		}
		if !tt.err && !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseOverrides(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

// TestConnLimiterConcurrentNeverExceedsPerIPCap runs under -race: concurrent accepts and
// releases never hold more than the per-ip cap, and every count returns to zero.
func TestConnLimiterConcurrentNeverExceedsPerIPCap(t *testing.T) {
	const perIP = 3
	l := NewConnLimiter(ConnConfig{MaxConnectionsPerIP: perIP, MaxConnections: 1000})
	var held [4]atomic.Int32
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ipIdx := w % len(held)
			ip := fmt.Sprintf("10.0.0.%d", ipIdx)
			for i := 0; i < 300; i++ {
				d := l.Accept(at(time.Duration(i)*time.Second), "C", ip)
				if d.Verdict != Accept {
					continue
				}
				if n := held[ipIdx].Add(1); n > perIP {
					t.Errorf("%s holds %d connections, cap %d", ip, n, perIP)
				}
				held[ipIdx].Add(-1)
				if err := l.Release("C", ip); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	for i := range held {
		if n := l.Count(fmt.Sprintf("10.0.0.%d", i)); n != 0 {
			t.Fatalf("10.0.0.%d still counts %d", i, n)
		}
	}
}
