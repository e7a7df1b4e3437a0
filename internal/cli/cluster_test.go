package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"samsa/internal/cli"
	"samsa/internal/testutil"
)

// TestClusterDescribeListsBrokersAndController checks `cluster describe`
// against a 3-broker cluster: every broker with its address, and the
// controller marked on exactly the broker the header names.
func TestClusterDescribeListsBrokersAndController(t *testing.T) {
	c := testutil.StartCluster(t, 3, "broker.rack=r1")
	out := mustSamsa(t, c.Addrs()[1], "cluster", "describe")
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) != 5 {
		t.Fatalf("want a header, a table head and 3 brokers:\n%s", out)
	}
	var clusterID string
	var controller, brokers int
	if _, err := fmt.Sscanf(lines[0], "Cluster: %s\tController: %d\tBrokers: %d", &clusterID, &controller, &brokers); err != nil {
		t.Fatalf("header %q: %v", lines[0], err)
	}
	if clusterID == "" || brokers != 3 || controller < 0 || controller > 2 {
		t.Fatalf("header %q", lines[0])
	}
	if got := strings.Fields(lines[1]); !slices.Equal(got, []string{"BROKER", "ADDRESS", "RACK", "CONTROLLER"}) {
		t.Fatalf("table head %q", lines[1])
	}
	for i, l := range lines[2:] {
		ctl := "-"
		if i == controller {
			ctl = "yes"
		}
		want := []string{fmt.Sprint(i), c.Brokers[i].Addr(), "r1", ctl}
		if got := strings.Fields(l); !slices.Equal(got, want) {
			t.Errorf("broker row %q, want %q", l, want)
		}
	}
}

// TestElectLeadersPreferredMovesLeadershipBack kills the preferred leader of
// some partitions, checks that `topic describe` shows it offline, restarts
// it, and checks that a preferred election gives it back the leadership of
// exactly those partitions.
func TestElectLeadersPreferredMovesLeadershipBack(t *testing.T) {
	c := testutil.StartCluster(t, 3, "auto.leader.rebalance.enable=false")
	const topic = "elect"
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := c.Admin().CreateTopic(ctx, 3, 3, nil, topic); err != nil {
		t.Fatal(err)
	}
	// preferred[p] is partition p's first replica.
	replicas := c.Brokers[0].Node.Image().Topics[topic].Replicas
	preferred := make([]int32, len(replicas))
	for p, rs := range replicas {
		preferred[p] = rs[0]
	}
	waitLeaders(t, c, topic, preferred)

	const victim = 0
	var moved []int32 // partitions whose preferred leader is the victim
	for p, id := range preferred {
		if id == victim {
			moved = append(moved, int32(p))
		}
	}
	if len(moved) == 0 {
		t.Fatalf("broker %d prefers no partition of %v", victim, preferred)
	}
	c.Kill(victim)
	addr := c.Addrs()[0]
	testutil.Eventually(t, 20*time.Second, func() error {
		for _, p := range moved {
			if l := c.Leader(topic, p); l == victim || l < 0 {
				return fmt.Errorf("partition %d led by %d", p, l)
			}
		}
		return nil
	})

	// Every partition has a replica on the victim: it shows as offline.
	testutil.Eventually(t, 20*time.Second, func() error {
		_, out, _ := samsa(t, addr, "topic", "describe", topic)
		rows := section(t, out, "PARTITION")
		if len(rows) != 3 {
			return fmt.Errorf("want 3 partition rows:\n%s", out)
		}
		for _, f := range rows {
			// PARTITION LEADER EPOCH REPLICAS ISR OFFLINE ELR LAST-KNOWN-ELR LOG-START LOG-END ERROR
			if len(f) != 11 || f[5] != fmt.Sprint(victim) || f[1] == fmt.Sprint(victim) {
				return fmt.Errorf("row %q: want broker %d offline and not leading", f, victim)
			}
		}
		return nil
	})

	// While the victim is down its partitions cannot get it back.
	code, out, errs := samsa(t, addr, "cluster", "elect-leaders", "--topic", topic, "--partition", fmt.Sprint(moved[0]))
	if code != cli.ExitFailure || !strings.Contains(out, "PREFERRED_LEADER_NOT_AVAILABLE") || !strings.Contains(errs, "1 of 1 partitions failed") {
		t.Fatalf("elect while down: exit %d\n%s\n%s", code, out, errs)
	}

	c.Start(victim)
	testutil.Eventually(t, 30*time.Second, func() error {
		for p := range preferred {
			if isr := c.ISR(topic, int32(p)); isr != "0 1 2" {
				return fmt.Errorf("partition %d ISR %q", p, isr)
			}
		}
		return nil
	})
	for _, p := range moved {
		if l := c.Leader(topic, p); l == victim {
			t.Fatalf("partition %d led by %d before the election", p, l)
		}
	}

	// No topic: every partition is considered, only those elected listed.
	out = mustSamsa(t, addr, "cluster", "elect-leaders")
	want := "TOPIC  PARTITION  RESULT\n"
	for _, p := range moved {
		want += fmt.Sprintf("%s  %d          elected\n", topic, p)
	}
	if out != want {
		t.Fatalf("elect-leaders:\n%q\nwant\n%q", out, want)
	}
	waitLeaders(t, c, topic, preferred)

	// Named partitions are all listed; not needed is not a failure.
	out = mustSamsa(t, addr, "cluster", "elect-leaders", "--topic", topic)
	r := rows(out)
	if len(r) != 1+len(preferred) {
		t.Fatalf("elect-leaders --topic: want every partition:\n%s", out)
	}
	for p := range preferred {
		if len(r[p+1]) < 3 || !slices.Equal(r[p+1][:3], []string{topic, fmt.Sprint(p), "ELECTION_NOT_NEEDED:"}) {
			t.Fatalf("elect-leaders --topic: row %d:\n%s", p, out)
		}
	}
	out = mustSamsa(t, addr, "cluster", "elect-leaders", "--type", "unclean", "--topic", topic, "-p", "1")
	if r := rows(out); len(r) != 2 || len(r[1]) < 3 || !slices.Equal(r[1][:3], []string{topic, "1", "ELECTION_NOT_NEEDED:"}) {
		t.Fatalf("unclean with a live leader:\n%s", out)
	}

	for _, tc := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"cluster", "elect-leaders", "--partition", "0"}, cli.ExitMisuse, "--partition needs --topic"},
		{[]string{"cluster", "elect-leaders", "--type", "random"}, cli.ExitMisuse, `--type "random"`},
		{[]string{"cluster", "elect-leaders", "--topic", topic, "--partition", "-1"}, cli.ExitMisuse, "want a partition number"},
		{[]string{"cluster", "elect-leaders", "--topic", "nosuch"}, cli.ExitFailure, "UNKNOWN_TOPIC_OR_PARTITION"},
		{[]string{"cluster", "elect-leaders", "--topic", topic, "--partition", "7"}, cli.ExitFailure, "1 of 1 partitions failed"},
		{[]string{"cluster", "describe", "extra"}, cli.ExitMisuse, "accepts 0 arg(s)"},
	} {
		code, _, errs := samsa(t, addr, tc.args...)
		if code != tc.code || !strings.Contains(errs, tc.stderr) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d with %q", tc.args, code, errs, tc.code, tc.stderr)
		}
	}
}

// waitLeaders waits until partition p of topic is led by want[p].
func waitLeaders(t *testing.T, c *testutil.Cluster, topic string, want []int32) {
	t.Helper()
	testutil.Eventually(t, 20*time.Second, func() error {
		for p, id := range want {
			if l := c.Leader(topic, int32(p)); l != id {
				return fmt.Errorf("partition %d led by %d, want %d", p, l, id)
			}
		}
		return nil
	})
}

// TestTopicDescribeShowsEligibleLeaderReplicas stops the two followers of
// a partition with min.insync.replicas 2 one after the other: the second
// leaves the ISR below min ISR and joins the ELR (KIP-966), which `topic
// describe` shows in its ELR column and JSON.
func TestTopicDescribeShowsEligibleLeaderReplicas(t *testing.T) {
	t.Parallel()
	c := testutil.StartCluster(t, 3, "min.insync.replicas=2", "auto.leader.rebalance.enable=false")
	const topic = "elr"
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := c.Admin().CreateTopic(ctx, 1, 3, nil, topic); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 20*time.Second, func() error {
		if isr := c.ISR(topic, 0); isr != "0 1 2" {
			return fmt.Errorf("ISR %q", isr)
		}
		return nil
	})
	l := c.Leader(topic, 0)
	var others []int
	for i := range 3 {
		if int32(i) != l {
			others = append(others, i)
		}
	}
	c.Stop(others[0])
	c.Stop(others[1])
	addr := c.Brokers[l].Addr()
	testutil.Eventually(t, 20*time.Second, func() error {
		out := mustSamsa(t, addr, "topic", "describe", topic)
		rows := section(t, out, "PARTITION")
		// PARTITION LEADER EPOCH REPLICAS ISR OFFLINE ELR LAST-KNOWN-ELR LOG-START LOG-END ERROR
		if len(rows) != 1 || len(rows[0]) != 11 || rows[0][4] != fmt.Sprint(l) || rows[0][6] != fmt.Sprint(others[1]) || rows[0][7] != "-" {
			return fmt.Errorf("want ISR %d and ELR %d:\n%s", l, others[1], out)
		}
		return nil
	})
	out := mustSamsa(t, addr, "topic", "describe", topic, "--format", "json")
	var doc struct {
		Topics []struct {
			Partitions []struct {
				ELR          []int32 `json:"elr"`
				LastKnownELR []int32 `json:"last_known_elr"`
			} `json:"partitions"`
		} `json:"topics"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Topics) != 1 || len(doc.Topics[0].Partitions) != 1 ||
		!slices.Equal(doc.Topics[0].Partitions[0].ELR, []int32{int32(others[1])}) || doc.Topics[0].Partitions[0].LastKnownELR == nil {
		t.Fatalf("JSON: want elr [%d] and an empty last_known_elr:\n%s", others[1], out)
	}
}
