package chaos

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestS04NoUncleanElection is TESTPLAN S-04: with unclean leader election
// off, a replica that fell out of the ISR is never elected. A follower of
// partition 0 is killed first and stays down while the producer writes on
// (so it lags and leaves the ISR); then the other two replicas are killed
// and only the lagged one is restarted. While it is alone, partition 0
// has no leader, the producer gets no acknowledgement on it and direct
// produce probes fail with retriable errors, never succeed. When the ISR
// members return, the partition serves again and nothing acknowledged was
// lost.
func TestS04NoUncleanElection(t *testing.T) {
	const (
		topic      = "s04"
		partitions = 5
	)
	var (
		lagFor     = pick(8*time.Second, 60*time.Second)
		offlineFor = pick(10*time.Second, 200*time.Second)
	)
	c := startCluster(t)
	c.createTopic(topic, partitions)
	w := startWorkload(t, c, topic, partitions)
	w.waitAcks(0, 50, 30*time.Second)

	st := c.mustState(topic, 0)
	var lagged *broker
	var others []*broker
	for _, b := range c.brokers {
		if b.id != st.Leader && lagged == nil {
			lagged = b
		} else {
			others = append(others, b)
		}
	}
	lagged.kill()
	killedAt := time.Now()
	waitFor(t, 30*time.Second, func() error {
		if s := c.mustState(topic, 0); s.inISR(lagged.id) {
			return fmt.Errorf("partition 0: %v still lists broker %d", s, lagged.id)
		}
		return nil
	})
	sleepUntil(killedAt.Add(lagFor))
	w.waitAcks(0, 50, 30*time.Second)
	before := c.mustState(topic, 0)
	t.Logf("broker %d down for %s; partition 0: %v", lagged.id, time.Since(killedAt).Round(time.Millisecond), before)

	for _, b := range others {
		b.kill()
	}
	offlineFrom := time.Now()
	lagged.start()
	c.waitReady(lagged, 1)

	// Probe partition 0 directly while the lagged replica is alone, and
	// watch the committed state: it must never name the lagged replica.
	probe, err := kgo.NewClient(kgo.SeedBrokers(c.addrs()...),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DisableIdempotentWrite(),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RecordRetries(3),
		kgo.RecordDeliveryTimeout(2*time.Second),
		kgo.MetadataMinAge(100*time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }))
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close()
	var probeOK, probeErr int
	errs := make(map[string]int)
	for i := 0; time.Since(offlineFrom) < offlineFor; i++ {
		v := fmt.Sprintf("%s-probe-%d", topic, i)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		r := &kgo.Record{Topic: topic, Partition: 0, Value: []byte(v)}
		err := probe.ProduceSync(ctx, r).FirstErr()
		cancel()
		if err == nil {
			probeOK++
			t.Errorf("probe %s acknowledged at offset %d while only broker %d (not in the ISR) runs", v, r.Offset, lagged.id)
		} else {
			probeErr++
			errs[err.Error()]++
		}
		w.addProbe(0, r.Offset, v, err == nil)
		if s, err := c.state(topic, 0); err == nil && s.Leader == lagged.id {
			t.Errorf("unclean election: partition 0 %v (ISR before: %v)", s, before)
		}
		if err := lagged.exited(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	offlineTo := time.Now()
	after := c.mustState(topic, 0)
	acked := w.acksBetween(0, offlineFrom, offlineTo)
	t.Logf("offline %s: partition 0 %v; %d probes acknowledged, %d failed %v; %d workload acks on partition 0",
		offlineTo.Sub(offlineFrom).Round(time.Millisecond), after, probeOK, probeErr, errs, len(acked))
	if len(acked) > 0 {
		t.Errorf("%d acks on partition 0 while no ISR member ran, first %s at offset %d", len(acked), acked[0].value, acked[0].offset)
	}
	if probeErr == 0 {
		t.Errorf("no probe failed while partition 0 was offline")
	}

	for _, b := range others {
		b.start()
	}
	for _, b := range others {
		c.waitReady(b, numBrokers)
	}
	c.waitFullISR(topic, partitions)
	w.waitAcks(0, 50, 30*time.Second)
	w.stop(30 * time.Second)
	r := w.check(c)
	t.Logf("S-04: %v", r)
}
