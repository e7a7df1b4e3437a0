package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// groupMemberResult is what testdata/confluent_group_member.py prints.
type groupMemberResult struct {
	Records []struct {
		Partition int32  `json:"partition"`
		Offset    int64  `json:"offset"`
		Value     string `json:"value"`
	} `json:"records"`
	Assigned [][]int32 `json:"assigned"`
	Errors   []string  `json:"errors"`
}

// groupMember is one running confluent_group_member.py process.
type groupMember struct {
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
	cancel         context.CancelFunc
}

// startGroupMember starts a python group member; limit 0 reads until idle.
func startGroupMember(t *testing.T, python, addr, group, topic string, limit int) *groupMember {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	m := &groupMember{cancel: cancel}
	m.cmd = exec.CommandContext(ctx, python, "testdata/confluent_group_member.py",
		addr, group, topic, strconv.Itoa(limit), "3")
	m.cmd.Stdout, m.cmd.Stderr = &m.stdout, &m.stderr
	if err := m.cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start confluent_group_member.py: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		if m.cmd.ProcessState == nil {
			_ = m.cmd.Wait()
		}
	})
	return m
}

// wait waits for the member to exit and returns what it reported.
func (m *groupMember) wait(t *testing.T) groupMemberResult {
	t.Helper()
	err := m.cmd.Wait()
	m.cancel()
	if err != nil {
		t.Fatalf("confluent_group_member.py: %v\nstderr:\n%s", err, m.stderr.String())
	}
	var r groupMemberResult
	if err := json.Unmarshal(m.stdout.Bytes(), &r); err != nil {
		t.Fatalf("member output: %v\nstdout:\n%s\nstderr:\n%s", err, m.stdout.String(), m.stderr.String())
	}
	if len(r.Errors) > 0 {
		t.Fatalf("member errors: %v", r.Errors)
	}
	return r
}

// produceGroupRecords writes per records to each partition of topic, with
// values "p<partition>-<n>" for n from first on.
func produceGroupRecords(t *testing.T, addr, topic string, partitions int32, first, per int) {
	t.Helper()
	cl := newClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var rs []*kgo.Record
	for p := range partitions {
		for n := first; n < first+per; n++ {
			rs = append(rs, &kgo.Record{Topic: topic, Partition: p, Value: fmt.Appendf(nil, "p%d-%d", p, n)})
		}
	}
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

// committed returns the committed offsets of group, partition -> offset.
func committed(t *testing.T, addr, group string) map[int32]int64 {
	t.Helper()
	adm := kadm.NewClient(newClient(t, addr))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatalf("fetch offsets of %s: %v", group, err)
	}
	out := make(map[int32]int64)
	resp.Each(func(o kadm.OffsetResponse) {
		if o.Err != nil {
			t.Fatalf("fetch offset %d: %v", o.Partition, o.Err)
		}
		out[o.Partition] = o.At
	})
	return out
}

// TestConfluentPythonGroupSplitAndResume runs two confluent-kafka-python
// consumers in one group on a 4-partition topic: each gets a disjoint,
// non-empty set of partitions, and since each commits every record after
// processing it, together they read every record exactly once. Then one
// member alone reads part of a second batch, is closed and restarted, and
// resumes exactly at the committed offsets: nothing before them is read
// again and nothing is skipped.
func TestConfluentPythonGroupSplitAndResume(t *testing.T) {
	python := requireConfluentPython(t)
	b := newBroker(t, "group.initial.rebalance.delay.ms=0")
	const (
		topic      = "group-split"
		group      = "py-group"
		partitions = 4
		per        = 100
	)
	addr := b.addr()
	createTopic(t, addr, topic, partitions, nil)

	m1 := startGroupMember(t, python, addr, group, topic, 0)
	m2 := startGroupMember(t, python, addr, group, topic, 0)
	// Produce only once both are members, so neither can drain the topic
	// alone before the other joins.
	adm := kadm.NewClient(newClient(t, addr))
	var owners map[int32]string
	waitFor(t, 60*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ds, err := adm.DescribeGroups(ctx, group)
		if err != nil {
			return err
		}
		d := ds[group]
		if d.State != "Stable" || len(d.Members) != 2 {
			return fmt.Errorf("group %s is %q with %d members", group, d.State, len(d.Members))
		}
		owners = make(map[int32]string)
		for _, m := range d.Members {
			ca, ok := m.Assigned.AsConsumer()
			if !ok || len(ca.Topics) != 1 || len(ca.Topics[0].Partitions) == 0 {
				return fmt.Errorf("member %s has assignment %+v", m.MemberID, ca)
			}
			for _, p := range ca.Topics[0].Partitions {
				if prev, dup := owners[p]; dup {
					return fmt.Errorf("partition %d assigned to %s and %s", p, prev, m.MemberID)
				}
				owners[p] = m.MemberID
			}
		}
		if len(owners) != partitions {
			return fmt.Errorf("assigned partitions %v", owners)
		}
		return nil
	})
	produceGroupRecords(t, addr, topic, partitions, 0, per)
	r1, r2 := m1.wait(t), m2.wait(t)

	seen := make(map[string]int)
	parts := [2]map[int32]bool{{}, {}}
	for i, r := range []groupMemberResult{r1, r2} {
		if len(r.Records) == 0 {
			t.Fatalf("member %d read nothing; assignments %v", i+1, r.Assigned)
		}
		for _, rec := range r.Records {
			parts[i][rec.Partition] = true
			if want := fmt.Sprintf("p%d-%d", rec.Partition, rec.Offset); rec.Value != want {
				t.Fatalf("member %d: record at %d/%d is %q, want %q", i+1, rec.Partition, rec.Offset, rec.Value, want)
			}
			seen[rec.Value]++
		}
	}
	for p := range parts[0] {
		if parts[1][p] {
			t.Fatalf("both members read partition %d (member 1 %v, member 2 %v)", p, parts[0], parts[1])
		}
	}
	for p := range int32(partitions) {
		for n := range per {
			v := fmt.Sprintf("p%d-%d", p, n)
			if seen[v] != 1 {
				t.Fatalf("record %s read %d times", v, seen[v])
			}
		}
	}
	if len(seen) != partitions*per {
		t.Fatalf("%d distinct records read, want %d", len(seen), partitions*per)
	}
	want := map[int32]int64{0: per, 1: per, 2: per, 3: per}
	if got := committed(t, addr, group); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("committed after phase 1: %v, want %v", got, want)
	}

	// Phase 2: one member reads 70 of 200 new records and is closed.
	produceGroupRecords(t, addr, topic, partitions, per, 50)
	first := startGroupMember(t, python, addr, group, topic, 70).wait(t)
	if len(first.Records) != 70 {
		t.Fatalf("limited member read %d records, want 70", len(first.Records))
	}
	mid := committed(t, addr, group)
	read := make(map[string]int)
	for _, rec := range first.Records {
		if rec.Offset < per {
			t.Fatalf("record %d/%d read again after it was committed", rec.Partition, rec.Offset)
		}
		if rec.Offset >= mid[rec.Partition] {
			t.Fatalf("record %d/%d read but committed offset is %d", rec.Partition, rec.Offset, mid[rec.Partition])
		}
		read[rec.Value]++
	}

	// Restarted, it starts at exactly the committed offsets.
	second := startGroupMember(t, python, addr, group, topic, 0).wait(t)
	firstOffset := make(map[int32]int64)
	for _, rec := range second.Records {
		if o, ok := firstOffset[rec.Partition]; !ok || rec.Offset < o {
			firstOffset[rec.Partition] = rec.Offset
		}
		if rec.Offset < mid[rec.Partition] {
			t.Fatalf("restarted member re-read %d/%d below committed offset %d", rec.Partition, rec.Offset, mid[rec.Partition])
		}
		read[rec.Value]++
	}
	for p, o := range firstOffset {
		if o != mid[p] {
			t.Fatalf("partition %d: restarted member began at %d, committed offset was %d", p, o, mid[p])
		}
	}
	for p := range int32(partitions) {
		for n := per; n < per+50; n++ {
			if v := fmt.Sprintf("p%d-%d", p, n); read[v] != 1 {
				t.Fatalf("phase 2 record %s read %d times (committed before restart: %v)", v, read[v], mid)
			}
		}
	}
	want = map[int32]int64{0: per + 50, 1: per + 50, 2: per + 50, 3: per + 50}
	if got := committed(t, addr, group); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("committed at the end: %v, want %v", got, want)
	}
}

// TestKcatGroupConsumerCommitsVisibleInDescribe consumes a topic with
// `kcat -G` (librdkafka's balanced consumer, auto commit on) and checks
// that `samsa group describe` shows its commits: committed offset equal to
// the log end offset and no lag on every partition.
func TestKcatGroupConsumerCommitsVisibleInDescribe(t *testing.T) {
	kcat := requireKcat(t)
	b := newBroker(t, "group.initial.rebalance.delay.ms=0")
	const (
		topic      = "kcat-group"
		group      = "kcat-g"
		partitions = 3
		per        = 20
	)
	addr := b.addr()
	createTopic(t, addr, topic, partitions, nil)
	produceGroupRecords(t, addr, topic, partitions, 0, per)

	out := runKcat(t, kcat, "", "-b", addr, "-G", group, "-e", "-q", "-f", "%p %o %s\n",
		"-X", "auto.offset.reset=earliest", "-X", "enable.auto.commit=true",
		"-X", "auto.commit.interval.ms=100", topic)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	sort.Strings(lines)
	if len(lines) != partitions*per {
		t.Fatalf("kcat read %d records, want %d:\n%s", len(lines), partitions*per, out)
	}
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) != 3 || f[2] != "p"+f[0]+"-"+f[1] {
			t.Fatalf("kcat line %q", l)
		}
	}

	var desc string
	waitFor(t, 20*time.Second, func() error {
		cmd := exec.Command(samsaBin, "-b", addr, "group", "describe", group)
		o, err := cmd.CombinedOutput()
		desc = string(o)
		if err != nil {
			return fmt.Errorf("samsa group describe: %w\n%s", err, o)
		}
		if !strings.Contains(desc, "State: Empty\tProtocolType: consumer") {
			return fmt.Errorf("group not Empty after kcat exited:\n%s", desc)
		}
		return nil
	})
	var rows []string
	inTable := false
	for _, l := range strings.Split(desc, "\n") {
		if strings.HasPrefix(l, "TOPIC") {
			inTable = true
			continue
		}
		if inTable && strings.TrimSpace(l) != "" {
			rows = append(rows, strings.Join(strings.Fields(l), " "))
		}
	}
	var want []string
	for p := range partitions {
		want = append(want, fmt.Sprintf("%s %d %d %d 0 -", topic, p, per, per))
	}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Fatalf("describe offsets:\n%s\nwant:\n%s\nfull output:\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"), desc)
	}
}
