package storage

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"

	"samsa/internal/vfs"
)

// appendEpochs appends one batch of two records per epoch in epochs and
// returns the batches as written.
func appendEpochs(t testing.TB, l *Log, from int, epochs ...int32) []appended {
	t.Helper()
	var out []appended
	for i, e := range epochs {
		b := makeBatch(t, from+i, 2, 1000+int64(from+i))
		res, err := l.Append(b, e, false, 1000)
		if err != nil {
			t.Fatalf("Append epoch %d: %v", e, err)
		}
		out = append(out, appended{base: res.BaseOffset, last: res.LastOffset, ts: b.MaxTimestamp(), bytes: append([]byte(nil), b...)})
	}
	return out
}

func epochFileBytes(t testing.TB, fs vfs.FS, l *Log) string {
	t.Helper()
	return string(readFileBytes(t, fs, filepath.Join(l.Dir(), leaderEpochFile)))
}

func checkEpochs(t testing.TB, l *Log, want []EpochEntry) {
	t.Helper()
	if got := l.EpochEntries(); !reflect.DeepEqual(got, want) && !(len(got) == 0 && len(want) == 0) {
		t.Fatalf("EpochEntries = %v, want %v", got, want)
	}
}

// Reference: KIP-101, the leader epoch cache records the first offset of
// each epoch, and a lower or equal epoch adds nothing.
func TestAppendWithRisingEpochsFillsEpochCacheAndCheckpoint(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		m := openManager(t, fs, dir, nil)
		defer m.Close()
		l, err := m.Create(testTP, [16]byte{1}, smallConfig())
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := l.LatestEpoch(); ok {
			t.Fatal("LatestEpoch on an empty log: ok")
		}
		if e, o := l.EndOffsetForEpoch(0); e != -1 || o != -1 {
			t.Fatalf("EndOffsetForEpoch on empty cache = (%d, %d)", e, o)
		}
		// Offsets: epoch 0 at 0..3, epoch 2 at 4..7, epoch 1 (stale) at
		// 8..9, epoch 5 at 10..11.
		appendEpochs(t, l, 0, 0, 0, 2, 2, 1, 5)
		want := []EpochEntry{{0, 0}, {2, 4}, {5, 10}}
		checkEpochs(t, l, want)
		if e, ok := l.LatestEpoch(); !ok || e != 5 {
			t.Fatalf("LatestEpoch = %d, %v", e, ok)
		}
		if got, exp := epochFileBytes(t, fs, l), "0\n3\n0 0\n2 4\n5 10\n"; got != exp {
			t.Fatalf("checkpoint = %q, want %q", got, exp)
		}
		if e, o := l.EndOffsetForEpoch(1); e != 0 || o != 4 {
			t.Fatalf("EndOffsetForEpoch(1) = (%d, %d), want (0, 4)", e, o)
		}
		if e, o := l.EndOffsetForEpoch(5); e != 5 || o != 12 {
			t.Fatalf("EndOffsetForEpoch(5) = (%d, %d), want (5, 12)", e, o)
		}
	})
}

// Reference: KIP-101 and KIP-279, OffsetsForLeaderEpoch answers with the
// largest epoch <= the requested one and the start offset of the next.
func TestEndOffsetForEpoch(t *testing.T) {
	cache := []EpochEntry{{0, 0}, {1, 100}, {3, 200}, {7, 350}}
	const leo = 420
	tests := []struct {
		name      string
		entries   []EpochEntry
		epoch     int32
		wantEpoch int32
		wantEnd   int64
	}{
		{"empty cache", nil, 3, -1, -1},
		{"undefined epoch", cache, -1, -1, -1},
		{"first epoch ends where the second starts", cache, 0, 0, 100},
		{"middle epoch", cache, 1, 1, 200},
		{"KIP-279 missing epoch answers the one before it", cache, 2, 1, 200},
		{"gap before the latest", cache, 5, 3, 350},
		{"latest epoch ends at the log end", cache, 7, 7, leo},
		{"future epoch gets the latest", cache, 9, 7, leo},
		{"below every cached epoch", cache[1:], 0, -1, -1},
		{"single entry", []EpochEntry{{4, 10}}, 4, 4, leo},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, o := endOffsetForEpoch(tc.entries, tc.epoch, leo)
			if e != tc.wantEpoch || o != tc.wantEnd {
				t.Fatalf("endOffsetForEpoch(%d) = (%d, %d), want (%d, %d)", tc.epoch, e, o, tc.wantEpoch, tc.wantEnd)
			}
		})
	}
}

func TestEpochCacheSurvivesRestartAndIsRebuiltWhenMissing(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		m := openManager(t, fs, dir, nil)
		l, _ := m.Create(testTP, [16]byte{1}, smallConfig())
		// Enough batches to span several segments.
		var epochs []int32
		for i := 0; i < 60; i++ {
			epochs = append(epochs, int32(i/20)*3)
		}
		want := appendEpochs(t, l, 0, epochs...)
		wantEpochs := []EpochEntry{{0, 0}, {3, 40}, {6, 80}}
		checkEpochs(t, l, wantEpochs)
		pdir := l.Dir()
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}

		m = openManager(t, fs, dir, nil)
		l = m.Log(testTP)
		checkEpochs(t, l, wantEpochs)
		checkLog(t, l, want)
		m.Close()

		// Missing file: rebuilt from the batches' partitionLeaderEpoch.
		if err := fs.Remove(filepath.Join(pdir, leaderEpochFile)); err != nil {
			t.Fatal(err)
		}
		m = openManager(t, fs, dir, nil)
		l = m.Log(testTP)
		checkEpochs(t, l, wantEpochs)
		if got, exp := epochFileBytes(t, fs, l), "0\n3\n0 0\n3 40\n6 80\n"; got != exp {
			t.Fatalf("rebuilt checkpoint = %q, want %q", got, exp)
		}
		m.Close()

		// Behind: the file knows only epoch 0.
		writeFileBytes(t, fs, filepath.Join(pdir, leaderEpochFile), []byte("0\n1\n0 0\n"))
		m = openManager(t, fs, dir, nil)
		l = m.Log(testTP)
		checkEpochs(t, l, wantEpochs)
		m.Close()

		// Ahead (an epoch assigned, its batch lost) and garbage: trimmed,
		// rebuilt.
		writeFileBytes(t, fs, filepath.Join(pdir, leaderEpochFile), []byte("0\n4\n0 0\n3 40\n6 80\n9 120\n"))
		m = openManager(t, fs, dir, nil)
		checkEpochs(t, m.Log(testTP), wantEpochs)
		m.Close()
		writeFileBytes(t, fs, filepath.Join(pdir, leaderEpochFile), []byte("0\nbanana\n"))
		m = openManager(t, fs, dir, nil)
		defer m.Close()
		checkEpochs(t, m.Log(testTP), wantEpochs)
	})
}

// After a power cut the cache covers exactly the batches that survived.
func TestEpochCacheAfterPowerCut(t *testing.T) {
	fs := vfs.NewMemFS()
	m := openManager(t, fs, "/data", nil)
	l, _ := m.Create(testTP, [16]byte{1}, smallConfig())
	acked := appendEpochs(t, l, 0, 1, 1, 2)
	if err := l.WaitDurable(context.Background(), l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	// The flusher may or may not sync these before the clone.
	appendEpochs(t, l, 3, 4, 4)
	clone := fs.CrashClone()
	crash(m)

	m2 := openManager(t, clone, "/data", nil)
	defer m2.Close()
	l2 := m2.Log(testTP)
	leo := l2.LogEndOffset()
	if leo < acked[len(acked)-1].last+1 {
		t.Fatalf("LogEndOffset %d lost acknowledged batches", leo)
	}
	want := []EpochEntry{{1, 0}, {2, 4}}
	if leo > 6 {
		want = append(want, EpochEntry{4, 6})
	}
	checkEpochs(t, l2, want)
}

func TestTruncateTrimsEpochCache(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		m := openManager(t, fs, dir, nil)
		defer m.Close()
		l, _ := m.Create(testTP, [16]byte{1}, smallConfig())
		appendEpochs(t, l, 0, 1, 1, 3, 3, 4, 6) // 1@0 3@4 4@8 6@10
		// Truncating inside epoch 3's second batch keeps epoch 3.
		if err := l.Truncate(7); err != nil {
			t.Fatal(err)
		}
		if l.LogEndOffset() != 6 {
			t.Fatalf("LogEndOffset = %d, want 6", l.LogEndOffset())
		}
		checkEpochs(t, l, []EpochEntry{{1, 0}, {3, 4}})
		if got, exp := epochFileBytes(t, fs, l), "0\n2\n1 0\n3 4\n"; got != exp {
			t.Fatalf("checkpoint = %q, want %q", got, exp)
		}
		// Truncating at an epoch's start offset removes it.
		if err := l.Truncate(4); err != nil {
			t.Fatal(err)
		}
		checkEpochs(t, l, []EpochEntry{{1, 0}})
		if e, o := l.EndOffsetForEpoch(3); e != 1 || o != 4 {
			t.Fatalf("EndOffsetForEpoch(3) = (%d, %d), want (1, 4)", e, o)
		}
		// Appending at a new epoch after a truncation.
		appendEpochs(t, l, 10, 7)
		checkEpochs(t, l, []EpochEntry{{1, 0}, {7, 4}})
		// Below the log start: the log restarts empty with no epochs.
		if _, err := l.DeleteRecordsBefore(2); err != nil {
			t.Fatal(err)
		}
		if err := l.Truncate(1); err != nil {
			t.Fatal(err)
		}
		checkEpochs(t, l, nil)
		if got, exp := epochFileBytes(t, fs, l), "0\n0\n"; got != exp {
			t.Fatalf("checkpoint = %q, want %q", got, exp)
		}
	})
}

// Reference: Kafka LeaderEpochFileCache.truncateFromStart, the entry that
// covers the new log start offset starts there.
func TestDeleteRecordsClampsFirstEpoch(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		m := openManager(t, fs, dir, nil)
		defer m.Close()
		l, _ := m.Create(testTP, [16]byte{1}, smallConfig())
		appendEpochs(t, l, 0, 1, 1, 2, 2, 5) // 1@0 2@4 5@8
		if _, err := l.DeleteRecordsBefore(3); err != nil {
			t.Fatal(err)
		}
		checkEpochs(t, l, []EpochEntry{{1, 3}, {2, 4}, {5, 8}})
		if _, err := l.DeleteRecordsBefore(6); err != nil {
			t.Fatal(err)
		}
		checkEpochs(t, l, []EpochEntry{{2, 6}, {5, 8}})
		if got, exp := epochFileBytes(t, fs, l), "0\n2\n2 6\n5 8\n"; got != exp {
			t.Fatalf("checkpoint = %q, want %q", got, exp)
		}
		if e, o := l.EndOffsetForEpoch(1); e != -1 || o != -1 {
			t.Fatalf("EndOffsetForEpoch(1) = (%d, %d), want (-1, -1)", e, o)
		}
	})
}

func TestAssignLeaderEpochAtLogEnd(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		m := openManager(t, fs, dir, nil)
		defer m.Close()
		l, _ := m.Create(testTP, [16]byte{1}, smallConfig())
		appendEpochs(t, l, 0, 2, 2) // 2@0, LEO 4
		if err := l.AssignLeaderEpoch(4); err != nil {
			t.Fatal(err)
		}
		if err := l.AssignLeaderEpoch(3); err != nil {
			t.Fatal(err)
		}
		checkEpochs(t, l, []EpochEntry{{2, 0}, {4, 4}})
		if e, o := l.EndOffsetForEpoch(3); e != 2 || o != 4 {
			t.Fatalf("EndOffsetForEpoch(3) = (%d, %d), want (2, 4)", e, o)
		}
		// The next batch written under epoch 4 adds nothing.
		appendEpochs(t, l, 2, 4)
		checkEpochs(t, l, []EpochEntry{{2, 0}, {4, 4}})
		// An epoch that got no batch is replaced by the next one at the
		// same offset.
		if err := l.AssignLeaderEpoch(5); err != nil {
			t.Fatal(err)
		}
		appendEpochs(t, l, 3, 6)
		checkEpochs(t, l, []EpochEntry{{2, 0}, {4, 4}, {6, 6}})
		if e, o := l.EndOffsetForEpoch(5); e != 4 || o != 6 {
			t.Fatalf("EndOffsetForEpoch(5) = (%d, %d), want (4, 6)", e, o)
		}
	})
}

// Readers of the epoch cache never see an entry past the log end or an
// epoch going backwards while appends add epochs.
func TestEpochCacheReadsDuringAppends(t *testing.T) {
	fs := vfs.NewMemFS()
	m := openManager(t, fs, "/data", nil)
	defer m.Close()
	l, _ := m.Create(testTP, [16]byte{1}, smallConfig())
	done := make(chan struct{})
	errs := make(chan string, 1)
	go func() {
		defer close(errs)
		last := int32(-1)
		for {
			select {
			case <-done:
				return
			default:
			}
			e, end := l.EndOffsetForEpoch(1 << 30)
			if e < last || (e >= 0 && end > l.LogEndOffset()) {
				errs <- fmt.Sprintf("EndOffsetForEpoch = (%d, %d) after epoch %d, LEO %d", e, end, last, l.LogEndOffset())
				return
			}
			last = e
		}
	}()
	n := 200
	if raceEnabled {
		n = 60
	}
	for i := 0; i < n; i++ {
		appendEpochs(t, l, i, int32(i/10))
	}
	close(done)
	if msg, ok := <-errs; ok {
		t.Fatal(msg)
	}
	if e, ok := l.LatestEpoch(); !ok || e != int32((n-1)/10) {
		t.Fatalf("LatestEpoch = %d, %v", e, ok)
	}
	if got := len(l.EpochEntries()); got != (n-1)/10+1 {
		t.Fatalf("%d entries, want %d", got, (n-1)/10+1)
	}
}
