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
//	broker -> broker i SASL_SSL  | secureLinks[i]   | client id (secure profile only)
//
// Each broker advertises its Kafka link's address, so followers fetch
// through it; clients are seeded with the real listeners and then follow
// the advertised addresses through the same links, which a test only
// cuts for replica traffic. Under the secure profile followers fetch on
// the SASL_SSL listener instead, through a link that ends TLS to read the
// client id (see link); cuts by client id apply to both of a broker's
// Kafka links alike (cutKafka). The test's own etcd client (states,
// history) connects to etcd directly.
type netCluster struct {
	*testCluster
	kafkaLinks  []*link
	secureLinks []*link // nil unless the profile is secure
	etcdLinks   []*link
}

// startNetCluster starts a netCluster with the profile SAMSA_CHAOS_SECURE
// asks for.
func startNetCluster(t *testing.T) *netCluster { return startNetClusterWith(t, envProfile()) }

func startNetClusterWith(t *testing.T, p clusterProfile) *netCluster {
	t.Helper()
	dir := t.TempDir()
	c := newTestCluster(t, p, dir)
	nc := &netCluster{testCluster: c}
	var linkTLS *linkTLS
	if c.certs != nil {
		linkTLS = c.certs.linkTLS(t)
	}
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
		b := c.newBroker(i, dir)
		kl := startLink(t, "kafka "+strconv.Itoa(i), b.addr(), true)
		el := startLink(t, "etcd "+strconv.Itoa(i), c.etcdURL, false)
		nc.kafkaLinks = append(nc.kafkaLinks, kl)
		nc.etcdLinks = append(nc.etcdLinks, el)
		secureAdv := ""
		if linkTLS != nil {
			sl := startTLSLink(t, "kafka SASL_SSL "+strconv.Itoa(i), b.secureAddr(), linkTLS)
			nc.secureLinks = append(nc.secureLinks, sl)
			secureAdv = sl.addr()
		}
		args := append([]string{"serve"}, c.listenerArgs(b, kl.addr(), secureAdv)...)
		args = append(args,
			"--override", "log.dirs="+filepath.Join(b.dir, "data"),
			"--override", "admin.listener=",
			"--override", "node.id="+strconv.Itoa(i),
			"--override", "etcd.endpoints=http://"+el.addr(),
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
	return nc
}

// isolate cuts broker id off from etcd and from the other brokers'
// replication in both directions: nobody's replica fetcher reaches it,
// and its own fetcher reaches nobody. Clients still reach every broker.
func (nc *netCluster) isolate(id int32) {
	nc.etcdLinks[id].cut(all)
	for i := range nc.brokers {
		if int32(i) == id {
			nc.cutKafka(int32(i), isReplica)
		} else {
			nc.cutKafka(int32(i), func(tag string) bool { return tag == replicaTag(id) })
		}
	}
	nc.brokers[id].note("isolated from etcd and the other brokers' replication")
}

// cutClients cuts every connection to broker id that is not replica
// traffic: clients cannot reach it, the other brokers still can.
func (nc *netCluster) cutClients(id int32) {
	nc.cutKafka(id, func(tag string) bool { return !isReplica(tag) })
	nc.brokers[id].note("cut from clients")
}

// kafkaLinksOf returns the links in front of broker id's Kafka listeners:
// PLAINTEXT, and SASL_SSL under the secure profile.
func (nc *netCluster) kafkaLinksOf(id int32) []*link {
	out := []*link{nc.kafkaLinks[id]}
	if nc.secureLinks != nil {
		out = append(out, nc.secureLinks[id])
	}
	return out
}

// cutKafka cuts the connections to broker id's Kafka listeners whose
// client id rule matches.
func (nc *netCluster) cutKafka(id int32, rule func(tag string) bool) {
	for _, l := range nc.kafkaLinksOf(id) {
		l.cut(rule)
	}
}

// healAll heals every link.
func (nc *netCluster) healAll() {
	for i := range nc.brokers {
		nc.etcdLinks[i].heal()
		for _, l := range nc.kafkaLinksOf(int32(i)) {
			l.heal()
		}
		nc.brokers[i].note("links healed")
	}
}

// replicaConns returns how many replica fetcher connections came through
// the PLAINTEXT links and through the SASL_SSL links (0 without the
// secure profile).
func (nc *netCluster) replicaConns() (plain, secure int64) {
	for _, l := range nc.kafkaLinks {
		plain += l.replicaConns.Load()
	}
	for _, l := range nc.secureLinks {
		secure += l.replicaConns.Load()
	}
	return plain, secure
}
