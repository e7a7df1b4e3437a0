package broker_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/record"
	"samsa/internal/testutil"
)

func replicatedCluster(t *testing.T) *testutil.Cluster {
	return testutil.StartCluster(t, 3,
		"default.replication.factor=3",
		"min.insync.replicas=2",
		"replica.lag.time.max.ms=3000",
		"offsets.topic.num.partitions=3",
		"group.initial.rebalance.delay.ms=0",
	)
}

// waitFullISR waits until every partition of topic has all three brokers
// in its ISR.
func waitFullISR(t *testing.T, c *testutil.Cluster, topic string, partitions int32) {
	t.Helper()
	testutil.Eventually(t, 30*time.Second, func() error {
		for p := int32(0); p < partitions; p++ {
			if isr := c.ISR(topic, p); isr != "0 1 2" {
				return fmt.Errorf("%s-%d ISR is [%s]", topic, p, isr)
			}
		}
		return nil
	})
}

// produceAcked produces n records with values prefix-i and returns the
// acknowledged values per partition.
func produceAcked(t *testing.T, cl *kgo.Client, topic, prefix string, n int) map[int32][]string {
	t.Helper()
	acked := make(map[int32][]string)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := 0; i < n; i++ {
		r := &kgo.Record{Topic: topic, Key: []byte(fmt.Sprint(i % 7)), Value: []byte(fmt.Sprintf("%s-%d", prefix, i))}
		res := cl.ProduceSync(ctx, r)
		if err := res.FirstErr(); err != nil {
			t.Fatalf("produce %s-%d: %v", prefix, i, err)
		}
		acked[r.Partition] = append(acked[r.Partition], string(r.Value))
	}
	return acked
}

// consumeAll reads every partition of topic from the start until it has
// want records in total.
func consumeCluster(t *testing.T, c *testutil.Cluster, topic string, want int) map[int32][]string {
	t.Helper()
	cl := c.Client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := make(map[int32][]string)
	total := 0
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for total < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records", total, want)
		}
		fs.EachRecord(func(r *kgo.Record) {
			got[r.Partition] = append(got[r.Partition], string(r.Value))
			total++
		})
	}
	return got
}

// TestReplicatedProduceSurvivesLeaderKill writes with acks=all to a topic
// replicated three ways, kills a partition leader, and checks that a new
// leader is elected from the ISR and that every acknowledged record is
// there exactly once, in order. Reference: TESTPLAN S-02 (in process).
func TestReplicatedProduceSurvivesLeaderKill(t *testing.T) {
	c := replicatedCluster(t)
	adm := c.Admin()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 3, 3, nil, "repl"); err != nil {
		t.Fatal(err)
	}
	waitFullISR(t, c, "repl", 3)

	prod := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(100),
		kgo.MetadataMinAge(50*time.Millisecond), kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }))
	acked := produceAcked(t, prod, "repl", "a", 300)

	victim := c.Leader("repl", 0)
	c.Kill(int(victim))
	testutil.Eventually(t, 20*time.Second, func() error {
		if l := c.Leader("repl", 0); l < 0 || l == victim {
			return fmt.Errorf("partition 0 leader is %d", l)
		}
		return nil
	})
	more := produceAcked(t, prod, "repl", "b", 300)
	for p, vs := range more {
		acked[p] = append(acked[p], vs...)
	}

	total := 0
	for _, vs := range acked {
		total += len(vs)
	}
	got := consumeCluster(t, c, "repl", total)
	for p, want := range acked {
		if !slices.Equal(got[p], want) {
			t.Fatalf("partition %d: consumed %d records, acknowledged %d; first difference: %s",
				p, len(got[p]), len(want), firstDiff(got[p], want))
		}
	}

	// The killed broker comes back, catches up and rejoins every ISR.
	c.Start(int(victim))
	waitFullISR(t, c, "repl", 3)
}

func firstDiff(got, want []string) string {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return fmt.Sprintf("index %d: got %q want %q", i, got[i], want[i])
		}
	}
	return fmt.Sprintf("lengths %d vs %d (%s)", len(got), len(want), strings.Join(nil, ""))
}

// TestNotLeaderAnswerNamesTheLeader sends a Produce to a follower and
// checks that NOT_LEADER_OR_FOLLOWER comes with the current leader, its
// epoch and its endpoint. Reference: KIP-951.
func TestNotLeaderAnswerNamesTheLeader(t *testing.T) {
	c := replicatedCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := c.Admin().CreateTopic(ctx, 1, 3, nil, "hint"); err != nil {
		t.Fatal(err)
	}
	waitFullISR(t, c, "hint", 1)
	leader := c.Leader("hint", 0)
	follower := (leader + 1) % 3
	cl := c.Client()
	if err := cl.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	bb := record.NewBuilder(record.CodecNone, time.Now().UnixMilli())
	bb.Add(record.Record{Value: []byte("v")})
	batch, err := bb.Build()
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrProduceRequest()
	req.Acks = -1
	req.TimeoutMillis = 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "hint"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl.Broker(int(follower)))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Version < 10 {
		t.Skipf("client negotiated Produce v%d, before KIP-951", resp.Version)
	}
	sp := resp.Topics[0].Partitions[0]
	if sp.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("error %d, want NOT_LEADER_OR_FOLLOWER", sp.ErrorCode)
	}
	if sp.CurrentLeader.LeaderID != leader || sp.CurrentLeader.LeaderEpoch < 0 {
		t.Fatalf("CurrentLeader %+v, want leader %d with its epoch", sp.CurrentLeader, leader)
	}
	if len(resp.Brokers) != 1 || resp.Brokers[0].NodeID != leader || fmt.Sprintf("%s:%d", resp.Brokers[0].Host, resp.Brokers[0].Port) != c.Brokers[leader].Addr() {
		t.Fatalf("Brokers %+v, want the endpoint of %d at %s", resp.Brokers, leader, c.Brokers[leader].Addr())
	}
}
