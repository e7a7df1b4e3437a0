package server

import (
	"net"
	"time"
)

// Admission is a ConnLimits decision on a new connection.
type Admission uint8

const (
	// Admit: serve the connection; it is counted until Release.
	Admit Admission = iota
	// Refuse: close the connection, after the returned wait if it is not 0
	// (so that a client over its connection rate cannot reconnect at once,
	// KIP-612). It is not counted.
	Refuse
	// Hold: a broker-wide or listener limit applies. The acceptor holds the
	// connection and accepts no other on its listener; it asks again after
	// the returned wait, or, for a wait of 0, once a connection is released.
	Hold
)

// ConnLimits limits connections in the acceptor, as Kafka's
// ConnectionQuotas does (max.connections, max.connections.per.ip,
// max.connection.creation.rate, per listener and per ip). The node adapts
// quota.ConnLimiter to it. Implementations must be safe for concurrent use
// and must not block.
type ConnLimits interface {
	// Accept decides on a connection from ip on listener at now.
	Accept(now time.Time, listener, ip string) (Admission, time.Duration)
	// Release uncounts a connection Accept admitted, once it has closed.
	Release(listener, ip string) error
}

// holdRecheck bounds a Hold without a wait: the acceptor asks again at
// least this often, in case a Release it was not told about freed a slot.
const holdRecheck = 100 * time.Millisecond

// admit applies the connection limits to a new socket on the listener lc.
// It reports whether the socket is to be served, and with which ip counted
// (""), when it was admitted without limits). It blocks while the limits
// hold the connection, and closes a refused socket itself. It returns false
// when the server stops meanwhile.
func (s *Server) admit(nc net.Conn, lc *ListenerConfig) (ip string, ok bool) {
	lim := s.cfg.Connections
	if lim == nil {
		return "", true
	}
	ta, isTCP := nc.RemoteAddr().(*net.TCPAddr)
	if !isTCP {
		return "", true
	}
	ip = ta.IP.String()
	for {
		adm, wait := lim.Accept(time.Now(), lc.Name, ip)
		switch adm {
		case Admit:
			return ip, true
		case Refuse:
			s.connsRefused.Add(1)
			s.log.Info("server: connection refused by connection limits", "listener", lc.Name, "remote", ip, "close_in", wait)
			s.closeAfter(nc, wait)
			return "", false
		}
		if wait <= 0 {
			wait = holdRecheck
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-s.released:
			t.Stop()
		case <-s.ctx.Done():
			t.Stop()
			nc.Close()
			return "", false
		}
		if s.isStopping() {
			nc.Close()
			return "", false
		}
	}
}

// closeAfter closes a refused socket after d, or at once when d is 0 or
// the server stops first.
func (s *Server) closeAfter(nc net.Conn, d time.Duration) {
	if d <= 0 {
		nc.Close()
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.stopping {
		nc.Close()
		return
	}
	s.goFunc(func() {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-s.ctx.Done():
		}
		nc.Close()
	})
}

// release uncounts a closed connection and wakes an acceptor holding one.
func (s *Server) release(c *conn) {
	if c.limitIP == "" {
		return
	}
	if err := s.cfg.Connections.Release(c.lc.Name, c.limitIP); err != nil {
		s.log.Error("server: connection limits", "err", err)
	}
	select {
	case s.released <- struct{}{}:
	default:
	}
}
