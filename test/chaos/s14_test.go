package chaos

import (
	"syscall"
	"testing"
	"time"
)

// TestS14RollingRestart is TESTPLAN S-14: each broker in turn gets
// SIGTERM (controlled shutdown moves its leaderships away before it
// exits), must exit 0, is restarted, and the next one follows once every
// partition has its full ISR again. No anomaly is allowed; the longest
// gap between consecutive acknowledgements of a partition is recorded
// (TESTPLAN's target is 2 s).
func TestS14RollingRestart(t *testing.T) {
	const (
		topic      = "s14"
		partitions = 5
	)
	var (
		runFor = pick(15*time.Second, 5*time.Minute)
		settle = pick(time.Second, 10*time.Second)
	)
	c := startCluster(t)
	c.createTopic(topic, partitions)
	w := startWorkload(t, c, topic, partitions)
	w.waitAcks(0, 50, 30*time.Second)

	began := time.Now()
	restarts := 0
	for round := 1; round == 1 || time.Since(began) < runFor; round++ {
		for _, b := range c.brokers {
			termAt := time.Now()
			b.signal(syscall.SIGTERM)
			st, ok := b.waitExit(40 * time.Second)
			if !ok {
				t.Fatalf("round %d: broker %d still running 40s after SIGTERM", round, b.id)
			}
			if st.ExitCode() != 0 {
				t.Errorf("round %d: broker %d exited with %v after SIGTERM", round, b.id, st)
			}
			stopped := time.Since(termAt)
			for p := range int32(partitions) {
				if s := c.mustState(topic, p); s.Leader == b.id {
					t.Errorf("round %d: broker %d exited still leading partition %d (%v)", round, b.id, p, s)
				}
			}
			c.restart(b)
			c.waitFullISR(topic, partitions)
			// With the restarted broker in every ISR, an acknowledgement on
			// every partition means it has caught up (acks=all waits for
			// the whole ISR); then the ISR must still be full.
			for p := range int32(partitions) {
				w.waitAcks(p, 20, 30*time.Second)
			}
			c.waitFullISR(topic, partitions)
			restarts++
			t.Logf("round %d: broker %d stopped in %s, back with full ISR after %s", round, b.id,
				stopped.Round(time.Millisecond), time.Since(termAt).Round(time.Millisecond))
			time.Sleep(settle)
		}
	}
	w.stop(30 * time.Second)
	r := w.check(c)
	t.Logf("S-14: %d restarts in %s; %v", restarts, time.Since(began).Round(time.Second), r)
	if r.maxGap > 2*time.Second {
		t.Logf("S-14: longest ack gap %s on partition %d (from %s) is above TESTPLAN's 2 s target",
			r.maxGap.Round(time.Millisecond), r.maxGapPartition, r.maxGapAt.Format("15:04:05.000"))
	}
}
