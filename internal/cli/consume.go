package cli

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"
)

// parseFrom parses --from: beginning, end, an offset, or @<unix-ms>.
func parseFrom(s string) (kgo.Offset, error) {
	switch s {
	case "beginning", "start", "earliest":
		return kgo.NewOffset().AtStart(), nil
	case "end", "latest":
		return kgo.NewOffset().AtEnd(), nil
	}
	if ms, ok := strings.CutPrefix(s, "@"); ok {
		ts, err := strconv.ParseInt(ms, 10, 64)
		if err != nil || ts < 0 {
			return kgo.Offset{}, usagef("--from %q: want @<unix milliseconds>", s)
		}
		return kgo.NewOffset().AfterMilli(ts), nil
	}
	o, err := strconv.ParseInt(s, 10, 64)
	if err != nil || o < 0 {
		return kgo.Offset{}, usagef("--from %q: want beginning, end, an offset or @<unix-ms>", s)
	}
	return kgo.NewOffset().At(o), nil
}

// topicPartitions returns the partitions of topic, or only want when it is
// not -1 (checking that it exists).
func topicPartitions(ctx context.Context, g *globals, topic string, want int32) ([]int32, error) {
	adm, err := newAdmin(g)
	if err != nil {
		return nil, err
	}
	defer adm.Close()
	td, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("metadata for %s: %w", topic, err)
	}
	t, ok := td[topic]
	if !ok {
		return nil, fmt.Errorf("topic %s: not in the metadata response", topic)
	}
	if t.Err != nil {
		return nil, fmt.Errorf("topic %s: %w", topic, t.Err)
	}
	if want >= 0 {
		if _, ok := t.Partitions[want]; !ok {
			return nil, fmt.Errorf("topic %s has no partition %d (it has %d)", topic, want, len(t.Partitions))
		}
		return []int32{want}, nil
	}
	ps := make([]int32, 0, len(t.Partitions))
	for _, p := range t.Partitions.Sorted() {
		ps = append(ps, p.Partition)
	}
	return ps, nil
}

// resetPolicy is --reset: what consume does when a partition has no record
// at the offset asked for, as the consumer config auto.offset.reset does.
type resetPolicy string

const (
	resetEarliest resetPolicy = "earliest"
	resetLatest   resetPolicy = "latest"
	resetError    resetPolicy = "error"
)

func parseReset(s string) (resetPolicy, error) {
	switch p := resetPolicy(s); p {
	case resetEarliest, resetLatest, resetError:
		return p, nil
	case "smallest", "beginning":
		return resetEarliest, nil
	case "largest", "end":
		return resetLatest, nil
	}
	return "", usagef("--reset %q: want earliest, latest or error", s)
}

// kgoOffset returns the reset offset the client uses for a position that
// goes out of range while consuming.
func (p resetPolicy) kgoOffset() kgo.Offset {
	switch p {
	case resetEarliest:
		return kgo.NewOffset().AtStart()
	case resetError:
		return kgo.NoResetOffset()
	}
	return kgo.NewOffset().AtEnd()
}

// resolveStart applies the reset policy to an exact --from offset: a
// partition whose log does not hold it starts at its log start or end
// offset instead, and each such partition is named on stderr. With
// resetError it fails instead.
func resolveStart(ctx context.Context, g *globals, e env, topic string, parts []int32, at int64, policy resetPolicy) (map[int32]kgo.Offset, error) {
	adm, err := newAdmin(g)
	if err != nil {
		return nil, err
	}
	defer adm.Close()
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("list start offsets of %s: %w", topic, err)
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("list end offsets of %s: %w", topic, err)
	}
	offs := make(map[int32]kgo.Offset, len(parts))
	var outside []error
	for _, p := range parts {
		s, sok := starts.Lookup(topic, p)
		en, eok := ends.Lookup(topic, p)
		if !sok || !eok || s.Err != nil || en.Err != nil {
			offs[p] = kgo.NewOffset().At(at) // the client resolves it
			continue
		}
		if at >= s.Offset && at <= en.Offset {
			offs[p] = kgo.NewOffset().At(at)
			continue
		}
		where := "past the log end offset " + strconv.FormatInt(en.Offset, 10)
		if at < s.Offset {
			where = "before the log start offset " + strconv.FormatInt(s.Offset, 10)
		}
		switch policy {
		case resetError:
			outside = append(outside, fmt.Errorf("%s-%d: offset %d is %s (the log holds %d..%d) and --reset is error", topic, p, at, where, s.Offset, en.Offset))
			continue
		case resetEarliest:
			offs[p] = kgo.NewOffset().At(s.Offset)
			fmt.Fprintf(e.stderr, "%s-%d: offset %d is %s; starting at the log start offset %d (--reset earliest)\n", topic, p, at, where, s.Offset)
		default:
			offs[p] = kgo.NewOffset().At(en.Offset)
			fmt.Fprintf(e.stderr, "%s-%d: offset %d is %s; starting at the log end offset %d (--reset latest)\n", topic, p, at, where, en.Offset)
		}
	}
	if len(outside) > 0 {
		return nil, errors.Join(outside...)
	}
	return offs, nil
}

func newConsumeCmd(g *globals, e env) *cobra.Command {
	var (
		reset     string
		from      string
		partition int32
		count     int
		timeout   time.Duration
		format    string
		asJSON    bool
		group     string
		prog      progressFlag
	)
	cmd := &cobra.Command{
		Use:   "consume TOPIC",
		Short: "Print records of a topic to stdout",
		Long: `Consume TOPIC directly from its partitions (no consumer group, nothing is
committed) and print each record to stdout.

With --group, consume as a member of that consumer group instead, as
kafka-console-consumer.sh --group does: the group's coordinator assigns
the partitions, each record's offset is committed once the record is
printed, so a later run of the same group resumes after the last record
printed. --from then only says where to start in a partition the group
has no committed offset for (beginning or end); --partition cannot be
given.

--from picks where to start in every partition: beginning, end, an
offset, or @<unix-ms> for the first record at or after that timestamp.
An offset the partition's log does not hold (past its end, or before its
start after retention) is handled as --reset says, as the consumer config
auto.offset.reset does: latest (the default, as in kcat, whose librdkafka
defaults to it) starts at the log
end offset, earliest at the log start offset, and each partition moved is
named on stderr; error fails the command instead. The same applies when a
position goes out of range while consuming.

--count stops after that many records; --timeout stops once no record has
arrived for that long. Without either, consume runs until interrupted.

--format is a template with the verbs
  %k key            %v value (also %s)
  %t timestamp (ms) %T topic
  %o offset         %p partition
  %h headers as k=v,k=v
  %K key length     %S value length (-1 when null)
  %% percent sign   \n \t \r \\ escapes
--json prints one JSON object per record instead; keys and values that are
not UTF-8 appear base64-encoded in key_b64 / value_b64.

While it runs, a line on stderr every second gives the records/s and MB/s
of the last second, when stderr is a terminal and stdout is not (the
records go to a file or a pipe), or --progress is given
(--progress=false: never).`,
		Example: `  samsa consume orders --from beginning --count 10
  samsa consume orders --partition 0 --from 999 --reset error
  samsa consume orders --partition 2 --from 1500 --format '%o %k=%v\n'
  samsa consume orders --from @1700000000000 --timeout 5s --json
  samsa consume orders --group audit --from beginning`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			topic := args[0]
			start, err := parseFrom(from)
			if err != nil {
				return err
			}
			f, err := parseFormat(format)
			if err != nil {
				return err
			}
			policy, err := parseReset(reset)
			if err != nil {
				return err
			}
			if partition < -1 {
				return usagef("--partition %d: want a partition number or -1", partition)
			}
			if count < 0 || timeout < 0 {
				return usagef("--count and --timeout must not be negative")
			}
			ctx := cmd.Context()
			if group != "" {
				return consumeGroup(ctx, g, e, topic, group, from, start, policy,
					consumer{e: e, count: count, timeout: timeout, format: f, json: asJSON, commit: true,
						progress: prog.enabled(cmd, e.stderr, e.stdout), topic: topic},
					cmd.Flags().Changed("partition"))
			}
			parts, err := topicPartitions(ctx, g, topic, partition)
			if err != nil {
				return err
			}
			offs := make(map[int32]kgo.Offset, len(parts))
			for _, p := range parts {
				offs[p] = start
			}
			if at, err := strconv.ParseInt(from, 10, 64); err == nil {
				if offs, err = resolveStart(ctx, g, e, topic, parts, at, policy); err != nil {
					return err
				}
			}
			cl, err := newClient(g,
				kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offs}),
				kgo.ConsumeResetOffset(policy.kgoOffset()),
				kgo.FetchMaxWait(500*time.Millisecond),
			)
			if err != nil {
				return err
			}
			defer cl.Close()
			c := consumer{cl: cl, e: e, count: count, timeout: timeout, format: f, json: asJSON,
				progress: prog.enabled(cmd, e.stderr, e.stdout), topic: topic}
			return c.run(ctx)
		},
	}
	cmd.Flags().StringVarP(&from, "from", "o", "end", "start at beginning, end, <offset> or @<unix-ms>")
	cmd.Flags().Int32VarP(&partition, "partition", "p", -1, "consume only this partition (-1: all)")
	cmd.Flags().StringVar(&reset, "reset", string(resetLatest), "offset outside the log: latest, earliest or error (as auto.offset.reset)")
	cmd.Flags().IntVarP(&count, "count", "c", 0, "stop after N records (0: no limit)")
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "stop after no records arrived for this long (0: wait forever)")
	cmd.Flags().StringVarP(&format, "format", "f", `%v\n`, "output template, see above")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per record")
	cmd.Flags().StringVarP(&group, "group", "g", "", "consume as a member of this consumer group, committing each record printed")
	prog.register(cmd)
	return cmd
}

// consumeGroup is consume --group: the group assigns the partitions and
// c commits each record once it is printed.
func consumeGroup(ctx context.Context, g *globals, e env, topic, group, from string, start kgo.Offset,
	policy resetPolicy, c consumer, partitionGiven bool) error {
	if partitionGiven {
		return usagef("--partition cannot be used with --group: the group assigns the partitions")
	}
	if from != "beginning" && from != "end" {
		return usagef("--from %q with --group: want beginning or end (where to start without a committed offset)", from)
	}
	if policy == resetError {
		return usagef("--reset error with --group: the group starts at --from where it has no committed offset")
	}
	if _, err := topicPartitions(ctx, g, topic, -1); err != nil {
		return err
	}
	cl, err := newClient(g,
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(start),
		kgo.DisableAutoCommit(),
		kgo.FetchMaxWait(500*time.Millisecond),
	)
	if err != nil {
		return err
	}
	defer cl.Close()
	c.cl = cl
	return c.run(ctx)
}

// consumer prints records until its limits are reached.
type consumer struct {
	cl      *kgo.Client
	e       env
	count   int
	timeout time.Duration
	format  recordFormat
	json    bool
	commit  bool // consume --group: commit each record once it is written
	// progress turns on the progress line of topic.
	progress bool
	topic    string
}

// writeAndCommit writes buf, r's output, and then commits r's offset, so a
// group's committed offset never passes a record that was not printed.
func (c *consumer) writeAndCommit(ctx context.Context, buf []byte, r *kgo.Record) error {
	if _, err := c.e.stdout.Write(buf); err != nil {
		return fmt.Errorf("write stdout: %w", err)
	}
	if err := c.cl.CommitRecords(ctx, r); err != nil {
		if ctx.Err() != nil {
			return nil // interrupted: the record may be printed again next time
		}
		return fmt.Errorf("commit %s-%d offset %d: %w", r.Topic, r.Partition, r.Offset+1, err)
	}
	return nil
}

func (c *consumer) run(ctx context.Context) error {
	var (
		seen int
		buf  []byte
	)
	prog := startProgress(c.progress, c.e.stderr, "consume "+c.topic, false)
	defer prog.close()
	for c.count == 0 || seen < c.count {
		pctx, cancel := ctx, context.CancelFunc(func() {})
		if c.timeout > 0 {
			pctx, cancel = context.WithTimeout(ctx, c.timeout)
		}
		max := -1
		if c.count > 0 {
			max = c.count - seen
		}
		fs := c.cl.PollRecords(pctx, max)
		expired := pctx.Err() != nil
		cancel()
		if fs.IsClientClosed() {
			return nil
		}
		var errs []error
		fs.EachError(func(t string, p int32, err error) {
			if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				return
			}
			errs = append(errs, fmt.Errorf("fetch %s/%d: %w", t, p, err))
		})
		if len(errs) > 0 {
			return errors.Join(errs...)
		}
		buf = buf[:0]
		var err error
		fs.EachRecord(func(r *kgo.Record) {
			seen++
			prog.add(1, int64(len(r.Key)+len(r.Value)))
			if err != nil {
				return
			}
			if c.json {
				buf, err = appendJSON(buf, r)
			} else {
				buf = c.format.appendRecord(buf, r)
			}
			if err == nil && c.commit {
				err = c.writeAndCommit(ctx, buf, r)
				buf = buf[:0]
			}
		})
		if err != nil {
			return err
		}
		if _, werr := c.e.stdout.Write(buf); werr != nil {
			return fmt.Errorf("write stdout: %w", werr)
		}
		if ctx.Err() != nil {
			return nil // interrupted: not a failure
		}
		if expired && fs.NumRecords() == 0 {
			return nil // --timeout without records
		}
	}
	return nil
}
