package node

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"samsa/internal/config"
)

func TestLoggerJSONLinesParseAndPackageLevelsFilter(t *testing.T) {
	cfg, err := config.Load("", []string{"log.format=json", "log.level=info", "log.level.overrides=group=warn,replica=debug"})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	log := NewLogger(&buf, cfg)
	broker := log.With(PkgKey, "broker", "node", 1)
	group := broker.With(PkgKey, "group")
	replica := broker.With(PkgKey, "replica")

	broker.Debug("broker debug")   // dropped: broker is at info
	broker.Info("broker info")     // kept
	group.Info("group info")       // dropped: group is at warn
	group.Warn("group warn")       // kept
	replica.Debug("replica debug") // kept: replica is at debug
	log.Debug("root debug")        // dropped
	if group.Enabled(t.Context(), slog.LevelInfo) {
		t.Error("group logger enabled at info")
	}

	var got []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		got = append(got, m)
		if strings.Count(line, `"pkg"`) != 1 {
			t.Errorf("line %q: want one pkg", line)
		}
	}
	want := []struct{ msg, pkg string }{{"broker info", "broker"}, {"group warn", "group"}, {"replica debug", "replica"}}
	if len(got) != len(want) {
		t.Fatalf("got %d lines, want %d:\n%s", len(got), len(want), buf.String())
	}
	for i, w := range want {
		if got[i]["msg"] != w.msg || got[i]["pkg"] != w.pkg || got[i]["node"] != float64(1) {
			t.Errorf("line %d = %v, want msg %q pkg %q node 1", i, got[i], w.msg, w.pkg)
		}
	}
}

func TestLoggerTextIsDefault(t *testing.T) {
	cfg, err := config.Load("", nil)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	log := NewLogger(&buf, cfg).With(PkgKey, "storage")
	log.Debug("hidden")
	log.Info("storage: deleted segments", "topic", "t", "partition", 0)
	out := buf.String()
	if !strings.Contains(out, `level=INFO msg="storage: deleted segments" pkg=storage topic=t partition=0`) || strings.Contains(out, "hidden") {
		t.Fatalf("text output %q", out)
	}
}
