package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// maxLineBytes bounds one stdin line of `samsa produce`.
const maxLineBytes = 16 << 20

// producerFlags are the settings produce and perf share.
type producerFlags struct {
	acks        string
	compression string
	idempotent  bool
	// linger applies when withLinger (perf's --linger, where 0 means
	// none); otherwise the client's default (franz-go's 10 ms).
	linger     time.Duration
	withLinger bool
	batchMax   int32
}

func (f *producerFlags) register(cmd *cobra.Command, acksHelp string) {
	cmd.Flags().StringVar(&f.acks, "acks", "all", acksHelp)
	cmd.Flags().StringVar(&f.compression, "compression", "none", "batch compression: none, gzip, snappy, lz4 or zstd")
	cmd.Flags().BoolVar(&f.idempotent, "idempotent", false, "enable the idempotent producer (needs InitProducerId and --acks all)")
}

// opts turns the flags into kgo options.
func (f *producerFlags) opts() ([]kgo.Opt, error) {
	var opts []kgo.Opt
	switch f.acks {
	case "all", "-1":
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	case "1":
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()))
	case "0":
		opts = append(opts, kgo.RequiredAcks(kgo.NoAck()))
	default:
		return nil, usagef("--acks %q: want all, 1 or 0", f.acks)
	}
	if f.idempotent {
		if f.acks != "all" && f.acks != "-1" {
			return nil, usagef("--idempotent needs --acks all")
		}
	} else {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	c, err := compressionCodec(f.compression)
	if err != nil {
		return nil, err
	}
	opts = append(opts, kgo.ProducerBatchCompression(c))
	if f.withLinger {
		opts = append(opts, kgo.ProducerLinger(f.linger))
	}
	if f.batchMax > 0 {
		opts = append(opts, kgo.ProducerBatchMaxBytes(f.batchMax))
	}
	return opts, nil
}

func compressionCodec(name string) (kgo.CompressionCodec, error) {
	switch name {
	case "none", "":
		return kgo.NoCompression(), nil
	case "gzip":
		return kgo.GzipCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	}
	return kgo.CompressionCodec{}, usagef("--compression %q: want none, gzip, snappy, lz4 or zstd", name)
}

// parseHeaders parses repeated --header k=v values.
func parseHeaders(hs []string) ([]kgo.RecordHeader, error) {
	out := make([]kgo.RecordHeader, 0, len(hs))
	for _, h := range hs {
		k, v, ok := strings.Cut(h, "=")
		if !ok || k == "" {
			return nil, usagef("--header %q: want key=value", h)
		}
		out = append(out, kgo.RecordHeader{Key: k, Value: []byte(v)})
	}
	return out, nil
}

// pingTimeout bounds how long produce waits for a first broker answer.
const pingTimeout = 10 * time.Second

// maxReportedErrors bounds how many produce failures are printed one by one.
const maxReportedErrors = 10

func newProduceCmd(g *globals, e env) *cobra.Command {
	var (
		pf        producerFlags
		keySep    string
		headers   []string
		partition int32
		prog      progressFlag
	)
	cmd := &cobra.Command{
		Use:   "produce TOPIC",
		Short: "Produce records read line by line from stdin",
		Long: `Read stdin line by line and produce one record per line to TOPIC. With
--key-separator, the text before the first separator is the key and the
rest the value; a line without the separator has a null key. Every
--header is added to every record. Records go to --partition when it is
given, otherwise the default partitioner picks (by key hash, or sticky
for null keys).

The command first checks that a broker answers, and fails at once, saying
why, when none does (a refused connection, a failed TLS handshake). A
summary is printed to stderr when stdin ends or the command is
interrupted; records not acknowledged by then count as failed. The
command exits with status 1 if any record failed.

A topic that does not exist is created by the broker if its
auto.create.topics.enable is true (the default), as for kcat; otherwise
produce fails before reading stdin.

The idempotent producer is off unless --idempotent is given.

While it runs, a line on stderr every second gives the records/s, MB/s
and the p50/p99 acknowledgement latency of the last second, when stderr
is a terminal or --progress is given (--progress=false: never).`,
		Example: `  printf 'hello\nworld\n' | samsa produce orders
  printf 'k1:v1\nk2:v2\n' | samsa produce orders --key-separator : --header source=cli
  samsa produce orders --partition 0 --acks 1 --compression zstd < records.txt`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			topic := args[0]
			hdrs, err := parseHeaders(headers)
			if err != nil {
				return err
			}
			opts, err := pf.opts()
			if err != nil {
				return err
			}
			// NB: the broker decides whether a missing topic is created,
			// by its auto.create.topics.enable, as it does for kcat and
			// Kafka's console producer.
			opts = append(opts, kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation())
			if partition >= 0 {
				opts = append(opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))
			} else if partition != -1 {
				return usagef("--partition %d: want a partition number or -1", partition)
			}
			cl, err := newClient(g, opts...)
			if err != nil {
				return err
			}
			defer cl.Close()
			// Fail at once, and say why, when no broker answers: the
			// producer itself would retry a refused connection until
			// the command is interrupted.
			pctx, cancel := context.WithTimeout(cmd.Context(), pingTimeout)
			err = cl.Ping(pctx)
			cancel()
			if err != nil {
				return fmt.Errorf("produce to %s: no broker reachable at %s: %w", topic, g.bootstrap, err)
			}
			if err := checkProduceTopic(cmd.Context(), cl, topic); err != nil {
				return err
			}
			p := startProgress(prog.enabled(cmd, e.stderr, nil), e.stderr, "produce "+topic, true)
			return produceLines(cmd.Context(), cl, e, topic, keySep, hdrs, partition, p)
		},
	}
	pf.register(cmd, "acknowledgement required: all, 1 or 0")
	cmd.Flags().StringVarP(&keySep, "key-separator", "K", "", "split each line into key and value at the first SEP")
	cmd.Flags().StringArrayVarP(&headers, "header", "H", nil, "header key=value added to every record (repeatable)")
	cmd.Flags().Int32VarP(&partition, "partition", "p", -1, "partition to produce to (-1: partitioner decides)")
	prog.register(cmd)
	return cmd
}

// checkProduceTopic asks for topic's metadata as a producer does, letting
// the broker create it if its auto.create.topics.enable says so, and fails
// at once when the topic does not exist and was not created.
func checkProduceTopic(ctx context.Context, cl *kgo.Client, topic string) error {
	req := kmsg.NewPtrMetadataRequest()
	t := kmsg.NewMetadataRequestTopic()
	t.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, t)
	req.AllowAutoTopicCreation = true
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("produce to %s: metadata: %w", topic, err)
	}
	for _, rt := range resp.Topics {
		if rt.Topic == nil || *rt.Topic != topic {
			continue
		}
		err := kerr.ErrorForCode(rt.ErrorCode)
		switch {
		case err == nil, errors.Is(err, kerr.LeaderNotAvailable):
			return nil // exists, or just created
		case errors.Is(err, kerr.UnknownTopicOrPartition):
			return fmt.Errorf("produce to %s: %w: the topic does not exist and the broker does not create topics on produce (its auto.create.topics.enable=false); create it first: samsa topic create %s",
				topic, err, topic)
		default:
			return fmt.Errorf("produce to %s: %w", topic, err)
		}
	}
	return nil
}

// produceTally counts the outcomes of asynchronous produces. mu guards all
// fields; promises run on client goroutines.
type produceTally struct {
	mu       sync.Mutex
	ok       int64
	failed   int64
	bytes    int64
	firstErr []error
	prog     *progress // may be nil
}

func (t *produceTally) promise(r *kgo.Record, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err != nil {
		t.failed++
		if len(t.firstErr) < maxReportedErrors {
			t.firstErr = append(t.firstErr, fmt.Errorf("record %q: %w", truncate(r.Value, 32), err))
		}
		return
	}
	t.ok++
	t.bytes += int64(len(r.Key) + len(r.Value))
	t.prog.ack(int64(len(r.Key)+len(r.Value)), time.Since(r.Timestamp))
}

func truncate(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + "..."
}

// produceLines produces every line of e.stdin and waits for all results,
// counting them in prog (which may be nil), which it closes.
func produceLines(ctx context.Context, cl *kgo.Client, e env, topic, keySep string, hdrs []kgo.RecordHeader, partition int32, prog *progress) error {
	start := time.Now()
	tally := produceTally{prog: prog}
	sc := bufio.NewScanner(e.stdin)
	sc.Buffer(make([]byte, 64<<10), maxLineBytes)
	var sent int64
	for sc.Scan() {
		line := sc.Text()
		r := &kgo.Record{Topic: topic, Headers: hdrs}
		if keySep != "" {
			if k, v, ok := strings.Cut(line, keySep); ok {
				r.Key, r.Value = []byte(k), []byte(v)
			} else {
				r.Value = []byte(line)
			}
		} else {
			r.Value = []byte(line)
		}
		if partition >= 0 {
			r.Partition = partition
		}
		sent++
		// The send time, which the acknowledgement latency is
		// measured from (kgo would set the same).
		r.Timestamp = time.Now()
		cl.Produce(ctx, r, tally.promise)
	}
	scanErr := sc.Err()
	// Flush waits for every promise; a cancelled context abandons the rest.
	flushErr := cl.Flush(ctx)
	prog.close()

	tally.mu.Lock()
	defer tally.mu.Unlock()
	for _, err := range tally.firstErr {
		fmt.Fprintf(e.stderr, "samsa: produce: %v\n", err)
	}
	// Records still unanswered when Flush gave up (the command was
	// interrupted) were not acknowledged: they count as failed.
	unanswered := sent - tally.ok - tally.failed
	failed := tally.failed + unanswered
	fmt.Fprintf(e.stderr, "produced %d records (%d bytes) to %s in %s, %d failed",
		tally.ok, tally.bytes, topic, time.Since(start).Round(time.Millisecond), failed)
	if unanswered > 0 {
		fmt.Fprintf(e.stderr, " (%d not acknowledged when the command stopped)", unanswered)
	}
	fmt.Fprintln(e.stderr)
	switch {
	case scanErr != nil:
		return fmt.Errorf("read stdin: %w", scanErr)
	case flushErr != nil:
		return fmt.Errorf("%d of %d records failed: flush: %w", failed, sent, flushErr)
	case failed > 0:
		return fmt.Errorf("%d of %d records failed", failed, sent)
	}
	return nil
}
