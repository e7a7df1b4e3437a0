package cluster

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

func TestOpenOnEmptyDirIsFastAndRegisters(t *testing.T) {
	dir := t.TempDir()
	start := time.Now()
	c := openTest(t, 0, dir)
	elapsed := time.Since(start)
	t.Logf("Open on an empty data dir took %s", elapsed)

	img := c.Image()
	if b, ok := img.Brokers[0]; !ok || b.Host != "127.0.0.1" || b.Port != 9092 || b.Incarnation == "" {
		t.Fatalf("broker 0 registration = %+v, %v", b, ok)
	}
	if img.ControllerID != 0 {
		t.Fatalf("ControllerID = %d, want 0", img.ControllerID)
	}
	if !regexp.MustCompile(`^[A-Za-z0-9_-]{22}$`).MatchString(img.ClusterID) || img.ClusterID != c.ClusterID() {
		t.Fatalf("cluster id %q (ClusterID() %q)", img.ClusterID, c.ClusterID())
	}
	meta, err := os.ReadFile(filepath.Join(dir, "meta.properties"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "version=1\ncluster.id=" + img.ClusterID + "\nnode.id=0\n"; string(meta) != want {
		t.Fatalf("meta.properties = %q, want %q", meta, want)
	}
}

func TestTopicLifecycle(t *testing.T) {
	ctx := testCtx(t)
	c := openTest(t, 0, t.TempDir())

	cfgs := map[string]string{"cleanup.policy": "compact"}
	tp, err := c.CreateTopic(ctx, "orders", 3, 1, cfgs)
	if err != nil {
		t.Fatal(err)
	}
	cfgs["cleanup.policy"] = "delete" // the topic must not share the caller's map
	img := c.Image()
	got := img.Topics["orders"]
	if got == nil {
		t.Fatal("CreateTopic returned before the image had the topic")
	}
	if got.ID != tp.ID || img.TopicIDs[tp.ID] != got || got.ID == ([16]byte{}) {
		t.Fatalf("topic id %x, image %x, by id %p", tp.ID, got.ID, img.TopicIDs[tp.ID])
	}
	if got.Configs["cleanup.policy"] != "compact" || len(got.Configs) != 1 {
		t.Fatalf("configs = %v", got.Configs)
	}
	if len(got.Replicas) != 3 || len(got.Partitions) != 3 {
		t.Fatalf("replicas %v, partitions %v", got.Replicas, got.Partitions)
	}
	for p, st := range got.Partitions {
		if st.Leader != 0 || st.LeaderEpoch != 0 || st.PartitionEpoch != 0 || !slices.Equal(st.ISR, []int32{0}) {
			t.Fatalf("partition %d state %+v", p, st)
		}
		if st.ModRevision == 0 || st.ModRevision != tp.Partitions[p].ModRevision {
			t.Fatalf("partition %d mod revision %d, returned %d", p, st.ModRevision, tp.Partitions[p].ModRevision)
		}
	}

	if _, err := c.CreateTopic(ctx, "orders", 1, 1, nil); !errors.Is(err, ErrTopicExists) {
		t.Fatalf("duplicate create: %v, want ErrTopicExists", err)
	}
	if _, err := c.CreateTopic(ctx, "payments", 2, 1, nil); err != nil {
		t.Fatal(err)
	}
	if names := topicNames(c.Image()); !slices.Equal(names, []string{"orders", "payments"}) {
		t.Fatalf("topics = %v", names)
	}

	if err := c.DeleteTopic(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	img = c.Image()
	if _, ok := img.Topics["orders"]; ok {
		t.Fatal("deleted topic still in image")
	}
	if _, ok := img.TopicIDs[tp.ID]; ok {
		t.Fatal("deleted topic id still in image")
	}
	if names := topicNames(img); !slices.Equal(names, []string{"payments"}) {
		t.Fatalf("topics = %v", names)
	}
	if err := c.DeleteTopic(ctx, "orders"); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("second delete: %v, want ErrUnknownTopic", err)
	}
	// The partition keys went with the topic: recreating starts clean.
	tp2, err := c.CreateTopic(ctx, "orders", 1, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tp2.ID == tp.ID || len(c.Image().Topics["orders"].Partitions) != 1 {
		t.Fatalf("recreated topic: id %x (old %x), partitions %d", tp2.ID, tp.ID, len(c.Image().Topics["orders"].Partitions))
	}
	resp, err := c.cli.Get(ctx, c.keys.partitionsOf("orders"), clientKeysOnly()...)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 {
		t.Fatalf("%d partition keys after recreate, want 1", len(resp.Kvs))
	}
}

func TestCreateTopicValidates(t *testing.T) {
	ctx := testCtx(t)
	c := openTest(t, 0, t.TempDir())
	for _, tc := range []struct {
		name  string
		topic string
		parts int32
		rf    int16
		want  error
	}{
		{"zero partitions", "a", 0, 1, ErrInvalidPartitions},
		{"negative partitions", "a", -1, 1, ErrInvalidPartitions},
		{"zero replication factor", "a", 1, 0, ErrInvalidReplicationFactor},
		{"more replicas than brokers", "a", 1, 2, ErrInvalidReplicationFactor},
		{"slash in name", "a/b", 1, 1, ErrInvalidTopic},
		{"dot", ".", 1, 1, ErrInvalidTopic},
		{"empty", "", 1, 1, ErrInvalidTopic},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := c.CreateTopic(ctx, tc.topic, tc.parts, tc.rf, nil); !errors.Is(err, tc.want) {
				t.Fatalf("CreateTopic: %v, want %v", err, tc.want)
			}
		})
	}
	if n := len(c.Image().Topics); n != 0 {
		t.Fatalf("%d topics after failed creates", n)
	}
}

func TestConcurrentCreatesOfOneNameHaveOneWinner(t *testing.T) {
	ctx := testCtx(t)
	c := openTest(t, 0, t.TempDir())
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	ids := make([][16]byte, n)
	for i := range n {
		wg.Go(func() {
			tp, err := c.CreateTopic(ctx, "race", int32(i+1), 1, nil)
			errs[i] = err
			if err == nil {
				ids[i] = tp.ID
			}
		})
	}
	wg.Wait()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil:
			if winner >= 0 {
				t.Fatalf("creates %d and %d both succeeded", winner, i)
			}
			winner = i
		case !errors.Is(err, ErrTopicExists):
			t.Fatalf("create %d: %v", i, err)
		}
	}
	if winner < 0 {
		t.Fatal("no create succeeded")
	}
	got := c.Image().Topics["race"]
	if got.ID != ids[winner] || len(got.Partitions) != winner+1 {
		t.Fatalf("image has id %x with %d partitions; winner %d wrote %x", got.ID, len(got.Partitions), winner, ids[winner])
	}
}

func TestCreatePartitionsGrowsTopic(t *testing.T) {
	ctx := testCtx(t)
	c := openTest(t, 0, t.TempDir())
	tp, err := c.CreateTopic(ctx, "grow", 2, 1, map[string]string{"retention.ms": "1000"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CreatePartitions(ctx, "grow", 5); err != nil {
		t.Fatal(err)
	}
	got := c.Image().Topics["grow"]
	if len(got.Replicas) != 5 || len(got.Partitions) != 5 {
		t.Fatalf("after grow: %d replicas, %d partitions", len(got.Replicas), len(got.Partitions))
	}
	if got.ID != tp.ID || got.Configs["retention.ms"] != "1000" {
		t.Fatalf("grow changed id or configs: %x %v", got.ID, got.Configs)
	}
	for p := range 2 {
		if got.Partitions[p].ModRevision != tp.Partitions[p].ModRevision {
			t.Fatalf("partition %d rewritten by CreatePartitions", p)
		}
	}
	for p := 2; p < 5; p++ {
		st := got.Partitions[p]
		if st.Leader != 0 || !slices.Equal(st.ISR, []int32{0}) || st.ModRevision <= tp.Partitions[0].ModRevision {
			t.Fatalf("new partition %d state %+v", p, st)
		}
	}
	for _, tc := range []struct {
		topic string
		count int32
		want  error
	}{
		{"grow", 5, ErrInvalidPartitions},
		{"grow", 3, ErrInvalidPartitions},
		{"nope", 3, ErrUnknownTopic},
	} {
		if err := c.CreatePartitions(ctx, tc.topic, tc.count); !errors.Is(err, tc.want) {
			t.Fatalf("CreatePartitions(%s, %d): %v, want %v", tc.topic, tc.count, err, tc.want)
		}
	}
}

func TestConfigsReplaceAndRemove(t *testing.T) {
	ctx := testCtx(t)
	c := openTest(t, 0, t.TempDir())
	if _, err := c.CreateTopic(ctx, "cfg", 1, 1, map[string]string{"a": "1", "b": "2"}); err != nil {
		t.Fatal(err)
	}
	if err := c.SetTopicConfigs(ctx, "cfg", map[string]string{"c": "3"}); err != nil {
		t.Fatal(err)
	}
	if got := c.Image().Topics["cfg"].Configs; len(got) != 1 || got["c"] != "3" {
		t.Fatalf("topic configs = %v", got)
	}
	if err := c.SetTopicConfigs(ctx, "missing", nil); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("SetTopicConfigs on a missing topic: %v", err)
	}

	if err := c.SetBrokerConfigs(ctx, "", map[string]string{"log.retention.ms": "5"}); err != nil {
		t.Fatal(err)
	}
	if err := c.SetBrokerConfigs(ctx, "0", map[string]string{"num.io.threads": "4"}); err != nil {
		t.Fatal(err)
	}
	bc := c.Image().BrokerConfigs
	if bc[""]["log.retention.ms"] != "5" || bc["0"]["num.io.threads"] != "4" || len(bc) != 2 {
		t.Fatalf("broker configs = %v", bc)
	}
	if err := c.SetBrokerConfigs(ctx, "", nil); err != nil {
		t.Fatal(err)
	}
	if err := c.SetBrokerConfigs(ctx, "7", nil); err != nil { // never set: a no-op
		t.Fatal(err)
	}
	if bc := c.Image().BrokerConfigs; len(bc) != 1 || bc["0"]["num.io.threads"] != "4" {
		t.Fatalf("broker configs after removing the default = %v", bc)
	}
	if err := c.SetBrokerConfigs(ctx, "x", map[string]string{"a": "b"}); err == nil {
		t.Fatal("SetBrokerConfigs accepted node \"x\"")
	}
}

func TestAlterPartitionIsCompareAndSwap(t *testing.T) {
	ctx := testCtx(t)
	c := openTest(t, 0, t.TempDir())
	if _, err := c.CreateTopic(ctx, "isr", 1, 1, nil); err != nil {
		t.Fatal(err)
	}
	st, _ := c.Image().Partition("isr", 0)
	next := st
	next.LeaderEpoch, next.PartitionEpoch, next.ISR = 1, 1, []int32{0}
	written, err := c.AlterPartition(ctx, "isr", 0, next)
	if err != nil {
		t.Fatal(err)
	}
	if written.ModRevision <= st.ModRevision {
		t.Fatalf("mod revision %d after write, was %d", written.ModRevision, st.ModRevision)
	}
	if got, _ := c.Image().Partition("isr", 0); got.LeaderEpoch != 1 || got.PartitionEpoch != 1 || got.ModRevision != written.ModRevision {
		t.Fatalf("image after AlterPartition: %+v", got)
	}
	// A second write based on the old state loses.
	stale := st
	stale.PartitionEpoch = 5
	if _, err := c.AlterPartition(ctx, "isr", 0, stale); !errors.Is(err, ErrInvalidUpdateVersion) {
		t.Fatalf("stale AlterPartition: %v, want ErrInvalidUpdateVersion", err)
	}
	if _, err := c.AlterPartition(ctx, "isr", 3, written); !errors.Is(err, ErrUnknownPartition) {
		t.Fatalf("AlterPartition of a missing partition: %v, want ErrUnknownPartition", err)
	}
	if got, _ := c.Image().Partition("isr", 0); got.PartitionEpoch != 1 {
		t.Fatalf("stale write changed the state: %+v", got)
	}
}

func TestReopenKeepsClusterIDAndTopics(t *testing.T) {
	ctx := testCtx(t)
	dir := t.TempDir()
	c, err := Open(ctx, Config{NodeID: 3, DataDir: dir, AdvertisedHost: "h", AdvertisedPort: 1})
	if err != nil {
		t.Fatal(err)
	}
	tp, err := c.CreateTopic(ctx, "durable", 4, 1, map[string]string{"k": "v"})
	if err != nil {
		t.Fatal(err)
	}
	id := c.ClusterID()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}

	start := time.Now()
	c2 := openTest(t, 3, dir)
	t.Logf("reopen took %s", time.Since(start))
	img := c2.Image()
	if img.ClusterID != id {
		t.Fatalf("cluster id %s after reopen, was %s", img.ClusterID, id)
	}
	got := img.Topics["durable"]
	if got == nil || got.ID != tp.ID || len(got.Partitions) != 4 || got.Configs["k"] != "v" {
		t.Fatalf("topic after reopen: %+v", got)
	}
	if len(img.Brokers) != 1 || img.Brokers[3].Incarnation == "" {
		t.Fatalf("brokers after reopen: %+v", img.Brokers)
	}
}

func TestOpenRejectsOtherNodeID(t *testing.T) {
	ctx := testCtx(t)
	dir := t.TempDir()
	c := openTest(t, 1, dir)
	other := t.TempDir()
	if err := writeMetaProperties(other, metaProperties{ClusterID: "abc", NodeID: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(ctx, Config{NodeID: 2, DataDir: other}); !errors.Is(err, ErrInconsistentNodeID) {
		t.Fatalf("Open with node.id mismatch: %v, want ErrInconsistentNodeID", err)
	}
	// A data dir of another cluster cannot join this etcd.
	if _, err := Open(ctx, Config{NodeID: 1, DataDir: other, EtcdEndpoints: []string{c.ClientURL()}}); !errors.Is(err, ErrInconsistentClusterID) {
		t.Fatalf("Open with cluster.id mismatch: %v, want ErrInconsistentClusterID", err)
	}
}

func TestTwoBrokersShareMetadata(t *testing.T) {
	ctx := testCtx(t)
	c0 := openTest(t, 0, t.TempDir())
	dir1 := t.TempDir()
	c1, err := Open(ctx, Config{NodeID: 1, DataDir: dir1, EtcdEndpoints: []string{c0.ClientURL()},
		AdvertisedHost: "10.0.0.1", AdvertisedPort: 9093, SessionTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			_ = c1.Close()
		}
	})
	if c1.ClusterID() != c0.ClusterID() {
		t.Fatalf("node 1 joined cluster %s, node 0 is in %s", c1.ClusterID(), c0.ClusterID())
	}
	if m, ok, err := readMetaProperties(dir1); err != nil || !ok || m.ClusterID != c0.ClusterID() || m.NodeID != 1 {
		t.Fatalf("node 1 meta.properties: %+v %v %v", m, ok, err)
	}
	bothRegistered := func(img *Image) bool { return len(img.Brokers) == 2 }
	img0 := waitImage(t, c0, "node 0 to see node 1", bothRegistered)
	waitImage(t, c1, "node 1 to see node 0", bothRegistered)
	if b := img0.Brokers[1]; b.Host != "10.0.0.1" || b.Port != 9093 {
		t.Fatalf("node 0 sees node 1 as %+v", b)
	}

	// A write through one broker shows on the other, with replicas on both.
	tp, err := c1.CreateTopic(ctx, "shared", 4, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	img0 = waitImage(t, c0, "node 0 to see the topic", func(img *Image) bool { return img.Topics["shared"] != nil })
	got := img0.Topics["shared"]
	if got.ID != tp.ID || len(got.Partitions) != 4 {
		t.Fatalf("node 0 sees %+v", got)
	}
	leaders := map[int32]int{}
	for p, r := range got.Replicas {
		if len(r) != 2 || r[0] == r[1] || got.Partitions[p].Leader != r[0] {
			t.Fatalf("partition %d replicas %v state %+v", p, r, got.Partitions[p])
		}
		leaders[r[0]]++
	}
	if leaders[0] != 2 || leaders[1] != 2 {
		t.Fatalf("leaders not spread: %v", leaders)
	}
	if err := c0.DeleteTopic(ctx, "shared"); err != nil {
		t.Fatal(err)
	}
	waitImage(t, c1, "node 1 to see the deletion", func(img *Image) bool { return img.Topics["shared"] == nil })

	// Closing node 1 revokes its lease: its registration goes at once.
	closed = true
	if err := c1.Close(); err != nil {
		t.Fatal(err)
	}
	img0 = waitImage(t, c0, "node 1's registration to go", func(img *Image) bool { return len(img.Brokers) == 1 })
	if _, ok := img0.Brokers[0]; !ok || img0.ControllerID != 0 {
		t.Fatalf("after node 1 closed: brokers %v controller %d", img0.Brokers, img0.ControllerID)
	}
}

func TestLostLeaseRegistersAgain(t *testing.T) {
	ctx := testCtx(t)
	c := openTest(t, 0, t.TempDir())
	old := c.leaseID.Load()
	before := c.Image().Brokers[0]
	rr, err := c.cli.Revoke(ctx, leaseID(old))
	if err != nil {
		t.Fatal(err)
	}
	// The revocation deleted the key at rr's revision; a later put is the
	// new registration.
	img := waitImage(t, c, "a new registration", func(img *Image) bool {
		_, ok := img.Brokers[0]
		return ok && img.Revision > rr.Header.Revision
	})
	if b := img.Brokers[0]; !reflect.DeepEqual(b, before) {
		t.Fatalf("registration after lease loss %+v, before %+v", b, before)
	}
	resp, err := c.cli.Get(ctx, c.keys.broker(0))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 || resp.Kvs[0].Lease == old || resp.Kvs[0].Lease == 0 {
		t.Fatalf("registration key %v, old lease %d", resp.Kvs, old)
	}
}

func TestWatchCompactionReloads(t *testing.T) {
	ctx := testCtx(t)
	c := openTest(t, 0, t.TempDir())
	if _, err := c.CreateTopic(ctx, "before", 2, 1, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTopic(ctx, "gone", 1, 1, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteTopic(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	rev := c.Image().Revision
	if _, err := c.cli.Compact(ctx, rev); err != nil {
		t.Fatal(err)
	}

	// A second view on the same client whose watch starts before the
	// compaction point: the watch must report the compaction, and the
	// reload must rebuild what the live image holds.
	lag := &Cluster{cli: c.cli, keys: c.keys, log: c.log}
	lag.ctx, lag.cancel = context.WithCancel(ctx)
	defer lag.cancel()
	b := newBuilder(c.clusterID, c.keys, c.log)
	lag.state.Store(&imageState{img: b.cur, changed: make(chan struct{})})
	err := lag.watch(b, 1)
	if err == nil || !strings.Contains(err.Error(), "compacted") {
		t.Fatalf("watch from revision 2 after compaction at %d: %v", rev, err)
	}
	changed := lag.Changed()
	got, ok := lag.reload(b)
	if !ok || got < rev {
		t.Fatalf("reload at revision %d (ok %v), compacted at %d", got, ok, rev)
	}
	select {
	case <-changed:
	default:
		t.Fatal("reload did not signal Changed")
	}
	img, live := lag.Image(), c.Image()
	if names := topicNames(img); !slices.Equal(names, []string{"before"}) {
		t.Fatalf("reloaded topics %v", names)
	}
	if img.Topics["before"].ID != live.Topics["before"].ID || len(img.Brokers) != 1 || img.ControllerID != 0 {
		t.Fatalf("reloaded image %+v, live %+v", img, live)
	}

	// The live watch is unaffected and keeps following writes.
	if _, err := c.CreateTopic(ctx, "after", 1, 1, nil); err != nil {
		t.Fatal(err)
	}
	if names := topicNames(c.Image()); !slices.Equal(names, []string{"after", "before"}) {
		t.Fatalf("topics = %v", names)
	}
}

func TestCloseIsIdempotentAndStopsWaiters(t *testing.T) {
	c, err := Open(context.Background(), Config{NodeID: 0, DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.waitRevision(context.Background(), c.Image().Revision+100); !errors.Is(err, ErrClosed) {
		t.Fatalf("wait after Close: %v, want ErrClosed", err)
	}
}

func topicNames(img *Image) []string {
	var names []string
	for n := range img.Topics {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func TestLongDataDirFallsBackToLoopbackTCP(t *testing.T) {
	ctx := testCtx(t)
	dir := filepath.Join(t.TempDir(), strings.Repeat("d", maxUnixSocketPath))
	c0 := openTest(t, 0, dir)
	if u := c0.ClientURL(); !strings.HasPrefix(u, "http://127.0.0.1:") {
		t.Fatalf("client URL %q, want loopback TCP", u)
	}
	c1 := openTest(t, 1, t.TempDir(), c0.ClientURL())
	if _, err := c1.CreateTopic(ctx, "t", 2, 2, nil); err != nil {
		t.Fatal(err)
	}
	waitImage(t, c0, "the topic from node 1", func(img *Image) bool { return img.Topics["t"] != nil })
}

func TestShortDataDirUsesUnixSocket(t *testing.T) {
	dir := t.TempDir()
	c := openTest(t, 0, dir)
	abs, err := filepath.Abs(filepath.Join(dir, "etcd.sock"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "unix://" + abs; len(abs) <= maxUnixSocketPath && c.ClientURL() != want {
		t.Fatalf("client URL %q, want %q", c.ClientURL(), want)
	}
}

func TestControllerIsOldestCandidateAndFailsOver(t *testing.T) {
	ctx := testCtx(t)
	c9 := openTest(t, 9, t.TempDir())
	c4 := openTest(t, 4, t.TempDir(), c9.ClientURL())
	c2 := openTest(t, 2, t.TempDir(), c9.ClientURL())
	img := waitImage(t, c2, "three brokers", func(img *Image) bool { return len(img.Brokers) == 3 })
	// The first broker to register wins, not the lowest id.
	if img.ControllerID != 9 {
		t.Fatalf("controller %d, want 9", img.ControllerID)
	}

	// Node 9 loses its session: node 4, the next oldest, takes over, and
	// node 9 comes back behind both.
	rr, err := c9.cli.Revoke(ctx, leaseID(c9.leaseID.Load()))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []*Cluster{c9, c4, c2} {
		img := waitImage(t, c, "node 9 to register again", func(img *Image) bool {
			_, ok := img.Brokers[9]
			return ok && img.Revision > rr.Header.Revision
		})
		if img.ControllerID != 4 {
			t.Fatalf("node %d sees controller %d, want 4", c.cfg.NodeID, img.ControllerID)
		}
	}
	if err := c4.Close(); err != nil {
		t.Fatal(err)
	}
	img = waitImage(t, c2, "node 4 to leave", func(img *Image) bool { return len(img.Brokers) == 2 })
	if img.ControllerID != 2 {
		t.Fatalf("after node 4 closed, controller %d, want 2", img.ControllerID)
	}
}

// A controller's writes carry the election in their compares: a broker
// that decided from an image in which it won, but has since lost the
// election in etcd, cannot commit the decision even when the partition
// itself has not changed.
func TestControllerWritesAreFenced(t *testing.T) {
	ctx := testCtx(t)
	c9 := openTest(t, 9, t.TempDir())
	c4 := openTest(t, 4, t.TempDir(), c9.ClientURL())
	waitImage(t, c9, "both brokers", func(img *Image) bool { return len(img.Brokers) == 2 })
	if _, err := c9.CreateTopic(ctx, "fenced", 1, 2, nil); err != nil {
		t.Fatal(err)
	}
	stale := c9.Image()
	if stale.ControllerID != 9 {
		t.Fatalf("controller %d, want 9", stale.ControllerID)
	}

	// Node 9 loses its session and registers again behind node 4.
	rr, err := c9.cli.Revoke(ctx, leaseID(c9.leaseID.Load()))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []*Cluster{c9, c4} {
		waitImage(t, c, "node 4 to win", func(img *Image) bool {
			_, ok := img.Brokers[9]
			return ok && img.ControllerID == 4 && img.Revision > rr.Header.Revision
		})
	}

	st, _ := c9.Image().Partition("fenced", 0)
	next := st
	next.PartitionEpoch++
	for name, fence := range map[string][]clientv3.Cmp{
		"image where node 9 won": c9.controllerFence(stale),
		"current image":          c9.controllerFence(c9.Image()),
	} {
		if _, err := c9.alterPartition(ctx, "fenced", 0, next, fence); !errors.Is(err, ErrInvalidUpdateVersion) {
			t.Fatalf("node 9 writes with the fence of the %s: %v, want ErrInvalidUpdateVersion", name, err)
		}
	}
	if got, _ := c4.Image().Partition("fenced", 0); got.ModRevision != st.ModRevision {
		t.Fatalf("a fenced write changed the state: %+v, was %+v", got, st)
	}
	if _, err := c4.alterPartition(ctx, "fenced", 0, next, c4.controllerFence(c4.Image())); err != nil {
		t.Fatalf("the controller's write: %v", err)
	}
}

// A broker that restarts leads every partition again at a new leader
// epoch under its new incarnation, and the controller writes those
// elections in batches: with 600 partitions, far fewer etcd revisions
// than partitions (one transaction each made a restart of a broker with
// 10,000 partitions wait 20 s for its elections).
func TestRestartReelectsEveryPartitionInBatches(t *testing.T) {
	ctx := testCtx(t)
	dir := t.TempDir()
	c := openTest(t, 0, dir)
	const topics, parts = 6, 100
	for i := range topics {
		if _, err := c.CreateTopic(ctx, "many-"+string(rune('a'+i)), parts, 1, nil); err != nil {
			t.Fatal(err)
		}
	}
	before := waitImage(t, c, "every partition led", func(img *Image) bool {
		n := 0
		for _, tp := range img.Topics {
			for _, st := range tp.Partitions {
				if st.Leader == 0 {
					n++
				}
			}
		}
		return n == topics*parts
	})
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}

	c2 := openTest(t, 0, dir)
	inc := c2.Incarnation()
	start := c2.Image().Revision
	after := waitImage(t, c2, "every partition led by the new incarnation", func(img *Image) bool {
		for _, tp := range img.Topics {
			for _, st := range tp.Partitions {
				if st.Leader != 0 || st.LeaderIncarnation != inc {
					return false
				}
			}
		}
		return true
	})
	for name, tp := range after.Topics {
		for p, st := range tp.Partitions {
			if prev := before.Topics[name].Partitions[p]; st.LeaderEpoch != prev.LeaderEpoch+1 {
				t.Fatalf("%s-%d: leader epoch %d after the restart, want %d", name, p, st.LeaderEpoch, prev.LeaderEpoch+1)
			}
		}
	}
	if revs := after.Revision - start; revs > topics*parts/controllerBatch+10 {
		t.Fatalf("the elections of %d partitions took %d etcd revisions, want about %d", topics*parts, revs, topics*parts/controllerBatch)
	}
}

// A broker that reports a replica offline (its log dir failed) in its
// registration loses that partition's leadership and ISR membership to
// the other in-sync replica and keeps its other leaderships; the report
// survives a re-registration after a lost lease and a controlled
// shutdown's rewrite of the registration. Reference: KIP-112.
func TestOfflineReplicasMoveLeadershipAndStayInTheRegistration(t *testing.T) {
	ctx := testCtx(t)
	c0 := openTest(t, 0, t.TempDir())
	c1 := openTest(t, 1, t.TempDir(), c0.ClientURL())
	waitImage(t, c0, "both brokers", func(img *Image) bool { return len(img.Brokers) == 2 })
	if _, err := c0.CreateTopic(ctx, "t", 4, 2, nil); err != nil {
		t.Fatal(err)
	}
	img := waitImage(t, c1, "the topic", func(img *Image) bool { return img.Topics["t"] != nil })
	var led []int32
	for p, st := range img.Topics["t"].Partitions {
		if st.Leader == 1 {
			led = append(led, int32(p))
		}
	}
	if len(led) != 2 {
		t.Fatalf("broker 1 leads %v, want two partitions", led)
	}
	off, kept := led[0], led[1]
	if err := c1.SetOfflineReplicas(ctx, []string{"/disk2"}, map[string][]int32{"t": {off}}); err != nil {
		t.Fatal(err)
	}
	moved := func(img *Image) bool {
		st := img.Topics["t"].Partitions[off]
		return st.Leader == 0 && !slices.Contains(st.ISR, 1)
	}
	img = waitImage(t, c1, "leadership of the offline replica to move", moved)
	if st := img.Topics["t"].Partitions[kept]; st.Leader != 1 || !slices.Contains(st.ISR, 1) {
		t.Fatalf("broker 1's online partition changed: %+v", st)
	}
	if b := img.Brokers[1]; !slices.Equal(b.OfflineLogDirs, []string{"/disk2"}) || !b.ReplicaOffline("t", off) || b.ReplicaOffline("t", kept) {
		t.Fatalf("registration %+v", b)
	}

	rr, err := c1.cli.Revoke(ctx, leaseID(c1.leaseID.Load()))
	if err != nil {
		t.Fatal(err)
	}
	img = waitImage(t, c0, "a new registration", func(img *Image) bool {
		_, ok := img.Brokers[1]
		return ok && img.Revision > rr.Header.Revision
	})
	if b := img.Brokers[1]; !b.ReplicaOffline("t", off) {
		t.Fatalf("re-registration lost the offline replicas: %+v", b)
	}
	if err := c1.BeginControlledShutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if b := c1.Image().Brokers[1]; !b.ShuttingDown || !b.ReplicaOffline("t", off) {
		t.Fatalf("controlled shutdown's registration %+v", b)
	}
	// Neither the re-registration nor the shutdown made it eligible again.
	if st := c1.Image().Topics["t"].Partitions[off]; st.Leader != 0 || slices.Contains(st.ISR, 1) {
		t.Fatalf("offline replica back: %+v", st)
	}
}
