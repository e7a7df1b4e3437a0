package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"samsa/internal/storage"
	"samsa/internal/testutil"
)

// TestKcatFetchesFromReplicaInItsRack is KIP-392 with librdkafka: three
// brokers in three racks and the rack-aware replica selector. kcat with
// client.rack set to a follower's rack reads every record in order, and
// the record bytes come from that follower (its traffic counters, which
// samsa_topic_bytes_out_total reports), none from the leader.
func TestKcatFetchesFromReplicaInItsRack(t *testing.T) {
	kcat := requireKcat(t)
	t.Parallel()
	c := testutil.StartCluster(t, 3, "broker.rack=rack-{node.id}",
		"replica.selector.class=org.apache.kafka.common.replica.RackAwareReplicaSelector",
		"default.replication.factor=3", "min.insync.replicas=2")
	const topic, n = "near-kcat", 100
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := c.Admin().CreateTopic(ctx, 1, 3, nil, topic); err != nil {
		t.Fatal(err)
	}
	prod := c.Client(kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := range n {
		if err := prod.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: fmt.Appendf(nil, "r-%d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// The follower serves only up to the high watermark it knows, so
	// wait until every replica is in sync and has all n records.
	tp := storage.TopicPartition{Topic: topic, Partition: 0}
	testutil.Eventually(t, 20*time.Second, func() error {
		if isr := c.ISR(topic, 0); isr != "0 1 2" {
			return fmt.Errorf("ISR %s", isr)
		}
		for i, b := range c.Brokers {
			if p := b.Node.Broker().Replicas().Get(tp); p == nil || p.HighWatermark() < n {
				return fmt.Errorf("broker %d has not got the high watermark %d yet", i, n)
			}
		}
		return nil
	})
	leader := c.Leader(topic, 0)
	near := (leader + 1) % 3
	bytesOut := func(id int32) int64 {
		return c.Brokers[id].Node.Broker().Replicas().Get(tp).Traffic.BytesOut.Load()
	}

	out := runKcat(t, kcat, "", "-C", "-b", strings.Join(c.Addrs(), ","), "-t", topic, "-p", "0",
		"-o", "beginning", "-e", "-q", "-f", "%o %s\n", "-X", fmt.Sprintf("client.rack=rack-%d", near))
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != n {
		t.Fatalf("kcat read %d records, want %d:\n%s", len(lines), n, out)
	}
	for i, l := range lines {
		if want := fmt.Sprintf("%d r-%d", i, i); l != want {
			t.Fatalf("record %d: %q, want %q", i, l, want)
		}
	}
	if got := bytesOut(near); got == 0 {
		t.Fatalf("kcat in rack-%d read nothing from broker %d, the replica in its rack", near, near)
	}
	if got := bytesOut(leader); got != 0 {
		t.Fatalf("the leader (broker %d) sent %d record bytes to a consumer in another replica's rack", leader, got)
	}
}
