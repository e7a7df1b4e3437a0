package storage

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"samsa/internal/vfs"
)

// openLogDirs opens dirs with no background retention.
func openLogDirs(t testing.TB, fs vfs.FS, dirs ...string) *LogDirs {
	t.Helper()
	ld, err := OpenLogDirs(dirs, ManagerConfig{
		FS: fs, RetentionCheckInterval: time.Hour, DefaultConfig: DefaultConfig(),
	})
	if err != nil {
		t.Fatalf("OpenLogDirs: %v", err)
	}
	return ld
}

func tpN(i int) TopicPartition { return TopicPartition{Topic: "t", Partition: int32(i)} }

// dirOf returns the log dir tp's log is in, "" when none holds it.
func dirOf(ld *LogDirs, tp TopicPartition) string {
	if m := ld.DirOf(tp); m != nil {
		return m.Dir()
	}
	return ""
}

// New partitions go to the dir with the fewest partitions, ties to the
// first listed (Kafka's LogManager rule); a reopen finds each where it was
// with its records.
func TestLogDirsPlaceNewPartitionsInTheDirWithFewestAndFindThemAgain(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
		// Two partitions in a before it joins b.
		m := openManager(t, fs, a, nil)
		for i := range 2 {
			if _, err := m.Create(tpN(i), [16]byte{1}, smallConfig()); err != nil {
				t.Fatal(err)
			}
		}
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
		ld := openLogDirs(t, fs, a, b)
		want := map[TopicPartition][]appended{}
		for i := 2; i < 6; i++ {
			l, err := ld.Create(tpN(i), [16]byte{1}, smallConfig())
			if err != nil {
				t.Fatal(err)
			}
			want[tpN(i)] = appendN(t, l, 0, 5, 1_700_000_000_000)
		}
		// b gets 2 and 3 (a has two already), then they alternate: a
		// gets 4 (a tie goes to the first dir), b gets 5.
		wantDir := map[int]string{0: a, 1: a, 2: b, 3: b, 4: a, 5: b}
		for i, d := range wantDir {
			if got := dirOf(ld, tpN(i)); got != d {
				t.Errorf("partition %d in %q, want %q", i, got, d)
			}
		}
		// Creating an existing partition returns it from its dir.
		again, err := ld.Create(tpN(3), [16]byte{1}, smallConfig())
		if err != nil || again != ld.Log(tpN(3)) || dirOf(ld, tpN(3)) != b {
			t.Fatalf("Create of an existing partition: %v, %v in %s", again, err, dirOf(ld, tpN(3)))
		}
		if n := len(ld.Logs()); n != 6 {
			t.Fatalf("Logs: %d, want 6", n)
		}
		if err := ld.Close(); err != nil {
			t.Fatal(err)
		}
		ld = openLogDirs(t, fs, a, b)
		defer ld.Close()
		for i, d := range wantDir {
			if got := dirOf(ld, tpN(i)); got != d {
				t.Errorf("after reopen partition %d in %q, want %q", i, got, d)
			}
		}
		for tp, w := range want {
			checkLog(t, ld.Log(tp), w)
		}
		// Delete removes it from its dir; a new Create balances again.
		if err := ld.Delete(tpN(5)); err != nil {
			t.Fatal(err)
		}
		if ld.Log(tpN(5)) != nil {
			t.Fatal("deleted log still there")
		}
		if _, err := fs.Stat(filepath.Join(b, "t-5")); err == nil {
			t.Fatal("deleted log's directory still there")
		}
	})
}

// A partition found in two dirs is refused at open, naming both.
func TestLogDirsRefusePartitionFoundInTwoDirs(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
		for _, d := range []string{a, b} {
			m := openManager(t, fs, d, nil)
			if _, err := m.Create(testTP, [16]byte{1}, smallConfig()); err != nil {
				t.Fatal(err)
			}
			if err := m.Close(); err != nil {
				t.Fatal(err)
			}
		}
		ld, err := OpenLogDirs([]string{a, b}, ManagerConfig{FS: fs, RetentionCheckInterval: time.Hour, DefaultConfig: DefaultConfig()})
		if !errors.Is(err, ErrDuplicateLog) {
			if ld != nil {
				ld.Close()
			}
			t.Fatalf("OpenLogDirs = %v, want ErrDuplicateLog", err)
		}
		for _, s := range []string{a, b, "orders-3"} {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("error %q does not name %s", err, s)
			}
		}
		if _, err := OpenLogDirs([]string{a, a}, ManagerConfig{FS: fs}); err == nil {
			t.Fatal("a dir listed twice opened")
		}
	})
}

// A dir whose writes fail (EROFS here) goes offline alone: its logs refuse
// appends and reads with ErrLogDirOffline, are not created again
// elsewhere, and new partitions go to the other dir, whose logs keep
// working. With every dir offline, Create fails.
func TestLogDirsOneFailedDirLeavesTheOthersServing(t *testing.T) {
	forEachFS(t, func(t *testing.T, base vfs.FS, dir string) {
		a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
		inj := vfs.NewInjector()
		inj.Only(b)
		inj.FailWith(syscall.EROFS)
		ld := openLogDirs(t, vfs.WithErrors(base, inj), a, b)
		defer ld.Close()
		la, err := ld.Create(tpN(0), [16]byte{1}, smallConfig())
		if err != nil {
			t.Fatal(err)
		}
		lb, err := ld.Create(tpN(1), [16]byte{1}, smallConfig())
		if err != nil {
			t.Fatal(err)
		}
		if dirOf(ld, tpN(0)) != a || dirOf(ld, tpN(1)) != b {
			t.Fatalf("placed in %s and %s", dirOf(ld, tpN(0)), dirOf(ld, tpN(1)))
		}
		wantA := appendN(t, la, 0, 3, 1_700_000_000_000)
		appendN(t, lb, 0, 3, 1_700_000_000_000)

		inj.FailWriteAfter(0)
		inj.FailSyncAfter(0)
		_, err = lb.Append(makeBatch(t, 9, 2, 1_700_000_000_000), 7, false, 1_700_000_000_000)
		if err == nil {
			// A write may land in the page cache; the sync fails.
			err = lb.WaitDurable(t.Context(), lb.LogEndOffset())
		}
		if !errors.Is(err, ErrLogDirOffline) && !errors.Is(err, syscall.EROFS) {
			t.Fatalf("append in the failed dir: %v", err)
		}
		mb := ld.DirOf(tpN(1))
		waitFor(t, 5*time.Second, "dir b offline", mb.Offline)
		if !errors.Is(mb.OfflineErr(), syscall.EROFS) {
			t.Fatalf("OfflineErr = %v, want EROFS", mb.OfflineErr())
		}
		select {
		case <-mb.OfflineNotify():
		default:
			t.Fatal("OfflineNotify not closed")
		}
		if _, err := lb.Read(0, 1<<20, 1<<62, true); !errors.Is(err, ErrLogDirOffline) {
			t.Fatalf("read in the failed dir: %v", err)
		}
		if _, _, _, err := lb.OffsetForTimestamp(0); !errors.Is(err, ErrLogDirOffline) {
			t.Fatalf("OffsetForTimestamp in the failed dir: %v", err)
		}
		if _, err := ld.Create(tpN(1), [16]byte{1}, smallConfig()); !errors.Is(err, ErrLogDirOffline) {
			t.Fatalf("Create of a partition of the failed dir: %v", err)
		}
		if ld.DirOf(tpN(0)).Offline() || ld.Offline() {
			t.Fatal("dir a or the whole set offline")
		}
		wantA = append(wantA, appendN(t, la, 3, 3, 1_700_000_000_000)...)
		if err := la.WaitDurable(t.Context(), la.LogEndOffset()); err != nil {
			t.Fatal(err)
		}
		checkLog(t, la, wantA)
		for i := 2; i < 5; i++ {
			if _, err := ld.Create(tpN(i), [16]byte{1}, smallConfig()); err != nil {
				t.Fatal(err)
			}
			if d := dirOf(ld, tpN(i)); d != a {
				t.Fatalf("new partition %d in %s, want the online dir %s", i, d, a)
			}
		}
		// Deleting a log of the failed dir forgets it without IO there.
		if err := ld.Delete(tpN(1)); err != nil {
			t.Fatalf("Delete in the failed dir: %v", err)
		}
		if ld.Log(tpN(1)) != nil {
			t.Fatal("deleted log of the failed dir still listed")
		}

		// Dir a fails too: the set is offline and creates nothing.
		inj.Only("")
		_, err = la.Append(makeBatch(t, 9, 2, 1_700_000_000_000), 7, false, 1_700_000_000_000)
		if err == nil {
			err = la.WaitDurable(t.Context(), la.LogEndOffset())
		}
		if !errors.Is(err, ErrLogDirOffline) && !errors.Is(err, syscall.EROFS) {
			t.Fatalf("append in dir a after it failed: %v", err)
		}
		waitFor(t, 5*time.Second, "dir a offline", ld.DirOf(tpN(0)).Offline)
		if !ld.Offline() {
			t.Fatal("every dir failed, set not offline")
		}
		if _, err := ld.Create(TopicPartition{Topic: "u", Partition: 0}, [16]byte{2}, smallConfig()); !errors.Is(err, ErrLogDirOffline) {
			t.Fatalf("Create with every dir offline: %v", err)
		}
	})
}

// Partitions created at once (a broker hosting a new topic creates its
// partitions in parallel) spread over the dirs as if created one by one.
func TestLogDirsSpreadPartitionsCreatedAtOnce(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		dirs := []string{filepath.Join(dir, "a"), filepath.Join(dir, "b"), filepath.Join(dir, "c")}
		ld := openLogDirs(t, fs, dirs...)
		defer ld.Close()
		const n = 30
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for i := range n {
			wg.Go(func() {
				if _, err := ld.Create(tpN(i), [16]byte{1}, smallConfig()); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		for _, m := range ld.Dirs() {
			if got := len(m.Logs()); got != n/len(dirs) {
				t.Errorf("%s holds %d partitions, want %d", m.Dir(), got, n/len(dirs))
			}
		}
	})
}

// A log moves to another dir while it takes appends: the sealed segments
// are copied first, the rest under the log's writer lock, and the new
// log in the other dir has every record at the same offset, in order,
// also after a reopen. The old log takes no more writes but stays
// readable for reads under way. Reference: KIP-113.
func TestLogMoveKeepsOffsetsAndRecordsAcrossAppendsAndReopen(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
		ld := openLogDirs(t, fs, a, b)
		l, err := ld.Create(testTP, [16]byte{7}, smallConfig())
		if err != nil {
			t.Fatal(err)
		}
		if dirOf(ld, testTP) != a {
			t.Fatalf("created in %s", dirOf(ld, testTP))
		}
		want := appendN(t, l, 0, 40, 1_700_000_000_000)
		if err := l.WaitDurable(t.Context(), l.LogEndOffset()); err != nil {
			t.Fatal(err)
		}
		mv, err := ld.StartMove(testTP, b)
		if err != nil || mv == nil {
			t.Fatalf("StartMove: %v, %v", mv, err)
		}
		if _, err := ld.StartMove(testTP, b); !errors.Is(err, ErrMoveInProgress) {
			t.Fatalf("a second StartMove: %v, want ErrMoveInProgress", err)
		}
		if err := mv.Copy(t.Context()); err != nil {
			t.Fatal(err)
		}
		if n, off := mv.Copied(); n == 0 || off == 0 {
			t.Fatal("Copy copied nothing of a log with sealed segments")
		}
		// Appends during the move, some not yet fsynced at Finish.
		want = append(want, appendN(t, l, 40, 25, 1_700_000_000_000)...)
		nl, err := mv.Finish()
		if err != nil {
			t.Fatal(err)
		}
		if dirOf(ld, testTP) != b || ld.Log(testTP) != nl || ld.Moving(testTP) != nil {
			t.Fatalf("after the move: in %s, log %p (new %p), moving %v", dirOf(ld, testTP), ld.Log(testTP), nl, ld.Moving(testTP))
		}
		checkLog(t, nl, want)
		if nl.LogStartOffset() != l.LogStartOffset() || nl.TopicID() != l.TopicID() {
			t.Fatalf("log start %d/%d, topic id %v/%v", nl.LogStartOffset(), l.LogStartOffset(), nl.TopicID(), l.TopicID())
		}
		checkLog(t, l, want) // the old log still serves reads under way
		if _, err := l.Append(makeBatch(t, 99, 1, 0), 7, false, 0); !errors.Is(err, ErrClosed) {
			t.Fatalf("append to the old log: %v, want ErrClosed", err)
		}
		if _, err := fs.Stat(filepath.Join(a, partitionDir(testTP))); err == nil {
			t.Fatal("the old directory is still live")
		}
		want = append(want, appendN(t, nl, 65, 5, 1_700_000_000_000)...)
		if err := ld.Close(); err != nil {
			t.Fatal(err)
		}
		ld = openLogDirs(t, fs, a, b)
		defer ld.Close()
		if dirOf(ld, testTP) != b {
			t.Fatalf("after reopen in %q", dirOf(ld, testTP))
		}
		checkLog(t, ld.Log(testTP), want)
		if names, _ := fs.List(a); slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "orders") }) {
			t.Fatalf("leftovers in the old dir: %v", names)
		}
	})
}

// A move whose log is truncated and rewritten after the copy started
// copies it all again: the new log holds the rewritten records.
func TestLogMoveAfterTruncationCopiesTheLogAgain(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
		ld := openLogDirs(t, fs, a, b)
		defer ld.Close()
		l, err := ld.Create(testTP, [16]byte{7}, smallConfig())
		if err != nil {
			t.Fatal(err)
		}
		want := appendN(t, l, 0, 40, 1_700_000_000_000)
		if err := l.WaitDurable(t.Context(), l.LogEndOffset()); err != nil {
			t.Fatal(err)
		}
		mv, err := ld.StartMove(testTP, b)
		if err != nil {
			t.Fatal(err)
		}
		if err := mv.Copy(t.Context()); err != nil {
			t.Fatal(err)
		}
		cut := want[10].base
		if err := l.Truncate(cut); err != nil {
			t.Fatal(err)
		}
		want = append(want[:10], appendN(t, l, 200, 30, 1_700_000_000_000)...)
		nl, err := mv.Finish()
		if err != nil {
			t.Fatal(err)
		}
		checkLog(t, nl, want)
	})
}

// A crash before the commit leaves the old log live and the copy is
// removed at open; a crash after the commit (the old directory renamed
// away, the copy not yet renamed into place) brings the copy up as the
// log. Either way exactly one log is live.
func TestLogMoveInterruptedLeavesExactlyOneLiveLog(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
		ld := openLogDirs(t, fs, a, b)
		l, err := ld.Create(testTP, [16]byte{7}, smallConfig())
		if err != nil {
			t.Fatal(err)
		}
		want := appendN(t, l, 0, 30, 1_700_000_000_000)
		mv, err := ld.StartMove(testTP, b)
		if err != nil {
			t.Fatal(err)
		}
		if err := mv.Copy(t.Context()); err != nil {
			t.Fatal(err)
		}
		if err := ld.Close(); err != nil { // stopped before Finish
			t.Fatal(err)
		}
		ld = openLogDirs(t, fs, a, b)
		if dirOf(ld, testTP) != a {
			t.Fatalf("after a move stopped before its commit: in %q", dirOf(ld, testTP))
		}
		if names, _ := fs.List(b); slices.ContainsFunc(names, func(n string) bool { return strings.HasSuffix(n, futureSuffix) }) {
			t.Fatalf("uncommitted copy left in %s: %v", b, names)
		}
		checkLog(t, ld.Log(testTP), want)

		mv, err = ld.StartMove(testTP, b)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := mv.Finish(); err != nil {
			t.Fatal(err)
		}
		if err := ld.Close(); err != nil {
			t.Fatal(err)
		}
		// The state between the commit and the rename of the copy.
		if err := fs.Rename(filepath.Join(b, partitionDir(testTP)), filepath.Join(b, partitionDir(testTP)+".0123-future")); err != nil {
			t.Fatal(err)
		}
		ld = openLogDirs(t, fs, a, b)
		defer ld.Close()
		if dirOf(ld, testTP) != b {
			t.Fatalf("after a move stopped after its commit: in %q", dirOf(ld, testTP))
		}
		checkLog(t, ld.Log(testTP), want)
	})
}

// Deleting a partition during its move removes the copy too, so a later
// open does not bring it back.
func TestLogDirsDeleteDuringAMoveRemovesTheCopy(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
		ld := openLogDirs(t, fs, a, b)
		l, err := ld.Create(testTP, [16]byte{7}, smallConfig())
		if err != nil {
			t.Fatal(err)
		}
		appendN(t, l, 0, 30, 1_700_000_000_000)
		if err := l.WaitDurable(t.Context(), l.LogEndOffset()); err != nil {
			t.Fatal(err)
		}
		mv, err := ld.StartMove(testTP, b)
		if err != nil {
			t.Fatal(err)
		}
		if err := mv.Copy(t.Context()); err != nil {
			t.Fatal(err)
		}
		if err := ld.Delete(testTP); err != nil {
			t.Fatal(err)
		}
		if _, err := mv.Finish(); err == nil {
			t.Fatal("a move of a deleted log finished")
		}
		if err := ld.Close(); err != nil {
			t.Fatal(err)
		}
		ld = openLogDirs(t, fs, a, b)
		defer ld.Close()
		if l := ld.Log(testTP); l != nil {
			t.Fatalf("deleted partition back in %s", dirOf(ld, testTP))
		}
	})
}
