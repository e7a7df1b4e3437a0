package broker_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/storage"
	"samsa/internal/testutil"
	"samsa/internal/vfs"
)

// jbodCluster starts three brokers with two log dirs each, <base>/b<id>-a
// and <base>/b<id>-b, broker i on fss[i].
func jbodCluster(t *testing.T, base string, fss []vfs.FS) *testutil.Cluster {
	t.Helper()
	return testutil.StartClusterOnFS(t, fss,
		"log.dirs="+filepath.Join(base, "b{node.id}-a")+","+filepath.Join(base, "b{node.id}-b"),
		"default.replication.factor=3", "min.insync.replicas=2", "replica.lag.time.max.ms=2000",
		"offsets.topic.num.partitions=1", "auto.leader.rebalance.enable=false")
}

// leadAll makes broker 0 the preferred replica and the leader of every
// partition of topic.
func leadAll(t *testing.T, c *testutil.Cluster, topic string, partitions int32) {
	t.Helper()
	adm := c.Admin()
	for p := range partitions {
		if c.Leader(topic, p) == 0 {
			continue
		}
		if err := reassign(t, adm, topic, p, []int32{0, 1, 2}); err != nil {
			t.Fatalf("reorder %s-%d: %v", topic, p, err)
		}
		waitReplicas(t, c, topic, p, []int32{0, 1, 2})
		if res := electOne(t, adm, kadm.ElectPreferredReplica, kadm.TopicsSet{topic: {p: {}}}); res.Err != nil {
			t.Fatalf("elect broker 0 for %s-%d: %v", topic, p, res.Err)
		}
		waitLeading(t, c, topic, p, 0)
	}
}

// TestLogDirFailureMovesOnlyThatDirsPartitions is TESTPLAN D-06 (read-only
// log dir) in process, KIP-112: broker 0 has two log dirs and leads the
// four partitions of a topic, two in each. While an idempotent acks=all
// producer writes to every partition, every write and sync in its second
// dir fails with EROFS. That dir goes offline: its partitions answer
// KAFKA_STORAGE_ERROR on broker 0 (Produce, Fetch, ListOffsets), their
// leadership moves to the other in-sync replicas and broker 0 leaves
// their ISRs, DescribeLogDirs reports the dir with KAFKA_STORAGE_ERROR
// and Metadata lists broker 0 among their offline replicas; broker 0
// keeps leading the partitions of its first dir and stays in their ISRs.
// With the fault gone, broker 0 restarts, its replicas of the failed dir
// catch up and rejoin the ISRs. No acknowledged record is lost,
// duplicated or reordered, and no produce fails.
func TestLogDirFailureMovesOnlyThatDirsPartitions(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	inj := vfs.NewInjector()
	fss := []vfs.FS{vfs.WithErrors(vfs.Default, inj), vfs.Default, vfs.Default}
	c := jbodCluster(t, base, fss)
	const topic, partitions = "jbod", 4
	createReplicated(t, c, topic, partitions)
	leadAll(t, c, topic, partitions)

	b0 := c.Brokers[0].Node
	dirA, dirB := filepath.Join(base, "b0-a"), filepath.Join(base, "b0-b")
	inDir := map[string][]int32{}
	testutil.Eventually(t, 30*time.Second, func() error {
		clear(inDir)
		for p := range int32(partitions) {
			rp := b0.Broker().Replicas().Get(storage.TopicPartition{Topic: topic, Partition: p})
			if rp == nil {
				return fmt.Errorf("broker 0 does not host %s-%d yet", topic, p)
			}
			inDir[rp.LogDir()] = append(inDir[rp.LogDir()], p)
		}
		return nil
	})
	if len(inDir[dirA]) != 2 || len(inDir[dirB]) != 2 {
		t.Fatalf("broker 0 placed the partitions %v, want two in each of %s and %s", inDir, dirA, dirB)
	}

	prod := c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RecordDeliveryTimeout(2*time.Minute),
		kgo.MetadataMinAge(50*time.Millisecond), kgo.RetryBackoffFn(func(int) time.Duration { return 20 * time.Millisecond }))
	pp := startPacedProducer(t, prod, topic, partitions, 10*time.Millisecond)
	pp.waitAcked(t, 200)

	inj.Only(dirB)
	inj.FailWith(syscall.EROFS)
	for _, op := range []vfs.Op{vfs.OpWrite, vfs.OpSync, vfs.OpSyncDir, vfs.OpCreate, vfs.OpRename, vfs.OpTruncate} {
		inj.FailAfter(op, 0)
	}
	failedAt := time.Now()
	testutil.Eventually(t, 30*time.Second, func() error {
		for _, p := range inDir[dirB] {
			l := c.Leader(topic, p)
			if isr := c.ISR(topic, p); l <= 0 || isr == "?" || slices.Contains(isrOf(isr), 0) {
				return fmt.Errorf("%s-%d: leader %d, ISR [%s]", topic, p, l, isr)
			}
		}
		return nil
	})
	moved := time.Since(failedAt)
	ackedBy := func() map[int32]int {
		pp.mu.Lock()
		defer pp.mu.Unlock()
		n := map[int32]int{}
		for p, s := range pp.acked {
			n[p] = len(s)
		}
		return n
	}
	before := ackedBy()
	pp.waitAcked(t, 200)
	// Broker 0 still leads the healthy dir's partitions: the records
	// acknowledged there since went through it.
	after := ackedBy()
	for p := range int32(partitions) {
		if after[p] <= before[p] {
			t.Errorf("%s-%d: no record acknowledged after the failure (%d before, %d after)", topic, p, before[p], after[p])
		}
	}

	addr := c.Brokers[0].Addr()
	cl := c.Client()
	for _, p := range inDir[dirA] {
		if l, isr := c.Leader(topic, p), c.ISR(topic, p); l != 0 || isr != "0 1 2" {
			t.Errorf("%s-%d of the healthy dir: leader %d, ISR [%s], want 0 and [0 1 2]", topic, p, l, isr)
		}
	}
	storageErr := kerr.KafkaStorageError.Code
	for _, p := range inDir[dirB] {
		if code := produceCodeAt(t, addr, topic, p); code != storageErr {
			t.Errorf("produce to %s-%d of the failed dir at broker 0: code %d, want KAFKA_STORAGE_ERROR", topic, p, code)
		}
		if code := fetchCodeAt(t, addr, topic, p); code != storageErr {
			t.Errorf("fetch of %s-%d of the failed dir at broker 0: code %d, want KAFKA_STORAGE_ERROR", topic, p, code)
		}
		if code := listOffsetsCode(t, addr, topic, p); code != storageErr {
			t.Errorf("list offsets of %s-%d of the failed dir at broker 0: code %d, want KAFKA_STORAGE_ERROR", topic, p, code)
		}
	}
	ldReq := kmsg.NewPtrDescribeLogDirsRequest()
	ldReq.Version = 4
	ld := rawRequest(t, addr, ldReq).(*kmsg.DescribeLogDirsResponse)
	if len(ld.Dirs) != 2 || ld.Dirs[0].Dir != dirA || ld.Dirs[1].Dir != dirB {
		t.Fatalf("DescribeLogDirs: %+v", ld.Dirs)
	}
	if d := ld.Dirs[1]; d.ErrorCode != storageErr || len(d.Topics) != 0 {
		t.Errorf("failed dir described with code %d and %d topics, want KAFKA_STORAGE_ERROR and none", d.ErrorCode, len(d.Topics))
	}
	if d := ld.Dirs[0]; d.ErrorCode != 0 || d.TotalBytes <= 0 || d.UsableBytes <= 0 || len(d.Topics) != 1 || len(d.Topics[0].Partitions) != 2 {
		t.Errorf("healthy dir described as %+v", d)
	}
	md := request[*kmsg.MetadataResponse](t, cl, topicMetadataReq(topic))
	for _, mp := range md.Topics[0].Partitions {
		offline := slices.Contains(mp.OfflineReplicas, 0)
		if want := slices.Contains(inDir[dirB], mp.Partition); offline != want {
			t.Errorf("metadata %s-%d: offline replicas %v (broker 0 offline %v, want %v)", topic, mp.Partition, mp.OfflineReplicas, offline, want)
		}
	}

	// The disk repaired, broker 0 comes back with its second dir and
	// catches up.
	c.Stop(0)
	inj.Reset()
	c.Start(0)
	waitFullISR(t, c, topic, partitions)
	if br := c.Brokers[1].Node.Image().Brokers[0]; len(br.OfflineReplicas) != 0 || len(br.OfflineLogDirs) != 0 {
		t.Errorf("broker 0 registered again with offline replicas %v in %v", br.OfflineReplicas, br.OfflineLogDirs)
	}
	pp.waitAcked(t, 200)
	gap := pp.check(t, c)
	t.Logf("D-06 (EROFS, in process): leadership of the failed dir's partitions moved in %s; longest gap between acks %s; %d records acknowledged",
		moved.Round(time.Millisecond), gap.Round(time.Millisecond), pp.count.Load())
}

// isrOf parses an ISR as testutil.Cluster.ISR prints it.
func isrOf(s string) []int32 {
	var out []int32
	for _, f := range strings.Fields(s) {
		id, _ := strconv.Atoi(f)
		out = append(out, int32(id))
	}
	return out
}

// produceCodeAt sends one acks=1 record to topic/partition at the broker at
// addr and returns the partition's error code.
func produceCodeAt(t *testing.T, addr, topic string, partition int32) int16 {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = 9, 1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = partition
	rp.Records = plainBatch(t, "probe", 1)
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := rawRequest(t, addr, req).(*kmsg.ProduceResponse)
	return resp.Topics[0].Partitions[0].ErrorCode
}

// fetchCodeAt fetches topic/partition from offset 0 at the broker at addr,
// as a consumer (Fetch v11), and returns the partition's error code.
func fetchCodeAt(t *testing.T, addr, topic string, partition int32) int16 {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.ReplicaID, req.MaxBytes, req.SessionEpoch = 11, -1, 1<<20, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = partition, 1<<20, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := rawRequest(t, addr, req).(*kmsg.FetchResponse)
	return resp.Topics[0].Partitions[0].ErrorCode
}

// listOffsetsCode lists the latest offset of topic/partition at the
// broker at addr and returns the partition's error code.
func listOffsetsCode(t *testing.T, addr, topic string, partition int32) int16 {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version, req.ReplicaID = 7, -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = partition, -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := rawRequest(t, addr, req).(*kmsg.ListOffsetsResponse)
	return resp.Topics[0].Partitions[0].ErrorCode
}

// topicMetadataReq asks for topic's metadata.
func topicMetadataReq(topic string) *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	return req
}

// TestAlterReplicaLogDirsMovesAPartitionWhileItServes moves the one
// partition of a topic with several segments to the broker's other log
// dir while an idempotent acks=all producer writes to it (KIP-113): the
// move answers at once, DescribeLogDirs shows the partition in its new
// dir once the swap is done, and every record acknowledged before,
// during and after the move reads back once, in order, at consecutive
// offsets, also after a restart. Bad requests get Kafka's codes.
func TestAlterReplicaLogDirsMovesAPartitionWhileItServes(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	dirA, dirB := filepath.Join(base, "a"), filepath.Join(base, "b")
	b := testutil.StartBroker(t, "log.dirs="+dirA+","+dirB)
	const topic = "mover"
	testutil.CreateTopic(t, b.Admin(), topic, 1, "segment.bytes=4096")
	where := func() (cur []string, future []string) {
		req := kmsg.NewPtrDescribeLogDirsRequest()
		req.Version = 4
		for _, d := range rawRequest(t, b.Addr(), req).(*kmsg.DescribeLogDirsResponse).Dirs {
			for _, dt := range d.Topics {
				if dt.Topic != topic {
					continue
				}
				for _, p := range dt.Partitions {
					if p.IsFuture {
						future = append(future, d.Dir)
					} else {
						cur = append(cur, d.Dir)
					}
				}
			}
		}
		return cur, future
	}
	var cur []string
	testutil.Eventually(t, 30*time.Second, func() error {
		if cur, _ = where(); len(cur) != 1 {
			return fmt.Errorf("partition in %v", cur)
		}
		return nil
	})
	src, dst := cur[0], dirB
	if src == dirB {
		dst = dirA
	}

	prod := b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DefaultProduceTopic(topic))
	var acked []string
	var ackMu sync.Mutex
	produce := func(from, n int) {
		for i := from; i < from+n; i++ {
			v := fmt.Sprintf("m-%06d", i)
			prod.Produce(ctxT(t, time.Minute), &kgo.Record{Value: []byte(v + strings.Repeat("x", 200))}, func(r *kgo.Record, err error) {
				if err != nil {
					t.Errorf("produce %s: %v", v, err)
					return
				}
				ackMu.Lock()
				acked = append(acked, v)
				ackMu.Unlock()
			})
		}
	}
	produce(0, 2000) // about 100 segments
	if err := prod.Flush(ctxT(t, time.Minute)); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 2000; ; i += 20 {
			select {
			case <-stop:
				return
			default:
			}
			produce(i, 20)
			time.Sleep(5 * time.Millisecond)
		}
	}()

	adm := b.Admin()
	var req kadm.AlterReplicaLogDirsReq
	req.Add(dst, kadm.TopicsSet{topic: {0: {}}})
	resps, err := adm.AlterBrokerReplicaLogDirs(ctxT(t, 30*time.Second), 0, req)
	if err != nil {
		t.Fatal(err)
	}
	if rs := resps.Sorted(); len(rs) != 1 || rs[0].Err != nil {
		t.Fatalf("AlterReplicaLogDirs: %+v", rs)
	}
	testutil.Eventually(t, 30*time.Second, func() error {
		if cur, future := where(); len(cur) != 1 || cur[0] != dst || len(future) != 0 {
			return fmt.Errorf("partition in %v, future in %v", cur, future)
		}
		return nil
	})
	time.Sleep(200 * time.Millisecond) // some appends to the moved log
	close(stop)
	<-done
	if err := prod.Flush(ctxT(t, time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(src, topic+"-0")); err == nil {
		t.Errorf("%s still has the partition's directory", src)
	}

	check := func(when string) {
		t.Helper()
		ackMu.Lock()
		want := slices.Clone(acked)
		ackMu.Unlock()
		slices.Sort(want)
		got := consumeFrom(t, b.Addr(), topic, 0, len(want))
		for i, r := range got {
			if v := string(r.Value[:8]); v != want[i] {
				t.Fatalf("%s: offset %d holds %s, want %s", when, r.Offset, v, want[i])
			}
		}
		if end := logEnd(t, b.Client(), topic, 0); end != int64(len(want)) {
			t.Fatalf("%s: log end %d, %d records acknowledged", when, end, len(want))
		}
	}
	check("after the move")
	b.Restart()
	if cur, _ := where(); len(cur) != 1 || cur[0] != dst {
		t.Fatalf("after a restart the partition is in %v", cur)
	}
	check("after a restart")

	// Kafka's answers to bad requests.
	codes := func(dir, topic string, p int32) int16 {
		var req kadm.AlterReplicaLogDirsReq
		req.Add(dir, kadm.TopicsSet{topic: {p: {}}})
		r := kmsg.NewPtrAlterReplicaLogDirsRequest()
		for d, ts := range req {
			rd := kmsg.NewAlterReplicaLogDirsRequestDir()
			rd.Dir = d
			for tn, ps := range ts {
				rt := kmsg.NewAlterReplicaLogDirsRequestDirTopic()
				rt.Topic = tn
				for p := range ps {
					rt.Partitions = append(rt.Partitions, p)
				}
				rd.Topics = append(rd.Topics, rt)
			}
			r.Dirs = append(r.Dirs, rd)
		}
		r.Version = 2
		resp := rawRequest(t, b.Addr(), r).(*kmsg.AlterReplicaLogDirsResponse)
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	for _, c := range []struct {
		name, dir, topic string
		p                int32
		want             *kerr.Error
	}{
		{"not a log dir", filepath.Join(base, "elsewhere"), topic, 0, kerr.LogDirNotFound},
		{"unknown partition", dst, topic, 5, kerr.UnknownTopicOrPartition},
		{"unknown topic", dst, "nope", 0, kerr.UnknownTopicOrPartition},
	} {
		if got := codes(c.dir, c.topic, c.p); got != c.want.Code {
			t.Errorf("%s: %v, want %v", c.name, kerr.ErrorForCode(got), c.want)
		}
	}
	if got := codes(dst, topic, 0); got != 0 {
		t.Errorf("move to the dir it is in: %v, want success", kerr.ErrorForCode(got))
	}
}

// TestAlterReplicaLogDirsMovesAFollowerThatThenLeads moves a follower's
// replica to its broker's other log dir while an idempotent acks=all
// producer writes: the follower stays in the ISR, and once it is made the
// leader every acknowledged record is read back from the moved log once,
// in order, at consecutive offsets.
func TestAlterReplicaLogDirsMovesAFollowerThatThenLeads(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	c := jbodCluster(t, base, []vfs.FS{vfs.Default, vfs.Default, vfs.Default})
	const topic = "fmove"
	createReplicated(t, c, topic, 1, "segment.bytes=4096")
	leader := c.Leader(topic, 0)
	f := (leader + 1) % 3
	fn := c.Brokers[f].Node
	tp := storage.TopicPartition{Topic: topic, Partition: 0}
	var src string
	testutil.Eventually(t, 30*time.Second, func() error {
		p := fn.Broker().Replicas().Get(tp)
		if p == nil {
			return fmt.Errorf("broker %d does not host %s-0 yet", f, topic)
		}
		src = p.LogDir()
		return nil
	})
	dst := filepath.Join(base, fmt.Sprintf("b%d-a", f))
	if src == dst {
		dst = filepath.Join(base, fmt.Sprintf("b%d-b", f))
	}
	prod := c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RecordDeliveryTimeout(2*time.Minute),
		kgo.MetadataMinAge(50*time.Millisecond), kgo.RetryBackoffFn(func(int) time.Duration { return 20 * time.Millisecond }))
	pp := startPacedProducer(t, prod, topic, 1, 2*time.Millisecond)
	pp.waitAcked(t, 1500) // several hundred KiB: many sealed segments on the follower

	var req kadm.AlterReplicaLogDirsReq
	req.Add(dst, kadm.TopicsSet{topic: {0: {}}})
	resps, err := kadm.NewClient(testutil.NewClient(t, c.Brokers[f].Addr())).AlterBrokerReplicaLogDirs(ctxT(t, 30*time.Second), f, req)
	if err != nil {
		t.Fatal(err)
	}
	if rs := resps.Sorted(); len(rs) != 1 || rs[0].Err != nil {
		t.Fatalf("AlterReplicaLogDirs: %+v", rs)
	}
	testutil.Eventually(t, 30*time.Second, func() error {
		p := fn.Broker().Replicas().Get(tp)
		if d := p.LogDir(); d != dst {
			return fmt.Errorf("follower's replica in %s", d)
		}
		if _, moving := p.Future(); moving {
			return fmt.Errorf("still moving")
		}
		return nil
	})
	pp.waitAcked(t, 200)
	waitISR(t, c, topic, 0, "0 1 2")

	if err := reassign(t, c.Admin(), topic, 0, append([]int32{f}, othersThan(f)...)); err != nil {
		t.Fatal(err)
	}
	waitReplicas(t, c, topic, 0, append([]int32{f}, othersThan(f)...))
	if res := electOne(t, c.Admin(), kadm.ElectPreferredReplica, kadm.TopicsSet{topic: {0: {}}}); res.Err != nil {
		t.Fatalf("elect broker %d: %v", f, res.Err)
	}
	waitLeading(t, c, topic, 0, f)
	pp.waitAcked(t, 200)
	pp.check(t, c)
}

// A failure of the first log dir (the metadata dir: meta.properties, the
// embedded etcd's data) fires Node.LogDirFailed, on which `samsa serve`
// shuts the broker down, although the second dir is healthy; a failure
// of the second dir alone does not (TestLogDirFailureMovesOnlyThatDirsPartitions).
// Reference: KIP-858 (a broker whose metadata log dir fails shuts down).
func TestMetadataLogDirFailureStopsTheBroker(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	inj := vfs.NewInjector()
	c := testutil.StartClusterOnFS(t, []vfs.FS{vfs.WithErrors(vfs.Default, inj)},
		"log.dirs="+filepath.Join(base, "a")+","+filepath.Join(base, "b"), "offsets.topic.num.partitions=1")
	n := c.Brokers[0].Node
	testutil.CreateTopic(t, c.Admin(), "meta", 2)
	inA := int32(-1)
	testutil.Eventually(t, 30*time.Second, func() error {
		for p := range int32(2) {
			rp := n.Broker().Replicas().Get(storage.TopicPartition{Topic: "meta", Partition: p})
			if rp == nil {
				return fmt.Errorf("meta-%d not hosted yet", p)
			}
			if rp.LogDir() == filepath.Join(base, "a") {
				inA = p
			}
		}
		return nil
	})
	if inA < 0 {
		t.Fatal("no partition in the first dir")
	}
	failed, failErr := n.LogDirFailed()
	inj.Only(filepath.Join(base, "a"))
	inj.FailWith(syscall.EIO)
	inj.FailWriteAfter(0)
	inj.FailSyncAfter(0)
	if code := produceCodeAt(t, c.Brokers[0].Addr(), "meta", inA); code == 0 {
		// acks=1 may be answered before the fsync fails.
		t.Logf("produce to the failing dir answered before its sync failed")
	}
	select {
	case <-failed:
	case <-time.After(20 * time.Second):
		t.Fatal("LogDirFailed did not fire 20 s after the metadata dir failed")
	}
	if err := failErr(); err == nil || !strings.Contains(err.Error(), "metadata log dir") || !errors.Is(err, syscall.EIO) {
		t.Fatalf("LogDirFailed error: %v", err)
	}
}
