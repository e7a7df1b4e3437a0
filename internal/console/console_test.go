package console_test

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/goleak"

	"samsa/internal/testutil"
)

// The tests start a real broker in process (embedded etcd, real TCP),
// serve the console on its admin listener, and drive it over HTTP as a
// browser without JavaScript would; the cluster is set up and checked
// with franz-go.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// produce writes records to topic and returns them as acknowledged.
func produce(t *testing.T, cl *kgo.Client, recs ...*kgo.Record) []*kgo.Record {
	t.Helper()
	res := cl.ProduceSync(ctxT(t, 30*time.Second), recs...)
	if err := res.FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	out := make([]*kgo.Record, len(res))
	for i, r := range res {
		out[i] = r.Record
	}
	return out
}

func TestConsoleOverviewShowsBrokersAndPartitionCounts(t *testing.T) {
	t.Parallel()
	b, w := startConsole(t)
	adm := b.Admin()
	testutil.CreateTopic(t, adm, "orders", 3)
	testutil.CreateTopic(t, adm, "audit", 2)
	body := w.mustGet("/console/")
	md, err := adm.Metadata(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	parts := 0
	for _, td := range md.Topics {
		parts += len(td.Partitions)
	}
	if got := byID(t, body, "partitions-count"); got != strconv.Itoa(parts) {
		t.Errorf("partitions %s, want %d", got, parts)
	}
	if got := byID(t, body, "topics-count"); got != strconv.Itoa(len(md.Topics)) {
		t.Errorf("topics %s, want %d", got, len(md.Topics))
	}
	for _, id := range []string{"under-replicated", "under-min-isr", "offline"} {
		if got := byID(t, body, id); got != "0" {
			t.Errorf("%s = %s, want 0", id, got)
		}
	}
	brokers := rows(t, body, "brokers")
	if len(brokers) != 1 || !strings.HasPrefix(brokers[0][0], "0") || brokers[0][2] != b.Addr() || brokers[0][3] != "yes" || brokers[0][4] != "yes" {
		t.Errorf("brokers %q, want broker 0 at %s, controller, alive", brokers, b.Addr())
	}
	if brokers[0][6] != strconv.Itoa(parts) {
		t.Errorf("broker 0 leads %s partitions, want %d", brokers[0][6], parts)
	}
}

func TestConsoleThroughputChartCountsProducedRecords(t *testing.T) {
	t.Parallel()
	b, w := startConsole(t)
	testutil.CreateTopic(t, b.Admin(), "rates", 1)
	cl := b.Client()
	var recs []*kgo.Record
	for i := range 100 {
		recs = append(recs, &kgo.Record{Topic: "rates", Value: []byte("v" + strconv.Itoa(i))})
	}
	produce(t, cl, recs...)
	// The sampler runs every 5 s; the chart's points are rates, so the
	// records of one interval show as 100/interval records per second.
	testutil.Eventually(t, 20*time.Second, func() error {
		_, body := w.get("/console/api/throughput")
		if !strings.Contains(body, `"points":[{`) {
			return fmt.Errorf("no points yet: %s", body)
		}
		var sum float64
		for _, f := range strings.Split(body, `"records_in":`)[1:] {
			v, _ := strconv.ParseFloat(strings.SplitN(f, ",", 2)[0], 64)
			sum += v * 5
		}
		if sum < 99 || sum > 101 {
			return fmt.Errorf("records_in sums to %.1f over the points, want 100: %s", sum, body)
		}
		return nil
	})
}

func TestConsoleTopicsListSearchesAndCreatesAndDeletes(t *testing.T) {
	t.Parallel()
	b, w := startConsole(t)
	adm := b.Admin()
	testutil.CreateTopic(t, adm, "orders", 3)
	testutil.CreateTopic(t, adm, "payments", 1)

	got := column(rows(t, w.mustGet("/console/topics"), "topics"), 0)
	if !slices.Equal(got, []string{"orders", "payments"}) {
		t.Errorf("topics %q, want orders and payments", got)
	}
	list := rows(t, w.mustGet("/console/topics?q=ORD"), "topics")
	if len(list) != 1 || list[0][0] != "orders" || list[0][1] != "3" || list[0][2] != "1" {
		t.Errorf("search ORD: %q, want orders with 3 partitions, RF 1", list)
	}

	st, body := w.post("/console/topics", url.Values{"name": {"created"}, "partitions": {"4"}, "configs": {"retention.ms=3600000\ncleanup.policy=compact"}})
	if msg, ok := flash(t, body); st != http.StatusOK || !ok {
		t.Fatalf("create: status %d, flash %q", st, msg)
	}
	td, err := adm.ListTopics(ctxT(t, 10*time.Second), "created")
	if err != nil || len(td["created"].Partitions) != 4 {
		t.Fatalf("created topic: %v %v, want 4 partitions", td, err)
	}
	rcs, err := adm.DescribeTopicConfigs(ctxT(t, 10*time.Second), "created")
	if err != nil {
		t.Fatal(err)
	}
	cfgs := map[string]string{}
	for _, c := range rcs[0].Configs {
		cfgs[c.Key] = c.MaybeValue()
	}
	if cfgs["retention.ms"] != "3600000" || cfgs["cleanup.policy"] != "compact" {
		t.Errorf("configs of the created topic: retention.ms=%s cleanup.policy=%s", cfgs["retention.ms"], cfgs["cleanup.policy"])
	}
	// The topic page shows where each config comes from.
	cfgRows := rows(t, body, "configs")
	var sawRetention bool
	for _, r := range cfgRows {
		if r[0] == "retention.ms" {
			sawRetention = true
			if r[1] != "3600000" || r[2] != "topic" || r[3] != "604800000" {
				t.Errorf("retention.ms row %q, want 3600000 from the topic, default 604800000", r)
			}
		}
	}
	if !sawRetention {
		t.Error("no retention.ms row on the topic page")
	}

	// A name Kafka refuses comes back as the broker's error.
	_, body = w.post("/console/topics", url.Values{"name": {"bad name!"}})
	if msg, ok := flash(t, body); ok || !strings.Contains(msg, "INVALID_TOPIC_EXCEPTION") {
		t.Errorf("create of an invalid name: flash %q, want INVALID_TOPIC_EXCEPTION", msg)
	}

	// Deleting needs the name typed again.
	_, body = w.post("/console/topic/delete", url.Values{"name": {"payments"}, "confirm": {"paymen"}})
	if msg, ok := flash(t, body); ok || !strings.Contains(msg, "confirm") {
		t.Errorf("delete without confirmation: flash %q", msg)
	}
	if td, _ := adm.ListTopics(ctxT(t, 10*time.Second), "payments"); td["payments"].Err != nil {
		t.Fatal("payments went away without confirmation")
	}
	_, body = w.post("/console/topic/delete", url.Values{"name": {"payments"}, "confirm": {"payments"}})
	if msg, ok := flash(t, body); !ok {
		t.Fatalf("delete: flash %q", msg)
	}
	testutil.Eventually(t, 10*time.Second, func() error {
		td, err := adm.ListTopics(ctxT(t, 10*time.Second))
		if err != nil {
			return err
		}
		if _, ok := td["payments"]; ok {
			return fmt.Errorf("payments still listed")
		}
		return nil
	})
}

func TestConsoleTopicPageShowsOffsetsAndConsumerLag(t *testing.T) {
	t.Parallel()
	b, w := startConsole(t)
	adm := b.Admin()
	testutil.CreateTopic(t, adm, "events", 2)
	cl := b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var recs []*kgo.Record
	for i := range 10 {
		recs = append(recs, &kgo.Record{Topic: "events", Partition: int32(i % 2), Value: []byte("e")})
	}
	produce(t, cl, recs...)
	os := kadm.Offsets{}
	os.Add(kadm.Offset{Topic: "events", Partition: 0, At: 2, LeaderEpoch: -1})
	os.Add(kadm.Offset{Topic: "events", Partition: 1, At: 5, LeaderEpoch: -1})
	if err := adm.CommitAllOffsets(ctxT(t, 10*time.Second), "billing", os); err != nil {
		t.Fatal(err)
	}
	body := w.mustGet("/console/topic?name=events")
	parts := rows(t, body, "partitions")
	if len(parts) != 2 {
		t.Fatalf("partitions %q", parts)
	}
	dirs, err := adm.DescribeAllLogDirs(ctxT(t, 10*time.Second), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range parts {
		if p[1] != "0" || p[3] != "0" || p[4] != "0" || p[6] != "0" || p[7] != "5" {
			t.Errorf("partition row %q, want leader 0, replicas and ISR 0, log start 0, log end 5", p)
		}
		n, _ := strconv.Atoi(p[0])
		d, ok := dirs[0].LookupPartition("events", int32(n))
		if want := fmt.Sprintf("%d B", d.Size); !ok || d.Size == 0 || p[8] != want {
			t.Errorf("partition %s size %q, want %s as DescribeLogDirs says", p[0], p[8], want)
		}
	}
	md, err := adm.Metadata(ctxT(t, 10*time.Second), "events")
	if err != nil {
		t.Fatal(err)
	}
	id := md.Topics["events"].ID
	if got, want := byID(t, body, "topic-id"), base64.RawURLEncoding.EncodeToString(id[:]); got != want || len(got) != 22 {
		t.Errorf("topic id %q, want %q (Kafka's 22-character form)", got, want)
	}
	cons := rows(t, body, "consumers")
	// Lag: (5-2) + (5-5).
	if len(cons) != 1 || cons[0][0] != "billing" || cons[0][1] != "2" || cons[0][2] != "3" {
		t.Errorf("consumers %q, want billing with 2 partitions and lag 3", cons)
	}
}

func TestConsoleAddsPartitionsAndAltersConfigs(t *testing.T) {
	t.Parallel()
	b, w := startConsole(t)
	adm := b.Admin()
	testutil.CreateTopic(t, adm, "grow", 1)
	_, body := w.post("/console/topic/partitions", url.Values{"name": {"grow"}, "count": {"2"}})
	if msg, ok := flash(t, body); !ok {
		t.Fatalf("add partitions: %q", msg)
	}
	if n := len(rows(t, body, "partitions")); n != 3 {
		t.Errorf("topic page shows %d partitions after adding 2 to 1", n)
	}
	_, body = w.post("/console/topic/configs", url.Values{"name": {"grow"}, "key": {"retention.ms"}, "value": {"1234567"}, "op": {"set"}})
	if msg, ok := flash(t, body); !ok {
		t.Fatalf("set config: %q", msg)
	}
	cfg := func() string {
		rcs, err := adm.DescribeTopicConfigs(ctxT(t, 10*time.Second), "grow")
		if err != nil {
			t.Fatal(err)
		}
		v, _ := rcs.On("grow", nil)
		for _, c := range v.Configs {
			if c.Key == "retention.ms" {
				return c.MaybeValue() + "/" + c.Source.String()
			}
		}
		return ""
	}
	if got := cfg(); got != "1234567/DYNAMIC_TOPIC_CONFIG" {
		t.Errorf("retention.ms = %s, want 1234567 set on the topic", got)
	}
	_, body = w.post("/console/topic/configs", url.Values{"name": {"grow"}, "key": {"retention.ms"}, "op": {"delete"}})
	if msg, ok := flash(t, body); !ok {
		t.Fatalf("reset config: %q", msg)
	}
	if got := cfg(); got != "604800000/DEFAULT_CONFIG" {
		t.Errorf("retention.ms after reset = %s, want the default", got)
	}
	_, body = w.post("/console/topic/configs", url.Values{"name": {"grow"}, "key": {"retention.ms"}, "value": {"soon"}, "op": {"set"}})
	if msg, ok := flash(t, body); ok || !strings.Contains(msg, "INVALID_CONFIG") {
		t.Errorf("an invalid value: flash %q, want INVALID_CONFIG", msg)
	}
}
