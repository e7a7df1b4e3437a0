package console_test

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/testutil"
)

// consumeAndCommit runs a group member of group on topic until it has
// consumed n records and committed them, and returns it (still a member).
func consumeAndCommit(t *testing.T, b *testutil.Broker, group, topic string, n int, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl := b.Client(append([]kgo.Opt{kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit()}, opts...)...)
	ctx := ctxT(t, 30*time.Second)
	got := 0
	for got < n {
		fs := cl.PollRecords(ctx, n-got)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d: %v", got, n, err)
		}
		got += len(fs.Records())
	}
	if err := cl.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	return cl
}

func TestConsoleGroupLagEqualsDescribe(t *testing.T) {
	t.Parallel()
	b, w := startConsole(t)
	adm := b.Admin()
	testutil.CreateTopic(t, adm, "orders", 3)
	cl := b.Client()
	var recs []*kgo.Record
	for i := range 30 {
		recs = append(recs, &kgo.Record{Topic: "orders", Key: []byte(strconv.Itoa(i)), Value: []byte("o")})
	}
	produce(t, cl, recs...)
	member := consumeAndCommit(t, b, "billing", "orders", 12, kgo.FetchMaxPartitionBytes(200))
	produce(t, cl, &kgo.Record{Topic: "orders", Key: []byte("late"), Value: []byte("o")})

	// What Kafka's own arithmetic says (kadm.Lag: committed against
	// the log end offsets).
	lags, err := adm.Lag(ctxT(t, 10*time.Second), "billing")
	if err != nil {
		t.Fatal(err)
	}
	l := lags["billing"]
	if l.Error() != nil {
		t.Fatal(l.Error())
	}
	// As `samsa group describe` prints it: a partition without a
	// commit shows "-" for the offset and the lag and adds nothing to
	// the total.
	want := map[string]string{}
	var total int64
	for _, ps := range l.Lag {
		for p, ml := range ps {
			if ml.Commit.At >= 0 {
				want[strconv.Itoa(int(p))] = fmt.Sprintf("%d %d %d", ml.Commit.At, ml.End.Offset, ml.Lag)
				total += ml.Lag
			} else {
				want[strconv.Itoa(int(p))] = fmt.Sprintf("- %d -", ml.End.Offset)
			}
		}
	}
	if total == 0 {
		t.Fatal("no lag to show")
	}
	body := w.mustGet("/console/group?name=billing")
	if st := byID(t, body, "group-state"); st != "Stable" {
		t.Errorf("state %s, want Stable", st)
	}
	got := map[string]string{}
	for _, r := range rows(t, body, "offsets") {
		got[r[1]] = r[2] + " " + r[3] + " " + r[4]
		if r[5] == "-" {
			t.Errorf("partition %s has no member, want the consumer's", r[1])
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("group page committed/log end/lag by partition %v, want %v", got, want)
	}
	if got := byID(t, body, "total-lag"); got != strconv.FormatInt(total, 10) {
		t.Errorf("total lag %s, want %d", got, total)
	}
	members := rows(t, body, "members")
	if len(members) != 1 || !strings.Contains(members[0][4], "orders:0,1,2") {
		t.Errorf("members %q, want one assigned orders:0,1,2", members)
	}
	list := rows(t, w.mustGet("/console/groups"), "groups")
	if len(list) != 1 || list[0][0] != "billing" || list[0][1] != "classic" || list[0][2] != "Stable" ||
		list[0][4] != "1" || list[0][6] != strconv.FormatInt(total, 10) {
		t.Errorf("groups list %q, want billing classic Stable, 1 member, lag %d", list, total)
	}
	// The chart's source says the same, and keeps what it said for the
	// next page that opens.
	_, js := w.get("/console/api/group-lag?name=billing")
	if !strings.Contains(js, fmt.Sprintf(`"lag":%d,`, total)) {
		t.Errorf("lag JSON %s, want lag %d", js, total)
	}
	_, js = newWeb(t, b.Node.ConsoleURL()).get("/console/api/group-lag?name=billing")
	if !strings.Contains(js, `"history":[[`) || !strings.Contains(js, fmt.Sprintf(`,%d]]`, total)) {
		t.Errorf("lag JSON of a second viewer %s, want the history with lag %d", js, total)
	}
	member.Close()
}

func TestConsoleResetOffsetsPreviewsThenAppliesAndRefusesActiveGroups(t *testing.T) {
	t.Parallel()
	b, w := startConsole(t)
	adm := b.Admin()
	testutil.CreateTopic(t, adm, "jobs", 2)
	cl := b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var recs []*kgo.Record
	for i := range 10 {
		recs = append(recs, &kgo.Record{Topic: "jobs", Partition: int32(i % 2), Value: []byte("j")})
	}
	produce(t, cl, recs...)
	member := consumeAndCommit(t, b, "workers", "jobs", 10)

	committed := func() string {
		os, err := adm.FetchOffsets(ctxT(t, 10*time.Second), "workers")
		if err != nil {
			t.Fatal(err)
		}
		o0, _ := os.Lookup("jobs", 0)
		o1, _ := os.Lookup("jobs", 1)
		return fmt.Sprintf("%d,%d", o0.At, o1.At)
	}
	reset := url.Values{"name": {"workers"}, "topic": {"jobs"}, "strategy": {"earliest"}, "action": {"preview"}}
	_, body := w.post("/console/group/reset", reset)
	if msg, _ := flash(t, body); !strings.Contains(msg, "active members") {
		t.Errorf("reset of a Stable group: flash %q, want a refusal", msg)
	}
	member.Close()
	testutil.Eventually(t, 30*time.Second, func() error {
		d, err := adm.DescribeGroups(ctxT(t, 10*time.Second), "workers")
		if err != nil {
			return err
		}
		if s := d["workers"].State; s != "Empty" {
			return fmt.Errorf("state %s", s)
		}
		return nil
	})

	// The preview changes nothing.
	reset.Set("strategy", "shift")
	reset.Set("value", "-2")
	_, body = w.post("/console/group/reset", reset)
	plan := rows(t, body, "plan")
	if len(plan) != 2 || plan[0][2] != "5" || plan[0][3] != "3" || plan[1][2] != "5" || plan[1][3] != "3" {
		t.Errorf("shift by -2 plan %q, want 5 -> 3 on both partitions", plan)
	}
	if got := committed(); got != "5,5" {
		t.Errorf("committed after the preview %s, want 5,5", got)
	}
	// Applying the preview commits it.
	reset.Set("action", "apply")
	_, body = w.post("/console/group/reset", reset)
	if msg, ok := flash(t, body); !ok {
		t.Fatalf("apply: flash %q", msg)
	}
	if got := committed(); got != "3,3" {
		t.Errorf("committed after apply %s, want 3,3", got)
	}
	// Targets are clamped to [log start, log end]; a timestamp in the
	// future lands on the log end.
	reset.Set("strategy", "offset")
	reset.Set("value", "99")
	reset.Set("partition", "1")
	_, body = w.post("/console/group/reset", reset)
	if got := committed(); got != "3,5" {
		t.Errorf("committed after to-offset 99 on partition 1: %s, want 3,5", got)
	}
	reset.Set("strategy", "timestamp")
	reset.Set("value", strconv.FormatInt(time.Now().Add(time.Hour).UnixMilli(), 10))
	reset.Del("partition")
	reset.Set("action", "apply")
	w.post("/console/group/reset", reset)
	if got := committed(); got != "5,5" {
		t.Errorf("committed after a future timestamp: %s, want the log ends 5,5", got)
	}
	reset.Set("strategy", "latest-ish")
	if st, _ := w.post("/console/group/reset", reset); st != 400 {
		t.Errorf("unknown strategy: status %d, want 400", st)
	}
}

func TestConsoleListsKIP848AndDeletesGroups(t *testing.T) {
	t.Parallel()
	b, w := startConsole(t)
	adm := b.Admin()
	testutil.CreateTopic(t, adm, "stream", 1)
	produce(t, b.Client(), &kgo.Record{Topic: "stream", Value: []byte("a")}, &kgo.Record{Topic: "stream", Value: []byte("b")})
	member := consumeAndCommit(t, b, "next-gen", "stream", 1, kgo.ServerSideBalancer(), kgo.Balancers(kgo.RangeBalancer()))
	testutil.Eventually(t, 20*time.Second, func() error {
		list := rows(t, w.mustGet("/console/groups"), "groups")
		if len(list) != 1 || list[0][1] != "consumer" || list[0][4] != "1" {
			return fmt.Errorf("groups %q, want next-gen of type consumer with 1 member", list)
		}
		return nil
	})
	member.Close()
	os := kadm.Offsets{}
	os.Add(kadm.Offset{Topic: "stream", Partition: 0, At: 1, LeaderEpoch: -1})
	if err := adm.CommitAllOffsets(ctxT(t, 10*time.Second), "old", os); err != nil {
		t.Fatal(err)
	}
	_, body := w.post("/console/group/delete", url.Values{"name": {"old"}, "confirm": {"old"}})
	if msg, ok := flash(t, body); !ok {
		t.Fatalf("delete group: %q", msg)
	}
	listed, err := adm.ListGroups(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := listed["old"]; ok {
		t.Error("group old still listed after delete")
	}
}

func TestConsoleShowsShareGroupsWithMembers(t *testing.T) {
	t.Parallel()
	b, w := startConsole(t)
	testutil.CreateTopic(t, b.Admin(), "queue", 2)
	cl := b.Client(kgo.ShareGroup("workers"), kgo.ConsumeTopics("queue"), kgo.FetchMaxWait(500*time.Millisecond))
	ctx := ctxT(t, 30*time.Second)
	// A new share group starts at the log end: produce while it polls
	// until one record comes back.
	prod := b.Client()
	for got := 0; got < 1; {
		if ctx.Err() != nil {
			t.Fatal("no record delivered to the share group")
		}
		produce(t, prod, &kgo.Record{Topic: "queue", Value: []byte("job")})
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		fs := cl.PollRecords(pctx, 10)
		cancel()
		fs.EachRecord(func(r *kgo.Record) { r.Ack(kgo.AckAccept); got++ })
	}
	if err := cl.FlushAcks(ctx); err != nil {
		t.Fatal(err)
	}
	list := rows(t, w.mustGet("/console/groups"), "groups")
	if len(list) != 1 || list[0][0] != "workers" || list[0][1] != "share" || list[0][2] != "Stable" || list[0][4] != "1" || list[0][6] != "-" {
		t.Errorf("groups %q, want workers: share, Stable, 1 member, no lag", list)
	}
	members := rows(t, w.mustGet("/console/group?name=workers"), "members")
	if len(members) != 1 || members[0][4] != "queue:0,1" {
		t.Errorf("share group members %q, want one assigned queue:0,1", members)
	}

	// The group's configs: one it sets, the others the broker's.
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "workers"
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Op, c.Value = "share.isolation.level", kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr("read_committed")
	rr.Configs = append(rr.Configs, c)
	req.Resources = append(req.Resources, rr)
	if resp, err := req.RequestWith(ctx, prod); err != nil || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("set share.isolation.level: %v %+v", err, resp)
	}
	configs := map[string][]string{}
	for _, r := range rows(t, w.mustGet("/console/group?name=workers"), "configs") {
		configs[r[0]] = r
	}
	if r := configs["share.isolation.level"]; len(r) != 4 || r[1] != "read_committed" || r[2] != "group" || r[3] != "read_uncommitted" {
		t.Errorf("share.isolation.level row %q", r)
	}
	if r := configs["share.auto.offset.reset"]; len(r) != 4 || r[1] != "latest" || r[2] != "default" {
		t.Errorf("share.auto.offset.reset row %q", r)
	}
}
