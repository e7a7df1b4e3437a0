package cli

import (
	"bytes"
	"context"
	"io"
	"strings"
)

// RunForTest runs the command tree with args and an empty environment, for
// tests in package cli_test (which can start a real broker through
// internal/testutil, itself an importer of cli).
func RunForTest(ctx context.Context, stdin string, args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(ctx, args, env{
		stdin:  strings.NewReader(stdin),
		stdout: &out,
		stderr: &errb,
		getenv: func(string) string { return "" },
	})
	return code, out.String(), errb.String()
}

// RunForTestIO is RunForTest with stdin read from r, for tests that feed
// a command while it runs.
func RunForTestIO(ctx context.Context, r io.Reader, args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(ctx, args, env{
		stdin:  r,
		stdout: &out,
		stderr: &errb,
		getenv: func(string) string { return "" },
	})
	return code, out.String(), errb.String()
}
