package broker_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"samsa/internal/broker"
	"samsa/internal/testutil"
)

// TestShareGroupJoinWaitsForAlterShareGroupOffsets: a member that
// heartbeats to join while AlterShareGroupOffsets of its empty group is
// between its emptiness check and its write of the new start offset
// waits for the write; it is then given the records from the new start
// offset, at delivery count 1, and its acknowledgements are not fenced
// (it never saw the old state). The hook holds the alter at that point,
// so the interleaving is the same on every run.
func TestShareGroupJoinWaitsForAlterShareGroupOffsets(t *testing.T) {
	t.Parallel()
	b := testutil.StartBroker(t, shareBrokerConfig...)
	const topic, group = "share-alter-race", "sg-alter-race"
	testutil.CreateTopic(t, b.Admin(), topic, 1)
	cl := b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	produceValues(t, cl, topic, 1, 10)
	id := shareTopicID(t, cl, topic)

	a := &rawShareMember{cl: cl, group: group, member: "a", maxWait: 200}
	testutil.Eventually(t, 10*time.Second, func() error {
		if r, err := a.heartbeat(ctx, []string{topic}); err != nil || r.ErrorCode != 0 {
			return fmt.Errorf("heartbeat: %v %v", err, r)
		}
		return nil
	})
	if offs, _ := acceptAll(t, ctx, a, id, 5); len(offs) < 5 {
		t.Fatalf("a accepted %v", offs)
	}
	a.leave(t, ctx, id)

	m := &rawShareMember{cl: b.Client(), group: group, member: "b", maxWait: 200}
	joined := make(chan error, 1)
	held := false
	restore := broker.SetShareGroupEmptyHook(func(g string) {
		if g != group || held {
			return
		}
		held = true
		go func() {
			r, err := m.heartbeat(ctx, []string{topic})
			if err == nil && r.ErrorCode != 0 {
				err = kerr.ErrorForCode(r.ErrorCode)
			}
			joined <- err
		}()
		select {
		case err := <-joined:
			joined <- err
			t.Errorf("a member joined (%v) while the alter held its group", err)
		case <-time.After(time.Second):
		}
	})
	defer restore()
	top, parts := alterShareOffsets(t, ctx, cl, group, map[string]map[int32]int64{topic: {0: 8}})
	restore()
	wantCode(t, "alter", top, nil)
	wantCode(t, "alter of partition 0", parts[topic+"/0"], nil)
	if !held {
		t.Fatal("the hook never held the alter")
	}
	select {
	case err := <-joined:
		if err != nil {
			t.Fatalf("join after the alter: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the join never ended")
	}
	offs, counts := acceptAll(t, ctx, m, id, 2)
	if !slices.Equal(offs, []int64{8, 9}) || !slices.Equal(counts, []int16{1, 1}) {
		t.Fatalf("after the alter to 8 the joined member acquired %v at delivery counts %v; want 8 and 9 at 1", offs, counts)
	}
	if start, _ := shareOffsets(t, ctx, cl, group, topic, 0); start != 10 {
		t.Fatalf("start offset %d after accepting 8 and 9, want 10 (an acknowledgement was fenced)", start)
	}
}
