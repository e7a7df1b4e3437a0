package chaos

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// powerLossProfile runs every broker with its unsynced writes in its own
// memory (SAMSA_TEST_VOLATILE_WRITES, vfs.Volatile): kill -9 of a broker
// is then a power cut of its machine, which loses everything it had not
// fsynced.
var powerLossProfile = clusterProfile{env: []string{"SAMSA_TEST_VOLATILE_WRITES=1"}}

// TestS12S13PowerLossAcrossProcesses is TESTPLAN S-12 and S-13 with
// broker processes: under the safe producer's load, the power of the
// leader of partition 0 is cut, then that of two brokers at once, then of
// all three at once; each time the brokers start again on what they had
// fsynced. Under the default durable policy nothing acknowledged may be
// lost, duplicated or moved.
//
// That the cuts lose data for real is checked on a second topic kept
// under a relaxed flush policy (flush.messages 1000000, acknowledged
// before any fsync), with unclean election allowed on it: after all three
// brokers lose power it must hold fewer records than were acknowledged.
func TestS12S13PowerLossAcrossProcesses(t *testing.T) {
	const (
		topic      = "s12"
		relaxed    = "s12-relaxed"
		partitions = 3
		relaxedN   = 500
	)
	c := startClusterWith(t, powerLossProfile)
	c.createTopic(topic, partitions)
	w := startWorkload(t, c, topic, partitions)
	w.waitAcks(0, 50, 30*time.Second)

	cut := func(victims ...*broker) {
		t.Helper()
		for _, b := range victims {
			b.kill()
		}
		for _, b := range victims {
			b.start()
		}
		for _, b := range victims {
			c.waitReady(b, numBrokers)
		}
		c.waitFullISR(topic, partitions)
		for p := range int32(partitions) {
			w.waitAcks(p, 20, 60*time.Second)
		}
		ids := ""
		for _, b := range victims {
			ids += " " + strconv.Itoa(int(b.id))
		}
		t.Logf("power cut on brokers%s; all partitions in sync and taking writes again", ids)
	}

	l := c.mustState(topic, 0).Leader
	cut(c.brokers[l])
	l = c.mustState(topic, 0).Leader
	cut(c.brokers[l], c.brokers[(l+1)%numBrokers])

	// The relaxed topic, written before the cut of every broker.
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs()...), kgo.DefaultProduceTopic(relaxed))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cfg := func(s string) *string { return &s }
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 3, map[string]*string{
		"flush.messages": cfg("1000000"), "flush.ms": cfg("600000"), "unclean.leader.election.enable": cfg("true"),
	}, relaxed)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create %s: %v", relaxed, err)
	}
	c.waitFullISR(relaxed, 1)
	for i := range relaxedN {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
			t.Fatalf("produce to %s: %v", relaxed, err)
		}
	}

	cut(c.brokers...)
	waitFor(t, 60*time.Second, func() error {
		if st := c.mustState(relaxed, 0); st.Leader < 0 {
			return fmt.Errorf("%s-0: %v", relaxed, st)
		}
		return nil
	})
	var end int64
	waitFor(t, 30*time.Second, func() error {
		offs, err := kadm.NewClient(cl).ListEndOffsets(ctx, relaxed)
		if err != nil {
			return err
		}
		o, ok := offs.Lookup(relaxed, 0)
		if !ok || o.Err != nil {
			return fmt.Errorf("end offset of %s-0: %v", relaxed, o.Err)
		}
		end = o.Offset
		return nil
	})
	t.Logf("S-13 relaxed flush policy: %d acknowledged, %d left after every broker lost power", relaxedN, end)
	if end >= relaxedN {
		t.Errorf("%s kept all %d acknowledged unsynced records through the power cut of every broker: the cuts dropped nothing", relaxed, relaxedN)
	}

	w.stop(30 * time.Second)
	r := w.check(c)
	t.Logf("S-12/S-13 across processes: %v", r)
}
