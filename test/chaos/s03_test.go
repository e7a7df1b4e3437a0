package chaos

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestS03IsolatedLeader is TESTPLAN S-03 (Jepsen's 2013 Kafka case): the
// leader of partition 0 is cut off from etcd and from the other brokers'
// replication in both directions, while clients still reach it, for
// 15 s; then the links heal. Repeated while the profile allows.
//
// With min.insync.replicas=2 the isolated leader cannot advance its high
// watermark alone and cannot shrink the ISR (that is a write to etcd),
// so it must acknowledge nothing once cut off; acks=all produce requests
// sent straight to it are answered with an error (REQUEST_TIMED_OUT once
// their 3 s timeout passes). Its lease expires after T_s and the controller
// elects one of the others at a higher epoch within T_s plus a few
// seconds. Nothing acknowledged is lost.
func TestS03IsolatedLeader(t *testing.T) { runS03(t, envProfile()) }

// TestS03IsolatedLeaderSASLSSL is S-03 with the secure profile: the cuts
// fall on the SASL_SSL links that replication uses (see netCluster). Every
// replica fetcher connection must have come through those links, none
// through the PLAINTEXT ones.
func TestS03IsolatedLeaderSASLSSL(t *testing.T) { runS03(t, secureProfile) }

// runS03 is S-03 on a netCluster of profile p.
func runS03(t *testing.T, p clusterProfile) {
	const (
		topic      = "s03"
		partitions = 5
		// grace covers replica fetches already on their way when the
		// links were cut: the leader may still learn of them and ack.
		grace = time.Second
		// electionBound is TESTPLAN's "within T_s + a few seconds".
		electionBound = sessionTimeout + 5*time.Second
	)
	var (
		runFor   = pick(15*time.Second, 5*time.Minute)
		isolated = 15 * time.Second
	)
	nc := startNetClusterWith(t, p)
	c := nc.testCluster
	c.createTopic(topic, partitions)
	hist := watchStates(c, topic, partitions)
	w := startWorkload(t, c, topic, partitions)
	w.waitAcks(0, 50, 30*time.Second)

	type window struct {
		cycle     int
		node      int32
		partition int32
		from      time.Time
	}
	var watch []window
	began := time.Now()
	cycles := 0
	for cycle := 1; cycle == 1 || time.Since(began)+isolated <= runFor; cycle++ {
		cycles = cycle
		st := c.mustState(topic, 0)
		victim := c.brokers[st.Leader]
		led := make(map[int32]int32)
		for p := range int32(partitions) {
			if s := c.mustState(topic, p); s.Leader == victim.id {
				led[p] = s.LeaderEpoch
			}
		}
		cutAt := time.Now()
		nc.isolate(victim.id)
		next := c.waitLeaderChange(topic, 0, victim.id, st.LeaderEpoch, electionBound+10*time.Second)
		elected := time.Since(cutAt)
		t.Logf("cycle %d: broker %d isolated (led %v); partition 0 led by %d at epoch %d after %s",
			cycle, victim.id, led, next.Leader, next.LeaderEpoch, elected.Round(time.Millisecond))
		if elected > electionBound {
			t.Errorf("cycle %d: new leader of partition 0 after %s, above T_s + 5 s", cycle, elected.Round(time.Millisecond))
		}

		// Straight to the isolated broker (clients still reach it): every
		// partition it led must refuse an acks=all write.
		for p := range led {
			v := fmt.Sprintf("%s-isolated-%d-%d", topic, cycle, p)
			code, err := produceDirect(victim.addr(), topic, p, v)
			w.addProbe(p, -1, v, false)
			t.Logf("cycle %d: produce to isolated broker %d for partition %d: %v %v", cycle, victim.id, p, kerr.ErrorForCode(code), err)
			switch {
			case err != nil:
				// The request carries a 3 s timeout: the broker must
				// answer it, not hold it until the connection ends.
				t.Errorf("cycle %d: isolated broker %d did not answer a produce to partition %d: %v", cycle, victim.id, p, err)
			case code == 0:
				t.Errorf("cycle %d: isolated broker %d acknowledged a write to partition %d", cycle, victim.id, p)
			}
		}
		for p := range led {
			watch = append(watch, window{cycle, victim.id, p, cutAt.Add(grace)})
		}
		sleepUntil(cutAt.Add(isolated))
		nc.healAll()
		healedAt := time.Now()
		if err := victim.exited(); err != nil {
			t.Fatal(err)
		}
		c.waitFullISR(topic, partitions)
		w.waitAcks(0, 20, 30*time.Second)
		t.Logf("cycle %d: healed; full ISR after %s", cycle, time.Since(healedAt).Round(time.Millisecond))
	}
	w.stop(30 * time.Second)
	hist.stop()
	r := w.check(c)

	// Acks by the isolated broker on a partition it led: from the cut
	// (plus grace) until it was elected again, there must be none.
	isolatedAcks := 0
	for _, f := range watch {
		until := time.Now()
		if o, ok := hist.firstAfter(f.partition, f.from, func(s partitionState) bool { return s.Leader == f.node }); ok {
			until = o.at.Add(-time.Second)
		}
		for _, b := range w.batches.by(f.node, f.partition, f.from, until) {
			isolatedAcks++
			t.Errorf("cycle %d: isolated broker %d acknowledged %d records on partition %d at %s",
				f.cycle, f.node, b.records, f.partition, b.at.Format("15:04:05.000"))
		}
	}
	plain, secure := nc.replicaConns()
	t.Logf("S-03: %d isolations of %s, %d leaderships watched, %d acks by an isolated leader; "+
		"replica connections: %d PLAINTEXT, %d SASL_SSL; %v",
		cycles, isolated, len(watch), isolatedAcks, plain, secure, r)
	if p.secure && (plain != 0 || secure == 0) {
		t.Errorf("secure profile: %d replica connections on PLAINTEXT links, %d on SASL_SSL links; want 0 and some",
			plain, secure)
	}
}
