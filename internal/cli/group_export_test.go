package cli

import (
	"bytes"
	"context"
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
