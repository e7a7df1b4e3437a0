package replica

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"samsa/internal/record"
	"samsa/internal/storage"
)

// leadWithLaggingFollower hosts t-0 led here at epoch 3 with follower 2 in
// the ISR, which has not fetched: the high watermark stays at 0 while the
// leader appends n records with timestamps 1000, 1001, ...
func leadWithLaggingFollower(t testing.TB, n int) (*Manager, *Partition) {
	t.Helper()
	m := openManager(t)
	tp := storage.TopicPartition{Topic: "t", Partition: 0}
	info := PartitionInfo{Replicas: []int32{1, 2}, Leader: 1, LeaderEpoch: 3, ISR: []int32{1, 2}, PartitionEpoch: 1}
	p, err := m.Ensure(tp, [16]byte{1}, storage.DefaultConfig(), info)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		bb := record.NewBuilder(record.CodecNone, int64(1000+i))
		bb.Add(record.Record{Value: []byte("v")})
		b, err := bb.Build()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Append(b, false, time.Now().UnixMilli()); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.waitDurable(ctx, int64(n)); err != nil {
		t.Fatal(err)
	}
	return m, p
}

// TestReadStopsAtIsolationBound checks that consumers read only below the
// high watermark (read_uncommitted) or last stable offset
// (read_committed), that a follower reads to the log end, and that the
// offsets ListOffsets gives are clamped the same way.
func TestReadStopsAtIsolationBound(t *testing.T) {
	_, p := leadWithLaggingFollower(t, 3)
	if hw, leo := p.HighWatermark(), p.LogEndOffset(); hw != 0 || leo != 3 {
		t.Fatalf("high watermark %d, log end %d; want 0 and 3", hw, leo)
	}
	for _, iso := range []Isolation{ReadUncommitted, ReadCommitted} {
		res, err := p.Read(0, 1<<20, true, iso)
		if err != nil || res.Size != 0 || res.End != 0 || res.HighWatermark != 0 {
			t.Fatalf("read at %d below an uncommitted log: %+v, %v; want nothing, end 0", iso, res, err)
		}
		if _, _, ok, err := p.OffsetForTimestamp(1000, iso); ok || err != nil {
			t.Fatalf("offset for timestamp at %d found an uncommitted record (err %v)", iso, err)
		}
		if _, _, ok, err := p.MaxTimestamp(iso); ok || err != nil {
			t.Fatalf("max timestamp at %d found an uncommitted record (err %v)", iso, err)
		}
		if got := p.EndOffset(iso); got != 0 {
			t.Fatalf("end offset at %d: %d, want 0", iso, got)
		}
	}
	res, err := p.Read(0, 1<<20, true, ReadLogEnd)
	if err != nil || res.Size == 0 || res.NextOffset != 3 || res.End != 3 {
		t.Fatalf("follower read: %+v, %v; want the 3 records", res, err)
	}
	if _, err := p.Read(4, 1<<20, true, ReadLogEnd); !errors.Is(err, storage.ErrOffsetOutOfRange) {
		t.Fatalf("read past the log end: %v, want ErrOffsetOutOfRange", err)
	}

	// A fetch offset past the log end says nothing of the follower.
	p.FollowerFetched(2, 100)
	if hw := p.HighWatermark(); hw != 0 {
		t.Fatalf("high watermark %d after a follower fetch past the log end, want 0", hw)
	}
	p.FollowerFetched(2, 2)
	if hw := p.HighWatermark(); hw != 2 {
		t.Fatalf("high watermark %d after the follower fetched at 2, want 2", hw)
	}
	res, err = p.Read(0, 1<<20, true, ReadUncommitted)
	if err != nil || res.NextOffset != 2 || res.End != 2 {
		t.Fatalf("read below the high watermark 2: %+v, %v", res, err)
	}
	if off, ts, ok, err := p.OffsetForTimestamp(1001, ReadUncommitted); !ok || err != nil || off != 1 || ts != 1001 {
		t.Fatalf("offset for timestamp 1001: %d %d %v %v; want offset 1", off, ts, ok, err)
	}
	if _, _, ok, _ := p.OffsetForTimestamp(1002, ReadUncommitted); ok {
		t.Fatal("offset for timestamp 1002 found offset 2, at the high watermark")
	}
	if _, _, ok, _ := p.MaxTimestamp(ReadUncommitted); ok {
		t.Fatal("max timestamp found offset 2, at the high watermark")
	}
	if got := p.LegacyOffsets(-1, 5, time.Now().UnixMilli()); len(got) == 0 || got[0] != 2 {
		t.Fatalf("ListOffsets v0 latest: %v, want the high watermark 2 first", got)
	}
}

// TestDeleteRecordsOnlyByLeaderBelowHighWatermark checks DeleteRecords'
// rules: -1 is the high watermark, an offset above it is out of range, and
// a broker that no longer leads deletes nothing.
func TestDeleteRecordsOnlyByLeaderBelowHighWatermark(t *testing.T) {
	m, p := leadWithLaggingFollower(t, 3)
	if _, err := p.DeleteRecords(1); !errors.Is(err, storage.ErrOffsetOutOfRange) {
		t.Fatalf("delete above the high watermark: %v, want ErrOffsetOutOfRange", err)
	}
	if _, err := p.DeleteRecords(-2); !errors.Is(err, storage.ErrOffsetOutOfRange) {
		t.Fatalf("delete before -2: %v, want ErrOffsetOutOfRange", err)
	}
	p.FollowerFetched(2, 2)
	if low, err := p.DeleteRecords(-1); err != nil || low != 2 {
		t.Fatalf("delete before the high watermark: low %d, %v; want 2", low, err)
	}
	if got := p.LogStartOffset(); got != 2 {
		t.Fatalf("log start %d, want 2", got)
	}

	follow := PartitionInfo{Replicas: []int32{1, 2}, Leader: 2, LeaderEpoch: 4, ISR: []int32{1, 2}, PartitionEpoch: 2}
	if _, err := m.Ensure(p.TP, p.TopicID, storage.DefaultConfig(), follow); err != nil {
		t.Fatal(err)
	}
	if _, err := p.DeleteRecords(-1); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("delete on a follower: %v, want ErrNotLeader", err)
	}
	if got := p.LogStartOffset(); got != 2 {
		t.Fatalf("log start %d after a follower's refused delete, want 2", got)
	}
}

// TestDeleteRecordsRacesLeadershipChange runs DeleteRecords while the
// partition changes leader back and forth: a delete that succeeds was made
// by a leader, so the log start never passes the high watermark the
// leader had, and none succeeds while this broker follows.
func TestDeleteRecordsRacesLeadershipChange(t *testing.T) {
	m, p := leadWithLaggingFollower(t, 200)
	p.FollowerFetched(2, 200)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for epoch := int32(4); ; epoch++ {
			select {
			case <-stop:
				return
			default:
			}
			leader := int32(1 + epoch%2)
			info := PartitionInfo{Replicas: []int32{1, 2}, Leader: leader, LeaderEpoch: epoch, ISR: []int32{1, 2}, PartitionEpoch: epoch}
			if _, err := m.Ensure(p.TP, p.TopicID, storage.DefaultConfig(), info); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for off := int64(1); off <= 200; off++ {
		low, err := p.DeleteRecords(off)
		switch {
		case errors.Is(err, ErrNotLeader):
		case err != nil:
			t.Errorf("delete before %d: %v", off, err)
		case low != off:
			t.Errorf("delete before %d: low %d", off, low)
		}
	}
	close(stop)
	wg.Wait()
	if got := p.LogStartOffset(); got > 200 {
		t.Fatalf("log start %d past the log end", got)
	}
}

// TestEndOffsetForEpoch checks OffsetForLeaderEpoch's answers: the current
// epoch ends at the log end, a newer one is unknown, an older one ends
// where the next began.
func TestEndOffsetForEpoch(t *testing.T) {
	m, p := leadWithLaggingFollower(t, 3)
	if e, o := p.EndOffsetForEpoch(3); e != 3 || o != 3 {
		t.Fatalf("current epoch: (%d, %d), want (3, 3)", e, o)
	}
	if e, o := p.EndOffsetForEpoch(4); e != -1 || o != -1 {
		t.Fatalf("newer epoch: (%d, %d), want (-1, -1)", e, o)
	}
	lead := PartitionInfo{Replicas: []int32{1, 2}, Leader: 1, LeaderEpoch: 5, ISR: []int32{1, 2}, PartitionEpoch: 2}
	if _, err := m.Ensure(p.TP, p.TopicID, storage.DefaultConfig(), lead); err != nil {
		t.Fatal(err)
	}
	if e, o := p.EndOffsetForEpoch(4); e != 3 || o != 3 {
		t.Fatalf("epoch 4, never led: (%d, %d), want epoch 3 ending at 3", e, o)
	}
	if e, o := p.EndOffsetForEpoch(2); e != -1 || o != -1 {
		t.Fatalf("epoch 2, before every epoch: (%d, %d), want (-1, -1)", e, o)
	}
}

// TestReadAllocatesNoMoreThanTheLog holds the fetch path's cost: a read
// through the partition allocates what the log's own read does, nothing
// more.
func TestReadAllocatesNoMoreThanTheLog(t *testing.T) {
	_, p := leadWithLaggingFollower(t, 10)
	p.FollowerFetched(2, 10)
	logAllocs := testing.AllocsPerRun(200, func() {
		if _, err := p.lg().Read(3, 1<<20, p.HighWatermark(), true); err != nil {
			t.Fatal(err)
		}
	})
	for _, iso := range []Isolation{ReadUncommitted, ReadCommitted, ReadLogEnd} {
		got := testing.AllocsPerRun(200, func() {
			if _, err := p.Read(3, 1<<20, true, iso); err != nil {
				t.Fatal(err)
			}
		})
		if got > logAllocs {
			t.Errorf("Read at %d: %.1f allocations, the log's read %.1f", iso, got, logAllocs)
		}
	}
}

// BenchmarkPartitionRead is the fetch path's read of one partition: the
// partition's bounds and offsets, then the log's read of one batch; "log"
// is the log's read alone, for comparison.
func BenchmarkPartitionRead(b *testing.B) {
	b.Run("log", func(b *testing.B) {
		_, p := leadWithLaggingFollower(b, 100)
		p.FollowerFetched(2, 100)
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if _, err := p.lg().Read(int64(i%100), 1<<20, p.HighWatermark(), true); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, iso := range []struct {
		name string
		iso  Isolation
	}{{"uncommitted", ReadUncommitted}, {"committed", ReadCommitted}, {"log_end", ReadLogEnd}} {
		b.Run("iso="+iso.name, func(b *testing.B) {
			_, p := leadWithLaggingFollower(b, 100)
			p.FollowerFetched(2, 100)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if _, err := p.Read(int64(i%100), 1<<20, true, iso.iso); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestOffsetsNotAvailableUntilHighWatermarkReachesEpochStart checks that a
// new leader whose high watermark is below the start of its leader epoch
// refuses to list offsets (OFFSET_NOT_AVAILABLE), so no client sees an end
// offset below records the previous leader acknowledged, and that it
// answers again once its followers' fetches move the high watermark there.
func TestOffsetsNotAvailableUntilHighWatermarkReachesEpochStart(t *testing.T) {
	m, p := leadWithLaggingFollower(t, 3)
	if err := p.OffsetsAvailable(); err != nil {
		t.Fatalf("leader at epoch 3 with high watermark 0 at its epoch start 0: %v, want nil", err)
	}
	info := PartitionInfo{Replicas: []int32{1, 2}, Leader: 1, LeaderEpoch: 4, ISR: []int32{1, 2}, PartitionEpoch: 2}
	if _, err := m.Ensure(p.TP, p.TopicID, storage.DefaultConfig(), info); err != nil {
		t.Fatal(err)
	}
	if hw := p.HighWatermark(); hw != 0 {
		t.Fatalf("high watermark %d at the new epoch, want 0", hw)
	}
	if err := p.OffsetsAvailable(); !errors.Is(err, ErrOffsetNotAvailable) {
		t.Fatalf("new leader with high watermark 0 below its epoch start 3: %v, want ErrOffsetNotAvailable", err)
	}
	p.FollowerFetched(2, 2)
	if err := p.OffsetsAvailable(); !errors.Is(err, ErrOffsetNotAvailable) {
		t.Fatalf("high watermark %d still below the epoch start 3: %v, want ErrOffsetNotAvailable", p.HighWatermark(), err)
	}
	p.FollowerFetched(2, 3)
	if err := p.OffsetsAvailable(); err != nil || p.HighWatermark() != 3 {
		t.Fatalf("high watermark %d after the follower fetched at 3: %v, want 3 and nil", p.HighWatermark(), err)
	}
	info.Leader, info.LeaderEpoch = 2, 5
	if _, err := m.Ensure(p.TP, p.TopicID, storage.DefaultConfig(), info); err != nil {
		t.Fatal(err)
	}
	if err := p.OffsetsAvailable(); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("follower: %v, want ErrNotLeader", err)
	}
}
