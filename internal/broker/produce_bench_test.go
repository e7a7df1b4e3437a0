package broker_test

import (
	"crypto/rand"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"samsa/internal/testutil"
)

// BenchmarkProduceManyPartitions produces 1 KiB random records round
// robin over 8 partitions with acks=all and one request in flight (what
// `samsa perf produce` and a default non-idempotent franz-go producer
// send: 1 MiB batches, 8 per request), against one in-process broker:
//
//	go test -run='^$' -bench=ProduceManyPartitions -benchtime=300000x -count=5 ./internal/broker
func BenchmarkProduceManyPartitions(b *testing.B) {
	const (
		partitions = 8
		valueSize  = 1024
	)
	br := testutil.StartBroker(b)
	adm := br.Admin()
	values := make([][]byte, 4096)
	for i := range values {
		values[i] = make([]byte, valueSize)
		rand.Read(values[i])
	}
	run := 0
	b.Run("acks=all", func(b *testing.B) {
		run++
		topic := fmt.Sprintf("bench-many-%d", run)
		testutil.CreateTopic(b, adm, topic, partitions)
		cl := br.Client(
			kgo.RequiredAcks(kgo.AllISRAcks()),
			kgo.DisableIdempotentWrite(),
			kgo.DefaultProduceTopic(topic),
			kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
			kgo.ProducerBatchCompression(kgo.NoCompression()),
			kgo.MaxBufferedRecords(1<<20),
		)
		if err := cl.ProduceSync(ctxB(b), &kgo.Record{Value: values[0]}).FirstErr(); err != nil {
			b.Fatalf("warm up: %v", err)
		}
		var (
			wg       sync.WaitGroup
			mu       sync.Mutex
			firstErr error
		)
		done := func(_ *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				firstErr = err
				mu.Unlock()
			}
			wg.Done()
		}
		ctx := ctxB(b)
		b.SetBytes(valueSize)
		b.ResetTimer()
		began := time.Now()
		for i := 0; i < b.N; i++ {
			wg.Add(1)
			cl.Produce(ctx, &kgo.Record{Value: values[i%len(values)]}, done)
		}
		wg.Wait()
		elapsed := time.Since(began)
		b.StopTimer()
		if firstErr != nil {
			b.Fatalf("produce: %v", firstErr)
		}
		b.ReportMetric(float64(b.N)/elapsed.Seconds(), "records/s")
		cl.Close()
	})
}
