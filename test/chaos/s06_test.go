package chaos

import (
	"fmt"
	"testing"
	"time"
)

// TestS06FollowerRestartThenLeaderDies is TESTPLAN S-06, KIP-101 scenario
// 1: a follower restarts and the leader dies right after, so the
// restarted follower, still in the ISR, may be elected before it has
// fetched anything. Before KIP-101 such a follower truncated its log to
// its high watermark on restart and, once leader, lost records that were
// acknowledged; with leader epochs it keeps them.
//
// Each round, under the safe workload: kill -9 the follower of partition
// 0 that the controller would elect next (the first ISR member in
// assignment order after the leader; every fourth round the other one),
// restart it at once, and as soon as its new registration is in etcd (a
// new incarnation, which replaces the old one before the lease expires,
// so it never leaves the ISR) wait 0, 200 ms or 1 s, then kill -9 the
// leader. The restarted follower is then elected, unless it was the other
// one. The old leader is restarted and the round ends at full ISR with
// partition 0 acknowledging again. At the end nothing acknowledged is
// lost, duplicated or moved, and the replicas' logs are identical below
// the high watermark (see compareReplicaLogs).
//
// Reference: KIP-101 scenario 1.
func TestS06FollowerRestartThenLeaderDies(t *testing.T) {
	const (
		topic      = "s06"
		partitions = 5
	)
	rounds := 3
	if longProfile() {
		rounds = 20
	}
	// delays between the follower's new registration and the leader's
	// kill: before it fetches, around its first fetches, after it caught
	// up.
	delays := []time.Duration{0, 200 * time.Millisecond, time.Second}

	c := startCluster(t)
	// Small segments, so each replica rolls several and the comparison
	// crosses segment boundaries.
	c.createTopicWith(topic, partitions, map[string]string{"segment.bytes": "4096"})
	w := startWorkload(t, c, topic, partitions)
	w.waitAcks(0, 50, 30*time.Second)
	replicas := c.assignment(topic, 0)

	began := time.Now()
	restartedLed := 0
	var maxOutage time.Duration
	for round := 1; round <= rounds; round++ {
		delay := delays[(round-1)%len(delays)]
		st := c.mustState(topic, 0)
		leader := c.brokers[st.Leader]
		// The follower next in line for election, except every fourth
		// round (long profile), which restarts the other one: it then
		// follows a new leader it has never fetched from.
		var candidates []*broker
		for _, r := range replicas {
			if r != st.Leader && st.inISR(r) {
				candidates = append(candidates, c.brokers[r])
			}
		}
		var follower *broker
		switch {
		case len(candidates) > 1 && round%4 == 0:
			follower = candidates[1]
		case len(candidates) > 0:
			follower = candidates[0]
		}
		if follower == nil {
			t.Fatalf("round %d: partition 0 %v has no follower in the ISR", round, st)
		}
		old, err := c.incarnation(follower.id)
		if err != nil {
			t.Fatal(err)
		}

		followerKilledAt := time.Now()
		follower.kill()
		follower.start()
		waitFor(t, readyTimeout, func() error {
			if err := follower.exited(); err != nil {
				return err
			}
			inc, err := c.incarnation(follower.id)
			if err != nil {
				return err
			}
			if inc == "" || inc == old {
				return fmt.Errorf("broker %d has not registered again", follower.id)
			}
			return nil
		})
		registeredAt := time.Now()
		sleepUntil(registeredAt.Add(delay))
		atKill := c.mustState(topic, 0)
		leaderKilledAt := time.Now()
		leader.kill()
		next := c.waitLeaderChange(topic, 0, leader.id, st.LeaderEpoch, sessionTimeout+15*time.Second)
		electedAt := time.Now()
		if next.Leader == follower.id {
			restartedLed++
		}
		t.Logf("round %d: broker %d killed and registered again after %s; +%s leader %d killed (partition 0 %v); broker %d leads at epoch %d after %s (restarted follower elected: %v)",
			round, follower.id, registeredAt.Sub(followerKilledAt).Round(time.Millisecond), delay, leader.id, atKill,
			next.Leader, next.LeaderEpoch, electedAt.Sub(leaderKilledAt).Round(time.Millisecond), next.Leader == follower.id)

		c.restart(leader)
		c.waitFullISR(topic, partitions)
		w.waitAcks(0, 20, 30*time.Second)
		if at, ok := w.firstAckAfter(0, leaderKilledAt); ok {
			outage := at.Sub(leaderKilledAt)
			maxOutage = max(maxOutage, outage)
			t.Logf("round %d: partition 0 acknowledged again %s after the leader's kill; full ISR after %s",
				round, outage.Round(time.Millisecond), time.Since(leaderKilledAt).Round(time.Millisecond))
		}
	}
	w.stop(30 * time.Second)
	r := w.check(c)
	hw := c.highWatermarks(topic, partitions)
	c.stopAll()
	compared := compareReplicaLogs(c, topic, partitions, hw)
	t.Logf("S-06: %d rounds in %s, restarted follower elected in %d; longest outage on partition 0 %s; %d bytes of committed log compared; %v",
		rounds, time.Since(began).Round(time.Second), restartedLed, maxOutage.Round(time.Millisecond), compared, r)
}
