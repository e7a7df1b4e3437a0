package txn

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// stateEnv drives a State from a datadriven script. It plays the log: each
// appended batch gets the next offsets from leo.
type stateEnv struct {
	s    *State
	leo  int64
	now  int64
	snap []byte
}

func scanBatch(t *testing.T, d *datadriven.TestData) Batch {
	t.Helper()
	var b Batch
	n := int32(1)
	d.ScanArgs(t, "pid", &b.ProducerID)
	d.ScanArgs(t, "epoch", &b.Epoch)
	d.ScanArgs(t, "seq", &b.BaseSequence)
	d.MaybeScanArgs(t, "n", &n)
	b.LastOffsetDelta = n - 1
	b.Transactional = d.HasArg("txn")
	return b
}

func scanMarker(t *testing.T, d *datadriven.TestData) Marker {
	t.Helper()
	m := Marker{CoordinatorEpoch: 0}
	d.ScanArgs(t, "pid", &m.ProducerID)
	d.ScanArgs(t, "epoch", &m.Epoch)
	d.MaybeScanArgs(t, "coord", &m.CoordinatorEpoch)
	switch {
	case d.HasArg("commit"):
		m.Commit = true
	case d.HasArg("abort"):
	default:
		d.Fatalf(t, "marker needs commit or abort")
	}
	return m
}

// applyMarker applies m at the next offset and prints the completed
// transaction and the last stable offset it leaves (as the .txnindex
// records it).
func (e *stateEnv) applyMarker(m Marker) string {
	off := e.leo
	e.leo++
	c, ok := e.s.ApplyMarker(m, off, e.now)
	if !ok {
		return fmt.Sprintf("marker at %d ends no transaction\n", off)
	}
	lso := c.LastOffset + 1
	if first, ok := e.s.FirstUnstableOffset(); ok {
		lso = first
	}
	return fmt.Sprintf("marker at %d completes pid=%d offsets=%d..%d aborted=%t lso=%d\n",
		off, c.ProducerID, c.FirstOffset, c.LastOffset, c.Aborted, lso)
}

func formatUnstable(s *State) string {
	first, ok := s.FirstUnstableOffset()
	if !ok {
		return "no open transaction\n"
	}
	return fmt.Sprintf("first unstable offset %d\n", first)
}

func (e *stateEnv) scanNow(t *testing.T, d *datadriven.TestData) {
	t.Helper()
	d.MaybeScanArgs(t, "now", &e.now)
}

func formatProducers(s *State) string {
	var sb strings.Builder
	ps := s.Producers()
	if len(ps) == 0 {
		return "no producers\n"
	}
	for _, p := range ps {
		fmt.Fprintf(&sb, "pid=%d epoch=%d last-update=%d", p.ID, p.Epoch, p.LastUpdateMs)
		if p.CoordinatorEpoch >= 0 {
			fmt.Fprintf(&sb, " coordinator-epoch=%d", p.CoordinatorEpoch)
		}
		if p.InTxn() {
			fmt.Fprintf(&sb, " txn-first=%d", p.CurrentTxnFirstOffset)
		}
		sb.WriteString("\n")
		for _, m := range p.Batches {
			fmt.Fprintf(&sb, "  seq=%d..%d offsets=%d..%d ts=%d\n", m.FirstSeq, m.LastSeq, m.FirstOffset, m.LastOffset, m.Timestamp)
		}
	}
	return sb.String()
}

func (e *stateEnv) handle(t *testing.T, d *datadriven.TestData) string {
	switch d.Cmd {
	case "check":
		b := scanBatch(t, d)
		dup, err := e.s.Check(b)
		switch {
		case err != nil:
			return fmt.Sprintf("error: %v\n", err)
		case dup != nil:
			return fmt.Sprintf("duplicate offsets=%d..%d\n", dup.FirstOffset, dup.LastOffset)
		}
		return "append\n"
	case "append":
		b := scanBatch(t, d)
		e.scanNow(t, d)
		ts := e.now
		d.MaybeScanArgs(t, "ts", &ts)
		dup, err := e.s.Check(b)
		switch {
		case err != nil:
			return fmt.Sprintf("refused: %v\n", err)
		case dup != nil:
			return fmt.Sprintf("duplicate offsets=%d..%d\n", dup.FirstOffset, dup.LastOffset)
		}
		first, last := e.leo, e.leo+int64(b.LastOffsetDelta)
		e.s.Update(b, first, last, ts, e.now)
		e.leo = last + 1
		return fmt.Sprintf("appended offsets=%d..%d\n", first, last)
	case "replay":
		b := scanBatch(t, d)
		e.scanNow(t, d)
		d.MaybeScanArgs(t, "offset", &e.leo)
		first, last := e.leo, e.leo+int64(b.LastOffsetDelta)
		e.s.Replay(b, first, last, e.now, e.now)
		e.leo = last + 1
		return fmt.Sprintf("replayed offsets=%d..%d\n", first, last)
	case "marker":
		// marker pid=P epoch=E commit|abort [coord=C] [now=T]: the leader's
		// path, CheckMarker then ApplyMarker at the next offset.
		m := scanMarker(t, d)
		e.scanNow(t, d)
		if err := e.s.CheckMarker(m); err != nil {
			return fmt.Sprintf("refused: %v\n", err)
		}
		return e.applyMarker(m)
	case "replay-marker":
		m := scanMarker(t, d)
		e.scanNow(t, d)
		return e.applyMarker(m)
	case "unstable":
		return formatUnstable(e.s)
	case "expire":
		var ms, start int64
		e.scanNow(t, d)
		d.ScanArgs(t, "ms", &ms)
		d.ScanArgs(t, "start", &start)
		n := e.s.Expire(e.now, ms, start)
		return fmt.Sprintf("removed %d\n", n) + formatProducers(e.s)
	case "truncate":
		var off int64
		d.ScanArgs(t, "offset", &off)
		e.s.TruncateTo(off)
		e.leo = off
		return formatProducers(e.s)
	case "snapshot":
		e.snap = e.s.MarshalSnapshot()
		return fmt.Sprintf("%d bytes, %d producers\n", len(e.snap), e.s.Len())
	case "restore":
		s, err := UnmarshalSnapshot(e.snap)
		if err != nil {
			return fmt.Sprintf("error: %v\n", err)
		}
		e.s = s
		return formatProducers(e.s)
	case "producers":
		return formatProducers(e.s)
	default:
		d.Fatalf(t, "unknown command %q", d.Cmd)
		return ""
	}
}

// TestStateScripts runs the scripts in testdata. Each starts with an empty
// State and an empty log. Rewrite the expected output with -rewrite.
func TestStateScripts(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		if strings.HasPrefix(filepath.Base(path), "coordinator") {
			t.Skip("a coordinator script; see TestCoordinatorScripts")
		}
		env := &stateEnv{s: NewState()}
		datadriven.RunTest(t, path, env.handle)
	})
}

func TestLastSeqWrapsPastMaxInt32(t *testing.T) {
	tests := []struct {
		base, delta, want int32
	}{
		{0, 0, 0},
		{0, 4, 4},
		{10, 9, 19},
		{math.MaxInt32, 0, math.MaxInt32},
		{math.MaxInt32 - 2, 2, math.MaxInt32},
		{math.MaxInt32 - 2, 3, 0},
		{math.MaxInt32 - 2, 5, 2},
		{math.MaxInt32, 1, 0},
		{math.MaxInt32, math.MaxInt32, math.MaxInt32 - 1},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("base=%d/delta=%d", tt.base, tt.delta), func(t *testing.T) {
			b := Batch{BaseSequence: tt.base, LastOffsetDelta: tt.delta}
			if got := b.LastSeq(); got != tt.want {
				t.Fatalf("LastSeq() = %d, want %d", got, tt.want)
			}
		})
	}
}

// TestCheckReturnsSentinels pins the sentinel behind each refusal, since the
// broker maps them to Kafka error codes.
func TestCheckReturnsSentinels(t *testing.T) {
	s := NewState()
	s.Update(Batch{ProducerID: 1, Epoch: 3, BaseSequence: 0, LastOffsetDelta: 1}, 0, 1, 0, 0)
	tests := []struct {
		name string
		b    Batch
		want error
	}{
		{"negative epoch", Batch{ProducerID: 1, Epoch: -1, BaseSequence: 2}, ErrInvalidSequence},
		{"negative sequence", Batch{ProducerID: 1, Epoch: 3, BaseSequence: -1}, ErrInvalidSequence},
		{"negative delta", Batch{ProducerID: 1, Epoch: 3, BaseSequence: 2, LastOffsetDelta: -1}, ErrInvalidSequence},
		{"stale epoch", Batch{ProducerID: 1, Epoch: 2, BaseSequence: 2}, ErrInvalidProducerEpoch},
		{"unknown producer", Batch{ProducerID: 2, Epoch: 0, BaseSequence: 5}, ErrUnknownProducerID},
		{"gap", Batch{ProducerID: 1, Epoch: 3, BaseSequence: 3}, ErrOutOfOrderSequence},
		{"new epoch not at 0", Batch{ProducerID: 1, Epoch: 4, BaseSequence: 2}, ErrOutOfOrderSequence},
		{"next in order", Batch{ProducerID: 1, Epoch: 3, BaseSequence: 2}, nil},
		{"new epoch at 0", Batch{ProducerID: 1, Epoch: 4, BaseSequence: 0}, nil},
		{"unknown producer at 0", Batch{ProducerID: 2, Epoch: 0, BaseSequence: 0}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dup, err := s.Check(tt.b)
			if dup != nil {
				t.Fatalf("Check(%v) = duplicate %+v", tt.b, *dup)
			}
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("Check(%v) = %v, want %v", tt.b, err, tt.want)
			}
		})
	}
}

// TestWindowKeepsNewestFiveBatches checks that after many appends exactly
// the newest WindowSize batches are duplicates and the one before is not.
// Reference: KIP-98 (five in-flight batches per producer).
func TestWindowKeepsNewestFiveBatches(t *testing.T) {
	s := NewState()
	const total = 12
	for i := range int32(total) {
		b := Batch{ProducerID: 7, Epoch: 0, BaseSequence: 2 * i, LastOffsetDelta: 1}
		if dup, err := s.Check(b); dup != nil || err != nil {
			t.Fatalf("Check(%v) = %v, %v", b, dup, err)
		}
		s.Update(b, int64(100+2*i), int64(101+2*i), 0, 0)
	}
	p, ok := s.Producer(7)
	if !ok || len(p.Batches) != WindowSize {
		t.Fatalf("producer 7 = %+v, %v; want %d batches", p, ok, WindowSize)
	}
	for i := int32(0); i < total; i++ {
		b := Batch{ProducerID: 7, Epoch: 0, BaseSequence: 2 * i, LastOffsetDelta: 1}
		dup, err := s.Check(b)
		if i >= total-WindowSize {
			if err != nil || dup == nil || dup.FirstOffset != int64(100+2*i) || dup.LastOffset != int64(101+2*i) {
				t.Fatalf("batch %d: Check = %+v, %v; want duplicate at %d", i, dup, err, 100+2*i)
			}
			continue
		}
		if dup != nil || !errors.Is(err, ErrOutOfOrderSequence) {
			t.Fatalf("batch %d: Check = %+v, %v; want ErrOutOfOrderSequence", i, dup, err)
		}
	}
}

func TestCloneIsIndependent(t *testing.T) {
	s := NewState()
	b := Batch{ProducerID: 1, Epoch: 0, BaseSequence: 0}
	s.Update(b, 0, 0, 0, 0)
	c := s.Clone()
	s.Update(Batch{ProducerID: 1, Epoch: 0, BaseSequence: 1}, 1, 1, 0, 0)
	s.Update(Batch{ProducerID: 2, Epoch: 0, BaseSequence: 0}, 2, 2, 0, 0)
	if c.Len() != 1 {
		t.Fatalf("clone has %d producers, want 1", c.Len())
	}
	p, _ := c.Producer(1)
	if len(p.Batches) != 1 {
		t.Fatalf("clone producer 1 has %d batches, want 1", len(p.Batches))
	}
	ps := s.Producers()
	ps[0].Batches[0].FirstOffset = 99
	if q, _ := s.Producer(1); q.Batches[0].FirstOffset != 0 {
		t.Fatalf("Producers returned shared batches")
	}
}
