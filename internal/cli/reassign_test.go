package cli_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"samsa/internal/cli"
	"samsa/internal/testutil"
)

// TestTopicReassignAgainstCluster moves a partition to another broker with
// `topic reassign --wait`, then checks the listing and the misuse and
// failure exits.
func TestTopicReassignAgainstCluster(t *testing.T) {
	c := testutil.StartCluster(t, 2, "offsets.topic.num.partitions=1")
	addr := c.Addrs()[0]
	const topic = "moved"
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := c.Admin().CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	from := c.Brokers[0].Node.Image().Topics[topic].Replicas[0][0]
	to := 1 - from

	out := mustSamsa(t, addr, "topic", "reassign", topic, "--partition", "0", "--replicas", fmt.Sprint(to), "--wait")
	want := fmt.Sprintf("reassigning %s-0 to replicas %d\nreassignment of %s-0 finished\n", topic, to, topic)
	if out != want {
		t.Fatalf("reassign:\n%q\nwant\n%q", out, want)
	}
	for i, b := range c.Brokers {
		if got := b.Node.Image().Topics[topic].Replicas[0]; !slices.Equal(got, []int32{to}) {
			t.Fatalf("broker %d sees replicas %v, want [%d]", i, got, to)
		}
	}
	if out := mustSamsa(t, addr, "topic", "reassignments"); out != "TOPIC  PARTITION  REPLICAS  ADDING  REMOVING\n" {
		t.Fatalf("reassignments: %q", out)
	}
	if out := mustSamsa(t, addr, "topic", "reassignments", topic); out != "TOPIC  PARTITION  REPLICAS  ADDING  REMOVING\n" {
		t.Fatalf("reassignments %s: %q", topic, out)
	}
	if out := mustSamsa(t, addr, "topic", "reassignments", "--format", "json"); out != "{\n  \"reassignments\": []\n}\n" {
		t.Fatalf("reassignments --format json: %q", out)
	}

	for _, tc := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"topic", "reassign", topic, "--partition", "0"}, cli.ExitMisuse, "give --replicas or --cancel"},
		{[]string{"topic", "reassign", topic, "--partition", "0", "--replicas", "1", "--cancel"}, cli.ExitMisuse, "not both"},
		{[]string{"topic", "reassign", topic, "--replicas", "1"}, cli.ExitMisuse, "--partition is required"},
		{[]string{"topic", "reassign", topic, "--partition", "0", "--replicas", "1,x"}, cli.ExitMisuse, "want broker ids"},
		{[]string{"topic", "reassign", topic, "--partition", "0", "--cancel"}, cli.ExitFailure, "NO_REASSIGNMENT_IN_PROGRESS"},
		{[]string{"topic", "reassign", topic, "--partition", "0", "--replicas", "5"}, cli.ExitFailure, "INVALID_REPLICA_ASSIGNMENT"},
		{[]string{"topic", "reassign", topic, "--partition", "3", "--replicas", "0"}, cli.ExitFailure, "UNKNOWN_TOPIC_OR_PARTITION"},
	} {
		code, _, errs := samsa(t, addr, tc.args...)
		if code != tc.code || !strings.Contains(errs, tc.stderr) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d with %q", tc.args, code, errs, tc.code, tc.stderr)
		}
	}
}
