package group

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

func txnCommit(group string, pid int64, epoch int16, topic string, part int32, offset int64) TxnOffsetCommitRequest {
	return TxnOffsetCommitRequest{Group: group, ProducerID: pid, ProducerEpoch: epoch, Generation: -1, Topics: []OffsetCommitTopic{{
		Topic: topic, Partitions: []OffsetCommitPartition{{Partition: part, Offset: offset, LeaderEpoch: 3, Metadata: strp("txn")}},
	}}}
}

func fetchStable(t *testing.T, c *Coordinator, group, topic string, part int32) FetchedOffset {
	t.Helper()
	res, err := c.OffsetFetch(context.Background(), OffsetFetchRequest{Group: group, RequireStable: true,
		Topics: []OffsetFetchTopic{{Topic: topic, Partitions: []int32{part}}}})
	if err != nil {
		t.Fatalf("fetch: %v", err)
	}
	return res.Topics[0].Partitions[0]
}

func mustTxnCommit(t *testing.T, c *Coordinator, req TxnOffsetCommitRequest) {
	t.Helper()
	res, err := c.TxnOffsetCommit(context.Background(), req)
	if err != nil {
		t.Fatalf("txn commit: %v", err)
	}
	for _, te := range res.Topics {
		for _, pe := range te.Partitions {
			if pe.Err != nil {
				t.Fatalf("txn commit %s/%d: %v", te.Topic, pe.Partition, pe.Err)
			}
		}
	}
}

// endTxn writes pid's marker to the log and tells the coordinator, as the
// broker's marker writer does.
func endTxn(t *testing.T, c *Coordinator, log *memLog, pid int64, commit bool) int {
	t.Helper()
	off := log.marker(pid, commit)
	n, err := c.CompleteTxn(context.Background(), 0, pid, commit, off)
	if err != nil {
		t.Fatalf("complete txn: %v", err)
	}
	return n
}

// TestTxnOffsetsCommitAbortAndReload runs a committed and an aborted
// transaction and one left open, and checks that a coordinator loading
// the same log afterwards has exactly the committed offsets and the open
// transaction still pending.
func TestTxnOffsetsCommitAbortAndReload(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	log := &memLog{}
	c := newLoaded(t, testConfig(), log)

	mustTxnCommit(t, c, txnCommit("g", 1, 0, "t", 0, 10))
	if got := fetchOne(t, c, "g", "t", 0); got.Offset != -1 || got.Err != nil {
		t.Fatalf("before the commit marker: %+v, want no offset", got)
	}
	if got := fetchStable(t, c, "g", "t", 0); !errors.Is(got.Err, ErrUnstableOffsetCommit) {
		t.Fatalf("stable fetch before the commit marker: %+v, want ErrUnstableOffsetCommit", got)
	}
	if n := endTxn(t, c, log, 1, true); n != 1 {
		t.Fatalf("commit marker completed %d groups, want 1", n)
	}
	if got := fetchStable(t, c, "g", "t", 0); got.Offset != 10 || got.LeaderEpoch != 3 || got.Metadata != "txn" || got.Err != nil {
		t.Fatalf("after the commit marker: %+v", got)
	}

	// Aborted: gone.
	mustTxnCommit(t, c, txnCommit("g", 1, 0, "t", 0, 20))
	endTxn(t, c, log, 1, false)
	if got := fetchStable(t, c, "g", "t", 0); got.Offset != 10 {
		t.Fatalf("after the abort marker: %+v, want 10", got)
	}

	// Open at the reload: pending, for another producer and group.
	mustTxnCommit(t, c, txnCommit("h", 2, 0, "t", 1, 30))
	// A marker of a producer with nothing pending changes nothing.
	if n := endTxn(t, c, log, 3, true); n != 0 {
		t.Fatalf("marker of producer 3 completed %d groups", n)
	}
	c.Close()

	c2 := newLoaded(t, testConfig(), log)
	if got := fetchStable(t, c2, "g", "t", 0); got.Offset != 10 || got.LeaderEpoch != 3 || got.Err != nil {
		t.Fatalf("g t/0 after reload: %+v, want 10", got)
	}
	if got := fetchStable(t, c2, "h", "t", 1); !errors.Is(got.Err, ErrUnstableOffsetCommit) {
		t.Fatalf("h t/1 after reload: %+v, want ErrUnstableOffsetCommit", got)
	}
	if _, err := c2.DescribeGroup(ctx, "h"); err != nil {
		t.Fatalf("a group with only pending offsets is lost at reload: %v", err)
	}
	// The open transaction commits after the reload.
	if n := endTxn(t, c2, log, 2, true); n != 1 {
		t.Fatalf("commit after reload completed %d groups, want 1", n)
	}
	if got := fetchStable(t, c2, "h", "t", 1); got.Offset != 30 {
		t.Fatalf("h t/1 after its commit: %+v, want 30", got)
	}
	c2.Close()
	c3 := newLoaded(t, testConfig(), log)
	if got := fetchStable(t, c3, "h", "t", 1); got.Offset != 30 {
		t.Fatalf("h t/1 after second reload: %+v, want 30", got)
	}
}

// TestTxnOffsetLaterPlainCommitWins: a plain commit written after the
// transactional one is later in the log, so the transaction's commit does
// not replace it, at runtime and at reload alike.
// Reference: Kafka OffsetMetadataManager.replayEndTransactionMarker.
func TestTxnOffsetLaterPlainCommitWins(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	log := &memLog{}
	c := newLoaded(t, testConfig(), log)
	mustTxnCommit(t, c, txnCommit("g", 1, 0, "t", 0, 10))
	if _, err := c.OffsetCommit(ctx, commit("g", "", -1, "t", 0, 7)); err != nil {
		t.Fatal(err)
	}
	// The plain commit is visible at once (not stable: a transaction is open).
	if got := fetchOne(t, c, "g", "t", 0); got.Offset != 7 {
		t.Fatalf("plain commit: %+v", got)
	}
	endTxn(t, c, log, 1, true)
	if got := fetchStable(t, c, "g", "t", 0); got.Offset != 7 {
		t.Fatalf("after the commit marker: %+v, want the later plain commit 7", got)
	}
	c.Close()
	c2 := newLoaded(t, testConfig(), log)
	if got := fetchStable(t, c2, "g", "t", 0); got.Offset != 7 {
		t.Fatalf("after reload: %+v, want 7", got)
	}
}

// TestTxnOffsetCommitErrors covers the request-level refusals.
func TestTxnOffsetCommitErrors(t *testing.T) {
	t.Parallel()
	log := &memLog{}
	c := newLoaded(t, testConfig(), log)
	ctx := context.Background()

	// A generation but no group: Kafka's new coordinator answers
	// ILLEGAL_GENERATION (OffsetMetadataManager.validateTransactionalOffsetCommit).
	req := txnCommit("nope", 1, 0, "t", 0, 1)
	req.MemberID, req.Generation = "m", 1
	if _, err := c.TxnOffsetCommit(ctx, req); !errors.Is(err, ErrIllegalGeneration) {
		t.Fatalf("unknown group with a generation: %v, want ErrIllegalGeneration", err)
	}
	if _, err := c.TxnOffsetCommit(ctx, txnCommit("", 1, 0, "t", 0, 1)); !errors.Is(err, ErrInvalidGroupID) {
		t.Fatalf("empty group id: %v", err)
	}

	// A stale producer epoch is refused by the partition and stores nothing.
	mustTxnCommit(t, c, txnCommit("g", 1, 5, "t", 0, 1))
	res, err := c.TxnOffsetCommit(ctx, txnCommit("g", 1, 4, "t", 0, 99))
	if err != nil || !errors.Is(res.Topics[0].Partitions[0].Err, ErrInvalidProducerEpoch) {
		t.Fatalf("stale epoch: %+v %v, want ErrInvalidProducerEpoch", res, err)
	}
	endTxn(t, c, log, 1, true)
	if got := fetchStable(t, c, "g", "t", 0); got.Offset != 1 {
		t.Fatalf("after a refused stale commit: %+v, want 1", got)
	}

	// Metadata too large fails that partition alone.
	big := make([]byte, testConfig().withDefaults().OffsetMetadataMaxBytes+1)
	req = txnCommit("g", 2, 0, "t", 0, 5)
	req.Topics[0].Partitions = append(req.Topics[0].Partitions, OffsetCommitPartition{Partition: 1, Offset: 6, LeaderEpoch: -1, Metadata: strp(string(big))})
	res, err = c.TxnOffsetCommit(ctx, req)
	if err != nil || res.Topics[0].Partitions[0].Err != nil || !errors.Is(res.Topics[0].Partitions[1].Err, ErrOffsetMetadataTooLarge) {
		t.Fatalf("metadata too large: %+v %v", res, err)
	}
	// A failing log fails the commit, and nothing is pending.
	log.mu.Lock()
	log.failErr = errors.New("disk on fire")
	log.mu.Unlock()
	res, err = c.TxnOffsetCommit(ctx, txnCommit("g", 3, 0, "t", 2, 5))
	if err != nil || !errors.Is(res.Topics[0].Partitions[0].Err, ErrCoordinatorNotAvailable) {
		t.Fatalf("failed append: %+v %v, want ErrCoordinatorNotAvailable", res, err)
	}
	if got := fetchStable(t, c, "g", "t", 2); got.Err != nil {
		t.Fatalf("a failed commit left a pending offset: %+v", got)
	}
}

// TestTxnOffsetsDeleteGroupTombstonesPending: DeleteGroups writes a
// tombstone for a partition that only an open transaction has an offset
// for, so that the transaction's commit brings no offset back, at runtime
// or at reload (Kafka OffsetMetadataManager.deleteAllOffsets).
func TestTxnOffsetsDeleteGroupTombstonesPending(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	log := &memLog{}
	c := newLoaded(t, testConfig(), log)
	mustTxnCommit(t, c, txnCommit("g", 1, 0, "t", 0, 10))
	if errs := c.DeleteGroups(ctx, []string{"g"}); errs[0] != nil {
		t.Fatalf("delete: %v", errs[0])
	}
	endTxn(t, c, log, 1, true)
	if got := fetchStable(t, c, "g", "t", 0); got.Offset != -1 || got.Err != nil {
		t.Fatalf("after delete and commit: %+v, want none", got)
	}
	c.Close()
	c2 := newLoaded(t, testConfig(), log)
	if got := fetchStable(t, c2, "g", "t", 0); got.Offset != -1 || got.Err != nil {
		t.Fatalf("after reload: %+v, want none", got)
	}
}

// TestTxnOffsetsHoldOffExpiry: a simple group's committed offset that an
// open transaction is about to replace does not expire, and the group is
// not removed while the transaction is open (Kafka
// OffsetMetadataManager.cleanupExpiredOffsets); once the transaction
// commits, its offset is the committed one.
func TestTxnOffsetsHoldOffExpiry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var mu sync.Mutex
	now := time.UnixMilli(1_000_000)
	cfg := testConfig()
	cfg.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	cfg.OffsetsRetention = time.Hour
	cfg.OffsetsRetentionCheck = 10 * time.Millisecond
	log := &memLog{}
	c := newLoaded(t, cfg, log)
	if _, err := c.OffsetCommit(ctx, commit("s", "", -1, "t", 0, 1)); err != nil {
		t.Fatal(err)
	}
	mustTxnCommit(t, c, txnCommit("s", 1, 0, "t", 0, 2))
	mustTxnCommit(t, c, txnCommit("p", 2, 0, "t", 0, 3)) // only pending
	// x, without a transaction, shows when a check has run.
	if _, err := c.OffsetCommit(ctx, commit("x", "", -1, "t", 0, 1)); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	now = now.Add(2 * time.Hour)
	mu.Unlock()
	checkFor(t, 5*time.Second, func() error {
		if _, err := c.DescribeGroup(ctx, "x"); !errors.Is(err, ErrGroupIDNotFound) {
			return fmt.Errorf("x: %v, want expired", err)
		}
		return nil
	})
	got, err := c.ListGroups(ctx, ListGroupsRequest{})
	if err != nil || len(got) != 2 {
		t.Fatalf("groups after retention: %+v %v, want s and p", got, err)
	}
	if got := fetchOne(t, c, "s", "t", 0); got.Offset != 1 {
		t.Fatalf("s t/0 after retention: %+v, want 1 kept", got)
	}
	endTxn(t, c, log, 1, true)
	endTxn(t, c, log, 2, false)
	if got := fetchStable(t, c, "s", "t", 0); got.Offset != 2 {
		t.Fatalf("s t/0 after commit: %+v, want 2", got)
	}
	// p has nothing left: it goes at the next check.
	checkFor(t, 5*time.Second, func() error {
		if _, err := c.DescribeGroup(ctx, "p"); !errors.Is(err, ErrGroupIDNotFound) {
			return fmt.Errorf("p: %v, want ErrGroupIDNotFound", err)
		}
		return nil
	})
}

// TestTxnOffsetsStableFetchAll: a fetch of every committed partition
// (topics null) with RequireStable answers UNSTABLE_OFFSET_COMMIT for
// those an open transaction has an offset for.
// Reference: Kafka OffsetMetadataManager.fetchAllOffsets.
func TestTxnOffsetsStableFetchAll(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	log := &memLog{}
	c := newLoaded(t, testConfig(), log)
	if _, err := c.OffsetCommit(ctx, commit("g", "", -1, "t", 0, 1)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.OffsetCommit(ctx, commit("g", "", -1, "t", 1, 1)); err != nil {
		t.Fatal(err)
	}
	mustTxnCommit(t, c, txnCommit("g", 1, 0, "t", 1, 5))
	for _, stable := range []bool{false, true} {
		res, err := c.OffsetFetch(ctx, OffsetFetchRequest{Group: "g", RequireStable: stable})
		if err != nil || len(res.Topics) != 1 || len(res.Topics[0].Partitions) != 2 {
			t.Fatalf("fetch all (stable %t): %+v %v", stable, res, err)
		}
		p0, p1 := res.Topics[0].Partitions[0], res.Topics[0].Partitions[1]
		if p0.Offset != 1 || p0.Err != nil {
			t.Errorf("stable %t: t/0 = %+v, want 1", stable, p0)
		}
		if stable && !errors.Is(p1.Err, ErrUnstableOffsetCommit) {
			t.Errorf("stable: t/1 = %+v, want ErrUnstableOffsetCommit", p1)
		}
		if !stable && (p1.Offset != 1 || p1.Err != nil) {
			t.Errorf("not stable: t/1 = %+v, want 1", p1)
		}
	}
}

// TestTxnOffsetsConcurrentProducers: producers committing offsets of
// their own partitions into two groups while other producers' markers
// complete: every committed transaction's offsets are visible, none is
// left pending, and a reload agrees.
func TestTxnOffsetsConcurrentProducers(t *testing.T) {
	t.Parallel()
	const producers, rounds = 8, 20
	log := &memLog{}
	c := newLoaded(t, testConfig(), log)
	var wg sync.WaitGroup
	errs := make(chan error, producers)
	for pid := int64(0); pid < producers; pid++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g := []string{"a", "b"}[pid%2]
			for r := int64(1); r <= rounds; r++ {
				res, err := c.TxnOffsetCommit(context.Background(), txnCommit(g, pid, 0, "t", int32(pid), r))
				if err == nil {
					err = res.Topics[0].Partitions[0].Err
				}
				if err != nil {
					errs <- err
					return
				}
				// Every other round aborts.
				off := log.marker(pid, r%2 == 0)
				if _, err := c.CompleteTxn(context.Background(), 0, pid, r%2 == 0, off); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	check := func(c *Coordinator, when string) {
		for pid := int64(0); pid < producers; pid++ {
			g := []string{"a", "b"}[pid%2]
			if got := fetchStable(t, c, g, "t", int32(pid)); got.Offset != rounds || got.Err != nil {
				t.Errorf("%s: %s t/%d = %+v, want %d", when, g, pid, got, rounds)
			}
		}
	}
	check(c, "live")
	c.Close()
	check(newLoaded(t, testConfig(), log), "after reload")
}

// heldLog is a memLog whose Replay, having read the log, waits for
// release: a load in progress.
type heldLog struct {
	*memLog
	read    chan struct{} // closed once Replay has read the log
	release chan struct{}
}

func (l heldLog) Replay(ctx context.Context, fn func(Entry) error) error {
	l.mu.Lock()
	entries := append([]Entry(nil), l.entries...)
	l.mu.Unlock()
	close(l.read)
	<-l.release
	for _, r := range entries {
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

// TestTxnOffsetsMarkerDuringLoad: a marker that lands after a loading
// coordinator read the log is applied once the load ends, not lost.
func TestTxnOffsetsMarkerDuringLoad(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	log := &memLog{}
	c1 := newLoaded(t, testConfig(), log)
	mustTxnCommit(t, c1, txnCommit("g", 1, 0, "t", 0, 10))
	c1.Close()

	c2 := NewCoordinator(testConfig())
	t.Cleanup(func() { c2.Close() })
	held := heldLog{memLog: log, read: make(chan struct{}), release: make(chan struct{})}
	loaded := make(chan error, 1)
	go func() { loaded <- c2.Load(ctx, 0, held) }()
	recv(t, held.read, 5*time.Second, "replay")

	off := log.marker(1, true)
	completed := make(chan int, 1)
	go func() {
		n, err := c2.CompleteTxn(ctx, 0, 1, true, off)
		if err != nil {
			t.Error(err)
		}
		completed <- n
	}()
	select {
	case n := <-completed:
		t.Fatalf("CompleteTxn returned %d during the load", n)
	case <-time.After(50 * time.Millisecond):
	}
	close(held.release)
	if err := recv(t, loaded, 5*time.Second, "load"); err != nil {
		t.Fatal(err)
	}
	if n := recv(t, completed, 5*time.Second, "CompleteTxn"); n != 1 {
		t.Fatalf("CompleteTxn completed %d groups after the load, want 1", n)
	}
	if got := fetchStable(t, c2, "g", "t", 0); got.Offset != 10 || got.Err != nil {
		t.Fatalf("after the load and the marker: %+v, want 10", got)
	}
}
