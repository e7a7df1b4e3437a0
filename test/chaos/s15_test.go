package chaos

import (
	"fmt"
	"testing"
	"time"
)

// TestS15Partitions is part of TESTPLAN S-15 (network partitions), on
// the links of a netCluster, against the leader of partition 0:
//
//  1. client <-> broker only: clients cannot reach the leader; it still
//     reaches etcd and the other brokers. Nothing moves (the broker is
//     healthy), so its partitions are unavailable to clients until the
//     link heals; nothing is lost.
//  2. one node: the leader is cut off from clients, the other brokers
//     and etcd. The others elect a new leader within T_s plus a few
//     seconds, and the cut-off node acknowledges nothing.
//
// Each phase lasts 8 s (long: 30 s), then heals and waits for full ISR.
func TestS15Partitions(t *testing.T) {
	const (
		topic         = "s15"
		partitions    = 5
		electionBound = sessionTimeout + 5*time.Second
	)
	cutFor := pick(8*time.Second, 30*time.Second)
	nc := startNetCluster(t)
	c := nc.testCluster
	c.createTopic(topic, partitions)
	w := startWorkload(t, c, topic, partitions)
	w.waitAcks(0, 50, 30*time.Second)

	// 1. Client <-> broker only.
	st := c.mustState(topic, 0)
	cutAt := time.Now()
	nc.cutClients(st.Leader)
	sleepUntil(cutAt.Add(cutFor))
	after := c.mustState(topic, 0)
	nc.healAll()
	healedAt := time.Now()
	w.waitAcks(0, 20, 30*time.Second)
	acked := w.acksBetween(0, cutAt.Add(time.Second), healedAt)
	t.Logf("client cut: broker %d unreachable by clients for %s; partition 0 before %v, after %v; %d acks on partition 0 meanwhile; acks resumed %s after healing",
		st.Leader, cutFor, st, after, len(acked), time.Since(healedAt).Round(time.Millisecond))
	if after.LeaderEpoch != st.LeaderEpoch {
		t.Logf("client cut: partition 0 changed leader although broker %d stayed healthy", st.Leader)
	}
	c.waitFullISR(topic, partitions)

	// 2. One node.
	st = c.mustState(topic, 0)
	cutAt = time.Now()
	nc.isolate(st.Leader)
	nc.cutClients(st.Leader)
	next := c.waitLeaderChange(topic, 0, st.Leader, st.LeaderEpoch, electionBound+10*time.Second)
	elected := time.Since(cutAt)
	if elected > electionBound {
		t.Errorf("one-node partition: new leader of partition 0 after %s, above T_s + 5 s", elected.Round(time.Millisecond))
	}
	sleepUntil(cutAt.Add(cutFor))
	nc.healAll()
	healedAt = time.Now()
	for _, b := range w.batches.by(st.Leader, 0, cutAt.Add(time.Second), healedAt) {
		t.Errorf("one-node partition: cut-off broker %d acknowledged %d records on partition 0 at %s",
			st.Leader, b.records, b.at.Format("15:04:05.000"))
	}
	t.Logf("one-node partition: broker %d cut off for %s; partition 0 led by %d at epoch %d after %s",
		st.Leader, cutFor, next.Leader, next.LeaderEpoch, elected.Round(time.Millisecond))
	c.waitFullISR(topic, partitions)
	w.waitAcks(0, 20, 30*time.Second)

	w.stop(30 * time.Second)
	r := w.check(c)
	t.Logf("S-15: %v; failures: %v", r, failureKinds(w))
}

// failureKinds counts the workload's failed sends by partition and error.
func failureKinds(w *workload) map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]int)
	for _, f := range w.mu.failures {
		out[fmt.Sprintf("p%d: %v", f.partition, f.err)]++
	}
	return out
}
