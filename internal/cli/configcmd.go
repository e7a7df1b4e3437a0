package cli

import (
	"fmt"
	"sort"

	"github.com/spf13/cobra"

	"samsa/internal/config"
)

func newConfigCmd(e env) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "config",
		Short:   "Check broker configuration",
		Long:    `Commands that work on broker configuration files without starting a broker.`,
		Example: `  samsa config validate --config server.properties`,
		Args:    noArgs,
		RunE:    helpRun,
	}
	cmd.AddCommand(newConfigValidateCmd(e))
	return cmd
}

func newConfigValidateCmd(e env) *cobra.Command {
	var (
		path      string
		overrides []string
		print     bool
	)
	cmd := &cobra.Command{
		Use:   "validate",
		Short: "Load and check a broker configuration without starting anything",
		Long: `Load the broker configuration the way samsa serve would (the properties
file, then every --override name=value under Kafka's config names) and
check every value. Nothing is started, nothing is written. Exits 0 and
prints "configuration valid" when the configuration is usable, 1 with the
offending config named otherwise, with the config it most likely meant
for a near miss. Kafka configs that have no meaning in samsa (ZooKeeper's,
KRaft's metadata log, thread pools) and KRaft controller listeners are
accepted and named in a warning on stderr; Kafka configs samsa does not
implement whose value would change the broker's behaviour are refused.
--print lists the values that were set explicitly.`,
		Example: `  samsa config validate --config server.properties
  samsa config validate --override num.partitions=6 --override log.dirs=/data/samsa --print`,
		Args: exactArgs(0),
		RunE: func(_ *cobra.Command, _ []string) error {
			b, err := config.Load(path, overrides)
			if err != nil {
				return err
			}
			for _, w := range b.Warnings {
				fmt.Fprintf(e.stderr, "warning: %s\n", w)
			}
			if print {
				names := make([]string, 0, len(b.Raw))
				for n := range b.Raw {
					names = append(names, n)
				}
				sort.Strings(names)
				for _, n := range names {
					v := b.Raw[n]
					if config.IsSensitive(n) {
						v = "[hidden]"
					}
					fmt.Fprintf(e.stdout, "%s=%s\n", n, v)
				}
			}
			fmt.Fprintln(e.stdout, "configuration valid")
			return nil
		},
	}
	cmd.Flags().StringVarP(&path, "config", "c", "", "broker properties file (empty: defaults only)")
	cmd.Flags().StringArrayVar(&overrides, "override", nil, "config name=value that wins over the file (repeatable)")
	cmd.Flags().BoolVar(&print, "print", false, "print the explicitly set values")
	return cmd
}
