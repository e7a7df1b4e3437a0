package node

import (
	"errors"
	"fmt"
	"net"
	"strings"

	"samsa/internal/config"
	"samsa/internal/console"
	"samsa/internal/tlsconfig"
)

// errNoConsoleListener is why a console is not served: no Kafka listener
// it can use as a client.
var errNoConsoleListener = errors.New("console: no Kafka listener it can log in to (PLAINTEXT, SSL without ssl.client.auth=required, or SASL with PLAIN, SCRAM or OAUTHBEARER)")

// consoleListener picks the Kafka listener the console's clients use.
// A SASL listener with PLAIN, SCRAM or OAUTHBEARER comes first, so that users log in
// and the ACLs see them as themselves; else a PLAINTEXT listener, then an
// SSL listener that does not require a client certificate, where the
// console acts as the listener's anonymous principal. mTLS listeners
// that require a certificate are not used: the console has no
// certificate of the user's to present.
func consoleListener(cfg *config.Broker) (i int, mechs []string, err error) {
	for i, l := range cfg.SecureListeners {
		if !l.SASL() {
			continue
		}
		for _, m := range cfg.SASLMechanisms(l.Name) {
			if m == console.PLAIN || m == console.ScramSHA256 || m == console.ScramSHA512 || m == console.OAuthBearer {
				mechs = append(mechs, m)
			}
		}
		if len(mechs) > 0 {
			return i, mechs, nil
		}
	}
	for _, want := range []string{"PLAINTEXT", "SSL"} {
		for i, l := range cfg.SecureListeners {
			if l.SecurityProtocol != want {
				continue
			}
			if want == "SSL" && strings.EqualFold(cfg.ListenerValue(l.Name, "ssl.client.auth"), "required") {
				continue
			}
			return i, nil, nil
		}
	}
	return 0, nil, errNoConsoleListener
}

// startConsole builds the console for this node, or returns nil when
// console.enabled (or the loopback default) says not to serve it.
func (n *Node) startConsole() (*console.Server, error) {
	cfg := n.cfg
	if addr, on := cfg.ConsoleAddr(); !on {
		if addr != "" && cfg.ConsoleEnabled == nil {
			n.log.Info("console: off on a listener that is not loopback; set console.enabled=true to serve it", "addr", addr)
		}
		return nil, nil
	}
	i, mechs, err := consoleListener(cfg)
	if err != nil {
		return nil, err
	}
	l := cfg.SecureListeners[i]
	addr := ""
	for j, ll := range cfg.Listeners {
		if ll.Name == l.Name && j < len(n.lns) {
			addr = n.lns[j].Addr().String()
		}
	}
	// A listener bound to every address is dialed on loopback.
	if host, port, err := net.SplitHostPort(addr); err == nil {
		if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
			addr = net.JoinHostPort("127.0.0.1", port)
		}
	}
	cc := console.Config{
		Bootstrap: []string{addr}, Mechanisms: mechs, ReadOnly: cfg.ConsoleReadOnly,
		NodeID: cfg.NodeID, Version: n.version.Version, Counters: n.consoleCounters,
		Logger: n.log.With(PkgKey, "admin"),
	}
	if cc.Version == "" {
		cc.Version = "devel"
	}
	if l.TLS() {
		// The server is verified with the listener's trust store; the
		// broker's own key store is not offered, so that the console
		// never acts with the broker's identity.
		tc := listenerTLS(cfg, l.Name)
		tc.KeystoreLocation, tc.KeystoreCertificateChain, tc.KeystoreKey, tc.KeyPassword, tc.KeystoreType = "", "", "", "", ""
		tc.ClientAuth = ""
		if cc.TLS, err = tlsconfig.NewClient(tc, ""); err != nil {
			return nil, fmt.Errorf("console: listener %s: %w", l.Name, err)
		}
	}
	return console.New(cc)
}

// consoleCounters sums the traffic counters of the partitions hosted
// here, for the console's throughput charts.
func (n *Node) consoleCounters() console.Counters {
	c := console.Counters{ByTopic: map[string]console.TopicCounters{}}
	for _, p := range n.broker.Replicas().Partitions() {
		t := &p.Traffic
		ri, bi, ro, bo := t.RecordsIn.Load(), t.BytesIn.Load(), t.RecordsOut.Load(), t.BytesOut.Load()
		c.RecordsIn += ri
		c.BytesIn += bi
		c.RecordsOut += ro
		c.BytesOut += bo
		tc := c.ByTopic[p.TP.Topic]
		tc.RecordsIn += ri
		tc.BytesIn += bi
		tc.RecordsOut += ro
		tc.BytesOut += bo
		c.ByTopic[p.TP.Topic] = tc
	}
	return c
}

// ConsoleURL returns the address of the web console, or "" when it is
// not served.
func (n *Node) ConsoleURL() string {
	if n.console == nil {
		return ""
	}
	var addr string
	switch {
	case n.consoleSrv != nil:
		addr = n.consoleSrv.Addr()
	case n.admin != nil:
		addr = n.admin.Addr()
	default:
		return ""
	}
	if host, port, err := net.SplitHostPort(addr); err == nil {
		if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
			addr = net.JoinHostPort("localhost", port)
		}
	}
	return "http://" + addr + "/console/"
}
