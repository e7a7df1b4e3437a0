package replica

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// isrEnv drives a LeaderState from a datadriven script. Commands:
//
//	new self=1 replicas=(1,2,3) isr=(1,2,3) epoch=E pepoch=P leo=L hw=H [now=T] [lag=MS] [min=N]
//	append leo=L [now=T]         the leader appended up to L (not durable)
//	durable offset=O [now=T]     the leader fsynced up to O
//	fetch id=I offset=O [now=T]  follower I fetched at O
//	tick [now=T]
//	commit isr=(...) pepoch=P    the partition state now holds isr at P
//	abort                        the proposed change failed without an answer
//	resign                       the leader proposes its ISR without itself
//	check-append
//	acked offset=O
//	state
//
// Each command prints what happened, then the state.
type isrEnv struct {
	s   *LeaderState
	now int64
}

func (e *isrEnv) state() string {
	pending := "none"
	if p := e.s.Pending(); p != nil {
		pending = fmt.Sprintf("%v@%d", p.ISR, p.PartitionEpoch)
	}
	return fmt.Sprintf("hw=%d leo=%d isr=%v pepoch=%d pending=%s\n",
		e.s.HighWatermark(), e.s.LogEndOffset(), e.s.ISR(), e.s.PartitionEpoch(), pending)
}

func formatChange(verb string, c *ISRChange) string {
	if c == nil {
		return ""
	}
	return fmt.Sprintf("propose %s isr=%v at pepoch=%d\n", verb, c.ISR, c.PartitionEpoch)
}

func (e *isrEnv) handle(t *testing.T, d *datadriven.TestData) string {
	d.MaybeScanArgs(t, "now", &e.now)
	var out strings.Builder
	switch d.Cmd {
	case "new":
		var self, epoch, pepoch int32
		var replicas, isr []int32
		var leo, hw int64
		cfg := ISRConfig{ReplicaLagTimeMaxMs: 30000, MinInsyncReplicas: 1}
		d.ScanArgs(t, "self", &self)
		d.ScanArgs(t, "replicas", &replicas)
		d.ScanArgs(t, "isr", &isr)
		d.ScanArgs(t, "epoch", &epoch)
		d.ScanArgs(t, "pepoch", &pepoch)
		d.ScanArgs(t, "leo", &leo)
		d.ScanArgs(t, "hw", &hw)
		d.MaybeScanArgs(t, "lag", &cfg.ReplicaLagTimeMaxMs)
		d.MaybeScanArgs(t, "min", &cfg.MinInsyncReplicas)
		e.s = NewLeaderState(self, replicas, isr, epoch, pepoch, leo, hw, e.now, cfg)
	case "append":
		var leo int64
		d.ScanArgs(t, "leo", &leo)
		e.s.LeaderAppended(leo, e.now)
	case "durable":
		var off int64
		d.ScanArgs(t, "offset", &off)
		before := e.s.HighWatermark()
		if e.s.LeaderDurable(off, e.now) {
			fmt.Fprintf(&out, "hw advanced %d -> %d\n", before, e.s.HighWatermark())
		}
	case "fetch":
		var id int32
		var off int64
		d.ScanArgs(t, "id", &id)
		d.ScanArgs(t, "offset", &off)
		before := e.s.HighWatermark()
		isrBefore := len(e.s.ISR())
		adv, expand := e.s.FollowerFetch(id, off, e.now)
		if adv {
			fmt.Fprintf(&out, "hw advanced %d -> %d\n", before, e.s.HighWatermark())
		}
		if expand != nil && len(expand.ISR) < isrBefore {
			out.WriteString(formatChange("shrink", expand))
		} else {
			out.WriteString(formatChange("expand", expand))
		}
	case "tick":
		out.WriteString(formatChange("shrink", e.s.Tick(e.now)))
	case "commit":
		var isr []int32
		var pepoch int32
		d.ScanArgs(t, "isr", &isr)
		d.ScanArgs(t, "pepoch", &pepoch)
		before := e.s.HighWatermark()
		e.s.ISRCommitted(isr, pepoch)
		if hw := e.s.HighWatermark(); hw != before {
			fmt.Fprintf(&out, "hw advanced %d -> %d\n", before, hw)
		}
	case "abort":
		e.s.ISRChangeAborted()
	case "resign":
		out.WriteString(formatChange("resign", e.s.Resign()))
	case "check-append":
		if err := e.s.CheckAppend(); err != nil {
			fmt.Fprintf(&out, "error: %v\n", err)
		} else {
			out.WriteString("ok\n")
		}
	case "acked":
		var off int64
		d.ScanArgs(t, "offset", &off)
		done, err := e.s.AppendAcked(off)
		fmt.Fprintf(&out, "done=%t", done)
		if err != nil {
			fmt.Fprintf(&out, " error: %v", err)
		}
		out.WriteString("\n")
	case "state":
	default:
		d.Fatalf(t, "unknown command %q", d.Cmd)
	}
	out.WriteString(e.state())
	return out.String()
}

func TestLeaderStateScripts(t *testing.T) {
	datadriven.Walk(t, "testdata/isr", func(t *testing.T, path string) {
		e := &isrEnv{}
		datadriven.RunTest(t, path, e.handle)
	})
}

// TestLeaderStateHWMonotonic feeds fetches that go backwards (a follower that
// restarted) and checks the HW never moves back.
// Reference: KIP-101 (the HW is never lowered by a follower).
func TestLeaderStateHWMonotonic(t *testing.T) {
	cfg := ISRConfig{ReplicaLagTimeMaxMs: 1000, MinInsyncReplicas: 2}
	s := NewLeaderState(1, []int32{1, 2, 3}, []int32{1, 2, 3}, 3, 7, 0, 0, 0, cfg)
	offsets := []int64{5, 9, 3, 12, 0, 15, 15, 2, 20}
	var last int64
	now := int64(0)
	for i, off := range offsets {
		now += 10
		s.LeaderDurable(off+1, now)
		s.FollowerFetch(2, off, now)
		s.FollowerFetch(3, offsets[len(offsets)-1-i], now)
		if hw := s.HighWatermark(); hw < last {
			t.Fatalf("step %d: hw went back from %d to %d", i, last, hw)
		} else {
			last = hw
		}
	}
	// Both followers were at or beyond 12 together at step 3 (12 and 15),
	// and never both beyond it afterwards.
	if last != 12 {
		t.Fatalf("final hw = %d, want 12", last)
	}
}

func TestLeaderStateErrorsWrapSentinels(t *testing.T) {
	cfg := ISRConfig{ReplicaLagTimeMaxMs: 1000, MinInsyncReplicas: 2}
	s := NewLeaderState(1, []int32{1, 2}, []int32{1}, 0, 0, 0, 0, 0, cfg)
	if err := s.CheckAppend(); !errors.Is(err, ErrNotEnoughReplicas) {
		t.Fatalf("CheckAppend = %v, want ErrNotEnoughReplicas", err)
	}
	s = NewLeaderState(1, []int32{1, 2}, []int32{1, 2}, 0, 0, 0, 0, 0, cfg)
	s.LeaderDurable(4, 1)
	s.FollowerFetch(2, 4, 1)
	s.ISRCommitted([]int32{1}, 1)
	done, err := s.AppendAcked(3)
	if !done || !errors.Is(err, ErrNotEnoughReplicasAfterAppend) {
		t.Fatalf("AppendAcked = %t, %v; want done with ErrNotEnoughReplicasAfterAppend", done, err)
	}
	if err := s.CheckAppend(); !errors.Is(err, ErrNotEnoughReplicas) {
		t.Fatalf("CheckAppend = %v, want ErrNotEnoughReplicas", err)
	}
}
