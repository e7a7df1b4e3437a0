package storage

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"samsa/internal/record"
	"samsa/internal/vfs"
)

// leaderAndFollower opens one manager with two logs: a leader filled with
// batches under rising epochs, and an empty follower.
func leaderAndFollower(t *testing.T, fs vfs.FS, dir string, cfg Config) (m *Manager, leader, follower *Log, want []appended) {
	t.Helper()
	m = openManager(t, fs, dir, nil)
	var err error
	if leader, err = m.Create(TopicPartition{"leader", 0}, [16]byte{1}, cfg); err != nil {
		t.Fatal(err)
	}
	if follower, err = m.Create(TopicPartition{"follower", 0}, [16]byte{1}, cfg); err != nil {
		t.Fatal(err)
	}
	var epochs []int32
	for i := 0; i < 40; i++ {
		epochs = append(epochs, 3+int32(i/15)*2) // 3, 5, 7
	}
	want = appendEpochs(t, leader, 0, epochs...)
	return m, leader, follower, want
}

func TestAppendReplicaKeepsOffsetsEpochsAndBytes(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		m, leader, follower, want := leaderAndFollower(t, fs, dir, smallConfig())
		defer m.Close()
		// Fetch in chunks of ~700 bytes, as a follower fetcher would.
		for off := int64(0); off < leader.LogEndOffset(); {
			chunk := readBytes(t, leader, off, 700, 1<<62, true)
			last, err := follower.AppendReplica(chunk)
			if err != nil {
				t.Fatalf("AppendReplica at %d: %v", off, err)
			}
			if last+1 != follower.LogEndOffset() {
				t.Fatalf("AppendReplica returned %d, LogEndOffset %d", last, follower.LogEndOffset())
			}
			off = last + 1
		}
		if n := len(segmentFiles(t, fs, follower.Dir(), ".log")); n < 2 {
			t.Fatalf("follower has %d segments, want it to roll", n)
		}
		checkLog(t, follower, want)
		if !bytes.Equal(readBytes(t, follower, 0, 1<<40, 1<<62, false), readBytes(t, leader, 0, 1<<40, 1<<62, false)) {
			t.Fatal("follower bytes differ from the leader's")
		}
		wantEpochs := []EpochEntry{{3, 0}, {5, 30}, {7, 60}}
		checkEpochs(t, follower, wantEpochs)
		checkEpochs(t, leader, wantEpochs)
		if err := follower.WaitDurable(context.Background(), follower.LogEndOffset()); err != nil {
			t.Fatal(err)
		}
		if last, err := follower.AppendReplica(nil); err != nil || last != follower.LogEndOffset()-1 {
			t.Fatalf("AppendReplica(nil) = %d, %v", last, err)
		}

		// The follower's log and cache survive a restart.
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
		m2 := openManager(t, fs, dir, nil)
		defer m2.Close()
		f2 := m2.Log(TopicPartition{"follower", 0})
		checkLog(t, f2, want)
		checkEpochs(t, f2, wantEpochs)
	})
}

func TestAppendReplicaRefusesGapOverlapAndBadBatchesWithoutWriting(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		m, leader, follower, want := leaderAndFollower(t, fs, dir, smallConfig())
		defer m.Close()
		first := concat(want[:5]) // offsets 0..9
		if _, err := follower.AppendReplica(first); err != nil {
			t.Fatal(err)
		}
		size := follower.Size()
		corrupt := func(b []byte, at int) []byte {
			c := append([]byte(nil), b...)
			c[at] ^= 0xff
			return c
		}
		second := want[6].bytes
		tests := []struct {
			name    string
			batches []byte
			want    error
		}{
			{"overlap", concat(want[4:7]), ErrOffsetMismatch},
			{"gap at the log end", concat(want[6:8]), ErrOffsetMismatch},
			{"gap between batches", append(append([]byte(nil), want[5].bytes...), want[7].bytes...), ErrOffsetMismatch},
			{"second batch crc", append(append([]byte(nil), want[5].bytes...), corrupt(second, len(second)-1)...), record.ErrCorrupt},
			{"second batch length past the data", append(append([]byte(nil), want[5].bytes...), corrupt(second, 11)...), record.ErrShortBatch},
			{"second batch length below the header", append(append([]byte(nil), want[5].bytes...), corrupt(second, 8)...), record.ErrCorrupt},
			{"second batch one byte short", append(append([]byte(nil), want[5].bytes...), second[:len(second)-1]...), record.ErrShortBatch},
			{"second batch magic", append(append([]byte(nil), want[5].bytes...), corrupt(second, 16)...), record.ErrCorrupt},
			{"truncated tail", concat(want[5:7])[:len(want[5].bytes)+30], record.ErrShortBatch},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				_, err := follower.AppendReplica(tc.batches)
				if !errors.Is(err, tc.want) {
					t.Fatalf("AppendReplica: %v, want %v", err, tc.want)
				}
				if follower.LogEndOffset() != 10 || follower.Size() != size {
					t.Fatalf("after refusal: LogEndOffset %d size %d, want 10 and %d", follower.LogEndOffset(), follower.Size(), size)
				}
			})
		}
		checkLog(t, follower, want[:5])
		checkEpochs(t, follower, []EpochEntry{{3, 0}})
		_ = leader
	})
}

// A compacted leader log has gaps between batches; a follower of a
// compacted topic accepts them, never an overlap.
func TestAppendReplicaAcceptsGapsWhenCompacted(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		cfg := smallConfig()
		cfg.CleanupPolicy = CleanupPolicyCompact
		m, _, follower, want := leaderAndFollower(t, fs, dir, cfg)
		defer m.Close()
		gapped := append(append(append([]byte(nil), want[0].bytes...), want[2].bytes...), want[3].bytes...)
		last, err := follower.AppendReplica(gapped)
		if err != nil {
			t.Fatal(err)
		}
		if last != want[3].last {
			t.Fatalf("last = %d, want %d", last, want[3].last)
		}
		if _, err := follower.AppendReplica(want[3].bytes); !errors.Is(err, ErrOffsetMismatch) {
			t.Fatalf("overlap: %v", err)
		}
		got := readBytes(t, follower, 0, 1<<40, 1<<62, false)
		if !bytes.Equal(got, gapped) {
			t.Fatalf("read back %d bytes, want %d", len(got), len(gapped))
		}
		// Reading inside the gap returns the next batch.
		if got := readBytes(t, follower, want[1].base, 1, 1<<62, true); !bytes.Equal(got, want[2].bytes) {
			t.Fatalf("read in gap: %d bytes", len(got))
		}
	})
}

// A follower fsyncs what it appended before acknowledging it (the power
// cut keeps what WaitDurable covered).
func TestAppendReplicaDurableAfterWaitDurable(t *testing.T) {
	fs := vfs.NewMemFS()
	m, _, follower, want := leaderAndFollower(t, fs, "/data", smallConfig())
	last, err := follower.AppendReplica(concat(want[:20]))
	if err != nil {
		t.Fatal(err)
	}
	if err := follower.WaitDurable(context.Background(), last+1); err != nil {
		t.Fatal(err)
	}
	clone := fs.CrashClone()
	crash(m)
	m2 := openManager(t, clone, "/data", nil)
	defer m2.Close()
	f2 := m2.Log(TopicPartition{"follower", 0})
	checkLog(t, f2, want[:20])
	checkEpochs(t, f2, []EpochEntry{{3, 0}, {5, 30}})
}

// A follower that fell below its leader's log start restarts empty there
// and then appends the leader's batches from that offset.
func TestTruncateFullyAndStartAtThenAppendReplica(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		m, _, follower, want := leaderAndFollower(t, fs, dir, smallConfig())
		defer m.Close()
		if _, err := follower.AppendReplica(concat(want[:3])); err != nil {
			t.Fatal(err)
		}
		start := want[20].base
		if err := follower.TruncateFullyAndStartAt(start); err != nil {
			t.Fatal(err)
		}
		if follower.LogStartOffset() != start || follower.LogEndOffset() != start {
			t.Fatalf("after restart: start %d end %d, want %d", follower.LogStartOffset(), follower.LogEndOffset(), start)
		}
		checkEpochs(t, follower, nil)
		if _, err := follower.AppendReplica(concat(want[19:22])); !errors.Is(err, ErrOffsetMismatch) {
			t.Fatalf("batch below the new start: %v", err)
		}
		if _, err := follower.AppendReplica(concat(want[20:])); err != nil {
			t.Fatal(err)
		}
		checkLog(t, follower, want[20:])
		checkEpochs(t, follower, []EpochEntry{{5, start}, {7, 60}})
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
		m2 := openManager(t, fs, dir, nil)
		defer m2.Close()
		f2 := m2.Log(TopicPartition{"follower", 0})
		checkLog(t, f2, want[20:])
		checkEpochs(t, f2, []EpochEntry{{5, start}, {7, 60}})
	})
}

// AppendReplica applies segment.ms by the Manager's clock, not the wall
// clock: batches stamped at the clock's time roll only once the clock has
// moved past segment.ms.
func TestAppendReplicaRollsBySegmentMsOnTheManagerClock(t *testing.T) {
	c := newClock(10_000) // 1970: the wall clock is decades past segment.ms
	m := openManager(t, vfs.NewMemFS(), "/data", c)
	defer m.Close()
	cfg := DefaultConfig()
	cfg.SegmentMs = 60_000
	l, _ := m.Create(testTP, [16]byte{}, cfg)
	next := int64(0)
	appendAt := func(ts int64) {
		t.Helper()
		b := makeBatch(t, int(next), 2, ts)
		b.SetBaseOffset(next)
		b.SetLeaderEpoch(1)
		if _, err := l.AppendReplica(b); err != nil {
			t.Fatal(err)
		}
		next = b.LastOffset() + 1
	}
	appendAt(c.nowMs())
	c.advance(30_000)
	appendAt(c.nowMs())
	if n := len(segmentFiles(t, m.fs, l.Dir(), logSuffix)); n != 1 {
		t.Fatalf("%d segments before segment.ms passed on the clock, want 1", n)
	}
	c.advance(31_000)
	appendAt(c.nowMs())
	if n := len(segmentFiles(t, m.fs, l.Dir(), logSuffix)); n != 2 {
		t.Fatalf("%d segments after segment.ms passed on the clock, want 2", n)
	}
}
