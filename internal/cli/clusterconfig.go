package cli

import (
	"context"
	"fmt"
	"sort"
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

func newClusterConfigCmd(g *globals, e env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Describe, get and set broker configs",
		Long: `Broker configs through the Kafka admin API (DescribeConfigs with synonyms
and documentation, IncrementalAlterConfigs), as kafka-configs.sh
--entity-type brokers does: every config with its value, where the value
comes from (a dynamic per-broker or cluster-wide setting, the broker's
static config file or overrides, or the default) and the default; and
dynamic changes, per broker or cluster-wide.`,
		Example: `  samsa cluster config describe
  samsa cluster config get log.retention.hours num.partitions --broker 1
  samsa cluster config set log.retention.ms=86400000`,
		Args: noArgs,
		RunE: helpRun,
	}
	cmd.AddCommand(
		newClusterConfigDescribeCmd(g, e),
		newClusterConfigGetCmd(g, e),
		newClusterConfigSetCmd(g, e),
	)
	return cmd
}

// brokerConfig is one config of `cluster config describe|get`, and its
// JSON form.
type brokerConfig struct {
	Name          string          `json:"name"`
	Value         *string         `json:"value"`
	Source        string          `json:"source"`
	Default       *string         `json:"default"`
	ReadOnly      bool            `json:"read_only"`
	Sensitive     bool            `json:"sensitive"`
	Type          string          `json:"type,omitempty"`
	Documentation string          `json:"documentation,omitempty"`
	Synonyms      []configSynonym `json:"synonyms"`
}

type configSynonym struct {
	Name   string  `json:"name"`
	Value  *string `json:"value"`
	Source string  `json:"source"`
}

// brokerConfigs is the JSON document of `cluster config describe|get`.
type brokerConfigs struct {
	Broker  int32          `json:"broker"`
	Configs []brokerConfig `json:"configs"`
}

// configSourceName is Kafka's name of a config source, as kafka-configs.sh
// prints it.
func configSourceName(s kmsg.ConfigSource) string {
	switch s {
	case kmsg.ConfigSourceDynamicTopicConfig:
		return "DYNAMIC_TOPIC_CONFIG"
	case kmsg.ConfigSourceDynamicBrokerConfig:
		return "DYNAMIC_BROKER_CONFIG"
	case kmsg.ConfigSourceDynamicDefaultBrokerConfig:
		return "DYNAMIC_DEFAULT_BROKER_CONFIG"
	case kmsg.ConfigSourceStaticBrokerConfig:
		return "STATIC_BROKER_CONFIG"
	case kmsg.ConfigSourceDefaultConfig:
		return "DEFAULT_CONFIG"
	case kmsg.ConfigSourceDynamicBrokerLoggerConfig:
		return "DYNAMIC_BROKER_LOGGER_CONFIG"
	case kmsg.ConfigSourceGroupConfig:
		return "GROUP_CONFIG"
	}
	return "UNKNOWN"
}

// configTypeName is the lower-case name of a config's type (DescribeConfigs
// v3).
func configTypeName(t kmsg.ConfigType) string {
	if t == 0 {
		return ""
	}
	return strings.ToLower(t.String())
}

// resolveBroker is --broker, or when it is -1 the lowest broker id the
// cluster lists.
// brokerConfigClient returns a client for the config commands and the id
// of the broker they describe (resolveBroker). The caller closes the
// client.
func brokerConfigClient(ctx context.Context, g *globals, broker int32) (*kgo.Client, int32, error) {
	cl, err := newClient(g, kgo.MetadataMinAge(50*time.Millisecond))
	if err != nil {
		return nil, 0, err
	}
	id, err := resolveBroker(ctx, kadm.NewClient(cl), broker)
	if err != nil {
		cl.Close()
		return nil, 0, err
	}
	return cl, id, nil
}

func resolveBroker(ctx context.Context, adm *kadm.Client, broker int32) (int32, error) {
	if broker >= 0 {
		return broker, nil
	}
	m, err := adm.BrokerMetadata(ctx)
	if err != nil {
		return 0, fmt.Errorf("list brokers: %w", err)
	}
	if len(m.Brokers) == 0 {
		return 0, fmt.Errorf("list brokers: the cluster lists none")
	}
	ids := m.Brokers.NodeIDs()
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids[0], nil
}

// describeBrokerConfigs asks broker for its configs (names nil: all), with
// synonyms and documentation.
func describeBrokerConfigs(ctx context.Context, cl *kgo.Client, broker int32, names []string) ([]brokerConfig, error) {
	return describeConfigs(ctx, cl, kmsg.ConfigResourceTypeBroker, strconv.Itoa(int(broker)), "broker "+strconv.Itoa(int(broker)), names,
		func(s kmsg.ConfigSource) bool { return s == kmsg.ConfigSourceDefaultConfig })
}

// describeConfigs asks for the configs of one resource (names nil: all),
// with synonyms and documentation. A config's Default is the value of its
// first synonym whose source isDefault says is the fallback. what names
// the resource in errors.
func describeConfigs(ctx context.Context, cl *kgo.Client, typ kmsg.ConfigResourceType, name, what string, names []string, isDefault func(kmsg.ConfigSource) bool) ([]brokerConfig, error) {
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeSynonyms = true
	req.IncludeDocumentation = true
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType = typ
	rr.ResourceName = name
	rr.ConfigNames = names
	req.Resources = append(req.Resources, rr)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("describe configs of %s: %w", what, err)
	}
	if len(resp.Resources) != 1 {
		return nil, fmt.Errorf("describe configs of %s: %d resources in the response", what, len(resp.Resources))
	}
	r := resp.Resources[0]
	if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
		return nil, fmt.Errorf("describe configs of %s: %w", what, withMessage(err, deref(r.ErrorMessage)))
	}
	out := make([]brokerConfig, 0, len(r.Configs))
	for _, c := range r.Configs {
		bc := brokerConfig{
			Name:      c.Name,
			Value:     c.Value,
			Source:    configSourceName(c.Source),
			ReadOnly:  c.ReadOnly,
			Sensitive: c.IsSensitive,
			Type:      configTypeName(c.ConfigType),
			Synonyms:  []configSynonym{},
		}
		if c.Documentation != nil {
			bc.Documentation = *c.Documentation
		}
		for _, s := range c.ConfigSynonyms {
			bc.Synonyms = append(bc.Synonyms, configSynonym{s.Name, s.Value, configSourceName(s.Source)})
			if isDefault(s.Source) && bc.Default == nil {
				bc.Default = s.Value
			}
		}
		out = append(out, bc)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// writeBrokerConfigs prints configs as a table, or as JSON.
func writeBrokerConfigs(e env, f outputFormat, broker int32, configs []brokerConfig) error {
	if f.json() {
		return writeJSON(e.stdout, brokerConfigs{Broker: broker, Configs: configs})
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tVALUE\tSOURCE\tDEFAULT\tREAD-ONLY")
	show := func(v *string, sensitive bool) string {
		switch {
		case sensitive:
			return "(sensitive)"
		case v == nil:
			return "null"
		case *v == "":
			return `""`
		}
		return *v
	}
	for _, c := range configs {
		def := "-"
		if c.Default != nil || c.Source == "DEFAULT_CONFIG" {
			def = show(c.Default, c.Sensitive)
		}
		ro := "no"
		if c.ReadOnly {
			ro = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", c.Name, show(c.Value, c.Sensitive), c.Source, def, ro)
	}
	return tw.Flush()
}

func newClusterConfigDescribeCmd(g *globals, e env) *cobra.Command {
	var (
		broker  int32
		dynamic bool
		format  outputFormat
	)
	cmd := &cobra.Command{
		Use:   "describe",
		Short: "List a broker's configs with their source and default",
		Long: `List every config of one broker, sorted by name, as kafka-configs.sh
--describe --entity-type brokers --all does: its value, its source
(DYNAMIC_BROKER_CONFIG: set for this broker; DYNAMIC_DEFAULT_BROKER_CONFIG:
set cluster-wide; STATIC_BROKER_CONFIG: the broker's config file or
--override; DEFAULT_CONFIG: the default), the default value ("-" when
there is none) and whether it is read-only (cannot be changed while the
broker runs). Sensitive values are never shown. --dynamic lists only the
configs set dynamically. --format json adds each config's type,
documentation and synonyms (every source that sets it, in precedence
order).`,
		Example: `  samsa cluster config describe
  samsa cluster config describe --broker 2 --dynamic
  samsa cluster config describe --format json`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			cl, id, err := brokerConfigClient(ctx, g, broker)
			if err != nil {
				return err
			}
			defer cl.Close()
			configs, err := describeBrokerConfigs(ctx, cl, id, nil)
			if err != nil {
				return err
			}
			if dynamic {
				kept := configs[:0]
				for _, c := range configs {
					if strings.HasPrefix(c.Source, "DYNAMIC_") {
						kept = append(kept, c)
					}
				}
				configs = kept
			}
			return writeBrokerConfigs(e, format, id, configs)
		},
	}
	cmd.Flags().Int32Var(&broker, "broker", -1, "broker id (-1: the lowest id in the cluster)")
	cmd.Flags().BoolVar(&dynamic, "dynamic", false, "only the configs set dynamically")
	addFormatFlag(cmd, &format)
	return cmd
}

func newClusterConfigGetCmd(g *globals, e env) *cobra.Command {
	var (
		broker int32
		format outputFormat
	)
	cmd := &cobra.Command{
		Use:   "get NAME...",
		Short: "Show named broker configs with their source and default",
		Long: `Show the named configs of one broker as describe shows them. A name the
broker does not have fails the command (exit 1), naming the config it
is closest to.`,
		Example: `  samsa cluster config get log.retention.hours
  samsa cluster config get num.partitions log.segment.bytes --broker 1 --format json`,
		Args: minArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			cl, id, err := brokerConfigClient(ctx, g, broker)
			if err != nil {
				return err
			}
			defer cl.Close()
			// All of them, so that an unknown name gets a suggestion.
			all, err := describeBrokerConfigs(ctx, cl, id, nil)
			if err != nil {
				return err
			}
			byName := make(map[string]brokerConfig, len(all))
			for _, c := range all {
				byName[c.Name] = c
			}
			var out []brokerConfig
			for _, n := range args {
				c, ok := byName[n]
				if !ok {
					return fmt.Errorf("broker %d has no config %s%s", id, n, closestConfig(n, all))
				}
				out = append(out, c)
			}
			return writeBrokerConfigs(e, format, id, out)
		},
	}
	cmd.Flags().Int32Var(&broker, "broker", -1, "broker id (-1: the lowest id in the cluster)")
	addFormatFlag(cmd, &format)
	return cmd
}

// closestConfig is " (did you mean X?)" for the config name nearest to n,
// or "" when none is near.
func closestConfig(n string, all []brokerConfig) string {
	best, bestD := "", 4
	for _, c := range all {
		if d := levenshtein(n, c.Name); d < bestD {
			best, bestD = c.Name, d
		}
	}
	for _, c := range all {
		if best == "" && (strings.HasSuffix(c.Name, "."+n) || strings.HasSuffix(n, "."+c.Name)) {
			best = c.Name
		}
	}
	if best == "" {
		return ""
	}
	return " (did you mean " + best + "?)"
}

// levenshtein is the edit distance between a and b.
func levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func newClusterConfigSetCmd(g *globals, e env) *cobra.Command {
	var (
		broker int32
		del    []string
	)
	cmd := &cobra.Command{
		Use:   "set [NAME=VALUE...]",
		Short: "Change broker configs dynamically",
		Long: `Set broker configs while the brokers run (IncrementalAlterConfigs), as
kafka-configs.sh --alter --entity-type brokers does: cluster-wide (the
default, Kafka's --entity-default) or for one broker with --broker. A
dynamic value wins over the static config file; --delete removes a
dynamic value, so the next source in precedence order applies again.
Configs not named stay as they are. A name the broker does not know or a
config that is read-only fails the whole change with the broker's error
(INVALID_CONFIG, INVALID_REQUEST) and nothing is changed.`,
		Example: `  samsa cluster config set log.retention.ms=86400000
  samsa cluster config set --broker 1 log.cleaner.threads=2
  samsa cluster config set --delete log.retention.ms`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 && len(del) == 0 {
				return usageIn(cmd, fmt.Errorf("nothing to do: give NAME=VALUE or --delete NAME"))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			set, err := parseKV("set", args)
			if err != nil {
				return usageIn(cmd, fmt.Errorf("%s", strings.Replace(err.Error(), "--set ", "", 1)))
			}
			var alters []kadm.AlterConfig
			for _, k := range sortedKeys(set) {
				v := set[k]
				alters = append(alters, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: &v})
			}
			for _, k := range del {
				alters = append(alters, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
			}
			adm, err := newAdmin(g)
			if err != nil {
				return err
			}
			defer adm.Close()
			var brokers []int32
			target := "cluster-wide"
			if broker >= 0 {
				brokers = []int32{broker}
				target = fmt.Sprintf("broker %d", broker)
			}
			resp, err := adm.AlterBrokerConfigs(cmd.Context(), alters, brokers...)
			if err != nil {
				return fmt.Errorf("alter %s configs: %w", target, err)
			}
			for _, r := range resp {
				if r.Err != nil {
					return fmt.Errorf("alter %s configs: %w", target, withMessage(r.Err, r.ErrMessage))
				}
			}
			for _, a := range alters {
				if a.Op == kadm.SetConfig {
					fmt.Fprintf(e.stdout, "set %s=%s (%s)\n", a.Name, *a.Value, target)
				} else {
					fmt.Fprintf(e.stdout, "deleted %s (%s)\n", a.Name, target)
				}
			}
			return nil
		},
	}
	cmd.Flags().Int32Var(&broker, "broker", -1, "broker id; -1: cluster-wide, for every broker")
	cmd.Flags().StringArrayVar(&del, "delete", nil, "remove a dynamic config, repeatable")
	return cmd
}

// sortedKeys returns m's keys in order.
func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
