package chaos

import (
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// netCluster is a testCluster whose network paths run through links, so
// a test can partition them:
//
//	path                         | link             | cut by
//	-----------------------------+------------------+-----------------------------
//	broker i -> etcd             | etcdLinks[i]     | all
//	anyone -> broker i (Kafka)   | kafkaLinks[i]    | client id (replica fetchers)
//
// Each broker advertises its Kafka link's address, so followers fetch
// through it; clients are seeded with the real listeners and then follow
// the advertised addresses through the same links, which a test only
// cuts for replica traffic. The test's own etcd client (states, history)
// connects to etcd directly.
type netCluster struct {
	*testCluster
	kafkaLinks []*link
	etcdLinks  []*link
}

func startNetCluster(t *testing.T) *netCluster {
	t.Helper()
	dir := t.TempDir()
	c := &testCluster{t: t}
	nc := &netCluster{testCluster: c}
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
		if c.etcd.stopped {
			_ = c.etcd.cmd.Process.Signal(syscall.SIGCONT)
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
	for i := range numBrokers {
		bdir := filepath.Join(dir, "broker"+strconv.Itoa(i))
		b := &broker{id: int32(i), port: freePort(t), dir: bdir}
		kl := startLink(t, "kafka "+strconv.Itoa(i), b.addr(), true)
		el := startLink(t, "etcd "+strconv.Itoa(i), c.etcdURL, false)
		nc.kafkaLinks = append(nc.kafkaLinks, kl)
		nc.etcdLinks = append(nc.etcdLinks, el)
		args := []string{"serve",
			"--override", "listeners=PLAINTEXT://" + b.addr(),
			"--override", "advertised.listeners=PLAINTEXT://" + kl.addr(),
			"--override", "log.dirs=" + filepath.Join(bdir, "data"),
			"--override", "admin.listener=",
			"--override", "node.id=" + strconv.Itoa(i),
			"--override", "etcd.endpoints=http://" + el.addr(),
		}
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
	return nc
}

// isolate cuts broker id off from etcd and from the other brokers'
// replication in both directions: nobody's replica fetcher reaches it,
// and its own fetcher reaches nobody. Clients still reach every broker.
func (nc *netCluster) isolate(id int32) {
	nc.etcdLinks[id].cut(all)
	for i, kl := range nc.kafkaLinks {
		if int32(i) == id {
			kl.cut(isReplica)
		} else {
			kl.cut(func(tag string) bool { return tag == replicaTag(id) })
		}
	}
	nc.brokers[id].note("isolated from etcd and the other brokers' replication")
}

// cutClients cuts every connection to broker id that is not replica
// traffic: clients cannot reach it, the other brokers still can.
func (nc *netCluster) cutClients(id int32) {
	nc.kafkaLinks[id].cut(func(tag string) bool { return !isReplica(tag) })
	nc.brokers[id].note("cut from clients")
}

// healAll heals every link.
func (nc *netCluster) healAll() {
	for i := range nc.brokers {
		nc.etcdLinks[i].heal()
		nc.kafkaLinks[i].heal()
		nc.brokers[i].note("links healed")
	}
}
