package replica

import (
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
	cfg := storage.DefaultConfig()
	cfg.SegmentBytes = 600
	cfg.CleanupPolicy = storage.CleanupPolicyCompact
	cfg.MinCleanableDirtyRatio = 0
	cfg.DeleteRetentionMs = 0
	logs, err := storage.OpenManager(storage.ManagerConfig{
		FS: vfs.Default, Dir: t.TempDir(), RetentionCheckInterval: time.Hour,
		DefaultConfig: cfg, CleanerDisable: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	m := NewManager(Config{Logs: logs, FS: vfs.Default, Self: 1, ISR: ISRConfig{ReplicaLagTimeMaxMs: 30000, MinInsyncReplicas: 1}})
	t.Cleanup(func() {
		m.Close()
		logs.Close()
	})
	info := PartitionInfo{Replicas: []int32{1}, Leader: 1, LeaderEpoch: 1, ISR: []int32{1}, PartitionEpoch: 1}
	p, err := m.Ensure(txnTP, [16]byte{1}, cfg, info)
	if err != nil {
		t.Fatal(err)
	}
	return txnPartition{t: t, p: p}, logs
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
	l := tp.p.Log
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
