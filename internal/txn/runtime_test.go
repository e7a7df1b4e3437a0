package txn

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// memLog is an in-memory __transaction_state partition.
type memLog struct {
	mu      sync.Mutex
	recs    [][2][]byte
	failErr error // guarded by mu: the next Append fails with it
}

func (l *memLog) Append(_ context.Context, key, value []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failErr != nil {
		err := l.failErr
		l.failErr = nil
		return err
	}
	l.recs = append(l.recs, [2][]byte{key, value})
	return nil
}

func (l *memLog) Replay(ctx context.Context, fn func(key, value []byte) error) error {
	l.mu.Lock()
	recs := append([][2][]byte(nil), l.recs...)
	l.mu.Unlock()
	for _, r := range recs {
		if err := fn(r[0], r[1]); err != nil {
			return err
		}
	}
	return nil
}

// last returns the newest metadata stored for id, and whether the newest
// record is a tombstone.
func (l *memLog) last(t *testing.T, id string) (TxnMetadata, bool) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := len(l.recs) - 1; i >= 0; i-- {
		rid, m, ok, err := DecodeRecord(l.recs[i][0], l.recs[i][1])
		if err != nil {
			t.Fatal(err)
		}
		if rid == id {
			return m, !ok
		}
	}
	t.Fatalf("no record for %s", id)
	return TxnMetadata{}, false
}

// fakeMarkers records the markers written; failures[tp] makes that many
// writes of tp fail first.
type fakeMarkers struct {
	mu       sync.Mutex
	written  []MarkerRequest // one per partition written
	failures map[TopicPartition]int
	always   bool // every write fails
}

func (f *fakeMarkers) WriteMarkers(_ context.Context, req MarkerRequest) map[TopicPartition]error {
	f.mu.Lock()
	defer f.mu.Unlock()
	errs := map[TopicPartition]error{}
	for _, p := range req.Partitions {
		if f.always || f.failures[p] > 0 {
			f.failures[p]--
			errs[p] = errors.New("not leader")
			continue
		}
		one := req
		one.Partitions = []TopicPartition{p}
		f.written = append(f.written, one)
	}
	return errs
}

func (f *fakeMarkers) get() []MarkerRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]MarkerRequest(nil), f.written...)
}

type rtEnv struct {
	c       *Coordinator
	log     *memLog
	markers *fakeMarkers
	now     atomic.Int64 // unix ms
	nextPID atomic.Int64
}

func newRTEnv(t *testing.T) *rtEnv {
	t.Helper()
	e := &rtEnv{log: &memLog{}, markers: &fakeMarkers{failures: map[TopicPartition]int{}}}
	e.now.Store(1_000_000)
	e.nextPID.Store(100)
	e.c = NewCoordinator(Config{
		NumPartitions:         1,
		AbortTimedOutInterval: time.Hour, // the tests call abortTimedOut themselves
		MarkerRetryBackoff:    time.Millisecond,
		NewProducerID:         func(context.Context) (int64, error) { return e.nextPID.Add(1) - 1, nil },
		Markers:               e.markers,
		Now:                   func() time.Time { return time.UnixMilli(e.now.Load()) },
	})
	t.Cleanup(func() { e.c.Close() })
	return e
}

func (e *rtEnv) load(t *testing.T, epoch int32) {
	t.Helper()
	if err := e.c.Load(context.Background(), 0, epoch, e.log); err != nil {
		t.Fatal(err)
	}
}

// waitFor polls cond until it holds or a deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func (e *rtEnv) waitState(t *testing.T, id string, s TxnState) TxnMetadata {
	t.Helper()
	var m TxnMetadata
	waitFor(t, fmt.Sprintf("%s in %s", id, s), func() bool {
		var err error
		m, err = e.c.Describe(id)
		return err == nil && m.State == s
	})
	return m
}

var tpA0, tpA1 = TopicPartition{"a", 0}, TopicPartition{"a", 1}

func TestRuntimeCommitWritesMarkersThenCompletes(t *testing.T) {
	t.Parallel()
	e := newRTEnv(t)
	e.load(t, 7)
	ctx := context.Background()
	pid, epoch, err := e.c.InitProducerID(ctx, "t1", InitRequest{TimeoutMs: 60000, ExpectedProducerID: -1, ExpectedEpoch: -1})
	if err != nil || pid != 100 || epoch != 0 {
		t.Fatalf("init: %d/%d %v", pid, epoch, err)
	}
	if err := e.c.AddPartitions(ctx, "t1", pid, epoch, []TopicPartition{tpA1, tpA0}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.c.EndTxn(ctx, "t1", EndRequest{ProducerID: pid, Epoch: epoch, Commit: true}); err != nil {
		t.Fatal(err)
	}
	e.waitState(t, "t1", TxnCompleteCommit)
	got := e.markers.get()
	if len(got) != 2 {
		t.Fatalf("markers %+v, want one per partition", got)
	}
	for _, m := range got {
		if !m.Commit || m.ProducerID != pid || m.ProducerEpoch != epoch || m.CoordinatorEpoch != 7 {
			t.Fatalf("marker %+v", m)
		}
	}
	if m, _ := e.log.last(t, "t1"); m.State != TxnCompleteCommit || len(m.Partitions) != 0 {
		t.Fatalf("stored %+v", m)
	}
	// A retried commit is answered with success and writes nothing.
	if _, _, err := e.c.EndTxn(ctx, "t1", EndRequest{ProducerID: pid, Epoch: epoch, Commit: true}); err != nil {
		t.Fatal(err)
	}
	if n := len(e.markers.get()); n != 2 {
		t.Fatalf("retry wrote markers: %d", n)
	}
}

// Reference: Kafka TransactionCoordinator.handleInitProducerId: a second
// producer fences an ongoing transaction, which is aborted with the bumped
// epoch; the new producer retries and gets the epoch after that.
func TestRuntimeInitFencesAndAbortsOngoing(t *testing.T) {
	t.Parallel()
	e := newRTEnv(t)
	e.load(t, 1)
	ctx := context.Background()
	req := InitRequest{TimeoutMs: 60000, ExpectedProducerID: -1, ExpectedEpoch: -1}
	pid, epoch, _ := e.c.InitProducerID(ctx, "t1", req)
	if err := e.c.AddPartitions(ctx, "t1", pid, epoch, []TopicPartition{tpA0}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.c.InitProducerID(ctx, "t1", req); !errors.Is(err, ErrConcurrentTransactions) {
		t.Fatalf("second init: %v", err)
	}
	e.waitState(t, "t1", TxnCompleteAbort)
	got := e.markers.get()
	if len(got) != 1 || got[0].Commit || got[0].ProducerEpoch != epoch+1 {
		t.Fatalf("markers %+v, want one abort at epoch %d", got, epoch+1)
	}
	pid2, epoch2, err := e.c.InitProducerID(ctx, "t1", req)
	if err != nil || pid2 != pid || epoch2 != epoch+2 {
		t.Fatalf("retry: %d/%d %v", pid2, epoch2, err)
	}
	// The fenced producer's end is refused.
	if _, _, err := e.c.EndTxn(ctx, "t1", EndRequest{ProducerID: pid, Epoch: epoch, Commit: true}); !errors.Is(err, ErrProducerFenced) {
		t.Fatalf("fenced end: %v", err)
	}
}

func TestRuntimeMarkersRetriedUntilWritten(t *testing.T) {
	t.Parallel()
	e := newRTEnv(t)
	e.markers.failures[tpA1] = 3
	e.load(t, 1)
	ctx := context.Background()
	pid, epoch, _ := e.c.InitProducerID(ctx, "t1", InitRequest{TimeoutMs: 60000, ExpectedProducerID: -1, ExpectedEpoch: -1})
	_ = e.c.AddPartitions(ctx, "t1", pid, epoch, []TopicPartition{tpA0, tpA1})
	if _, _, err := e.c.EndTxn(ctx, "t1", EndRequest{ProducerID: pid, Epoch: epoch}); err != nil {
		t.Fatal(err)
	}
	e.waitState(t, "t1", TxnCompleteAbort)
	if got := e.markers.get(); len(got) != 2 {
		t.Fatalf("markers %+v, want a0 once and a1 once", got)
	}
}

func TestRuntimeLoadCompletesPreparedTransactions(t *testing.T) {
	t.Parallel()
	e := newRTEnv(t)
	prep := TxnMetadata{TransactionalID: "t1", ProducerID: 5, LastProducerID: NoProducerID, ProducerEpoch: 2,
		LastProducerEpoch: NoProducerEpoch, NextProducerID: NoProducerID, TimeoutMs: 60000, State: TxnPrepareCommit,
		Partitions: []TopicPartition{tpA0}, TxnStartMs: 10, LastUpdateMs: 20}
	fence := prep.clone()
	fence.TransactionalID, fence.State, fence.ProducerID = "t2", TxnPrepareEpochFence, 6
	gone := prep.clone()
	gone.TransactionalID = "t3"
	_ = e.log.Append(context.Background(), EncodeKey("t1"), EncodeValue(prep))
	_ = e.log.Append(context.Background(), EncodeKey("t2"), EncodeValue(fence))
	_ = e.log.Append(context.Background(), EncodeKey("t3"), EncodeValue(gone))
	_ = e.log.Append(context.Background(), EncodeKey("t3"), nil)
	e.load(t, 3)
	e.waitState(t, "t1", TxnCompleteCommit)
	e.waitState(t, "t2", TxnCompleteAbort)
	if _, err := e.c.Describe("t3"); !errors.Is(err, ErrTransactionalIDNotFound) {
		t.Fatalf("deleted id: %v", err)
	}
	got := map[int64]MarkerRequest{}
	for _, m := range e.markers.get() {
		got[m.ProducerID] = m
	}
	if m := got[5]; !m.Commit || m.ProducerEpoch != 2 || m.CoordinatorEpoch != 3 {
		t.Fatalf("t1 marker %+v", m)
	}
	if m := got[6]; m.Commit || m.ProducerEpoch != 2 {
		t.Fatalf("t2 marker %+v", m)
	}
	if len(got) != 2 {
		t.Fatalf("markers %+v", got)
	}
}

func TestRuntimeLoadFailsOnCorruptRecord(t *testing.T) {
	t.Parallel()
	e := newRTEnv(t)
	_ = e.log.Append(context.Background(), EncodeKey("t1"), []byte{0, 9, 1})
	if err := e.c.Load(context.Background(), 0, 1, e.log); !errors.Is(err, ErrCorruptRecord) {
		t.Fatalf("load: %v", err)
	}
	if err := e.c.Owns("t1"); !errors.Is(err, ErrNotCoordinator) {
		t.Fatalf("after failed load: %v", err)
	}
}

func TestRuntimeNotCoordinatorUntilLoaded(t *testing.T) {
	t.Parallel()
	e := newRTEnv(t)
	ctx := context.Background()
	if _, _, err := e.c.InitProducerID(ctx, "t1", InitRequest{TimeoutMs: 1000, ExpectedProducerID: -1, ExpectedEpoch: -1}); !errors.Is(err, ErrNotCoordinator) {
		t.Fatalf("before load: %v", err)
	}
	e.load(t, 1)
	e.c.Unload(0)
	if err := e.c.AddPartitions(ctx, "t1", 1, 0, []TopicPartition{tpA0}); !errors.Is(err, ErrNotCoordinator) {
		t.Fatalf("after unload: %v", err)
	}
}

func TestRuntimeStoreFailureKeepsState(t *testing.T) {
	t.Parallel()
	e := newRTEnv(t)
	e.load(t, 1)
	ctx := context.Background()
	pid, epoch, _ := e.c.InitProducerID(ctx, "t1", InitRequest{TimeoutMs: 60000, ExpectedProducerID: -1, ExpectedEpoch: -1})
	e.log.mu.Lock()
	e.log.failErr = errors.New("not enough replicas")
	e.log.mu.Unlock()
	if err := e.c.AddPartitions(ctx, "t1", pid, epoch, []TopicPartition{tpA0}); !errors.Is(err, ErrCoordinatorNotAvailable) {
		t.Fatalf("add: %v", err)
	}
	if m, _ := e.c.Describe("t1"); m.State != TxnEmpty {
		t.Fatalf("state after failed store: %s", m.State)
	}
	e.log.mu.Lock()
	e.log.failErr = fmt.Errorf("moved: %w", ErrNotCoordinator)
	e.log.mu.Unlock()
	if err := e.c.AddPartitions(ctx, "t1", pid, epoch, []TopicPartition{tpA0}); !errors.Is(err, ErrNotCoordinator) {
		t.Fatalf("add: %v", err)
	}
}

// Reference: Kafka TransactionCoordinator.abortTimedOutTransactions.
func TestRuntimeTimedOutTransactionIsAborted(t *testing.T) {
	t.Parallel()
	e := newRTEnv(t)
	e.load(t, 1)
	ctx := context.Background()
	pid, epoch, _ := e.c.InitProducerID(ctx, "t1", InitRequest{TimeoutMs: 1000, ExpectedProducerID: -1, ExpectedEpoch: -1})
	_ = e.c.AddPartitions(ctx, "t1", pid, epoch, []TopicPartition{tpA0})
	e.now.Add(1000)
	e.c.abortTimedOut()
	if m, _ := e.c.Describe("t1"); m.State != TxnOngoing {
		t.Fatalf("aborted at the timeout: %s", m.State)
	}
	e.now.Add(1)
	e.c.abortTimedOut()
	m := e.waitState(t, "t1", TxnCompleteAbort)
	if m.ProducerEpoch != epoch+1 {
		t.Fatalf("epoch %d, want %d (fenced)", m.ProducerEpoch, epoch+1)
	}
	if got := e.markers.get(); len(got) != 1 || got[0].Commit || got[0].ProducerEpoch != epoch+1 {
		t.Fatalf("markers %+v", got)
	}
	if err := e.c.AddPartitions(ctx, "t1", pid, epoch, []TopicPartition{tpA0}); !errors.Is(err, ErrProducerFenced) {
		t.Fatalf("fenced producer adds: %v", err)
	}
}

func TestRuntimeExpiredIDIsRemovedWithTombstone(t *testing.T) {
	t.Parallel()
	e := newRTEnv(t)
	e.load(t, 1)
	ctx := context.Background()
	_, _, _ = e.c.InitProducerID(ctx, "t1", InitRequest{TimeoutMs: 1000, ExpectedProducerID: -1, ExpectedEpoch: -1})
	e.now.Add(604800000 - 1)
	e.c.expireIDs()
	if _, err := e.c.Describe("t1"); err != nil {
		t.Fatalf("expired early: %v", err)
	}
	e.now.Add(1)
	e.c.expireIDs()
	if _, err := e.c.Describe("t1"); !errors.Is(err, ErrTransactionalIDNotFound) {
		t.Fatalf("after expiry: %v", err)
	}
	if _, tomb := e.log.last(t, "t1"); !tomb {
		t.Fatal("no tombstone")
	}
	// A new producer gets a new id.
	pid, epoch, err := e.c.InitProducerID(ctx, "t1", InitRequest{TimeoutMs: 1000, ExpectedProducerID: -1, ExpectedEpoch: -1})
	if err != nil || pid != 101 || epoch != 0 {
		t.Fatalf("init after expiry: %d/%d %v", pid, epoch, err)
	}
}

func TestRuntimeUnloadStopsMarkerRetries(t *testing.T) {
	t.Parallel()
	e := newRTEnv(t)
	e.markers.always = true
	e.load(t, 1)
	ctx := context.Background()
	pid, epoch, _ := e.c.InitProducerID(ctx, "t1", InitRequest{TimeoutMs: 60000, ExpectedProducerID: -1, ExpectedEpoch: -1})
	_ = e.c.AddPartitions(ctx, "t1", pid, epoch, []TopicPartition{tpA0})
	if _, _, err := e.c.EndTxn(ctx, "t1", EndRequest{ProducerID: pid, Epoch: epoch, Commit: true}); err != nil {
		t.Fatal(err)
	}
	// A retry while the markers are pending: CONCURRENT_TRANSACTIONS.
	if _, _, err := e.c.EndTxn(ctx, "t1", EndRequest{ProducerID: pid, Epoch: epoch, Commit: true}); !errors.Is(err, ErrConcurrentTransactions) {
		t.Fatalf("retry during commit: %v", err)
	}
	e.c.Unload(0)
	e.c.Close() // returns only once the marker goroutine stopped
	if m, _ := e.log.last(t, "t1"); m.State != TxnPrepareCommit {
		t.Fatalf("stored %s, want PrepareCommit left for the next coordinator", m.State)
	}
}

func TestRuntimeVerifyPartitions(t *testing.T) {
	t.Parallel()
	e := newRTEnv(t)
	e.load(t, 1)
	ctx := context.Background()
	pid, epoch, _ := e.c.InitProducerID(ctx, "t1", InitRequest{TimeoutMs: 60000, ExpectedProducerID: -1, ExpectedEpoch: -1})
	_ = e.c.AddPartitions(ctx, "t1", pid, epoch, []TopicPartition{tpA0})
	got, err := e.c.VerifyPartitions("t1", pid, epoch, []TopicPartition{tpA0, tpA1})
	if err != nil || !got[tpA0] || got[tpA1] {
		t.Fatalf("verify: %v %v", got, err)
	}
	for _, tc := range []struct {
		id    string
		pid   int64
		epoch int16
		want  error
	}{
		{"nope", pid, epoch, ErrInvalidProducerIDMapping},
		{"t1", pid + 1, epoch, ErrInvalidProducerIDMapping},
		{"t1", pid, epoch + 1, ErrProducerFenced},
	} {
		if _, err := e.c.VerifyPartitions(tc.id, tc.pid, tc.epoch, []TopicPartition{tpA0}); !errors.Is(err, tc.want) {
			t.Errorf("verify %+v: %v", tc, err)
		}
	}
}

func TestRuntimeList(t *testing.T) {
	t.Parallel()
	e := newRTEnv(t)
	e.load(t, 1)
	ctx := context.Background()
	req := InitRequest{TimeoutMs: 60000, ExpectedProducerID: -1, ExpectedEpoch: -1}
	pid1, ep1, _ := e.c.InitProducerID(ctx, "t1", req)
	pid2, _, _ := e.c.InitProducerID(ctx, "t2", req)
	_ = e.c.AddPartitions(ctx, "t1", pid1, ep1, []TopicPartition{tpA0})
	e.now.Add(5000)
	ids := func(f ListFilter) string {
		ms, err := e.c.List(f)
		if err != nil {
			t.Fatal(err)
		}
		s := ""
		for _, m := range ms {
			s += m.TransactionalID + ":" + m.State.String() + " "
		}
		return s
	}
	for _, tc := range []struct {
		f    ListFilter
		want string
	}{
		{ListFilter{MinDurationMs: -1}, "t1:Ongoing t2:Empty "},
		{ListFilter{MinDurationMs: -1, States: []TxnState{TxnOngoing}}, "t1:Ongoing "},
		{ListFilter{MinDurationMs: -1, ProducerIDs: []int64{pid2}}, "t2:Empty "},
		{ListFilter{MinDurationMs: 4999}, "t1:Ongoing t2:Empty "}, // t2 never started: start -1
		{ListFilter{MinDurationMs: 5000, States: []TxnState{TxnOngoing}}, ""},
	} {
		if got := ids(tc.f); got != tc.want {
			t.Errorf("list %+v: %q, want %q", tc.f, got, tc.want)
		}
	}
}

// Reference: Kafka TransactionStateManager.partitionFor uses Utils.abs,
// which maps the smallest int to 0, not the mask Kafka's producer
// partitioner uses.
func TestPartitionMatchesKafka(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		id   string
		want int32
	}{
		{"t1", 45},                 // hashCode 3645
		{"transactional-id-1", 41}, // 1051133891
		{"my-txn", 45},             // -1061187895: abs, not & 0x7fffffff (which gives 3)
		{"polygenelubricants", 0},  // Integer.MIN_VALUE
		{"", 0},
	} {
		if got := Partition(tc.id, 50); got != tc.want {
			t.Errorf("Partition(%q) = %d, want %d", tc.id, got, tc.want)
		}
	}
}
