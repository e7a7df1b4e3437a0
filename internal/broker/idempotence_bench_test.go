package broker_test

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"samsa/internal/testutil"
)

// BenchmarkProduceIdempotence measures what idempotence costs a producer:
// the same franz-go load (100-byte records, 4 partitions, acks=all) with
// and without idempotent batches, against one in-process broker. It
// reports records/s; compare the two with benchstat, for example:
//
//	go test -run='^$' -bench=ProduceIdempotence -benchtime=200000x -count=3 ./internal/broker
func BenchmarkProduceIdempotence(b *testing.B) {
	const (
		partitions = 4
		valueSize  = 100
	)
	br := testutil.StartBroker(b)
	adm := br.Admin()
	value := bytes.Repeat([]byte("v"), valueSize)
	run := 0
	for _, idem := range []bool{true, false} {
		b.Run(fmt.Sprintf("idempotent=%t", idem), func(b *testing.B) {
			run++
			topic := fmt.Sprintf("bench-idem-%d", run)
			testutil.CreateTopic(b, adm, topic, partitions)
			opts := []kgo.Opt{
				kgo.RequiredAcks(kgo.AllISRAcks()),
				kgo.DefaultProduceTopic(topic),
				kgo.ProducerLinger(time.Millisecond),
			}
			if !idem {
				// Five in flight, as the idempotent producer has.
				opts = append(opts, kgo.DisableIdempotentWrite(), kgo.MaxProduceRequestsInflightPerBroker(5))
			}
			cl := br.Client(opts...)
			// Warm up: metadata, producer id, connections.
			if err := cl.ProduceSync(ctxB(b), &kgo.Record{Value: value}).FirstErr(); err != nil {
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
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
				wg.Done()
			}
			ctx := ctxB(b)
			b.SetBytes(valueSize)
			b.ReportAllocs()
			b.ResetTimer()
			began := time.Now()
			for i := 0; i < b.N; i++ {
				wg.Add(1)
				cl.Produce(ctx, &kgo.Record{Value: value}, done)
			}
			wg.Wait()
			elapsed := time.Since(began)
			b.StopTimer()
			if firstErr != nil {
				b.Fatalf("produce: %v", firstErr)
			}
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "records/s")
		})
	}
}

// ctxB returns a context that ends with the benchmark or after 5 minutes.
func ctxB(b *testing.B) context.Context {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	b.Cleanup(cancel)
	return ctx
}
