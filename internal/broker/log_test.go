package broker_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"samsa/internal/testutil"
)

// TestLogTopicLifecycleAndGroupRebalance checks the INFO lines an operator
// reads to follow a topic's creation and deletion and a group's first
// rebalance, and that neither a Fetch long-poll nor a JoinGroup held for
// group.initial.rebalance.delay.ms counts as a slow request.
func TestLogTopicLifecycleAndGroupRebalance(t *testing.T) {
	b := testutil.StartBrokerLogged(t, "log.slow.request.ms=200", "group.initial.rebalance.delay.ms=400")
	adm := b.Admin()
	testutil.CreateTopic(t, adm, "logged", 2)
	line := b.Log.WaitFor(t, 10*time.Second, "cluster: topic created",
		map[string]any{"topic": "logged", "partitions": 2, "replication_factor": 1, "pkg": "cluster", "level": "INFO"})
	if id, _ := line["topic_id"].(string); len(id) != 22 {
		t.Errorf("topic_id %q is not Kafka's 22-character form", line["topic_id"])
	}
	b.Log.WaitFor(t, 10*time.Second, "replica: became leader",
		map[string]any{"topic": "logged", "partition": 1, "leader_epoch": 0, "pkg": "replica"})

	cl := b.Client(kgo.ConsumerGroup("g-logged"), kgo.ConsumeTopics("logged"), kgo.FetchMaxWait(time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	prod := b.Client()
	if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "logged", Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	for got := 0; got == 0; {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatal("no record consumed")
		}
		got = fs.NumRecords()
	}
	b.Log.WaitFor(t, 10*time.Second, "group: preparing to rebalance",
		map[string]any{"group": "g-logged", "prev_state": "Empty", "generation": 0, "pkg": "group"})
	done := b.Log.WaitFor(t, 10*time.Second, "group: rebalance completed",
		map[string]any{"group": "g-logged", "generation": 1, "state": "CompletingRebalance", "protocol": "cooperative-sticky"})
	if ms, _ := done["members"].([]any); len(ms) != 1 {
		t.Errorf("members %v, want one", done["members"])
	}
	b.Log.WaitFor(t, 10*time.Second, "group: state changed", map[string]any{"group": "g-logged", "state": "Stable"})
	// Let the consumer long-poll an empty partition a few times (1 s
	// each, above the 200 ms threshold).
	time.Sleep(2500 * time.Millisecond)
	cl.Close()

	if _, err := adm.DeleteTopic(ctx, "logged"); err != nil {
		t.Fatal(err)
	}
	b.Log.WaitFor(t, 10*time.Second, "cluster: topic deleted", map[string]any{"topic": "logged", "partitions": 2})
	for _, m := range b.Log.Find("server: slow request", nil) {
		if m["api"] == "Fetch" || m["api"] == "JoinGroup" || m["api"] == "SyncGroup" {
			t.Errorf("a wait by design logged as slow: %v", m)
		}
	}
}

// TestLogLeaderChangeInCluster stops the leader of a partition replicated
// three ways and checks the controller's decision line and the new
// leader's line, with their epochs and reason.
func TestLogLeaderChangeInCluster(t *testing.T) {
	c := testutil.StartClusterLogged(t, 3, "default.replication.factor=3", "min.insync.replicas=2")
	adm := c.Admin()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 1, 3, nil, "moved"); err != nil {
		t.Fatal(err)
	}
	waitFullISR(t, c, "moved", 1)
	victim := c.Leader("moved", 0)
	c.Stop(int(victim))

	var decision, elected map[string]any
	testutil.Eventually(t, 20*time.Second, func() error {
		for i, b := range c.Brokers {
			if int32(i) == victim {
				continue
			}
			if ls := b.Log.Find("controller: partition state changed", map[string]any{"topic": "moved", "partition": 0, "reason": "controlled_shutdown"}); len(ls) > 0 {
				decision = ls[0]
			}
			if ls := b.Log.Find("replica: became leader", map[string]any{"topic": "moved", "partition": 0, "leader_epoch": 1}); len(ls) > 0 {
				elected = ls[0]
			}
		}
		if decision == nil || elected == nil {
			return fmt.Errorf("decision %v, new leader %v", decision, elected)
		}
		return nil
	})
	if fmt.Sprint(decision["prev_leader"]) != fmt.Sprint(victim) || fmt.Sprint(decision["leader_epoch"]) != "1" {
		t.Errorf("decision %v: want prev_leader %d, leader_epoch 1", decision, victim)
	}
	if fmt.Sprint(decision["leader"]) == fmt.Sprint(victim) {
		t.Errorf("decision %v keeps the stopped leader", decision)
	}
	var became int
	for i, b := range c.Brokers {
		if int32(i) != victim && len(b.Log.Find("controller: this broker became controller", nil)) > 0 {
			became++
		}
	}
	if became == 0 {
		t.Error("no running broker logged that it became controller")
	}
}
