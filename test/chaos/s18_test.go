package chaos

import (
	"syscall"
	"testing"
	"time"
)

// TestS18TxnCoordinatorFaults is TESTPLAN S-18: transactional producers
// commit and abort transactions over 5 partitions while the transaction
// coordinator of one of their transactional ids is killed and restarted,
// paused for twice the session timeout, and cut off from etcd and the
// other brokers. Afterwards every committed transaction is wholly
// visible at read_committed, no aborted one is, and none is torn.
func TestS18TxnCoordinatorFaults(t *testing.T) {
	const (
		topic      = "s18"
		partitions = 5
	)
	var (
		rounds   = int(pick(1, 5))
		down     = pick(3*time.Second, 8*time.Second)
		paused   = 2 * sessionTimeout
		isolated = pick(8*time.Second, 15*time.Second)
	)
	nc := startNetCluster(t)
	c := nc.testCluster
	c.createTopic(topic, partitions)
	w := startTxnWorkload(t, c, topic, partitions, "s18-a", "s18-b")
	w.waitCommits(5, 60*time.Second)

	coordinator := func() *broker {
		t.Helper()
		var id int32
		waitFor(t, 30*time.Second, func() error {
			var err error
			id, err = c.txnCoordinator("s18-a")
			return err
		})
		return c.brokers[id]
	}
	for round := range rounds {
		b := coordinator()
		t.Logf("round %d: kill the coordinator, broker %d", round, b.id)
		b.kill()
		time.Sleep(down)
		c.restart(b)
		w.waitCommits(3, 90*time.Second)

		b = coordinator()
		t.Logf("round %d: pause the coordinator, broker %d, for %s", round, b.id, paused)
		b.signal(syscall.SIGSTOP)
		time.Sleep(paused)
		b.signal(syscall.SIGCONT)
		w.waitCommits(3, 90*time.Second)

		b = coordinator()
		t.Logf("round %d: isolate the coordinator, broker %d, for %s", round, b.id, isolated)
		nc.isolate(b.id)
		time.Sleep(isolated)
		nc.healAll()
		w.waitCommits(3, 90*time.Second)
	}
	c.waitFullISR(topic, partitions)
	r := w.check()
	t.Logf("S-18: %d rounds; %v", rounds, r)
}
