package cli

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

func newClusterCmd(g *globals, e env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Describe the cluster and move partition leadership",
		Long: `Cluster administration through the Kafka admin API (Metadata,
ElectLeaders, DescribeConfigs, IncrementalAlterConfigs, DescribeLogDirs):
the cluster id, the controller and the registered brokers, leader
elections for partitions whose leader is not the one wanted, broker
configs, and the brokers' log dirs.`,
		Example: `  samsa cluster describe
  samsa cluster elect-leaders
  samsa cluster elect-leaders --topic orders --partition 0 --partition 3
  samsa cluster elect-leaders --type unclean --topic orders
  samsa cluster config describe
  samsa cluster log-dirs
  samsa cluster move-log-dir --broker 1 --dir /disk2/samsa --topic orders`,
		Args: noArgs,
		RunE: helpRun,
	}
	cmd.AddCommand(
		newClusterDescribeCmd(g, e),
		newClusterElectLeadersCmd(g, e),
		newClusterConfigCmd(g, e),
		newClusterLogDirsCmd(g, e),
		newClusterMoveLogDirCmd(g, e),
	)
	return cmd
}

func newClusterDescribeCmd(g *globals, e env) *cobra.Command {
	var format outputFormat
	cmd := &cobra.Command{
		Use:   "describe",
		Short: "Show the cluster id, the controller and the brokers",
		Long: `Describe the cluster as the broker answering the request sees it: the
cluster id, the node id of the controller (-1 while no broker holds the
controller election) and each registered broker's node id, Kafka address
and rack ("-" when none is set). A broker that is down or has not
registered yet is not listed.`,
		Example: `  samsa cluster describe
  samsa cluster describe -b 10.0.0.1:9092 --format json`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			adm, err := newAdmin(g)
			if err != nil {
				return err
			}
			defer adm.Close()
			m, err := adm.BrokerMetadata(cmd.Context())
			if err != nil {
				return fmt.Errorf("describe cluster: %w", err)
			}
			brokers := slices.Clone(m.Brokers)
			slices.SortFunc(brokers, func(a, b kadm.BrokerDetail) int { return int(a.NodeID) - int(b.NodeID) })
			if format.json() {
				type brokerJSON struct {
					NodeID int32   `json:"node_id"`
					Host   string  `json:"host"`
					Port   int32   `json:"port"`
					Rack   *string `json:"rack"`
				}
				out := struct {
					ClusterID  string       `json:"cluster_id"`
					Controller int32        `json:"controller"`
					Brokers    []brokerJSON `json:"brokers"`
				}{m.Cluster, m.Controller, []brokerJSON{}}
				for _, b := range brokers {
					out.Brokers = append(out.Brokers, brokerJSON{b.NodeID, b.Host, b.Port, b.Rack})
				}
				return writeJSON(e.stdout, out)
			}
			fmt.Fprintf(e.stdout, "Cluster: %s\tController: %d\tBrokers: %d\n",
				m.Cluster, m.Controller, len(m.Brokers))
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "BROKER\tADDRESS\tRACK\tCONTROLLER")
			for _, b := range brokers {
				rack := "-"
				if b.Rack != nil && *b.Rack != "" {
					rack = *b.Rack
				}
				ctl := "-"
				if b.NodeID == m.Controller {
					ctl = "yes"
				}
				fmt.Fprintf(tw, "%d\t%s:%d\t%s\t%s\n", b.NodeID, b.Host, b.Port, rack, ctl)
			}
			return tw.Flush()
		},
	}
	addFormatFlag(cmd, &format)
	return cmd
}

// electionTypes maps --type values to kadm's election kinds.
var electionTypes = map[string]kadm.ElectLeadersHow{
	"preferred": kadm.ElectPreferredReplica,
	"unclean":   kadm.ElectLiveReplica,
}

func newClusterElectLeadersCmd(g *globals, e env) *cobra.Command {
	var (
		how        string
		topic      string
		partitions []int
	)
	cmd := &cobra.Command{
		Use:   "elect-leaders",
		Short: "Elect partition leaders: the preferred replica, or any live one",
		Long: `Run leader elections (ElectLeaders, KIP-460). --type preferred (the
default) makes each partition's preferred replica, the first of its
replica list, the leader when it is alive, in the ISR and not already
leading; use it after a broker comes back to give it back the leadership
it lost. --type unclean elects a leader only for partitions without a live
leader: an in-sync replica when there is one, otherwise the first live
replica, which loses the records it lacks.

Without --topic every partition of the cluster is considered, and, as in
Kafka, only those that needed an election are listed. --topic limits the
elections to one topic and --partition (repeatable) to some of its
partitions. Each partition is printed with "elected" or the reason no
leader was elected; ELECTION_NOT_NEEDED is not a failure. The command
fails if any other error was reported.`,
		Example: `  samsa cluster elect-leaders
  samsa cluster elect-leaders --topic orders
  samsa cluster elect-leaders --topic orders --partition 0 --partition 3
  samsa cluster elect-leaders --type unclean --topic orders --partition 2`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			kind, ok := electionTypes[how]
			if !ok {
				return usagef("elect-leaders: --type %q: want preferred or unclean", how)
			}
			if len(partitions) > 0 && topic == "" {
				return usagef("elect-leaders: --partition needs --topic")
			}
			for _, p := range partitions {
				if p < 0 || p > math.MaxInt32 {
					return usagef("elect-leaders: --partition %d: want a partition number", p)
				}
			}
			ctx := cmd.Context()
			adm, err := newAdmin(g)
			if err != nil {
				return err
			}
			defer adm.Close()

			// NB: a nil set asks for every partition. A topic sent with an
			// empty partition list would ask for none, so a topic given
			// alone is expanded to its partitions first.
			var set kadm.TopicsSet
			if topic != "" {
				var ps []int32
				for _, p := range partitions {
					ps = append(ps, int32(p))
				}
				if len(ps) == 0 {
					td, err := adm.ListTopics(ctx, topic)
					if err != nil {
						return fmt.Errorf("elect leaders: describe %s: %w", topic, err)
					}
					t, ok := td[topic]
					switch {
					case !ok:
						return fmt.Errorf("elect leaders: topic %s: %w", topic, kerr.UnknownTopicOrPartition)
					case t.Err != nil:
						return fmt.Errorf("elect leaders: topic %s: %w", topic, t.Err)
					}
					for _, p := range t.Partitions.Sorted() {
						ps = append(ps, p.Partition)
					}
				}
				set = make(kadm.TopicsSet)
				set.Add(topic, ps...)
			}
			res, err := adm.ElectLeaders(ctx, kind, set)
			if err != nil {
				return fmt.Errorf("elect leaders: %w", err)
			}
			return writeElections(e, res)
		},
	}
	cmd.Flags().StringVar(&how, "type", "preferred", "election type: preferred or unclean")
	cmd.Flags().StringVarP(&topic, "topic", "t", "", "elect only for the partitions of topic `T` (default: every topic)")
	cmd.Flags().IntSliceVarP(&partitions, "partition", "p", nil, "elect only for partition `N` of --topic (repeatable, or comma-separated; default: every partition)")
	return cmd
}

// writeElections prints one line per partition of res, sorted by topic and
// partition, and returns an error naming how many elections failed for a
// reason other than ELECTION_NOT_NEEDED.
func writeElections(e env, res kadm.ElectLeadersResults) error {
	var rs []kadm.ElectLeadersResult
	for _, ps := range res {
		for _, r := range ps {
			rs = append(rs, r)
		}
	}
	slices.SortFunc(rs, func(a, b kadm.ElectLeadersResult) int {
		if a.Topic != b.Topic {
			if a.Topic < b.Topic {
				return -1
			}
			return 1
		}
		return int(a.Partition) - int(b.Partition)
	})
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tPARTITION\tRESULT")
	failed := 0
	for _, r := range rs {
		result := "elected"
		if r.Err != nil {
			result = electionError(r)
			if !errors.Is(r.Err, kerr.ElectionNotNeeded) {
				failed++
			}
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\n", r.Topic, r.Partition, result)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if failed > 0 {
		return fmt.Errorf("elect leaders: %d of %d partitions failed", failed, len(rs))
	}
	return nil
}

// electionError names why r elected no leader: the Kafka error name and the
// broker's message, without kerr's generic description of the code.
func electionError(r kadm.ElectLeadersResult) string {
	var ke *kerr.Error
	if !errors.As(r.Err, &ke) {
		return withMessage(r.Err, r.ErrMessage).Error()
	}
	if r.ErrMessage == "" {
		return ke.Message
	}
	return ke.Message + ": " + r.ErrMessage
}
