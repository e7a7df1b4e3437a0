package replica

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"samsa/internal/storage"
	"samsa/internal/vfs"
)

// slowDirFS makes every directory fsync take delay and records how many
// ran at once.
type slowDirFS struct {
	vfs.FS
	delay             time.Duration
	mu                sync.Mutex
	inFlight, maxSeen int
}

func (s *slowDirFS) SyncDir(dir string) error {
	s.mu.Lock()
	s.inFlight++
	s.maxSeen = max(s.maxSeen, s.inFlight)
	s.mu.Unlock()
	time.Sleep(s.delay)
	s.mu.Lock()
	s.inFlight--
	s.mu.Unlock()
	return s.FS.SyncDir(dir)
}

// TestMaintainProducersSnapshotsPartitionsInParallel: the producer
// snapshots of many partitions (written at every clean shutdown) are
// written several at a time, and each partition's producers come back
// from its snapshot after a restart.
func TestMaintainProducersSnapshotsPartitionsInParallel(t *testing.T) {
	dir := t.TempDir()
	const parts = 16
	open := func(fs vfs.FS) (*Manager, func()) {
		logs, err := storage.OpenManager(storage.ManagerConfig{
			FS: vfs.Default, Dir: dir, RetentionCheckInterval: time.Hour,
			DefaultConfig: storage.DefaultConfig(),
		})
		if err != nil {
			t.Fatal(err)
		}
		m := NewManager(Config{Logs: logs, FS: fs, Self: 1, ISR: ISRConfig{ReplicaLagTimeMaxMs: 30000, MinInsyncReplicas: 1}})
		return m, func() { m.Close(); logs.Close() }
	}
	info := PartitionInfo{Replicas: []int32{1}, Leader: 1, LeaderEpoch: 1, ISR: []int32{1}, PartitionEpoch: 1}
	slow := &slowDirFS{FS: vfs.Default, delay: 20 * time.Millisecond}
	m, closeAll := open(slow)
	for i := range parts {
		tp := storage.TopicPartition{Topic: "snap", Partition: int32(i)}
		p, err := m.Ensure(tp, [16]byte{1}, storage.DefaultConfig(), info)
		if err != nil {
			t.Fatal(err)
		}
		tp2 := txnPartition{t: t, p: p}
		tp2.append(int64(100+i), 0, 0, 2, false)
	}
	if err := m.MaintainProducers(time.Now().UnixMilli(), 0); err != nil {
		t.Fatal(err)
	}
	closeAll()
	slow.mu.Lock()
	seen := slow.maxSeen
	slow.mu.Unlock()
	if seen < 2 {
		t.Fatalf("at most %d snapshot fsync ran at once for %d partitions", seen, parts)
	}

	m, closeAll = open(vfs.Default)
	defer closeAll()
	for i := range parts {
		tp := storage.TopicPartition{Topic: "snap", Partition: int32(i)}
		p, err := m.Ensure(tp, [16]byte{1}, storage.DefaultConfig(), info)
		if err != nil {
			t.Fatal(err)
		}
		prods := p.Producers()
		if len(prods) != 1 || prods[0].ID != int64(100+i) {
			t.Fatalf("%s: producers after restart %s, want producer %d", tp.Topic, fmt.Sprint(prods), 100+i)
		}
	}
}
