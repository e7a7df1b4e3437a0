package broker_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"samsa/internal/testutil"
)

// BenchmarkShareGroupConsume measures how fast four members of a group
// consume and acknowledge b.N records of 100 bytes: a share group
// (KIP-932, every record accepted) with all four on one partition,
// against a classic consumer group with one partition each. The records
// are produced before the timer starts; the timer stops when the last
// record has been received (and, for the share group, accepted).
//
// The producer makes franz-go's batches (up to 1 MiB, thousands of
// records) or, with batch=16KiB, the Java client's (batch.size 16384, 150
// records of 100 bytes). A share-partition acquires whole batches, so the
// batch size decides how many of the four members can hold records within
// group.share.partition.max.record.locks at once.
func BenchmarkShareGroupConsume(b *testing.B) {
	for _, run := range []struct {
		mode, batch string
		piggyback   bool
	}{
		{"share/1partition", "", false}, {"classic/4partitions", "", false},
		{"share/1partition", "16KiB", false}, {"classic/4partitions", "16KiB", false},
		{"share/1partition", "", true}, {"share/1partition", "16KiB", true},
	} {
		mode := run.mode
		name := fmt.Sprintf("%s/consumers=4", mode)
		if run.piggyback {
			// The acknowledgements ride on each member's next
			// ShareFetch instead of a ShareAcknowledge after every
			// poll; the timer stops once every member has flushed
			// the last of them.
			name += "/acks=piggyback"
		}
		popts := []kgo.Opt{kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.ProducerLinger(5 * time.Millisecond)}
		if run.batch != "" {
			name += "/batch=" + run.batch
			popts = append(popts, kgo.ProducerBatchMaxBytes(16384))
		}
		b.Run(name, func(b *testing.B) {
			cfg := append(shareBrokerConfig, "group.initial.rebalance.delay.ms=0")
			if v := os.Getenv("SAMSA_BENCH_SHARE_LOCKS"); v != "" {
				cfg = append(cfg, "group.share.partition.max.record.locks="+v, "group.share.max.partition.max.record.locks="+v)
			}
			br := testutil.StartBroker(b, cfg...)
			parts := int32(1)
			if mode != "share/1partition" {
				parts = 4
			}
			topic := "bench-share"
			testutil.CreateTopic(b, br.Admin(), topic, parts)
			cl := br.Client(popts...)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			val := make([]byte, 100)
			var wg sync.WaitGroup
			for i := 0; i < b.N; i++ {
				wg.Add(1)
				cl.Produce(ctx, &kgo.Record{Topic: topic, Value: val}, func(_ *kgo.Record, err error) {
					if err != nil {
						b.Error(err)
					}
					wg.Done()
				})
			}
			wg.Wait()
			var got atomic.Int64
			done := make(chan struct{})
			var once sync.Once
			b.SetBytes(100)
			b.ResetTimer()
			cctx, ccancel := context.WithCancel(ctx)
			var cw sync.WaitGroup
			for i := 0; i < 4; i++ {
				cw.Add(1)
				go func() {
					defer cw.Done()
					opts := []kgo.Opt{kgo.SeedBrokers(br.Addr()), kgo.ConsumeTopics(topic), kgo.FetchMaxWait(100 * time.Millisecond)}
					if mode == "share/1partition" {
						opts = append(opts, kgo.ShareGroup("bench-sg"))
					} else {
						opts = append(opts, kgo.ConsumerGroup("bench-cg"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
					}
					c, err := kgo.NewClient(opts...)
					if err != nil {
						b.Error(err)
						return
					}
					defer c.Close()
					for cctx.Err() == nil {
						fs := c.PollRecords(cctx, 1000)
						n := 0
						fs.EachRecord(func(r *kgo.Record) {
							if mode == "share/1partition" {
								r.Ack(kgo.AckAccept)
							}
							n++
						})
						if mode == "share/1partition" && !run.piggyback {
							c.FlushAcks(cctx)
						}
						if got.Add(int64(n)) >= int64(b.N) {
							once.Do(func() { close(done) })
						}
					}
					if run.piggyback {
						if err := c.FlushAcks(ctx); err != nil {
							b.Error(err)
						}
					}
				}()
			}
			select {
			case <-done:
			case <-ctx.Done():
				b.Fatalf("received %d of %d records", got.Load(), b.N)
			}
			if run.piggyback {
				ccancel()
				cw.Wait()
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
			ccancel()
			cw.Wait()
		})
	}
}
