package storage

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"

	"samsa/internal/record"
	"samsa/internal/vfs"
)

// abortAt records an aborted transaction of pid from first to the marker at
// last, with the last stable offset last+1 (no other transaction open).
func abortAt(t testing.TB, l *Log, pid, first, last int64) AbortedTxn {
	t.Helper()
	return abortLSO(t, l, pid, first, last, last+1)
}

// abortLSO is abortAt with the last stable offset after the marker.
func abortLSO(t testing.TB, l *Log, pid, first, last, lso int64) AbortedTxn {
	t.Helper()
	a := AbortedTxn{ProducerID: pid, FirstOffset: first, LastOffset: last, LastStableOffset: lso}
	if err := l.AppendAbortedTxn(a); err != nil {
		t.Fatalf("AppendAbortedTxn(%+v): %v", a, err)
	}
	return a
}

func wantAborted(t testing.TB, l *Log, start, end int64, want ...AbortedTxn) {
	t.Helper()
	got := l.CollectAbortedTxns(start, end)
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("CollectAbortedTxns(%d, %d) = %+v, want %+v", start, end, got, want)
	}
}

// txnLog appends 40 batches over several segments and aborts three
// transactions: one in the first segment, two in later ones.
func txnLog(t testing.TB, l *Log) (all []appended, aborted []AbortedTxn) {
	t.Helper()
	all = appendN(t, l, 0, 10, 1000)
	aborted = append(aborted, abortAt(t, l, 1, all[2].base, all[9].last))
	all = append(all, appendN(t, l, 10, 20, 1000)...)
	// Producer 1's second transaction is still open at this marker.
	aborted = append(aborted, abortLSO(t, l, 2, all[12].base, all[29].base, all[25].base))
	all = append(all, appendN(t, l, 30, 10, 1000)...)
	aborted = append(aborted, abortAt(t, l, 1, all[25].base, all[39].last))
	return all, aborted
}

// TestAbortedTxnsReadBackAfterRestart: Reference: Kafka TransactionIndex,
// LocalLog.collectAbortedTransactions. The .txnindex of the segment that
// holds each ABORT marker answers read_committed fetches, before and after
// a clean restart.
func TestAbortedTxnsReadBackAfterRestart(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		m := openManager(t, fs, dir, nil)
		l, _ := m.Create(testTP, [16]byte{1}, smallConfig())
		all, ab := txnLog(t, l)
		if n := len(segmentFiles(t, fs, l.Dir(), txnIndexSuffix)); n != 3 && n != 2 {
			t.Fatalf("%d .txnindex files, want one per segment with a marker", n)
		}
		if n, segs := len(segmentFiles(t, fs, l.Dir(), txnIndexSuffix)), len(segmentFiles(t, fs, l.Dir(), logSuffix)); n >= segs {
			t.Fatalf("%d .txnindex files for %d segments: segments without aborted transactions need none", n, segs)
		}
		check := func(l *Log) {
			t.Helper()
			end := l.LogEndOffset()
			wantAborted(t, l, 0, end, ab...)
			wantAborted(t, l, 0, all[2].base)                           // before the first began
			wantAborted(t, l, all[9].last+1, all[12].base)              // between
			wantAborted(t, l, all[9].last, all[9].last+1, ab[0])        // the marker itself
			wantAborted(t, l, all[20].base, all[21].base, ab[1])        // inside one, marker later
			wantAborted(t, l, all[29].base+1, end, ab[2])               // after the second's marker
			wantAborted(t, l, all[26].base, all[27].base, ab[1], ab[2]) // both open there
		}
		check(l)
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
		m2 := openManager(t, fs, dir, nil)
		defer m2.Close()
		check(m2.Log(testTP))
		// An entry must come after the last one.
		l2 := m2.Log(testTP)
		if err := l2.AppendAbortedTxn(AbortedTxn{ProducerID: 5, FirstOffset: 0, LastOffset: all[39].last}); err == nil {
			t.Fatal("an entry at the last marker's offset was accepted")
		}
		if err := l2.AppendAbortedTxn(AbortedTxn{ProducerID: 5, FirstOffset: 0, LastOffset: l2.LogEndOffset()}); err == nil {
			t.Fatal("an entry past the log end was accepted")
		}
	})
}

// TestAbortedTxnsAfterPowerCut: SyncAbortedTxns makes entries durable; a
// power cut before it may lose entries (the partition replays their
// markers) but never leaves a torn or doubled one, and a torn tail written
// behind the storage's back is cut.
func TestAbortedTxnsAfterPowerCut(t *testing.T) {
	mem := vfs.NewMemFS()
	m := openManager(t, mem, "/data", nil)
	l, _ := m.Create(testTP, [16]byte{1}, smallConfig())
	all, ab := txnLog(t, l)
	if err := l.WaitDurable(context.Background(), l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	if err := l.SyncAbortedTxns(); err != nil {
		t.Fatal(err)
	}
	more := appendN(t, l, 40, 3, 1000)
	abortAt(t, l, 9, more[0].base, more[2].last) // not synced
	clone := mem.CrashClone()
	crash(m)

	m2 := openManager(t, clone, "/data", nil)
	l2 := m2.Log(testTP)
	got := l2.CollectAbortedTxns(0, l2.LogEndOffset())
	if len(got) < len(ab) || !reflect.DeepEqual(got[:len(ab)], ab) {
		t.Fatalf("after power cut: %+v, want at least %+v", got, ab)
	}
	for _, a := range got {
		if a.LastOffset >= l2.LogEndOffset() {
			t.Fatalf("entry %+v past the log end %d", a, l2.LogEndOffset())
		}
	}
	// The partition replays from its snapshot: drop and re-add.
	if err := l2.TruncateAbortedTxnsFrom(more[0].base); err != nil {
		t.Fatal(err)
	}
	wantAborted(t, l2, 0, l2.LogEndOffset(), ab...)
	m2.Close()

	// A torn tail (half an entry) is cut at open.
	name := filepath.Join("/data", "orders-3", segmentName(segBaseOf(t, clone, all[39].last))+txnIndexSuffix)
	data := readFileBytes(t, clone, name)
	writeFileBytes(t, clone, name, append(data, make([]byte, abortedTxnSize/2)...))
	m3 := openManager(t, clone, "/data", nil)
	defer m3.Close()
	wantAborted(t, m3.Log(testTP), 0, m3.Log(testTP).LogEndOffset(), ab...)
	if got := len(readFileBytes(t, clone, name)); got != len(data) {
		t.Fatalf(".txnindex is %d bytes after open, want %d (torn tail cut)", got, len(data))
	}
}

// segBaseOf returns the base offset of the segment holding offset.
func segBaseOf(t testing.TB, fs vfs.FS, offset int64) int64 {
	t.Helper()
	names := segmentFiles(t, fs, "/data/orders-3", logSuffix)
	base := int64(-1)
	for _, n := range names {
		var b int64
		fmt.Sscanf(n, "%020d.log", &b)
		if b <= offset && b > base {
			base = b
		}
	}
	return base
}

// TestAbortedTxnsFollowTruncationAndRetention: Log.Truncate drops the
// entries whose markers it removes (also on disk), and deleting segments
// (DeleteRecords, retention) deletes their .txnindex.
func TestAbortedTxnsFollowTruncationAndRetention(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		m := openManager(t, fs, dir, nil)
		l, _ := m.Create(testTP, [16]byte{1}, smallConfig())
		all, ab := txnLog(t, l)
		if err := l.Truncate(all[39].base); err != nil {
			t.Fatal(err)
		}
		wantAborted(t, l, 0, l.LogEndOffset(), ab[:2]...)
		// The offset is free again for a new marker.
		next := appendN(t, l, 39, 1, 1000)
		ab2 := abortAt(t, l, 4, all[35].base, next[0].last)
		wantAborted(t, l, 0, l.LogEndOffset(), ab[0], ab[1], ab2)

		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
		m = openManager(t, fs, dir, nil)
		defer m.Close()
		l = m.Log(testTP)
		wantAborted(t, l, 0, l.LogEndOffset(), ab[0], ab[1], ab2)

		// Delete up to the segment after the first marker's.
		l.mu.RLock()
		start := l.segs[segmentFor(l.segs, ab[0].LastOffset)+1].baseOffset
		l.mu.RUnlock()
		before := len(segmentFiles(t, fs, l.Dir(), txnIndexSuffix))
		if _, err := l.DeleteRecordsBefore(start); err != nil {
			t.Fatal(err)
		}
		wantAborted(t, l, l.LogStartOffset(), l.LogEndOffset(), ab[1], ab2)
		if after := len(segmentFiles(t, fs, l.Dir(), txnIndexSuffix)); after != before-1 {
			t.Fatalf("%d .txnindex files after deleting the first segments, want %d", after, before-1)
		}
	})
}

// TestCleanerSwapKeepsAbortedTxns: a cleaned segment keeps the aborted
// transactions of the segments it replaces whose markers it does not find
// removable (here no marker is in the log), whatever step of the swap a
// crash interrupts.
func TestCleanerSwapKeepsAbortedTxns(t *testing.T) {
	for _, op := range []vfs.Op{vfs.OpRename, vfs.OpSyncDir, vfs.OpSync} {
		for n := 0; n < 14; n++ {
			t.Run(fmt.Sprintf("fail=%s/after=%d", op, n), func(t *testing.T) {
				mem := vfs.NewMemFS()
				inj := vfs.NewInjector()
				c := newClock(1_700_000_000_000)
				cfg := compactConfig()
				m := openCleanerManager(t, vfs.WithErrors(mem, inj), "/data", c, cfg)
				l, _ := m.Create(testTP, [16]byte{3}, cfg)
				stableToEnd(l)
				model := map[string][]byte{}
				var ab []AbortedTxn
				first := int64(0)
				for i := 0; i < 80; i++ {
					k := fmt.Sprintf("k%d", i%6)
					model[k] = []byte(fmt.Sprintf("v%d", i))
					off := put(t, l, c, record.CodecNone, k, model[k])
					if i%20 == 19 {
						ab = append(ab, abortAt(t, l, int64(i), first, off))
						first = off + 1
					}
				}
				if err := l.SyncAbortedTxns(); err != nil {
					t.Fatal(err)
				}
				inj.FailAfter(op, n)
				m.RunCleaner()
				for _, clone := range []*vfs.MemFS{mem.CrashClone(), nil} {
					if clone == nil {
						crash(m)
						clone = mem
					}
					m2 := openCleanerManager(t, clone, "/data", c, cfg)
					l2 := m2.Log(testTP)
					checkLatest(t, scanLog(t, l2), model)
					wantAborted(t, l2, 0, l2.LogEndOffset(), ab...)
					m2.Close()
				}
			})
		}
	}
}

// TestCollectAbortedTxnsWhileAppending runs read_committed lookups
// against appends, truncations and retention (run it with -race): every
// lookup sees entries in marker order, each overlapping its range.
func TestCollectAbortedTxnsWhileAppending(t *testing.T) {
	m := openManager(t, vfs.NewMemFS(), "/data", nil)
	defer m.Close()
	l, _ := m.Create(testTP, [16]byte{1}, smallConfig())
	done := make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		defer close(errc)
		for {
			select {
			case <-done:
				return
			default:
			}
			start, end := l.LogStartOffset(), l.LogEndOffset()
			got := l.CollectAbortedTxns(start, end)
			for i, a := range got {
				if a.LastOffset < start || a.FirstOffset >= end || (i > 0 && a.LastOffset <= got[i-1].LastOffset) {
					errc <- fmt.Errorf("CollectAbortedTxns(%d, %d) = %+v", start, end, got)
					return
				}
			}
		}
	}()
	for i := 0; i < 200; i++ {
		b := appendN(t, l, i, 1, 1000)
		if i%3 == 2 {
			abortAt(t, l, int64(i), b[0].base, b[0].last)
		}
		if i%50 == 49 {
			if err := l.Truncate(b[0].base); err != nil {
				t.Fatal(err)
			}
			if _, err := l.DeleteRecordsBefore(l.LogEndOffset() / 2); err != nil {
				t.Fatal(err)
			}
		}
	}
	close(done)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// TestRetentionDeletesTxnIndexWithSegment: retention.ms deletes a
// segment's .txnindex with it, and lookups from the new log start no longer
// see its aborted transactions; later ones stay.
func TestRetentionDeletesTxnIndexWithSegment(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		c := newClock(1_000_000)
		m := openManager(t, fs, dir, c)
		defer m.Close()
		cfg := smallConfig()
		cfg.RetentionMs = 5000
		l, _ := m.Create(testTP, [16]byte{}, cfg)
		old := appendN(t, l, 0, 3, c.nowMs())
		abortAt(t, l, 1, old[0].base, old[2].last)
		old = append(old, appendN(t, l, 3, 20, c.nowMs())...)
		c.advance(10_000)
		recent := appendN(t, l, 40, 40, c.nowMs())
		kept := abortAt(t, l, 2, recent[30].base, recent[39].last)
		m.RunRetention()
		if l.LogStartOffset() <= old[2].last {
			t.Fatalf("log start %d: the old segment was not deleted", l.LogStartOffset())
		}
		wantAborted(t, l, l.LogStartOffset(), l.LogEndOffset(), kept)
		l.mu.RLock()
		first := l.segs[0].baseOffset
		l.mu.RUnlock()
		for _, n := range segmentFiles(t, fs, l.Dir(), txnIndexSuffix) {
			var base int64
			fmt.Sscanf(n, "%020d", &base)
			if base < first {
				t.Fatalf(".txnindex %s left below the first segment %d", n, first)
			}
		}
		if n := len(segmentFiles(t, fs, l.Dir(), txnIndexSuffix)); n != 1 {
			t.Fatalf("%d .txnindex files, want 1 (the recent marker's segment)", n)
		}
	})
}
