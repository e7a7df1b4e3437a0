package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestProduceConsumeRoundTrip(t *testing.T) {
	addr := newFake(t, seedTopics(3, "orders"))
	in := "k1:hello\nk2:world:with:colons\nno-key-line\n:empty-key\nk5:\n"
	r := mustRun(t, in, "-b", addr, "produce", "orders", "--partition", "1",
		"--key-separator", ":", "--header", "src=cli", "--header", "n=1")
	if !strings.Contains(r.stderr, "produced 5 records") || !strings.Contains(r.stderr, "0 failed") {
		t.Fatalf("summary %q", r.stderr)
	}

	r = mustRun(t, "", "-b", addr, "consume", "orders", "--from", "beginning", "--count", "5",
		"--format", `%T/%p@%o [%k]=[%v] %h %K/%S\n`)
	want := "" +
		"orders/1@0 [k1]=[hello] src=cli,n=1 2/5\n" +
		"orders/1@1 [k2]=[world:with:colons] src=cli,n=1 2/17\n" +
		"orders/1@2 []=[no-key-line] src=cli,n=1 -1/11\n" +
		"orders/1@3 []=[empty-key] src=cli,n=1 0/9\n" +
		"orders/1@4 [k5]=[] src=cli,n=1 2/0\n"
	if r.stdout != want {
		t.Fatalf("consume output:\n%s\nwant:\n%s", r.stdout, want)
	}

	// Only partition 1 has records: the other partitions are empty.
	r = mustRun(t, "", "-b", addr, "consume", "orders", "--partition", "0", "--from", "beginning", "--timeout", "300ms")
	if r.stdout != "" {
		t.Fatalf("partition 0: %q, want nothing", r.stdout)
	}

	r = mustRun(t, "", "-b", addr, "consume", "orders", "--from", "beginning", "--count", "1", "--json")
	var j jsonRecord
	if err := json.Unmarshal([]byte(r.stdout), &j); err != nil {
		t.Fatalf("json %q: %v", r.stdout, err)
	}
	if j.Topic != "orders" || j.Partition != 1 || j.Offset != 0 || *j.Key != "k1" || *j.Value != "hello" ||
		len(j.Headers) != 2 || j.Headers[0].Key != "src" || *j.Headers[0].Value != "cli" || j.Timestamp <= 0 {
		t.Fatalf("json record %+v", j)
	}
}

func TestProduceManyLinesKeepsOrder(t *testing.T) {
	addr := newFake(t, seedTopics(1, "seq"))
	const n = 2000
	var in strings.Builder
	for i := range n {
		fmt.Fprintf(&in, "line-%d\n", i)
	}
	mustRun(t, in.String(), "-b", addr, "produce", "seq", "--compression", "zstd", "--acks", "1")
	r := mustRun(t, "", "-b", addr, "consume", "seq", "--from", "beginning", "--count", fmt.Sprint(n), "--format", `%o %v\n`)
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if len(lines) != n {
		t.Fatalf("%d lines, want %d", len(lines), n)
	}
	for i, l := range lines {
		if want := fmt.Sprintf("%d line-%d", i, i); l != want {
			t.Fatalf("line %d = %q, want %q", i, l, want)
		}
	}
}

func TestProduceFailureExitsNonZero(t *testing.T) {
	addr := newFake(t, seedTopics(1, "one"))
	// Partition 7 does not exist.
	r := runCLI(t, "a\nb\n", "-b", addr, "produce", "one", "--partition", "7")
	if r.code != ExitFailure {
		t.Fatalf("exit %d, want %d; stderr %q", r.code, ExitFailure, r.stderr)
	}
	if !strings.Contains(r.stderr, "2 failed") || !strings.Contains(r.stderr, "2 of 2 records failed") {
		t.Fatalf("stderr %q", r.stderr)
	}
}

// produceAt writes values with the given millisecond timestamps to
// partition 0 of topic, in order.
func produceAt(t *testing.T, addr, topic string, ts []int64) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DisableIdempotentWrite(),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i, ms := range ts {
		rec := &kgo.Record{Topic: topic, Partition: 0, Value: fmt.Appendf(nil, "v%d", i), Timestamp: time.UnixMilli(ms)}
		if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestConsumeFromOffsetAndTimestamp(t *testing.T) {
	addr := newFake(t, seedTopics(1, "ts"))
	produceAt(t, addr, "ts", []int64{1000, 2000, 3000, 4000, 5000})
	tests := []struct {
		from string
		want string
	}{
		{"beginning", "0 1000 v0\n1 2000 v1\n2 3000 v2\n3 4000 v3\n4 5000 v4\n"},
		{"3", "3 4000 v3\n4 5000 v4\n"},
		{"@2000", "1 2000 v1\n2 3000 v2\n3 4000 v3\n4 5000 v4\n"},
		{"@3500", "3 4000 v3\n4 5000 v4\n"},
		{"end", ""},
	}
	for _, tt := range tests {
		t.Run(tt.from, func(t *testing.T) {
			r := mustRun(t, "", "-b", addr, "consume", "ts", "--from", tt.from, "--timeout", "500ms",
				"--format", `%o %t %v\n`)
			if r.stdout != tt.want {
				t.Fatalf("--from %s:\n%s\nwant:\n%s", tt.from, r.stdout, tt.want)
			}
		})
	}
}

func TestConsumeUnknownTopicFails(t *testing.T) {
	addr := newFake(t)
	r := runCLI(t, "", "-b", addr, "consume", "nope", "--timeout", "100ms")
	if r.code != ExitFailure || !strings.Contains(r.stderr, "nope") {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
}

func TestTopicCommands(t *testing.T) {
	addr := newFake(t, seedTopics(1, "existing"))
	r := mustRun(t, "", "-b", addr, "topic", "create", "events", "--partitions", "3",
		"--replication-factor", "1", "--config", "retention.ms=60000", "--config", "cleanup.policy=compact")
	if want := "created topic events (partitions 3, replication factor 1)\n"; r.stdout != want {
		t.Fatalf("create: %q, want %q", r.stdout, want)
	}
	r = runCLI(t, "", "-b", addr, "topic", "create", "events")
	if r.code != ExitFailure || !strings.Contains(r.stderr, "TOPIC_ALREADY_EXISTS") {
		t.Fatalf("create twice: exit %d, stderr %q", r.code, r.stderr)
	}

	r = mustRun(t, "", "-b", addr, "topic", "list")
	if want := "TOPIC     PARTITIONS\nevents    3\nexisting  1\n"; r.stdout != want {
		t.Fatalf("list:\n%q\nwant\n%q", r.stdout, want)
	}

	mustRun(t, "a\nb\nc\n", "-b", addr, "produce", "events", "--partition", "2")
	r = mustRun(t, "", "-b", addr, "topic", "describe", "events")
	lines := strings.Split(r.stdout, "\n")
	if !strings.HasPrefix(lines[0], "Topic: events\tID: ") || !strings.HasSuffix(lines[0], "\tPartitions: 3\tReplicationFactor: 1") {
		t.Fatalf("header line %q", lines[0])
	}
	if lines[1] != "Configs: cleanup.policy=compact,retention.ms=60000" {
		t.Fatalf("configs line %q", lines[1])
	}
	rows := lines[3:6]
	for p, row := range rows {
		f := strings.Fields(row)
		// PARTITION LEADER EPOCH REPLICAS ISR OFFLINE ELR LAST-KNOWN-ELR LOG-START LOG-END ERROR
		end := "0"
		if p == 2 {
			end = "3"
		}
		if len(f) != 11 || f[0] != fmt.Sprint(p) || f[5] != "-" || f[6] != "-" || f[7] != "-" || f[8] != "0" || f[9] != end || f[10] != "-" || f[3] != f[4] {
			t.Fatalf("partition row %q", row)
		}
	}

	r = mustRun(t, "", "-b", addr, "topic", "alter-config", "events", "--set", "retention.ms=1000", "--delete", "cleanup.policy")
	if r.stdout != "altered 2 configs of topic events\n" {
		t.Fatalf("alter: %q", r.stdout)
	}
	r = mustRun(t, "", "-b", addr, "topic", "describe", "events")
	if !strings.Contains(r.stdout, "\nConfigs: retention.ms=1000\n") {
		t.Fatalf("after alter:\n%s", r.stdout)
	}

	r = mustRun(t, "", "-b", addr, "topic", "delete", "events")
	if r.stdout != "deleted topic events\n" {
		t.Fatalf("delete: %q", r.stdout)
	}
	r = runCLI(t, "", "-b", addr, "topic", "describe", "events", "existing")
	if r.code != ExitFailure || !strings.Contains(r.stdout, "Topic: events\tError: UNKNOWN_TOPIC_OR_PARTITION") ||
		!strings.Contains(r.stdout, "Topic: existing\tID:") || !strings.Contains(r.stderr, "1 of 2 topics") {
		t.Fatalf("describe deleted: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, "", "-b", addr, "topic", "delete", "events")
	if r.code != ExitFailure || !strings.Contains(r.stderr, "delete topic events") {
		t.Fatalf("delete twice: exit %d, stderr %q", r.code, r.stderr)
	}
}

func TestPerfProduceThenConsume(t *testing.T) {
	addr := newFake(t)
	r := mustRun(t, "", "-b", addr, "perf", "produce", "--topic", "p", "--records", "500",
		"--record-size", "100", "--partitions", "2", "--linger", "1ms", "--batch-max-bytes", "16384", "--json")
	var pr perfResult
	if err := json.Unmarshal([]byte(r.stdout), &pr); err != nil {
		t.Fatalf("%q: %v", r.stdout, err)
	}
	if pr.Mode != "produce" || pr.Records != 500 || pr.Errors != 0 || pr.Bytes != 50000 ||
		pr.RecordsPerSec <= 0 || pr.MBPerSec <= 0 || pr.Latency == nil ||
		pr.Latency.P50 > pr.Latency.P99 || pr.Latency.P99 > pr.Latency.Max || pr.Latency.Max <= 0 {
		t.Fatalf("produce result %+v %+v", pr, pr.Latency)
	}
	r = mustRun(t, "", "-b", addr, "topic", "describe", "p")
	if !strings.Contains(r.stdout, "Partitions: 2") {
		t.Fatalf("topic not created with 2 partitions:\n%s", r.stdout)
	}

	r = mustRun(t, "", "-b", addr, "perf", "consume", "--topic", "p", "--records", "500", "--json")
	var cr perfResult
	if err := json.Unmarshal([]byte(r.stdout), &cr); err != nil {
		t.Fatalf("%q: %v", r.stdout, err)
	}
	if cr.Mode != "consume" || cr.Records != 500 || cr.Bytes != 50000 || cr.RecordsPerSec <= 0 {
		t.Fatalf("consume result %+v", cr)
	}

	// Text output names the same counts.
	r = mustRun(t, "", "-b", addr, "perf", "produce", "--topic", "p", "--records", "10", "--record-size", "10")
	if !strings.Contains(r.stdout, "produce p: 10 records, 100 bytes") || !strings.Contains(r.stdout, "produce latency ms: p50 ") {
		t.Fatalf("text output %q", r.stdout)
	}
	// Asking for more than there is fails after the idle timeout.
	r = runCLI(t, "", "-b", addr, "perf", "consume", "--topic", "p", "--records", "1000", "--timeout", "300ms")
	if r.code != ExitFailure || !strings.Contains(r.stderr, "after 510 of 1000 records") {
		t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

// TestPerfProduceVisibilitySeesEveryRecord checks perf produce
// --visibility: every acknowledged record is seen below the high
// watermark, and the lags are ordered.
func TestPerfProduceVisibilitySeesEveryRecord(t *testing.T) {
	addr := newFake(t)
	r := mustRun(t, "", "-b", addr, "perf", "produce", "--topic", "v", "--records", "300",
		"--record-size", "100", "--partitions", "3", "--acks", "1", "--visibility", "--json")
	var pr perfResult
	if err := json.Unmarshal([]byte(r.stdout), &pr); err != nil {
		t.Fatalf("%q: %v", r.stdout, err)
	}
	v := pr.Visibility
	if pr.Records != 300 || v == nil || v.Records != 300 || v.InvisibleAtLastAck > 300 || v.DrainMs < 0 ||
		v.Lag.P50 > v.Lag.P99 || v.Lag.P99 > v.Lag.Max {
		t.Fatalf("produce result %+v, visibility %+v", pr, v)
	}
	r = mustRun(t, "", "-b", addr, "perf", "produce", "--topic", "v", "--records", "10", "--acks", "1", "--visibility")
	if !strings.Contains(r.stdout, "visibility lag ms: p50 ") {
		t.Fatalf("text output %q", r.stdout)
	}
}

func TestPerfE2E(t *testing.T) {
	addr := newFake(t)
	r := mustRun(t, "", "-b", addr, "perf", "e2e", "--topic", "e2e", "--rate", "400",
		"--record-size", "64", "--duration", "500ms", "--grace", "5s", "--json")
	var res perfResult
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("%q: %v", r.stdout, err)
	}
	// 400/s for 0.5s is at most about 200 records (the pacing is by
	// schedule; a loaded machine sends fewer, so no lower bound but one).
	if res.Records < 1 || res.Records > 210 || res.Consumed != res.Records || res.Errors != 0 {
		t.Fatalf("e2e result %+v", res)
	}
	if res.E2E == nil || res.E2E.Max <= 0 || res.E2E.P50 > res.E2E.Max {
		t.Fatalf("e2e latencies %+v", res.E2E)
	}
}
