package broker_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"samsa/internal/storage"
	"samsa/internal/testutil"
)

// TestConsumerFetchesFromReplicaInItsRack is KIP-392 with franz-go: three
// brokers in three racks and the rack-aware replica selector. A consumer
// with client.rack set to a follower's rack reads every record, in order,
// and the bytes come from that follower (its Traffic counters, which the
// byte metrics report), none from the leader; a consumer without a rack
// and one in the leader's rack read from the leader.
func TestConsumerFetchesFromReplicaInItsRack(t *testing.T) {
	t.Parallel()
	c := testutil.StartCluster(t, 3, "broker.rack=rack-{node.id}",
		"replica.selector.class=org.apache.kafka.common.replica.RackAwareReplicaSelector",
		"default.replication.factor=3", "min.insync.replicas=2", "offsets.topic.num.partitions=1")
	const topic, n = "near", 100
	createReplicated(t, c, topic, 1)
	leader := c.Leader(topic, 0)
	near := othersThan(leader)[0]
	waitLeading(t, c, topic, 0, leader)
	prod := c.Client(kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx := ctxT(t, 60*time.Second)
	for i := range n {
		if err := prod.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: fmt.Appendf(nil, "r-%d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	waitFullISR(t, c, topic, 1)

	tp := storage.TopicPartition{Topic: topic, Partition: 0}
	bytesOut := func(id int32) int64 {
		return c.Brokers[id].Node.Broker().Replicas().Get(tp).Traffic.BytesOut.Load()
	}
	consume := func(rack string) {
		t.Helper()
		opts := []kgo.Opt{
			kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(0)}}),
			kgo.FetchMaxWait(200 * time.Millisecond),
		}
		if rack != "" {
			opts = append(opts, kgo.Rack(rack))
		}
		cons := c.Client(opts...)
		defer cons.Close()
		var got []*kgo.Record
		for len(got) < n {
			fs := cons.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("rack %q: read %d of %d records", rack, len(got), n)
			}
			fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("rack %q: fetch: %v", rack, err) })
			got = append(got, fs.Records()...)
		}
		for i, r := range got[:n] {
			if r.Offset != int64(i) || string(r.Value) != fmt.Sprintf("r-%d", i) {
				t.Fatalf("rack %q: record %d: offset %d value %q", rack, i, r.Offset, r.Value)
			}
		}
	}

	consume(fmt.Sprintf("rack-%d", near))
	if got := bytesOut(near); got == 0 {
		t.Fatalf("the consumer in rack-%d read nothing from broker %d, the replica in its rack", near, near)
	}
	if got := bytesOut(leader); got != 0 {
		t.Fatalf("the leader sent %d bytes to the consumer in another rack's replica", got)
	}
	nearBefore := bytesOut(near)

	consume("")
	consume(fmt.Sprintf("rack-%d", leader))
	if got := bytesOut(leader); got == 0 {
		t.Fatalf("the leader served nothing to consumers without a rack or in its rack")
	}
	if got := bytesOut(near); got != nearBefore {
		t.Fatalf("the follower served %d more bytes to consumers that were not in its rack", got-nearBefore)
	}
}
