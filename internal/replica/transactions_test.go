package replica

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"samsa/internal/record"
	"samsa/internal/storage"
	"samsa/internal/txn"
	"samsa/internal/vfs"
)

func openManagerAt(t *testing.T, dir string) (*Manager, func()) {
	t.Helper()
	logs, err := storage.OpenManager(storage.ManagerConfig{
		FS: vfs.Default, Dir: dir, RetentionCheckInterval: time.Hour,
		DefaultConfig: storage.DefaultConfig(),
	})
	if err != nil {
		t.Fatal(err)
	}
	m := NewManager(Config{Logs: logs, FS: vfs.Default, Self: 1, ISR: ISRConfig{ReplicaLagTimeMaxMs: 30000, MinInsyncReplicas: 1}})
	closed := false
	closeAll := func() {
		if !closed {
			closed = true
			m.Close()
			logs.Close()
		}
	}
	t.Cleanup(closeAll)
	return m, closeAll
}

// producerBatch builds a batch of n records from producer pid (-1: none).
func producerBatch(t *testing.T, pid int64, epoch int16, seq int32, n int, transactional bool) record.Batch {
	t.Helper()
	bb := record.NewBuilder(record.CodecNone, time.Now().UnixMilli())
	bb.ProducerID, bb.ProducerEpoch, bb.BaseSequence, bb.Transactional = pid, epoch, seq, transactional
	for range n {
		bb.Add(record.Record{Value: []byte("v")})
	}
	b, err := bb.Build()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// txnPartition is a partition led here with an ISR of one, and helpers that
// append and wait until committed.
type txnPartition struct {
	t *testing.T
	p *Partition
}

var txnTP = storage.TopicPartition{Topic: "t", Partition: 0}

func leadTxn(t *testing.T, m *Manager) txnPartition {
	t.Helper()
	info := PartitionInfo{Replicas: []int32{1}, Leader: 1, LeaderEpoch: 1, ISR: []int32{1}, PartitionEpoch: 1}
	p, err := m.Ensure(txnTP, [16]byte{1}, storage.DefaultConfig(), info)
	if err != nil {
		t.Fatal(err)
	}
	return txnPartition{t: t, p: p}
}

func (tp txnPartition) commit(res AppendResult, err error) AppendResult {
	tp.t.Helper()
	if err != nil {
		tp.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tp.p.WaitCommitted(ctx, res.LastOffset+1, res.LeaderEpoch); err != nil {
		tp.t.Fatal(err)
	}
	return res
}

func (tp txnPartition) append(pid int64, epoch int16, seq int32, n int, transactional bool) AppendResult {
	tp.t.Helper()
	return tp.commit(tp.p.Append(producerBatch(tp.t, pid, epoch, seq, n, transactional), false, time.Now().UnixMilli()))
}

func (tp txnPartition) marker(pid int64, epoch int16, commit bool) AppendResult {
	tp.t.Helper()
	return tp.commit(tp.p.AppendMarker(pid, epoch, commit, 0, time.Now().UnixMilli()))
}

func (tp txnPartition) wantLSO(want int64) {
	tp.t.Helper()
	if got := tp.p.LastStableOffset(); got != want {
		tp.t.Fatalf("last stable offset %d, want %d (high watermark %d)", got, want, tp.p.HighWatermark())
	}
}

func (tp txnPartition) wantAborted(start, end int64, want ...storage.AbortedTxn) {
	tp.t.Helper()
	if got := tp.p.AbortedTxns(start, end); !reflect.DeepEqual(got, want) && (len(got) != 0 || len(want) != 0) {
		tp.t.Fatalf("AbortedTxns(%d, %d) = %+v, want %+v", start, end, got, want)
	}
}

// TestTransactionsHoldLastStableOffsetUntilMarker: Reference: KIP-98. The
// last stable offset stops at the first record of the oldest open
// transaction; markers end transactions, and aborted ones are reported for
// read_committed fetches, also after a restart (with and without a
// producer snapshot).
func TestTransactionsHoldLastStableOffsetUntilMarker(t *testing.T) {
	t.Parallel()
	for _, snapshot := range []bool{false, true} {
		t.Run(map[bool]string{false: "replay", true: "snapshot"}[snapshot], func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			m, closeAll := openManagerAt(t, dir)
			tp := leadTxn(t, m)
			p := tp.p

			tp.append(7, 0, 0, 2, true) // 0..1, opens pid 7's transaction
			tp.append(-1, -1, -1, 1, false)
			tp.wantLSO(0)
			if first, epoch, ok := p.OngoingTxn(7); !ok || first != 0 || epoch != 0 {
				t.Fatalf("OngoingTxn(7) = %d, %d, %v; want 0, 0, true", first, epoch, ok)
			}
			tp.append(8, 0, 0, 1, true) // 3
			tp.append(7, 0, 2, 1, true) // 4

			abort := tp.marker(7, 0, false) // 5
			if abort.BaseOffset != 5 {
				t.Fatalf("abort marker at %d, want 5", abort.BaseOffset)
			}
			tp.wantLSO(3)
			aborted7 := storage.AbortedTxn{ProducerID: 7, FirstOffset: 0, LastOffset: 5, LastStableOffset: 3}
			tp.wantAborted(0, 6, aborted7)
			tp.wantAborted(5, 6, aborted7)
			tp.wantAborted(6, 7)
			if _, _, ok := p.OngoingTxn(7); ok {
				t.Fatal("pid 7 still has a transaction open after its marker")
			}

			if snapshot {
				if err := m.MaintainProducers(time.Now().UnixMilli(), 0); err != nil {
					t.Fatal(err)
				}
			}
			tp.marker(8, 0, true) // 6
			tp.wantLSO(7)
			tp.append(9, 0, 0, 1, true) // 7
			tp.marker(9, 0, false)      // 8
			aborted9 := storage.AbortedTxn{ProducerID: 9, FirstOffset: 7, LastOffset: 8, LastStableOffset: 9}
			tp.append(10, 0, 0, 1, true) // 9, left open
			tp.wantLSO(9)
			tp.wantAborted(0, 10, aborted7, aborted9)

			closeAll()
			m2, _ := openManagerAt(t, dir)
			tp = leadTxn(t, m2)
			tp.wantAborted(0, 10, aborted7, aborted9)
			tp.wantAborted(6, 10, aborted9)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := tp.p.WaitCommitted(ctx, tp.p.lg().LogEndOffset(), tp.p.LeaderEpoch()); err != nil {
				t.Fatal(err)
			}
			tp.wantLSO(9)
			if first, _, ok := tp.p.OngoingTxn(10); !ok || first != 9 {
				t.Fatalf("after restart OngoingTxn(10) = %d, %v; want 9, true", first, ok)
			}
			tp.marker(10, 0, true)
			tp.wantLSO(11)
		})
	}
}

// TestMarkerFencing: a marker with an older producer epoch is refused and
// writes nothing; a marker for a producer with no open transaction is
// written (Kafka does); KIP-890 markers with a bumped epoch fence the old
// one.
func TestMarkerFencing(t *testing.T) {
	t.Parallel()
	m, _ := openManagerAt(t, t.TempDir())
	tp := leadTxn(t, m)
	p := tp.p
	tp.marker(3, 0, true) // 0: no transaction, still written
	tp.append(3, 0, 0, 1, true)
	tp.marker(3, 1, false) // 2: ends it with the bumped epoch
	tp.wantAborted(0, 3, storage.AbortedTxn{ProducerID: 3, FirstOffset: 1, LastOffset: 2, LastStableOffset: 3})
	leo := p.lg().LogEndOffset()
	if _, err := p.AppendMarker(3, 0, true, 0, time.Now().UnixMilli()); !errors.Is(err, txn.ErrInvalidProducerEpoch) {
		t.Fatalf("marker with an old epoch: %v, want ErrInvalidProducerEpoch", err)
	}
	if _, err := p.Append(producerBatch(t, 3, 0, 1, 1, true), false, time.Now().UnixMilli()); !errors.Is(err, txn.ErrInvalidProducerEpoch) {
		t.Fatalf("batch with the old epoch after a bumped marker: %v, want ErrInvalidProducerEpoch", err)
	}
	if got := p.lg().LogEndOffset(); got != leo {
		t.Fatalf("log end moved from %d to %d on refused appends", leo, got)
	}
	tp.append(3, 1, 0, 1, true)
	if _, err := p.AppendMarker(3, 1, false, 5, time.Now().UnixMilli()); err != nil {
		t.Fatal(err)
	}
	if _, err := p.AppendMarker(3, 1, false, 4, time.Now().UnixMilli()); !errors.Is(err, txn.ErrCoordinatorFenced) {
		t.Fatalf("marker from an older coordinator epoch: %v, want ErrCoordinatorFenced", err)
	}
}

// TestClientCannotAppendControlBatch: only AppendMarker writes markers.
func TestClientCannotAppendControlBatch(t *testing.T) {
	t.Parallel()
	m, _ := openManagerAt(t, t.TempDir())
	tp := leadTxn(t, m)
	mk, err := record.BuildEndTxnMarker(5, 0, time.Now().UnixMilli(), record.EndTxnMarker{Type: record.ControlCommit})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tp.p.Append(mk, false, time.Now().UnixMilli()); !errors.Is(err, record.ErrInvalidRecord) {
		t.Fatalf("client control batch: %v, want ErrInvalidRecord", err)
	}
	if _, err := tp.p.AppendFromCoordinator(mk, VerificationGuard{}, time.Now().UnixMilli()); !errors.Is(err, record.ErrInvalidRecord) {
		t.Fatalf("coordinator control batch: %v, want ErrInvalidRecord", err)
	}
	if leo := tp.p.lg().LogEndOffset(); leo != 0 {
		t.Fatalf("log end %d after refused control batches, want 0", leo)
	}
}

// TestAppendFromCoordinatorOpensTransaction: a coordinator's transactional
// batch (no sequence) opens the producer's transaction; an older epoch is
// refused; a plain client batch of that producer is refused while it is
// open.
func TestAppendFromCoordinatorOpensTransaction(t *testing.T) {
	t.Parallel()
	m, _ := openManagerAt(t, t.TempDir())
	tp := leadTxn(t, m)
	p := tp.p
	tp.commit(p.AppendFromCoordinator(producerBatch(t, 20, 2, -1, 1, true), VerificationGuard{}, time.Now().UnixMilli()))
	if first, epoch, ok := p.OngoingTxn(20); !ok || first != 0 || epoch != 2 {
		t.Fatalf("OngoingTxn(20) = %d, %d, %v; want 0, 2, true", first, epoch, ok)
	}
	tp.wantLSO(0)
	tp.commit(p.AppendFromCoordinator(producerBatch(t, 20, 2, -1, 2, true), VerificationGuard{}, time.Now().UnixMilli()))
	if _, err := p.AppendFromCoordinator(producerBatch(t, 20, 1, -1, 1, true), VerificationGuard{}, time.Now().UnixMilli()); !errors.Is(err, txn.ErrInvalidProducerEpoch) {
		t.Fatalf("older epoch: %v, want ErrInvalidProducerEpoch", err)
	}
	if _, err := p.Append(producerBatch(t, 20, 2, 0, 1, false), false, time.Now().UnixMilli()); !errors.Is(err, txn.ErrInvalidTxnState) {
		t.Fatalf("plain batch during the transaction: %v, want ErrInvalidTxnState", err)
	}
	tp.marker(20, 2, true)
	tp.wantLSO(4)
	tp.wantAborted(0, 4)
}

// TestAppendFromCoordinatorGuard: offsets a group coordinator verified
// for a producer's transaction are refused when a marker of that producer
// was applied between the verification and the append (the transaction
// was aborted meanwhile, at the same epoch as transaction version 1
// aborts): appended, they would open a transaction that the producer's
// next COMMIT would end, committing the aborted transaction's offsets. A
// guard taken after the marker lets them in.
func TestAppendFromCoordinatorGuard(t *testing.T) {
	t.Parallel()
	m, _ := openManagerAt(t, t.TempDir())
	tp := leadTxn(t, m)
	p := tp.p
	tp.commit(p.AppendFromCoordinator(producerBatch(t, 30, 1, -1, 1, true), VerificationGuard{}, time.Now().UnixMilli()))
	g, ongoing := p.BeginVerification(30, 1)
	if !ongoing {
		t.Fatal("BeginVerification: no transaction ongoing after the coordinator's batch")
	}
	tp.marker(30, 1, false)
	leo := p.lg().LogEndOffset()
	if _, err := p.AppendFromCoordinator(producerBatch(t, 30, 1, -1, 1, true), g, time.Now().UnixMilli()); !errors.Is(err, ErrVerificationGuard) || !errors.Is(err, txn.ErrInvalidTxnState) {
		t.Fatalf("append after the marker with the guard from before: %v, want ErrVerificationGuard", err)
	}
	if got := p.lg().LogEndOffset(); got != leo {
		t.Fatalf("log end moved from %d to %d on a refused append", leo, got)
	}
	if _, _, open := p.OngoingTxn(30); open {
		t.Fatal("a refused append opened a transaction")
	}
	g, _ = p.BeginVerification(30, 1)
	tp.commit(p.AppendFromCoordinator(producerBatch(t, 30, 1, -1, 1, true), g, time.Now().UnixMilli()))
	if first, _, open := p.OngoingTxn(30); !open || first != leo {
		t.Fatalf("OngoingTxn(30) = %d, %v; want %d, true", first, open, leo)
	}
}

// TestUndecodableMarkerDoesNotStopLoad: a control batch whose marker does
// not decode is skipped when the log is replayed (the partition still
// loads); the transaction it was meant to end stays open.
func TestUndecodableMarkerDoesNotStopLoad(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	m, closeAll := openManagerAt(t, dir)
	tp := leadTxn(t, m)
	tp.append(5, 0, 0, 1, true)
	bb := record.NewBuilder(record.CodecNone, time.Now().UnixMilli())
	bb.ProducerID, bb.ProducerEpoch, bb.BaseSequence, bb.Transactional, bb.Control = 5, 0, -1, true, true
	bb.Add(record.Record{Key: []byte{0}, Value: []byte{0}}) // key too short
	bad, err := bb.Build()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tp.p.lg().Append(bad, tp.p.LeaderEpoch(), false, time.Now().UnixMilli()); err != nil {
		t.Fatal(err)
	}
	closeAll()
	m2, _ := openManagerAt(t, dir)
	tp = leadTxn(t, m2)
	if first, _, ok := tp.p.OngoingTxn(5); !ok || first != 0 {
		t.Fatalf("OngoingTxn(5) = %d, %v after load; want 0, true", first, ok)
	}
	tp.marker(5, 0, true)
	tp.wantLSO(3)
}

// TestAbortedTxnsExactlyOnceAfterPowerCut: whatever part of the .txnindex
// a power cut kept (MemFS.CrashClone keeps only synced data), the aborted
// transactions of the committed markers come back exactly once: those
// below the producer snapshot from the synced file, the others from the
// replay of their markers.
func TestAbortedTxnsExactlyOnceAfterPowerCut(t *testing.T) {
	t.Parallel()
	for _, syncIndex := range []bool{false, true} {
		t.Run(map[bool]string{false: "index-unsynced", true: "index-synced"}[syncIndex], func(t *testing.T) {
			t.Parallel()
			mem := vfs.NewMemFS()
			open := func(fs vfs.FS) (*Manager, func()) {
				logs, err := storage.OpenManager(storage.ManagerConfig{
					FS: fs, Dir: "/data", RetentionCheckInterval: time.Hour, DefaultConfig: storage.DefaultConfig(),
				})
				if err != nil {
					t.Fatal(err)
				}
				m := NewManager(Config{Logs: logs, FS: fs, Self: 1, ISR: ISRConfig{ReplicaLagTimeMaxMs: 30000, MinInsyncReplicas: 1}})
				return m, func() { m.Close(); logs.Close() }
			}
			m, closeAll := open(mem)
			tp := leadTxn(t, m)
			tp.append(1, 0, 0, 2, true) // 0..1
			tp.marker(1, 0, false)      // 2
			if err := m.MaintainProducers(time.Now().UnixMilli(), 0); err != nil {
				t.Fatal(err)
			}
			tp.append(2, 0, 0, 1, true) // 3
			tp.append(3, 0, 0, 1, true) // 4
			tp.marker(2, 0, false)      // 5
			tp.marker(3, 0, true)       // 6
			if syncIndex {
				if err := tp.p.lg().SyncAbortedTxns(); err != nil {
					t.Fatal(err)
				}
			}
			clone := mem.CrashClone()
			closeAll()

			m2, closeAll2 := open(clone)
			defer closeAll2()
			tp = leadTxn(t, m2)
			tp.wantAborted(0, 7,
				storage.AbortedTxn{ProducerID: 1, FirstOffset: 0, LastOffset: 2, LastStableOffset: 3},
				storage.AbortedTxn{ProducerID: 2, FirstOffset: 3, LastOffset: 5, LastStableOffset: 4})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := tp.p.WaitCommitted(ctx, 7, tp.p.LeaderEpoch()); err != nil {
				t.Fatal(err)
			}
			tp.wantLSO(7)
		})
	}
}

// TestVerificationGuardRefusesBatchAfterMarker: Reference: KIP-890 part 1
// (Kafka's VerificationGuard). A transactional batch checked before a
// marker of its producer and appended after it is refused, whether the
// check found its transaction open or asked the coordinator; a transaction
// open at another epoch is never joined; with no marker in between the
// guarded append goes through.
func TestVerificationGuardRefusesBatchAfterMarker(t *testing.T) {
	t.Parallel()
	m, _ := openManagerAt(t, t.TempDir())
	tp := leadTxn(t, m)
	p := tp.p
	now := time.Now().UnixMilli()

	g, ongoing := p.BeginVerification(7, 0)
	if ongoing {
		t.Fatal("producer 7 has a transaction open before any batch")
	}
	tp.commit(p.AppendVerified(producerBatch(t, 7, 0, 0, 1, true), g, false, now)) // 0: opens the transaction

	// Checked while open, then the abort lands: refused, nothing written.
	g, ongoing = p.BeginVerification(7, 0)
	if !ongoing {
		t.Fatal("producer 7's transaction is not open after its first batch")
	}
	tp.marker(7, 0, false) // 1
	leo := p.lg().LogEndOffset()
	if _, err := p.AppendVerified(producerBatch(t, 7, 0, 1, 1, true), g, false, now); !errors.Is(err, ErrVerificationGuard) || !errors.Is(err, txn.ErrInvalidTxnState) {
		t.Fatalf("batch checked before the marker: %v, want ErrVerificationGuard", err)
	}
	if got := p.lg().LogEndOffset(); got != leo {
		t.Fatalf("log end moved from %d to %d", leo, got)
	}
	if _, _, open := p.OngoingTxn(7); open {
		t.Fatal("the refused batch opened a transaction")
	}

	// Epoch 1 opens a transaction; a batch of epoch 2 (the next
	// transaction, under version 2) does not join it.
	tp.append(7, 1, 0, 1, true) // 2
	if _, ongoing := p.BeginVerification(7, 2); ongoing {
		t.Fatal("a transaction open at epoch 1 counted as open for epoch 2")
	}
	g, _ = p.BeginVerification(7, 2)
	if _, err := p.AppendVerified(producerBatch(t, 7, 2, 0, 1, true), g, false, now); !errors.Is(err, ErrVerificationGuard) {
		t.Fatalf("epoch 2 batch while epoch 1's transaction is open: %v, want ErrVerificationGuard", err)
	}
	tp.marker(7, 2, true) // 3: ends epoch 1's transaction with the bumped epoch
	g, ongoing = p.BeginVerification(7, 2)
	if ongoing {
		t.Fatal("transaction open after its marker")
	}
	tp.commit(p.AppendVerified(producerBatch(t, 7, 2, 0, 1, true), g, false, now)) // 4
	if first, _, open := p.OngoingTxn(7); !open || first != 4 {
		t.Fatalf("epoch 2 transaction: open %v at %d, want open at 4", open, first)
	}
	// Another producer's marker does not disturb producer 7's guard.
	g, _ = p.BeginVerification(7, 2)
	tp.marker(8, 0, true) // 5
	tp.commit(p.AppendVerified(producerBatch(t, 7, 2, 1, 1, true), g, false, now))
}
