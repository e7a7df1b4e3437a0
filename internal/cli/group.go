package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

func newGroupCmd(g *globals, e env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "group",
		Short: "List, describe, delete consumer groups, reset their offsets, set their configs",
		Long: `Consumer group administration through the Kafka admin API (ListGroups,
DescribeGroups, OffsetFetch, ListOffsets, OffsetCommit, DeleteGroups), and
per-group configs (DescribeConfigs, IncrementalAlterConfigs on GROUP).`,
		Example: `  samsa group list
  samsa group describe billing
  samsa group reset-offsets billing --topic orders --to-earliest --execute
  samsa group delete billing
  samsa group config set billing consumer.session.timeout.ms=50000`,
		Args: noArgs,
		RunE: helpRun,
	}
	cmd.AddCommand(
		newGroupListCmd(g, e),
		newGroupDescribeCmd(g, e),
		newGroupDeleteCmd(g, e),
		newGroupResetOffsetsCmd(g, e),
		newGroupConfigCmd(g, e),
	)
	return cmd
}

func newGroupListCmd(g *globals, e env) *cobra.Command {
	var format outputFormat
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List consumer groups with their state and protocol type",
		Long: `List the groups every broker coordinates, one per line, sorted by name,
with the group state (Empty, PreparingRebalance, CompletingRebalance,
Stable, Dead) and protocol type ("consumer" for Kafka consumers).`,
		Example: `  samsa group list
  samsa group list --format json`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			adm, err := newAdmin(g)
			if err != nil {
				return err
			}
			defer adm.Close()
			groups, err := adm.ListGroups(cmd.Context())
			if err != nil {
				return fmt.Errorf("list groups: %w", err)
			}
			if format.json() {
				type groupJSON struct {
					Group        string `json:"group"`
					State        string `json:"state"`
					ProtocolType string `json:"protocol_type"`
					Coordinator  int32  `json:"coordinator"`
				}
				out := []groupJSON{}
				for _, l := range groups.Sorted() {
					out = append(out, groupJSON{l.Group, l.State, l.ProtocolType, l.Coordinator})
				}
				return writeJSON(e.stdout, struct {
					Groups []groupJSON `json:"groups"`
				}{out})
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "GROUP\tSTATE\tPROTOCOL-TYPE")
			for _, l := range groups.Sorted() {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", l.Group, orDash(l.State), orDash(l.ProtocolType))
			}
			return tw.Flush()
		},
	}
	addFormatFlag(cmd, &format)
	return cmd
}

// orDash returns s, or "-" when s is empty, for table cells.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// topicPartition names one partition of a topic.
type topicPartition struct {
	topic     string
	partition int32
}

// sortTopicPartitions orders tps by topic, then partition.
func sortTopicPartitions(tps []topicPartition) {
	sort.Slice(tps, func(i, j int) bool {
		if tps[i].topic != tps[j].topic {
			return tps[i].topic < tps[j].topic
		}
		return tps[i].partition < tps[j].partition
	})
}

// formatAssignment renders a consumer protocol assignment as
// "topic[0,1] other[3]", topics sorted by name, partitions ascending.
func formatAssignment(topics map[string][]int32) string {
	if len(topics) == 0 {
		return "-"
	}
	names := make([]string, 0, len(topics))
	for t := range topics {
		names = append(names, t)
	}
	sort.Strings(names)
	var b strings.Builder
	for i, t := range names {
		if i > 0 {
			b.WriteByte(' ')
		}
		ps := append([]int32(nil), topics[t]...)
		sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
		b.WriteString(t)
		b.WriteByte('[')
		for j, p := range ps {
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Itoa(int(p)))
		}
		b.WriteByte(']')
	}
	return b.String()
}

// memberAssignment decodes m's assignment under the consumer protocol into
// topic -> partitions. It returns nil when the group is not a consumer
// group or the member has no assignment yet.
func memberAssignment(m kadm.DescribedGroupMember) map[string][]int32 {
	ca, ok := m.Assigned.AsConsumer()
	if !ok || ca == nil {
		return nil
	}
	out := make(map[string][]int32, len(ca.Topics))
	for _, t := range ca.Topics {
		out[t.Topic] = append(out[t.Topic], t.Partitions...)
	}
	return out
}

func newGroupDescribeCmd(g *globals, e env) *cobra.Command {
	var (
		all    bool
		format outputFormat
	)
	cmd := &cobra.Command{
		Use:   "describe GROUP...",
		Short: "Show state, members, assignments, committed offsets and lag of groups",
		Long: `Describe consumer groups: the state, protocol type and protocol
(the assignor the members agreed on), each member with its member id,
group instance id (static membership), client id and host and the
partitions assigned to it (decoded from the consumer protocol), and per
partition of every topic that is assigned or has a committed offset: the
committed offset, the log end offset, the lag between them and the member
that owns the partition. A partition without a committed offset shows "-"
for the offset and the lag. --all describes every group of the cluster,
as kafka-consumer-groups.sh --describe --all-groups does. Fails if any
group could not be described (the others are still printed).`,
		Example: `  samsa group describe billing
  samsa group describe billing audit
  samsa group describe --all --format json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if all && len(args) > 0 {
				return usageIn(cmd, fmt.Errorf("give group names or --all, not both"))
			}
			if !all && len(args) == 0 {
				return usageIn(cmd, fmt.Errorf("requires at least 1 arg(s), or --all"))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			adm, err := newAdmin(g)
			if err != nil {
				return err
			}
			defer adm.Close()
			if all {
				listed, err := adm.ListGroups(ctx)
				if err != nil {
					return fmt.Errorf("list groups: %w", err)
				}
				args = listed.Groups()
				sort.Strings(args)
				if len(args) == 0 {
					if format.json() {
						return writeJSON(e.stdout, struct {
							Groups []groupJSON `json:"groups"`
						}{[]groupJSON{}})
					}
					fmt.Fprintln(e.stdout, "(no groups)")
					return nil
				}
			}
			described, err := adm.DescribeGroups(ctx, args...)
			if err != nil && len(described) == 0 {
				return fmt.Errorf("describe groups: %w", err)
			}
			var failed int
			out := make([]groupJSON, 0, len(args))
			for _, name := range args {
				d, ok := described[name]
				if !ok || d.Err != nil {
					failed++
					why := "not returned by the broker"
					if ok {
						why = d.Err.Error()
					}
					out = append(out, groupJSON{Group: name, Error: why})
					continue
				}
				gj, err := collectGroup(ctx, adm, d)
				if err != nil {
					failed++
					gj.Error = err.Error()
				}
				out = append(out, gj)
			}
			if format.json() {
				if err := writeJSON(e.stdout, struct {
					Groups []groupJSON `json:"groups"`
				}{out}); err != nil {
					return err
				}
			} else {
				for i, gj := range out {
					if i > 0 {
						fmt.Fprintln(e.stdout)
					}
					if err := writeGroup(e.stdout, gj); err != nil {
						return err
					}
				}
			}
			if failed > 0 {
				return fmt.Errorf("%d of %d groups could not be described", failed, len(args))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "describe every group of the cluster")
	addFormatFlag(cmd, &format)
	return cmd
}

// groupJSON is one group of `group describe`, and its JSON form.
type groupJSON struct {
	Group        string            `json:"group"`
	State        string            `json:"state,omitempty"`
	ProtocolType string            `json:"protocol_type,omitempty"`
	Protocol     string            `json:"protocol,omitempty"`
	Coordinator  int32             `json:"coordinator"`
	Members      []groupMemberJSON `json:"members"`
	Offsets      []groupOffsetJSON `json:"offsets"`
	Error        string            `json:"error,omitempty"`
	described    bool              // the header and members are known
}

type groupMemberJSON struct {
	MemberID   string             `json:"member_id"`
	InstanceID *string            `json:"instance_id"`
	ClientID   string             `json:"client_id"`
	Host       string             `json:"host"`
	Assignment map[string][]int32 `json:"assignment"`
}

// groupOffsetJSON is one partition's committed offset and lag; nil
// fields are unknown (no commit, no log end offset).
type groupOffsetJSON struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Committed *int64  `json:"committed"`
	LogEnd    *int64  `json:"log_end"`
	Lag       *int64  `json:"lag"`
	Member    *string `json:"member"`
}

// collectGroup gathers one described group's members, committed offsets,
// log end offsets and lag. On an error the result still holds the header
// and members.
func collectGroup(ctx context.Context, adm *kadm.Client, d kadm.DescribedGroup) (groupJSON, error) {
	gj := groupJSON{Group: d.Group, State: d.State, ProtocolType: d.ProtocolType, Protocol: d.Protocol,
		Coordinator: d.Coordinator.NodeID, Members: []groupMemberJSON{}, Offsets: []groupOffsetJSON{}, described: true}
	owner := make(map[topicPartition]string)
	members := append([]kadm.DescribedGroupMember(nil), d.Members...)
	sort.Slice(members, func(i, j int) bool { return members[i].MemberID < members[j].MemberID })
	for _, m := range members {
		assigned := memberAssignment(m)
		for t, ps := range assigned {
			for _, p := range ps {
				owner[topicPartition{t, p}] = m.MemberID
			}
		}
		if assigned == nil {
			assigned = map[string][]int32{}
		}
		gj.Members = append(gj.Members, groupMemberJSON{m.MemberID, m.InstanceID, m.ClientID, m.ClientHost, assigned})
	}

	committed, err := adm.FetchOffsets(ctx, d.Group)
	if err != nil {
		return gj, fmt.Errorf("fetch offsets of group %s: %w", d.Group, err)
	}
	if err := committed.Error(); err != nil {
		return gj, fmt.Errorf("fetch offsets of group %s: %w", d.Group, err)
	}
	seen := make(map[topicPartition]bool)
	var tps []topicPartition
	add := func(tp topicPartition) {
		if !seen[tp] {
			seen[tp] = true
			tps = append(tps, tp)
		}
	}
	committed.Each(func(o kadm.OffsetResponse) { add(topicPartition{o.Topic, o.Partition}) })
	for tp := range owner {
		add(tp)
	}
	sortTopicPartitions(tps)

	var ends kadm.ListedOffsets
	if len(tps) > 0 {
		topics := make([]string, 0, len(tps))
		for i, tp := range tps {
			if i == 0 || tps[i-1].topic != tp.topic {
				topics = append(topics, tp.topic)
			}
		}
		ends, err = adm.ListEndOffsets(ctx, topics...)
		if err != nil {
			return gj, fmt.Errorf("list end offsets: %w", err)
		}
	}
	for _, tp := range tps {
		oj := groupOffsetJSON{Topic: tp.topic, Partition: tp.partition}
		o, hasCommit := committed.Lookup(tp.topic, tp.partition)
		if hasCommit && o.At >= 0 {
			at := o.At
			oj.Committed = &at
		}
		if l, ok := ends.Lookup(tp.topic, tp.partition); ok && l.Err == nil {
			end := l.Offset
			oj.LogEnd = &end
			if oj.Committed != nil {
				lag := max(end-*oj.Committed, 0)
				oj.Lag = &lag
			}
		}
		if m, ok := owner[tp]; ok {
			oj.Member = &m
		}
		gj.Offsets = append(gj.Offsets, oj)
	}
	return gj, nil
}

// writeGroup prints one group as text: header, members and offsets.
func writeGroup(w io.Writer, gj groupJSON) error {
	if !gj.described {
		_, err := fmt.Fprintf(w, "Group: %s\tError: %s\n", gj.Group, gj.Error)
		return err
	}
	fmt.Fprintf(w, "Group: %s\tState: %s\tProtocolType: %s\tProtocol: %s\tCoordinator: %d\n",
		gj.Group, orDash(gj.State), orDash(gj.ProtocolType), orDash(gj.Protocol), gj.Coordinator)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MEMBER-ID\tINSTANCE-ID\tCLIENT-ID\tHOST\tASSIGNMENT")
	for _, m := range gj.Members {
		instance := "-"
		if m.InstanceID != nil {
			instance = *m.InstanceID
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", m.MemberID, instance, orDash(m.ClientID),
			orDash(m.Host), formatAssignment(m.Assignment))
	}
	if len(gj.Members) == 0 {
		fmt.Fprintln(tw, "(no members)\t\t\t\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if gj.Error != "" {
		_, err := fmt.Fprintf(w, "Error: %s\n", gj.Error)
		return err
	}
	fmt.Fprintln(w)
	num := func(v *int64) string {
		if v == nil {
			return "-"
		}
		return strconv.FormatInt(*v, 10)
	}
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tPARTITION\tCOMMITTED\tLOG-END\tLAG\tMEMBER")
	for _, o := range gj.Offsets {
		member := "-"
		if o.Member != nil {
			member = *o.Member
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\n", o.Topic, o.Partition, num(o.Committed), num(o.LogEnd), num(o.Lag), member)
	}
	return tw.Flush()
}

func newGroupDeleteCmd(g *globals, e env) *cobra.Command {
	return &cobra.Command{
		Use:   "delete GROUP...",
		Short: "Delete consumer groups and their committed offsets",
		Long: `Delete groups (DeleteGroups) with all their committed offsets. Only a
group without members (state Empty) can be deleted; the broker refuses a
group that has members with NON_EMPTY_GROUP. Fails if any named group
could not be deleted (the others are still deleted).`,
		Example: `  samsa group delete billing
  samsa group delete billing audit`,
		Args: minArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			adm, err := newAdmin(g)
			if err != nil {
				return err
			}
			defer adm.Close()
			resp, err := adm.DeleteGroups(cmd.Context(), args...)
			if err != nil && len(resp) == 0 {
				return fmt.Errorf("delete groups: %w", err)
			}
			var errs []error
			for _, name := range args {
				r, ok := resp[name]
				switch {
				case !ok:
					errs = append(errs, fmt.Errorf("delete group %s: not returned by the broker", name))
				case r.Err != nil:
					errs = append(errs, fmt.Errorf("delete group %s: %w", name, r.Err))
				default:
					fmt.Fprintf(e.stdout, "deleted group %s\n", name)
				}
			}
			if len(errs) == 1 && len(args) == 1 {
				return errs[0]
			}
			if len(errs) > 0 {
				for _, err := range errs {
					fmt.Fprintf(e.stderr, "%s\n", err)
				}
				return fmt.Errorf("%d of %d groups could not be deleted", len(errs), len(args))
			}
			return nil
		},
	}
}

// resetSpec is the target of a reset-offsets run: exactly one of the
// --to-* or --shift-by flags.
type resetSpec struct {
	earliest, latest bool
	toOffset         int64
	toTimestamp      int64
	shiftBy          int64
	// set records which of the valued flags were given.
	offsetSet, timestampSet, shiftSet bool
}

// validate checks that exactly one target is named.
func (s resetSpec) validate() error {
	n := 0
	for _, b := range []bool{s.earliest, s.latest, s.offsetSet, s.timestampSet, s.shiftSet} {
		if b {
			n++
		}
	}
	switch {
	case n == 0:
		return usagef("give one of --to-earliest, --to-latest, --to-offset, --to-timestamp, --shift-by")
	case n > 1:
		return usagef("--to-earliest, --to-latest, --to-offset, --to-timestamp and --shift-by exclude each other")
	case s.offsetSet && s.toOffset < 0:
		return usagef("--to-offset %d: want an offset >= 0", s.toOffset)
	case s.timestampSet && s.toTimestamp < 0:
		return usagef("--to-timestamp %d: want milliseconds since the epoch >= 0", s.toTimestamp)
	}
	return nil
}

// resetBounds is what the target of one partition is computed from.
type resetBounds struct {
	current      int64 // committed offset, -1 when none
	start, end   int64 // log start and end offsets
	atTimestamp  int64 // first offset at or after --to-timestamp, -1 when none
	hasTimestamp bool
}

// target returns the new committed offset for one partition, clamped to
// [start, end] as Kafka's tool does, and the unclamped offset it asked
// for. A partition without a committed offset shifts from its log start
// offset.
func (s resetSpec) target(b resetBounds) (n, asked int64) {
	switch {
	case s.earliest:
		n = b.start
	case s.latest:
		n = b.end
	case s.offsetSet:
		n = s.toOffset
	case s.timestampSet:
		n = b.end
		if b.hasTimestamp && b.atTimestamp >= 0 {
			n = b.atTimestamp
		}
	case s.shiftSet:
		base := b.current
		if base < 0 {
			base = b.start
		}
		n = base + s.shiftBy
	}
	return min(max(n, b.start), b.end), n
}

// errGroupActive is returned by group reset-offsets when the group has
// members: offsets of a live group are owned by its consumers.
var errGroupActive = errors.New("cli: group has active members")

func newGroupResetOffsetsCmd(g *globals, e env) *cobra.Command {
	var (
		spec      resetSpec
		topic     string
		partition int32
		dryRun    bool
		execute   bool
		shareG    bool
	)
	cmd := &cobra.Command{
		Use:   "reset-offsets GROUP",
		Short: "Move the committed offsets of a group on a topic",
		Long: `Compute new committed offsets for a group on the partitions of --topic
(or only --partition) and print the plan: topic, partition, current
committed offset ("-" when none) and new offset. Nothing changes unless
--execute is given; --dry-run, the default, only prints. The target is one
of --to-earliest (log start offset), --to-latest (log end offset),
--to-offset N, --to-timestamp MS (first offset whose timestamp is at or
after MS, or the log end offset when there is none) or --shift-by N
(current offset plus N, negative to move back; a partition without a
committed offset shifts from its log start offset). Targets are clamped to
the partition's [log start, log end] range; each clamped target is named
on stderr.

The group must have no members (state Empty, or Dead for a group that
does not exist yet): the command refuses, exit code 1, while consumers
are in the group, since they would overwrite the new offsets.

With --share the group is a share group (KIP-932, queues): the offsets
moved are its share-partition start offsets (CURRENT is "-" for a
partition it has no state for), set with AlterShareGroupOffsets, which
also drops the delivery state of the records in flight; a share group
that does not exist yet is created empty with the new offsets. The
broker refuses a share group with members (NON_EMPTY_GROUP).`,
		Example: `  samsa group reset-offsets billing --topic orders --to-earliest
  samsa group reset-offsets billing --topic orders --to-earliest --execute
  samsa group reset-offsets billing --topic orders --partition 2 --to-offset 1500 --execute
  samsa group reset-offsets billing --topic orders --to-timestamp 1700000000000 --execute
  samsa group reset-offsets billing --topic orders --shift-by -100 --execute
  samsa group reset-offsets jobs --share --topic tasks --to-earliest --execute`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f := cmd.Flags()
			spec.offsetSet = f.Changed("to-offset")
			spec.timestampSet = f.Changed("to-timestamp")
			spec.shiftSet = f.Changed("shift-by")
			if err := spec.validate(); err != nil {
				return usageIn(cmd, err)
			}
			if topic == "" {
				return usageIn(cmd, usagef("--topic is required"))
			}
			if dryRun && execute {
				return usageIn(cmd, usagef("--dry-run and --execute exclude each other"))
			}
			var only *int32
			if f.Changed("partition") {
				if partition < 0 {
					return usageIn(cmd, usagef("--partition %d: want a partition >= 0", partition))
				}
				only = &partition
			}
			return resetOffsets(cmd.Context(), g, e, args[0], topic, only, spec, execute, shareG)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&topic, "topic", "t", "", "topic whose offsets to reset (required)")
	f.Int32VarP(&partition, "partition", "p", -1, "reset only this partition (-1: every partition of --topic)")
	f.BoolVar(&spec.earliest, "to-earliest", false, "reset to the log start offset")
	f.BoolVar(&spec.latest, "to-latest", false, "reset to the log end offset")
	f.Int64Var(&spec.toOffset, "to-offset", 0, "reset to this offset")
	f.Int64Var(&spec.toTimestamp, "to-timestamp", 0, "reset to the first offset at or after this timestamp (ms since the epoch)")
	f.Int64Var(&spec.shiftBy, "shift-by", 0, "move the committed offset by N (negative: back)")
	f.BoolVar(&dryRun, "dry-run", false, "only print the plan (the default)")
	f.BoolVar(&execute, "execute", false, "commit the new offsets")
	f.BoolVar(&shareG, "share", false, "GROUP is a share group: move its share-partition start offsets")
	return cmd
}

// resetOffsets plans, prints and, with execute, commits new offsets for
// group on topic (share: the start offsets of a share group).
func resetOffsets(ctx context.Context, g *globals, e env, group, topic string, only *int32, spec resetSpec, execute, share bool) error {
	adm, err := newAdmin(g)
	if err != nil {
		return err
	}
	defer adm.Close()

	var current func(p int32) int64
	if share {
		if current, err = shareGroupOffsets(ctx, adm, group, topic); err != nil {
			return err
		}
	} else if current, err = groupOffsets(ctx, adm, group, topic); err != nil {
		return err
	}
	return planAndReset(ctx, adm, e, group, topic, only, spec, execute, share, current)
}

// shareGroupOffsets checks that the share group has no members and
// returns its start offsets on topic (-1: none).
func shareGroupOffsets(ctx context.Context, adm *kadm.Client, group, topic string) (func(int32) int64, error) {
	described, err := adm.DescribeShareGroups(ctx, group)
	if err != nil {
		return nil, fmt.Errorf("describe share group %s: %w", group, err)
	}
	d, ok := described[group]
	if !ok {
		return nil, fmt.Errorf("describe share group %s: not returned by the broker", group)
	}
	if d.Err != nil && !errors.Is(d.Err, kerr.GroupIDNotFound) {
		return nil, fmt.Errorf("describe share group %s: %w", group, d.Err)
	}
	if d.Err == nil && len(d.Members) > 0 {
		return nil, fmt.Errorf("%w: share group %s is %s with %d members; stop its consumers first",
			errGroupActive, group, d.GroupState, len(d.Members))
	}
	var offsets kadm.ShareOffsets
	if d.Err == nil {
		do, err := adm.DescribeShareGroupOffsets(ctx, group)
		if err != nil {
			return nil, fmt.Errorf("describe offsets of share group %s: %w", group, err)
		}
		o := do[group]
		if o.Err != nil && !errors.Is(o.Err, kerr.GroupIDNotFound) {
			return nil, fmt.Errorf("describe offsets of share group %s: %w", group, o.Err)
		}
		offsets = o.Offsets
	}
	return func(p int32) int64 {
		if o, ok := offsets.Lookup(topic, p); ok && o.Err == nil && o.StartOffset >= 0 {
			return o.StartOffset
		}
		return -1
	}, nil
}

// groupOffsets checks that the group has no members and returns its
// committed offsets on topic (-1: none).
func groupOffsets(ctx context.Context, adm *kadm.Client, group, topic string) (func(int32) int64, error) {
	described, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		return nil, fmt.Errorf("describe group %s: %w", group, err)
	}
	d, ok := described[group]
	if !ok {
		return nil, fmt.Errorf("describe group %s: not returned by the broker", group)
	}
	if d.Err != nil && !errors.Is(d.Err, kerr.GroupIDNotFound) {
		return nil, fmt.Errorf("describe group %s: %w", group, d.Err)
	}
	if d.Err == nil && d.State != "Empty" && d.State != "Dead" {
		return nil, fmt.Errorf("%w: group %s is %s with %d members; stop its consumers first",
			errGroupActive, group, d.State, len(d.Members))
	}
	committed, err := adm.FetchOffsetsForTopics(ctx, group, topic)
	if err != nil {
		return nil, fmt.Errorf("fetch offsets of group %s: %w", group, err)
	}
	return func(p int32) int64 {
		if o, ok := committed.Lookup(topic, p); ok && o.Err == nil && o.At >= 0 {
			return o.At
		}
		return -1
	}, nil
}

// planAndReset computes each partition's target from its current offset
// and the log's bounds, prints the plan and, with execute, sets it.
func planAndReset(ctx context.Context, adm *kadm.Client, e env, group, topic string, only *int32, spec resetSpec, execute, share bool, current func(int32) int64) error {
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		return fmt.Errorf("list start offsets of %s: %w", topic, err)
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return fmt.Errorf("list end offsets of %s: %w", topic, err)
	}
	var atTS kadm.ListedOffsets
	if spec.timestampSet {
		if atTS, err = adm.ListOffsetsAfterMilli(ctx, spec.toTimestamp, topic); err != nil {
			return fmt.Errorf("list offsets of %s at %d: %w", topic, spec.toTimestamp, err)
		}
	}
	var parts []int32
	for p, l := range starts[topic] {
		if l.Err != nil {
			return fmt.Errorf("topic %s partition %d: %w", topic, p, l.Err)
		}
		if only == nil || *only == p {
			parts = append(parts, p)
		}
	}
	if len(parts) == 0 {
		if only != nil {
			return fmt.Errorf("topic %s has no partition %d", topic, *only)
		}
		return fmt.Errorf("topic %s has no partitions", topic)
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })

	plan := make(kadm.Offsets)
	var clamped []string
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tPARTITION\tCURRENT\tNEW")
	for _, p := range parts {
		s, _ := starts.Lookup(topic, p)
		en, ok := ends.Lookup(topic, p)
		if !ok || en.Err != nil {
			return fmt.Errorf("topic %s partition %d: no log end offset", topic, p)
		}
		b := resetBounds{current: current(p), start: s.Offset, end: en.Offset, atTimestamp: -1}
		if t, ok := atTS.Lookup(topic, p); ok && t.Err == nil {
			b.atTimestamp, b.hasTimestamp = t.Offset, true
		}
		n, asked := spec.target(b)
		if n != asked {
			bound := "log end"
			if asked < n {
				bound = "log start"
			}
			clamped = append(clamped, fmt.Sprintf("%s-%d: %d clamped to the %s offset %d", topic, p, asked, bound, n))
		}
		cur := "-"
		if b.current >= 0 {
			cur = strconv.FormatInt(b.current, 10)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\n", topic, p, cur, n)
		plan.Add(kadm.Offset{Topic: topic, Partition: p, At: n, LeaderEpoch: -1})
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, c := range clamped {
		fmt.Fprintf(e.stderr, "%s\n", c)
	}
	if !execute {
		fmt.Fprintf(e.stderr, "dry run: no offsets changed; add --execute to commit them\n")
		return nil
	}
	if share {
		resp, err := adm.AlterShareGroupOffsets(ctx, group, plan)
		if err != nil {
			return fmt.Errorf("alter offsets of share group %s: %w", group, err)
		}
		if err := resp.Error(); err != nil {
			return fmt.Errorf("alter offsets of share group %s: %w", group, err)
		}
		fmt.Fprintf(e.stderr, "set new start offsets for %d partitions of share group %s\n", len(parts), group)
		return nil
	}
	resp, err := adm.CommitOffsets(ctx, group, plan)
	if err != nil {
		return fmt.Errorf("commit offsets of group %s: %w", group, err)
	}
	if err := resp.Error(); err != nil {
		return fmt.Errorf("commit offsets of group %s: %w", group, err)
	}
	fmt.Fprintf(e.stderr, "committed new offsets for %d partitions of group %s\n", len(parts), group)
	return nil
}
