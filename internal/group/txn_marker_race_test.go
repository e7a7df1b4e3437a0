package group

import (
	"context"
	"testing"
	"time"
)

// slowTxnLog is a memLog whose AppendTxn writes the batch at once but
// returns only when released, as a replica's append waits for the high
// watermark: meanwhile later records (a marker) can be written after it.
type slowTxnLog struct {
	*memLog
	appended chan struct{}
	release  chan struct{}
}

func (l *slowTxnLog) AppendTxn(ctx context.Context, pid int64, epoch int16, guard any, recs []KV) (int64, error) {
	base, err := l.memLog.AppendTxn(ctx, pid, epoch, guard, recs)
	close(l.appended)
	<-l.release
	return base, err
}

// TestTxnOffsetsAbortMarkerDuringAppend: the transaction coordinator
// aborts a transaction (its timeout) while the TxnOffsetCommit of that
// transaction is appended but not yet acknowledged; the ABORT marker lands
// after the offsets' record in the log and is completed first. The
// offsets must be dropped as the log says (a reload drops them), not stay
// pending until the producer's next COMMIT marker commits them: that
// would commit the offsets of an aborted transaction, and a consumer
// taking over the partition would skip the aborted transaction's input.
func TestTxnOffsetsAbortMarkerDuringAppend(t *testing.T) {
	t.Parallel()
	mem := &memLog{}
	log := &slowTxnLog{memLog: mem, appended: make(chan struct{}), release: make(chan struct{})}
	c := newLoaded(t, testConfig(), log)

	done := make(chan error, 1)
	go func() {
		_, err := c.TxnOffsetCommit(context.Background(), txnCommit("g", 1, 0, "t", 0, 20))
		done <- err
	}()
	<-log.appended
	// The abort marker is written and completed while the commit waits.
	off := mem.marker(1, false)
	cdone := make(chan struct{})
	go func() {
		defer close(cdone)
		if _, err := c.CompleteTxn(context.Background(), 0, 1, false, off); err != nil {
			t.Errorf("complete txn: %v", err)
		}
	}()
	// The marker's completion may wait for the commit, not the reverse.
	select {
	case <-cdone:
	case <-time.After(200 * time.Millisecond):
	}
	close(log.release)
	if err := <-done; err != nil {
		t.Fatalf("txn commit: %v", err)
	}
	<-cdone
	if got := fetchStable(t, c, "g", "t", 0); got.Err != nil || got.Offset != -1 {
		t.Fatalf("after the abort marker: %+v, want no offset and no pending transaction", got)
	}
	// The producer's next transaction commits offsets of another
	// partition only.
	log.appended, log.release = make(chan struct{}), make(chan struct{})
	close(log.release)
	mustTxnCommit(t, c, txnCommit("g", 1, 1, "t", 1, 5))
	endTxn(t, c, mem, 1, true)
	if got := fetchStable(t, c, "g", "t", 0); got.Err != nil || got.Offset != -1 {
		t.Fatalf("after the next transaction's commit: t-0 %+v, want no offset (the aborted transaction's)", got)
	}
	// A coordinator loading the log agrees.
	r := newLoaded(t, testConfig(), mem)
	if got := fetchStable(t, r, "g", "t", 0); got.Err != nil || got.Offset != -1 {
		t.Fatalf("reloaded: t-0 %+v, want no offset", got)
	}
}

// TestTxnOffsetsAfterMarkerStayPending: a marker ends only the pending
// offsets whose records are before it in the log.
func TestTxnOffsetsAfterMarkerStayPending(t *testing.T) {
	t.Parallel()
	g := NewGroup("g", GroupConfig{MinSessionTimeout: time.Second, MaxSessionTimeout: time.Minute, MaxSize: 10}, time.Now())
	g.AddTxnOffset(1, "t", 0, Offset{Offset: 7, LeaderEpoch: -1, RecordOffset: 10})
	if g.CompleteTxn(1, false, 5) || !g.HasTxn(1) {
		t.Fatalf("an abort marker at 5 ended the offsets of record 10")
	}
	if !g.CompleteTxn(1, true, 12) || g.HasTxn(1) {
		t.Fatalf("the commit marker at 12 did not end the offsets of record 10")
	}
	if o, ok := g.offsets[topicPartition{"t", 0}]; !ok || o.Offset != 7 {
		t.Fatalf("committed %+v (%t), want 7", o, ok)
	}
}
