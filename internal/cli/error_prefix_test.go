package cli_test

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"samsa/internal/cli"
	"samsa/internal/config"
	"samsa/internal/node"
)

// repeats reports whether msg says the same thing twice in a row, as in
// "cluster: cluster: ..." or "open /x: open /x: ...".
func repeats(msg string) bool {
	parts := strings.Split(msg, ": ")
	for i := 1; i < len(parts); i++ {
		if parts[i] == parts[i-1] {
			return true
		}
	}
	return false
}

// checkNotDoubled fails the test when msg repeats a prefix.
func checkNotDoubled(t *testing.T, msg string) {
	t.Helper()
	if repeats(msg) {
		t.Errorf("message repeats a prefix: %s", msg)
	}
}

func TestStartupErrorsDoNotRepeatPrefixes(t *testing.T) {
	// A config file that does not exist: "config: open X: no such file".
	code, _, errs := cli.RunForTest(context.Background(), "", "config", "validate", "--config", filepath.Join(t.TempDir(), "missing.properties"))
	if code != cli.ExitFailure && code != cli.ExitMisuse {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	checkNotDoubled(t, errs)

	// A log dir that belongs to another node id: the cluster package's
	// own error, not wrapped in a second "cluster: ".
	dir := t.TempDir()
	start := func(nodeID string) (*node.Node, error) {
		cfg, err := config.Load("", []string{"node.id=" + nodeID, "listeners=PLAINTEXT://127.0.0.1:0", "log.dirs=" + dir, "admin.listener="})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return node.Start(ctx, node.Config{Broker: cfg, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	}
	n, err := start("0")
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	n, err = start("1")
	if err == nil {
		n.Close()
		t.Fatal("a log dir of node 0 started as node 1")
	}
	checkNotDoubled(t, err.Error())
}

func TestRepeatsCatchesDoubledPrefixes(t *testing.T) {
	for _, msg := range []string{
		"cluster: cluster: inconsistent node id",
		"config: open /a/b: open /a/b: no such file or directory",
	} {
		if !repeats(msg) {
			t.Errorf("%q not caught", msg)
		}
	}
	if repeats("config: open /a/b: no such file or directory") {
		t.Error("a plain message caught")
	}
}
