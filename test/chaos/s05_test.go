package chaos

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/record"
)

// TestS05ZombieLeader is TESTPLAN S-05: the leader of partition 0 is
// SIGSTOPped for 2 x T_s (its lease expires, the controller elects new
// leaders at a higher epoch), then SIGCONTinued. From the moment a new
// epoch of a partition is committed in etcd, the paused broker must not
// acknowledge a write to that partition until it is elected again: the
// producer's hook sees no batch acknowledged by it, and produce requests
// sent straight to it right after it resumes get errors. Nothing
// acknowledged is lost.
func TestS05ZombieLeader(t *testing.T) {
	const (
		topic      = "s05"
		partitions = 5
	)
	var (
		runFor = pick(15*time.Second, 5*time.Minute)
		pause  = 2 * sessionTimeout
	)
	c := startCluster(t)
	c.createTopic(topic, partitions)
	hist := watchStates(c, topic, partitions)
	w := startWorkload(t, c, topic, partitions)
	w.waitAcks(0, 50, 30*time.Second)

	type fenced struct {
		cycle     int
		node      int32
		partition int32
		oldEpoch  int32
		newAt     time.Time // new epoch first observed in etcd
	}
	var watch []fenced
	began := time.Now()
	cycles := 0
	for cycle := 1; cycle == 1 || time.Since(began) < runFor; cycle++ {
		cycles = cycle
		st := c.mustState(topic, 0)
		zombie := c.brokers[st.Leader]
		led := make(map[int32]int32) // partition -> epoch the zombie leads at
		for p := range int32(partitions) {
			if s := c.mustState(topic, p); s.Leader == zombie.id {
				led[p] = s.LeaderEpoch
			}
		}
		stoppedAt := time.Now()
		zombie.signal(syscall.SIGSTOP)
		next := c.waitLeaderChange(topic, 0, zombie.id, st.LeaderEpoch, pause+10*time.Second)
		t.Logf("cycle %d: broker %d stopped (led %v); partition 0 led by %d at epoch %d after %s",
			cycle, zombie.id, led, next.Leader, next.LeaderEpoch, time.Since(stoppedAt).Round(time.Millisecond))
		sleepUntil(stoppedAt.Add(pause))
		zombie.signal(syscall.SIGCONT)
		resumedAt := time.Now()

		// Straight to the resumed broker, before it has caught up with
		// anything: it must refuse.
		for p := range led {
			code, err := produceDirect(zombie.addr(), topic, p, fmt.Sprintf("%s-zombie-%d-%d", topic, cycle, p))
			t.Logf("cycle %d: produce to resumed broker %d for partition %d: %v %v", cycle, zombie.id, p, kerr.ErrorForCode(code), err)
			w.addProbe(p, -1, fmt.Sprintf("%s-zombie-%d-%d", topic, cycle, p), false)
			if err == nil && code == 0 {
				t.Errorf("cycle %d: resumed broker %d acknowledged a write to partition %d after being replaced", cycle, zombie.id, p)
			}
		}
		for p, e := range led {
			o, ok := hist.firstAfter(p, stoppedAt, func(s partitionState) bool { return s.LeaderEpoch > e })
			if !ok {
				t.Fatalf("cycle %d: partition %d: no epoch above %d observed", cycle, p, e)
			}
			if o.at.After(resumedAt) {
				t.Logf("cycle %d: partition %d moved only after the resume (%v)", cycle, p, o.partitionState)
			}
			watch = append(watch, fenced{cycle, zombie.id, p, e, o.at})
		}
		if err := zombie.exited(); err != nil {
			t.Fatal(err)
		}
		c.waitFullISR(topic, partitions)
		w.waitAcks(0, 20, 30*time.Second)
		t.Logf("cycle %d: full ISR %s after resume", cycle, time.Since(resumedAt).Round(time.Millisecond))
	}
	w.stop(30 * time.Second)
	hist.stop()
	r := w.check(c)

	// Zombie acks: batches the replaced broker acknowledged on a
	// partition after its successor's epoch was committed and before it
	// was elected again (less a second, for the polling delay).
	zombieAcks := 0
	for _, f := range watch {
		until := time.Now()
		if o, ok := hist.firstAfter(f.partition, f.newAt, func(s partitionState) bool { return s.Leader == f.node }); ok {
			until = o.at.Add(-time.Second)
		}
		for _, b := range w.batches.by(f.node, f.partition, f.newAt, until) {
			zombieAcks++
			t.Errorf("cycle %d: broker %d acknowledged %d records on partition %d at %s, %s after epoch %d was replaced",
				f.cycle, f.node, b.records, f.partition, b.at.Format("15:04:05.000"), b.at.Sub(f.newAt).Round(time.Millisecond), f.oldEpoch)
		}
	}
	t.Logf("S-05: %d pause cycles, %d fenced leaderships, %d zombie acks; %v", cycles, len(watch), zombieAcks, r)
}

// produceDirect sends one acks=all Produce of a single record to the
// broker at addr itself and returns the partition's error code.
func produceDirect(addr, topic string, p int32, value string) (int16, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequestRetries(0))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	bb := record.NewBuilder(record.CodecNone, time.Now().UnixMilli())
	bb.Add(record.Record{Value: []byte(value)})
	batch, err := bb.Build()
	if err != nil {
		return 0, err
	}
	req := kmsg.NewPtrProduceRequest()
	req.Acks = -1
	req.TimeoutMillis = 3000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = p
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl.SeedBrokers()[0])
	if err != nil {
		return 0, err
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return 0, fmt.Errorf("produce response with %d topics", len(resp.Topics))
	}
	return resp.Topics[0].Partitions[0].ErrorCode, nil
}
