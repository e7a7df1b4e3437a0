package cli_test

import (
	"encoding/json"
	"strings"
	"testing"

	"samsa/internal/cli"
	"samsa/internal/testutil"
)

// TestGroupConfigDescribeGetSetDelete: set stores a group's configs,
// describe and get show them as GROUP_CONFIG next to the broker's value,
// a refused change (unknown name, out of bounds) exits 1 with the
// broker's error and stores nothing, --validate-only stores nothing, and
// delete gives the group the broker's value back.
func TestGroupConfigDescribeGetSetDelete(t *testing.T) {
	b := testutil.StartBroker(t, "share.auto.offset.reset=earliest")
	addr := b.Addr()
	const group = "cli-gc"

	byName := func(out string) map[string][]string {
		m := map[string][]string{}
		for _, r := range rows(out) {
			m[r[0]] = r
		}
		return m
	}
	out := mustSamsa(t, addr, "group", "config", "describe", group)
	m := byName(out)
	if r := m["share.auto.offset.reset"]; len(r) != 4 || r[1] != "earliest" || r[2] != "STATIC_BROKER_CONFIG" || r[3] != "earliest" {
		t.Fatalf("share.auto.offset.reset row %q in\n%s", r, out)
	}
	if r := m["consumer.heartbeat.interval.ms"]; len(r) != 4 || r[1] != "5000" || r[2] != "DEFAULT_CONFIG" {
		t.Fatalf("consumer.heartbeat.interval.ms row %q in\n%s", r, out)
	}

	out = mustSamsa(t, addr, "group", "config", "set", group, "share.auto.offset.reset=latest", "consumer.heartbeat.interval.ms=6000")
	if !strings.Contains(out, "set consumer.heartbeat.interval.ms=6000 (group cli-gc)") || !strings.Contains(out, "set share.auto.offset.reset=latest (group cli-gc)") {
		t.Fatalf("set: %q", out)
	}
	m = byName(mustSamsa(t, addr, "group", "config", "describe", group, "--overrides"))
	if len(m) != 3 || m["share.auto.offset.reset"][1] != "latest" || m["share.auto.offset.reset"][2] != "GROUP_CONFIG" ||
		m["share.auto.offset.reset"][3] != "earliest" || m["consumer.heartbeat.interval.ms"][1] != "6000" {
		t.Fatalf("describe --overrides: %v", m)
	}

	for _, args := range [][]string{
		{"set", group, "consumer.max.poll.records=5"},
		{"set", group, "consumer.heartbeat.interval.ms=1"},
	} {
		code, _, errs := samsa(t, addr, append([]string{"group", "config"}, args...)...)
		if code != cli.ExitFailure || !strings.Contains(errs, "INVALID_CONFIG") {
			t.Errorf("%v: exit %d, stderr %q", args, code, errs)
		}
	}
	if out := mustSamsa(t, addr, "group", "config", "set", group, "share.isolation.level=read_committed", "--validate-only"); !strings.Contains(out, "valid share.isolation.level=read_committed") {
		t.Errorf("validate only: %q", out)
	}
	var doc struct {
		Group   string `json:"group"`
		Configs []struct {
			Name     string  `json:"name"`
			Value    *string `json:"value"`
			Source   string  `json:"source"`
			Synonyms []struct {
				Name   string `json:"name"`
				Source string `json:"source"`
			} `json:"synonyms"`
		} `json:"configs"`
	}
	out = mustSamsa(t, addr, "group", "config", "get", group, "share.isolation.level", "consumer.heartbeat.interval.ms", "--format", "json")
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("get --format json: %v\n%s", err, out)
	}
	if doc.Group != group || len(doc.Configs) != 2 || *doc.Configs[0].Value != "read_uncommitted" || doc.Configs[0].Source != "DEFAULT_CONFIG" ||
		*doc.Configs[1].Value != "6000" || len(doc.Configs[1].Synonyms) != 2 || doc.Configs[1].Synonyms[0].Source != "GROUP_CONFIG" {
		t.Fatalf("get: %s", out)
	}
	if code, _, errs := samsa(t, addr, "group", "config", "get", group, "share.isolation.levle"); code != cli.ExitFailure || !strings.Contains(errs, "did you mean share.isolation.level?") {
		t.Errorf("get of a misspelt name: exit %d, stderr %q", code, errs)
	}

	if out := mustSamsa(t, addr, "group", "config", "delete", group, "share.auto.offset.reset"); !strings.Contains(out, "deleted share.auto.offset.reset (group cli-gc)") {
		t.Fatalf("delete: %q", out)
	}
	m = byName(mustSamsa(t, addr, "group", "config", "describe", group))
	if r := m["share.auto.offset.reset"]; r[1] != "earliest" || r[2] != "STATIC_BROKER_CONFIG" {
		t.Fatalf("after delete: %q", r)
	}
	if r := m["consumer.heartbeat.interval.ms"]; r[1] != "6000" || r[2] != "GROUP_CONFIG" {
		t.Fatalf("delete removed another config: %q", r)
	}
}
