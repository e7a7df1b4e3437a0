package chaos

import (
	"testing"
	"time"
)

// TestS02KillLeaderLoop is TESTPLAN S-02: kill -9 the current leader of
// partition 0 every interval and restart it some seconds later, while the
// safe producer writes to 5 partitions. Afterwards (all brokers back,
// full ISR) nothing acknowledged is lost, duplicated or at another offset.
func TestS02KillLeaderLoop(t *testing.T) { runS02(t, envProfile()) }

// TestS02KillLeaderLoopSASLSSL is S-02 with the secure profile: followers
// fetch over SASL_SSL with mutual TLS and SCRAM (see secure_test.go), so
// every restarted follower must authenticate again before it catches up.
func TestS02KillLeaderLoopSASLSSL(t *testing.T) { runS02(t, secureProfile) }

// runS02 is S-02 on a cluster of profile p.
func runS02(t *testing.T, p clusterProfile) {
	const (
		topic      = "s02"
		partitions = 5
	)
	var (
		runFor = pick(20*time.Second, 5*time.Minute)
		every  = pick(9*time.Second, 30*time.Second)
		down   = pick(3*time.Second, 10*time.Second)
	)
	c := startClusterWith(t, p)
	c.createTopic(topic, partitions)
	w := startWorkload(t, c, topic, partitions)
	w.waitAcks(0, 50, 30*time.Second)

	began := time.Now()
	kills := 0
	for kills == 0 || time.Since(began)+every <= runFor {
		st := c.mustState(topic, 0)
		victim := c.brokers[st.Leader]
		killedAt := time.Now()
		victim.kill()
		kills++
		next := c.waitLeaderChange(topic, 0, st.Leader, st.LeaderEpoch, sessionTimeout+15*time.Second)
		t.Logf("kill %d: leader %d (epoch %d) killed; broker %d leads at epoch %d after %s",
			kills, st.Leader, st.LeaderEpoch, next.Leader, next.LeaderEpoch, time.Since(killedAt).Round(time.Millisecond))
		sleepUntil(killedAt.Add(down))
		c.restart(victim)
		sleepUntil(killedAt.Add(every))
	}
	c.waitFullISR(topic, partitions)
	w.waitAcks(0, 50, 30*time.Second)
	w.stop(30 * time.Second)
	r := w.check(c)
	t.Logf("S-02: %d kills in %s; %v", kills, time.Since(began).Round(time.Second), r)
}
