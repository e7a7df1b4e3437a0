package broker_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/cluster"
	"samsa/internal/testutil"
)

func reassignCluster(t *testing.T) *testutil.Cluster {
	return testutil.StartCluster(t, 3,
		"replica.lag.time.max.ms=3000",
		"offsets.topic.num.partitions=1",
		"group.initial.rebalance.delay.ms=0",
	)
}

// reassign asks for target replicas (nil: cancel) of topic-p and returns
// the partition's error.
func reassign(t *testing.T, adm *kadm.Client, topic string, p int32, target []int32) error {
	t.Helper()
	var req kadm.AlterPartitionAssignmentsReq
	req.Assign(topic, p, target)
	resps, err := adm.AlterPartitionAssignments(ctxT(t, 30*time.Second), req)
	if err != nil {
		t.Fatalf("AlterPartitionAssignments: %v", err)
	}
	r, ok := resps[topic][p]
	if !ok {
		t.Fatalf("no response for %s-%d: %+v", topic, p, resps)
	}
	return r.Err
}

// listReassignments lists every reassignment in progress (a null topic
// list, which kadm cannot send).
func listReassignments(t *testing.T, cl *kgo.Client) []string {
	t.Helper()
	req := kmsg.NewPtrListPartitionReassignmentsRequest()
	resp, err := req.RequestWith(ctxT(t, 10*time.Second), cl)
	if err != nil {
		t.Fatalf("ListPartitionReassignments: %v", err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		t.Fatalf("ListPartitionReassignments: %v", err)
	}
	var out []string
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			out = append(out, fmt.Sprintf("%s-%d replicas=%v adding=%v removing=%v",
				rt.Topic, rp.Partition, rp.Replicas, rp.AddingReplicas, rp.RemovingReplicas))
		}
	}
	return out
}

// waitReplicas waits until every broker's image (all are running) has replicas
// want for topic-p and no reassignment of it in progress.
func waitReplicas(t *testing.T, c *testutil.Cluster, topic string, p int32, want []int32) {
	t.Helper()
	testutil.Eventually(t, 30*time.Second, func() error {
		for i, b := range c.Brokers {
			tp := b.Node.Image().Topics[topic]
			if tp == nil {
				return fmt.Errorf("broker %d: no topic %s", i, topic)
			}
			if got, st := tp.Replicas[p], tp.Partitions[p]; !slices.Equal(got, want) || st.Reassigning() {
				return fmt.Errorf("broker %d: %s-%d replicas %v adding %v removing %v, want %v",
					i, topic, p, got, st.AddingReplicas, st.RemovingReplicas, want)
			}
		}
		return nil
	})
}

// TestReassignmentMovesPartitionUnderLoad moves a partition from brokers
// {0,1} to {1,2} while an idempotent acks=all producer writes: the
// reassignment finishes, broker 0 deletes its log, and a consumer reads
// every acknowledged record exactly once, in order. Reference: KIP-455.
func TestReassignmentMovesPartitionUnderLoad(t *testing.T) {
	const topic = "moving"
	c := reassignCluster(t)
	adm := c.Admin()
	if _, err := adm.CreateTopic(ctxT(t, 20*time.Second), 1, 2, nil, topic); err != nil {
		t.Fatal(err)
	}
	// Start from {0,1}, whatever the placement chose.
	if err := reassign(t, adm, topic, 0, []int32{0, 1}); err != nil {
		t.Fatal(err)
	}
	waitReplicas(t, c, topic, 0, []int32{0, 1})
	testutil.Eventually(t, 30*time.Second, func() error {
		if isr := c.ISR(topic, 0); isr != "0 1" {
			return fmt.Errorf("ISR [%s]", isr)
		}
		return nil
	})

	prod := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(1000), kgo.DefaultProduceTopic(topic),
		kgo.MetadataMinAge(50*time.Millisecond), kgo.RetryBackoffFn(func(int) time.Duration { return 20 * time.Millisecond }))
	var (
		mu       sync.Mutex
		acked    []string
		prodErr  error
		stop     = make(chan struct{})
		finished = make(chan struct{})
	)
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(acked) }
	go func() {
		defer close(finished)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			r := &kgo.Record{Value: fmt.Appendf(nil, "v-%d", i)}
			if err := prod.ProduceSync(ctx, r).FirstErr(); err != nil {
				mu.Lock()
				prodErr = fmt.Errorf("record %d: %w", i, err)
				mu.Unlock()
				return
			}
			mu.Lock()
			acked = append(acked, string(r.Value))
			mu.Unlock()
		}
	}()
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		<-finished
	}()
	waitCount := func(n int) {
		t.Helper()
		testutil.Eventually(t, 30*time.Second, func() error {
			mu.Lock()
			defer mu.Unlock()
			if prodErr != nil {
				t.Fatalf("produce: %v", prodErr)
			}
			if len(acked) < n {
				return fmt.Errorf("%d records acknowledged, want %d", len(acked), n)
			}
			return nil
		})
	}
	waitCount(200)

	if err := reassign(t, adm, topic, 0, []int32{1, 2}); err != nil {
		t.Fatal(err)
	}
	waitReplicas(t, c, topic, 0, []int32{1, 2})
	if got := listReassignments(t, c.Client()); len(got) != 0 {
		t.Fatalf("reassignments after completion: %v", got)
	}
	if l := c.Leader(topic, 0); l != 1 && l != 2 {
		t.Fatalf("leader %d after the move", l)
	}
	testutil.Eventually(t, 30*time.Second, func() error {
		dir := filepath.Join(c.Brokers[0].Dir, topic+"-0")
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("broker 0 still has %s (%v)", dir, err)
		}
		return nil
	})
	waitCount(count() + 200)
	close(stop)
	<-finished
	if prodErr != nil {
		t.Fatalf("produce: %v", prodErr)
	}

	got := consumeCluster(t, c, topic, len(acked))
	if !slices.Equal(got[0], acked) {
		t.Fatalf("consumed %d records, acknowledged %d; first difference: %s", len(got[0]), len(acked), firstDiff(got[0], acked))
	}
	testutil.Eventually(t, 30*time.Second, func() error {
		if isr := c.ISR(topic, 0); isr != "1 2" {
			return fmt.Errorf("ISR [%s]", isr)
		}
		return nil
	})
}

// TestReassignmentCancelRestoresReplicas starts a move to a broker that
// then stops, so it cannot catch up and the reassignment stays in
// progress; a cancel restores the original replicas. It also covers the
// request's validation.
func TestReassignmentCancelRestoresReplicas(t *testing.T) {
	const topic = "stay"
	c := reassignCluster(t)
	adm := c.Admin()
	if _, err := adm.CreateTopic(ctxT(t, 20*time.Second), 2, 2, nil, topic); err != nil {
		t.Fatal(err)
	}
	if err := reassign(t, adm, topic, 0, []int32{0, 1}); err != nil {
		t.Fatal(err)
	}
	waitReplicas(t, c, topic, 0, []int32{0, 1})
	testutil.Eventually(t, 30*time.Second, func() error {
		if isr := c.ISR(topic, 0); isr != "0 1" {
			return fmt.Errorf("ISR [%s]", isr)
		}
		return nil
	})
	prod := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceSync(t, prod, &kgo.Record{Partition: 0, Value: []byte("before")})

	// Broker 3 registers (a cluster member without a replica manager), is
	// made a target, and stops before it could fetch anything.
	ctx := ctxT(t, 30*time.Second)
	b3, err := cluster.Open(ctx, cluster.Config{NodeID: 3, EtcdEndpoints: []string{c.Etcd.ClientURL()},
		AdvertisedHost: "127.0.0.1", AdvertisedPort: 1, SessionTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, func() error {
		for i, b := range c.Brokers {
			if _, ok := b.Node.Image().Brokers[3]; !ok {
				return fmt.Errorf("broker %d does not see broker 3", i)
			}
		}
		return nil
	})
	if err := reassign(t, adm, topic, 0, []int32{1, 3}); err != nil {
		t.Fatal(err)
	}
	if err := b3.Close(); err != nil {
		t.Fatal(err)
	}
	want := []string{"stay-0 replicas=[1 3 0] adding=[3] removing=[0]"}
	if got := listReassignments(t, c.Client()); !slices.Equal(got, want) {
		t.Fatalf("reassignments: %v, want %v", got, want)
	}
	// Named partitions: only those in progress are listed.
	named, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{topic: {0: {}, 1: {}}})
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := named[topic][0]; !ok || len(named[topic]) != 1 || !slices.Equal(r.AddingReplicas, []int32{3}) {
		t.Fatalf("named list: %+v", named)
	}

	// Validation.
	for _, tc := range []struct {
		name   string
		p      int32
		target []int32
		want   error
	}{
		{"unknown broker", 1, []int32{0, 9}, kerr.InvalidReplicaAssignment},
		{"duplicate broker", 1, []int32{1, 1}, kerr.InvalidReplicaAssignment},
		{"empty list", 1, []int32{}, kerr.InvalidReplicaAssignment},
		{"unknown partition", 7, []int32{0, 1}, kerr.UnknownTopicOrPartition},
		{"cancel of none", 1, nil, kerr.NoReassignmentInProgress},
	} {
		if err := reassign(t, adm, topic, tc.p, tc.target); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	// v1 without AllowReplicationFactorChange refuses a new RF.
	req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	req.AllowReplicationFactorChange = false
	rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
	rp.Partition, rp.Replicas = 1, []int32{0, 1, 2}
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, c.Client())
	if err != nil {
		t.Fatal(err)
	}
	if resp.AllowReplicationFactorChange || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 ||
		resp.Topics[0].Partitions[0].ErrorCode != kerr.InvalidReplicationFactor.Code {
		t.Fatalf("RF change refused? %+v", resp)
	}

	// The reassignment stays in progress: broker 3 is gone.
	time.Sleep(500 * time.Millisecond) // NB: no event to wait for; the controller must not finish it
	if got := listReassignments(t, c.Client()); !slices.Equal(got, want) {
		t.Fatalf("reassignments: %v, want %v", got, want)
	}
	if err := reassign(t, adm, topic, 0, nil); err != nil {
		t.Fatal(err)
	}
	// As in Kafka, the original replicas come back in the order they had
	// in the union (replicas minus adding).
	waitReplicas(t, c, topic, 0, []int32{1, 0})
	if got := listReassignments(t, c.Client()); len(got) != 0 {
		t.Fatalf("reassignments after cancel: %v", got)
	}
	testutil.Eventually(t, 30*time.Second, func() error {
		if isr := c.ISR(topic, 0); isr != "0 1" {
			return fmt.Errorf("ISR [%s]", isr)
		}
		return nil
	})
	produceSync(t, prod, &kgo.Record{Partition: 0, Value: []byte("after")})
	for _, i := range []int{0, 1} {
		if _, err := os.Stat(filepath.Join(c.Brokers[i].Dir, topic+"-0")); err != nil {
			t.Fatalf("broker %d: %v", i, err)
		}
	}
	got := consumeCluster(t, c, topic, 2)
	if !slices.Equal(got[0], []string{"before", "after"}) {
		t.Fatalf("partition 0 holds %q", got[0])
	}
}
