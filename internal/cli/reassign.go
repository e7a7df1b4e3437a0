package cli

import (
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// reassignPoll is how often `topic reassign --wait` asks whether the
// reassignment is done.
const reassignPoll = 200 * time.Millisecond

func newTopicReassignCmd(g *globals, e env) *cobra.Command {
	var (
		partition int32
		replicas  string
		cancel    bool
		wait      bool
	)
	cmd := &cobra.Command{
		Use:   "reassign TOPIC",
		Short: "Move a partition's replicas to other brokers, or cancel a move",
		Long: `Reassign one partition (AlterPartitionReassignments): --replicas is the
target replica list, first the preferred leader. The new replicas copy the
partition from its leader while it keeps serving; once they are in sync the
partition switches to the target replicas and the brokers left out delete
their copy. --cancel stops a reassignment in progress and restores the
original replicas. --wait waits until the reassignment has finished.`,
		Example: `  samsa topic reassign orders --partition 0 --replicas 1,2
  samsa topic reassign orders --partition 0 --replicas 1,2,3 --wait
  samsa topic reassign orders --partition 0 --cancel`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			topic := args[0]
			if !cmd.Flags().Changed("partition") {
				return usagef("reassign: --partition is required")
			}
			var target []int32
			switch {
			case cancel && replicas != "":
				return usagef("reassign: give --replicas or --cancel, not both")
			case !cancel && replicas == "":
				return usagef("reassign: give --replicas or --cancel")
			case !cancel:
				for _, s := range strings.Split(replicas, ",") {
					id, err := strconv.ParseInt(strings.TrimSpace(s), 10, 32)
					if err != nil || id < 0 {
						return usagef("reassign: --replicas %q: want broker ids like 1,2,3", replicas)
					}
					target = append(target, int32(id))
				}
			}
			adm, err := newAdmin(g)
			if err != nil {
				return err
			}
			defer adm.Close()
			var req kadm.AlterPartitionAssignmentsReq
			req.Assign(topic, partition, target)
			resps, err := adm.AlterPartitionAssignments(cmd.Context(), req)
			if err != nil {
				return fmt.Errorf("reassign %s-%d: %w", topic, partition, err)
			}
			r, ok := resps[topic][partition]
			switch {
			case !ok:
				return fmt.Errorf("reassign %s-%d: not in the response", topic, partition)
			case r.Err != nil:
				return fmt.Errorf("reassign %s-%d: %w", topic, partition, withMessage(r.Err, r.ErrMessage))
			}
			if cancel {
				fmt.Fprintf(e.stdout, "cancelled the reassignment of %s-%d\n", topic, partition)
				return nil
			}
			fmt.Fprintf(e.stdout, "reassigning %s-%d to replicas %s\n", topic, partition, int32s(target))
			if !wait {
				return nil
			}
			for {
				listed, err := adm.ListPartitionReassignments(cmd.Context(), kadm.TopicsSet{topic: {partition: {}}})
				if err != nil {
					return fmt.Errorf("list reassignments of %s-%d: %w", topic, partition, err)
				}
				if _, busy := listed[topic][partition]; !busy {
					fmt.Fprintf(e.stdout, "reassignment of %s-%d finished\n", topic, partition)
					return nil
				}
				select {
				case <-cmd.Context().Done():
					return fmt.Errorf("wait for the reassignment of %s-%d: %w", topic, partition, cmd.Context().Err())
				case <-time.After(reassignPoll):
				}
			}
		},
	}
	cmd.Flags().Int32VarP(&partition, "partition", "p", 0, "partition to reassign (required)")
	cmd.Flags().StringVar(&replicas, "replicas", "", "target broker ids, comma separated, preferred leader first")
	cmd.Flags().BoolVar(&cancel, "cancel", false, "cancel the reassignment in progress")
	cmd.Flags().BoolVar(&wait, "wait", false, "wait until the reassignment has finished")
	return cmd
}

func newTopicReassignmentsCmd(g *globals, e env) *cobra.Command {
	var format outputFormat
	cmd := &cobra.Command{
		Use:   "reassignments [TOPIC...]",
		Short: "List partition reassignments in progress",
		Long: `List the partition reassignments in progress (ListPartitionReassignments),
of every topic or of the named ones: per partition the current replicas
(original and target together), the replicas being added and those being
removed. --format json prints them as one document.`,
		Example: `  samsa topic reassignments
  samsa topic reassignments orders --format json`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := newClient(g, kgo.MetadataMinAge(50*time.Millisecond))
			if err != nil {
				return err
			}
			defer cl.Close()
			ctx := cmd.Context()
			req := kmsg.NewPtrListPartitionReassignmentsRequest()
			if len(args) > 0 {
				// The request names partitions, so look them up.
				td, err := kadm.NewClient(cl).ListTopics(ctx, args...)
				if err != nil {
					return fmt.Errorf("list reassignments: %w", err)
				}
				for _, t := range td.Sorted() {
					if t.Err != nil {
						return fmt.Errorf("list reassignments of %s: %w", t.Topic, t.Err)
					}
					rt := kmsg.NewListPartitionReassignmentsRequestTopic()
					rt.Topic = t.Topic
					for _, p := range t.Partitions.Sorted() {
						rt.Partitions = append(rt.Partitions, p.Partition)
					}
					req.Topics = append(req.Topics, rt)
				}
			}
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				return fmt.Errorf("list reassignments: %w", err)
			}
			if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
				return fmt.Errorf("list reassignments: %w", err)
			}
			if format.json() {
				type reassignmentJSON struct {
					Topic     string  `json:"topic"`
					Partition int32   `json:"partition"`
					Replicas  []int32 `json:"replicas"`
					Adding    []int32 `json:"adding"`
					Removing  []int32 `json:"removing"`
				}
				out := []reassignmentJSON{}
				for _, rt := range resp.Topics {
					for _, rp := range rt.Partitions {
						out = append(out, reassignmentJSON{rt.Topic, rp.Partition,
							nonNil(rp.Replicas), nonNil(rp.AddingReplicas), nonNil(rp.RemovingReplicas)})
					}
				}
				return writeJSON(e.stdout, struct {
					Reassignments []reassignmentJSON `json:"reassignments"`
				}{out})
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "TOPIC\tPARTITION\tREPLICAS\tADDING\tREMOVING")
			for _, rt := range resp.Topics {
				for _, rp := range rt.Partitions {
					fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", rt.Topic, rp.Partition,
						dash(int32s(rp.Replicas)), dash(int32s(rp.AddingReplicas)), dash(int32s(rp.RemovingReplicas)))
				}
			}
			return tw.Flush()
		},
	}
	addFormatFlag(cmd, &format)
	return cmd
}

// dash stands in for an empty table cell.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
