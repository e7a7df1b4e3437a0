package cli

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// commandPaths lists the argument paths of every command, hidden ones
// included, in tree order.
func commandPaths(c *cobra.Command, prefix []string) [][]string {
	out := [][]string{prefix}
	for _, sub := range c.Commands() {
		// serve is documented and tested with the broker wiring in
		// serve.go, whose help changes with the broker's flags.
		if sub.Name() == "help" || sub.Name() == "serve" {
			continue
		}
		p := append(append([]string(nil), prefix...), sub.Name())
		out = append(out, commandPaths(sub, p)...)
	}
	return out
}

func TestHelpGolden(t *testing.T) {
	root := newRootCmd(env{getenv: func(string) string { return "" }})
	paths := commandPaths(root, nil)
	if len(paths) < 15 {
		t.Fatalf("only %d commands in the tree", len(paths))
	}
	for _, p := range paths {
		name := "samsa"
		if len(p) > 0 {
			name = "samsa_" + strings.Join(p, "_")
		}
		t.Run(name, func(t *testing.T) {
			r := runCLI(t, "", append(p, "--help")...)
			if r.code != ExitOK || r.stderr != "" {
				t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
			}
			checkGolden(t, "help/"+name+".golden", r.stdout)
		})
	}
}

// TestCommandDocs checks the help conventions every command follows.
func TestCommandDocs(t *testing.T) {
	root := newRootCmd(env{getenv: func(string) string { return "" }})
	for _, p := range commandPaths(root, nil) {
		c, _, err := root.Find(p)
		if err != nil {
			t.Fatalf("%v: %v", p, err)
		}
		if c.Short == "" || c.Long == "" || c.Example == "" || c.Use == "" {
			t.Errorf("%q: Use, Short, Long and Example must all be set", c.CommandPath())
		}
		if strings.HasSuffix(c.Short, ".") || strings.Contains(c.Short, "\n") {
			t.Errorf("%q: Short must be one line without a trailing period", c.CommandPath())
		}
	}
}

func TestExitCodes(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		code    int
		wantErr string
	}{
		{"no args prints help", nil, ExitOK, ""},
		{"unknown command", []string{"frobnicate"}, ExitMisuse, `unknown command "frobnicate" for "samsa"`},
		{"unknown subcommand", []string{"topic", "frob"}, ExitMisuse, `unknown command "frob" for "samsa topic"`},
		{"unknown flag", []string{"produce", "t", "--nope"}, ExitMisuse, "unknown flag: --nope"},
		{"missing arg", []string{"produce"}, ExitMisuse, "accepts 1 arg(s), received 0"},
		{"too many args", []string{"topic", "create", "a", "b"}, ExitMisuse, "accepts 1 arg(s), received 2"},
		{"bad acks", []string{"produce", "t", "--acks", "2"}, ExitMisuse, `--acks "2"`},
		{"bad compression", []string{"produce", "t", "--compression", "brotli"}, ExitMisuse, `--compression "brotli"`},
		{"idempotent needs acks all", []string{"produce", "t", "--idempotent", "--acks", "1"}, ExitMisuse, "--idempotent needs --acks all"},
		{"bad from", []string{"consume", "t", "--from", "yesterday"}, ExitMisuse, `--from "yesterday"`},
		{"bad format", []string{"consume", "t", "--format", "%q"}, ExitMisuse, "unknown verb %q"},
		{"bad flag value", []string{"consume", "t", "--count", "x"}, ExitMisuse, `invalid argument "x"`},
		{"bad config kv", []string{"topic", "create", "t", "--config", "novalue"}, ExitMisuse, "want key=value"},
		{"alter nothing", []string{"topic", "alter-config", "t"}, ExitMisuse, "nothing to do"},
		{"missing required flag", []string{"topic", "add-partitions", "t"}, ExitMisuse, `required flag(s) "count" not set`},
		{"missing file", []string{"dump-log", "/nonexistent/0.log"}, ExitFailure, "no such file"},
		{"bad config", []string{"config", "validate", "--override", "num.partitions=x"}, ExitFailure, "num.partitions"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCLI(t, "", tt.args...)
			if r.code != tt.code {
				t.Fatalf("exit %d, want %d; stderr %q", r.code, tt.code, r.stderr)
			}
			if tt.wantErr == "" {
				if r.stderr != "" {
					t.Fatalf("stderr %q, want none", r.stderr)
				}
				return
			}
			if !strings.HasPrefix(r.stderr, "samsa: ") || strings.Count(r.stderr, "samsa: ") != 1 {
				t.Errorf("stderr %q: want exactly one line starting with \"samsa: \"", r.stderr)
			}
			if !strings.Contains(r.stderr, tt.wantErr) {
				t.Errorf("stderr %q does not contain %q", r.stderr, tt.wantErr)
			}
		})
	}
}

func TestBootstrapFromEnvironment(t *testing.T) {
	addr := newFake(t, seedTopics(1, "from-env"))
	// No -b: the environment variable names the broker.
	r := runCLIEnv(t, map[string]string{EnvBootstrapServer: addr}, "", "topic", "list")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "from-env") {
		t.Fatalf("topic list %q does not show from-env", r.stdout)
	}
	// The flag wins over the environment.
	r = runCLIEnv(t, map[string]string{EnvBootstrapServer: "127.0.0.1:1"}, "", "-b", addr, "topic", "list")
	if r.code != 0 || !strings.Contains(r.stdout, "from-env") {
		t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

func TestConfigValidate(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/server.properties"
	if err := writeFile(path, "num.partitions=4\nlog.dirs="+dir+"/data\n"); err != nil {
		t.Fatal(err)
	}
	r := mustRun(t, "", "config", "validate", "--config", path, "--override", "num.partitions=6", "--print")
	want := "log.dirs=" + dir + "/data\nnum.partitions=6\nconfiguration valid\n"
	if r.stdout != want {
		t.Fatalf("stdout %q, want %q", r.stdout, want)
	}
	r = runCLI(t, "", "config", "validate", "--config", path, "--override", "no.such.config=1")
	if r.code != ExitFailure || !strings.Contains(r.stderr, "no.such.config") {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestDocsListEveryFlag keeps docs/cli.md in step with the command tree:
// every command and every one of its own flags is mentioned.
func TestDocsListEveryFlag(t *testing.T) {
	doc, err := readFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	root := newRootCmd(env{getenv: func(string) string { return "" }})
	for _, p := range commandPaths(root, nil) {
		c, _, _ := root.Find(p)
		if len(p) > 0 && !strings.Contains(doc, strings.Join(p, " ")) {
			t.Errorf("docs/cli.md does not mention %q", strings.Join(p, " "))
		}
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if f.Name != "help" && !f.Hidden && !strings.Contains(doc, "--"+f.Name) {
				t.Errorf("docs/cli.md does not mention %s --%s", c.CommandPath(), f.Name)
			}
		})
	}
}

func TestUsageHintNamesTheCommand(t *testing.T) {
	tests := []struct {
		args []string
		hint string
	}{
		{[]string{"nope"}, "Run 'samsa --help' for usage.\n"},
		{[]string{"topic", "create"}, "Run 'samsa topic create --help' for usage.\n"},
		{[]string{"consume", "t", "--bad"}, "Run 'samsa consume --help' for usage.\n"},
		{[]string{"perf", "e2e", "--rate", "0"}, "Run 'samsa perf e2e --help' for usage.\n"},
	}
	for _, tt := range tests {
		r := runCLI(t, "", tt.args...)
		if r.code != ExitMisuse || !strings.HasSuffix(r.stderr, tt.hint) {
			t.Errorf("%v: exit %d, stderr %q, want hint %q", tt.args, r.code, r.stderr, tt.hint)
		}
	}
}
