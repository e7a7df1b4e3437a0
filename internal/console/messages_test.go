package console_test

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"samsa/internal/testutil"
)

// offsets returns the offsets of a records table, as "partition/offset".
func offsets(t *testing.T, body string) []string {
	t.Helper()
	var out []string
	for _, r := range rows(t, body, "records") {
		out = append(out, r[0]+"/"+r[1])
	}
	return out
}

func TestConsoleMessagesBrowseByPositionOrderAndFilter(t *testing.T) {
	t.Parallel()
	b, w := startConsole(t)
	testutil.CreateTopic(t, b.Admin(), "log", 2)
	cl := b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	var recs []*kgo.Record
	for i := range 20 {
		recs = append(recs, &kgo.Record{Topic: "log", Partition: int32(i % 2), Timestamp: base.Add(time.Duration(i) * time.Second),
			Key: []byte("k" + strconv.Itoa(i)), Value: []byte("value-" + strconv.Itoa(i))})
	}
	produce(t, cl, recs...)

	// The newest 3 over both partitions, newest first: records 19, 18, 17.
	got := offsets(t, w.mustGet("/console/messages?topic=log&count=3"))
	if want := []string{"1/9", "0/9", "1/8"}; !slices.Equal(got, want) {
		t.Errorf("newest 3: %q, want %q", got, want)
	}
	// The oldest 3 of partition 1, oldest first.
	got = offsets(t, w.mustGet("/console/messages?topic=log&partition=1&seek=earliest&count=3"))
	if want := []string{"1/0", "1/1", "1/2"}; !slices.Equal(got, want) {
		t.Errorf("oldest 3 of partition 1: %q, want %q", got, want)
	}
	// From offset 7 of partition 0.
	got = offsets(t, w.mustGet("/console/messages?topic=log&partition=0&seek=offset&offset=7&count=10"))
	if want := []string{"0/7", "0/8", "0/9"}; !slices.Equal(got, want) {
		t.Errorf("from offset 7: %q, want %q", got, want)
	}
	// From the timestamp of record 15 (partition 1 offset 7), oldest first.
	ts := strconv.FormatInt(base.Add(15*time.Second).UnixMilli(), 10)
	got = offsets(t, w.mustGet("/console/messages?topic=log&seek=timestamp&timestamp="+ts+"&count=3"))
	if want := []string{"1/7", "0/8", "1/8"}; !slices.Equal(got, want) {
		t.Errorf("from timestamp of record 15: %q, want %q", got, want)
	}
	// In one partition the order is the offsets', whatever the
	// timestamps say.
	produce(t, cl, &kgo.Record{Topic: "log", Partition: 0, Timestamp: base.Add(-time.Hour), Key: []byte("late"), Value: []byte("old clock")})
	got = offsets(t, w.mustGet("/console/messages?topic=log&partition=0&count=2"))
	if want := []string{"0/10", "0/9"}; !slices.Equal(got, want) {
		t.Errorf("newest 2 of partition 0 with an older timestamp last: %q, want %q", got, want)
	}
	// A value filter: value-1 and value-1x.
	body := w.mustGet("/console/messages?topic=log&value=value-1&seek=earliest&count=50")
	var keys []string
	for _, r := range rows(t, body, "records") {
		keys = append(keys, r[3])
	}
	slices.Sort(keys)
	want := []string{"k1", "k10", "k11", "k12", "k13", "k14", "k15", "k16", "k17", "k18", "k19"}
	if !slices.Equal(keys, want) {
		t.Errorf("value contains value-1: keys %q, want %q", keys, want)
	}
	// A key filter, newest first.
	got = offsets(t, w.mustGet("/console/messages?topic=log&key=k1&count=2"))
	if want := []string{"1/9", "0/9"}; !slices.Equal(got, want) {
		t.Errorf("key contains k1, newest 2: %q, want %q", got, want)
	}
	// Bad input is a 400 with the reason, not a read.
	for _, q := range []string{"seek=offset&offset=-3", "partition=x", "count=0", "seek=sideways", "seek=timestamp&timestamp=yesterday"} {
		if st, _ := w.get("/console/messages?topic=log&" + q); st != http.StatusBadRequest {
			t.Errorf("%s: status %d, want 400", q, st)
		}
	}
	// A count over the bound is cut to it.
	if n := len(rows(t, w.mustGet("/console/messages?topic=log&count=100000&seek=earliest"), "records")); n != 21 {
		t.Errorf("count=100000 showed %d of 21 records", n)
	}
}

func TestConsoleMessagesShowTextJSONHexAndHeaders(t *testing.T) {
	t.Parallel()
	b, w := startConsole(t)
	testutil.CreateTopic(t, b.Admin(), "kinds", 1)
	produce(t, b.Client(),
		&kgo.Record{Topic: "kinds", Key: []byte("json"), Value: []byte(`{"id":7,"tags":["a","b"]}`),
			Headers: []kgo.RecordHeader{{Key: "trace", Value: []byte("abc-123")}, {Key: "bin", Value: []byte{0, 1, 0xff}}}},
		&kgo.Record{Topic: "kinds", Key: []byte("bin"), Value: []byte{0xde, 0xad, 0xbe, 0xef, 0x00}},
		&kgo.Record{Topic: "kinds", Value: nil},
	)
	body := w.mustGet("/console/messages?topic=kinds&seek=earliest")
	rs := rows(t, body, "records")
	if len(rs) != 3 {
		t.Fatalf("rows %q", rs)
	}
	if rs[0][4] != "{\n  \"id\": 7,\n  \"tags\": [\n    \"a\",\n    \"b\"\n  ]\n}" {
		t.Errorf("JSON value shown as %q, want it indented", rs[0][4])
	}
	if !strings.Contains(rs[0][5], "trace: abc-123") || !strings.Contains(rs[0][5], "bin: 00000000  00 01 ff") {
		t.Errorf("headers shown as %q", rs[0][5])
	}
	if !strings.HasPrefix(rs[1][4], "00000000  de ad be ef 00") {
		t.Errorf("binary value shown as %q, want a hex dump", rs[1][4])
	}
	if rs[2][3] != "null" || rs[2][4] != "null" {
		t.Errorf("null key and value shown as %q, %q", rs[2][3], rs[2][4])
	}
}

func TestConsoleProducesATestRecord(t *testing.T) {
	t.Parallel()
	b, w := startConsole(t)
	testutil.CreateTopic(t, b.Admin(), "tests", 3)
	st, body := w.post("/console/messages", url.Values{"topic": {"tests"}, "partition": {"2"}, "key": {"k-1"},
		"value": {"hello from the console"}, "headers": {"source: console\nrun: 1"}})
	msg, ok := flash(t, body)
	if st != http.StatusOK || !ok || !strings.Contains(msg, "partition 2 at offset 0") {
		t.Fatalf("produce: status %d, flash %q", st, msg)
	}
	cl := b.Client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"tests": {2: kgo.NewOffset().AtStart()}}))
	fs := cl.PollRecords(ctxT(t, 10*time.Second), 1)
	recs := fs.Records()
	if len(recs) != 1 {
		t.Fatalf("consumed %d records: %v", len(recs), fs.Errors())
	}
	r := recs[0]
	if string(r.Key) != "k-1" || string(r.Value) != "hello from the console" || len(r.Headers) != 2 ||
		r.Headers[0].Key != "source" || string(r.Headers[0].Value) != "console" || r.Headers[1].Key != "run" || string(r.Headers[1].Value) != "1" {
		t.Errorf("consumed %q=%q headers %v", r.Key, r.Value, r.Headers)
	}
	// The messages page the browser is sent back to shows it.
	if got := offsets(t, body); !slices.Equal(got, []string{"2/0"}) {
		t.Errorf("messages after produce: %q", got)
	}
	// A partition the topic does not have, and a topic that does not
	// exist, are refused; neither is created.
	if st, _ := w.post("/console/messages", url.Values{"topic": {"tests"}, "partition": {"3"}, "value": {"x"}}); st != http.StatusBadRequest {
		t.Errorf("partition 3 of 3: status %d, want 400", st)
	}
	_, body = w.post("/console/messages", url.Values{"topic": {"nosuch"}, "value": {"x"}})
	if msg, ok := flash(t, body); ok || !strings.Contains(msg, "does not exist") {
		t.Errorf("produce to a missing topic: flash %q", msg)
	}
	td, err := b.Admin().ListTopics(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := td["nosuch"]; ok {
		t.Error("the produce created topic nosuch")
	}
}
