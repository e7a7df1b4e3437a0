package cli

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func newGroupConfigCmd(g *globals, e env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Describe, get, set and delete a group's configs",
		Long: `Group configs (KIP-848, KIP-932) through the Kafka admin API
(DescribeConfigs and IncrementalAlterConfigs on resource type GROUP), as
kafka-configs.sh --entity-type groups does: per-group values of the
consumer group session timeout and heartbeat interval and of the share
group settings (share.auto.offset.reset, share.isolation.level,
share.record.lock.duration.ms, ...). A group that does not set one takes
the broker's config; a change applies without a restart. The group need
not exist yet.`,
		Example: `  samsa group config describe billing
  samsa group config get billing share.auto.offset.reset
  samsa group config set billing share.auto.offset.reset=earliest
  samsa group config delete billing share.auto.offset.reset`,
		Args: noArgs,
		RunE: helpRun,
	}
	cmd.AddCommand(
		newGroupConfigDescribeCmd(g, e),
		newGroupConfigGetCmd(g, e),
		newGroupConfigSetCmd(g, e),
		newGroupConfigDeleteCmd(g, e),
	)
	return cmd
}

// groupConfigs is the JSON document of `group config describe|get`.
type groupConfigs struct {
	Group   string         `json:"group"`
	Configs []brokerConfig `json:"configs"`
}

// describeGroupConfigs asks for the configs of group (names nil: all),
// with synonyms and documentation. Default is the broker's value the
// group falls back to.
func describeGroupConfigs(ctx context.Context, cl *kgo.Client, group string, names []string) ([]brokerConfig, error) {
	return describeConfigs(ctx, cl, kmsg.ConfigResourceTypeGroupConfig, group, "group "+group, names,
		func(s kmsg.ConfigSource) bool { return s != kmsg.ConfigSourceGroupConfig })
}

// writeGroupConfigs prints configs as a table (NAME VALUE SOURCE
// DEFAULT), or as JSON.
func writeGroupConfigs(e env, f outputFormat, group string, configs []brokerConfig) error {
	if f.json() {
		return writeJSON(e.stdout, groupConfigs{Group: group, Configs: configs})
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tVALUE\tSOURCE\tDEFAULT")
	for _, c := range configs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.Name, deref(c.Value), c.Source, deref(c.Default))
	}
	return tw.Flush()
}

func newGroupConfigDescribeCmd(g *globals, e env) *cobra.Command {
	var (
		overrides bool
		format    outputFormat
	)
	cmd := &cobra.Command{
		Use:   "describe GROUP",
		Short: "List a group's configs with their source and default",
		Long: `List every group config of GROUP, sorted by name, as kafka-configs.sh
--describe --entity-type groups --all does: its value, its source
(GROUP_CONFIG: set for this group; STATIC_BROKER_CONFIG: the broker's
config file or --override, which the group falls back to; DEFAULT_CONFIG:
the default) and the broker's value the group would have without its
own. --overrides lists only the configs the group sets. --format json
adds each config's type, documentation and synonyms.`,
		Example: `  samsa group config describe billing
  samsa group config describe billing --overrides --format json`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := newClient(g)
			if err != nil {
				return err
			}
			defer cl.Close()
			configs, err := describeGroupConfigs(cmd.Context(), cl, args[0], nil)
			if err != nil {
				return err
			}
			if overrides {
				kept := configs[:0]
				for _, c := range configs {
					if c.Source == "GROUP_CONFIG" {
						kept = append(kept, c)
					}
				}
				configs = kept
			}
			return writeGroupConfigs(e, format, args[0], configs)
		},
	}
	cmd.Flags().BoolVar(&overrides, "overrides", false, "only the configs the group sets")
	addFormatFlag(cmd, &format)
	return cmd
}

func newGroupConfigGetCmd(g *globals, e env) *cobra.Command {
	var format outputFormat
	cmd := &cobra.Command{
		Use:   "get GROUP NAME...",
		Short: "Show named configs of a group with their source and default",
		Long: `Show the named group configs of GROUP as describe shows them. A name
that is not a group config fails the command (exit 1), naming the
config it is closest to.`,
		Example: `  samsa group config get billing consumer.session.timeout.ms
  samsa group config get billing share.auto.offset.reset share.isolation.level --format json`,
		Args: minArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := newClient(g)
			if err != nil {
				return err
			}
			defer cl.Close()
			group := args[0]
			all, err := describeGroupConfigs(cmd.Context(), cl, group, nil)
			if err != nil {
				return err
			}
			byName := make(map[string]brokerConfig, len(all))
			for _, c := range all {
				byName[c.Name] = c
			}
			var out []brokerConfig
			for _, n := range args[1:] {
				c, ok := byName[n]
				if !ok {
					return fmt.Errorf("%s is not a group config%s", n, closestConfig(n, all))
				}
				out = append(out, c)
			}
			return writeGroupConfigs(e, format, group, out)
		},
	}
	addFormatFlag(cmd, &format)
	return cmd
}

// alterGroupConfigs sends one IncrementalAlterConfigs for group: set
// (name to value) and deletions.
func alterGroupConfigs(ctx context.Context, cl *kgo.Client, group string, set map[string]string, del []string, validateOnly bool) error {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.ValidateOnly = validateOnly
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	for _, k := range sortedKeys(set) {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Op, c.Value = k, kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr(set[k])
		rr.Configs = append(rr.Configs, c)
	}
	for _, k := range del {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Op = k, kmsg.IncrementalAlterConfigOpDelete
		rr.Configs = append(rr.Configs, c)
	}
	req.Resources = append(req.Resources, rr)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("alter configs of group %s: %w", group, err)
	}
	for _, r := range resp.Resources {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			return fmt.Errorf("alter configs of group %s: %w", group, withMessage(err, deref(r.ErrorMessage)))
		}
	}
	return nil
}

func newGroupConfigSetCmd(g *globals, e env) *cobra.Command {
	var validateOnly bool
	cmd := &cobra.Command{
		Use:   "set GROUP NAME=VALUE...",
		Short: "Set configs of a group",
		Long: `Set group configs of GROUP (IncrementalAlterConfigs), as kafka-configs.sh
--alter --entity-type groups --add-config does. Configs not named stay
as they are. A name that is not a group config, a value outside the
broker's bounds (group.consumer.min/max.*, group.share.min/max.*) or a
session timeout not greater than the heartbeat interval fails the whole
change with INVALID_CONFIG and nothing is changed. --validate-only
checks without changing anything.`,
		Example: `  samsa group config set billing share.auto.offset.reset=earliest
  samsa group config set billing consumer.heartbeat.interval.ms=10000 consumer.session.timeout.ms=50000
  samsa group config set billing share.record.lock.duration.ms=15000 --validate-only`,
		Args: minArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			set, err := parseKV("set", args[1:])
			if err != nil {
				return usageIn(cmd, fmt.Errorf("%s", strings.Replace(err.Error(), "--set ", "", 1)))
			}
			cl, err := newClient(g)
			if err != nil {
				return err
			}
			defer cl.Close()
			group := args[0]
			if err := alterGroupConfigs(cmd.Context(), cl, group, set, nil, validateOnly); err != nil {
				return err
			}
			verb := "set"
			if validateOnly {
				verb = "valid"
			}
			for _, k := range sortedKeys(set) {
				fmt.Fprintf(e.stdout, "%s %s=%s (group %s)\n", verb, k, set[k], group)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&validateOnly, "validate-only", false, "check the change without making it")
	return cmd
}

func newGroupConfigDeleteCmd(g *globals, e env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "delete GROUP NAME...",
		Short: "Remove configs of a group, so the broker's apply again",
		Long: `Remove the named group configs of GROUP (IncrementalAlterConfigs DELETE),
as kafka-configs.sh --alter --entity-type groups --delete-config does:
the group takes the broker's value again. Removing a config the group
does not set changes nothing.`,
		Example: `  samsa group config delete billing share.auto.offset.reset`,
		Args:    minArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := newClient(g)
			if err != nil {
				return err
			}
			defer cl.Close()
			group := args[0]
			if err := alterGroupConfigs(cmd.Context(), cl, group, nil, args[1:], false); err != nil {
				return err
			}
			for _, k := range args[1:] {
				fmt.Fprintf(e.stdout, "deleted %s (group %s)\n", k, group)
			}
			return nil
		},
	}
	return cmd
}
