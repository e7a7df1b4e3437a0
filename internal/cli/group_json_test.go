package cli_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"samsa/internal/cli"
	"samsa/internal/testutil"
)

// TestGroupDescribeAllAndJSON describes several groups over several
// topics at once, by name and with --all, as text and as JSON, and lists
// them as JSON.
func TestGroupDescribeAllAndJSON(t *testing.T) {
	b := testutil.StartBroker(t)
	adm := b.Admin()
	testutil.CreateTopic(t, adm, "ta", 2)
	testutil.CreateTopic(t, adm, "tb", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	commit := func(group string, os ...kadm.Offset) {
		t.Helper()
		var set kadm.Offsets
		for _, o := range os {
			set.Add(o)
		}
		if err := adm.CommitAllOffsets(ctx, group, set); err != nil {
			t.Fatal(err)
		}
	}
	commit("ga", kadm.Offset{Topic: "ta", Partition: 0, At: 0, LeaderEpoch: -1}, kadm.Offset{Topic: "tb", Partition: 0, At: 0, LeaderEpoch: -1})
	commit("gb", kadm.Offset{Topic: "ta", Partition: 1, At: 0, LeaderEpoch: -1})

	out := mustSamsa(t, b.Addr(), "group", "describe", "ga", "gb")
	if strings.Count(out, "Group: ") != 2 || !strings.Contains(out, "tb     0") {
		t.Fatalf("describe ga gb:\n%s", out)
	}

	var doc struct {
		Groups []struct {
			Group   string `json:"group"`
			State   string `json:"state"`
			Offsets []struct {
				Topic     string `json:"topic"`
				Partition int32  `json:"partition"`
				Committed *int64 `json:"committed"`
				LogEnd    *int64 `json:"log_end"`
				Lag       *int64 `json:"lag"`
			} `json:"offsets"`
		} `json:"groups"`
	}
	js := mustSamsa(t, b.Addr(), "group", "describe", "--all", "--format", "json")
	if err := json.Unmarshal([]byte(js), &doc); err != nil {
		t.Fatalf("%v\n%s", err, js)
	}
	if len(doc.Groups) != 2 || doc.Groups[0].Group != "ga" || doc.Groups[1].Group != "gb" {
		t.Fatalf("groups %s", js)
	}
	ga := doc.Groups[0]
	if ga.State != "Empty" || len(ga.Offsets) != 2 || ga.Offsets[1].Topic != "tb" ||
		ga.Offsets[1].Committed == nil || *ga.Offsets[1].Committed != 0 || ga.Offsets[1].Lag == nil || *ga.Offsets[1].Lag != 0 {
		t.Fatalf("ga %s", js)
	}

	var list struct {
		Groups []struct {
			Group string `json:"group"`
			State string `json:"state"`
		} `json:"groups"`
	}
	js = mustSamsa(t, b.Addr(), "group", "list", "--format", "json")
	if err := json.Unmarshal([]byte(js), &list); err != nil || len(list.Groups) != 2 || list.Groups[1].Group != "gb" {
		t.Fatalf("group list --format json: %v\n%s", err, js)
	}

	code, _, errs := samsa(t, b.Addr(), "group", "describe", "ga", "--all")
	if code != cli.ExitMisuse || !strings.Contains(errs, "--all") {
		t.Fatalf("names and --all: exit %d, stderr %q", code, errs)
	}
	code, _, errs = samsa(t, b.Addr(), "group", "list", "--format", "yaml")
	if code != cli.ExitMisuse || !strings.Contains(errs, "want text or json") {
		t.Fatalf("--format yaml: exit %d, stderr %q", code, errs)
	}
}
