package group

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
)

// consumerEnv drives one ConsumerGroup from a datadriven script with a
// fake clock. Every change is applied as the coordinator applies it, its
// records also encoded and kept as the log would keep them, so that
// "reload" replays them into a new group. After every command the group
// must keep its invariants (no partition with two owners).
type consumerEnv struct {
	t      *testing.T
	g      *ConsumerGroup
	cfg    ConsumerGroupConfig
	now    time.Time
	topics TopicMap
	log    []KV
}

func newConsumerEnv(t *testing.T) *consumerEnv {
	e := &consumerEnv{t: t, now: time.UnixMilli(0), topics: TopicMap{}}
	ids := 0
	e.cfg = ConsumerGroupConfig{
		SessionTimeout:    45 * time.Second,
		HeartbeatInterval: 5 * time.Second,
		MaxSize:           100,
		Assignors:         []string{UniformAssignor, RangeAssignor},
		NewMemberID:       func() string { ids++; return fmt.Sprintf("gen-%d", ids) },
	}
	e.g = NewConsumerGroup("g", e.cfg)
	return e
}

func (e *consumerEnv) topicName(id TopicID) string {
	if t, ok := e.topics.TopicByID(id); ok {
		return t.Name
	}
	return fmt.Sprintf("?%x", id[:2])
}

func (e *consumerEnv) fmtSet(a PartitionSet) string {
	var parts []string
	for t, ps := range a {
		var s []string
		for _, p := range ps {
			s = append(s, strconv.Itoa(int(p)))
		}
		parts = append(parts, e.topicName(t)+":"+strings.Join(s, ","))
	}
	sort.Strings(parts)
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " ")
}

// parseSet parses "a:0,1;b:2" ("" is empty).
func (e *consumerEnv) parseSet(s string) []TopicPartitions {
	out := []TopicPartitions{}
	if s == "" {
		return out
	}
	for _, tp := range strings.Split(s, ";") {
		name, ps, _ := strings.Cut(tp, ":")
		t, ok := e.topics[name]
		if !ok {
			e.t.Fatalf("unknown topic %s", name)
		}
		x := TopicPartitions{TopicID: t.ID}
		for _, p := range strings.Split(ps, ",") {
			n, err := strconv.Atoi(p)
			if err != nil {
				e.t.Fatal(err)
			}
			x.Partitions = append(x.Partitions, int32(n))
		}
		out = append(out, x)
	}
	return out
}

func (e *consumerEnv) apply(ch Change) {
	for _, r := range ch.Records {
		e.log = append(e.log, r.KV())
	}
	e.g.Apply(ch)
}

func (e *consumerEnv) state() string {
	var sb strings.Builder
	g := e.g
	fmt.Fprintf(&sb, "group epoch=%d assignment-epoch=%d state=%s\n", g.epoch, g.assignmentEpoch, g.State())
	for _, id := range g.sortedMemberIDs() {
		m := g.members[id]
		fmt.Fprintf(&sb, "  %s", id)
		if m.InstanceID != nil {
			fmt.Fprintf(&sb, "(%s)", *m.InstanceID)
		}
		fmt.Fprintf(&sb, " epoch=%d prev=%d %s assigned=%s", m.Epoch, m.PreviousEpoch, m.State, e.fmtSet(m.Assigned))
		if len(m.PendingRevocation) > 0 {
			fmt.Fprintf(&sb, " revoking=%s", e.fmtSet(m.PendingRevocation))
		}
		fmt.Fprintf(&sb, " target=%s\n", e.fmtSet(g.target[id]))
	}
	return sb.String()
}

func TestConsumerGroupDatadriven(t *testing.T) {
	datadriven.Walk(t, "testdata/consumer", func(t *testing.T, path string) {
		e := newConsumerEnv(t)
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			out := e.run(t, d)
			if err := e.g.CheckInvariants(); err != nil {
				t.Fatalf("%s: invariant broken: %v\n%s", d.Pos, err, e.state())
			}
			return out
		})
	})
}

func (e *consumerEnv) run(t *testing.T, d *datadriven.TestData) string {
	switch d.Cmd {
	case "config":
		var n int
		if d.MaybeScanArgs(t, "max-size", &n) {
			e.cfg.MaxSize = int32(n)
		}
		e.g.cfg = e.cfg
		return ""
	case "topics":
		for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
			f := strings.Fields(line)
			if len(f) == 0 {
				continue
			}
			n, _ := strconv.Atoi(f[1])
			var id TopicID
			id[15] = byte(len(f[0])) // deterministic, distinct for the names used
			id[0] = f[0][0]
			e.topics[f[0]] = TopicInfo{Name: f[0], ID: id, Partitions: int32(n)}
		}
		return ""
	case "advance":
		var ms int
		d.ScanArgs(t, "ms", &ms)
		e.now = e.now.Add(time.Duration(ms) * time.Millisecond)
		ch, fenced := e.g.Tick(e.now, e.topics)
		e.apply(ch)
		if len(fenced) == 0 {
			return "no member fenced\n"
		}
		return "fenced " + strings.Join(fenced, ",") + "\n" + e.state()
	case "hb":
		req := ConsumerHeartbeatRequest{Group: "g", RebalanceTimeout: -1, ClientID: "c", ClientHost: "/h"}
		d.ScanArgs(t, "member", &req.MemberID)
		var epoch int
		d.ScanArgs(t, "epoch", &epoch)
		req.MemberEpoch = int32(epoch)
		var s string
		if d.MaybeScanArgs(t, "topics", &s) {
			req.SubscribedTopicNames = strings.Split(s, ",")
		}
		if d.MaybeScanArgs(t, "regex", &s) {
			v := s
			req.SubscribedTopicRegex = &v
		}
		if d.HasArg("owned") {
			var o string
			d.ScanArgs(t, "owned", &o)
			req.Owned = e.parseSet(o)
		}
		if d.MaybeScanArgs(t, "instance", &s) {
			v := s
			req.InstanceID = &v
		}
		if d.MaybeScanArgs(t, "assignor", &s) {
			v := s
			req.ServerAssignor = &v
		}
		var ms int
		if d.MaybeScanArgs(t, "rebalance", &ms) {
			req.RebalanceTimeout = time.Duration(ms) * time.Millisecond
		} else if epoch == 0 {
			req.RebalanceTimeout = time.Minute
		}
		if epoch == 0 && req.Owned == nil && !d.HasArg("no-owned") {
			req.Owned = []TopicPartitions{}
		}
		res, ch, err := e.g.Heartbeat(e.now, e.topics, req, true)
		if err != nil {
			if !ch.Empty() {
				t.Fatalf("error %v with records", err)
			}
			return errName(err) + "\n"
		}
		e.apply(ch)
		var sb strings.Builder
		fmt.Fprintf(&sb, "-> %s epoch=%d", res.MemberID, res.MemberEpoch)
		if res.HasAssignment {
			a := PartitionSet{}
			for _, tp := range res.Assignment {
				a[tp.TopicID] = tp.Partitions
			}
			fmt.Fprintf(&sb, " assignment=%s", e.fmtSet(a))
		}
		sb.WriteString("\n")
		if d.HasArg("records") {
			for _, r := range ch.Records {
				fmt.Fprintf(&sb, "  record %s\n", recordName(r))
			}
		}
		sb.WriteString(e.state())
		return sb.String()
	case "state":
		return e.state()
	case "reload":
		// Replay every record written so far, encoded as the log holds
		// them, into a new group: it must be the same group.
		g := NewConsumerGroup("g", e.cfg)
		for _, kv := range e.log {
			r, err := parseCGRecord(kv.Key, kv.Value)
			if err != nil {
				t.Fatalf("replay: %v", err)
			}
			g.ApplyRecord(r)
		}
		g.StartSessions(e.now)
		before := e.state()
		e.g = g
		after := e.state()
		if before != after {
			t.Fatalf("reloaded group differs:\nbefore:\n%s\nafter:\n%s", before, after)
		}
		return "reloaded\n" + after
	case "delete":
		if s := e.g.State(); s != ConsumerEmpty {
			return "not empty: " + s.String() + "\n"
		}
		ch := e.g.Delete()
		var names []string
		for _, r := range ch.Records {
			names = append(names, recordName(r))
		}
		e.apply(ch)
		return strings.Join(names, "\n") + "\nstate=" + e.g.State().String() + "\n"
	}
	t.Fatalf("unknown command %s", d.Cmd)
	return ""
}

func recordName(r CGRecord) string {
	names := map[CGRecordKind]string{
		CGGroupEpoch: "group-epoch", CGPartitionMetadata: "partition-metadata", CGMemberMetadata: "member-metadata",
		CGTargetEpoch: "target-epoch", CGTargetMember: "target-member", CGCurrentAssignment: "current-assignment",
	}
	s := names[r.Kind]
	if r.Member != "" {
		s += " " + r.Member
	}
	if r.Tombstone {
		s += " tombstone"
	}
	return s
}

// TestConsumerRecordsRoundTrip encodes every record kind and decodes it
// back.
func TestConsumerRecordsRoundTrip(t *testing.T) {
	inst, rack := "i", "r"
	ta, tb := TopicID{1}, TopicID{2}
	recs := []CGRecord{
		groupEpochRecord("g", 7),
		groupEpochTombstone("g"),
		partitionMetadataRecord("g", map[string]TopicInfo{"a": {Name: "a", ID: ta, Partitions: 3}}),
		memberMetadataRecord("g", &ConsumerMember{ID: "m", InstanceID: &inst, RackID: &rack, ClientID: "c", ClientHost: "/h",
			SubscribedTopicNames: []string{"a", "b"}, RebalanceTimeout: time.Minute, ServerAssignor: "range"}),
		memberMetadataRecord("g", &ConsumerMember{ID: "m2", SubscribedTopicRegex: "a.*", RebalanceTimeout: -1}),
		memberMetadataRecord("g", &ConsumerMember{ID: "m3", SubscribedTopicNames: []string{"a"}, RebalanceTimeout: time.Minute,
			Classic: &ClassicMemberMetadata{SessionTimeout: 10 * time.Second, Protocols: []Protocol{{Name: "range", Metadata: []byte{0, 1, 2}}, {Name: "x"}}}}),
		targetEpochRecord("g", 7),
		targetMemberRecord("g", "m", PartitionSet{ta: {0, 2}, tb: {1}}),
		currentAssignmentRecord("g", &ConsumerMember{ID: "m", Epoch: 7, PreviousEpoch: 6, State: MemberUnrevokedPartitions,
			Assigned: PartitionSet{ta: {0}}, PendingRevocation: PartitionSet{tb: {1, 3}}}),
		currentAssignmentTombstone("g", "m"),
	}
	for _, r := range recs {
		kv := r.KV()
		got, err := parseCGRecord(kv.Key, kv.Value)
		if err != nil {
			t.Fatalf("%s: %v", recordName(r), err)
		}
		if fmt.Sprint(got.KV()) != fmt.Sprint(kv) {
			t.Fatalf("%s: round trip differs:\n%v\n%v", recordName(r), got.KV(), kv)
		}
	}
	// The classic member metadata survives (tagged field 0).
	kv3 := recs[5].KV()
	got, _ := parseCGRecord(kv3.Key, kv3.Value)
	if c := got.Metadata.Classic; c == nil || c.SessionTimeout != 10*time.Second || len(c.Protocols) != 2 || string(c.Protocols[0].Metadata) != "\x00\x01\x02" {
		t.Fatalf("classic member metadata: %+v", got.Metadata.Classic)
	}
	for i := 2; i < len(kv3.Value); i++ {
		if _, err := parseCGRecord(kv3.Key, kv3.Value[:i]); err == nil {
			t.Fatalf("classic member value truncated to %d bytes decoded", i)
		}
	}
	// A truncated value is an error, not a panic.
	kv := recs[8].KV()
	for i := 2; i < len(kv.Value); i++ {
		if _, err := parseCGRecord(kv.Key, kv.Value[:i]); err == nil {
			t.Fatalf("value truncated to %d bytes decoded", i)
		}
	}
}

// TestUniformAssignorBalancedAndSticky checks the uniform assignor's two
// promises on random-ish inputs: shares differ by at most one, and a
// member that stays keeps the partitions it had, up to its share.
func TestUniformAssignorBalancedAndSticky(t *testing.T) {
	topics := map[string]TopicInfo{"a": {Name: "a", ID: TopicID{1}, Partitions: 17}, "b": {Name: "b", ID: TopicID{2}, Partitions: 5}}
	prev := map[string]PartitionSet{}
	for n := 1; n <= 9; n++ {
		in := assignInput{topics: topics, prev: prev}
		for i := range n {
			in.members = append(in.members, assignMember{id: fmt.Sprintf("m%02d", i), topics: []string{"a", "b"}})
		}
		out := assignUniform(in)
		lo, hi, total := 1<<30, 0, 0
		for _, a := range out {
			lo, hi, total = min(lo, a.size()), max(hi, a.size()), total+a.size()
		}
		if hi-lo > 1 || total != 22 {
			t.Fatalf("n=%d: shares %d..%d total %d", n, lo, hi, total)
		}
		moved := 0
		for id, a := range prev {
			for tid, ps := range a {
				for _, p := range ps {
					if !out[id].has(tid, p) {
						moved++
					}
				}
			}
		}
		// Adding the n-th member needs to move only its share.
		if n > 1 && moved > 22/n+1 {
			t.Fatalf("n=%d: %d partitions moved", n, moved)
		}
		prev = out
	}
	// Heterogeneous subscriptions: only subscribed topics, balanced
	// where the subscriptions allow.
	in := assignInput{topics: topics, members: []assignMember{{id: "x", topics: []string{"a"}}, {id: "y", topics: []string{"a", "b"}}}}
	out := assignUniform(in)
	if _, ok := out["x"][TopicID{2}]; ok {
		t.Fatalf("x got a topic it does not subscribe to: %v", out)
	}
	if d := out["x"].size() - out["y"].size(); d > 1 || d < -1 {
		t.Fatalf("unbalanced: x=%d y=%d", out["x"].size(), out["y"].size())
	}
	if !slices.Equal(out["y"][TopicID{2}], []int32{0, 1, 2, 3, 4}) {
		t.Fatalf("y: %v", out["y"])
	}
}
