package broker_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"samsa/internal/testutil"
	"samsa/internal/vfs"
)

// TestPowerLossLosesNoAcknowledgedRecord is TESTPLAN S-12 and S-13 in
// process: three brokers keep their partitions in memory file systems
// (vfs.MemFS) while an idempotent acks=all producer writes; the power is
// cut (MemFS.CutPower: everything not fsynced is gone, nothing after the
// cut becomes durable) on the leader of partition 0, then on two brokers
// at once, then on all three at once, and each broker is started again
// on what its disk kept. Under the default durable policy (a leader
// acknowledges only what it and every ISR member have fsynced) every
// acknowledged record must be in the final logs at its offset, and none
// twice.
func TestPowerLossLosesNoAcknowledgedRecord(t *testing.T) {
	t.Parallel()
	fss := []*vfs.MemFS{vfs.NewMemFS(), vfs.NewMemFS(), vfs.NewMemFS()}
	c := testutil.StartClusterOnFS(t, []vfs.FS{fss[0], fss[1], fss[2]},
		"default.replication.factor=3", "min.insync.replicas=2", "replica.lag.time.max.ms=2000",
		"offsets.topic.num.partitions=1", "auto.leader.rebalance.enable=false")
	const topic, partitions = "power", 3
	createReplicated(t, c, topic, partitions)

	prod := c.Client(kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(time.Millisecond),
		kgo.RecordDeliveryTimeout(5*time.Second), kgo.MetadataMinAge(50*time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }))
	var mu sync.Mutex
	acked := map[int32]map[int64]string{}
	var ackedN atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		sem := make(chan struct{}, 16)
		for i := 0; ctx.Err() == nil; i++ {
			sem <- struct{}{}
			v := fmt.Sprintf("v-%d", i)
			prod.Produce(ctx, &kgo.Record{Value: []byte(v)}, func(r *kgo.Record, err error) {
				<-sem
				if err != nil {
					return
				}
				mu.Lock()
				if acked[r.Partition] == nil {
					acked[r.Partition] = map[int64]string{}
				}
				acked[r.Partition][r.Offset] = v
				mu.Unlock()
				ackedN.Add(1)
			})
		}
	})
	waitAcked := func(more int64) {
		t.Helper()
		from := ackedN.Load()
		testutil.Eventually(t, 60*time.Second, func() error {
			if n := ackedN.Load() - from; n < more {
				return fmt.Errorf("%d records acknowledged since %d", n, from)
			}
			return nil
		})
	}
	cut := func(victims ...int32) {
		t.Helper()
		clones := make([]*vfs.MemFS, len(victims))
		for i, v := range victims {
			clones[i] = fss[v].CutPower()
		}
		for _, v := range victims {
			c.Kill(int(v))
		}
		for i, v := range victims {
			fss[v] = clones[i]
			c.Brokers[v].FS = clones[i]
		}
		for _, v := range victims {
			c.Start(int(v))
		}
		waitFullISR(t, c, topic, partitions)
		t.Logf("power cut on brokers %v; %d records acknowledged so far", victims, ackedN.Load())
	}

	waitAcked(200)
	cut(c.Leader(topic, 0))
	waitAcked(200)
	l := c.Leader(topic, 0)
	cut(l, othersThan(l)[0])
	waitAcked(200)
	cut(0, 1, 2)
	waitAcked(200)
	cancel()
	wg.Wait()
	prod.Close()

	mu.Lock()
	defer mu.Unlock()
	for p := range int32(partitions) {
		end := logEnd(t, c.Client(), topic, p)
		seen := map[string]int64{}
		for _, r := range consumeTopicPartition(t, c, topic, p, end) {
			if at, dup := seen[string(r.Value)]; dup {
				t.Errorf("partition %d: %q at offsets %d and %d", p, r.Value, at, r.Offset)
			}
			seen[string(r.Value)] = r.Offset
		}
		lost := 0
		minLost := int64(-1)
		for off, v := range acked[p] {
			if at, ok := seen[v]; (!ok || at != off) && (minLost < 0 || off < minLost) {
				minLost = off
			}
		}
		t.Logf("partition %d: log end %d, %d read, %d acknowledged, first lost at %d", p, end, len(seen), len(acked[p]), minLost)
		for off, v := range acked[p] {
			if at, ok := seen[v]; !ok || at != off {
				if lost < 5 {
					t.Errorf("partition %d: acknowledged %q at offset %d, found at %d (present %v)", p, v, off, at, ok)
				}
				lost++
			}
		}
		if lost > 0 {
			t.Errorf("partition %d: %d of %d acknowledged records lost or moved", p, lost, len(acked[p]))
		}
	}
	t.Logf("%d acknowledged records, all in the final logs", ackedN.Load())
}

// consumeTopicPartition reads partition p of topic from offset 0 to end with a
// client seeded with every broker.
func consumeTopicPartition(t *testing.T, c *testutil.Cluster, topic string, p int32, end int64) []*kgo.Record {
	t.Helper()
	cl := c.Client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {p: kgo.NewOffset().At(0)}}),
		kgo.FetchMaxWait(200*time.Millisecond))
	defer cl.Close()
	ctx := ctxT(t, 60*time.Second)
	var got []*kgo.Record
	for int64(len(got)) < end {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("partition %d: read %d of %d records", p, len(got), end)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("partition %d: %v", p, err) })
		got = append(got, fs.Records()...)
	}
	return got
}
