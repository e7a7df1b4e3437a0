package cli

import "github.com/spf13/cobra"

// newServeCmd returns the `samsa serve` command.
func newServeCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "serve",
		Short: "Run a samsa broker",
		RunE: func(cmd *cobra.Command, args []string) error {
			return nil
		},
	}
}
