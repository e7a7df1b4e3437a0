package broker_test

import (
	"bytes"
	"context"
	"net"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"samsa/internal/testutil"
)

// BenchmarkQuotaHoldsProducer (TESTPLAN X-12): a producer offered far
// above its producer_byte_rate (1 MiB/s, client id "heavy") for
// SAMSA_BENCH_QUOTA_SECONDS (60 by default) is held near its quota, while
// another tenant producing 1 KiB every 20 ms keeps its latency. Reported:
// heavy's acknowledged rate over the whole run and after the first
// quota window (Kafka's rate lets a new client burst through its first
// window), as a ratio of the quota, and the light tenant's p99 produce
// latency before and during the load. Run:
//
//	go test -run '^$' -bench BenchmarkQuotaHoldsProducer -benchtime 1x ./internal/broker
func BenchmarkQuotaHoldsProducer(b *testing.B) {
	seconds := 60
	if s, err := strconv.Atoi(os.Getenv("SAMSA_BENCH_QUOTA_SECONDS")); err == nil && s > 0 {
		seconds = s
	}
	run := time.Duration(seconds) * time.Second
	const quota = 1 << 20
	br := testutil.StartBroker(b, "num.partitions=1")
	adm := br.Admin()
	testutil.CreateTopic(b, adm, "heavy", 1)
	testutil.CreateTopic(b, adm, "light", 1)
	ctx := context.Background()
	name := "heavy"
	resp, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{
		Entity: []kadm.ClientQuotaEntityComponent{{Type: "client-id", Name: &name}},
		Ops:    []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: quota}},
	}})
	if err != nil || resp[0].Err != nil {
		b.Fatalf("set quota: %v %v", err, resp)
	}

	light := br.Client(kgo.ClientID("light"), kgo.DefaultProduceTopic("light"), kgo.ProducerLinger(0))
	lightLatencies := func(d time.Duration) []time.Duration {
		var out []time.Duration
		for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
			start := time.Now()
			if err := light.ProduceSync(ctx, &kgo.Record{Value: bytes.Repeat([]byte("l"), 1<<10)}).FirstErr(); err != nil {
				b.Fatal(err)
			}
			out = append(out, time.Since(start))
		}
		slices.Sort(out)
		return out
	}
	p99 := func(l []time.Duration) float64 { return float64(l[len(l)*99/100].Microseconds()) / 1000 }

	b.ResetTimer()
	for range b.N {
		base := lightLatencies(10 * time.Second)

		heavy := br.Client(kgo.ClientID("heavy"), kgo.DefaultProduceTopic("heavy"), kgo.MaxBufferedRecords(256),
			kgo.ProducerLinger(0), kgo.ProducerBatchCompression(kgo.NoCompression()))
		value := bytes.Repeat([]byte("h"), 1<<10)
		var mu sync.Mutex
		var acks []time.Time // ack times of heavy's records
		var failed atomic.Int64
		began := time.Now()
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				heavy.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
					if err != nil {
						failed.Add(1)
						return
					}
					mu.Lock()
					acks = append(acks, time.Now())
					mu.Unlock()
				})
			}
		}()
		loaded := lightLatencies(run)
		close(stop)
		wg.Wait()
		heavy.Close()

		mu.Lock()
		total, steady := 0, 0
		window := began.Add(11 * time.Second) // quota.window.num x quota.window.size.seconds
		for _, at := range acks {
			if at.Sub(began) <= run {
				total++
				if at.After(window) {
					steady++
				}
			}
		}
		mu.Unlock()
		b.ReportMetric(float64(total<<10)/run.Seconds()/quota, "heavy-rate/quota")
		b.ReportMetric(float64(steady<<10)/(run-11*time.Second).Seconds()/quota, "heavy-steady-rate/quota")
		b.ReportMetric(p99(base), "light-p99-base-ms")
		b.ReportMetric(p99(loaded), "light-p99-loaded-ms")
		b.ReportMetric(float64(failed.Load()), "heavy-failed")
	}
}

// BenchmarkConnectionFloodSparesOthers (TESTPLAN B-20): with
// max.connections.per.ip=20, 16 goroutines from 127.0.0.2 open
// connections as fast as they can, and hold each for a while sending one
// byte of a frame header (slowloris), for 20 s, while a client from
// 127.0.0.1 produces 1 KiB with acks=all every 20 ms. Reported: the flood's
// accepted and refused connections, and the other client's produce p99
// before and during the flood.
func BenchmarkConnectionFloodSparesOthers(b *testing.B) {
	br := testutil.StartBroker(b, "num.partitions=1", "max.connections.per.ip=8")
	testutil.CreateTopic(b, br.Admin(), "calm", 1)
	ctx := context.Background()
	calm := br.Client(kgo.ClientID("calm"), kgo.DefaultProduceTopic("calm"), kgo.ProducerLinger(0))
	latencies := func(d time.Duration) []time.Duration {
		var out []time.Duration
		for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
			start := time.Now()
			if err := calm.ProduceSync(ctx, &kgo.Record{Value: bytes.Repeat([]byte("c"), 1<<10)}).FirstErr(); err != nil {
				b.Fatal(err)
			}
			out = append(out, time.Since(start))
		}
		slices.Sort(out)
		return out
	}
	p99 := func(l []time.Duration) float64 { return float64(l[len(l)*99/100].Microseconds()) / 1000 }
	addr := br.Addr()
	b.ResetTimer()
	for range b.N {
		base := latencies(5 * time.Second)
		var opened, refused atomic.Int64
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}, Timeout: time.Second}
				for {
					select {
					case <-stop:
						return
					default:
					}
					c, err := d.Dial("tcp", addr)
					if err != nil {
						refused.Add(1)
						continue
					}
					opened.Add(1)
					c.Write([]byte{0})
					c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
					var one [1]byte
					if _, err := c.Read(one[:]); err != nil && !isTimeoutErr(err) {
						refused.Add(1) // closed by the broker: over the per-ip limit
					}
					c.Close()
				}
			}()
		}
		loaded := latencies(20 * time.Second)
		close(stop)
		wg.Wait()
		b.ReportMetric(float64(opened.Load()), "flood-dials")
		b.ReportMetric(float64(refused.Load()), "flood-refused")
		b.ReportMetric(p99(base), "calm-p99-base-ms")
		b.ReportMetric(p99(loaded), "calm-p99-flood-ms")
	}
}

func isTimeoutErr(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}
