package server

import (
	"sync"
	"testing"
	"time"
)

// countLimits admits at most perIP connections per ip (then refuses) and
// at most total connections overall (then holds).
type countLimits struct {
	perIP, total int
	mu           sync.Mutex
	ips          map[string]int
	n            int
	released     int
}

func (l *countLimits) Accept(_ time.Time, _, ip string) (Admission, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.total > 0 && l.n >= l.total {
		return Hold, 0
	}
	if l.perIP > 0 && l.ips[ip] >= l.perIP {
		return Refuse, 0
	}
	l.ips[ip]++
	l.n++
	return Admit, 0
}

func (l *countLimits) Release(_, ip string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ips[ip]--
	l.n--
	l.released++
	return nil
}

func (l *countLimits) count() (open, released int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n, l.released
}

// A refused connection is closed at once and never served; the admitted
// ones are, and closing one frees its slot.
func TestConnLimitsRefuseClosesAndCloseReleases(t *testing.T) {
	lim := &countLimits{perIP: 2, ips: map[string]int{}}
	s, addr := start(t, Config{Connections: lim}, newTestHandler())
	a, b := dial(t, addr), dial(t, addr)
	for i, c := range []*client{a, b} {
		c.write(encode(1, metadata("x"), 12))
		if corr, _ := c.readMetadata(12); corr != 1 {
			t.Fatalf("conn %d: corr %d", i, corr)
		}
	}
	third := dial(t, addr)
	third.write(encode(1, metadata("x"), 12))
	third.expectClosed(5 * time.Second)
	if st := s.Stats(); st.ConnectionsRefused != 1 {
		t.Errorf("ConnectionsRefused %d, want 1", st.ConnectionsRefused)
	}
	a.nc.Close()
	waitFor(t, 5*time.Second, "release of the closed connection", func() bool { _, r := lim.count(); return r == 1 })
	d := dial(t, addr)
	d.write(encode(2, metadata("y"), 12))
	if corr, _ := d.readMetadata(12); corr != 2 {
		t.Fatalf("after a release: corr %d", corr)
	}
}

// A held connection is not served until a slot frees, and then is.
func TestConnLimitsHoldWaitsForARelease(t *testing.T) {
	lim := &countLimits{total: 1, ips: map[string]int{}}
	_, addr := start(t, Config{Connections: lim}, newTestHandler())
	a := dial(t, addr)
	a.write(encode(1, metadata("x"), 12))
	a.readMetadata(12)

	b := dial(t, addr)
	b.write(encode(7, metadata("held"), 12))
	b.nc.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	var one [1]byte
	if n, err := b.r.Read(one[:]); n != 0 || !isTimeout(err) {
		t.Fatalf("held connection answered (%d bytes, %v)", n, err)
	}
	a.nc.Close()
	if corr, names := b.readMetadata(12); corr != 7 || names[0] != "held" {
		t.Fatalf("after the release: corr %d %v", corr, names)
	}
}
