package broker_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/testutil"
)

// allocateOn sends n InitProducerId requests (no transactional id) to
// broker node through cl and returns the ids, failing on any error.
func allocateOn(t *testing.T, cl *kgo.Client, node int32, n int) ([]int64, error) {
	t.Helper()
	ids := make([]int64, 0, n)
	for range n {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		req := kmsg.NewPtrInitProducerIDRequest()
		req.ProducerID, req.ProducerEpoch = -1, -1
		req.TransactionTimeoutMillis = 60000
		kr, err := cl.Broker(int(node)).Request(ctx, req)
		cancel()
		if err != nil {
			return ids, fmt.Errorf("InitProducerId on broker %d: %w", node, err)
		}
		resp := kr.(*kmsg.InitProducerIDResponse)
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return ids, fmt.Errorf("InitProducerId on broker %d after %d ids: %w", node, len(ids), err)
		}
		if resp.ProducerID < 0 || resp.ProducerEpoch != 0 {
			return ids, fmt.Errorf("InitProducerId on broker %d: id %d epoch %d", node, resp.ProducerID, resp.ProducerEpoch)
		}
		ids = append(ids, resp.ProducerID)
	}
	return ids, nil
}

// TestProducerIDsUniqueAcrossBrokersAndBlocks has three brokers hand out
// producer ids concurrently, several clients per broker, well past each
// broker's first blocks (so the next blocks are reserved in the
// background while others reserve theirs): no id is handed out twice.
func TestProducerIDsUniqueAcrossBrokersAndBlocks(t *testing.T) {
	t.Parallel()
	c := testutil.StartCluster(t, 3)
	per := 900 // per client: 3 clients a broker, 2700 ids, into the third block
	if raceEnabled {
		per = 400
	}
	var (
		mu   sync.Mutex
		seen = map[int64]int32{}
		wg   sync.WaitGroup
	)
	errs := make(chan error, 9)
	for node := range int32(3) {
		for range 3 {
			cl := testutil.NewClient(t, c.Brokers[node].Addr())
			wg.Add(1)
			go func() {
				defer wg.Done()
				ids, err := allocateOn(t, cl, node, per)
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				defer mu.Unlock()
				for _, id := range ids {
					if other, dup := seen[id]; dup {
						errs <- fmt.Errorf("producer id %d handed out by broker %d and broker %d", id, other, node)
						return
					}
					seen[id] = node
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if len(seen) != 9*per {
		t.Fatalf("%d distinct ids, want %d", len(seen), 9*per)
	}
}

// TestProducerIDsAndProduceGoOnWhileEtcdIsDown uses up 85 % of a broker's
// first block of producer ids, after which the broker reserves its next
// block in the background, then stops etcd: the broker still hands out a
// whole block of new ids past the end of the first one, an idempotent
// producer with one of them produces, and a produce naming an id above
// every block the broker knows of is answered (taken as Kafka takes an
// unknown producer) instead of waiting on etcd.
func TestProducerIDsAndProduceGoOnWhileEtcdIsDown(t *testing.T) {
	c := testutil.StartCluster(t, 1)
	const topic = "pid-etcd-down"
	testutil.CreateTopic(t, c.Admin(), topic, 1)
	b := c.Brokers[0]
	cl := testutil.NewClient(t, b.Addr())
	first, err := allocateOn(t, cl, 0, 850)
	if err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		limit, err := b.Node.Cluster().ProducerIDLimit(ctx)
		if err != nil {
			return err
		}
		if limit < first[0]+2000 {
			return fmt.Errorf("etcd producer id limit %d: next block not reserved yet", limit)
		}
		return nil
	})

	c.Etcd.Close()

	// 150 left in the first block, 1000 in the next: 1100 new ids need
	// the block reserved ahead.
	more, err := allocateOn(t, cl, 0, 1100)
	if err != nil {
		t.Fatalf("with etcd down: %v", err)
	}
	seen := map[int64]bool{}
	for _, id := range append(first, more...) {
		if seen[id] {
			t.Fatalf("producer id %d handed out twice", id)
		}
		seen[id] = true
	}

	p := testutil.NewClient(t, b.Addr(), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := range 20 {
		if err := p.ProduceSync(ctx, kgo.StringRecord(fmt.Sprint(i))).FirstErr(); err != nil {
			t.Fatalf("idempotent produce %d with etcd down: %v", i, err)
		}
	}

	// The broker's last read of the limit ended before this id was seen,
	// and no new read can succeed: the id is taken as a new producer at
	// sequence 0. Before, the broker asked etcd on the produce path and
	// waited up to 5 s for the answer; the request's own deadline is
	// shorter than that.
	forged := idemBatch(t, 1<<41, 0, 0, 1, "x")
	rctx, rcancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer rcancel()
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = 9, -1, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = forged
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	kr, err := cl.Broker(0).Request(rctx, req)
	if err != nil {
		t.Fatalf("produce with an unknown producer id while etcd is down: %v", err)
	}
	if code := kr.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("produce with an unknown producer id while etcd is down: %v", kerr.ErrorForCode(code))
	}
}
