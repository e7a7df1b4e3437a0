package testutil

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"samsa/internal/config"
	"samsa/internal/node"
)

// StartMemberCluster starts n brokers (node ids 0..n-1) that each embed
// one member of a single etcd cluster, configured as `samsa serve` would be
// with etcd.name, etcd.initial.cluster and etcd.listen.peer.urls: no etcd
// outside the brokers. Stopping a broker stops its etcd member, so the
// metadata survives as long as a majority of the brokers runs. overrides
// apply to every broker. Everything is stopped when the test ends.
//
// The brokers start concurrently: a member of a new etcd cluster is ready
// only once a majority of the members runs.
func StartMemberCluster(t testing.TB, n int, overrides ...string) *Cluster {
	t.Helper()
	peers := make([]string, n)
	for i := range peers {
		peers[i] = fmt.Sprintf("samsa-%d=http://%s", i, freeAddr(t))
	}
	initial := strings.Join(peers, ",")
	c := &Cluster{t: t, down: make([]bool, n)}
	for i := 0; i < n; i++ {
		b := &Broker{t: t, Dir: t.TempDir()}
		b.cfgArgs = append([]string{
			"listeners=PLAINTEXT://127.0.0.1:0",
			"log.dirs=" + b.Dir,
			"admin.listener=",
			fmt.Sprintf("node.id=%d", i),
			fmt.Sprintf("etcd.name=samsa-%d", i),
			"etcd.initial.cluster=" + initial,
		}, overrides...)
		c.Brokers = append(c.Brokers, b)
	}
	t.Cleanup(func() {
		for i, b := range c.Brokers {
			if !c.down[i] && b.Node != nil {
				b.Node.Close()
			}
		}
	})
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, b := range c.Brokers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b.Node, errs[i] = startNode(b.cfgArgs)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("start broker %d: %v", i, err)
		}
	}
	return c
}

// startNode is Broker.start without the test's goroutine, so that several
// brokers can start at once.
func startNode(args []string) (*node.Node, error) {
	cfg, err := config.Load("", args)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return node.Start(ctx, node.Config{Broker: cfg, Logger: testLogger(cfg, nil, nil)})
}

// freeAddr returns a free 127.0.0.1 address. The port is free when
// returned; another process could take it before it is used, which fails
// the start rather than sharing the port.
func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("free port: %v", err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}
