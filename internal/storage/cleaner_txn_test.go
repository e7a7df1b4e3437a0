package storage

import (
	"fmt"
	"maps"
	"testing"

	"samsa/internal/record"
	"samsa/internal/vfs"
)

// txnWriter appends transactional batches and markers to a log the way a
// partition leader does: an ABORT marker's transaction goes to the
// .txnindex. It remembers the offsets of aborted records.
type txnWriter struct {
	t       *testing.T
	l       *Log
	c       *clock
	first   map[int64]int64 // producer -> first offset of its open transaction
	aborted map[int64]bool  // offsets of records of aborted transactions
	pending map[int64][]int64
}

func newTxnWriter(t *testing.T, l *Log, c *clock) *txnWriter {
	return &txnWriter{t: t, l: l, c: c, first: map[int64]int64{}, aborted: map[int64]bool{}, pending: map[int64][]int64{}}
}

// data appends one record with key and value (nil: a tombstone), in a
// transaction of pid when pid >= 0, and returns its offset.
func (w *txnWriter) data(pid int64, codec record.Codec, key string, value []byte) int64 {
	w.t.Helper()
	bb := record.NewBuilder(codec, w.c.nowMs())
	if pid >= 0 {
		bb.ProducerID, bb.ProducerEpoch, bb.BaseSequence, bb.Transactional = pid, 0, 0, true
	}
	bb.Add(record.Record{Key: []byte(key), Value: value})
	b, err := bb.Build()
	if err != nil {
		w.t.Fatal(err)
	}
	res, err := w.l.Append(b, 1, false, w.c.nowMs())
	if err != nil {
		w.t.Fatal(err)
	}
	if pid >= 0 {
		if _, open := w.first[pid]; !open {
			w.first[pid] = res.BaseOffset
		}
		w.pending[pid] = append(w.pending[pid], res.BaseOffset)
	}
	w.c.advance(1)
	return res.BaseOffset
}

// end appends pid's COMMIT or ABORT marker and returns its offset.
func (w *txnWriter) end(pid int64, commit bool) int64 {
	w.t.Helper()
	typ := record.ControlAbort
	if commit {
		typ = record.ControlCommit
	}
	b, err := record.BuildEndTxnMarker(pid, 0, w.c.nowMs(), record.EndTxnMarker{Type: typ})
	if err != nil {
		w.t.Fatal(err)
	}
	res, err := w.l.Append(b, 1, false, w.c.nowMs())
	if err != nil {
		w.t.Fatal(err)
	}
	if !commit {
		lso := res.BaseOffset + 1
		for p, f := range w.first {
			if p != pid {
				lso = min(lso, f)
			}
		}
		abortLSO(w.t, w.l, pid, w.first[pid], res.BaseOffset, lso)
		for _, o := range w.pending[pid] {
			w.aborted[o] = true
		}
	}
	delete(w.first, pid)
	delete(w.pending, pid)
	w.c.advance(1)
	return res.BaseOffset
}

// committedView reads the log below end as a read_committed consumer
// does (Reference: KIP-98, the consumer drops the batches of a producer
// from an aborted transaction's first offset to its ABORT marker, with the
// aborted transactions Fetch returns) and returns each key's latest value
// and every record it sees by offset.
func committedView(t *testing.T, l *Log, end int64) (latest map[string]string, seen map[int64]string) {
	t.Helper()
	start := l.LogStartOffset()
	aborted := l.CollectAbortedTxns(start, end)
	active := map[int64]bool{}
	latest, seen = map[string]string{}, map[int64]string{}
	buf := readBytes(t, l, start, 1<<40, 1<<62, true)
	for len(buf) > 0 {
		b, rest, err := record.Split(buf)
		if err != nil {
			t.Fatal(err)
		}
		buf = rest
		if b.BaseOffset() >= end {
			break
		}
		for len(aborted) > 0 && aborted[0].FirstOffset <= b.LastOffset() {
			active[aborted[0].ProducerID] = true
			aborted = aborted[1:]
		}
		if b.Control() {
			if m, err := b.EndTxnMarker(0); err == nil && !m.Commit() {
				delete(active, b.ProducerID())
			}
			continue
		}
		if b.Transactional() && active[b.ProducerID()] {
			continue
		}
		recs, err := b.Records(0)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			v := "<nil>"
			if r.Value != nil {
				v = string(r.Value)
			}
			latest[string(r.Key)] = v
			seen[r.Offset(b)] = string(r.Key) + "=" + v
		}
	}
	for k, v := range latest {
		if v == "<nil>" {
			delete(latest, k)
		}
	}
	return latest, seen
}

// markerHorizons returns the end-transaction markers below end by offset,
// each with its delete horizon (-1: none).
func markerHorizons(t *testing.T, l *Log, end int64) map[int64]int64 {
	t.Helper()
	out := map[int64]int64{}
	buf := readBytes(t, l, l.LogStartOffset(), 1<<40, 1<<62, true)
	for len(buf) > 0 {
		b, rest, err := record.Split(buf)
		if err != nil {
			t.Fatal(err)
		}
		buf = rest
		if b.BaseOffset() >= end || !b.Control() {
			continue
		}
		if _, err := b.Validate(record.ValidateOptions{AllowCompacted: true}); err != nil {
			t.Fatalf("marker at %d: %v", b.BaseOffset(), err)
		}
		h, ok := b.DeleteHorizonMs()
		if !ok {
			h = -1
		}
		out[b.BaseOffset()] = h
	}
	return out
}

// TestCleanerRemovesAbortedTransactionsAndLaterTheirMarkers: Reference:
// KIP-98 and KIP-534, Kafka Cleaner and CleanedTransactionMetadata. A log
// holds committed and aborted transactions of several producers among
// plain records, and an open transaction. Cleaning removes the aborted
// records, compacts committed ones by key like any other, leaves the open
// transaction alone and serves read_committed the same latest values.
// Markers stay while their transaction has batches before them; after
// that they get a delete horizon and go once delete.retention.ms has
// passed since it, with their .txnindex entries.
func TestCleanerRemovesAbortedTransactionsAndLaterTheirMarkers(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		c := newClock(1_700_000_000_000)
		cfg := compactConfig()
		m := openCleanerManager(t, fs, dir, c, cfg)
		defer func() { m.Close() }()
		l, _ := m.Create(testTP, [16]byte{1}, cfg)
		stable := int64(0)
		l.SetLastStableOffsetFunc(func() int64 { return stable })
		w := newTxnWriter(t, l, c)
		none := record.CodecNone
		for i := range 5 {
			w.data(-1, none, fmt.Sprintf("%c", 'a'+i), []byte("plain-1"))
		}
		// Producer 1 commits a and b; producer 2 aborts a and c, then
		// commits e; producer 3 aborts a tombstone of d.
		w.data(1, record.CodecZstd, "a", []byte("p1-a"))
		w.data(2, none, "a", []byte("p2-a"))
		w.data(1, none, "b", []byte("p1-b"))
		w.data(2, record.CodecLZ4, "c", []byte("p2-c"))
		w.data(3, none, "d", nil)
		commit1 := w.end(1, true)
		abort2 := w.end(2, false)
		abort3 := w.end(3, false)
		w.data(-1, none, "a", []byte("plain-2"))
		w.data(1, none, "b", []byte("p1-b2"))
		lastCommit1 := w.end(1, true)
		w.data(2, none, "e", []byte("p2-e"))
		commit2 := w.end(2, true)
		w.data(-1, record.CodecLZ4, "c", nil) // a committed tombstone
		for i := range 10 {
			w.data(-1, none, "filler", []byte(fmt.Sprintf("f%d", i)))
		}
		// Producer 4's transaction stays open: the last stable offset.
		stable = w.data(4, none, "a", []byte("p4-open"))
		for l.activeSegment().baseOffset <= stable {
			w.data(-1, none, "filler", []byte("g"))
		}
		wantLatest, before := committedView(t, l, stable)
		if wantLatest["a"] != "plain-2" || wantLatest["c"] != "" || wantLatest["d"] != "plain-1" || wantLatest["e"] != "p2-e" {
			t.Fatalf("model: %v", wantLatest)
		}
		from := l.segs[segmentFor(l.segs, stable)].baseOffset
		openBytes := readBytes(t, l, from, 1<<40, 1<<62, true)

		check := func(when string) {
			t.Helper()
			latest, seen := committedView(t, l, stable)
			if !maps.Equal(latest, wantLatest) {
				t.Fatalf("%s: read_committed latest values %v, before cleaning %v", when, latest, wantLatest)
			}
			for o, kv := range seen {
				if before[o] != kv {
					t.Fatalf("%s: read_committed sees %s at %d, before cleaning %q", when, kv, o, before[o])
				}
			}
			for _, r := range scanLog(t, l) {
				if w.aborted[r.offset] {
					t.Fatalf("%s: aborted record %s at %d survives", when, r.key, r.offset)
				}
			}
			if got := readBytes(t, l, from, 1<<40, 1<<62, true); string(got) != string(openBytes) {
				t.Fatalf("%s: segments from the open transaction's changed", when)
			}
		}
		clean := func(when string) {
			t.Helper()
			if n, err := m.RunCleaner(); n != 1 || err != nil {
				t.Fatalf("%s: RunCleaner = %d, %v", when, n, err)
			}
		}

		clean("first cleaning")
		check("first cleaning")
		// Every marker had batches of its transaction before it.
		hs := markerHorizons(t, l, stable)
		for _, o := range []int64{commit1, abort2, abort3, lastCommit1, commit2} {
			if h, ok := hs[o]; !ok || h != -1 {
				t.Fatalf("marker at %d after the first cleaning: present %v, horizon %d", o, ok, h)
			}
		}
		if got := l.CollectAbortedTxns(0, stable); len(got) != 2 {
			t.Fatalf("aborted transactions after the first cleaning: %+v", got)
		}

		// Producer 4 commits; the cleaner may go on past it. Clean until
		// the markers of transactions with no batch left are gone, time
		// moving half of delete.retention.ms between cleanings.
		w.end(4, true)
		prev := markerHorizons(t, l, stable)
		for pass := 2; ; pass++ {
			start := l.LogEndOffset()
			for l.activeSegment().baseOffset < start {
				w.data(-1, none, "filler", []byte("h"))
			}
			stable = l.LogEndOffset()
			wantLatest, before = committedView(t, l, stable)
			from = l.activeSegment().baseOffset
			openBytes = readBytes(t, l, from, 1<<40, 1<<62, true)
			when := fmt.Sprintf("cleaning %d", pass)
			clean(when)
			check(when)
			hs = checkMarkers(t, l, stable, prev, c.nowMs(), cfg.DeleteRetentionMs)
			for _, o := range []int64{lastCommit1, commit2, abort3} {
				if h, ok := hs[o]; !ok || h != -1 {
					t.Fatalf("%s: marker at %d after its producer's last batch: present %v, horizon %d", when, o, ok, h)
				}
			}
			_, ok1 := hs[commit1]
			_, ok2 := hs[abort2]
			if !ok1 && !ok2 {
				break
			}
			if pass == 8 {
				t.Fatalf("%s: markers with no batch left not removed: %v", when, hs)
			}
			prev = hs
			c.advance(cfg.DeleteRetentionMs / 2)
		}
		for _, a := range l.CollectAbortedTxns(0, stable) {
			if a.LastOffset == abort2 {
				t.Fatalf("aborted transaction %+v still indexed after its marker went", a)
			}
		}
		// The committed tombstone of c went with its horizon as well.
		for _, r := range scanLog(t, l) {
			if r.key == "c" && r.offset < from {
				t.Fatalf("key c at %d (%q) after its tombstone's horizon", r.offset, r.value)
			}
		}

		// Reopened, the log reads the same.
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
		m = openCleanerManager(t, fs, dir, c, cfg)
		l = m.Log(testTP)
		check("reopen")
		if got := markerHorizons(t, l, stable); !maps.Equal(got, hs) {
			t.Fatalf("markers after reopen %v, before %v", got, hs)
		}
	})
}

// checkMarkers checks the markers below end after a cleaning at nowMs,
// given those before it (prev, from markerHorizons), and returns them:
//   - a marker with a delete horizon has no batch of its transaction
//     before it, and got the horizon nowMs + delete.retention.ms from this
//     cleaning or kept the one it had;
//   - a marker that went had a horizon at or before nowMs;
//   - an aborted transaction is indexed while its ABORT marker has
//     batches of the transaction before it, and no longer once the
//     marker has a horizon.
func checkMarkers(t *testing.T, l *Log, end int64, prev map[int64]int64, nowMs, retentionMs int64) map[int64]int64 {
	t.Helper()
	hs := markerHorizons(t, l, end)
	for o, h := range prev {
		if _, ok := hs[o]; !ok && (h < 0 || h > nowMs) {
			t.Fatalf("marker at %d removed at %d with delete horizon %d", o, nowMs, h)
		}
	}
	indexed := map[int64]bool{}
	for _, a := range l.CollectAbortedTxns(0, end) {
		indexed[a.LastOffset] = true
	}
	open := map[int64]bool{} // producers with transactional batches since their last marker
	buf := readBytes(t, l, l.LogStartOffset(), 1<<40, 1<<62, true)
	for len(buf) > 0 {
		b, rest, err := record.Split(buf)
		if err != nil {
			t.Fatal(err)
		}
		buf = rest
		if b.BaseOffset() >= end {
			break
		}
		pid, o := b.ProducerID(), b.BaseOffset()
		if !b.Control() {
			if b.Transactional() {
				open[pid] = true
			}
			continue
		}
		h := hs[o]
		if h >= 0 && open[pid] {
			t.Fatalf("marker at %d has delete horizon %d with batches of its transaction before it", o, h)
		}
		if p, ok := prev[o]; h >= 0 && (!ok || p != h) && (p >= 0 || h != nowMs+retentionMs) {
			t.Fatalf("marker at %d: delete horizon %d, before %d (present %v), cleaned at %d", o, h, p, ok, nowMs)
		}
		mk, err := b.EndTxnMarker(0)
		if err != nil {
			t.Fatalf("marker at %d: %v", o, err)
		}
		if !mk.Commit() && (open[pid] && !indexed[o] || indexed[o] && h >= 0) {
			t.Fatalf("ABORT at %d: indexed %v, batches before it %v, delete horizon %d", o, indexed[o], open[pid], h)
		}
		delete(open, pid)
	}
	return hs
}
