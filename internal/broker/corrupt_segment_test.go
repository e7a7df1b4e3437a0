package broker_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/storage"
	"samsa/internal/testutil"
)

// corruptValue flips one byte inside the value of the record whose value
// starts with prefix, in the first (sealed) segment of tp on broker dir,
// while the broker runs.
func corruptValue(t *testing.T, dir string, tp storage.TopicPartition, prefix string) {
	t.Helper()
	path := filepath.Join(dir, fmt.Sprintf("%s-%d", tp.Topic, tp.Partition), "00000000000000000000.log")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(data, []byte(prefix))
	if i < 0 {
		t.Fatalf("%q not in %s", prefix, path)
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt([]byte{data[i+len(prefix)] ^ 0x20}, int64(i+len(prefix))); err != nil {
		t.Fatal(err)
	}
}

func crcValue(p int32, i int) string {
	return fmt.Sprintf("p%d-r%06d-%s", p, i, strings.Repeat("v", 80))
}

// consumeChecked reads partition p from offset 0 until it has n records or d
// passes, failing on any record whose value is not the one produced.
func consumeChecked(t *testing.T, c *testutil.Cluster, topic string, p int32, n int, d time.Duration, opts ...kgo.Opt) int {
	t.Helper()
	cons := c.Client(append(opts,
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {p: kgo.NewOffset().At(0)}}),
		kgo.FetchMaxWait(200*time.Millisecond))...)
	defer cons.Close()
	ctx := ctxT(t, d)
	got := 0
	for got < n && ctx.Err() == nil {
		fs := cons.PollFetches(ctx)
		for _, r := range fs.Records() {
			if want := crcValue(p, int(r.Offset)); string(r.Value) != want {
				t.Fatalf("partition %d offset %d: got value %q, want %q", p, r.Offset, r.Value, want)
			}
			got++
		}
	}
	return got
}

// TestCorruptSealedSegmentIsNeverServedAndFollowerRepairs flips a byte
// inside a record value of a sealed segment on disk while the brokers
// run. Reference: TESTPLAN D-03. On the leader of partition 0: a Fetch
// at the damaged record answers KAFKA_STORAGE_ERROR without its bytes,
// leadership moves to an in-sync replica, a consumer then reads every
// record as produced, the old leader repairs its log from the new one,
// and partition 1 keeps working. On a follower of partition 1: a consumer reading from it
// (KIP-392) makes it find the damage, truncate and fetch again from the
// leader; afterwards it holds the leader's bytes and every acknowledged
// record of partition 1 reads back.
func TestCorruptSealedSegmentIsNeverServedAndFollowerRepairs(t *testing.T) {
	t.Parallel()
	c := testutil.StartCluster(t, 3, "broker.rack=rack-{node.id}",
		"replica.selector.class=org.apache.kafka.common.replica.RackAwareReplicaSelector",
		"default.replication.factor=3", "min.insync.replicas=2", "offsets.topic.num.partitions=1")
	const topic, n = "crc", 200
	createReplicated(t, c, topic, 2, "segment.bytes=4096")
	prod := c.Client(kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	ctx := ctxT(t, 60*time.Second)
	for p := int32(0); p < 2; p++ {
		// Batches of 10 records, about 1 KiB: several to a segment.
		for i := 0; i < n; i += 10 {
			var rs []*kgo.Record
			for j := i; j < i+10; j++ {
				rs = append(rs, &kgo.Record{Partition: p, Value: []byte(crcValue(p, j))})
			}
			if err := prod.ProduceSync(ctx, rs...).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	waitFullISR(t, c, topic, 2)

	// The leader of partition 0.
	tp0 := storage.TopicPartition{Topic: topic, Partition: 0}
	leader0 := c.Leader(topic, 0)
	const bad = 25 // in the third batch
	corruptValue(t, c.Brokers[leader0].Dir, tp0, fmt.Sprintf("p0-r%06d-", bad))
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis, req.MaxBytes, req.ReplicaID = 100, 1<<20, -1
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = topic
	ft.TopicID = c.Brokers[leader0].Node.Broker().Replicas().Get(tp0).TopicID
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch = 0, bad, 1<<20, -1
	ft.Partitions = append(ft.Partitions, fp)
	req.Topics = append(req.Topics, ft)
	resp, err := req.RequestWith(ctx, prod.Broker(int(leader0)))
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.Topics[0].Partitions[0].ErrorCode; !errors.Is(kerr.ErrorForCode(code), kerr.KafkaStorageError) {
		t.Fatalf("Fetch at the damaged offset: error %v, want KAFKA_STORAGE_ERROR", kerr.ErrorForCode(code))
	}
	if rb := resp.Topics[0].Partitions[0].RecordBatches; bytes.Contains(rb, []byte(fmt.Sprintf("p0-r%06d-", bad))) {
		t.Fatal("the damaged record was served")
	}
	// The leader hands partition 0 over to an in-sync replica, then
	// repairs its log from it as a follower; a consumer reads every
	// record with the value produced.
	testutil.Eventually(t, 20*time.Second, func() error {
		if l := c.Leader(topic, 0); l == leader0 || l < 0 {
			return fmt.Errorf("partition 0 still led by %d", l)
		}
		return nil
	})
	if got := consumeChecked(t, c, topic, 0, n, 20*time.Second); got != n {
		t.Fatalf("partition 0 after the handover: read %d of %d records", got, n)
	}
	if got := consumeChecked(t, c, topic, 1, n, 20*time.Second); got != n {
		t.Fatalf("partition 1: read %d of %d records", got, n)
	}
	waitSameBytes(t, c, tp0, c.Leader(topic, 0), leader0)
	if c.Brokers[leader0].Node.Broker().Replicas().RepairedOffsets() == 0 {
		t.Fatal("the old leader repaired nothing")
	}

	// A follower of partition 1.
	tp1 := storage.TopicPartition{Topic: topic, Partition: 1}
	leader1 := c.Leader(topic, 1)
	follower := othersThan(leader1)[0]
	corruptValue(t, c.Brokers[follower].Dir, tp1, fmt.Sprintf("p1-r%06d-", bad))
	if got := consumeChecked(t, c, topic, 1, n, 20*time.Second, kgo.Rack(fmt.Sprintf("rack-%d", follower))); got != n {
		t.Fatalf("partition 1 from the follower's rack: read %d of %d records", got, n)
	}
	fr := c.Brokers[follower].Node.Broker().Replicas()
	if fr.RepairedOffsets() == 0 {
		t.Fatal("the follower repaired nothing")
	}
	waitSameBytes(t, c, tp1, leader1, follower)
	waitFullISR(t, c, topic, 2)
}

// waitSameBytes waits until broker b holds the same batches of tp as
// broker a, byte for byte.
func waitSameBytes(t *testing.T, c *testutil.Cluster, tp storage.TopicPartition, a, b int32) {
	t.Helper()
	logBytes := func(id int32) []byte {
		p := c.Brokers[id].Node.Broker().Replicas().Get(tp)
		res, err := p.ReadRecords(0, 1<<30, p.LogEndOffset())
		if err != nil {
			return nil
		}
		out, err := res.AppendTo(nil)
		if err != nil {
			return nil
		}
		return out
	}
	testutil.Eventually(t, 20*time.Second, func() error {
		if x, y := logBytes(a), logBytes(b); len(x) == 0 || !bytes.Equal(x, y) {
			return fmt.Errorf("broker %d holds %d bytes of %s-%d, broker %d %d, not the same", b, len(y), tp.Topic, tp.Partition, a, len(x))
		}
		return nil
	})
}
