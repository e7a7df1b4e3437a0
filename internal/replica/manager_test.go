package replica

import (
	"context"
	"errors"
	"testing"
	"time"

	"samsa/internal/record"
	"samsa/internal/storage"
	"samsa/internal/vfs"
)

func openManager(t testing.TB) *Manager {
	t.Helper()
	logs, err := storage.OpenManager(storage.ManagerConfig{
		FS: vfs.Default, Dir: t.TempDir(), RetentionCheckInterval: time.Hour,
		DefaultConfig: storage.DefaultConfig(),
	})
	if err != nil {
		t.Fatal(err)
	}
	m := NewManager(Config{Logs: logs, FS: vfs.Default, Self: 1, ISR: ISRConfig{ReplicaLagTimeMaxMs: 30000, MinInsyncReplicas: 1}})
	t.Cleanup(func() {
		m.Close()
		logs.Close()
	})
	return m
}

func oneRecord(t *testing.T) record.Batch {
	t.Helper()
	bb := record.NewBuilder(record.CodecNone, time.Now().UnixMilli())
	bb.Add(record.Record{Value: []byte("v")})
	b, err := bb.Build()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestAppendFencedByLeadership checks that a partition appends client
// batches only while this broker leads it, and that an acknowledgement
// waiting for the high watermark fails when the leader epoch changes.
func TestAppendFencedByLeadership(t *testing.T) {
	m := openManager(t)
	tp := storage.TopicPartition{Topic: "t", Partition: 0}
	lead := PartitionInfo{Replicas: []int32{1}, Leader: 1, LeaderEpoch: 3, ISR: []int32{1}, PartitionEpoch: 1}
	p, err := m.Ensure(tp, [16]byte{1}, storage.DefaultConfig(), lead)
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Append(oneRecord(t), false, time.Now().UnixMilli())
	if err != nil || res.BaseOffset != 0 || res.LeaderEpoch != 3 {
		t.Fatalf("append as leader: %+v, %v", res, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.WaitCommitted(ctx, res.LastOffset+1, res.LeaderEpoch); err != nil {
		t.Fatalf("commit with an ISR of one: %v", err)
	}
	if hw := p.HighWatermark(); hw != 1 {
		t.Fatalf("high watermark %d, want 1", hw)
	}

	// Another broker becomes leader: appends stop, and a wait for the old
	// epoch fails rather than acknowledge.
	follow := PartitionInfo{Replicas: []int32{1, 2}, Leader: 2, LeaderEpoch: 4, ISR: []int32{1, 2}, PartitionEpoch: 2}
	if _, err := m.Ensure(tp, [16]byte{1}, storage.DefaultConfig(), follow); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Append(oneRecord(t), false, time.Now().UnixMilli()); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("append after losing leadership: %v, want ErrNotLeader", err)
	}
	if got := p.lg().LogEndOffset(); got != 1 {
		t.Fatalf("log end %d after a refused append, want 1", got)
	}
	if err := p.WaitCommitted(ctx, 2, 3); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("wait in an old epoch: %v, want ErrNotLeader", err)
	}

	// Leading again at a newer epoch: appends resume in that epoch.
	lead.LeaderEpoch, lead.PartitionEpoch = 5, 3
	if _, err := m.Ensure(tp, [16]byte{1}, storage.DefaultConfig(), lead); err != nil {
		t.Fatal(err)
	}
	res, err = p.Append(oneRecord(t), false, time.Now().UnixMilli())
	if err != nil || res.LeaderEpoch != 5 || res.BaseOffset != 1 {
		t.Fatalf("append as leader again: %+v, %v", res, err)
	}
	if e, ok := p.lg().LatestEpoch(); !ok || e != 5 {
		t.Fatalf("latest epoch in the log %d (%v), want 5", e, ok)
	}
}

// TestAcksAllRefusedBelowMinISR checks CheckAppend against
// min.insync.replicas. Reference: KIP-966 (strict min ISR).
func TestAcksAllRefusedBelowMinISR(t *testing.T) {
	m := openManager(t)
	tp := storage.TopicPartition{Topic: "t", Partition: 0}
	info := PartitionInfo{Replicas: []int32{1, 2, 3}, Leader: 1, ISR: []int32{1}, PartitionEpoch: 1, MinInsyncReplicas: 2}
	p, err := m.Ensure(tp, [16]byte{2}, storage.DefaultConfig(), info)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.CheckAppend(); !errors.Is(err, ErrNotEnoughReplicas) {
		t.Fatalf("CheckAppend with ISR [1] and min ISR 2: %v, want ErrNotEnoughReplicas", err)
	}
}

// A log left on disk by a topic that was deleted and created again under
// the same name while this broker was down (another topic id) is deleted
// when the partition of the new topic is hosted here: its records are not
// the new topic's.
func TestEnsureReplacesALogOfAnotherTopicID(t *testing.T) {
	dir := t.TempDir()
	tp := storage.TopicPartition{Topic: "t", Partition: 0}
	open := func() *storage.Manager {
		logs, err := storage.OpenManager(storage.ManagerConfig{
			FS: vfs.Default, Dir: dir, RetentionCheckInterval: time.Hour, DefaultConfig: storage.DefaultConfig(),
		})
		if err != nil {
			t.Fatal(err)
		}
		return logs
	}
	logs := open()
	old, err := logs.Create(tp, [16]byte{1}, storage.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.Append(oneRecord(t), 0, false, time.Now().UnixMilli()); err != nil {
		t.Fatal(err)
	}
	if err := logs.Close(); err != nil {
		t.Fatal(err)
	}

	logs = open()
	m := NewManager(Config{Logs: logs, FS: vfs.Default, Self: 1, ISR: ISRConfig{ReplicaLagTimeMaxMs: 30000, MinInsyncReplicas: 1}})
	t.Cleanup(func() {
		m.Close()
		logs.Close()
	})
	lead := PartitionInfo{Replicas: []int32{1}, Leader: 1, LeaderEpoch: 0, ISR: []int32{1}, PartitionEpoch: 0}
	if _, err := m.Ensure(tp, [16]byte{2}, storage.DefaultConfig(), lead); err != nil {
		t.Fatalf("Ensure with the new topic id: %v", err)
	}
	l := logs.Log(tp)
	if l == nil || l.TopicID() != [16]byte{2} || l.LogEndOffset() != 0 {
		t.Fatalf("log after Ensure: %v", l)
	}
}

// TestAppendWakesFollowersThatHaveNotFetched: a follower's fetch parked
// on the partitions it already follows (FollowerNews) completes when a
// partition it has not fetched from this leader yet takes an append, so
// the follower fetches it at once instead of after its long-poll; once it
// has fetched, appends there no longer wake it, and a follower out of the
// ISR is not woken at all.
func TestAppendWakesFollowersThatHaveNotFetched(t *testing.T) {
	m := openManager(t)
	tp := storage.TopicPartition{Topic: "new", Partition: 0}
	info := PartitionInfo{Replicas: []int32{1, 2, 3}, Leader: 1, LeaderEpoch: 1, ISR: []int32{1, 2}, PartitionEpoch: 1}
	p, err := m.Ensure(tp, [16]byte{3}, storage.DefaultConfig(), info)
	if err != nil {
		t.Fatal(err)
	}
	far := time.Now().Add(time.Hour)
	parked2 := m.Watch([]WatchSpec{m.FollowerNews(2)}, far)
	parked3 := m.Watch([]WatchSpec{m.FollowerNews(3)}, far)
	defer parked3.Cancel()
	if _, err := p.Append(oneRecord(t), false, time.Now().UnixMilli()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-parked2.Done():
		if o := parked2.Outcome(); o != Satisfied {
			t.Fatalf("follower 2's parked fetch completed %v, want Satisfied", o)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("an append to a partition follower 2 has not fetched left its parked fetch waiting")
	}
	select {
	case <-parked3.Done():
		t.Fatalf("follower 3, outside the ISR, was woken (%v)", parked3.Outcome())
	default:
	}

	// Follower 2 fetches the partition: the next append is not news.
	p.FollowerFetched(2, 0)
	again := m.Watch([]WatchSpec{m.FollowerNews(2)}, far)
	defer again.Cancel()
	if _, err := p.Append(oneRecord(t), false, time.Now().UnixMilli()); err != nil {
		t.Fatal(err)
	}
	if p.unfetched.Load() {
		t.Fatal("unfetched still set after every in-sync follower fetched")
	}
	select {
	case <-again.Done():
		t.Fatalf("an append woke follower 2 after it fetched the partition (%v)", again.Outcome())
	default:
	}
}
