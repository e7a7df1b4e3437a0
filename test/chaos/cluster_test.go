package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

const (
	numBrokers = 3
	// sessionTimeout is broker.session.timeout.ms: the TTL of a broker's
	// registration lease, T_s in TESTPLAN.
	sessionTimeout = 3 * time.Second
	// readyTimeout bounds how long a started broker may take to answer
	// Metadata.
	readyTimeout = 30 * time.Second
	// isrTimeout bounds how long a restarted broker may take to rejoin
	// every ISR.
	isrTimeout = 60 * time.Second
)

// clusterOverrides are the broker configs of every scenario: TESTPLAN's
// conventions (RF=3, min ISR 2, unclean election and auto-create off) with
// a short liveness timeout so faults resolve within a short profile, and
// a cleaner that looks for work every 500 ms (S-20's compacted topic).
var clusterOverrides = []string{
	"default.replication.factor=3",
	"min.insync.replicas=2",
	"unclean.leader.election.enable=false",
	"auto.create.topics.enable=false",
	"broker.session.timeout.ms=" + strconv.FormatInt(sessionTimeout.Milliseconds(), 10),
	"broker.heartbeat.interval.ms=1000",
	"replica.lag.time.max.ms=5000",
	"offsets.topic.num.partitions=3",
	"group.initial.rebalance.delay.ms=0",
	"transaction.state.log.num.partitions=3",
	"transaction.abort.timed.out.transaction.cleanup.interval.ms=5000",
	"log.cleaner.backoff.ms=500",
}

// broker is one `samsa serve` process with a fixed node id, ports and
// data dir across restarts.
type broker struct {
	*proc
	id   int32
	port int // the PLAINTEXT listener, for clients
	// securePort is the SASL_SSL inter-broker listener under the secure
	// profile; 0 otherwise.
	securePort int
	dir        string
}

func (b *broker) addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(b.port)) }

func (b *broker) secureAddr() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(b.securePort))
}

// testCluster is a multi-process samsa cluster: one `samsa dev etcd`
// process and numBrokers `samsa serve` processes sharing it. Everything is
// killed when the test ends; if the test failed, the tail of every
// process log is printed. It is used by one test goroutine.
type testCluster struct {
	t       *testing.T
	etcd    *proc
	etcdURL string
	etcdCli *clientv3.Client
	brokers []*broker
	// certs are the certificates of the secure profile; nil otherwise.
	certs *devCerts
	// dir holds the etcd and broker data dirs and logs.
	dir string
	// overrides are the profile's broker configs beyond clusterOverrides.
	overrides []string
	// env is the profile's additions to each broker's environment.
	env []string
}

// newTestCluster returns an empty cluster for profile p, with its
// certificates made under dir if p is secure.
func newTestCluster(t *testing.T, p clusterProfile, dir string) *testCluster {
	t.Helper()
	c := &testCluster{t: t, overrides: p.overrides, env: p.env}
	if p.secure {
		d := makeDevCerts(t, filepath.Join(dir, "certs"))
		c.certs = &d
	}
	t.Logf("cluster profile: %v", p)
	return c
}

// newBroker returns broker i of c, not started, with its ports chosen.
func (c *testCluster) newBroker(i int, dir string) *broker {
	b := &broker{id: int32(i), port: freePort(c.t), dir: filepath.Join(dir, "broker"+strconv.Itoa(i))}
	if c.certs != nil {
		b.securePort = freePort(c.t)
	}
	return b
}

// startCluster starts a cluster with the profile SAMSA_CHAOS_SECURE asks
// for.
func startCluster(t *testing.T) *testCluster { return startClusterWith(t, envProfile()) }

func startClusterWith(t *testing.T, p clusterProfile) *testCluster {
	t.Helper()
	return startClusterFronted(t, p, nil)
}

// startClusterFronted is startClusterWith where each broker advertises
// the address front returns for it (a proxy in front of its PLAINTEXT
// listener, started by front before the broker), so that clients, and
// brokers reaching each other, follow it; nil advertises the listeners.
func startClusterFronted(t *testing.T, p clusterProfile, front func(b *broker) string) *testCluster {
	t.Helper()
	dir := t.TempDir()
	c := newTestCluster(t, p, dir)
	c.etcd = &proc{t: t, name: "etcd", logPath: filepath.Join(dir, "etcd.log"),
		args: []string{"dev", "etcd", "--data-dir", filepath.Join(dir, "etcd")}}
	t.Cleanup(func() {
		for _, b := range c.brokers {
			if b.stopped {
				_ = b.cmd.Process.Signal(syscall.SIGCONT)
			}
			b.kill()
		}
		if c.etcdCli != nil {
			c.etcdCli.Close()
		}
		c.etcd.kill()
		if t.Failed() {
			c.etcd.dumpTail()
			for _, b := range c.brokers {
				b.dumpTail()
			}
		}
	})
	c.etcd.start()
	c.etcdURL = c.etcd.firstLine(30*time.Second, "unix://", "http://")
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{c.etcdURL},
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		t.Fatalf("etcd client: %v", err)
	}
	c.etcdCli = cli
	c.dir = dir
	for i := range numBrokers {
		c.startBroker(i, front)
	}
	for _, b := range c.brokers {
		c.waitReady(b, numBrokers)
	}
	return c
}

// startBroker adds broker i (node id i) to c and starts it, advertising
// the address front returns for it (nil: its listener). It does not wait
// for it to be ready.
func (c *testCluster) startBroker(i int, front func(b *broker) string) *broker {
	c.t.Helper()
	b := c.newBroker(i, c.dir)
	adv := ""
	if front != nil {
		adv = front(b)
	}
	args := append([]string{"serve"}, c.listenerArgs(b, adv, "")...)
	args = append(args,
		"--override", "log.dirs="+filepath.Join(b.dir, "data"),
		"--override", "admin.listener=",
		"--override", "node.id="+strconv.Itoa(i),
		"--override", "etcd.endpoints="+c.etcdURL,
	)
	for _, o := range append(slices.Clone(clusterOverrides), c.overrides...) {
		args = append(args, "--override", o)
	}
	b.proc = &proc{t: c.t, name: "broker " + strconv.Itoa(i), args: args, env: c.env,
		logPath: filepath.Join(c.dir, "broker"+strconv.Itoa(i)+".log")}
	c.brokers = append(c.brokers, b)
	b.start()
	return b
}

// waitReady waits until b answers Metadata listing want brokers.
func (c *testCluster) waitReady(b *broker, want int) {
	c.t.Helper()
	waitFor(c.t, readyTimeout, func() error {
		if err := b.exited(); err != nil {
			return err
		}
		resp, err := metadataFrom(b.addr())
		if err != nil {
			return err
		}
		if len(resp.Brokers) != want {
			return fmt.Errorf("%s: metadata lists %d brokers", b.name, len(resp.Brokers))
		}
		return nil
	})
}

// restart starts a broker that was killed or stopped and waits until it
// answers Metadata listing every broker.
func (c *testCluster) restart(b *broker) {
	c.t.Helper()
	b.start()
	c.waitReady(b, numBrokers)
}

// metadataFrom sends one Metadata request to addr itself (not to whatever
// broker a client would pick).
func metadataFrom(addr string) (*kmsg.MetadataResponse, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequestRetries(0))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	resp, err := req.RequestWith(ctx, cl.SeedBrokers()[0])
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// addrs lists every broker address, running or not; clients skip the
// dead ones.
func (c *testCluster) addrs() []string {
	out := make([]string, len(c.brokers))
	for i, b := range c.brokers {
		out[i] = b.addr()
	}
	return out
}

func (c *testCluster) createTopic(topic string, partitions int32) {
	c.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs()...))
	if err != nil {
		c.t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, 3, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		c.t.Fatalf("create topic %s: %v", topic, err)
	}
	c.waitFullISR(topic, partitions)
}

// partitionState is the value of partitions/<topic>/<p> in etcd (see
// docs/etcd-keys.md): the committed leadership, not any broker's view.
type partitionState struct {
	Leader         int32   `json:"leader"`
	LeaderEpoch    int32   `json:"leader_epoch"`
	ISR            []int32 `json:"isr"`
	PartitionEpoch int32   `json:"partition_epoch"`
}

func (s partitionState) String() string {
	isr := slices.Clone(s.ISR)
	slices.Sort(isr)
	return fmt.Sprintf("leader %d epoch %d isr %v", s.Leader, s.LeaderEpoch, isr)
}

func (s partitionState) inISR(id int32) bool { return slices.Contains(s.ISR, id) }

// state reads the committed state of topic/p from etcd.
func (c *testCluster) state(topic string, p int32) (partitionState, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	resp, err := c.etcdCli.Get(ctx, "/samsa/cluster-id")
	if err != nil {
		return partitionState{}, fmt.Errorf("get cluster id: %w", err)
	}
	if len(resp.Kvs) == 0 {
		return partitionState{}, errors.New("no cluster id in etcd")
	}
	key := "/samsa/" + strings.TrimSpace(string(resp.Kvs[0].Value)) + "/partitions/" + topic + "/" + strconv.Itoa(int(p))
	resp, err = c.etcdCli.Get(ctx, key)
	if err != nil {
		return partitionState{}, fmt.Errorf("get %s: %w", key, err)
	}
	if len(resp.Kvs) == 0 {
		return partitionState{}, fmt.Errorf("no key %s", key)
	}
	var st partitionState
	if err := json.Unmarshal(resp.Kvs[0].Value, &st); err != nil {
		return partitionState{}, fmt.Errorf("decode %s: %w", key, err)
	}
	return st, nil
}

// mustState is state that fails the test on error.
func (c *testCluster) mustState(topic string, p int32) partitionState {
	c.t.Helper()
	st, err := c.state(topic, p)
	if err != nil {
		c.t.Fatal(err)
	}
	return st
}

// waitFullISR waits until every partition of topic has a leader and every
// broker in its ISR.
func (c *testCluster) waitFullISR(topic string, partitions int32) {
	c.t.Helper()
	waitFor(c.t, isrTimeout, func() error {
		for p := range partitions {
			st, err := c.state(topic, p)
			if err != nil {
				return err
			}
			if st.Leader < 0 || len(st.ISR) != numBrokers {
				return fmt.Errorf("%s-%d: %v", topic, p, st)
			}
		}
		return nil
	})
}

// waitLeaderChange waits until topic/p has a leader other than old with
// an epoch above oldEpoch, and returns the new state.
func (c *testCluster) waitLeaderChange(topic string, p int32, old, oldEpoch int32, d time.Duration) partitionState {
	c.t.Helper()
	var st partitionState
	waitFor(c.t, d, func() error {
		var err error
		if st, err = c.state(topic, p); err != nil {
			return err
		}
		if st.Leader < 0 || st.Leader == old || st.LeaderEpoch <= oldEpoch {
			return fmt.Errorf("%s-%d: %v", topic, p, st)
		}
		return nil
	})
	return st
}

// freePort returns a loopback port that was free a moment ago and that
// no earlier call in this process returned: the kernel may hand out a
// port it just released again, and two brokers of one cluster given the
// same port fail to start.
func freePort(t *testing.T) int {
	t.Helper()
	portsMu.Lock()
	defer portsMu.Unlock()
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if !portsGiven[port] {
			portsGiven[port] = true
			return port
		}
	}
	t.Fatal("no fresh loopback port in 100 tries")
	return 0
}

var (
	portsMu    sync.Mutex
	portsGiven = map[int]bool{}
)

// listenFresh listens on a loopback port that freePort has not handed out
// and marks it as given. A link or proxy that took its port from the
// kernel directly could get the port freePort just handed to a broker
// that has not bound it yet (seen: a broker failing with "address already
// in use" because a link had its port).
func listenFresh(t *testing.T) net.Listener {
	t.Helper()
	portsMu.Lock()
	defer portsMu.Unlock()
	var taken []net.Listener // held while retrying, so the kernel moves on
	defer func() {
		for _, l := range taken {
			l.Close()
		}
	}()
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		if !portsGiven[port] {
			portsGiven[port] = true
			return l
		}
		taken = append(taken, l)
	}
	t.Fatal("no fresh loopback port in 100 tries")
	return nil
}
