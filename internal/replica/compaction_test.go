package replica

import (
	"context"
	"fmt"
	"testing"
	"time"

	"samsa/internal/record"
	"samsa/internal/storage"
	"samsa/internal/vfs"
)

// leadCompacted is a partition of a compacted topic with tiny segments,
// led here with an ISR of one, over a storage Manager whose cleaner runs
// only when the test calls RunCleaner.
func leadCompacted(t *testing.T) (txnPartition, *storage.Manager) {
	t.Helper()
	tp, logs, _ := leadCompactedAt(t, t.TempDir())
	return tp, logs
}

// leadCompactedAt is leadCompacted over dir; closeAll closes both
// managers (it is idempotent).
func leadCompactedAt(t *testing.T, dir string) (tp txnPartition, logs *storage.Manager, closeAll func()) {
	t.Helper()
	cfg := storage.DefaultConfig()
	cfg.SegmentBytes = 600
	cfg.CleanupPolicy = storage.CleanupPolicyCompact
	cfg.MinCleanableDirtyRatio = 0
	cfg.DeleteRetentionMs = 0
	logs, err := storage.OpenManager(storage.ManagerConfig{
		FS: vfs.Default, Dir: dir, RetentionCheckInterval: time.Hour,
		DefaultConfig: cfg, CleanerDisable: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	m := NewManager(Config{Logs: logs, FS: vfs.Default, Self: 1, ISR: ISRConfig{ReplicaLagTimeMaxMs: 30000, MinInsyncReplicas: 1}})
	closed := false
	closeAll = func() {
		if !closed {
			closed = true
			m.Close()
			logs.Close()
		}
	}
	t.Cleanup(closeAll)
	info := PartitionInfo{Replicas: []int32{1}, Leader: 1, LeaderEpoch: 1, ISR: []int32{1}, PartitionEpoch: 1}
	p, err := m.Ensure(txnTP, [16]byte{1}, cfg, info)
	if err != nil {
		t.Fatal(err)
	}
	return txnPartition{t: t, p: p}, logs, closeAll
}

// appendKeyed appends one record with key and value from producer pid
// (-1: none) and waits until it is committed.
func (tp txnPartition) appendKeyed(pid int64, seq int32, transactional bool, key, value string) AppendResult {
	tp.t.Helper()
	bb := record.NewBuilder(record.CodecNone, time.Now().UnixMilli())
	if pid >= 0 {
		bb.ProducerID, bb.ProducerEpoch, bb.BaseSequence, bb.Transactional = pid, 0, seq, transactional
	}
	bb.Add(record.Record{Key: []byte(key), Value: []byte(value)})
	b, err := bb.Build()
	if err != nil {
		tp.t.Fatal(err)
	}
	return tp.commit(tp.p.Append(b, false, time.Now().UnixMilli()))
}

// readFrom returns the log's bytes from offset to its end.
func readFrom(t *testing.T, l *storage.Log, offset int64) []byte {
	t.Helper()
	res, err := l.Read(offset, 1<<40, 1<<62, true)
	if err != nil {
		t.Fatal(err)
	}
	buf, err := res.AppendTo(nil)
	if err != nil {
		t.Fatal(err)
	}
	return buf
}

// TestCleanerStopsAtOpenTransaction: the cleaner does not clean the
// segment holding the first record of an open transaction, nor any after
// it, until the transaction ends. Reference: KIP-98, Kafka
// LogCleanerManager.cleanableOffsets (firstUncleanableDirtyOffset).
func TestCleanerStopsAtOpenTransaction(t *testing.T) {
	t.Parallel()
	tp, logs := leadCompacted(t)
	l := tp.p.lg()
	for i := range 30 {
		tp.appendKeyed(-1, 0, false, fmt.Sprintf("k%d", i%3), fmt.Sprintf("v%d", i))
	}
	open := tp.appendKeyed(9, 0, true, "k0", "open").BaseOffset
	for i := range 30 {
		tp.appendKeyed(-1, 0, false, fmt.Sprintf("k%d", i%3), fmt.Sprintf("w%d", i))
	}
	tp.wantLSO(open)
	before := readFrom(t, l, open)
	if n, err := logs.RunCleaner(); n != 1 || err != nil {
		t.Fatalf("RunCleaner = %d, %v", n, err)
	}
	if ck := l.CleanerCheckpoint(); ck == 0 || ck > open {
		t.Fatalf("cleaner checkpoint %d, want in (0, %d] (the open transaction)", ck, open)
	}
	after := readFrom(t, l, open)
	if string(after) != string(before) {
		t.Fatalf("log from the open transaction at %d changed by cleaning", open)
	}
	tp.marker(9, 0, true)
	for range 10 {
		tp.appendKeyed(-1, 0, false, "k1", "roll")
	}
	if n, err := logs.RunCleaner(); n != 1 || err != nil {
		t.Fatalf("RunCleaner after the commit = %d, %v", n, err)
	}
	if ck := l.CleanerCheckpoint(); ck <= open {
		t.Fatalf("cleaner checkpoint %d, not past the committed transaction at %d", ck, open)
	}
}

// TestCleanedTransactionsReloadWithoutOpenTransactions: the cleaner removes
// the records of aborted transactions and, after delete.retention.ms (0
// here), the markers with no batch left; committed records follow key
// compaction. A partition that replays the cleaned log from its start
// (no producer snapshot) finds no open transaction, so its last stable
// offset is its high watermark, and producers keep their epochs.
// Reference: KIP-98, Kafka Cleaner (producers' last batches are kept).
func TestCleanedTransactionsReloadWithoutOpenTransactions(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tp, logs, closeAll := leadCompactedAt(t, dir)
	l := tp.p.lg()
	tp.appendKeyed(-1, 0, false, "a", "plain-a")
	tp.appendKeyed(5, 0, true, "a", "aborted-a")
	tp.appendKeyed(6, 0, true, "b", "committed-b")
	tp.appendKeyed(5, 1, true, "c", "aborted-c")
	tp.marker(5, 0, false)
	tp.marker(6, 0, true)
	tp.appendKeyed(5, 2, true, "d", "committed-d")
	tp.marker(5, 0, true)
	roll := func() { // more than segment.bytes: what came before is cleanable
		for i := range 10 {
			tp.appendKeyed(-1, 0, false, "filler", fmt.Sprintf("f%d", i))
		}
	}
	for range 4 {
		roll()
		if _, err := logs.RunCleaner(); err != nil {
			t.Fatal(err)
		}
	}
	markers := 0
	values := func() map[string]string {
		got := map[string]string{}
		buf := readFrom(t, l, l.LogStartOffset())
		for len(buf) > 0 {
			b, rest, err := record.Split(buf)
			if err != nil {
				t.Fatal(err)
			}
			buf = rest
			if b.Control() {
				markers++
				continue
			}
			recs, err := b.Records(0)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range recs {
				if string(r.Key) != "filler" {
					got[string(r.Key)+"="+string(r.Value)] = fmt.Sprint(r.Offset(b))
				}
			}
		}
		return got
	}
	got := values()
	for kv := range got {
		if kv == "a=aborted-a" || kv == "c=aborted-c" {
			t.Fatalf("aborted record %s at %s survives cleaning: %v", kv, got[kv], got)
		}
	}
	for _, kv := range []string{"a=plain-a", "b=committed-b", "d=committed-d"} {
		if _, ok := got[kv]; !ok {
			t.Fatalf("committed record %s lost: %v", kv, got)
		}
	}
	// Producer 5's ABORT has no batch left and goes; the COMMITs after
	// each producer's last batch stay.
	if markers != 2 {
		t.Fatalf("%d markers after cleaning, want 2", markers)
	}
	if aborted := tp.p.AbortedTxns(0, l.LogEndOffset()); len(aborted) != 0 {
		t.Fatalf("aborted transactions still indexed with no records left: %+v", aborted)
	}
	closeAll()

	tp, _, _ = leadCompactedAt(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tp.p.WaitCommitted(ctx, tp.p.lg().LogEndOffset(), tp.p.LeaderEpoch()); err != nil {
		t.Fatal(err)
	}
	tp.wantLSO(tp.p.HighWatermark())
	for _, pid := range []int64{5, 6} {
		if first, _, ok := tp.p.OngoingTxn(pid); ok {
			t.Fatalf("after replaying the cleaned log, producer %d has a transaction open at %d", pid, first)
		}
	}
	// The producers' epochs survive: an older one is fenced.
	if _, err := tp.p.AppendMarker(5, -1, true, 0, time.Now().UnixMilli()); err == nil {
		t.Fatal("marker with an epoch older than producer 5's accepted after the reload")
	}
}
