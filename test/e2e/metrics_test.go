package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"samsa/internal/testutil"
)

// requirePromtool returns the path of promtool (Debian's prometheus
// package).
func requirePromtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		missingTool(t, "promtool not found in PATH (apt-get install prometheus)")
	}
	return p
}

// requirePrometheus returns the path of the prometheus server binary.
func requirePrometheus(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("prometheus")
	if err != nil {
		missingTool(t, "prometheus not found in PATH (apt-get install prometheus)")
	}
	return p
}

// scrape reads http://addr/metrics in the Prometheus text format.
func scrape(t *testing.T, addr string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("scrape: %d %v", resp.StatusCode, err)
	}
	return string(b)
}

// sample returns the value of the series name{labels...} in a scrape
// (labels given as k="v" pairs, matched in any order), or an error.
func sample(text, name string, labels ...string) (float64, error) {
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		series, value, ok := strings.Cut(line, " ")
		if i := strings.LastIndexByte(line, ' '); i > 0 {
			series, value, ok = line[:i], line[i+1:], true
		}
		if !ok {
			continue
		}
		match := true
		for _, l := range labels {
			if !strings.Contains(series, l) {
				match = false
			}
		}
		if match {
			return strconv.ParseFloat(value, 64)
		}
	}
	return 0, fmt.Errorf("no series %s%v", name, labels)
}

// atLeast waits until the series reaches min on the broker's /metrics.
func atLeast(t *testing.T, addr string, min float64, name string, labels ...string) {
	t.Helper()
	testutil.Eventually(t, 10*time.Second, func() error {
		v, err := sample(scrape(t, addr), name, labels...)
		if err != nil {
			return err
		}
		if v < min {
			return fmt.Errorf("%s%v = %v, want at least %v", name, labels, v, min)
		}
		return nil
	})
}

func TestMetricsFollowProduceConsumeAndCommit(t *testing.T) {
	b := testutil.StartBroker(t, "admin.listener=127.0.0.1:0")
	addr := b.Node.AdminAddr()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := kadm.NewClient(b.Client())
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	cl := b.Client(kgo.DefaultProduceTopic("orders"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := range 10 {
		r := &kgo.Record{Value: []byte(fmt.Sprintf("record %d", i)), Partition: 0}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// A consumer reads them, then the group commits 4 of the 10.
	cons := b.Client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"orders": {0: kgo.NewOffset().AtStart()}}))
	for n := 0; n < 10; {
		fs := cons.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatal(err)
		}
		n += fs.NumRecords()
	}
	offsets := kadm.Offsets{}
	offsets.Add(kadm.Offset{Topic: "orders", Partition: 0, At: 4, LeaderEpoch: -1})
	if err := adm.CommitAllOffsets(ctx, "billing", offsets); err != nil {
		t.Fatal(err)
	}

	atLeast(t, addr, 10, "samsa_topic_records_in_total", `topic="orders"`)
	atLeast(t, addr, 100, "samsa_topic_bytes_in_total", `topic="orders"`)
	atLeast(t, addr, 10, "samsa_topic_produce_requests_total", `topic="orders"`)
	atLeast(t, addr, 10, "samsa_topic_records_out_total", `topic="orders"`)
	atLeast(t, addr, 1, "samsa_topic_fetch_requests_total", `topic="orders"`)
	atLeast(t, addr, 10, "samsa_requests_total", `api="Produce"`)
	atLeast(t, addr, 10, "samsa_request_duration_seconds_count", `api="Produce"`)
	atLeast(t, addr, 10, "samsa_request_local_seconds_count", `api="Produce"`)
	atLeast(t, addr, 1, "samsa_log_flush_seconds_count")
	atLeast(t, addr, 1, "samsa_listener_connections", `listener="PLAINTEXT"`)
	atLeast(t, addr, 1, "samsa_controller_active")
	atLeast(t, addr, 1, "samsa_etcd_request_seconds_count")
	atLeast(t, addr, 1, "samsa_build_info", `go="go`)
	// The consumer is still open: franz-go keeps an incremental fetch
	// session (KIP-227) of its one partition.
	atLeast(t, addr, 1, "samsa_fetch_sessions")
	atLeast(t, addr, 1, "samsa_fetch_session_partitions")

	text := scrape(t, addr)
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"samsa_log_end_offset", []string{`topic="orders"`, `partition="0"`}, 10},
		{"samsa_log_segments", []string{`topic="orders"`, `partition="0"`}, 1},
		{"samsa_consumer_group_lag", []string{`group="billing"`, `topic="orders"`, `partition="0"`}, 6},
		{"samsa_consumer_group_topic_lag", []string{`group="billing"`, `topic="orders"`}, 6},
		{"samsa_under_replicated_partitions", nil, 0},
		{"samsa_controller_offline_partitions", nil, 0},
		{"samsa_fetch_session_evictions_total", nil, 0},
	} {
		v, err := sample(text, c.name, c.labels...)
		if err != nil || v != c.want {
			t.Errorf("%s%v = %v (%v), want %v", c.name, c.labels, v, err, c.want)
		}
	}
	if v, _ := sample(text, "samsa_leader_partitions"); v < 2 {
		t.Errorf("samsa_leader_partitions = %v, want at least the 2 of orders", v)
	}
	if v, _ := sample(text, "samsa_log_size_bytes", `topic="orders"`, `partition="0"`); v <= 0 {
		t.Errorf("samsa_log_size_bytes of orders-0 = %v, want > 0", v)
	}
	// The flusher's backlog: present, and never negative.
	for _, name := range []string{"samsa_log_unsynced_bytes", "samsa_log_unsynced_age_seconds", "samsa_produce_acks1_held_total"} {
		if v, err := sample(text, name); err != nil || v < 0 {
			t.Errorf("%s = %v (%v), want a value >= 0", name, v, err)
		}
	}

	// OpenMetrics on request.
	req, _ := http.NewRequest("GET", "http://"+addr+"/metrics", nil)
	req.Header.Set("Accept", "application/openmetrics-text; version=1.0.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	om, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/openmetrics-text") || !strings.HasSuffix(strings.TrimSpace(string(om)), "# EOF") {
		t.Errorf("OpenMetrics scrape: content type %q, ends %q", ct, tail(string(om)))
	}

	// promtool accepts the scrape.
	promtool := requirePromtool(t)
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(text)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}

func tail(s string) string {
	s = strings.TrimSpace(s)
	return s[max(0, len(s)-40):]
}

func TestMetricsPartitionLevelOffDropsPartitionSeries(t *testing.T) {
	b := testutil.StartBroker(t, "admin.listener=127.0.0.1:0", "metrics.partition.level=false")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := kadm.NewClient(b.Client()).CreateTopic(ctx, 1, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	atLeast(t, b.Node.AdminAddr(), 0, "samsa_topic_log_size_bytes", `topic="t"`)
	text := scrape(t, b.Node.AdminAddr())
	for _, name := range []string{"samsa_log_size_bytes", "samsa_log_end_offset", "samsa_log_segments", "samsa_consumer_group_lag"} {
		if strings.Contains(text, "\n"+name+"{") {
			t.Errorf("%s exported with metrics.partition.level=false", name)
		}
	}
}

func TestAlertRulesPassPromtool(t *testing.T) {
	promtool := requirePromtool(t)
	rules := filepath.Join(moduleRoot, "deploy", "prometheus", "alerts.yml")
	if out, err := exec.Command(promtool, "check", "rules", rules).CombinedOutput(); err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
	// Every metric the rules use is documented.
	checkMetricsDocumented(t, rules)
}

func TestGrafanaDashboardIsJSONOverDocumentedMetrics(t *testing.T) {
	path := filepath.Join(moduleRoot, "deploy", "grafana", "samsa.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Title  string `json:"title"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if dash.Title == "" || len(dash.Panels) == 0 {
		t.Fatalf("%s: no title or no panels", path)
	}
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
	}
	checkMetricsDocumented(t, path)
}

var metricName = regexp.MustCompile(`\bsamsa_[a-z0-9_]+`)

// checkMetricsDocumented fails for each samsa_ metric named in the file
// that docs/metrics.md does not list (histogram suffixes stripped).
func checkMetricsDocumented(t *testing.T, path string) {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(moduleRoot, "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, m := range regexp.MustCompile("`(samsa_[a-z0-9_]+)").FindAllStringSubmatch(string(doc), -1) {
		documented[m[1]] = true
	}
	n := 0
	for _, m := range metricName.FindAllString(string(src), -1) {
		n++
		base := m
		for _, suf := range []string{"_bucket", "_count", "_sum"} {
			if b, ok := strings.CutSuffix(m, suf); ok && documented[b] {
				base = b
			}
		}
		if !documented[base] {
			t.Errorf("%s uses %s, which docs/metrics.md does not list", filepath.Base(path), m)
		}
	}
	if n == 0 {
		t.Errorf("%s names no samsa metric", path)
	}
}

func TestPrometheusScrapesThreeBrokers(t *testing.T) {
	prom := requirePrometheus(t)
	c := testutil.StartCluster(t, 3, "admin.listener=127.0.0.1:0")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := c.Admin().CreateTopic(ctx, 3, 3, nil, "scraped"); err != nil {
		t.Fatal(err)
	}
	cl := c.Client(kgo.DefaultProduceTopic("scraped"))
	for i := range 30 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(strconv.Itoa(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	var targets []string
	for _, b := range c.Brokers {
		targets = append(targets, fmt.Sprintf("%q", b.Node.AdminAddr()))
	}
	dir := t.TempDir()
	cfg := fmt.Sprintf("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nrule_files:\n  - %q\nscrape_configs:\n  - job_name: samsa\n    static_configs:\n      - targets: [%s]\n",
		filepath.Join(moduleRoot, "deploy", "prometheus", "alerts.yml"), strings.Join(targets, ", "))
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	listen := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	cmd := exec.Command(prom, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+listen)
	testutil.DieWithParent(cmd)
	var logs strings.Builder
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("prometheus output:\n%s", logs.String())
		}
	}()
	query := func(q string) (float64, error) {
		resp, err := http.Get("http://" + listen + "/api/v1/query?query=" + url.QueryEscape(q))
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		var r struct {
			Status string `json:"status"`
			Data   struct {
				Result []struct {
					Value [2]any `json:"value"`
				} `json:"result"`
			} `json:"data"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
			return 0, err
		}
		if r.Status != "success" || len(r.Data.Result) != 1 {
			return 0, fmt.Errorf("query %s: status %s, %d results", q, r.Status, len(r.Data.Result))
		}
		s, _ := r.Data.Result[0].Value[1].(string)
		return strconv.ParseFloat(s, 64)
	}
	// Every broker is scraped, the records produced are counted once on
	// their leaders, and exactly one broker is the controller.
	for _, c := range []struct {
		q    string
		want float64
	}{
		{`count(up{job="samsa"} == 1)`, 3},
		{`sum(samsa_topic_records_in_total{topic="scraped"})`, 30},
		{`sum(samsa_controller_active)`, 1},
		{`sum(samsa_partitions)`, 9 + 0},
	} {
		testutil.Eventually(t, 45*time.Second, func() error {
			v, err := query(c.q)
			if err != nil {
				return err
			}
			if v != c.want {
				return fmt.Errorf("%s = %v, want %v", c.q, v, c.want)
			}
			return nil
		})
	}
}
