package cli

import (
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"samsa/internal/sasl"
)

func newUserCmd(g *globals, e env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "user",
		Short: "Create, list and delete SCRAM users",
		Long: `SCRAM credential administration through the Kafka admin API
(AlterUserScramCredentials, DescribeUserScramCredentials; KIP-554), as
kafka-configs.sh --entity-type users does. The password is salted and
hashed here; only the salted password goes to the broker, which keeps the
derived keys. Users authenticate with SCRAM-SHA-256 or SCRAM-SHA-512 on a
SASL listener.`,
		Example: `  samsa user create alice --new-password s3cret
  samsa user list
  samsa user delete alice --mechanism SCRAM-SHA-256`,
		Args: noArgs,
		RunE: helpRun,
	}
	cmd.AddCommand(newUserCreateCmd(g, e), newUserListCmd(g, e), newUserDeleteCmd(g, e))
	return cmd
}

// parseScramMechanism parses a --mechanism value.
func parseScramMechanism(s string) (kadm.ScramMechanism, error) {
	switch strings.ToUpper(strings.TrimSpace(s)) {
	case sasl.ScramSHA256:
		return kadm.ScramSha256, nil
	case sasl.ScramSHA512:
		return kadm.ScramSha512, nil
	}
	return 0, usagef("--mechanism %q: want SCRAM-SHA-256 or SCRAM-SHA-512", s)
}

// alteredErr returns the error of one user's result, if any.
func alteredErr(rs kadm.AlteredUserSCRAMs, user string) error {
	r, ok := rs[user]
	if !ok {
		return fmt.Errorf("the broker did not answer for user %s", user)
	}
	if r.Err != nil {
		return withMessage(r.Err, r.ErrMessage)
	}
	return nil
}

func newUserCreateCmd(g *globals, e env) *cobra.Command {
	var (
		password   string
		mechanism  string
		iterations int32
	)
	cmd := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a SCRAM user or change its password",
		Long: `Store a SCRAM credential for NAME with the given mechanism and iteration
count (4096 to 16384), replacing one that exists for that mechanism. A
user may have one credential per mechanism; create it once per mechanism
its clients use. The password is --new-password, or the SAMSA_NEW_PASSWORD
environment variable (--password is the password this command itself
authenticates with).`,
		Example: `  samsa user create alice --new-password s3cret
  SAMSA_NEW_PASSWORD=s3cret samsa user create alice --mechanism SCRAM-SHA-256 --iterations 4096`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			mech, err := parseScramMechanism(mechanism)
			if err != nil {
				return err
			}
			if password == "" {
				password = e.getenv(EnvNewPassword)
			}
			if password == "" {
				return usagef("give the new user's password with --new-password or %s", EnvNewPassword)
			}
			adm, err := newAdmin(g)
			if err != nil {
				return err
			}
			defer adm.Close()
			rs, err := adm.AlterUserSCRAMs(cmd.Context(), nil, []kadm.UpsertSCRAM{{
				User: args[0], Mechanism: mech, Iterations: iterations, Password: password,
			}})
			if err == nil {
				err = alteredErr(rs, args[0])
			}
			if err != nil {
				return fmt.Errorf("create user %s: %w", args[0], err)
			}
			fmt.Fprintf(e.stdout, "created user %s (%s, %d iterations)\n", args[0], mech, iterations)
			return nil
		},
	}
	cmd.Flags().StringVar(&password, "new-password", "", "the user's password (env "+EnvNewPassword+")")
	cmd.Flags().StringVar(&mechanism, "mechanism", sasl.ScramSHA512, "SCRAM-SHA-256 or SCRAM-SHA-512")
	cmd.Flags().Int32Var(&iterations, "iterations", 8192, "PBKDF2 iterations, 4096 to 16384")
	return cmd
}

// EnvNewPassword names the environment variable that user create reads
// when --new-password is not given.
const EnvNewPassword = "SAMSA_NEW_PASSWORD"

func newUserDeleteCmd(g *globals, e env) *cobra.Command {
	var mechanism string
	cmd := &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a SCRAM user's credentials",
		Long: `Delete NAME's credential for --mechanism, or without it every credential
NAME has. Deleting a credential that does not exist fails.`,
		Example: `  samsa user delete alice
  samsa user delete alice --mechanism SCRAM-SHA-256`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			user := args[0]
			var mechs []kadm.ScramMechanism
			if mechanism != "" {
				m, err := parseScramMechanism(mechanism)
				if err != nil {
					return err
				}
				mechs = append(mechs, m)
			}
			adm, err := newAdmin(g)
			if err != nil {
				return err
			}
			defer adm.Close()
			if len(mechs) == 0 {
				ds, err := adm.DescribeUserSCRAMs(cmd.Context(), user)
				if err == nil {
					if d, ok := ds[user]; ok && d.Err != nil {
						err = withMessage(d.Err, d.ErrMessage)
					}
				}
				if err != nil {
					return fmt.Errorf("delete user %s: %w", user, err)
				}
				for _, ci := range ds[user].CredInfos {
					mechs = append(mechs, ci.Mechanism)
				}
			}
			// NB: one request per mechanism: a user named twice in one
			// AlterUserScramCredentials is DUPLICATE_RESOURCE.
			for _, m := range mechs {
				rs, err := adm.AlterUserSCRAMs(cmd.Context(), []kadm.DeleteSCRAM{{User: user, Mechanism: m}}, nil)
				if err == nil {
					err = alteredErr(rs, user)
				}
				if err != nil {
					return fmt.Errorf("delete user %s %s: %w", user, m, err)
				}
				fmt.Fprintf(e.stdout, "deleted user %s (%s)\n", user, m)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&mechanism, "mechanism", "", "SCRAM-SHA-256 or SCRAM-SHA-512 (default: every mechanism the user has)")
	return cmd
}

func newUserListCmd(g *globals, e env) *cobra.Command {
	var format outputFormat
	cmd := &cobra.Command{
		Use:   "list [NAME...]",
		Short: "List SCRAM users",
		Long: `List every SCRAM user, or the users named, one credential per line,
sorted by user and mechanism, with the iteration count. Salts and keys are
never shown. A named user without credentials fails the command after the
others are printed. --format json prints one document, a user without
credentials carrying its error.`,
		Example: `  samsa user list
  samsa user list alice bob --format json`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			adm, err := newAdmin(g)
			if err != nil {
				return err
			}
			defer adm.Close()
			ds, err := adm.DescribeUserSCRAMs(cmd.Context(), args...)
			if err != nil {
				return fmt.Errorf("list users: %w", err)
			}
			type credJSON struct {
				Mechanism  string `json:"mechanism"`
				Iterations int32  `json:"iterations"`
			}
			type userJSON struct {
				User        string     `json:"user"`
				Credentials []credJSON `json:"credentials"`
				Error       string     `json:"error,omitempty"`
			}
			users := []userJSON{}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "USER\tMECHANISM\tITERATIONS")
			var errs []error
			for _, d := range ds.Sorted() {
				if d.Err != nil {
					err := fmt.Errorf("user %s: %w", d.User, withMessage(d.Err, d.ErrMessage))
					if errors.Is(d.Err, kerr.ResourceNotFound) {
						err = fmt.Errorf("user %s: no SCRAM credentials", d.User)
					}
					errs = append(errs, err)
					users = append(users, userJSON{User: d.User, Credentials: []credJSON{}, Error: err.Error()})
					continue
				}
				uj := userJSON{User: d.User, Credentials: []credJSON{}}
				for _, ci := range d.CredInfos {
					fmt.Fprintf(tw, "%s\t%s\t%d\n", d.User, ci.Mechanism, ci.Iterations)
					uj.Credentials = append(uj.Credentials, credJSON{ci.Mechanism.String(), ci.Iterations})
				}
				users = append(users, uj)
			}
			if format.json() {
				if err := writeJSON(e.stdout, struct {
					Users []userJSON `json:"users"`
				}{users}); err != nil {
					return err
				}
			} else if err := tw.Flush(); err != nil {
				return err
			}
			return errors.Join(errs...)
		},
	}
	addFormatFlag(cmd, &format)
	return cmd
}
