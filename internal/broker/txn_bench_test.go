package broker_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"samsa/internal/testutil"
)

// BenchmarkTransactionalProduce compares a transactional producer that
// commits every 100 ms with the idempotent producer on the same load
// (1 KiB records, 8 partitions, acks=all, one in-process broker), one
// after the other in the same process. -count repeats each mode before the
// other starts, so to alternate them, and have load on the machine fall on
// both, run the test binary in a loop instead (below). Each client
// first produces (and the transactional one commits) one record outside
// the timer: producer id, connections, and franz-go's opting in to
// transaction version 2, which it does from its second transaction. The
// transactional run also reports the commit latency, both measured after
// the records are flushed: commit-ms is EndTransaction (EndTxn answered
// once the coordinator's PrepareCommit is durable), visible-ms is from the
// start of EndTransaction until a read_committed ListOffsets shows every
// partition's last stable offset at its end, i.e. the markers are durable
// everywhere.
//
//	go test -c -o /tmp/broker.test ./internal/broker && cd internal/broker &&
//	  for i in 1 2 3 4; do /tmp/broker.test -test.run='^$' -test.bench=TransactionalProduce -test.benchtime=10s; done
func BenchmarkTransactionalProduce(b *testing.B) {
	const (
		partitions = 8
		valueSize  = 1024
		interval   = 100 * time.Millisecond
	)
	br := testutil.StartBroker(b)
	adm := br.Admin()
	value := bytes.Repeat([]byte("v"), valueSize)
	run := 0
	for _, mode := range []string{"idempotent", "transactional"} {
		b.Run(mode, func(b *testing.B) {
			run++
			topic := fmt.Sprintf("bench-txn-%d", run)
			testutil.CreateTopic(b, adm, topic, partitions)
			opts := []kgo.Opt{
				kgo.DefaultProduceTopic(topic),
				kgo.ProducerLinger(time.Millisecond),
				kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
			}
			txnl := mode == "transactional"
			if txnl {
				opts = append(opts, kgo.TransactionalID(fmt.Sprintf("bench-%d", run)))
			}
			cl := br.Client(opts...)
			ctx := ctxB(b)
			var (
				mu       sync.Mutex
				firstErr error
				commits  []time.Duration
				visible  []time.Duration
			)
			done := func(_ *kgo.Record, err error) {
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
			}
			begin := func() {
				if txnl {
					if err := cl.BeginTransaction(); err != nil {
						b.Fatal(err)
					}
				}
			}
			commit := func() {
				if err := cl.Flush(ctx); err != nil {
					b.Fatal(err)
				}
				if !txnl {
					return
				}
				start := time.Now()
				if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
					b.Fatalf("commit: %v", err)
				}
				commits = append(commits, time.Since(start))
				waitStable(ctx, b, adm, topic)
				visible = append(visible, time.Since(start))
			}
			begin()
			cl.Produce(ctx, &kgo.Record{Value: value}, done)
			commit()
			commits, visible = commits[:0], visible[:0]
			b.SetBytes(valueSize)
			b.ResetTimer()
			began := time.Now()
			begin()
			last := time.Now()
			for i := 0; i < b.N; i++ {
				cl.Produce(ctx, &kgo.Record{Value: value}, done)
				if time.Since(last) >= interval {
					commit()
					begin()
					last = time.Now()
				}
			}
			commit()
			elapsed := time.Since(began)
			b.StopTimer()
			if firstErr != nil {
				b.Fatalf("produce: %v", firstErr)
			}
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "records/s")
			if txnl && len(commits) > 0 {
				b.ReportMetric(percentileMs(commits, 0.5), "commit-p50-ms")
				b.ReportMetric(percentileMs(commits, 0.99), "commit-p99-ms")
				b.ReportMetric(percentileMs(visible, 0.5), "visible-p50-ms")
				b.ReportMetric(percentileMs(visible, 0.99), "visible-p99-ms")
			}
		})
	}
}

// waitStable waits until topic's last stable offsets equal its high
// watermarks on every partition.
func waitStable(ctx context.Context, b *testing.B, adm *kadm.Client, topic string) {
	b.Helper()
	for {
		hw, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			b.Fatal(err)
		}
		lso, err := adm.ListCommittedOffsets(ctx, topic)
		if err != nil {
			b.Fatal(err)
		}
		stable := true
		hw.Each(func(o kadm.ListedOffset) {
			if l, ok := lso.Lookup(topic, o.Partition); !ok || l.Offset != o.Offset {
				stable = false
			}
		})
		if stable {
			return
		}
		time.Sleep(200 * time.Microsecond)
	}
}

// percentileMs returns the q-quantile of ds in milliseconds.
func percentileMs(ds []time.Duration, q float64) float64 {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := min(int(q*float64(len(s))), len(s)-1)
	return float64(s[i].Microseconds()) / 1000
}

// BenchmarkReadCommittedConsume compares consuming at read_committed with
// read_uncommitted over the same log: 1 KiB records written in
// transactions of 100 records, every tenth aborted, 8 partitions. Each
// iteration reads the whole topic from the start with a new client.
//
//	go test -run='^$' -bench=ReadCommittedConsume -count=3 ./internal/broker
func BenchmarkReadCommittedConsume(b *testing.B) {
	const (
		partitions = 8
		valueSize  = 1024
		txns       = 200
		perTxn     = 100
	)
	br := testutil.StartBroker(b)
	adm := br.Admin()
	topic := "bench-rc"
	testutil.CreateTopic(b, adm, topic, partitions)
	ctx := ctxB(b)
	cl := br.Client(kgo.DefaultProduceTopic(topic), kgo.TransactionalID("bench-rc"),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	value := bytes.Repeat([]byte("v"), valueSize)
	committed := 0
	for i := range txns {
		if err := cl.BeginTransaction(); err != nil {
			b.Fatal(err)
		}
		recs := make([]*kgo.Record, perTxn)
		for j := range recs {
			recs[j] = &kgo.Record{Value: value}
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			b.Fatal(err)
		}
		commit := i%10 != 9
		if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			b.Fatal(err)
		}
		if commit {
			committed += perTxn
		}
	}
	waitStable(ctx, b, adm, topic)
	for _, level := range []string{"read_uncommitted", "read_committed"} {
		b.Run(level, func(b *testing.B) {
			want := txns * perTxn
			iso := kgo.ReadUncommitted()
			if level == "read_committed" {
				want, iso = committed, kgo.ReadCommitted()
			}
			b.SetBytes(int64(want) * valueSize)
			b.ResetTimer()
			began := time.Now()
			for i := 0; i < b.N; i++ {
				c := br.Client(kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(iso),
					kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
				n := 0
				for n < want {
					fs := c.PollFetches(ctx)
					if err := fs.Err(); err != nil {
						b.Fatal(err)
					}
					n += fs.NumRecords()
				}
				c.Close()
				if n != want {
					b.Fatalf("%s: %d records, want %d", level, n, want)
				}
			}
			elapsed := time.Since(began)
			b.StopTimer()
			b.ReportMetric(float64(b.N*want)/elapsed.Seconds(), "records/s")
		})
	}
}
