package cli

import (
	"fmt"

	"github.com/spf13/cobra"
)

// newCompletionCmd is `samsa completion SHELL`: cobra's completion scripts.
// The scripts call back into samsa (its hidden __complete command), so
// they complete the commands and flags of the binary that runs them.
func newCompletionCmd() *cobra.Command {
	shells := []string{"bash", "zsh", "fish", "powershell"}
	return &cobra.Command{
		Use:   "completion bash|zsh|fish|powershell",
		Short: "Print a shell completion script",
		Long: `Print the script that makes SHELL complete samsa's commands, flags and
flag values. Load it in the current shell, or install it where the shell
loads completions from at start:

  bash:        source <(samsa completion bash)
               samsa completion bash > /etc/bash_completion.d/samsa
               (needs the bash-completion package)
  zsh:         samsa completion zsh > "${fpath[1]}/_samsa"
               (compinit must be enabled: autoload -U compinit; compinit)
  fish:        samsa completion fish > ~/.config/fish/completions/samsa.fish
  powershell:  samsa completion powershell | Out-String | Invoke-Expression`,
		Example: `  source <(samsa completion bash)
  samsa completion zsh > "${fpath[1]}/_samsa"`,
		ValidArgs: shells,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageIn(cmd, fmt.Errorf("accepts 1 arg(s), received %d", len(args)))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			root, out := cmd.Root(), cmd.OutOrStdout()
			switch args[0] {
			case "bash":
				return root.GenBashCompletionV2(out, true)
			case "zsh":
				return root.GenZshCompletion(out)
			case "fish":
				return root.GenFishCompletion(out, true)
			case "powershell":
				return root.GenPowerShellCompletionWithDesc(out)
			}
			return usageIn(cmd, fmt.Errorf("unknown shell %q: want bash, zsh, fish or powershell", args[0]))
		},
	}
}
