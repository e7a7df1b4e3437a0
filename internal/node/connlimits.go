package node

import (
	"fmt"
	"math"
	"strings"
	"time"

	"samsa/internal/config"
	"samsa/internal/quota"
	"samsa/internal/server"
)

// connLimiter builds the connection limiter of cfg's max.connections,
// max.connections.per.ip (and overrides) and max.connection.creation.rate,
// broker-wide and per listener (listener.name.<l>.max.connections, ...).
// Kafka's default of Int.MaxValue means no limit.
func connLimiter(cfg *config.Broker) (*quota.ConnLimiter, error) {
	overrides, err := quota.ParseOverrides(cfg.MaxConnectionsPerIPOverrides)
	if err != nil {
		return nil, fmt.Errorf("max.connections.per.ip.overrides: %w", err)
	}
	cc := quota.ConnConfig{
		MaxConnections:            limit(int64(cfg.MaxConnections)),
		MaxConnectionsPerIP:       limit(int64(cfg.MaxConnectionsPerIP)),
		PerIPOverrides:            overrides,
		MaxConnectionCreationRate: float64(limit(int64(cfg.MaxConnectionCreationRate))),
		PerListener:               map[string]int{},
		ListenerCreationRate:      map[string]float64{},
		InterBrokerListener:       cfg.InterBrokerListenerName,
		Window:                    quota.WindowConfig{Samples: int(cfg.QuotaWindowNum), Size: time.Duration(cfg.QuotaWindowSizeSeconds) * time.Second},
	}
	if cfg.MaxConnectionsPerIP == 0 {
		// Kafka's max.connections.per.ip=0: only the overridden addresses.
		cc.MaxConnectionsPerIP = -1
	}
	for _, l := range cfg.Listeners {
		cc.Listeners = append(cc.Listeners, l.Name)
		// Only a listener's own setting limits the listener; the plain
		// setting is the broker-wide one.
		prefix := "listener.name." + strings.ToLower(l.Name) + "."
		if _, ok := cfg.Raw[prefix+"max.connections"]; ok {
			cc.PerListener[l.Name] = limit(cfg.ListenerInt64(l.Name, "max.connections", math.MaxInt32))
		}
		if _, ok := cfg.Raw[prefix+"max.connection.creation.rate"]; ok {
			cc.ListenerCreationRate[l.Name] = float64(limit(cfg.ListenerInt64(l.Name, "max.connection.creation.rate", math.MaxInt32)))
		}
	}
	return quota.NewConnLimiter(cc), nil
}

// limit converts a Kafka connection limit to ConnConfig's: Int.MaxValue
// (the default) is no limit, 0.
func limit(n int64) int {
	if n >= math.MaxInt32 {
		return 0
	}
	return int(n)
}

// connLimits adapts quota.ConnLimiter to server.ConnLimits.
type connLimits struct{ l *quota.ConnLimiter }

func (c connLimits) Accept(now time.Time, listener, ip string) (server.Admission, time.Duration) {
	d := c.l.Accept(now, listener, ip)
	switch d.Verdict {
	case quota.Accept:
		return server.Admit, 0
	case quota.Reject:
		return server.Refuse, d.Wait
	}
	return server.Hold, d.Wait
}

func (c connLimits) Release(listener, ip string) error { return c.l.Release(listener, ip) }
