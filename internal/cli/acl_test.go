package cli_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"samsa/internal/cli"
	"samsa/internal/testutil"
)

// startSecureBroker starts a broker with the ACL authorizer on, whose
// anonymous PLAINTEXT principal is a super user.
func startSecureBroker(t *testing.T, overrides ...string) *testutil.Broker {
	t.Helper()
	return testutil.StartBroker(t, append([]string{"authorizer.class.name=samsa", "super.users=User:ANONYMOUS"}, overrides...)...)
}

func TestACLCreateListDeleteRoundTrip(t *testing.T) {
	t.Parallel()
	b := startSecureBroker(t)
	addr := b.Addr()
	out := mustSamsa(t, addr, "acl", "create", "--allow-principal", "User:alice", "--operation", "read", "--operation", "describe", "--topic", "orders")
	if got := rows(out); len(got) != 3 {
		t.Fatalf("create printed %q, want a header and 2 ACLs", out)
	}
	mustSamsa(t, addr, "acl", "create", "--deny-principal", "User:bob", "--deny-host", "10.0.0.7",
		"--operation", "write", "--topic", "orders-", "--resource-pattern-type", "prefixed")
	mustSamsa(t, addr, "acl", "create", "--allow-principal", "User:admin", "--cluster", "--operation", "alter")

	want := [][]string{
		{"PRINCIPAL", "HOST", "RESOURCE-TYPE", "RESOURCE-NAME", "PATTERN", "OPERATION", "PERMISSION"},
		{"User:admin", "*", "CLUSTER", "kafka-cluster", "LITERAL", "ALTER", "ALLOW"},
		{"User:alice", "*", "TOPIC", "orders", "LITERAL", "DESCRIBE", "ALLOW"},
		{"User:alice", "*", "TOPIC", "orders", "LITERAL", "READ", "ALLOW"},
		{"User:bob", "10.0.0.7", "TOPIC", "orders-", "PREFIXED", "WRITE", "DENY"},
	}
	if got := rows(mustSamsa(t, addr, "acl", "list")); !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("acl list:\n%q\nwant\n%q", got, want)
	}
	if got := rows(mustSamsa(t, addr, "acl", "list", "--topic", "orders-eu", "--resource-pattern-type", "match")); !slices.EqualFunc(got, [][]string{want[0], want[4]}, slices.Equal) {
		t.Fatalf("acl list match orders-eu: %q", got)
	}
	if got := rows(mustSamsa(t, addr, "acl", "list", "--allow-principal", "User:alice")); len(got) != 3 {
		t.Fatalf("acl list alice: %q", got)
	}

	out = mustSamsa(t, addr, "acl", "delete", "--topic", "orders")
	if got := rows(out); !slices.EqualFunc(got, [][]string{want[0], want[2], want[3]}, slices.Equal) {
		t.Fatalf("acl delete --topic orders printed %q, want alice's two ACLs", got)
	}
	if got := rows(mustSamsa(t, addr, "acl", "list")); !slices.EqualFunc(got, [][]string{want[0], want[1], want[4]}, slices.Equal) {
		t.Fatalf("acl list after delete: %q", got)
	}
}

func TestACLCommandsRefuseMisuseAndReportBrokerErrors(t *testing.T) {
	t.Parallel()
	b := startSecureBroker(t)
	for _, c := range []struct {
		args     []string
		code     int
		contains string
	}{
		{[]string{"acl", "create", "--allow-principal", "User:a"}, cli.ExitMisuse, "name a resource"},
		{[]string{"acl", "create", "--topic", "t"}, cli.ExitMisuse, "name a principal"},
		{[]string{"acl", "create", "--allow-principal", "User:a", "--topic", "t", "--operation", "fly"}, cli.ExitMisuse, "--operation"},
		{[]string{"acl", "create", "--allow-principal", "User:a", "--group", "g", "--operation", "write"}, cli.ExitMisuse, "does not apply"},
		{[]string{"acl", "create", "--allow-principal", "User:a", "--topic", "t", "--resource-pattern-type", "match"}, cli.ExitMisuse, "literal or prefixed"},
		{[]string{"acl", "create", "--allow-host", "1.2.3.4", "--topic", "t"}, cli.ExitMisuse, "--allow-principal"},
		{[]string{"acl", "delete", "--allow-principal", "User:a"}, cli.ExitMisuse, "name a resource"},
		{[]string{"acl", "list", "--resource-pattern-type", "sideways"}, cli.ExitMisuse, "--resource-pattern-type"},
		// The broker refuses a principal without a type: INVALID_REQUEST.
		{[]string{"acl", "create", "--allow-principal", "alice", "--topic", "t"}, cli.ExitFailure, "INVALID_REQUEST"},
	} {
		code, out, errs := samsa(t, b.Addr(), c.args...)
		if code != c.code || !strings.Contains(errs, c.contains) {
			t.Errorf("samsa %s: exit %d, stderr %q; want exit %d mentioning %q (stdout %q)",
				strings.Join(c.args, " "), code, errs, c.code, c.contains, out)
		}
	}
}

func TestACLCommandsFailWithoutAuthorizer(t *testing.T) {
	t.Parallel()
	b := testutil.StartBroker(t)
	code, _, errs := samsa(t, b.Addr(), "acl", "list")
	if code != cli.ExitFailure || !strings.Contains(errs, "SECURITY_DISABLED") {
		t.Fatalf("acl list without authorizer: exit %d, stderr %q", code, errs)
	}
}

func TestUserCreateListDeleteRoundTrip(t *testing.T) {
	t.Parallel()
	b := testutil.StartBroker(t)
	addr := b.Addr()
	mustSamsa(t, addr, "user", "create", "alice", "--new-password", "a-secret")
	mustSamsa(t, addr, "user", "create", "alice", "--new-password", "a-secret", "--mechanism", "scram-sha-256", "--iterations", "4096")
	mustSamsa(t, addr, "user", "create", "bob", "--new-password", "b-secret")
	want := [][]string{
		{"USER", "MECHANISM", "ITERATIONS"},
		{"alice", "SCRAM-SHA-256", "4096"},
		{"alice", "SCRAM-SHA-512", "8192"},
		{"bob", "SCRAM-SHA-512", "8192"},
	}
	if got := rows(mustSamsa(t, addr, "user", "list")); !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("user list:\n%q\nwant\n%q", got, want)
	}
	if _, ok := b.Node.Image().ScramCredentials["alice"]["SCRAM-SHA-256"]; !ok {
		t.Fatal("alice's SCRAM-SHA-256 credential is not in the metadata image")
	}

	mustSamsa(t, addr, "user", "delete", "alice", "--mechanism", "SCRAM-SHA-256")
	out := mustSamsa(t, addr, "user", "delete", "bob")
	if !strings.Contains(out, "deleted user bob (SCRAM-SHA-512)") {
		t.Fatalf("user delete bob printed %q", out)
	}
	if got := rows(mustSamsa(t, addr, "user", "list")); !slices.EqualFunc(got, [][]string{want[0], want[2]}, slices.Equal) {
		t.Fatalf("user list after deletes: %q", got)
	}

	for _, c := range []struct {
		args     []string
		code     int
		contains string
	}{
		{[]string{"user", "delete", "bob", "--mechanism", "SCRAM-SHA-512"}, cli.ExitFailure, "RESOURCE_NOT_FOUND"},
		{[]string{"user", "list", "nobody"}, cli.ExitFailure, "no SCRAM credentials"},
		{[]string{"user", "create", "carol", "--new-password", "c", "--iterations", "100"}, cli.ExitFailure, ""},
		{[]string{"user", "create", "carol"}, cli.ExitMisuse, "--new-password"},
		{[]string{"user", "create", "carol", "--new-password", "c", "--mechanism", "MD5"}, cli.ExitMisuse, "--mechanism"},
	} {
		code, _, errs := samsa(t, addr, c.args...)
		if code != c.code || !strings.Contains(errs, c.contains) {
			t.Errorf("samsa %s: exit %d, stderr %q; want exit %d mentioning %q", strings.Join(c.args, " "), code, errs, c.code, c.contains)
		}
	}
}

// Reference: KIP-554 (a user made with the admin API logs in with SCRAM).
func TestSASLFlagsAuthenticateCommandsWithSCRAM(t *testing.T) {
	t.Parallel()
	b := startSecureBroker(t,
		"listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
		"inter.broker.listener.name=PLAINTEXT",
	)
	var saslAddr string
	for _, br := range b.Node.Image().Brokers {
		if host, port, ok := br.Endpoint("SASL_PLAINTEXT"); ok {
			saslAddr = fmt.Sprintf("%s:%d", host, port)
		}
	}
	if saslAddr == "" {
		t.Fatal("no SASL_PLAINTEXT endpoint")
	}
	mustSamsa(t, b.Addr(), "user", "create", "ops", "--new-password", "ops-secret")

	// Authenticated but not authorized: listing users needs DESCRIBE on
	// the cluster.
	code, _, errs := samsa(t, saslAddr, "--sasl-mechanism", "SCRAM-SHA-512", "--user", "ops", "--password", "ops-secret", "user", "list")
	if code != cli.ExitFailure || !strings.Contains(errs, "CLUSTER_AUTHORIZATION_FAILED") {
		t.Fatalf("user list without DESCRIBE: exit %d, stderr %q", code, errs)
	}
	mustSamsa(t, b.Addr(), "acl", "create", "--allow-principal", "User:ops", "--cluster", "--operation", "describe")
	out := mustSamsa(t, saslAddr, "--sasl-mechanism", "SCRAM-SHA-512", "--user", "ops", "--password", "ops-secret", "user", "list")
	if got := rows(out); len(got) != 2 || got[1][0] != "ops" {
		t.Fatalf("user list over SASL: %q", out)
	}

	code, _, errs = samsa(t, saslAddr, "--sasl-mechanism", "SCRAM-SHA-512", "--user", "ops", "--password", "wrong", "user", "list")
	if code != cli.ExitFailure || !strings.Contains(errs, "SASL_AUTHENTICATION_FAILED") {
		t.Fatalf("wrong password: exit %d, stderr %q; want exit 1 naming SASL_AUTHENTICATION_FAILED", code, errs)
	}
	code, _, errs = samsa(t, saslAddr, "--sasl-mechanism", "SCRAM-SHA-512", "--user", "ops", "user", "list")
	if code != cli.ExitMisuse || !strings.Contains(errs, "--password") {
		t.Fatalf("no password: exit %d, stderr %q; want exit 2", code, errs)
	}
}
