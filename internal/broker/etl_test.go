package broker_test

import (
	"context"
	"fmt"
	"math/bits"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"samsa/internal/testutil"
)

// etlRecords is how many records TestConsumerGroupETL processes: 500,000
// (the figure; about 5 s on a quiet 2-core machine), 50,000
// under -race, where the whole suite runs slower. SAMSA_ETL_RECORDS
// overrides it: make etl runs it alone at 500,000 under -race (about 8 s).
func etlRecords(t *testing.T) int {
	if s := os.Getenv("SAMSA_ETL_RECORDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			t.Fatalf("SAMSA_ETL_RECORDS=%q: want a positive count", s)
		}
		return n
	}
	if raceEnabled {
		return 50_000
	}
	return 500_000
}

// etlCounter counts, per partition, which offsets were processed: a
// bitmap per partition, so that half a million records cost a few tens of
// kilobytes and one lock per polled batch. It is safe for concurrent use.
type etlCounter struct {
	mu       sync.Mutex
	seen     map[int32][]uint64 // mu guards seen and dups
	dups     int
	distinct atomic.Int64
}

func (c *etlCounter) add(rs []*kgo.Record) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, r := range rs {
		bm := c.seen[r.Partition]
		w := int(r.Offset / 64)
		if w >= len(bm) {
			bm = append(bm, make([]uint64, w-len(bm)+1+len(bm))...)
			c.seen[r.Partition] = bm
		}
		bit := uint64(1) << (r.Offset % 64)
		if bm[w]&bit != 0 {
			c.dups++
			continue
		}
		bm[w] |= bit
		n++
	}
	c.distinct.Add(int64(n))
}

// missing returns how many of the first ends[p] offsets of each partition
// were not processed.
func (c *etlCounter) missing(ends map[int32]int64) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var miss int64
	for p, end := range ends {
		bm := c.seen[p]
		var got int64
		for w := int64(0); w*64 < end; w++ {
			var word uint64
			if int(w) < len(bm) {
				word = bm[w]
			}
			if rest := end - w*64; rest < 64 {
				word &= (uint64(1) << rest) - 1
			}
			got += int64(bits.OnesCount64(word))
		}
		miss += end - got
	}
	return miss
}

// etlMember is one KIP-848 consumer of the ETL test: big fetches, the
// whole poll processed (counted) and committed, then a rebalance allowed.
type etlMember struct {
	name   string
	cl     *kgo.Client
	proxy  *testutil.Proxy
	cancel context.CancelFunc
	done   chan struct{}
}

func startETLMember(t *testing.T, b *testutil.Broker, l *groupLedger, c *etlCounter, name, group, topic string, viaProxy bool) *etlMember {
	t.Helper()
	m := &etlMember{name: name, done: make(chan struct{})}
	opts := []kgo.Opt{
		kgo.ClientID(name),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.ServerSideBalancer(),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.RebalanceTimeout(10 * time.Second),
		kgo.FetchMaxWait(100 * time.Millisecond),
		kgo.FetchMaxBytes(32 << 20),
		kgo.FetchMaxPartitionBytes(8 << 20),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.OnPartitionsAssigned(l.onAssigned(name, topic)),
		kgo.OnPartitionsRevoked(l.onRevoked(name, topic)),
		kgo.OnPartitionsLost(l.onRevoked(name, topic)),
	}
	if viaProxy {
		m.proxy = testutil.NewProxy(t, b.Addr())
		opts = append(opts, kgo.Dialer(m.proxy.Dialer()), kgo.RetryTimeout(2*time.Second), kgo.RequestRetries(2))
	}
	m.cl = b.Client(opts...)
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	go func() {
		defer close(m.done)
		for ctx.Err() == nil {
			pctx, pcancel := context.WithTimeout(ctx, 200*time.Millisecond)
			fs := m.cl.PollRecords(pctx, 0)
			pcancel()
			if fs.IsClientClosed() {
				return
			}
			if rs := fs.Records(); len(rs) > 0 {
				c.add(rs)
				cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
				_ = m.cl.CommitRecords(cctx, rs...)
				ccancel()
			}
			m.cl.AllowRebalance()
		}
	}()
	t.Cleanup(m.stop)
	return m
}

func (m *etlMember) stop() {
	m.cancel()
	<-m.done
	m.cl.AllowRebalance()
}

// leave stops the member and closes its client, which leaves the group.
func (m *etlMember) leave(l *groupLedger) {
	m.stop()
	m.cl.Close()
	l.markDead(m.name)
}

// cut takes the member off the broker without a leave: only its session
// timeout removes it. With closeClient the client is closed too (a
// process that died); without, it goes on failing to reach the broker
// until the test ends (a member fenced while alive).
func (m *etlMember) cut(l *groupLedger, closeClient bool) {
	l.markDead(m.name)
	m.proxy.Close()
	if closeClient {
		m.stop()
	}
}

// TestConsumerGroupETL: franz-go KIP-848 consumers process 500,000
// records (etlRecords) while members join, one leaves, one is closed
// without leaving and one is fenced by its session timeout. Every record
// is processed at least once and no partition is held by two live members
// at any moment (the members' assignment callbacks). Records are produced
// in large batches in six waves; each wave's churn happens while its
// records are consumed.
func TestConsumerGroupETL(t *testing.T) {
	t.Parallel()
	const partitions = 8
	total := etlRecords(t)
	b := testutil.StartBroker(t, consumerGroupBrokerConfig...)
	topic, group := "etl", "etl"
	testutil.CreateTopic(t, b.Admin(), topic, partitions)
	l := newGroupLedger(t)
	c := &etlCounter{seen: map[int32][]uint64{}}
	start := time.Now()

	prod := b.Client(kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.DefaultProduceTopic(topic),
		kgo.MaxBufferedRecords(20_000), kgo.ProducerBatchMaxBytes(1<<20))
	ends := map[int32]int64{}
	produced := 0
	value := []byte("etl-record")
	produce := func(n int) {
		t.Helper()
		ctx := ctxT(t, 60*time.Second)
		for n > 0 {
			k := min(n, 10_000)
			rs := make([]*kgo.Record, k)
			for i := range rs {
				rs[i] = &kgo.Record{Value: value}
			}
			if err := prod.ProduceSync(ctx, rs...).FirstErr(); err != nil {
				t.Fatalf("produce: %v", err)
			}
			for _, r := range rs {
				ends[r.Partition] = max(ends[r.Partition], r.Offset+1)
			}
			produced += k
			n -= k
		}
	}
	member := func(name string, proxy bool) *etlMember {
		return startETLMember(t, b, l, c, name, group, topic, proxy)
	}
	halfway := func() {
		t.Helper()
		want := int64(produced - total/12)
		testutil.Eventually(t, 60*time.Second, func() error {
			if d := c.distinct.Load(); d < want {
				return fmt.Errorf("%d of %d records processed", d, produced)
			}
			return nil
		})
	}

	e0, e1, e2 := member("e0", false), member("e1", true), member("e2", true)
	events := []func(){
		func() { member("e3", false); member("e4", false) },
		func() { e0.leave(l) },
		func() { e1.cut(l, true) },
		func() { member("e5", false) },
		func() { e2.cut(l, false) },
		func() { member("e6", false) },
	}
	for i, ev := range events {
		n := total / len(events)
		if i == len(events)-1 {
			n = total - produced
		}
		produce(n)
		halfway()
		ev()
	}
	testutil.Eventually(t, 120*time.Second, func() error {
		if miss := c.missing(ends); miss > 0 {
			return fmt.Errorf("%d of %d records not processed", miss, produced)
		}
		return nil
	})
	l.check() // ownership overlaps
	c.mu.Lock()
	dups := c.dups
	c.mu.Unlock()
	t.Logf("%d records, %d processed twice, %v", produced, dups, time.Since(start).Round(time.Millisecond))
}
