package testutil

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"samsa/internal/cluster"
	"samsa/internal/vfs"
)

// Cluster is an in-process multi-broker samsa cluster: one embedded etcd
// member shared by every broker (so any broker can be stopped), brokers on
// 127.0.0.1 with free ports and their own data dirs. Etcd.Close stops
// etcd under the brokers (the cleanup then closes it again, harmlessly).
type Cluster struct {
	t       testing.TB
	Etcd    *cluster.EmbeddedEtcd
	Brokers []*Broker
	// down marks brokers that are stopped.
	down []bool
}

// StartCluster starts n brokers (node ids 0..n-1). overrides apply to every
// broker, with "{node.id}" in them replaced by the broker's node id (as in
// "broker.rack=rack-{node.id}").
// broker. Everything is stopped when the test ends.
func StartCluster(t testing.TB, n int, overrides ...string) *Cluster {
	t.Helper()
	return startCluster(t, n, false, nil, nil, overrides)
}

// StartClusterWithClocks is StartCluster with broker i on clocks[i]
// (len(clocks) brokers; node.Config.Now), for clock skew and jump tests.
func StartClusterWithClocks(t testing.TB, clocks []func() time.Time, overrides ...string) *Cluster {
	t.Helper()
	return startCluster(t, len(clocks), false, nil, clocks, overrides)
}

// StartClusterOnFS is StartCluster with broker i's partitions on fss[i]
// (len(fss) brokers), for tests that cut the power (vfs.MemFS).
func StartClusterOnFS(t testing.TB, fss []vfs.FS, overrides ...string) *Cluster {
	t.Helper()
	return startCluster(t, len(fss), false, fss, nil, overrides)
}

// StartClusterLogged is StartCluster with each broker's log kept in its
// Broker.Log, in JSON at log.level.
func StartClusterLogged(t testing.TB, n int, overrides ...string) *Cluster {
	t.Helper()
	return startCluster(t, n, true, nil, nil, overrides)
}

func startCluster(t testing.TB, n int, logged bool, fss []vfs.FS, clocks []func() time.Time, overrides []string) *Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e, err := cluster.StartEmbeddedEtcd(ctx, t.TempDir())
	if err != nil {
		t.Fatalf("start etcd: %v", err)
	}
	c := &Cluster{t: t, Etcd: e, down: make([]bool, n)}
	t.Cleanup(func() {
		for i, b := range c.Brokers {
			if !c.down[i] {
				b.Node.Close()
			}
		}
		e.Close()
	})
	for i := 0; i < n; i++ {
		b := &Broker{t: t, Dir: t.TempDir()}
		if fss != nil {
			b.FS = fss[i]
		}
		if clocks != nil {
			b.Now = clocks[i]
		}
		if logged {
			b.Log = new(LogBuffer)
		}
		b.cfgArgs = []string{
			"listeners=PLAINTEXT://127.0.0.1:0",
			"log.dirs=" + b.Dir,
			"admin.listener=",
			fmt.Sprintf("node.id=%d", i),
			"etcd.endpoints=" + e.ClientURL(),
		}
		for _, o := range overrides {
			b.cfgArgs = append(b.cfgArgs, strings.ReplaceAll(o, "{node.id}", strconv.Itoa(i)))
		}
		b.start()
		c.Brokers = append(c.Brokers, b)
	}
	c.waitRegistered()
	return c
}

// waitRegistered waits until every running broker's metadata image shows
// every running broker, so that topics created next get replicas on all.
func (c *Cluster) waitRegistered() {
	c.t.Helper()
	Eventually(c.t, 30*time.Second, func() error {
		want := 0
		for i := range c.Brokers {
			if !c.down[i] {
				want++
			}
		}
		for i, b := range c.Brokers {
			if c.down[i] {
				continue
			}
			if n := len(b.Node.Image().Brokers); n != want {
				return fmt.Errorf("broker %d sees %d brokers, want %d", i, n, want)
			}
		}
		return nil
	})
}

// Addrs returns the Kafka addresses of the running brokers.
func (c *Cluster) Addrs() []string {
	var out []string
	for i, b := range c.Brokers {
		if !c.down[i] {
			out = append(out, b.Addr())
		}
	}
	return out
}

// Client returns a franz-go client seeded with every running broker.
func (c *Cluster) Client(opts ...kgo.Opt) *kgo.Client {
	c.t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.Addrs()...)}, opts...)...)
	if err != nil {
		c.t.Fatalf("client: %v", err)
	}
	c.t.Cleanup(cl.Close)
	return cl
}

// Admin returns an admin client for the cluster.
func (c *Cluster) Admin() *kadm.Client { return kadm.NewClient(c.Client()) }

// Kill stops broker i at once, as a crash would: no controlled shutdown,
// no clean-shutdown marker flush beyond what Close does; its registration
// lease is revoked, so the controller sees it gone immediately.
func (c *Cluster) Kill(i int) {
	c.t.Helper()
	c.Brokers[i].Node.Close()
	c.down[i] = true
}

// Stop shuts broker i down cleanly (controlled shutdown).
func (c *Cluster) Stop(i int) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Brokers[i].Node.Shutdown(ctx); err != nil {
		c.t.Fatalf("shutdown broker %d: %v", i, err)
	}
	c.down[i] = true
}

// Start starts a stopped broker i again on its data dir and port.
func (c *Cluster) Start(i int) {
	c.t.Helper()
	b := c.Brokers[i]
	addr := b.Addr()
	b.setListener(addr)
	b.start()
	c.down[i] = false
	c.waitRegistered()
}

// Leader returns the node id of the leader of topic/partition as the
// first running broker's metadata image shows it, or -1.
func (c *Cluster) Leader(topic string, partition int32) int32 {
	for i, b := range c.Brokers {
		if c.down[i] {
			continue
		}
		img := b.Node.Image()
		t := img.Topics[topic]
		if t == nil || int(partition) >= len(t.Partitions) {
			return -1
		}
		return t.Partitions[partition].Leader
	}
	return -1
}

// ISR returns the ISR of topic/partition as the first running broker sees
// it: the node ids sorted and space-separated.
func (c *Cluster) ISR(topic string, partition int32) string {
	for i, b := range c.Brokers {
		if c.down[i] {
			continue
		}
		t := b.Node.Image().Topics[topic]
		if t == nil || int(partition) >= len(t.Partitions) {
			return "?"
		}
		isr := slices.Clone(t.Partitions[partition].ISR)
		slices.Sort(isr)
		return strings.Trim(fmt.Sprint(isr), "[]")
	}
	return "?"
}
