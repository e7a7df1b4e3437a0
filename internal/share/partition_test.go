package share

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
)

// partitionEnv drives one Partition from a datadriven script with a fake
// clock. "crash" keeps only what the last "persist" saved, as a leader
// that fails over and restores from the share coordinator does.
type partitionEnv struct {
	t     *testing.T
	cfg   Config
	p     *Partition
	now   time.Time
	saved State
}

func (e *partitionEnv) state() string {
	var b strings.Builder
	fmt.Fprintf(&b, "spso=%d speo=%d", e.p.StartOffset(), e.p.EndOffset())
	for o := e.p.StartOffset(); o < e.p.EndOffset(); o++ {
		s, n, m := e.p.State(o)
		fmt.Fprintf(&b, "\n%d %s count=%d", o, s, n)
		if m != "" {
			fmt.Fprintf(&b, " member=%s", m)
		}
	}
	return b.String()
}

func fmtAcquired(a []AcquiredRange) string {
	if len(a) == 0 {
		return "none"
	}
	var parts []string
	for _, r := range a {
		parts = append(parts, fmt.Sprintf("%d-%d(%d)", r.First, r.Last, r.DeliveryCount))
	}
	return strings.Join(parts, " ")
}

func parseRange(t *testing.T, s string) (int64, int64) {
	a, b, ok := strings.Cut(s, "-")
	first, err := strconv.ParseInt(a, 10, 64)
	if err != nil {
		t.Fatalf("bad range %q", s)
	}
	last := first
	if ok {
		if last, err = strconv.ParseInt(b, 10, 64); err != nil {
			t.Fatalf("bad range %q", s)
		}
	}
	return first, last
}

var ackNames = map[string]AckType{"gap": AckGap, "accept": AckAccept, "release": AckRelease, "reject": AckReject, "renew": AckRenew}

func (e *partitionEnv) handle(t *testing.T, d *datadriven.TestData) string {
	member := ""
	if d.HasArg("member") {
		d.ScanArgs(t, "member", &member)
	}
	switch d.Cmd {
	case "new":
		e.cfg = Config{LockDuration: 30 * time.Second, DeliveryCountLimit: 5, MaxRecordLocks: 2000}
		var start int64
		d.MaybeScanArgs(t, "start", &start)
		if d.HasArg("limit") {
			var n int
			d.ScanArgs(t, "limit", &n)
			e.cfg.DeliveryCountLimit = int16(n)
		}
		d.MaybeScanArgs(t, "locks", &e.cfg.MaxRecordLocks)
		if d.HasArg("lock") {
			var s string
			d.ScanArgs(t, "lock", &s)
			e.cfg.LockDuration, _ = time.ParseDuration(s)
		}
		e.p = New(e.cfg, start)
		return e.state()
	case "acquire":
		// acquire member=a batches=0-4,5-9,!10-12 [max=N] [strict]
		// (a batch with ! is skipped: aborted or control)
		var bs string
		d.ScanArgs(t, "batches", &bs)
		var batches []Batch
		for _, r := range strings.Split(bs, ",") {
			skip := strings.HasPrefix(r, "!")
			f, l := parseRange(t, strings.TrimPrefix(r, "!"))
			batches = append(batches, Batch{First: f, Last: l, Skip: skip})
		}
		maxRecords := 0
		d.MaybeScanArgs(t, "max", &maxRecords)
		return fmtAcquired(e.p.Acquire(member, e.now, batches, maxRecords, d.HasArg("strict")))
	case "ack":
		// ack member=a, one batch per line: "0-4 accept" or "0-2 accept,release,reject"
		var batches []AckBatch
		for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
			rs, ts, _ := strings.Cut(line, " ")
			f, l := parseRange(t, rs)
			b := AckBatch{First: f, Last: l}
			for _, n := range strings.Split(ts, ",") {
				typ, ok := ackNames[n]
				if !ok {
					n, err := strconv.Atoi(n)
					if err != nil {
						t.Fatalf("bad type %q", ts)
					}
					typ = AckType(n)
				}
				b.Types = append(b.Types, typ)
			}
			batches = append(batches, b)
		}
		if err := ValidateAcks(batches, true); err != nil {
			return "error: " + err.Error()
		}
		if err := e.p.Acknowledge(member, e.now, batches); err != nil {
			return "error: " + err.Error()
		}
		return e.state()
	case "tick":
		var s string
		d.ScanArgs(t, "by", &s)
		dur, err := time.ParseDuration(s)
		if err != nil {
			t.Fatal(err)
		}
		e.now = e.now.Add(dur)
		n := e.p.ExpireLocks(e.now)
		return fmt.Sprintf("expired %d\n%s", n, e.state())
	case "release-member":
		n := e.p.ReleaseMember(member)
		return fmt.Sprintf("released %d\n%s", n, e.state())
	case "next":
		return strconv.FormatInt(e.p.NextFetchOffset(), 10)
	case "move-start":
		var o int64
		d.ScanArgs(t, "to", &o)
		e.p.MoveStartTo(o)
		return e.state()
	case "state":
		return e.state()
	case "persist":
		e.saved = e.p.Snapshot()
		var b strings.Builder
		fmt.Fprintf(&b, "start=%d", e.saved.StartOffset)
		for _, sb := range e.saved.Batches {
			fmt.Fprintf(&b, "\n%d-%d %s count=%d", sb.First, sb.Last, sb.State, sb.DeliveryCount)
		}
		return b.String()
	case "crash":
		e.p = Restore(e.cfg, e.saved)
		return e.state()
	}
	t.Fatalf("unknown command %s", d.Cmd)
	return ""
}

// TestPartitionScripts runs the share-partition scripts in testdata.
// Reference: KIP-932, "In-flight records" and "Delivery count".
func TestPartitionScripts(t *testing.T) {
	datadriven.Walk(t, "testdata/partition", func(t *testing.T, path string) {
		e := &partitionEnv{t: t, now: time.UnixMilli(0)}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			return e.handle(t, d)
		})
	})
}

// TestUnacquireRestoresDeliveryCounts: an acquisition whose answer is not
// given is undone: the records are available again with the delivery
// counts they had, and another member acquires them as the same delivery.
func TestUnacquireRestoresDeliveryCounts(t *testing.T) {
	p := New(Config{LockDuration: time.Second, DeliveryCountLimit: 3, MaxRecordLocks: 100}, 0)
	now := time.Unix(0, 0)
	got := p.Acquire("a", now, []Batch{{First: 0, Last: 4}}, 0, false)
	if fmtAcquired(got) != "0-4(1)" {
		t.Fatalf("acquired %s", fmtAcquired(got))
	}
	v := p.Version()
	p.Unacquire("b", got) // another member's: nothing changes
	if p.Version() != v {
		t.Fatal("unacquire of another member's records changed the state")
	}
	p.Unacquire("a", got)
	if s, n, m := p.State(2); s != Available || n != 0 || m != "" {
		t.Fatalf("offset 2 after unacquire: %s count %d member %q", s, n, m)
	}
	if got := p.Acquire("b", now, []Batch{{First: 0, Last: 4}}, 0, false); fmtAcquired(got) != "0-4(1)" {
		t.Fatalf("b acquired %s after the unacquire, want 0-4(1)", fmtAcquired(got))
	}
}

// TestNextDeadlineIsALowerBoundThatExpireLocksTightens: NextDeadline may
// stay at the deadline of records acknowledged since, never later than
// a live lock; ExpireLocks past it finds the live locks' earliest.
func TestNextDeadlineIsALowerBoundThatExpireLocksTightens(t *testing.T) {
	p := New(Config{LockDuration: 10 * time.Second, DeliveryCountLimit: 5, MaxRecordLocks: 100}, 0)
	t0 := time.UnixMilli(0)
	if got := p.Acquire("a", t0, []Batch{{First: 0, Last: 4}}, 0, false); len(got) != 1 {
		t.Fatalf("a acquired %+v", got)
	}
	if err := p.Acknowledge("a", t0, []AckBatch{{First: 0, Last: 4, Types: []AckType{AckAccept}}}); err != nil {
		t.Fatal(err)
	}
	if got := p.NextDeadline(); !got.Equal(t0.Add(10 * time.Second)) {
		t.Fatalf("next deadline %v after the accept, want the old lock's (a lower bound)", got)
	}
	t5 := t0.Add(5 * time.Second)
	p.Acquire("b", t5, []Batch{{First: 5, Last: 9}}, 0, false)
	if n := p.ExpireLocks(t0.Add(10 * time.Second)); n != 0 {
		t.Fatalf("expired %d at the accepted records' deadline", n)
	}
	if got := p.NextDeadline(); !got.Equal(t5.Add(10 * time.Second)) {
		t.Fatalf("next deadline %v, want b's lock %v", got, t5.Add(10*time.Second))
	}
	if n := p.ExpireLocks(t5.Add(10 * time.Second)); n != 5 {
		t.Fatalf("expired %d of b's 5", n)
	}
	if got := p.NextDeadline(); !got.IsZero() {
		t.Fatalf("next deadline %v with nothing acquired", got)
	}
}
