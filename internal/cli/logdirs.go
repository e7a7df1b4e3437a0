package cli

import (
	"fmt"
	"path/filepath"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
)

// logDirJSON is one log dir of `cluster log-dirs --format json`.
type logDirJSON struct {
	Broker      int32            `json:"broker"`
	Dir         string           `json:"dir"`
	TotalBytes  int64            `json:"total_bytes"`
	UsableBytes int64            `json:"usable_bytes"`
	SizeBytes   int64            `json:"size_bytes"`
	Error       string           `json:"error,omitempty"`
	Partitions  []logDirPartJSON `json:"partitions"`
}

type logDirPartJSON struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	SizeBytes int64  `json:"size_bytes"`
	OffsetLag int64  `json:"offset_lag"`
	IsFuture  bool   `json:"is_future"`
}

func newClusterLogDirsCmd(g *globals, e env) *cobra.Command {
	var (
		topics []string
		format outputFormat
	)
	cmd := &cobra.Command{
		Use:   "log-dirs",
		Short: "Show each broker's log dirs, their disk space and partition sizes",
		Long: `Describe the log dirs of every broker (DescribeLogDirs), as
kafka-log-dirs.sh --describe does: per dir its total and usable bytes (of
the volume it is on; -1 when the broker does not say) and the bytes the
partitions in it hold; then per partition replica its size and offset lag
(how far its log end offset is behind the high watermark; 0 on the leader
and on in-sync followers). --topic limits the partitions to those topics.`,
		Example: `  samsa cluster log-dirs
  samsa cluster log-dirs --topic orders --format json`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			adm, err := newAdmin(g)
			if err != nil {
				return err
			}
			defer adm.Close()
			var set kadm.TopicsSet
			if len(topics) > 0 {
				td, err := adm.ListTopics(cmd.Context(), topics...)
				if err != nil {
					return fmt.Errorf("describe log dirs: %w", err)
				}
				if err := td.Error(); err != nil {
					return fmt.Errorf("describe log dirs: %w", err)
				}
				set = td.TopicsSet()
			}
			all, err := adm.DescribeAllLogDirs(cmd.Context(), set)
			if err != nil {
				return fmt.Errorf("describe log dirs: %w", err)
			}
			dirs := all.Sorted()
			var failed int
			for _, d := range dirs {
				if d.Err != nil {
					failed++
				}
			}
			if format.json() {
				out := struct {
					LogDirs []logDirJSON `json:"log_dirs"`
				}{LogDirs: []logDirJSON{}}
				for _, d := range dirs {
					j := logDirJSON{Broker: d.Broker, Dir: d.Dir, TotalBytes: d.TotalBytes, UsableBytes: d.UsableBytes,
						SizeBytes: d.Size(), Error: errString(d.Err), Partitions: []logDirPartJSON{}}
					for _, p := range d.Topics.Sorted() {
						j.Partitions = append(j.Partitions, logDirPartJSON{p.Topic, p.Partition, p.Size, p.OffsetLag, p.IsFuture})
					}
					out.LogDirs = append(out.LogDirs, j)
				}
				if err := writeJSON(e.stdout, out); err != nil {
					return err
				}
			} else {
				tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "BROKER\tDIR\tTOTAL-BYTES\tUSABLE-BYTES\tSIZE\tERROR")
				for _, d := range dirs {
					fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%d\t%s\n", d.Broker, d.Dir, d.TotalBytes, d.UsableBytes, d.Size(), errText(d.Err))
				}
				tw.Flush()
				fmt.Fprintln(e.stdout)
				tw = tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "TOPIC\tPARTITION\tBROKER\tDIR\tSIZE\tOFFSET-LAG")
				for _, d := range dirs {
					for _, p := range d.Topics.Sorted() {
						dir := p.Dir
						if p.IsFuture {
							dir += " (future)"
						}
						fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%d\t%d\n", p.Topic, p.Partition, p.Broker, dir, p.Size, p.OffsetLag)
					}
				}
				if err := tw.Flush(); err != nil {
					return err
				}
			}
			if failed > 0 {
				return fmt.Errorf("describe log dirs: %d of %d dirs failed", failed, len(dirs))
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVarP(&topics, "topic", "t", nil, "only partitions of this topic, repeatable")
	addFormatFlag(cmd, &format)
	return cmd
}

// moveLogDirPoll is how often `cluster move-log-dir --wait` asks whether
// the moves are done.
const moveLogDirPoll = 200 * time.Millisecond

func newClusterMoveLogDirCmd(g *globals, e env) *cobra.Command {
	var (
		broker     int32
		dir, topic string
		partitions []int32
		wait       bool
	)
	cmd := &cobra.Command{
		Use:   "move-log-dir",
		Short: "Move replicas to another log dir of their broker",
		Long: `Move replicas of --topic on --broker to its log dir --dir
(AlterReplicaLogDirs, KIP-113), as kafka-reassign-partitions.sh does with
log_dirs in its plan: the broker copies each replica into the other dir
while it keeps serving, then swaps the copy in; offsets and records stay
as they are. --partition limits the move to those partitions (repeatable;
default every partition of the topic on that broker). It prints each
partition's answer and exits 1 if one failed (LOG_DIR_NOT_FOUND: --dir is
not one of the broker's log.dirs; KAFKA_STORAGE_ERROR: a dir is offline;
REPLICA_NOT_AVAILABLE: the broker holds no replica of it). --wait waits
until every move is done (cluster log-dirs shows the replica in --dir and
no future replica).`,
		Example: `  samsa cluster move-log-dir --broker 1 --dir /disk2/samsa --topic orders
  samsa cluster move-log-dir --broker 1 --dir /disk2/samsa --topic orders --partition 0 --wait`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case !cmd.Flags().Changed("broker"):
				return usagef("move-log-dir: --broker is required")
			case dir == "":
				return usagef("move-log-dir: --dir is required")
			case topic == "":
				return usagef("move-log-dir: --topic is required")
			}
			adm, err := newAdmin(g)
			if err != nil {
				return err
			}
			defer adm.Close()
			ctx := cmd.Context()
			set := kadm.TopicsSet{}
			if len(partitions) > 0 {
				set.Add(topic, partitions...)
			} else {
				td, err := adm.ListTopics(ctx, topic)
				if err != nil {
					return fmt.Errorf("move-log-dir: %w", err)
				}
				if err := td.Error(); err != nil {
					return fmt.Errorf("move-log-dir: %w", err)
				}
				for _, p := range td[topic].Partitions.Sorted() {
					if slices.Contains(p.Replicas, broker) {
						set.Add(topic, p.Partition)
					}
				}
				if len(set) == 0 {
					return fmt.Errorf("move-log-dir: broker %d holds no replica of %s", broker, topic)
				}
			}
			var req kadm.AlterReplicaLogDirsReq
			req.Add(dir, set)
			resps, err := adm.AlterBrokerReplicaLogDirs(ctx, broker, req)
			if err != nil {
				return fmt.Errorf("move-log-dir: %w", err)
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "TOPIC\tPARTITION\tBROKER\tDIR\tERROR")
			failed := 0
			for _, r := range resps.Sorted() {
				if r.Err != nil {
					failed++
				}
				fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\n", r.Topic, r.Partition, broker, r.Dir, errText(r.Err))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if failed > 0 {
				return fmt.Errorf("move-log-dir: %d of %d partitions failed", failed, len(resps.Sorted()))
			}
			if !wait {
				return nil
			}
			for {
				d, err := adm.DescribeBrokerLogDirs(ctx, broker, set)
				if err != nil {
					return fmt.Errorf("move-log-dir: describe log dirs: %w", err)
				}
				inDir, futures := 0, 0
				for _, ld := range d {
					for _, ps := range ld.Topics {
						for _, p := range ps {
							switch {
							case p.IsFuture:
								futures++
							case ld.Dir == filepath.Clean(dir):
								inDir++
							}
						}
					}
				}
				if n := len(set[topic]); futures == 0 && inDir == n {
					fmt.Fprintf(e.stdout, "moved %d partitions of %s to %s\n", n, topic, dir)
					return nil
				}
				select {
				case <-ctx.Done():
					return fmt.Errorf("move-log-dir: wait: %w", ctx.Err())
				case <-time.After(moveLogDirPoll):
				}
			}
		},
	}
	cmd.Flags().Int32Var(&broker, "broker", 0, "id of the broker whose replicas move (required)")
	cmd.Flags().StringVar(&dir, "dir", "", "the log dir to move them to, one of the broker's log.dirs (required)")
	cmd.Flags().StringVarP(&topic, "topic", "t", "", "topic whose replicas move (required)")
	cmd.Flags().Int32SliceVarP(&partitions, "partition", "p", nil, "only this partition, repeatable")
	cmd.Flags().BoolVar(&wait, "wait", false, "wait until the moves are done")
	return cmd
}
