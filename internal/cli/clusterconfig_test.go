package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"samsa/internal/cli"
	"samsa/internal/testutil"
)

type configDoc struct {
	Broker  int32 `json:"broker"`
	Configs []struct {
		Name          string  `json:"name"`
		Value         *string `json:"value"`
		Source        string  `json:"source"`
		Default       *string `json:"default"`
		ReadOnly      bool    `json:"read_only"`
		Documentation string  `json:"documentation"`
		Synonyms      []struct {
			Name   string `json:"name"`
			Source string `json:"source"`
		} `json:"synonyms"`
	} `json:"configs"`
}

func TestClusterConfigDescribeGetSet(t *testing.T) {
	b := testutil.StartBroker(t, "num.partitions=3")
	addr := b.Addr()

	// Static (the override), default, read-only: source and default columns.
	out := mustSamsa(t, addr, "cluster", "config", "describe")
	byName := map[string][]string{}
	for _, r := range rows(out) {
		byName[r[0]] = r
	}
	if r := byName["num.partitions"]; len(r) != 5 || r[1] != "3" || r[2] != "STATIC_BROKER_CONFIG" || r[3] != "1" {
		t.Fatalf("num.partitions row %q in\n%s", r, out)
	}
	if r := byName["log.segment.bytes"]; len(r) != 5 || r[2] != "DEFAULT_CONFIG" || r[1] != r[3] {
		t.Fatalf("log.segment.bytes row %q", r)
	}

	// Set cluster-wide, then read back with get: a dynamic source.
	out = mustSamsa(t, addr, "cluster", "config", "set", "log.retention.ms=86400000")
	if !strings.Contains(out, "set log.retention.ms=86400000 (cluster-wide)") {
		t.Fatalf("set: %q", out)
	}
	testutil.Eventually(t, 10*time.Second, func() error {
		out := mustSamsa(t, addr, "cluster", "config", "get", "log.retention.ms", "--format", "json")
		var doc configDoc
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatalf("get --format json: %v\n%s", err, out)
		}
		if len(doc.Configs) != 1 || doc.Configs[0].Value == nil || *doc.Configs[0].Value != "86400000" ||
			doc.Configs[0].Source != "DYNAMIC_DEFAULT_BROKER_CONFIG" {
			return fmt.Errorf("get: %s", out)
		}
		if doc.Configs[0].Documentation == "" || len(doc.Configs[0].Synonyms) == 0 {
			t.Fatalf("no documentation or synonyms: %s", out)
		}
		return nil
	})
	out = mustSamsa(t, addr, "cluster", "config", "describe", "--dynamic")
	if !strings.Contains(out, "log.retention.ms") || strings.Contains(out, "num.partitions") {
		t.Fatalf("describe --dynamic:\n%s", out)
	}

	// JSON of describe parses and holds every config.
	var doc configDoc
	if err := json.Unmarshal([]byte(mustSamsa(t, addr, "cluster", "config", "describe", "--format", "json")), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Configs) < 20 {
		t.Fatalf("describe --format json: %d configs", len(doc.Configs))
	}
	var readOnly string
	for _, c := range doc.Configs {
		if c.ReadOnly && readOnly == "" {
			readOnly = c.Name
		}
	}

	// An unknown name, a near miss and a read-only config fail clearly.
	code, _, errs := samsa(t, addr, "cluster", "config", "get", "log.segment.byte")
	if code != cli.ExitFailure || !strings.Contains(errs, "has no config log.segment.byte (did you mean log.segment.bytes?)") {
		t.Fatalf("get unknown: exit %d, stderr %q", code, errs)
	}
	code, _, errs = samsa(t, addr, "cluster", "config", "set", "no.such.config=1")
	if code != cli.ExitFailure || !strings.Contains(errs, "INVALID_CONFIG") {
		t.Fatalf("set unknown: exit %d, stderr %q", code, errs)
	}
	if readOnly == "" {
		t.Fatal("no read-only config listed")
	}
	code, _, errs = samsa(t, addr, "cluster", "config", "set", readOnly+"=1")
	if code != cli.ExitFailure || !strings.Contains(errs, readOnly) {
		t.Fatalf("set read-only %s: exit %d, stderr %q", readOnly, code, errs)
	}
	t.Logf("read-only %s: %s", readOnly, errs)
}

func TestClusterLogDirs(t *testing.T) {
	b := testutil.StartBroker(t)
	adm := b.Admin()
	testutil.CreateTopic(t, adm, "sized", 2)
	cl := b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := 0; i < 20; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "sized", Partition: 1, Value: make([]byte, 100)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	out := mustSamsa(t, b.Addr(), "cluster", "log-dirs", "--topic", "sized")
	tables := strings.Split(out, "\n\n")
	if len(tables) != 2 {
		t.Fatalf("want two tables:\n%s", out)
	}
	dirs := rows(tables[0])
	if len(dirs) != 2 || dirs[1][0] != "0" || dirs[1][5] != "-" {
		t.Fatalf("dirs table:\n%s", tables[0])
	}
	parts := rows(tables[1])
	if len(parts) != 3 || parts[1][0] != "sized" || parts[2][1] != "1" || parts[2][4] == "0" || parts[2][5] != "0" {
		t.Fatalf("partitions table:\n%s", tables[1])
	}

	var doc struct {
		LogDirs []struct {
			Broker      int32  `json:"broker"`
			Dir         string `json:"dir"`
			TotalBytes  int64  `json:"total_bytes"`
			UsableBytes int64  `json:"usable_bytes"`
			SizeBytes   int64  `json:"size_bytes"`
			Partitions  []struct {
				Topic     string `json:"topic"`
				Partition int32  `json:"partition"`
				SizeBytes int64  `json:"size_bytes"`
				OffsetLag int64  `json:"offset_lag"`
			} `json:"partitions"`
		} `json:"log_dirs"`
	}
	js := mustSamsa(t, b.Addr(), "cluster", "log-dirs", "--format", "json")
	if err := json.Unmarshal([]byte(js), &doc); err != nil {
		t.Fatalf("%v\n%s", err, js)
	}
	if len(doc.LogDirs) != 1 {
		t.Fatalf("log dirs %s", js)
	}
	d := doc.LogDirs[0]
	if d.Dir == "" || d.TotalBytes <= 0 || d.UsableBytes <= 0 || d.UsableBytes > d.TotalBytes || d.SizeBytes < 1000 {
		t.Fatalf("dir %+v", d)
	}
	var found bool
	for _, p := range d.Partitions {
		if p.Topic == "sized" && p.Partition == 1 {
			found = p.SizeBytes == d.SizeBytes && p.OffsetLag == 0
		}
	}
	if !found {
		t.Fatalf("sized-1 missing or wrong: %s", js)
	}
}
