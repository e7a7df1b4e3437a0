package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// clientID is the client.id every command sends to the broker.
const clientID = "samsa-cli"

// seedBrokers splits the --bootstrap-server value into host:port entries.
func seedBrokers(s string) ([]string, error) {
	var out []string
	for _, h := range strings.Split(s, ",") {
		h = strings.TrimSpace(h)
		if h == "" {
			continue
		}
		out = append(out, h)
	}
	if len(out) == 0 {
		return nil, usagef("--bootstrap-server: no broker address given")
	}
	return out, nil
}

// newClient returns a kgo client for the brokers in g, secured as the
// --tls* and --sasl-mechanism flags say, with opts applied after the
// defaults. The caller closes it.
func newClient(g *globals, opts ...kgo.Opt) (*kgo.Client, error) {
	seeds, err := seedBrokers(g.bootstrap)
	if err != nil {
		return nil, err
	}
	sec, err := g.security.opts()
	if err != nil {
		return nil, err
	}
	base := append([]kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.ClientID(clientID),
		kgo.DialTimeout(5 * time.Second),
		kgo.RetryTimeout(30 * time.Second),
	}, sec...)
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", g.bootstrap, err)
	}
	return cl, nil
}

// newAdmin returns an admin client over a new kgo client. Closing the admin
// client closes the kgo client. NB: kgo answers metadata requests from a
// cache younger than MetadataMinAge (5s by default); a short age lets a
// command see a topic it just created.
func newAdmin(g *globals) (*kadm.Client, error) {
	cl, err := newClient(g, kgo.MetadataMinAge(50*time.Millisecond))
	if err != nil {
		return nil, err
	}
	return kadm.NewClient(cl), nil
}
