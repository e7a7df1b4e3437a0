package broker_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"samsa/internal/storage"
	"samsa/internal/testutil"
)

// skewClock is a broker clock off the machine's by an offset that a test
// changes at any moment: a wall clock stepped forward or back (the result
// carries no monotonic reading, so durations measured across a step see
// it, as they would with wall-clock milliseconds).
type skewClock struct{ off atomic.Int64 }

func (c *skewClock) now() time.Time {
	return time.Now().Round(0).Add(time.Duration(c.off.Load()))
}

// TestClockSkewAndJumpsLoseNothing is TESTPLAN S-24 in process: broker 1
// runs 288 s ahead, broker 2 288 s behind, and during an idempotent
// acks=all load broker 0's clock strobes between +288 s and -288 s every
// 200 ms while broker 1's jumps from +288 s to -288 s. Two topics of 4 KiB
// segments with retention.ms of 10 min, one with CreateTime and one with
// LogAppendTime (stamped by whichever leader's clock). No acknowledged
// record may be lost or duplicated, and retention must delete nothing
// (every replica keeps log start offset 0): no record is older than
// retention.ms minus the largest skew between two clocks (576 s).
func TestClockSkewAndJumpsLoseNothing(t *testing.T) {
	t.Parallel()
	const skew = 288 * time.Second
	clocks := []*skewClock{{}, {}, {}}
	clocks[1].off.Store(int64(skew))
	clocks[2].off.Store(int64(-skew))
	c := testutil.StartClusterWithClocks(t, []func() time.Time{clocks[0].now, clocks[1].now, clocks[2].now},
		"default.replication.factor=3", "min.insync.replicas=2", "replica.lag.time.max.ms=2000",
		"offsets.topic.num.partitions=1", "log.retention.check.interval.ms=100")
	topics := []string{"skew-create", "skew-append"}
	const partitions = 3
	createReplicated(t, c, topics[0], partitions, "segment.bytes=4096", "retention.ms=600000")
	createReplicated(t, c, topics[1], partitions, "segment.bytes=4096", "retention.ms=600000", "message.timestamp.type=LogAppendTime")

	prod := c.Client(kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(time.Millisecond), kgo.MetadataMinAge(50*time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }))
	type key struct {
		topic string
		p     int32
	}
	var mu sync.Mutex
	acked := map[key]map[int64]string{}
	var ackedN, failed atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		sem := make(chan struct{}, 16)
		for i := 0; ctx.Err() == nil; i++ {
			sem <- struct{}{}
			v := fmt.Sprintf("v-%d-%s", i, string(make([]byte, 100)))
			prod.Produce(ctx, &kgo.Record{Topic: topics[i%2], Value: []byte(v)}, func(r *kgo.Record, err error) {
				<-sem
				if err != nil {
					if ctx.Err() == nil {
						failed.Add(1)
					}
					return
				}
				mu.Lock()
				k := key{r.Topic, r.Partition}
				if acked[k] == nil {
					acked[k] = map[int64]string{}
				}
				acked[k][r.Offset] = v
				mu.Unlock()
				ackedN.Add(1)
			})
		}
	})

	// The strobe and the jump, during the load.
	deadline := time.Now().Add(5 * time.Second)
	for i := 0; time.Now().Before(deadline); i++ {
		if i%2 == 0 {
			clocks[0].off.Store(int64(skew))
		} else {
			clocks[0].off.Store(int64(-skew))
		}
		if i == 10 {
			clocks[1].off.Store(int64(-skew))
		}
		time.Sleep(200 * time.Millisecond)
	}
	clocks[0].off.Store(0)
	testutil.Eventually(t, 30*time.Second, func() error {
		if n := ackedN.Load(); n < 2000 {
			return fmt.Errorf("%d records acknowledged", n)
		}
		return nil
	})
	cancel()
	wg.Wait()
	prod.Close()
	waitFullISR(t, c, topics[0], partitions)
	waitFullISR(t, c, topics[1], partitions)
	time.Sleep(500 * time.Millisecond) // several retention checks

	mu.Lock()
	defer mu.Unlock()
	for _, topic := range topics {
		for p := range int32(partitions) {
			for i := range c.Brokers {
				rp := c.Brokers[i].Node.Broker().Replicas().Get(storage.TopicPartition{Topic: topic, Partition: p})
				if rp == nil {
					t.Fatalf("broker %d does not host %s-%d", i, topic, p)
				}
				if start := rp.LogStartOffset(); start != 0 {
					t.Errorf("broker %d: %s-%d log start %d: retention deleted records younger than retention.ms minus the skew", i, topic, p, start)
				}
			}
			end := logEnd(t, c.Client(), topic, p)
			seen := map[string]int64{}
			for _, r := range consumeTopicPartition(t, c, topic, p, end) {
				if at, dup := seen[string(r.Value)]; dup {
					t.Errorf("%s-%d: a value at offsets %d and %d", topic, p, at, r.Offset)
				}
				seen[string(r.Value)] = r.Offset
			}
			for off, v := range acked[key{topic, p}] {
				if at, ok := seen[v]; !ok || at != off {
					t.Errorf("%s-%d: acknowledged record at offset %d lost or moved (found %v at %d)", topic, p, off, ok, at)
				}
			}
		}
	}
	t.Logf("%d records acknowledged, %d produce failures under the clock faults, none lost", ackedN.Load(), failed.Load())
}
