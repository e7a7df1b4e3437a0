package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
	kgosasl "github.com/twmb/franz-go/pkg/sasl"
)

// FetchConn exposes the replica fetch connection to the external tests.
type FetchConn struct{ fc *fetchConn }

func DialFetchConn(ctx context.Context, addr string, mech kgosasl.Mechanism) (*FetchConn, error) {
	fc, err := dialFetchConn(ctx, addr, "test", interBrokerSecurity{mech: mech})
	if err != nil {
		return nil, err
	}
	return &FetchConn{fc}, nil
}

func (c *FetchConn) Fetch(ctx context.Context, req *kmsg.FetchRequest) (*kmsg.FetchResponse, func(), error) {
	return c.fc.fetch(ctx, req)
}

func (c *FetchConn) Version() int16 { return c.fc.fetchV }
func (c *FetchConn) Close()         { c.fc.close() }

var (
	SkipTags  = skipTags
	RespClass = respClass
)
