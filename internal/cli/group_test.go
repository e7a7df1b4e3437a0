package cli_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/cli"
	"samsa/internal/testutil"
)

// samsa runs the command tree against addr and returns its exit code and
// output.
func samsa(t *testing.T, addr string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return cli.RunForTest(ctx, "", append([]string{"-b", addr}, args...)...)
}

// mustSamsa is samsa that fails the test on a non-zero exit.
func mustSamsa(t *testing.T, addr string, args ...string) string {
	t.Helper()
	code, out, errs := samsa(t, addr, args...)
	if code != cli.ExitOK {
		t.Fatalf("samsa %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, out, errs)
	}
	return out
}

// rows splits tabular output into lines of fields, header included.
func rows(out string) [][]string {
	var r [][]string
	for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		r = append(r, strings.Fields(l))
	}
	return r
}

// section returns the table in out whose header line starts with head.
func section(t *testing.T, out, head string) [][]string {
	t.Helper()
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, head) {
			continue
		}
		var r [][]string
		for _, l := range lines[i+1:] {
			f := strings.Fields(l)
			if len(f) == 0 || strings.HasSuffix(f[0], ":") {
				break
			}
			r = append(r, f)
		}
		return r
	}
	t.Fatalf("no %q table in:\n%s", head, out)
	return nil
}

// committedOffsets returns the committed offsets of group on topic,
// partition -> offset.
func committedOffsets(t *testing.T, adm *kadm.Client, group string) map[int32]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatalf("fetch offsets: %v", err)
	}
	out := make(map[int32]int64)
	resp.Each(func(o kadm.OffsetResponse) {
		if o.Err != nil {
			t.Fatalf("fetch offset %s/%d: %v", o.Topic, o.Partition, o.Err)
		}
		out[o.Partition] = o.At
	})
	return out
}

// produceTo writes n records to partition p of topic with timestamps
// base, base+1000, ... ms.
func produceTo(t *testing.T, cl *kgo.Client, topic string, p int32, n int, base int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := range n {
		r := &kgo.Record{Topic: topic, Partition: p, Value: fmt.Appendf(nil, "p%d-%d", p, i),
			Timestamp: time.UnixMilli(base + int64(i)*1000)}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
}

func TestGroupCommandsAgainstBroker(t *testing.T) {
	b := testutil.StartBroker(t, "group.initial.rebalance.delay.ms=0")
	addr := b.Addr()
	adm := b.Admin()
	const topic = "orders"
	testutil.CreateTopic(t, adm, topic, 3)
	prod := b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DisableIdempotentWrite())
	produceTo(t, prod, topic, 0, 10, 1_000_000)
	produceTo(t, prod, topic, 1, 5, 2_000_000)

	// A static member consumes everything and commits it.
	cons, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID("billing-app"),
		kgo.ConsumerGroup("billing"), kgo.ConsumeTopics(topic), kgo.InstanceID("billing-1"),
		kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			cons.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var got int
	for got < 15 {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of 15 records: %v", got, err)
		}
		fs.EachError(func(tp string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", tp, p, err) })
		got += fs.NumRecords()
	}
	// Commit 7 of partition 0 and all 5 of partition 1, nothing for 2.
	var commitErr error
	cons.CommitOffsetsSync(ctx, map[string]map[int32]kgo.EpochOffset{
		topic: {0: {Epoch: -1, Offset: 7}, 1: {Epoch: -1, Offset: 5}},
	}, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		commitErr = err
		if err == nil {
			for _, tr := range resp.Topics {
				for _, pr := range tr.Partitions {
					if pr.ErrorCode != 0 {
						commitErr = fmt.Errorf("partition %d: error code %d", pr.Partition, pr.ErrorCode)
					}
				}
			}
		}
	})
	if commitErr != nil {
		t.Fatalf("commit: %v", commitErr)
	}

	testutil.Eventually(t, 15*time.Second, func() error {
		_, out, _ := samsa(t, addr, "group", "list")
		if want := [][]string{{"GROUP", "STATE", "PROTOCOL-TYPE"}, {"billing", "Stable", "consumer"}}; !slices.EqualFunc(rows(out), want, slices.Equal) {
			return testutil.Errorf("group list:\n%s", out)
		}
		return nil
	})

	out := mustSamsa(t, addr, "group", "describe", "billing")
	head := strings.Split(out, "\n")[0]
	if !strings.HasPrefix(head, "Group: billing\tState: Stable\tProtocolType: consumer\tProtocol: ") {
		t.Fatalf("describe header %q", head)
	}
	members := section(t, out, "MEMBER-ID")
	// MEMBER-ID INSTANCE-ID CLIENT-ID HOST ASSIGNMENT (one field per topic)
	if len(members) != 1 || len(members[0]) != 5 || members[0][1] != "billing-1" ||
		members[0][2] != "billing-app" || members[0][3] != "/127.0.0.1" ||
		members[0][4] != "orders[0,1,2]" {
		t.Fatalf("members %q\n%s", members, out)
	}
	member := members[0][0]
	offsets := section(t, out, "TOPIC")
	want := [][]string{
		{"orders", "0", "7", "10", "3", member},
		{"orders", "1", "5", "5", "0", member},
		{"orders", "2", "-", "0", "-", member},
	}
	if !slices.EqualFunc(offsets, want, slices.Equal) {
		t.Fatalf("offsets %q, want %q\n%s", offsets, want, out)
	}

	// The group is live: resetting is refused, and nothing moves.
	code, _, errs := samsa(t, addr, "group", "reset-offsets", "billing", "--topic", topic, "--to-earliest", "--execute")
	if code != cli.ExitFailure || !strings.Contains(errs, "group billing is Stable with 1 members") {
		t.Fatalf("reset of a live group: exit %d, stderr %q", code, errs)
	}
	code, _, errs = samsa(t, addr, "group", "delete", "billing")
	if code != cli.ExitFailure || !strings.Contains(errs, "NON_EMPTY_GROUP") {
		t.Fatalf("delete of a live group: exit %d, stderr %q", code, errs)
	}
	// The help names the error the broker returns.
	if help := mustSamsa(t, addr, "group", "delete", "--help"); !strings.Contains(help, "NON_EMPTY_GROUP") {
		t.Fatalf("group delete --help does not name NON_EMPTY_GROUP:\n%s", help)
	}

	// A static member does not leave on close; remove it by instance id.
	cons.Close()
	closed = true
	lctx, lcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer lcancel()
	lresp, err := adm.LeaveGroup(lctx, kadm.LeaveGroup("billing").InstanceIDs("billing-1"))
	if err != nil || lresp.Error() != nil {
		t.Fatalf("leave group: %v %v", err, lresp.Error())
	}
	testutil.Eventually(t, 15*time.Second, func() error {
		_, out, _ := samsa(t, addr, "group", "list")
		if !strings.Contains(out, "billing  Empty  consumer") {
			return testutil.Errorf("group list:\n%s", out)
		}
		return nil
	})
	out = mustSamsa(t, addr, "group", "describe", "billing")
	if !strings.Contains(out, "(no members)") || !strings.Contains(out, "State: Empty") {
		t.Fatalf("describe empty group:\n%s", out)
	}

	tests := []struct {
		name  string
		args  []string
		plan  [][]string // rows after the header
		after map[int32]int64
		// clamped are the stderr lines naming clamped targets.
		clamped []string
	}{
		{"dry run changes nothing", []string{"--to-earliest"},
			[][]string{{"orders", "0", "7", "0"}, {"orders", "1", "5", "0"}, {"orders", "2", "-", "0"}},
			map[int32]int64{0: 7, 1: 5}, nil},
		{"to earliest", []string{"--to-earliest", "--execute"},
			[][]string{{"orders", "0", "7", "0"}, {"orders", "1", "5", "0"}, {"orders", "2", "-", "0"}},
			map[int32]int64{0: 0, 1: 0, 2: 0}, nil},
		{"to latest one partition", []string{"--to-latest", "--partition", "1", "--execute"},
			[][]string{{"orders", "1", "0", "5"}},
			map[int32]int64{0: 0, 1: 5, 2: 0}, nil},
		{"to offset clamps to log end", []string{"--to-offset", "8", "--execute"},
			[][]string{{"orders", "0", "0", "8"}, {"orders", "1", "5", "5"}, {"orders", "2", "0", "0"}},
			map[int32]int64{0: 8, 1: 5, 2: 0},
			[]string{"orders-1: 8 clamped to the log end offset 5", "orders-2: 8 clamped to the log end offset 0"}},
		{"shift back clamps to log start", []string{"--shift-by", "-6", "--execute"},
			[][]string{{"orders", "0", "8", "2"}, {"orders", "1", "5", "0"}, {"orders", "2", "0", "0"}},
			map[int32]int64{0: 2, 1: 0, 2: 0},
			[]string{"orders-1: -1 clamped to the log start offset 0", "orders-2: -6 clamped to the log start offset 0"}},
		// Partition 0 has timestamps 1000000, 1001000, ...; 1003500 falls
		// before offset 4. Partition 1 starts at 2000000, so offset 0;
		// partition 2 is empty, so its end.
		{"to timestamp", []string{"--to-timestamp", "1003500", "--execute"},
			[][]string{{"orders", "0", "2", "4"}, {"orders", "1", "0", "0"}, {"orders", "2", "0", "0"}},
			map[int32]int64{0: 4, 1: 0, 2: 0}, nil},
		{"timestamp after every record", []string{"--to-timestamp", "9000000", "--execute"},
			[][]string{{"orders", "0", "4", "10"}, {"orders", "1", "0", "5"}, {"orders", "2", "0", "0"}},
			map[int32]int64{0: 10, 1: 5, 2: 0}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"group", "reset-offsets", "billing", "--topic", topic}, tt.args...)
			code, out, errs := samsa(t, addr, args...)
			if code != cli.ExitOK {
				t.Fatalf("exit %d\n%s\n%s", code, out, errs)
			}
			r := rows(out)
			if !slices.Equal(r[0], []string{"TOPIC", "PARTITION", "CURRENT", "NEW"}) ||
				!slices.EqualFunc(r[1:], tt.plan, slices.Equal) {
				t.Fatalf("plan %q, want %q", r, tt.plan)
			}
			var clamped []string
			for _, l := range strings.Split(errs, "\n") {
				if strings.Contains(l, " clamped to ") {
					clamped = append(clamped, l)
				}
			}
			if !slices.Equal(clamped, tt.clamped) {
				t.Fatalf("clamped targets on stderr %q, want %q\n%s", clamped, tt.clamped, errs)
			}
			if got := committedOffsets(t, adm, "billing"); !mapsEqual(got, tt.after) {
				t.Fatalf("committed after: %v, want %v", got, tt.after)
			}
		})
	}

	// The describe view follows the reset.
	out = mustSamsa(t, addr, "group", "describe", "billing")
	offsets = section(t, out, "TOPIC")
	want = [][]string{
		{"orders", "0", "10", "10", "0", "-"},
		{"orders", "1", "5", "5", "0", "-"},
		{"orders", "2", "0", "0", "0", "-"},
	}
	if !slices.EqualFunc(offsets, want, slices.Equal) {
		t.Fatalf("offsets after reset %q, want %q", offsets, want)
	}

	out = mustSamsa(t, addr, "group", "delete", "billing")
	if out != "deleted group billing\n" {
		t.Fatalf("delete: %q", out)
	}
	if got := committedOffsets(t, adm, "billing"); len(got) != 0 {
		t.Fatalf("offsets after delete: %v", got)
	}
	_, out, _ = samsa(t, addr, "group", "list")
	if strings.Contains(out, "billing") {
		t.Fatalf("deleted group still listed:\n%s", out)
	}
	// A group that does not exist may be given offsets before any
	// consumer joins it.
	out = mustSamsa(t, addr, "group", "reset-offsets", "billing", "--topic", topic, "--partition", "0", "--to-offset", "3", "--execute")
	if want := [][]string{{"TOPIC", "PARTITION", "CURRENT", "NEW"}, {"orders", "0", "-", "3"}}; !slices.EqualFunc(rows(out), want, slices.Equal) {
		t.Fatalf("reset of a new group: %q", rows(out))
	}
	if got := committedOffsets(t, adm, "billing"); !mapsEqual(got, map[int32]int64{0: 3}) {
		t.Fatalf("committed for a new group: %v", got)
	}
	mustSamsa(t, addr, "group", "delete", "billing")

	code, _, errs = samsa(t, addr, "group", "delete", "billing", "other")
	if code != cli.ExitFailure || !strings.Contains(errs, "2 of 2 groups could not be deleted") ||
		!strings.Contains(errs, "delete group billing: GROUP_ID_NOT_FOUND") {
		t.Fatalf("delete twice: exit %d, stderr %q", code, errs)
	}
}

func mapsEqual(a, b map[int32]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestGroupResetOffsetsMisuse(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no target", []string{"--topic", "t"}, "give one of --to-earliest"},
		{"two targets", []string{"--topic", "t", "--to-earliest", "--to-latest"}, "exclude each other"},
		{"no topic", []string{"--to-earliest"}, "--topic is required"},
		{"dry run and execute", []string{"--topic", "t", "--to-latest", "--dry-run", "--execute"}, "--dry-run and --execute"},
		{"negative offset", []string{"--topic", "t", "--to-offset", "-1"}, "want an offset >= 0"},
		{"negative partition", []string{"--topic", "t", "--to-latest", "--partition", "-2"}, "want a partition >= 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Misuse is caught before any connection: the address is never dialled.
			code, _, errs := samsa(t, "127.0.0.1:1", append([]string{"group", "reset-offsets", "g"}, tt.args...)...)
			if code != cli.ExitMisuse || !strings.Contains(errs, tt.want) ||
				!strings.Contains(errs, "Run 'samsa group reset-offsets --help'") {
				t.Fatalf("exit %d, stderr %q", code, errs)
			}
		})
	}
}

// TestGroupDescribeShowsClientID checks that a member's client id, sent in
// the request header of its JoinGroup, is what DescribeGroups reports and
// prefixes the member id the coordinator generates, as Kafka does
// (clientId + "-" + UUID).
func TestGroupDescribeShowsClientID(t *testing.T) {
	b := testutil.StartBroker(t, "group.initial.rebalance.delay.ms=0")
	addr := b.Addr()
	testutil.CreateTopic(t, b.Admin(), "cid", 1)
	cons := b.Client(kgo.ClientID("cid-app"), kgo.ConsumerGroup("cid-group"), kgo.ConsumeTopics("cid"))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	polled := make(chan struct{})
	go func() { // joins the group
		defer close(polled)
		cons.PollFetches(ctx)
	}()
	defer func() { cancel(); <-polled }()
	var members [][]string
	testutil.Eventually(t, 15*time.Second, func() error {
		_, out, _ := samsa(t, addr, "group", "describe", "cid-group")
		if !strings.Contains(out, "State: Stable") {
			return testutil.Errorf("not stable:\n%s", out)
		}
		members = section(t, out, "MEMBER-ID")
		return nil
	})
	if len(members) != 1 || members[0][2] != "cid-app" || !strings.HasPrefix(members[0][0], "cid-app-") {
		t.Fatalf("member %q: want client id cid-app and a member id starting with cid-app-", members)
	}
}

// TestGroupResetOffsetsOfShareGroup: --share sets a share group's start
// offsets (creating an empty share group that does not exist), shows the
// current ones, and is refused while the group has a member.
func TestGroupResetOffsetsOfShareGroup(t *testing.T) {
	t.Parallel()
	b := testutil.StartBroker(t, "offsets.topic.num.partitions=4", "share.coordinator.state.topic.num.partitions=4")
	addr := b.Addr()
	const topic = "tasks"
	testutil.CreateTopic(t, b.Admin(), topic, 2)
	cl := b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for p := int32(0); p < 2; p++ {
		for i := 0; i < 6; i++ {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: p, Value: []byte("v")}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	out := mustSamsa(t, addr, "group", "reset-offsets", "jobs", "--share", "--topic", topic, "--to-offset", "4", "--execute")
	if want := [][]string{{"TOPIC", "PARTITION", "CURRENT", "NEW"}, {"tasks", "0", "-", "4"}, {"tasks", "1", "-", "4"}}; !slices.EqualFunc(rows(out), want, slices.Equal) {
		t.Fatalf("reset of a new share group: %q", rows(out))
	}
	starts := func() map[int32]int64 {
		t.Helper()
		d, err := b.Admin().DescribeShareGroupOffsets(ctx, "jobs")
		if err != nil || d["jobs"].Err != nil {
			t.Fatalf("describe share group offsets: %v %v", err, d["jobs"].Err)
		}
		got := map[int32]int64{}
		for p, o := range d["jobs"].Offsets[topic] {
			got[p] = o.StartOffset
		}
		return got
	}
	if got := starts(); !mapsEqual(got, map[int32]int64{0: 4, 1: 4}) {
		t.Fatalf("start offsets after the reset: %v", got)
	}
	out = mustSamsa(t, addr, "group", "reset-offsets", "jobs", "--share", "--topic", topic, "--partition", "1", "--shift-by", "-3", "--execute")
	if want := [][]string{{"TOPIC", "PARTITION", "CURRENT", "NEW"}, {"tasks", "1", "4", "1"}}; !slices.EqualFunc(rows(out), want, slices.Equal) {
		t.Fatalf("shift of a share group: %q", rows(out))
	}
	if got := starts(); !mapsEqual(got, map[int32]int64{0: 4, 1: 1}) {
		t.Fatalf("start offsets after the shift: %v", got)
	}
	// A member in the group: refused, nothing changed.
	hb := kmsg.NewPtrShareGroupHeartbeatRequest()
	hb.GroupID, hb.MemberID, hb.SubscribedTopicNames = "jobs", "m1", []string{topic}
	if r, err := hb.RequestWith(ctx, cl); err != nil || r.ErrorCode != 0 {
		t.Fatalf("heartbeat: %v %+v", err, r)
	}
	code, _, errs := samsa(t, addr, "group", "reset-offsets", "jobs", "--share", "--topic", topic, "--to-earliest", "--execute")
	if code != cli.ExitFailure || !strings.Contains(errs, "has active members") {
		t.Fatalf("reset with a member: exit %d, stderr %q", code, errs)
	}
	if got := starts(); !mapsEqual(got, map[int32]int64{0: 4, 1: 1}) {
		t.Fatalf("start offsets after a refused reset: %v", got)
	}
}
