package cli_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"samsa/internal/cli"
	"samsa/internal/testutil"
)

// TestConsumeFromPastTheEndFollowsReset: an offset past the log end is
// handled as --reset says (auto.offset.reset), and stderr says what was
// done, rather than restarting silently at offset 0.
func TestConsumeFromPastTheEndFollowsReset(t *testing.T) {
	b := testutil.StartBroker(t)
	testutil.CreateTopic(t, b.Admin(), "orders", 1)
	cl := b.Client(kgo.DefaultProduceTopic("orders"))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, v := range []string{"v0", "v1", "v2"} {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{nil, cli.ExitOK, "", "orders-0: offset 999 is past the log end offset 3; starting at the log end offset 3 (--reset latest)\n"},
		{[]string{"--reset", "latest"}, cli.ExitOK, "", "orders-0: offset 999 is past the log end offset 3; starting at the log end offset 3 (--reset latest)\n"},
		{[]string{"--reset", "earliest"}, cli.ExitOK, "0 v0\n1 v1\n2 v2\n", "orders-0: offset 999 is past the log end offset 3; starting at the log start offset 0 (--reset earliest)\n"},
		{[]string{"--reset", "error"}, cli.ExitFailure, "", "samsa: orders-0: offset 999 is past the log end offset 3 (the log holds 0..3) and --reset is error\n"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(append([]string{"reset"}, tt.args...), " "), func(t *testing.T) {
			args := append([]string{"consume", "orders", "--partition", "0", "--from", "999", "--timeout", "500ms", "--format", `%o %v\n`}, tt.args...)
			code, out, errs := samsa(t, b.Addr(), args...)
			if code != tt.code || out != tt.stdout || errs != tt.stderr {
				t.Fatalf("exit %d\nstdout %q\nstderr %q\nwant exit %d\nstdout %q\nstderr %q", code, out, errs, tt.code, tt.stdout, tt.stderr)
			}
		})
	}
	// An offset the log holds is used as given, and nothing is said.
	code, out, errs := samsa(t, b.Addr(), "consume", "orders", "--partition", "0", "--from", "1", "--timeout", "500ms", "--format", `%o %v\n`, "--reset", "error")
	if code != cli.ExitOK || out != "1 v1\n2 v2\n" || errs != "" {
		t.Fatalf("--from 1: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	code, _, errs = samsa(t, b.Addr(), "consume", "orders", "--reset", "sometimes")
	if code != cli.ExitMisuse {
		t.Fatalf("--reset sometimes: exit %d, stderr %q", code, errs)
	}
}
