package cli

import (
	"fmt"
	"text/tabwriter"

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
