package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"path"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// DefaultEtcdConnectTimeout is how long Open waits for etcd's first answer
// when Config.EtcdConnectTimeout is zero. It is Kafka's default
// zookeeper.connection.timeout.ms.
const DefaultEtcdConnectTimeout = 18 * time.Second

const (
	// etcdDialTimeout bounds clientv3.New's own requests (authentication).
	etcdDialTimeout = 5 * time.Second
	// diagnoseTimeout bounds each step of diagnose: the connect, the TLS
	// handshake, and the wait for a refusal of the client certificate.
	diagnoseTimeout = 2 * time.Second
)

// connectEtcd connects to etcd at endpoints, with the TLS and authentication
// of cfg: for an external etcd (cfg.EtcdEndpoints set), or TLS alone for an
// embedded member with cfg.Embedded.ClientTLS. A non-zero autoSync
// refreshes the endpoints from the member list at that interval.
//
// It blocks until etcd answers a first read, cfg.EtcdConnectTimeout passes
// or ctx ends. etcd's client retries a failed connection or TLS handshake
// until the request's deadline and then reports only the deadline, so on
// failure connectEtcd dials the endpoints itself and adds what it found (a
// refused connection, a certificate the servers do not accept, ...) to the
// error.
func connectEtcd(ctx context.Context, cfg Config, endpoints []string, autoSync time.Duration) (*clientv3.Client, error) {
	if err := checkClientSecurity(cfg); err != nil {
		return nil, err
	}
	if err := checkEndpointSchemes(endpoints, cfg.EtcdTLS != nil); err != nil {
		return nil, err
	}
	timeout := cfg.EtcdConnectTimeout
	if timeout <= 0 {
		timeout = DefaultEtcdConnectTimeout
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:            endpoints,
		AutoSyncInterval:     autoSync,
		DialTimeout:          etcdDialTimeout,
		DialKeepAliveTime:    10 * time.Second,
		DialKeepAliveTimeout: 5 * time.Second,
		TLS:                  cfg.EtcdTLS,
		Username:             cfg.EtcdUsername,
		Password:             cfg.EtcdPassword,
		Logger:               zap.NewNop(),
		DialOptions:          etcdDialOptions(cfg.EtcdObserver),
	})
	// why diagnoses a failure, unless the caller gave up; the caller's
	// deadline may have come first, and the diagnosis has its own.
	why := func() string {
		if errors.Is(ctx.Err(), context.Canceled) {
			return ""
		}
		return diagnose(context.WithoutCancel(ctx), endpoints, cfg.EtcdTLS)
	}
	if err != nil {
		// With a user name, New authenticates, which is the first request.
		return nil, fmt.Errorf("cluster: connect to etcd %s: %w%s", strings.Join(endpoints, ","), err, why())
	}
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if _, err = cli.Get(pctx, clusterIDKey); err == nil {
		return cli, nil
	}
	_ = cli.Close()
	if errors.Is(ctx.Err(), context.Canceled) {
		return nil, fmt.Errorf("cluster: connect to etcd %s: %w", strings.Join(endpoints, ","), ctx.Err())
	}
	return nil, fmt.Errorf("cluster: etcd %s did not answer within %s: %w%s", strings.Join(endpoints, ","), timeout, err, why())
}

// checkClientSecurity refuses client TLS and credentials that do not fit
// the etcd cfg names: an embedded member serving plain text gets no TLS,
// one serving TLS needs it, and etcd users and passwords are for an
// external etcd only (an embedded member knows its clients by their
// certificates).
func checkClientSecurity(cfg Config) error {
	if len(cfg.EtcdEndpoints) > 0 {
		return nil
	}
	switch {
	case cfg.EtcdUsername != "" || cfg.EtcdPassword != "":
		return fmt.Errorf("%w: etcd user and password apply only to an external etcd (Config.EtcdEndpoints); an embedded member knows its clients by their certificates (Embedded.ClientTLS)", ErrEtcdConfig)
	case cfg.EtcdTLS != nil && cfg.Embedded.ClientTLS == nil:
		return fmt.Errorf("%w: Config.EtcdTLS is set but the embedded member serves plain text (no Embedded.ClientTLS)", ErrEtcdConfig)
	case cfg.EtcdTLS == nil && cfg.Embedded.ClientTLS != nil:
		return fmt.Errorf("%w: the embedded member serves TLS (Embedded.ClientTLS) but Config.EtcdTLS is nil", ErrEtcdConfig)
	}
	return nil
}

// checkEndpointSchemes refuses endpoints for which etcd's client would not
// do what cfg asks: it drops TLS for http:// even when given a TLS
// configuration, and dials every endpoint with the first one's scheme.
func checkEndpointSchemes(endpoints []string, withTLS bool) error {
	var secure, plain string
	for _, ep := range endpoints {
		switch s, _ := endpointTarget(ep); s {
		case "https", "unixs":
			secure = ep
		case "http":
			plain = ep
		case "unix":
			if withTLS {
				plain = ep
			}
		}
	}
	switch {
	case secure != "" && plain != "":
		return fmt.Errorf("%w: etcd endpoints %s and %s: TLS and plain text mixed", ErrEtcdConfig, secure, plain)
	case withTLS && plain != "":
		return fmt.Errorf("%w: etcd endpoint %s is plain text but TLS is configured: write it https:// or unixs://", ErrEtcdConfig, plain)
	}
	return nil
}

// endpointTarget splits an etcd endpoint into its scheme ("" for a bare
// host:port) and the address to dial: host:port, or a socket path for
// unix and unixs.
func endpointTarget(ep string) (scheme, addr string) {
	for _, s := range []string{"unixs", "unix"} {
		if rest, ok := strings.CutPrefix(ep, s+":"); ok {
			return s, strings.TrimPrefix(rest, "//")
		}
	}
	if !strings.Contains(ep, "://") {
		return "", ep
	}
	u, err := url.Parse(ep)
	if err != nil {
		return "", ep
	}
	return strings.ToLower(u.Scheme), u.Host
}

// diagnose dials every endpoint directly, as etcd's client would, and
// returns what went wrong as text to append to an error: "" when every
// endpoint accepted a connection (and with TLS, the handshake and the
// client certificate) or ctx ended. It blocks for at most two
// diagnoseTimeouts per endpoint.
func diagnose(ctx context.Context, endpoints []string, cfg *tls.Config) string {
	var out []string
	for _, ep := range endpoints {
		if ctx.Err() != nil {
			return ""
		}
		if err := probeEndpoint(ctx, ep, cfg); err != nil {
			out = append(out, ep+": "+err.Error())
		}
	}
	if len(out) == 0 {
		return ""
	}
	return " (" + strings.Join(out, "; ") + ")"
}

// probeEndpoint connects to ep and, for TLS, completes a handshake with cfg
// (the system's roots when nil) and waits briefly for the server to refuse
// the client certificate: in TLS 1.3 the server checks it only after the
// client's handshake has finished, and says so with an alert.
func probeEndpoint(ctx context.Context, ep string, cfg *tls.Config) error {
	scheme, addr := endpointTarget(ep)
	network := "tcp"
	if scheme == "unix" || scheme == "unixs" {
		network = "unix"
	}
	dctx, cancel := context.WithTimeout(ctx, diagnoseTimeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(dctx, network, addr)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close()
	useTLS := scheme == "https" || scheme == "unixs" || (cfg != nil && scheme != "http")
	if !useTLS {
		return nil
	}
	tc := &tls.Config{}
	if cfg != nil {
		tc = cfg.Clone()
	}
	if tc.ServerName == "" {
		// The names etcd's client checks: the host, or a socket's base name.
		if network == "unix" {
			tc.ServerName = path.Base(addr)
		} else if host, _, err := net.SplitHostPort(addr); err == nil {
			tc.ServerName = host
		}
	}
	tconn := tls.Client(conn, tc)
	if err := tconn.HandshakeContext(dctx); err != nil {
		return fmt.Errorf("TLS handshake: %w", err)
	}
	// The server says nothing more until it gets a request, unless it
	// refuses the client certificate.
	if err := tconn.SetReadDeadline(time.Now().Add(diagnoseTimeout / 2)); err != nil {
		return nil
	}
	var buf [1]byte
	_, err = tconn.Read(buf[:])
	// crypto/tls reports an alert from the peer as a net.OpError whose Op
	// is "remote error".
	var op *net.OpError
	if err != nil && errors.As(err, &op) && op.Op == "remote error" {
		return fmt.Errorf("the server refused the TLS client certificate: %w", err)
	}
	return nil
}
