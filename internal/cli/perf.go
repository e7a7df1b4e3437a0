package cli

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

func newPerfCmd(g *globals, e env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "perf",
		Short: "Measure produce, consume and end-to-end performance",
		Long: `Load tests against a running cluster (samsa or any Kafka-compatible
broker). Each subcommand prints a human-readable summary, or with --json
one JSON object that scripts can compare across runs. While one runs, a
line on stderr every second gives the records/s and MB/s of the last
second, and for producers the p50/p99 acknowledgement latency, when
stderr is a terminal or --progress is given (--progress=false: never).`,
		Example: `  samsa perf produce --topic perf --records 1000000 --record-size 1024
  samsa perf consume --topic perf --records 1000000
  samsa perf e2e --rate 10000 --record-size 1024 --duration 30s`,
		Args: noArgs,
		RunE: helpRun,
	}
	cmd.AddCommand(newPerfProduceCmd(g, e), newPerfConsumeCmd(g, e), newPerfE2ECmd(g, e))
	return cmd
}

// latencies summarises durations. The zero value is empty.
type latencies struct {
	P50  float64 `json:"p50"`
	P95  float64 `json:"p95"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p999"`
	Max  float64 `json:"max"`
	Mean float64 `json:"mean"`
}

// summarize computes percentiles in milliseconds of ns, which it sorts.
// It uses the nearest-rank method.
func summarize(ns []int64) latencies {
	if len(ns) == 0 {
		return latencies{}
	}
	slices.Sort(ns)
	rank := func(q float64) float64 {
		i := int(q*float64(len(ns))+0.999999) - 1
		i = max(0, min(i, len(ns)-1))
		return ms(ns[i])
	}
	var sum float64
	for _, v := range ns {
		sum += float64(v)
	}
	return latencies{
		P50:  rank(0.50),
		P95:  rank(0.95),
		P99:  rank(0.99),
		P999: rank(0.999),
		Max:  ms(ns[len(ns)-1]),
		Mean: sum / float64(len(ns)) / 1e6,
	}
}

func ms(ns int64) float64 { return float64(ns) / 1e6 }

// perfResult is the outcome of one perf run; fields unused by a mode are
// zero and left out of the JSON.
type perfResult struct {
	Mode          string     `json:"mode"`
	Topic         string     `json:"topic"`
	Records       int64      `json:"records"`
	Errors        int64      `json:"errors"`
	Bytes         int64      `json:"bytes"`
	Seconds       float64    `json:"seconds"`
	RecordsPerSec float64    `json:"records_per_sec"`
	MBPerSec      float64    `json:"mb_per_sec"`
	Latency       *latencies `json:"latency_ms,omitempty"`
	E2E           *latencies `json:"e2e_latency_ms,omitempty"`
	Consumed      int64      `json:"consumed,omitempty"`
	// Visibility is set by perf produce --visibility.
	Visibility *visibilityResult `json:"visibility,omitempty"`
}

// rates fills the derived throughput fields. MB is 10^6 bytes.
func (r *perfResult) rates(elapsed time.Duration) {
	r.Seconds = elapsed.Seconds()
	if r.Seconds > 0 {
		r.RecordsPerSec = float64(r.Records) / r.Seconds
		r.MBPerSec = float64(r.Bytes) / 1e6 / r.Seconds
	}
}

func (r *perfResult) write(w io.Writer, asJSON bool) error {
	if asJSON {
		b, err := json.Marshal(r)
		if err != nil {
			return fmt.Errorf("encode result: %w", err)
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	fmt.Fprintf(w, "%s %s: %d records, %d bytes in %.3fs: %.1f records/s, %.2f MB/s, %d errors\n",
		r.Mode, r.Topic, r.Records, r.Bytes, r.Seconds, r.RecordsPerSec, r.MBPerSec, r.Errors)
	if r.Latency != nil {
		fmt.Fprintf(w, "produce latency ms: p50 %.2f, p95 %.2f, p99 %.2f, p99.9 %.2f, max %.2f, mean %.2f\n",
			r.Latency.P50, r.Latency.P95, r.Latency.P99, r.Latency.P999, r.Latency.Max, r.Latency.Mean)
	}
	if v := r.Visibility; v != nil {
		fmt.Fprintf(w, "visibility lag ms: p50 %.2f, p95 %.2f, p99 %.2f, p99.9 %.2f, max %.2f, mean %.2f; drain %.2f ms, %d invisible at the last ack\n",
			v.Lag.P50, v.Lag.P95, v.Lag.P99, v.Lag.P999, v.Lag.Max, v.Lag.Mean, v.DrainMs, v.InvisibleAtLastAck)
	}
	if r.E2E != nil {
		fmt.Fprintf(w, "end-to-end latency ms: p50 %.2f, p95 %.2f, p99 %.2f, p99.9 %.2f, max %.2f, mean %.2f (%d consumed)\n",
			r.E2E.P50, r.E2E.P95, r.E2E.P99, r.E2E.P999, r.E2E.Max, r.E2E.Mean, r.Consumed)
	}
	return nil
}

// ensureTopic creates topic with partitions unless it exists.
func ensureTopic(ctx context.Context, g *globals, topic string, partitions int32, rf int16) error {
	adm, err := newAdmin(g)
	if err != nil {
		return err
	}
	defer adm.Close()
	td, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return fmt.Errorf("metadata for %s: %w", topic, err)
	}
	if t, ok := td[topic]; ok && t.Err == nil {
		return nil
	}
	resp, err := adm.CreateTopic(ctx, partitions, rf, nil, topic)
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("create topic %s: %w", topic, withMessage(err, resp.ErrMessage))
	}
	return waitTopic(ctx, adm, topic)
}

// waitTopic polls metadata until every partition of topic has a leader, so
// the first produce does not race topic creation.
func waitTopic(ctx context.Context, adm *kadm.Client, topic string) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		td, err := adm.ListTopics(ctx, topic)
		if err == nil {
			if t, ok := td[topic]; ok && t.Err == nil && len(t.Partitions) > 0 {
				ready := true
				for _, p := range t.Partitions {
					ready = ready && p.Leader >= 0 && p.Err == nil
				}
				if ready {
					return nil
				}
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("topic %s has no leader for every partition after 30s", topic)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// perfProducer holds the shared produce flags of perf produce and e2e.
type perfProducer struct {
	producerFlags
	topic      string
	size       int
	partitions int32
	rf         int16
	asJSON     bool
	prog       progressFlag
}

func (p *perfProducer) register(cmd *cobra.Command) {
	p.producerFlags.register(cmd, "acknowledgement required: all, 1 or 0")
	cmd.Flags().StringVarP(&p.topic, "topic", "t", "samsa-perf", "topic to use")
	cmd.Flags().IntVar(&p.size, "record-size", 1024, "value size in bytes")
	cmd.Flags().Int32Var(&p.partitions, "partitions", 1, "partitions when the topic is created")
	cmd.Flags().Int16Var(&p.rf, "replication-factor", -1, "replication factor when the topic is created (-1: broker default)")
	cmd.Flags().DurationVar(&p.linger, "linger", 0, "producer linger before sending a batch (0: send at once)")
	p.withLinger = true
	cmd.Flags().Int32Var(&p.batchMax, "batch-max-bytes", 0, "maximum bytes per batch (0: client default, 1 MB)")
	cmd.Flags().BoolVar(&p.asJSON, "json", false, "print the result as one JSON object")
	p.prog.register(cmd)
}

func newPerfProduceCmd(g *globals, e env) *cobra.Command {
	var (
		p          perfProducer
		records    int64
		visibility bool
	)
	cmd := &cobra.Command{
		Use:   "produce",
		Short: "Produce records as fast as possible and report throughput and latency",
		Long: `Produce --records values of --record-size random bytes to --topic (created
with --partitions if it is missing) as fast as the client allows, then
print records/s, MB/s (10^6 bytes) and the p50/p95/p99/p99.9/max latency
of each record, measured from the produce call to its acknowledgement.

With --visibility, a second client reads the topic's high watermarks
(ListOffsets) every 2 ms during the run and after it, and the result adds
how long each acknowledged record stayed invisible to consumers: from its
acknowledgement to the first read that showed it below the high
watermark, and the time from the last acknowledgement until all were
visible.`,
		Example: `  samsa perf produce --topic perf --records 1000000 --record-size 1024 --partitions 6
  samsa perf produce --topic perf --records 200000 --acks 1 --linger 5ms --compression lz4 --json
  samsa perf produce --topic perf --records 300000 --acks 1 --partitions 8 --visibility`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if records <= 0 || p.size < 0 {
				return usagef("--records must be positive and --record-size not negative")
			}
			opts, err := p.opts()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if err := ensureTopic(ctx, g, p.topic, p.partitions, p.rf); err != nil {
				return err
			}
			cl, err := newClient(g, append(opts, kgo.DefaultProduceTopic(p.topic))...)
			if err != nil {
				return err
			}
			defer cl.Close()
			var vis *visibilityRun
			if visibility {
				if vis, err = startVisibility(ctx, g, p.topic); err != nil {
					return err
				}
			}
			prog := startProgress(p.prog.enabled(cmd, e.stderr, nil), e.stderr, "produce "+p.topic, true)
			res, err := perfProduce(ctx, cl, p.topic, records, p.size, prog, vis.tracker())
			if vr, verr := vis.finish(); err == nil && verr != nil {
				err = verr
			} else if res != nil {
				res.Visibility = vr
			}
			if err != nil {
				return err
			}
			if err := res.write(e.stdout, p.asJSON); err != nil {
				return err
			}
			if res.Errors > 0 {
				return fmt.Errorf("%d of %d records failed", res.Errors, records)
			}
			return nil
		},
	}
	p.register(cmd)
	cmd.Flags().Int64VarP(&records, "records", "n", 100000, "number of records")
	cmd.Flags().BoolVar(&visibility, "visibility", false, "also measure how long acknowledged records stay below the high watermark")
	return cmd
}

// latencyLog collects per-record latencies from promises. mu guards ns.
type latencyLog struct {
	mu     sync.Mutex
	ns     []int64
	errs   atomic.Int64
	errOne atomic.Pointer[error]
}

func (l *latencyLog) add(d time.Duration) {
	l.mu.Lock()
	l.ns = append(l.ns, int64(d))
	l.mu.Unlock()
}

func (l *latencyLog) fail(err error) {
	l.errs.Add(1)
	l.errOne.CompareAndSwap(nil, &err)
}

// perfProduce produces n records of size bytes and waits for all of them,
// counting them in prog (which may be nil), which it closes, and telling vis
// (which may be nil) of each acknowledgement.
func perfProduce(ctx context.Context, cl *kgo.Client, topic string, n int64, size int, prog *progress, vis *visibility) (*perfResult, error) {
	defer prog.close()
	value := make([]byte, size)
	if _, err := rand.Read(value); err != nil {
		return nil, fmt.Errorf("random payload: %w", err)
	}
	lat := &latencyLog{ns: make([]int64, 0, n)}
	// Each record carries its produce time in Timestamp, which the client
	// keeps at full precision in memory; one shared promise reads it back.
	promise := func(r *kgo.Record, err error) {
		if err != nil {
			lat.fail(err)
			return
		}
		d := time.Since(r.Timestamp)
		lat.add(d)
		prog.ack(int64(size), d)
		if vis != nil {
			vis.acked(r.Partition, r.Offset, time.Now())
		}
	}
	start := time.Now()
	for i := int64(0); i < n && ctx.Err() == nil; i++ {
		cl.Produce(ctx, &kgo.Record{Topic: topic, Value: value, Timestamp: time.Now()}, promise)
	}
	if err := cl.Flush(ctx); err != nil {
		return nil, fmt.Errorf("flush: %w", err)
	}
	elapsed := time.Since(start)
	if vis != nil {
		vis.end()
	}
	lat.mu.Lock()
	defer lat.mu.Unlock()
	res := &perfResult{Mode: "produce", Topic: topic, Records: int64(len(lat.ns)), Errors: lat.errs.Load()}
	res.Bytes = res.Records * int64(size)
	res.rates(elapsed)
	l := summarize(lat.ns)
	res.Latency = &l
	if p := lat.errOne.Load(); p != nil && len(lat.ns) == 0 {
		return res, fmt.Errorf("every record failed: %w", *p)
	}
	return res, nil
}

func newPerfConsumeCmd(g *globals, e env) *cobra.Command {
	var (
		topic   string
		records int64
		timeout time.Duration
		asJSON  bool
		prog    progressFlag
	)
	cmd := &cobra.Command{
		Use:   "consume",
		Short: "Consume records from the beginning and report throughput",
		Long: `Consume --records records of --topic from the beginning of every
partition (no consumer group) and print records/s and MB/s (10^6 bytes of
keys and values). Fails if --timeout passes without a record before
--records arrived.`,
		Example: `  samsa perf consume --topic perf --records 1000000
  samsa perf consume --topic perf --records 100000 --json`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if records <= 0 {
				return usagef("--records must be positive")
			}
			ctx := cmd.Context()
			parts, err := topicPartitions(ctx, g, topic, -1)
			if err != nil {
				return err
			}
			offs := make(map[int32]kgo.Offset, len(parts))
			for _, p := range parts {
				offs[p] = kgo.NewOffset().AtStart()
			}
			cl, err := newClient(g,
				kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offs}),
				kgo.FetchMaxWait(500*time.Millisecond))
			if err != nil {
				return err
			}
			defer cl.Close()
			p := startProgress(prog.enabled(cmd, e.stderr, nil), e.stderr, "consume "+topic, false)
			res, err := perfConsume(ctx, cl, topic, records, timeout, p)
			if res != nil {
				if werr := res.write(e.stdout, asJSON); werr != nil {
					return werr
				}
			}
			return err
		},
	}
	cmd.Flags().StringVarP(&topic, "topic", "t", "samsa-perf", "topic to consume")
	cmd.Flags().Int64VarP(&records, "records", "n", 100000, "number of records to consume")
	cmd.Flags().DurationVar(&timeout, "timeout", 10*time.Second, "fail when no record arrives for this long")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as one JSON object")
	prog.register(cmd)
	return cmd
}

// perfConsume polls until n records arrived. The clock starts before the
// first poll, so connection setup counts, as it does for a real consumer.
// prog (which may be nil) counts the records; perfConsume closes it.
func perfConsume(ctx context.Context, cl *kgo.Client, topic string, n int64, idle time.Duration, prog *progress) (*perfResult, error) {
	defer prog.close()
	res := &perfResult{Mode: "consume", Topic: topic}
	start := time.Now()
	var err error
	for res.Records < n {
		pctx, cancel := context.WithTimeout(ctx, idle)
		fs := cl.PollRecords(pctx, int(min(n-res.Records, 1<<20)))
		cancel()
		fs.EachError(func(t string, p int32, ferr error) {
			if !errors.Is(ferr, context.DeadlineExceeded) && !errors.Is(ferr, context.Canceled) {
				res.Errors++
				err = errors.Join(err, fmt.Errorf("fetch %s/%d: %w", t, p, ferr))
			}
		})
		fs.EachRecord(func(r *kgo.Record) {
			res.Records++
			res.Bytes += int64(len(r.Key) + len(r.Value))
			prog.add(1, int64(len(r.Key)+len(r.Value)))
		})
		if err != nil {
			break
		}
		if fs.NumRecords() == 0 {
			if ctx.Err() != nil {
				err = ctx.Err()
			} else {
				err = fmt.Errorf("no record for %s after %d of %d records", idle, res.Records, n)
			}
			break
		}
	}
	res.rates(time.Since(start))
	return res, err
}

func newPerfE2ECmd(g *globals, e env) *cobra.Command {
	var (
		p        perfProducer
		rate     int
		duration time.Duration
		grace    time.Duration
	)
	cmd := &cobra.Command{
		Use:   "e2e",
		Short: "Produce at a steady rate while consuming and report end-to-end latency",
		Long: `Produce --rate records per second of --record-size bytes to --topic for
--duration with acks=all, while a consumer reads the same partitions
from their end offsets at the start. Each value begins with its send time
(8 bytes, unix nanoseconds), so the consumer measures end-to-end latency
from the produce call until the record is polled. Prints produce and
end-to-end latency percentiles; records not consumed within --grace after
producing stops are counted as missing and fail the run.`,
		Example: `  samsa perf e2e --rate 10000 --record-size 1024 --duration 30s
  samsa perf e2e --topic e2e --partitions 3 --rate 2000 --duration 10s --json`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if rate <= 0 || duration <= 0 {
				return usagef("--rate and --duration must be positive")
			}
			if p.size < 8 {
				return usagef("--record-size must be at least 8 (the send timestamp)")
			}
			p.acks = "all"
			opts, err := p.opts()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if err := ensureTopic(ctx, g, p.topic, p.partitions, p.rf); err != nil {
				return err
			}
			prog := startProgress(p.prog.enabled(cmd, e.stderr, nil), e.stderr, "e2e "+p.topic, true)
			res, err := perfE2E(ctx, g, &p, opts, rate, duration, grace, prog)
			if res != nil {
				if werr := res.write(e.stdout, p.asJSON); werr != nil {
					return werr
				}
			}
			return err
		},
	}
	p.register(cmd)
	_ = cmd.Flags().MarkHidden("acks") // always all
	cmd.Flags().IntVar(&rate, "rate", 10000, "records per second")
	cmd.Flags().DurationVar(&duration, "duration", 30*time.Second, "how long to produce")
	cmd.Flags().DurationVar(&grace, "grace", 10*time.Second, "how long to wait for the last records after producing stops")
	return cmd
}

// perfE2E runs the e2e measurement. The consumer goroutine is started and
// waited for here. prog (which may be nil) counts the acknowledged
// records; perfE2E closes it.
func perfE2E(ctx context.Context, g *globals, p *perfProducer, opts []kgo.Opt, rate int, duration, grace time.Duration, prog *progress) (*perfResult, error) {
	defer prog.close()
	adm, err := newAdmin(g)
	if err != nil {
		return nil, err
	}
	ends, err := adm.ListEndOffsets(ctx, p.topic)
	adm.Close()
	if err != nil {
		return nil, fmt.Errorf("list end offsets: %w", err)
	}
	if err := ends.Error(); err != nil {
		return nil, fmt.Errorf("list end offsets: %w", err)
	}
	// Start at the listed offsets without their leader epochs: with an
	// epoch, kgo first validates it by OffsetForLeaderEpoch, which not every
	// broker answers.
	starts := make(map[string]map[int32]kgo.Offset)
	ends.Each(func(o kadm.ListedOffset) {
		if starts[o.Topic] == nil {
			starts[o.Topic] = make(map[int32]kgo.Offset)
		}
		starts[o.Topic][o.Partition] = kgo.NewOffset().At(o.Offset)
	})
	cons, err := newClient(g,
		kgo.ConsumePartitions(starts),
		kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		return nil, err
	}
	defer cons.Close()
	prod, err := newClient(g, append(opts, kgo.DefaultProduceTopic(p.topic))...)
	if err != nil {
		return nil, err
	}
	defer prod.Close()

	var (
		produced atomic.Int64 // acknowledged records
		sent     atomic.Int64
		doneSend = make(chan struct{})
		e2e      []int64
		consErr  error
		wg       sync.WaitGroup
	)
	cctx, cancelCons := context.WithCancel(ctx)
	defer cancelCons()
	wg.Add(1)
	go func() { // owned here: stopped by cancelCons, waited by wg.Wait
		defer wg.Done()
		var graceEnd <-chan time.Time
		for {
			if graceEnd == nil {
				select {
				case <-doneSend:
					graceEnd = time.After(grace)
				default:
				}
			}
			if graceEnd != nil && int64(len(e2e)) >= sent.Load() {
				return
			}
			pctx, cancel := context.WithTimeout(cctx, 200*time.Millisecond)
			fs := cons.PollFetches(pctx)
			cancel()
			now := time.Now().UnixNano()
			fs.EachRecord(func(r *kgo.Record) {
				if len(r.Value) >= 8 {
					e2e = append(e2e, now-int64(binary.BigEndian.Uint64(r.Value)))
				}
			})
			fs.EachError(func(t string, pt int32, err error) {
				if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
					consErr = errors.Join(consErr, fmt.Errorf("fetch %s/%d: %w", t, pt, err))
				}
			})
			if cctx.Err() != nil || consErr != nil {
				return
			}
			if graceEnd != nil {
				select {
				case <-graceEnd:
					return
				default:
				}
			}
		}
	}()

	lat := &latencyLog{}
	promise := func(r *kgo.Record, err error) {
		if err != nil {
			lat.fail(err)
			return
		}
		produced.Add(1)
		d := time.Since(r.Timestamp)
		lat.add(d)
		prog.ack(int64(p.size), d)
	}
	payload := make([]byte, p.size)
	if _, err := rand.Read(payload); err != nil {
		return nil, fmt.Errorf("random payload: %w", err)
	}
	start := time.Now()
	// Pace by the schedule, not by sleeps: at each tick send what the
	// schedule says should have been sent by now.
	tick := time.NewTicker(time.Millisecond)
	for ctx.Err() == nil {
		el := time.Since(start)
		if el >= duration {
			break
		}
		due := int64(el.Seconds() * float64(rate))
		for sent.Load() < due {
			v := make([]byte, p.size)
			copy(v[8:], payload[8:])
			now := time.Now()
			binary.BigEndian.PutUint64(v, uint64(now.UnixNano()))
			sent.Add(1)
			prod.Produce(ctx, &kgo.Record{Topic: p.topic, Value: v, Timestamp: now}, promise)
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
		}
	}
	tick.Stop()
	flushErr := prod.Flush(ctx)
	sendElapsed := time.Since(start)
	close(doneSend)
	wg.Wait()

	lat.mu.Lock()
	defer lat.mu.Unlock()
	res := &perfResult{Mode: "e2e", Topic: p.topic, Records: produced.Load(), Errors: lat.errs.Load(), Consumed: int64(len(e2e))}
	res.Bytes = res.Records * int64(p.size)
	res.rates(sendElapsed)
	pl, el := summarize(lat.ns), summarize(e2e)
	res.Latency, res.E2E = &pl, &el
	switch {
	case flushErr != nil:
		return res, fmt.Errorf("flush: %w", flushErr)
	case consErr != nil:
		return res, consErr
	case res.Errors > 0:
		return res, fmt.Errorf("%d records failed to produce", res.Errors)
	case res.Consumed < res.Records:
		return res, fmt.Errorf("%d of %d acknowledged records not consumed within %s", res.Records-res.Consumed, res.Records, grace)
	}
	return res, nil
}
