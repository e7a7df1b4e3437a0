package cli_test

import (
	"slices"
	"strings"
	"testing"

	"samsa/internal/cli"
	"samsa/internal/testutil"
)

func TestQuotaAlterDescribeRoundTrip(t *testing.T) {
	t.Parallel()
	b := testutil.StartBroker(t)
	addr := b.Addr()
	mustSamsa(t, addr, "quota", "alter", "--entity-type", "users", "--entity-name", "alice",
		"--add-config", "producer_byte_rate=1024,consumer_byte_rate=2048")
	mustSamsa(t, addr, "quota", "alter", "--entity-type", "users", "--entity-name", "alice",
		"--entity-type", "clients", "--entity-default", "--add-config", "request_percentage=12.5")
	mustSamsa(t, addr, "quota", "alter", "--entity-type", "clients", "--entity-default", "--add-config", "producer_byte_rate=4096")
	mustSamsa(t, addr, "quota", "alter", "--entity-type", "ips", "--entity-name", "10.0.0.7", "--add-config", "connection_creation_rate=5")
	if out := mustSamsa(t, addr, "quota", "alter", "--entity-type", "users", "--entity-name", "bob",
		"--add-config", "producer_byte_rate=1", "--validate-only"); !strings.HasPrefix(out, "valid:") {
		t.Errorf("validate-only printed %q", out)
	}

	head := []string{"ENTITY", "QUOTA", "VALUE"}
	for _, tc := range []struct {
		args []string
		want [][]string
	}{
		{nil, [][]string{head,
			{"client-id=<default>", "producer_byte_rate", "4096"},
			{"ip=10.0.0.7", "connection_creation_rate", "5"},
			{"user=alice", "consumer_byte_rate", "2048"},
			{"user=alice", "producer_byte_rate", "1024"},
			{"user=alice,client-id=<default>", "request_percentage", "12.5"},
		}},
		{[]string{"--entity-type", "users"}, [][]string{head,
			{"user=alice", "consumer_byte_rate", "2048"},
			{"user=alice", "producer_byte_rate", "1024"},
		}},
		{[]string{"--entity-type", "users", "--entity-name", "alice", "--entity-type", "clients"}, [][]string{head,
			{"user=alice,client-id=<default>", "request_percentage", "12.5"},
		}},
		{[]string{"--entity-type", "clients", "--entity-default"}, [][]string{head,
			{"client-id=<default>", "producer_byte_rate", "4096"},
		}},
	} {
		got := rows(mustSamsa(t, addr, append([]string{"quota", "describe"}, tc.args...)...))
		if !slices.EqualFunc(got, tc.want, slices.Equal) {
			t.Errorf("describe %q:\n%q\nwant\n%q", tc.args, got, tc.want)
		}
	}

	mustSamsa(t, addr, "quota", "alter", "--entity-type", "users", "--entity-name", "alice", "--delete-config", "consumer_byte_rate")
	got := rows(mustSamsa(t, addr, "quota", "describe", "--entity-type", "users", "--entity-name", "alice"))
	if want := [][]string{head, {"user=alice", "producer_byte_rate", "1024"}}; !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("after delete-config: %q", got)
	}
}

func TestQuotaCommandsRefuseMisuseAndReportBrokerErrors(t *testing.T) {
	t.Parallel()
	b := testutil.StartBroker(t)
	addr := b.Addr()
	for _, args := range [][]string{
		{"quota", "alter", "--add-config", "producer_byte_rate=1"},
		{"quota", "alter", "--entity-type", "users", "--add-config", "producer_byte_rate=1"},
		{"quota", "alter", "--entity-type", "groups", "--entity-name", "g", "--add-config", "producer_byte_rate=1"},
		{"quota", "alter", "--entity-name", "alice", "--entity-type", "users", "--add-config", "producer_byte_rate=1"},
		{"quota", "alter", "--entity-type", "users", "--entity-name", "alice"},
		{"quota", "alter", "--entity-type", "users", "--entity-name", "alice", "--add-config", "producer_byte_rate"},
		{"quota", "alter", "--entity-type", "users", "--entity-name", "alice", "--add-config", "producer_byte_rate=fast"},
	} {
		if code, _, _ := samsa(t, addr, args...); code != cli.ExitMisuse {
			t.Errorf("%q: exit %d, want %d", args, code, cli.ExitMisuse)
		}
	}
	code, _, errs := samsa(t, addr, "quota", "alter", "--entity-type", "ips", "--entity-name", "10.0.0.7", "--add-config", "producer_byte_rate=1")
	if code != cli.ExitFailure || !strings.Contains(errs, "INVALID_REQUEST") {
		t.Errorf("producer_byte_rate on an ip: exit %d, stderr %q; want 1 and INVALID_REQUEST", code, errs)
	}
	if got := rows(mustSamsa(t, addr, "quota", "describe")); len(got) != 1 {
		t.Errorf("a refused alter stored quotas: %q", got)
	}
}
