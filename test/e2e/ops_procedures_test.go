package e2e

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// commitGroupOffset commits offset for group on topic's partition 0, so
// that __consumer_offsets exists and holds something to keep.
func commitGroupOffset(t *testing.T, adm *kadm.Client, group, topic string, offset int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: offset, LeaderEpoch: -1})
	waitFor(t, 30*time.Second, func() error {
		resp, err := adm.CommitOffsets(ctx, group, offs)
		if err != nil {
			return err
		}
		return resp.Error()
	})
}

// fetchGroupOffset returns the offset group committed on topic's
// partition 0, or -1.
func fetchGroupOffset(t *testing.T, adm *kadm.Client, group, topic string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var got int64 = -1
	waitFor(t, 30*time.Second, func() error {
		resp, err := adm.FetchOffsets(ctx, group)
		if err != nil {
			return err
		}
		if err := resp.Error(); err != nil {
			return err
		}
		if o, ok := resp.Lookup(topic, 0); ok {
			got = o.At
		}
		return nil
	})
	return got
}

// memberAdd adds an etcd member with peerURL (etcdctl member add). etcd
// refuses a membership change with "unhealthy cluster" until every
// member has been connected to the others for a few seconds, so it is
// retried for up to a minute.
func memberAdd(t *testing.T, cli *clientv3.Client, peerURL string) {
	t.Helper()
	waitFor(t, time.Minute, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := cli.MemberAdd(ctx, []string{peerURL})
		return err
	})
}

// memberRemove removes etcd member id (etcdctl member remove), retried
// as memberAdd is.
func memberRemove(t *testing.T, cli *clientv3.Client, id uint64) {
	t.Helper()
	waitFor(t, time.Minute, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := cli.MemberRemove(ctx, id)
		return err
	})
}

// stopClean sends SIGTERM (controlled shutdown) and fails the test unless
// the broker exits 0 within d.
func stopClean(t *testing.T, b *broker, d time.Duration) time.Duration {
	t.Helper()
	began := time.Now()
	b.signal(syscall.SIGTERM)
	st, ok := b.waitExit(d)
	if !ok {
		t.Fatalf("broker still running %s after SIGTERM", d)
	}
	if st.ExitCode() != 0 {
		t.Fatalf("broker exited %d after SIGTERM, want 0", st.ExitCode())
	}
	return time.Since(began)
}

// TestOpsAddBrokerThenDecommission carries out procedures 1 and 2 of
// docs/operations.md on a three-broker cluster whose brokers embed the
// etcd members: broker 4 joins (its member added to etcd first), takes
// over every replica of broker 1 by reassignment while a producer runs,
// and broker 1 is then stopped and its etcd member removed. Every record
// acknowledged before and during the moves is read back afterwards.
func TestOpsAddBrokerThenDecommission(t *testing.T) {
	began := time.Now()
	c := newOpsCluster(t, 3)
	const topic, group = "orders", "billing"
	c.mustSamsa("topic", "create", topic, "--partitions", "3", "--replication-factor", "3")
	before := newAckLedger()
	produceN(t, c.seeds(), topic, "before", 300, before)
	commitGroupOffset(t, c.admin(), group, topic, 42)
	c.waitInSync(60*time.Second, topic, "__consumer_offsets")
	t.Logf("cluster of 3 up with data after %v", time.Since(began).Round(time.Millisecond))

	// Procedure 1: add broker 4. Its etcd member is added first, then the
	// broker starts with etcd.initial.cluster.state=existing.
	cli := c.etcd(1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c.peer[4], c.adminPort[4] = freePort(t), freePort(t)
	memberAdd(t, cli, c.peerURL(4))
	c.brokers[4] = c.newProcess(4, c.initialCluster(1, 2, 3, 4), "existing")
	c.brokers[4].launch()
	c.waitReady(4)
	if out := c.mustSamsa("cluster", "describe"); !strings.Contains(out, "Brokers: 4") {
		t.Fatalf("cluster describe after adding broker 4:\n%s", out)
	}
	if _, ok := memberID(t, cli, memberName(4)); !ok {
		t.Fatalf("etcd has no member %s after broker 4 started", memberName(4))
	}

	prod := startSteadyProducer(t, c.seeds(), topic, 100)
	moveStart := time.Now()
	moved := c.moveReplicas(topic, 1, 4) + c.moveReplicas("__consumer_offsets", 1, 4)
	t.Logf("moved %d partitions from broker 1 to broker 4 in %v", moved, time.Since(moveStart).Round(time.Millisecond))
	if c.hosts(1, topic, "__consumer_offsets") {
		t.Fatalf("broker 1 still holds replicas after the reassignments")
	}
	if !c.hosts(4, topic) {
		t.Fatalf("broker 4 holds no replica after the reassignments")
	}
	c.mustSamsa("topic", "describe", topic)
	// The brokers left out delete their copy.
	waitFor(t, 60*time.Second, func() error {
		if ds, _ := filepath.Glob(filepath.Join(c.brokers[1].dir, topic+"-*")); len(ds) > 0 {
			return fmt.Errorf("broker 1 still has %v", ds)
		}
		return nil
	})

	// Procedure 2: decommission broker 1. It holds no replica now; stop it
	// and remove its etcd member, which otherwise still counts towards the
	// etcd quorum.
	d := stopClean(t, c.brokers[1], 60*time.Second)
	t.Logf("broker 1 stopped %v after SIGTERM", d.Round(time.Millisecond))
	cli = c.etcd(2)
	id, ok := memberID(t, cli, memberName(1))
	if !ok {
		t.Fatalf("etcd member %s missing before removal", memberName(1))
	}
	memberRemove(t, cli, id)
	resp, err := cli.MemberList(ctx)
	if err != nil || len(resp.Members) != 3 {
		t.Fatalf("etcd member list after removal: %v members, %v", len(resp.Members), err)
	}
	waitFor(t, 30*time.Second, func() error {
		out, err := c.samsa("cluster", "describe")
		if err != nil || !strings.Contains(out, "Brokers: 3") {
			return fmt.Errorf("cluster describe: %v\n%s", err, out)
		}
		return nil
	})
	c.waitInSync(60*time.Second, topic, "__consumer_offsets")

	during := prod.stop(t)
	if len(during.failed) > 0 {
		t.Fatalf("%d records failed during the moves, first: %v", len(during.failed), during.failed[0])
	}
	n := checkLedger(t, c.brokers[4].addr(), topic, before) + checkLedger(t, c.brokers[4].addr(), topic, during)
	if got := fetchGroupOffset(t, c.admin(), group, topic); got != 42 {
		t.Fatalf("group %s offset after the moves = %d, want 42", group, got)
	}
	t.Logf("%d acknowledged records read back; longest gap between acks during the moves %v; total %v",
		n, during.maxGap.Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
}

// TestOpsReplaceDeadBroker carries out procedure 3: broker 3 is killed,
// its disk is wiped, its etcd member is replaced, and it starts again
// with the same node.id on the empty dir; it must copy every partition
// back from the leaders and rejoin every ISR while a producer runs.
func TestOpsReplaceDeadBroker(t *testing.T) {
	began := time.Now()
	c := newOpsCluster(t, 3)
	const topic = "orders"
	c.mustSamsa("topic", "create", topic, "--partitions", "3", "--replication-factor", "3")
	before := newAckLedger()
	produceN(t, c.seeds(), topic, "before", 3000, before)
	c.waitInSync(60*time.Second, topic)

	prod := startSteadyProducer(t, c.seeds(), topic, 100)
	dead := c.brokers[3]
	killed := time.Now()
	dead.kill()
	// Wait until the cluster has dropped it: its registration lease
	// expires and the controller takes it out of every ISR.
	waitFor(t, 60*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ps, err := partitionsOf(ctx, c.admin(), topic)
		if err != nil {
			return err
		}
		for _, p := range ps {
			if slices.Contains(p.ISR, 3) || p.Leader == 3 || p.Leader < 0 {
				return fmt.Errorf("%s-%d leader %d isr %v", topic, p.Partition, p.Leader, p.ISR)
			}
		}
		return nil
	})
	t.Logf("broker 3 out of every ISR %v after the kill", time.Since(killed).Round(time.Millisecond))

	// The new disk: the same path, empty (the etcd member's data went with
	// it). The member is removed and added again under the same name and
	// peer URL, then the broker starts to join the existing etcd cluster.
	if err := os.RemoveAll(dead.dir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dead.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cli := c.etcd(1)
	id, ok := memberID(t, cli, memberName(3))
	if !ok {
		t.Fatalf("no etcd member %s", memberName(3))
	}
	memberRemove(t, cli, id)
	memberAdd(t, cli, c.peerURL(3))
	dead.overrides = c.overrides(3, c.initialCluster(1, 2, 3), "existing")
	restart := time.Now()
	dead.launch()
	c.waitReady(3)
	c.waitInSync(120*time.Second, topic)
	t.Logf("replaced broker 3 serving and in every ISR %v after its start", time.Since(restart).Round(time.Millisecond))

	during := prod.stop(t)
	if len(during.failed) > 0 {
		t.Fatalf("%d records failed during the replacement, first: %v", len(during.failed), during.failed[0])
	}
	// Broker 3's own copy holds every record: its log end offsets equal
	// the leaders' once the producer has stopped.
	ends := endOffsets(t, c.brokers[1].addr(), topic)
	waitFor(t, 30*time.Second, func() error {
		text := scrape(t, c.adminAddr(3))
		for p, end := range ends {
			v, err := sample(text, "samsa_log_end_offset", `topic="`+topic+`"`, fmt.Sprintf(`partition="%d"`, p))
			if err != nil {
				return err
			}
			if int64(v) != end {
				return fmt.Errorf("broker 3 %s-%d log end %v, leader's %d", topic, p, v, end)
			}
		}
		return nil
	})
	n := checkLedger(t, c.brokers[1].addr(), topic, before) + checkLedger(t, c.brokers[1].addr(), topic, during)
	t.Logf("%d acknowledged records read back; end offsets %v on broker 3 too; longest ack gap %v; total %v",
		n, ends, during.maxGap.Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
}

// TestOpsRollingRestartAndUpgrade carries out procedure 4: each broker in
// turn is stopped with SIGTERM (controlled shutdown), started again from
// another binary file (the "new version"), and the next one waits until
// no partition is under-replicated. A producer with acks=all on an RF=3,
// min.insync.replicas=2 topic must see no failed record.
func TestOpsRollingRestartAndUpgrade(t *testing.T) {
	began := time.Now()
	c := newOpsCluster(t, 3)
	const topic = "orders"
	c.mustSamsa("topic", "create", topic, "--partitions", "6", "--replication-factor", "3")
	c.waitInSync(60*time.Second, topic)
	next := filepath.Join(t.TempDir(), "samsa-next")
	copyFile(t, samsaBin, next, 0o755)

	prod := startSteadyProducer(t, c.seeds(), topic, 100)
	for _, id := range []int{1, 2, 3} {
		b := c.brokers[id]
		step := time.Now()
		d := stopClean(t, b, 60*time.Second)
		b.bin = next
		b.launch()
		c.waitReady(id)
		c.waitInSync(120*time.Second, topic)
		t.Logf("broker %d: stopped in %v, back in every ISR %v after SIGTERM", id, d.Round(time.Millisecond), time.Since(step).Round(time.Millisecond))
	}
	// Leadership returns to the preferred replicas.
	c.mustSamsa("cluster", "elect-leaders")
	during := prod.stop(t)
	if len(during.failed) > 0 {
		t.Fatalf("%d records failed during the rolling restart, first: %v", len(during.failed), during.failed[0])
	}
	n := checkLedger(t, c.brokers[1].addr(), topic, during)
	t.Logf("%d acknowledged records read back, 0 failed; longest gap between acks %v; total %v",
		n, during.maxGap.Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
}

// copyFile copies src to dst with mode perm.
func copyFile(t *testing.T, src, dst string, perm os.FileMode) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, perm)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// copyTree copies the regular files and directories under src to dst,
// skipping the names in skip (relative to src) and sockets.
func copyTree(t *testing.T, src, dst string, skip ...string) {
	t.Helper()
	err := filepath.Walk(src, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if slices.Contains(skip, rel) {
			if info.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		target := filepath.Join(dst, rel)
		switch {
		case info.IsDir():
			return os.MkdirAll(target, 0o755)
		case info.Mode().IsRegular():
			copyFile(t, path, target, info.Mode().Perm())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestOpsBackupAndRestoreSingleBroker carries out procedure 5: a broker
// is stopped, its whole data dir (partitions, producer state, the
// embedded etcd member) is copied, and it is started again and written
// to. After the data dir is lost, the copy is put back: every record
// acknowledged before the backup, and the group's committed offset, read
// back; records written after the backup are gone; new writes continue
// from the backup's end offsets.
func TestOpsBackupAndRestoreSingleBroker(t *testing.T) {
	const topic, group = "orders", "billing"
	b := newBroker(t)
	createTopic(t, b.addr(), topic, 2, nil)
	before := newAckLedger()
	produceN(t, []string{b.addr()}, topic, "before", 500, before)
	adm := kadm.NewClient(newClient(t, b.addr()))
	commitGroupOffset(t, adm, group, topic, 123)
	backedUp := endOffsets(t, b.addr(), topic)

	stopClean(t, b, 30*time.Second)
	backup := t.TempDir()
	copyTree(t, b.dir, backup, "etcd.sock")
	b.start()
	produceN(t, []string{b.addr()}, topic, "after", 100, newAckLedger())

	// The disk is lost; restore the copy into an empty dir.
	b.kill()
	if err := os.RemoveAll(b.dir); err != nil {
		t.Fatal(err)
	}
	copyTree(t, backup, b.dir)
	b.start()
	if got := endOffsets(t, b.addr(), topic); fmt.Sprint(got) != fmt.Sprint(backedUp) {
		t.Fatalf("end offsets after restore %v, at backup %v", got, backedUp)
	}
	n := checkLedger(t, b.addr(), topic, before)
	adm = kadm.NewClient(newClient(t, b.addr()))
	if got := fetchGroupOffset(t, adm, group, topic); got != 123 {
		t.Fatalf("group offset after restore = %d, want 123", got)
	}
	again := newAckLedger()
	produceN(t, []string{b.addr()}, topic, "restored", 50, again)
	checkLedger(t, b.addr(), topic, again)
	t.Logf("restored: %d records of the backup read back, end offsets %v, group offset 123, 50 new records written", n, backedUp)
}

// TestOpsEtcdCompactAndDefragment carries out the maintenance of
// procedure 6 on a running broker's embedded etcd member: status,
// compaction to the current revision, defragmentation and the alarm
// list, with the etcd client API etcdctl uses; the broker keeps serving
// reads and writes throughout. When etcdctl is installed, the commands
// of docs/operations.md are run as written too.
func TestOpsEtcdCompactAndDefragment(t *testing.T) {
	const topic = "orders"
	b := newBroker(t)
	createTopic(t, b.addr(), topic, 3, nil)
	l := newAckLedger()
	produceN(t, []string{b.addr()}, topic, "before", 300, l)
	cli := etcdAt(t, b.dir)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ep := cli.Endpoints()[0]
	st, err := cli.Status(ctx, ep)
	if err != nil {
		t.Fatalf("etcd status: %v", err)
	}
	t.Logf("etcd %s: version %s, db size %d, in use %d, revision %d", ep, st.Version, st.DbSize, st.DbSizeInUse, st.Header.Revision)
	if _, err := cli.Compact(ctx, st.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
		t.Fatalf("etcd compact: %v", err)
	}
	if _, err := cli.Defragment(ctx, ep); err != nil {
		t.Fatalf("etcd defragment: %v", err)
	}
	alarms, err := cli.AlarmList(ctx)
	if err != nil || len(alarms.Alarms) != 0 {
		t.Fatalf("etcd alarms %v, %v", alarms, err)
	}
	after, err := cli.Status(ctx, ep)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("after compaction and defragmentation: db size %d, in use %d", after.DbSize, after.DbSizeInUse)
	// The broker's watch survives the compaction: a topic created now
	// shows up, and both topics take writes.
	createTopic(t, b.addr(), "after-compaction", 1, nil)
	produceN(t, []string{b.addr()}, topic, "after", 100, l)
	produceN(t, []string{b.addr()}, "after-compaction", "x", 10, newAckLedger())
	checkLedger(t, b.addr(), topic, l)

	if etcdctl, err := exec.LookPath("etcdctl"); err == nil {
		for _, args := range [][]string{
			{"endpoint", "status", "-w", "table"},
			{"defrag"},
			{"alarm", "list"},
			{"member", "list", "-w", "table"},
		} {
			cmd := exec.CommandContext(ctx, etcdctl, append([]string{"--endpoints=" + ep}, args...)...)
			cmd.Env = append(os.Environ(), "ETCDCTL_API=3")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("etcdctl %s: %v\n%s", strings.Join(args, " "), err, out)
			}
			t.Logf("etcdctl %s:\n%s", strings.Join(args, " "), out)
		}
	}
}

// TestOpsSizingFileHandlesAndMemory measures, for docs/operations.md's
// sizing notes, how many file descriptors and how much resident memory
// a broker uses per hosted partition: it reads /proc/<pid>/fd and
// /proc/<pid>/status with 0, 100 and 400 partitions of one record each.
func TestOpsSizingFileHandlesAndMemory(t *testing.T) {
	requireOps(t)
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("needs /proc")
	}
	b := newBroker(t)
	measure := func() (fds int, rssKiB int) {
		ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", b.cmd.Process.Pid))
		if err != nil {
			t.Fatal(err)
		}
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", b.cmd.Process.Pid))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(status), "\n") {
			if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				fmt.Sscanf(strings.TrimSpace(v), "%d", &rssKiB)
			}
		}
		return len(ents), rssKiB
	}
	fds0, rss0 := measure()
	t.Logf("0 partitions: %d fds, RSS %d KiB", fds0, rss0)
	total := 0
	for _, n := range []int{100, 300} {
		topic := fmt.Sprintf("sizing-%d", n)
		createTopic(t, b.addr(), topic, int32(n), nil)
		cl := newClient(t, b.addr(), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		var recs []*kgo.Record
		for i := 0; i < n; i++ {
			recs = append(recs, &kgo.Record{Value: []byte("x")})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		cancel()
		cl.Close()
		total += n
		time.Sleep(2 * time.Second) // NB: let the flusher and GC settle before reading RSS
		fds, rss := measure()
		t.Logf("%d partitions: %d fds (%.2f per partition), RSS %d KiB (%.1f KiB per partition)",
			total, fds, float64(fds-fds0)/float64(total), rss, float64(rss-rss0)/float64(total))
	}
}
