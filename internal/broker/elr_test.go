package broker_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/cluster"
	"samsa/internal/testutil"
	"samsa/internal/vfs"
)

// elrCluster starts three brokers on memory file systems with RF 3 and
// min.insync.replicas 2, creates topic (one partition, configs), and
// writes n acknowledged records to it.
func elrCluster(t *testing.T, topic string, n int, configs ...string) (*testutil.Cluster, []*vfs.MemFS, []string) {
	t.Helper()
	fss := []*vfs.MemFS{vfs.NewMemFS(), vfs.NewMemFS(), vfs.NewMemFS()}
	c := testutil.StartClusterOnFS(t, []vfs.FS{fss[0], fss[1], fss[2]},
		"default.replication.factor=3", "min.insync.replicas=2", "replica.lag.time.max.ms=2000",
		"offsets.topic.num.partitions=1", "auto.leader.rebalance.enable=false")
	createReplicated(t, c, topic, 1, configs...)
	acked := produceAcked(t, c.Client(), topic, "committed", n)[0]
	if len(acked) != n {
		t.Fatalf("%d records acknowledged on partition 0, want %d", len(acked), n)
	}
	return c, fss, acked
}

// waitState waits until broker at's image of topic's partition 0 passes ok.
func waitState(t *testing.T, c *testutil.Cluster, at int32, topic string, what string, ok func(cluster.PartitionState) bool) cluster.PartitionState {
	t.Helper()
	var st cluster.PartitionState
	testutil.Eventually(t, 30*time.Second, func() error {
		tp := c.Brokers[at].Node.Image().Topics[topic]
		if tp == nil {
			return fmt.Errorf("no topic %s", topic)
		}
		st = tp.Partitions[0]
		if !ok(st) {
			return fmt.Errorf("%s: leader %d, ISR %v, ELR %v, last known ELR %v", what, st.Leader, st.ISR, st.ELR, st.LastKnownELR)
		}
		return nil
	})
	return st
}

// wantRecords checks that partition 0 of topic holds exactly want, in order,
// from offset 0.
func wantRecords(t *testing.T, c *testutil.Cluster, topic string, want []string) {
	t.Helper()
	got := consumeTopicPartition(t, c, topic, 0, int64(len(want)))
	for i, r := range got {
		if i >= len(want) || string(r.Value) != want[i] || r.Offset != int64(i) {
			t.Fatalf("record %d at offset %d is %q, want %q at %d", i, r.Offset, r.Value, want[min(i, len(want)-1)], i)
		}
	}
}

// TestEligibleLeaderReplicaLeadsWhenTheISRIsGone is KIP-966's availability
// case: the ISR shrinks from 3 to 2 (no ELR: the ISR is still at
// min.insync.replicas) and then to 1 (the leaver joins the ELR, and
// nothing more is committed); the last ISR member dies. The ELR member,
// back first, leads at once with every committed record; without ELR the
// partition would stay offline until the dead leader returned.
func TestEligibleLeaderReplicaLeadsWhenTheISRIsGone(t *testing.T) {
	t.Parallel()
	const topic = "elr-availability"
	c, _, acked := elrCluster(t, topic, 200)
	l := c.Leader(topic, 0)
	a, b := othersThan(l)[0], othersThan(l)[1]

	c.Stop(int(a))
	waitState(t, c, l, topic, "ISR without the stopped replica, ELR empty", func(st cluster.PartitionState) bool {
		return len(st.ISR) == 2 && !slices.Contains(st.ISR, a) && len(st.ELR) == 0
	})
	c.Stop(int(b))
	waitState(t, c, l, topic, fmt.Sprintf("ISR [%d], ELR [%d]", l, b), func(st cluster.PartitionState) bool {
		return slices.Equal(st.ISR, []int32{l}) && slices.Equal(st.ELR, []int32{b})
	})

	// DescribeTopicPartitions reports the set.
	req := kmsg.NewPtrDescribeTopicPartitionsRequest()
	rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
	rt.Topic = topic
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctxT(t, 10*time.Second), c.Client())
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("DescribeTopicPartitions: %+v", resp.Topics)
	}
	if got := resp.Topics[0].Partitions[0].EligibleLeaderReplicas; !slices.Equal(got, []int32{b}) {
		t.Fatalf("DescribeTopicPartitions ELR %v, want [%d]", got, b)
	}

	c.Kill(int(l))
	c.Start(int(b))
	st := waitState(t, c, b, topic, fmt.Sprintf("broker %d elected from the ELR", b), func(st cluster.PartitionState) bool {
		return st.Leader == b
	})
	if !slices.Equal(st.ISR, []int32{b}) || !slices.Equal(st.ELR, []int32{l}) {
		t.Fatalf("after the ELR election: ISR %v, ELR %v; want [%d] and [%d]", st.ISR, st.ELR, b, l)
	}
	// Alone in its ISR the new leader does not advance its high
	// watermark (strict min ISR, KIP-966); a second replica catching up
	// from it, while the old leader is still down, makes every committed
	// record readable.
	c.Start(int(a))
	waitState(t, c, b, topic, "the returning replica in sync with the ELR-elected leader", func(st cluster.PartitionState) bool {
		return st.Leader == b && len(st.ISR) == 2
	})
	wantRecords(t, c, topic, acked)

	// The old leader returns, catches up and rejoins: the ELR empties
	// and acks=all works again.
	c.Start(int(l))
	waitFullISR(t, c, topic, 1)
	waitState(t, c, b, topic, "ELR empty with a full ISR", func(st cluster.PartitionState) bool { return len(st.ELR) == 0 })
	more := produceAcked(t, c.Client(), topic, "after", 50)[0]
	wantRecords(t, c, topic, append(slices.Clone(acked), more...))
}

// TestReplicaThatLostReportedRecordsDoesNotLead is KIP-966's safety case,
// "last replica standing". The ISR shrinks to the leader alone, the
// others having stopped cleanly (the last one to leave is in the ELR);
// then the leader loses what it had reported:
//
//   - power-cut: the topic has a relaxed flush policy (flush.messages far
//     above 1: a replica reports what it has in the page cache) and the
//     leader loses power, so its log loses what it had not fsynced,
//     committed records among them;
//   - replaced-disk: under the default durable policy, the leader's disk is
//     replaced by an empty one.
//
// It comes back first: re-electing it on its ISR membership would lose the
// committed records for good. It must not lead; the partition waits
// offline until the ELR member returns, which leads with every committed
// record.
func TestReplicaThatLostReportedRecordsDoesNotLead(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		configs []string
		lose    func(fs *vfs.MemFS) *vfs.MemFS
	}{
		{"power-cut", []string{"flush.messages=1000000", "flush.ms=600000"}, func(fs *vfs.MemFS) *vfs.MemFS { return fs.CutPower() }},
		{"replaced-disk", nil, func(*vfs.MemFS) *vfs.MemFS {
			fs := vfs.NewMemFS()
			return fs
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			topic := "elr-" + tc.name
			c, fss, acked := elrCluster(t, topic, 200, tc.configs...)
			l := c.Leader(topic, 0)
			a, b := othersThan(l)[0], othersThan(l)[1]
			c.Stop(int(a))
			c.Stop(int(b))
			waitState(t, c, l, topic, fmt.Sprintf("ISR [%d], ELR [%d]", l, b), func(st cluster.PartitionState) bool {
				return slices.Equal(st.ISR, []int32{l}) && slices.Equal(st.ELR, []int32{b})
			})

			lost := tc.lose(fss[l])
			c.Kill(int(l))
			fss[l] = lost
			c.Brokers[l].FS = lost
			c.Start(int(l))
			st := waitState(t, c, l, topic, "offline, the restarted leader out of the ISR", func(st cluster.PartitionState) bool {
				return st.Leader == -1 && len(st.ISR) == 0 && slices.Equal(st.ELR, []int32{b}) && slices.Equal(st.LastKnownELR, []int32{l})
			})
			// It stays offline: nothing elects the replica that lost records.
			time.Sleep(time.Second)
			if now := c.Brokers[l].Node.Image().Topics[topic].Partitions[0]; now.Leader != -1 || now.LeaderEpoch != st.LeaderEpoch {
				t.Fatalf("partition got leader %d at epoch %d while only the replica that lost records was back", now.Leader, now.LeaderEpoch)
			}

			c.Start(int(b))
			waitState(t, c, l, topic, fmt.Sprintf("broker %d elected from the ELR", b), func(st cluster.PartitionState) bool {
				return st.Leader == b
			})
			c.Start(int(a))
			waitFullISR(t, c, topic, 1)
			wantRecords(t, c, topic, acked)
			waitState(t, c, b, topic, "ELR and last known ELR empty with a full ISR", func(st cluster.PartitionState) bool {
				return len(st.ELR) == 0 && len(st.LastKnownELR) == 0
			})
			more := produceAcked(t, c.Client(kgo.RequiredAcks(kgo.AllISRAcks())), topic, "after", 50)[0]
			wantRecords(t, c, topic, append(slices.Clone(acked), more...))
		})
	}
}
