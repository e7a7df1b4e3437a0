package cli

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func newTopicCmd(g *globals, e env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "topic",
		Short: "Create, list, describe, alter and delete topics",
		Long: `Topic administration through the Kafka admin API (CreateTopics,
Metadata, ListOffsets, DescribeConfigs, IncrementalAlterConfigs,
DeleteTopics, AlterPartitionReassignments, ListPartitionReassignments,
CreatePartitions, DeleteRecords).`,
		Example: `  samsa topic create orders --partitions 6 --config retention.ms=86400000
  samsa topic list
  samsa topic describe orders
  samsa topic alter-config orders --set cleanup.policy=compact --delete retention.ms
  samsa topic delete orders
  samsa topic reassign orders --partition 0 --replicas 1,2
  samsa topic reassignments
  samsa topic add-partitions orders --count 12
  samsa topic delete-records orders --partition 0 --offset 1000`,
		Args: noArgs,
		RunE: helpRun,
	}
	cmd.AddCommand(
		newTopicCreateCmd(g, e),
		newTopicListCmd(g, e),
		newTopicDescribeCmd(g, e),
		newTopicDeleteCmd(g, e),
		newTopicAlterConfigCmd(g, e),
		newTopicReassignCmd(g, e),
		newTopicReassignmentsCmd(g, e),
		newTopicAddPartitionsCmd(g, e),
		newTopicDeleteRecordsCmd(g, e),
	)
	return cmd
}

// parseKV parses "k=v" entries as a flag named flag gives them.
func parseKV(flag string, kvs []string) (map[string]string, error) {
	out := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usagef("--%s %q: want key=value", flag, kv)
		}
		out[k] = v
	}
	return out, nil
}

func newTopicCreateCmd(g *globals, e env) *cobra.Command {
	var (
		partitions int32
		rf         int16
		configs    []string
	)
	cmd := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a topic",
		Long: `Create a topic with the given number of partitions, replication factor
and topic configs. -1 for either number uses the broker's default
(num.partitions, default.replication.factor).`,
		Example: `  samsa topic create orders --partitions 6 --replication-factor 3
  samsa topic create events --config cleanup.policy=compact --config min.insync.replicas=2`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			kv, err := parseKV("config", configs)
			if err != nil {
				return err
			}
			cfg := make(map[string]*string, len(kv))
			for k, v := range kv {
				cfg[k] = &v
			}
			adm, err := newAdmin(g)
			if err != nil {
				return err
			}
			defer adm.Close()
			resp, err := adm.CreateTopic(cmd.Context(), partitions, rf, cfg, args[0])
			if err != nil {
				return fmt.Errorf("create topic %s: %w", args[0], withMessage(err, resp.ErrMessage))
			}
			fmt.Fprintf(e.stdout, "created topic %s (partitions %d, replication factor %d)\n",
				resp.Topic, resp.NumPartitions, resp.ReplicationFactor)
			return nil
		},
	}
	cmd.Flags().Int32VarP(&partitions, "partitions", "p", -1, "number of partitions (-1: broker default)")
	cmd.Flags().Int16VarP(&rf, "replication-factor", "r", -1, "replicas per partition (-1: broker default)")
	cmd.Flags().StringArrayVarP(&configs, "config", "c", nil, "topic config key=value (repeatable)")
	return cmd
}

// withMessage appends a broker's error message to err when there is one.
func withMessage(err error, msg string) error {
	if msg == "" || msg == err.Error() {
		return err
	}
	return fmt.Errorf("%w: %s", err, msg)
}

func newTopicListCmd(g *globals, e env) *cobra.Command {
	var (
		internal bool
		format   outputFormat
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List topics",
		Long: `List the topics of the cluster, one per line, sorted by name, with their
partition count.`,
		Example: `  samsa topic list
  samsa topic list --internal --format json`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			adm, err := newAdmin(g)
			if err != nil {
				return err
			}
			defer adm.Close()
			var td kadm.TopicDetails
			if internal {
				td, err = adm.ListTopicsWithInternal(cmd.Context())
			} else {
				td, err = adm.ListTopics(cmd.Context())
			}
			if err != nil {
				return fmt.Errorf("list topics: %w", err)
			}
			if format.json() {
				type topicJSON struct {
					Topic      string `json:"topic"`
					ID         string `json:"id"`
					Partitions int    `json:"partitions"`
					Internal   bool   `json:"internal"`
				}
				out := []topicJSON{}
				for _, t := range td.Sorted() {
					out = append(out, topicJSON{t.Topic, topicIDString(t.ID), len(t.Partitions), t.IsInternal})
				}
				return writeJSON(e.stdout, struct {
					Topics []topicJSON `json:"topics"`
				}{out})
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "TOPIC\tPARTITIONS")
			for _, t := range td.Sorted() {
				fmt.Fprintf(tw, "%s\t%d\n", t.Topic, len(t.Partitions))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&internal, "internal", false, "include internal topics")
	addFormatFlag(cmd, &format)
	return cmd
}

func newTopicDescribeCmd(g *globals, e env) *cobra.Command {
	var (
		producers bool
		format    outputFormat
	)
	cmd := &cobra.Command{
		Use:   "describe NAME...",
		Short: "Show partitions, leaders, replicas, ISR, offsets and configs of topics",
		Long: `Describe topics: the topic id (URL-safe base64, as Kafka prints it), each
partition's leader, leader epoch, replicas, in-sync replicas, offline
replicas (those on brokers that are not registered, "-" when none), the
eligible leader replicas and last known ELR (KIP-966, "-" when none) and
log start/end offsets, and the topic configs that are set on the topic (not
inherited defaults; "(none)" when there are none). With --producers, also
each partition's active idempotent producers (DescribeProducers): producer
id, epoch, last sequence and last timestamp. --format json prints one
document with the same fields, a topic that could not be described
carrying its error.`,
		Example: `  samsa topic describe orders
  samsa topic describe orders payments
  samsa topic describe orders --producers
  samsa topic describe orders --format json`,
		Args: minArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			cl, err := newClient(g, kgo.MetadataMinAge(50*time.Millisecond))
			if err != nil {
				return err
			}
			adm := kadm.NewClient(cl)
			defer adm.Close()
			td, err := adm.ListTopics(ctx, args...)
			if err != nil {
				return fmt.Errorf("describe topics: %w", err)
			}
			var live []string
			var failed int
			for _, name := range args {
				t, ok := td[name]
				if !ok || t.Err != nil {
					failed++
					continue
				}
				live = append(live, name)
			}
			var starts, ends kadm.ListedOffsets
			var cfgs kadm.ResourceConfigs
			var elr elrSets
			if len(live) > 0 {
				if starts, err = adm.ListStartOffsets(ctx, live...); err != nil {
					return fmt.Errorf("list start offsets: %w", err)
				}
				if ends, err = adm.ListEndOffsets(ctx, live...); err != nil {
					return fmt.Errorf("list end offsets: %w", err)
				}
				// NB: a broker without DescribeConfigs still gets the
				// partition view; the config section is then left out.
				cfgs, _ = adm.DescribeTopicConfigs(ctx, live...)
				elr = describeELR(ctx, cl, live)
			}
			if format.json() {
				out := make([]topicDescJSON, 0, len(args))
				for _, name := range args {
					out = append(out, collectTopic(name, td, starts, ends, cfgs, elr))
				}
				if producers && len(live) > 0 {
					if err := collectProducers(ctx, adm, live, out); err != nil {
						return err
					}
				}
				if err := writeJSON(e.stdout, struct {
					Topics []topicDescJSON `json:"topics"`
				}{out}); err != nil {
					return err
				}
				if failed > 0 {
					return fmt.Errorf("%d of %d topics could not be described", failed, len(args))
				}
				return nil
			}
			for i, name := range args {
				if i > 0 {
					fmt.Fprintln(e.stdout)
				}
				t, ok := td[name]
				if !ok {
					fmt.Fprintf(e.stdout, "Topic: %s\tError: not returned by the broker\n", name)
					continue
				}
				if t.Err != nil {
					fmt.Fprintf(e.stdout, "Topic: %s\tError: %v\n", name, t.Err)
					continue
				}
				writeTopic(e, t, starts, ends, cfgs, elr)
			}
			if producers && len(live) > 0 {
				if err := writeProducers(ctx, e, adm, live); err != nil {
					return err
				}
			}
			if failed > 0 {
				return fmt.Errorf("%d of %d topics could not be described", failed, len(args))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&producers, "producers", false, "also list each partition's active idempotent producers")
	addFormatFlag(cmd, &format)
	return cmd
}

// topicDescJSON is one topic of `topic describe --format json`.
type topicDescJSON struct {
	Topic             string              `json:"topic"`
	ID                string              `json:"id,omitempty"`
	ReplicationFactor int                 `json:"replication_factor"`
	Configs           map[string]string   `json:"configs,omitempty"`
	Partitions        []partitionDescJSON `json:"partitions"`
	Error             string              `json:"error,omitempty"`
}

type partitionDescJSON struct {
	Partition       int32          `json:"partition"`
	Leader          int32          `json:"leader"`
	LeaderEpoch     int32          `json:"leader_epoch"`
	Replicas        []int32        `json:"replicas"`
	ISR             []int32        `json:"isr"`
	OfflineReplicas []int32        `json:"offline_replicas"`
	ELR             []int32        `json:"elr"`
	LastKnownELR    []int32        `json:"last_known_elr"`
	LogStart        *int64         `json:"log_start"`
	LogEnd          *int64         `json:"log_end"`
	Producers       []producerJSON `json:"producers,omitempty"`
	Error           string         `json:"error,omitempty"`
}

type producerJSON struct {
	ProducerID    int64 `json:"producer_id"`
	ProducerEpoch int16 `json:"producer_epoch"`
	LastSequence  int32 `json:"last_sequence"`
	LastTimestamp int64 `json:"last_timestamp"`
}

// collectTopic gathers one topic of `topic describe` for JSON.
func collectTopic(name string, td kadm.TopicDetails, starts, ends kadm.ListedOffsets, cfgs kadm.ResourceConfigs, elr elrSets) topicDescJSON {
	t, ok := td[name]
	if !ok {
		return topicDescJSON{Topic: name, Partitions: []partitionDescJSON{}, Error: "not returned by the broker"}
	}
	if t.Err != nil {
		return topicDescJSON{Topic: name, Partitions: []partitionDescJSON{}, Error: t.Err.Error()}
	}
	out := topicDescJSON{Topic: name, ID: topicIDString(t.ID), Partitions: []partitionDescJSON{}}
	if rc, err := cfgs.On(t.Topic, nil); err == nil && rc.Err == nil {
		out.Configs = map[string]string{}
		for _, c := range rc.Configs {
			if c.Source == kmsg.ConfigSourceDynamicTopicConfig {
				v := c.MaybeValue()
				if c.Sensitive {
					v = "(sensitive)"
				}
				out.Configs[c.Key] = v
			}
		}
	}
	offset := func(l kadm.ListedOffsets, p int32) *int64 {
		o, ok := l.Lookup(t.Topic, p)
		if !ok || o.Err != nil {
			return nil
		}
		return &o.Offset
	}
	for _, p := range t.Partitions.Sorted() {
		out.ReplicationFactor = max(out.ReplicationFactor, len(p.Replicas))
		out.Partitions = append(out.Partitions, partitionDescJSON{
			Partition:       p.Partition,
			Leader:          p.Leader,
			LeaderEpoch:     p.LeaderEpoch,
			Replicas:        nonNil(p.Replicas),
			ISR:             nonNil(p.ISR),
			OfflineReplicas: nonNil(p.OfflineReplicas),
			ELR:             nonNil(elr[t.Topic][p.Partition].elr),
			LastKnownELR:    nonNil(elr[t.Topic][p.Partition].lastKnown),
			LogStart:        offset(starts, p.Partition),
			LogEnd:          offset(ends, p.Partition),
			Error:           errString(p.Err),
		})
	}
	return out
}

// collectProducers adds the active producers of the topics' partitions to
// out.
func collectProducers(ctx context.Context, adm *kadm.Client, topics []string, out []topicDescJSON) error {
	set := make(kadm.TopicsSet)
	for _, t := range topics {
		set.Add(t)
	}
	described, err := adm.DescribeProducers(ctx, set)
	if err != nil {
		return fmt.Errorf("describe producers: %w", err)
	}
	for _, p := range described.SortedPartitions() {
		for i := range out {
			if out[i].Topic != p.Topic {
				continue
			}
			for j := range out[i].Partitions {
				pj := &out[i].Partitions[j]
				if pj.Partition != p.Partition {
					continue
				}
				if p.Err != nil {
					pj.Error = p.Err.Error()
					continue
				}
				for _, pr := range p.ActiveProducers.Sorted() {
					pj.Producers = append(pj.Producers, producerJSON{pr.ProducerID, pr.ProducerEpoch, pr.LastSequence, pr.LastTimestamp})
				}
			}
		}
	}
	return nil
}

// nonNil returns v, or an empty slice for nil, so JSON shows [] not null.
func nonNil[T any](v []T) []T {
	if v == nil {
		return []T{}
	}
	return v
}

// writeProducers prints the active producers of the topics' partitions.
func writeProducers(ctx context.Context, e env, adm *kadm.Client, topics []string) error {
	set := make(kadm.TopicsSet)
	for _, t := range topics {
		set.Add(t)
	}
	described, err := adm.DescribeProducers(ctx, set)
	if err != nil {
		return fmt.Errorf("describe producers: %w", err)
	}
	fmt.Fprintln(e.stdout)
	fmt.Fprintln(e.stdout, "Producers:")
	for _, p := range described.SortedPartitions() {
		if p.Err != nil {
			fmt.Fprintf(e.stdout, "\tTopic: %s\tPartition: %d\tError: %v\n", p.Topic, p.Partition, p.Err)
			continue
		}
		for _, pr := range p.ActiveProducers.Sorted() {
			fmt.Fprintf(e.stdout, "\tTopic: %s\tPartition: %d\tProducerId: %d\tEpoch: %d\tLastSequence: %d\tLastTimestamp: %d\n",
				p.Topic, p.Partition, pr.ProducerID, pr.ProducerEpoch, pr.LastSequence, pr.LastTimestamp)
		}
	}
	return nil
}

// writeTopic prints one topic of `topic describe`.
func writeTopic(e env, t kadm.TopicDetail, starts, ends kadm.ListedOffsets, cfgs kadm.ResourceConfigs, elr elrSets) {
	rf := 0
	for _, p := range t.Partitions {
		rf = max(rf, len(p.Replicas))
	}
	fmt.Fprintf(e.stdout, "Topic: %s\tID: %s\tPartitions: %d\tReplicationFactor: %d\n",
		t.Topic, topicIDString(t.ID), len(t.Partitions), rf)
	if rc, err := cfgs.On(t.Topic, nil); err == nil && rc.Err == nil {
		var set []string
		for _, c := range rc.Configs {
			if c.Source == kmsg.ConfigSourceDynamicTopicConfig {
				v := c.MaybeValue()
				if c.Sensitive {
					v = "(sensitive)"
				}
				set = append(set, c.Key+"="+v)
			}
		}
		sort.Strings(set)
		if len(set) == 0 {
			set = []string{"(none)"}
		}
		fmt.Fprintf(e.stdout, "Configs: %s\n", strings.Join(set, ","))
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PARTITION\tLEADER\tEPOCH\tREPLICAS\tISR\tOFFLINE\tELR\tLAST-KNOWN-ELR\tLOG-START\tLOG-END\tERROR")
	for _, p := range t.Partitions.Sorted() {
		sets := elr[t.Topic][p.Partition]
		fmt.Fprintf(tw, "%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			p.Partition, p.Leader, p.LeaderEpoch, int32s(p.Replicas), int32s(p.ISR), orDash(int32s(p.OfflineReplicas)),
			orDash(int32s(sets.elr)), orDash(int32s(sets.lastKnown)),
			offsetOf(starts, t.Topic, p.Partition), offsetOf(ends, t.Topic, p.Partition),
			errText(p.Err))
	}
	tw.Flush()
}

// topicIDString renders a topic id as Kafka's Uuid.toString does: URL-safe
// base64 without padding (kadm's String uses standard base64).
func topicIDString(id kadm.TopicID) string {
	return base64.RawURLEncoding.EncodeToString(id[:])
}

func offsetOf(l kadm.ListedOffsets, topic string, p int32) string {
	o, ok := l.Lookup(topic, p)
	if !ok || o.Err != nil {
		return "?"
	}
	return fmt.Sprint(o.Offset)
}

func int32s(v []int32) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ",")
}

func errText(err error) string {
	if err == nil {
		return "-"
	}
	return err.Error()
}

func newTopicDeleteCmd(g *globals, e env) *cobra.Command {
	return &cobra.Command{
		Use:   "delete NAME...",
		Short: "Delete topics",
		Long: `Delete topics and all their data. Each topic is reported on its own line;
the command fails if any topic could not be deleted.`,
		Example: `  samsa topic delete orders
  samsa topic delete old-1 old-2`,
		Args: minArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			adm, err := newAdmin(g)
			if err != nil {
				return err
			}
			defer adm.Close()
			resps, err := adm.DeleteTopics(cmd.Context(), args...)
			if err != nil {
				return fmt.Errorf("delete topics: %w", err)
			}
			var errs []error
			for _, name := range args {
				r, ok := resps[name]
				switch {
				case !ok:
					errs = append(errs, fmt.Errorf("delete topic %s: not in the response", name))
				case r.Err != nil:
					errs = append(errs, fmt.Errorf("delete topic %s: %w", name, withMessage(r.Err, r.ErrMessage)))
				default:
					fmt.Fprintf(e.stdout, "deleted topic %s\n", name)
				}
			}
			return errors.Join(errs...)
		},
	}
}

func newTopicAlterConfigCmd(g *globals, e env) *cobra.Command {
	var sets, dels []string
	cmd := &cobra.Command{
		Use:   "alter-config NAME",
		Short: "Set or delete topic configs",
		Long: `Change topic configs incrementally (IncrementalAlterConfigs): --set
replaces one config's value, --delete removes a config so that the
broker default applies again. Configs not named are left as they are.`,
		Example: `  samsa topic alter-config orders --set retention.ms=3600000
  samsa topic alter-config orders --set cleanup.policy=compact --delete retention.bytes`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			kv, err := parseKV("set", sets)
			if err != nil {
				return err
			}
			if len(kv) == 0 && len(dels) == 0 {
				return usagef("alter-config: nothing to do, give --set or --delete")
			}
			var alters []kadm.AlterConfig
			keys := make([]string, 0, len(kv))
			for k := range kv {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				v := kv[k]
				alters = append(alters, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: &v})
			}
			for _, k := range dels {
				if _, ok := kv[k]; ok {
					return usagef("alter-config: %s is both set and deleted", k)
				}
				alters = append(alters, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
			}
			adm, err := newAdmin(g)
			if err != nil {
				return err
			}
			defer adm.Close()
			resps, err := adm.AlterTopicConfigs(cmd.Context(), alters, args[0])
			if err != nil {
				return fmt.Errorf("alter configs of %s: %w", args[0], err)
			}
			r, err := resps.On(args[0], nil)
			if err != nil {
				return fmt.Errorf("alter configs of %s: %w", args[0], err)
			}
			if r.Err != nil {
				return fmt.Errorf("alter configs of %s: %w", args[0], withMessage(r.Err, r.ErrMessage))
			}
			fmt.Fprintf(e.stdout, "altered %d configs of topic %s\n", len(alters), args[0])
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&sets, "set", nil, "config key=value to set (repeatable)")
	cmd.Flags().StringArrayVar(&dels, "delete", nil, "config key to delete (repeatable)")
	return cmd
}

// elrSets are the eligible leader replicas (KIP-966) of each partition, by
// topic and partition.
type elrSets map[string]map[int32]struct{ elr, lastKnown []int32 }

// describeELR asks DescribeTopicPartitions for the ELR sets of topics,
// following its cursor. A broker that does not serve it, or any error,
// gives what was gathered so far: the sets then print as "-", as empty
// ones do.
func describeELR(ctx context.Context, cl *kgo.Client, topics []string) elrSets {
	out := elrSets{}
	req := kmsg.NewPtrDescribeTopicPartitionsRequest()
	for _, name := range topics {
		rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
		rt.Topic = name
		req.Topics = append(req.Topics, rt)
	}
	for {
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return out
		}
		for _, t := range resp.Topics {
			if t.Topic == nil || t.ErrorCode != 0 {
				continue
			}
			m := out[*t.Topic]
			if m == nil {
				m = map[int32]struct{ elr, lastKnown []int32 }{}
				out[*t.Topic] = m
			}
			for _, p := range t.Partitions {
				m[p.Partition] = struct{ elr, lastKnown []int32 }{p.EligibleLeaderReplicas, p.LastKnownELR}
			}
		}
		if resp.NextCursor == nil {
			return out
		}
		c := kmsg.NewDescribeTopicPartitionsRequestCursor()
		c.Topic, c.Partition = resp.NextCursor.Topic, resp.NextCursor.Partition
		req.Cursor = &c
	}
}
