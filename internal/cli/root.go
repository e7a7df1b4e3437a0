package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
)

// Exit codes returned by Main.
const (
	ExitOK      = 0 // the command did what was asked
	ExitFailure = 1 // the command ran and failed
	ExitMisuse  = 2 // unknown command or flag, bad arguments or flag values
)

// DefaultBootstrapServer is where client commands connect when neither
// --bootstrap-server nor SAMSA_BOOTSTRAP_SERVER says otherwise.
const DefaultBootstrapServer = "127.0.0.1:9092"

// EnvBootstrapServer names the environment variable that overrides
// DefaultBootstrapServer.
const EnvBootstrapServer = "SAMSA_BOOTSTRAP_SERVER"

// ErrUsage marks an error as misuse of the command line; Main exits with
// ExitMisuse for it.
var ErrUsage = errors.New("cli: usage")

// Usagef returns a usage error with a formatted message, for the commands
// a development binary adds (see Main): Main exits with ExitMisuse for it.
func Usagef(format string, args ...any) error { return usagef(format, args...) }

// usageError wraps err so that errors.Is(err, ErrUsage) holds while the
// message stays err's own.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() []error {
	return []error{e.err, ErrUsage}
}

// usagef returns a usage error with a formatted message.
func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// cmdUsageError is a usage error that knows the command whose help the user
// should read.
type cmdUsageError struct {
	usageError
	cmd string
}

// usageIn marks err as misuse of cmd.
func usageIn(cmd *cobra.Command, err error) error {
	return cmdUsageError{usageError{err}, cmd.CommandPath()}
}

// env is what a command may touch of the process: its streams and
// environment. Tests substitute all of them.
type env struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	getenv func(string) string
}

// Main runs samsa with the process's arguments, streams and environment and
// returns the exit code. SIGINT and SIGTERM cancel the command's context.
// dev are added under `samsa dev`: cmd/samsa-dev passes the commands that
// link a fake broker, which the production binary leaves out.
func Main(dev ...*cobra.Command) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return run(ctx, os.Args[1:], env{
		stdin:  os.Stdin,
		stdout: os.Stdout,
		stderr: os.Stderr,
		getenv: os.Getenv,
	}, dev...)
}

// run builds the command tree, executes it with args and maps the outcome to
// an exit code. An error is printed once, to e.stderr, as "samsa: <msg>".
func run(ctx context.Context, args []string, e env, dev ...*cobra.Command) int {
	root := newRootCmd(e, dev...)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return ExitOK
	}
	fmt.Fprintf(e.stderr, "samsa: %s\n", err)
	if isUsage(err) {
		path := "samsa"
		var ue cmdUsageError
		if errors.As(err, &ue) {
			path = ue.cmd
		} else if cmd != nil {
			path = cmd.CommandPath()
		}
		fmt.Fprintf(e.stderr, "Run '%s --help' for usage.\n", path)
		return ExitMisuse
	}
	return ExitFailure
}

// isUsage reports whether err is misuse of the command line. cobra reports
// an unknown subcommand of the root and a missing required flag with plain
// errors, so their text is recognised too.
func isUsage(err error) bool {
	if errors.Is(err, ErrUsage) {
		return true
	}
	msg := err.Error()
	return strings.HasPrefix(msg, "unknown command ") || strings.HasPrefix(msg, "required flag(s) ")
}

// globals holds the persistent flags shared by every command.
type globals struct {
	bootstrap string
	security  clientSecurity
}

func newRootCmd(e env, dev ...*cobra.Command) *cobra.Command {
	g := &globals{security: clientSecurity{getenv: e.getenv}}
	root := &cobra.Command{
		Use:   "samsa",
		Short: "Kafka-compatible message broker and its tools",
		Long: `samsa is a distributed publish-subscribe log that speaks the Kafka wire
protocol and stores partitions in Kafka's on-disk format, with etcd for
cluster metadata. One binary runs the broker (samsa serve) and the tools
that talk to it: topic administration, produce, consume, load tests and
an offline segment dumper.

Client commands connect to --bootstrap-server, which defaults to the
SAMSA_BOOTSTRAP_SERVER environment variable and then to ` + DefaultBootstrapServer + `.
They connect with TLS when --tls or any --tls-* flag is given, and
authenticate with SASL when --sasl-mechanism is; each of these flags but
--tls and --tls-server-name falls back to a SAMSA_* environment variable,
so that a password need not appear on the command line.`,
		Example: `  samsa serve
  samsa topic create orders --partitions 6
  printf 'k1:hello\nk2:world\n' | samsa produce orders --key-separator :
  samsa consume orders --from beginning --count 2 --format '%k=%v\n'`,
		SilenceErrors: true,
		SilenceUsage:  true,
		Args:          noArgs,
		RunE:          helpRun,
	}
	root.CompletionOptions.DisableDefaultCmd = true
	// --version prints what samsa version prints. Declaring the flag here
	// keeps cobra from adding its own, with a -v shorthand.
	root.Version = buildVersion().String()
	root.SetVersionTemplate("{{.Version}}")
	root.Flags().Bool("version", false, "print the version, commit and Go version (as samsa version) and exit")
	root.SetIn(e.stdin)
	root.SetOut(e.stdout)
	root.SetErr(e.stderr)
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return usageIn(cmd, err)
	})

	def := DefaultBootstrapServer
	if v := e.getenv(EnvBootstrapServer); v != "" {
		def = v
	}
	root.PersistentFlags().StringVarP(&g.bootstrap, "bootstrap-server", "b", def,
		"comma-separated host:port list of brokers to connect to (env "+EnvBootstrapServer+")")
	g.security.addFlags(root)

	root.AddCommand(
		newServeCmd(),
		newTopicCmd(g, e),
		newClusterCmd(g, e),
		newGroupCmd(g, e),
		newProduceCmd(g, e),
		newConsumeCmd(g, e),
		newPerfCmd(g, e),
		newDumpLogCmd(e),
		newDevCmd(e, dev...),
		newConfigCmd(e),
		newACLCmd(g, e),
		newUserCmd(g, e),
		newQuotaCmd(g, e),
		newTxnCmd(g, e),
		newVersionCmd(e),
		newHealthcheckCmd(e),
		newCompletionCmd(),
	)
	return root
}

// suggestionDistance is the Levenshtein distance within which a mistyped
// command gets a "Did you mean" hint (cobra's SuggestionsMinimumDistance;
// a command whose name starts with what was typed is suggested too).
const suggestionDistance = 2

// noArgs is the Args check for commands that only group subcommands: any
// argument names an unknown subcommand, and the error suggests the
// subcommands whose names are close to it.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		cmd.SuggestionsMinimumDistance = suggestionDistance
		msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
		if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
			msg += "\n\nDid you mean this?\n\t" + strings.Join(s, "\n\t") + "\n"
		}
		return usageIn(cmd, errors.New(msg))
	}
	return nil
}

// helpRun prints the help of a command that only groups subcommands.
func helpRun(cmd *cobra.Command, _ []string) error { return cmd.Help() }

// exactArgs, minArgs are cobra's positional checks with misuse marked.
func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := cobra.ExactArgs(n)(cmd, args); err != nil {
			return usageIn(cmd, err)
		}
		return nil
	}
}

func minArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := cobra.MinimumNArgs(n)(cmd, args); err != nil {
			return usageIn(cmd, err)
		}
		return nil
	}
}
