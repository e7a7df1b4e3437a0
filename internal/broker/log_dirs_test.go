package broker_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
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
	for p := range int32(partitions) {
		rp := b0.Broker().Replicas().Get(storage.TopicPartition{Topic: topic, Partition: p})
		inDir[rp.LogDir()] = append(inDir[rp.LogDir()], p)
	}
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
