package cli

import (
	"bytes"
	"context"
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"go.uber.org/goleak"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata")

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// result is what one run of the command tree produced.
type result struct {
	code   int
	stdout string
	stderr string
}

// runCLI runs samsa with args, feeding stdin, with an empty environment,
// and returns the exit code and captured output.
func runCLI(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	return runCLIEnv(t, map[string]string{}, stdin, args...)
}

func runCLIEnv(t *testing.T, environ map[string]string, stdin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	code := run(ctx, args, env{
		stdin:  strings.NewReader(stdin),
		stdout: &out,
		stderr: &errb,
		getenv: func(k string) string { return environ[k] },
	})
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

// mustRun is runCLI that fails the test on a non-zero exit.
func mustRun(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	r := runCLI(t, stdin, args...)
	if r.code != 0 {
		t.Fatalf("samsa %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r
}

// newFake starts a one-broker kfake cluster with opts and returns its
// bootstrap address; the cluster closes when the test ends.
func newFake(t *testing.T, opts ...kfake.Opt) string {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1)}, opts...)...)
	if err != nil {
		t.Fatalf("kfake: %v", err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()[0]
}

// seedTopics is kfake.SeedTopics, named for the test's reading.
func seedTopics(partitions int32, topics ...string) kfake.Opt {
	return kfake.SeedTopics(partitions, topics...)
}

// checkGolden compares got with testdata/name, rewriting it under -update.
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := "testdata/" + name
	if *update {
		if err := writeFile(path, got); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := readFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != want {
		t.Errorf("%s differs from the golden file (run with -update to accept):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}
