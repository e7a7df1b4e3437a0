package cli

import "github.com/spf13/cobra"

// newDevCmd is `samsa dev`: development helpers. extra holds the commands
// of a development binary (cmd/samsa-dev adds kfake); the production
// binary has only etcd and certs, which tests, test/chaos and the README
// run from it (see doc.go).
func newDevCmd(e env, extra ...*cobra.Command) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Development helpers",
		Long:  `Commands for developing and testing samsa; not for production use.`,
		Example: `  samsa dev certs ./certs
  samsa dev etcd --data-dir /tmp/etcd`,
		Hidden: true,
		Args:   noArgs,
		RunE:   helpRun,
	}
	cmd.AddCommand(newDevEtcdCmd(e))
	cmd.AddCommand(newDevCertsCmd(e))
	cmd.AddCommand(extra...)
	return cmd
}
