package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// numMembers is the size of the etcd cluster: TESTPLAN's convention of a
// three-member etcd, which keeps a quorum with one member down.
const numMembers = 3

// memberStartTimeout bounds how long the members of a new etcd cluster
// take to serve; each waits for a majority, so they start together.
const memberStartTimeout = 60 * time.Second

// etcdMember is one `samsa dev etcd` process of a multi-member etcd, with
// a fixed name, data dir, peer port and client URL across restarts (a
// restarted member comes back on its data dir and rejoins by itself).
type etcdMember struct {
	*proc
	name      string
	clientURL string // http://127.0.0.1:<port>
	// id is the member's raft id, learned once the cluster serves.
	id uint64
}

// memberCluster is a testCluster on a three-member etcd: numMembers
// `samsa dev etcd` processes and numBrokers `samsa serve` processes whose
// etcd.endpoints list every member, each through a link of its own:
//
//	path                       | link            | cut by
//	---------------------------+-----------------+--------------------------
//	broker b -> etcd member m  | etcdLinks[b][m] | cutEtcd(b) cuts all three
//	anyone -> broker b (Kafka) | none            |
//
// The test's own etcd client (states, history, member status) connects
// to the members directly. Every request it makes has a deadline of a
// few seconds: a SIGSTOPped member accepts connections and requests but
// never answers, and gRPC's keep-alive (at least 10 s between pings)
// takes longer than that to give up on it. The embedded testCluster has no
// single etcd process (etcd and etcdURL are unset); its state, history
// and checker helpers work through the shared client.
type memberCluster struct {
	*testCluster
	members   []*etcdMember
	etcdLinks [][]*link
}

func startMemberCluster(t *testing.T) *memberCluster {
	t.Helper()
	dir := t.TempDir()
	c := newTestCluster(t, envProfile(), dir)
	mc := &memberCluster{testCluster: c}
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
		for _, m := range mc.members {
			if m.stopped {
				_ = m.cmd.Process.Signal(syscall.SIGCONT)
			}
			m.kill()
		}
		if t.Failed() {
			for _, m := range mc.members {
				m.dumpTail()
			}
			for _, b := range c.brokers {
				b.dumpTail()
			}
		}
	})

	var initial []string
	for i := range numMembers {
		name := "m" + strconv.Itoa(i)
		initial = append(initial, name+"=http://"+net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort(t))))
		mc.members = append(mc.members, &etcdMember{name: name,
			clientURL: "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort(t)))})
	}
	endpoints := make([]string, numMembers)
	for i, m := range mc.members {
		m.proc = &proc{t: t, name: "etcd " + m.name, logPath: filepath.Join(dir, "etcd-"+m.name+".log"),
			args: []string{"dev", "etcd", "--data-dir", filepath.Join(dir, "etcd-"+m.name),
				"--name", m.name, "--initial-cluster", strings.Join(initial, ","),
				"--listen-client-url", m.clientURL}}
		m.start()
		endpoints[i] = m.clientURL
	}
	for _, m := range mc.members {
		if got := m.firstLine(memberStartTimeout, "http://"); got != m.clientURL {
			t.Fatalf("%s serves %s, want %s", m.name, got, m.clientURL)
		}
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:            endpoints,
		DialTimeout:          2 * time.Second,
		DialKeepAliveTime:    10 * time.Second,
		DialKeepAliveTimeout: 2 * time.Second,
		Logger:               zap.NewNop(),
	})
	if err != nil {
		t.Fatalf("etcd client: %v", err)
	}
	c.etcdCli = cli
	for _, m := range mc.members {
		waitFor(t, 30*time.Second, func() error {
			st, err := mc.status(m)
			if err != nil {
				return err
			}
			m.id = st.Header.MemberId
			return nil
		})
	}

	for i := range numBrokers {
		b := c.newBroker(i, dir)
		var links []*link
		var urls []string
		for _, m := range mc.members {
			l := startLink(t, fmt.Sprintf("broker %d -> etcd %s", i, m.name), m.clientURL, false)
			links = append(links, l)
			urls = append(urls, "http://"+l.addr())
		}
		mc.etcdLinks = append(mc.etcdLinks, links)
		args := append([]string{"serve"}, c.listenerArgs(b, "", "")...)
		args = append(args,
			"--override", "log.dirs="+filepath.Join(b.dir, "data"),
			"--override", "admin.listener=",
			"--override", "node.id="+strconv.Itoa(i),
			"--override", "etcd.endpoints="+strings.Join(urls, ","),
		)
		for _, o := range clusterOverrides {
			args = append(args, "--override", o)
		}
		b.proc = &proc{t: t, name: "broker " + strconv.Itoa(i), args: args,
			logPath: filepath.Join(dir, "broker"+strconv.Itoa(i)+".log")}
		c.brokers = append(c.brokers, b)
		b.start()
	}
	for _, b := range c.brokers {
		c.waitReady(b, numBrokers)
	}
	return mc
}

// status asks member m alone for its status (raft leader, term, index).
func (mc *memberCluster) status(m *etcdMember) (*clientv3.StatusResponse, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	st, err := mc.etcdCli.Status(ctx, m.clientURL)
	if err != nil {
		return nil, fmt.Errorf("status of %s: %w", m.name, err)
	}
	return st, nil
}

// leader returns the member that the running, unstopped members agree
// leads the etcd cluster; an error while they have none or disagree.
func (mc *memberCluster) leader() (*etcdMember, error) {
	var lead uint64
	for _, m := range mc.members {
		if !m.running() || m.stopped {
			continue
		}
		st, err := mc.status(m)
		if err != nil {
			return nil, err
		}
		switch {
		case st.Leader == 0:
			return nil, fmt.Errorf("%s has no leader", m.name)
		case lead != 0 && st.Leader != lead:
			return nil, fmt.Errorf("members disagree on the leader: %x, %x", lead, st.Leader)
		}
		lead = st.Leader
	}
	for _, m := range mc.members {
		if m.id == lead {
			if m.stopped || !m.running() {
				return nil, fmt.Errorf("%s, stopped, is still the leader", m.name)
			}
			return m, nil
		}
	}
	return nil, errors.New("no member answers")
}

// waitLeader waits up to d for an etcd leader among the running members.
func (mc *memberCluster) waitLeader(d time.Duration) *etcdMember {
	mc.t.Helper()
	var m *etcdMember
	waitFor(mc.t, d, func() error {
		var err error
		m, err = mc.leader()
		return err
	})
	return m
}

// waitHealthy waits up to d until every member runs, has a leader, and
// the whole cluster answers a linearizable read.
func (mc *memberCluster) waitHealthy(d time.Duration) {
	mc.t.Helper()
	waitFor(mc.t, d, func() error {
		for _, m := range mc.members {
			if err := m.exited(); err != nil {
				return err
			}
		}
		if _, err := mc.leader(); err != nil {
			return err
		}
		_, err := mc.revision()
		return err
	})
}

// revision returns etcd's current revision from a linearizable read,
// which needs a quorum.
func (mc *memberCluster) revision() (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	resp, err := mc.etcdCli.Get(ctx, "/samsa/cluster-id")
	if err != nil {
		return 0, err
	}
	return resp.Header.Revision, nil
}

// localStates reads every partition of topic from member m alone
// (a serializable read: m's own copy, no quorum needed), with the
// revision m has applied.
func (mc *memberCluster) localStates(m *etcdMember, topic string, partitions int32) ([]partitionState, int64, error) {
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{m.clientURL},
		DialTimeout: time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		return nil, 0, err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, "/samsa/cluster-id", clientv3.WithSerializable())
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", m.name, err)
	}
	if len(resp.Kvs) == 0 {
		return nil, 0, fmt.Errorf("%s: no cluster id", m.name)
	}
	prefix := "/samsa/" + strings.TrimSpace(string(resp.Kvs[0].Value)) + "/partitions/" + topic + "/"
	out := make([]partitionState, partitions)
	var rev int64
	for p := range partitions {
		key := prefix + strconv.Itoa(int(p))
		r, err := cli.Get(ctx, key, clientv3.WithSerializable())
		if err != nil {
			return nil, 0, fmt.Errorf("%s: get %s: %w", m.name, key, err)
		}
		if len(r.Kvs) == 0 {
			return nil, 0, fmt.Errorf("%s: no key %s", m.name, key)
		}
		if err := json.Unmarshal(r.Kvs[0].Value, &out[p]); err != nil {
			return nil, 0, fmt.Errorf("%s: %s: %w", m.name, key, err)
		}
		rev = r.Header.Revision
	}
	return out, rev, nil
}

// controllerInEtcd returns the controller as etcd holds it: the election
// candidate under controller/ with the lowest create revision (see
// docs/etcd-keys.md).
func (mc *memberCluster) controllerInEtcd() (int32, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	resp, err := mc.etcdCli.Get(ctx, "/samsa/cluster-id")
	if err != nil {
		return -1, fmt.Errorf("get cluster id: %w", err)
	}
	if len(resp.Kvs) == 0 {
		return -1, errors.New("no cluster id in etcd")
	}
	prefix := "/samsa/" + strings.TrimSpace(string(resp.Kvs[0].Value)) + "/controller/"
	resp, err = mc.etcdCli.Get(ctx, prefix, clientv3.WithPrefix())
	if err != nil {
		return -1, fmt.Errorf("get %s: %w", prefix, err)
	}
	if len(resp.Kvs) == 0 {
		return -1, fmt.Errorf("no candidate under %s", prefix)
	}
	first := resp.Kvs[0]
	for _, kv := range resp.Kvs[1:] {
		if kv.CreateRevision < first.CreateRevision {
			first = kv
		}
	}
	id, err := strconv.Atoi(strings.TrimPrefix(string(first.Key), prefix))
	if err != nil {
		return -1, fmt.Errorf("candidate key %s: %w", first.Key, err)
	}
	return int32(id), nil
}

// controllerSeenBy returns the controller id broker b reports in
// Metadata.
func (mc *memberCluster) controllerSeenBy(b *broker) (int32, error) {
	resp, err := metadataFrom(b.addr())
	if err != nil {
		return -1, err
	}
	return resp.ControllerID, nil
}

// cutEtcd cuts broker id off from every etcd member; its Kafka traffic
// (clients and replication) is untouched.
func (mc *memberCluster) cutEtcd(id int32) {
	for _, l := range mc.etcdLinks[id] {
		l.cut(all)
	}
	mc.brokers[id].note("cut from every etcd member")
}

// healEtcd lets broker id reach every etcd member again.
func (mc *memberCluster) healEtcd(id int32) {
	for _, l := range mc.etcdLinks[id] {
		l.heal()
	}
	mc.brokers[id].note("etcd links healed")
}

// noteAll writes a line into the log of every broker and member, so
// each log shows where a fault began.
func (mc *memberCluster) noteAll(format string, args ...any) {
	for _, m := range mc.members {
		m.note(format, args...)
	}
	for _, b := range mc.brokers {
		b.note(format, args...)
	}
}

// controllerSeen is one answer of controllerInEtcd: the controller etcd
// held at some moment between start and end.
type controllerSeen struct {
	start, end time.Time
	id         int32
}

// controllerHistory polls the controller etcd holds (controllerInEtcd)
// every 50ms in its own goroutine and keeps every answer. Start it with
// watchController; stop it with stop (idempotent). Its methods are safe
// for concurrent use; mu guards seen.
type controllerHistory struct {
	mc   *memberCluster
	quit chan struct{}
	done chan struct{}
	once sync.Once

	mu   sync.Mutex
	seen []controllerSeen
}

func (mc *memberCluster) watchController() *controllerHistory {
	h := &controllerHistory{mc: mc, quit: make(chan struct{}), done: make(chan struct{})}
	go h.run()
	mc.t.Cleanup(h.stop)
	return h
}

func (h *controllerHistory) run() {
	defer close(h.done)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		start := time.Now()
		if id, err := h.mc.controllerInEtcd(); err == nil {
			h.mu.Lock()
			h.seen = append(h.seen, controllerSeen{start, time.Now(), id})
			h.mu.Unlock()
		}
		select {
		case <-h.quit:
			return
		case <-tick.C:
		}
	}
}

func (h *controllerHistory) stop() {
	h.once.Do(func() { close(h.quit) })
	<-h.done
}

// heldBy tells whether etcd held id as controller around t. Only answers
// that took under half a second and ended within w of t count; known is
// false unless there are such answers on both sides of t, and held is
// true if any of them names id. seen lists them (controller id and the
// answer's end, relative to t).
func (h *controllerHistory) heldBy(id int32, t time.Time, w time.Duration) (known, held bool, seen string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	before, after := false, false
	var out []string
	for _, s := range h.seen {
		if s.end.Sub(s.start) > 500*time.Millisecond || s.end.Before(t.Add(-w)) || s.start.After(t.Add(w)) {
			continue
		}
		if s.end.Before(t) {
			before = true
		}
		if s.start.After(t) {
			after = true
		}
		if s.id == id {
			held = true
		}
		if len(out) == 0 || !strings.HasPrefix(out[len(out)-1], fmt.Sprintf("%d@", s.id)) {
			out = append(out, fmt.Sprintf("%d@%+dms", s.id, s.end.Sub(t).Milliseconds()))
		}
	}
	return before && after, held, strings.Join(out, " ")
}
