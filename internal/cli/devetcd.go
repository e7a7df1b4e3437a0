package cli

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"samsa/internal/cluster"
)

// newDevEtcdCmd returns `samsa dev etcd`: a stand-alone embedded etcd
// member that several `samsa serve` processes share through
// etcd.endpoints, for multi-process tests on one host.
func newDevEtcdCmd(e env) *cobra.Command {
	var dataDir string
	cmd := &cobra.Command{
		Use:   "etcd",
		Short: "Run a single-member etcd for a multi-process cluster",
		Long: `Run a single-member etcd, configured as samsa serve configures its
embedded member, with its data under --data-dir, until SIGINT or SIGTERM.
Its client URL (a unix socket in --data-dir, or loopback TCP when that path
is too long) is printed to stdout as one line once it serves. Brokers join
it with --override etcd.endpoints=<url>.`,
		Example: `  samsa dev etcd --data-dir /tmp/etcd`,
		Args:    exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dataDir == "" {
				return usagef("--data-dir is required")
			}
			if err := os.MkdirAll(dataDir, 0o755); err != nil {
				return fmt.Errorf("dev etcd: %w", err)
			}
			ee, err := cluster.StartEmbeddedEtcd(cmd.Context(), dataDir)
			if err != nil {
				return fmt.Errorf("dev etcd: %w", err)
			}
			defer ee.Close()
			fmt.Fprintln(e.stdout, ee.ClientURL())
			<-cmd.Context().Done()
			return nil
		},
	}
	cmd.Flags().StringVar(&dataDir, "data-dir", "", "directory for the etcd data (required)")
	return cmd
}
