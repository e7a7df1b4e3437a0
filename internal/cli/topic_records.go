package cli

import (
	"errors"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
)

func newTopicAddPartitionsCmd(g *globals, e env) *cobra.Command {
	var count int
	cmd := &cobra.Command{
		Use:   "add-partitions TOPIC",
		Short: "Raise a topic's partition count",
		Long: `Raise TOPIC's partition count to --count (CreatePartitions), as
kafka-topics.sh --alter --partitions does. --count is the new total, not
the number added; it must be above the current count (Kafka cannot remove
partitions: INVALID_PARTITIONS). The new partitions get replicas as the
broker places them, with the topic's replication factor. Records with a
key may map to another partition afterwards.`,
		Example: `  samsa topic add-partitions orders --count 12`,
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if count < 1 {
				return usagef("--count %d: want the new partition count, at least 1", count)
			}
			adm, err := newAdmin(g)
			if err != nil {
				return err
			}
			defer adm.Close()
			topic := args[0]
			resp, err := adm.UpdatePartitions(cmd.Context(), count, topic)
			if err != nil {
				return fmt.Errorf("add partitions to %s: %w", topic, err)
			}
			r, ok := resp[topic]
			if !ok {
				return fmt.Errorf("add partitions to %s: not in the broker's response", topic)
			}
			if r.Err != nil {
				return fmt.Errorf("add partitions to %s: %w", topic, withMessage(r.Err, r.ErrMessage))
			}
			fmt.Fprintf(e.stdout, "topic %s now has %d partitions\n", topic, count)
			return nil
		},
	}
	cmd.Flags().IntVar(&count, "count", 0, "the new total partition count (required)")
	_ = cmd.MarkFlagRequired("count")
	return cmd
}

func newTopicDeleteRecordsCmd(g *globals, e env) *cobra.Command {
	var (
		partitions []int32
		offset     int64
	)
	cmd := &cobra.Command{
		Use:   "delete-records TOPIC",
		Short: "Delete a partition's records before an offset",
		Long: `Delete the records of TOPIC's --partition before --offset (DeleteRecords),
as kafka-delete-records.sh does: the partition's log start offset moves
to --offset, consumers can no longer read below it, and the segments
wholly below it are removed. --offset -1 means the high watermark (delete
everything written so far). An offset above the high watermark fails with
OFFSET_OUT_OF_RANGE. Prints each partition's new log start offset (the
low watermark).`,
		Example: `  samsa topic delete-records orders --partition 0 --offset 1000
  samsa topic delete-records orders --partition 0,1,2 --offset -1`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(partitions) == 0 {
				return usagef("--partition: give at least one partition")
			}
			if offset < -1 {
				return usagef("--offset %d: want an offset, or -1 for the high watermark", offset)
			}
			adm, err := newAdmin(g)
			if err != nil {
				return err
			}
			defer adm.Close()
			topic := args[0]
			os := make(kadm.Offsets)
			for _, p := range partitions {
				os.Add(kadm.Offset{Topic: topic, Partition: p, At: offset, LeaderEpoch: -1})
			}
			resp, err := adm.DeleteRecords(cmd.Context(), os)
			if err != nil {
				return fmt.Errorf("delete records of %s: %w", topic, err)
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "TOPIC\tPARTITION\tLOW-WATERMARK\tERROR")
			var failed int
			for _, p := range partitions {
				r, ok := resp.Lookup(topic, p)
				if !ok {
					r.Err = errors.New("not in the broker's response")
				}
				low := "-"
				if r.Err != nil {
					failed++
				} else {
					low = fmt.Sprint(r.LowWatermark)
				}
				fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", topic, p, low, errText(r.Err))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if failed > 0 {
				return fmt.Errorf("delete records of %s: %d of %d partitions failed", topic, failed, len(partitions))
			}
			return nil
		},
	}
	cmd.Flags().Int32SliceVarP(&partitions, "partition", "p", nil, "partition, repeatable or comma-separated (required)")
	cmd.Flags().Int64Var(&offset, "offset", 0, "delete the records before this offset; -1: the high watermark (required)")
	_ = cmd.MarkFlagRequired("partition")
	_ = cmd.MarkFlagRequired("offset")
	return cmd
}
