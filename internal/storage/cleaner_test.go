package storage

import (
	"context"
	"fmt"
	"math/rand"
	"path/filepath"
	"testing"
	"time"

	"samsa/internal/record"
	"samsa/internal/vfs"
)

// compactConfig is a compact-only config with tiny segments that cleans at
// any dirty ratio.
func compactConfig() Config {
	c := smallConfig()
	c.SegmentBytes = 600
	c.IndexIntervalBytes = 100
	c.CleanupPolicy = CleanupPolicyCompact
	c.MinCleanableDirtyRatio = 0
	c.DeleteRetentionMs = 1000
	c.FileDeleteDelayMs = 0
	c.RetentionMs = 1 // would delete everything if retention applied
	return c
}

func openCleanerManager(t testing.TB, fs vfs.FS, dir string, c *clock, cfg Config) *Manager {
	t.Helper()
	m, err := OpenManager(ManagerConfig{
		FS: fs, Dir: dir, Now: c.Now,
		RetentionCheckInterval: time.Hour,
		DefaultConfig:          cfg,
		CleanerDisable:         true,
	})
	if err != nil {
		t.Fatalf("OpenManager: %v", err)
	}
	return m
}

// stableToEnd lets the cleaner clean l up to its log end, as for a
// partition whose records are all committed and in no open transaction.
func stableToEnd(l *Log) *Log {
	l.SetLastStableOffsetFunc(l.LogEndOffset)
	return l
}

// put appends one record (value nil: a tombstone) and waits for its fsync.
func put(t testing.TB, l *Log, c *clock, codec record.Codec, key string, value []byte) int64 {
	t.Helper()
	bb := record.NewBuilder(codec, c.nowMs())
	bb.Add(record.Record{Key: []byte(key), Value: value})
	b, err := bb.Build()
	if err != nil {
		t.Fatal(err)
	}
	res, err := l.Append(b, 1, false, c.nowMs())
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
	if err := l.WaitDurable(context.Background(), res.LastOffset+1); err != nil {
		t.Fatal(err)
	}
	return res.BaseOffset
}

// scanned is one record read back from the log.
type scanned struct {
	offset int64
	key    string
	value  []byte
}

// scanLog reads the whole log from the log start offset and decodes every
// record, checking CRCs, that offsets strictly increase and that batches
// tile the offsets they claim.
func scanLog(t testing.TB, l *Log) []scanned {
	t.Helper()
	buf := readBytes(t, l, l.LogStartOffset(), 1<<40, 1<<62, true)
	var out []scanned
	prev := int64(-1)
	for len(buf) > 0 {
		b, rest, err := record.Split(buf)
		if err != nil {
			t.Fatalf("split: %v", err)
		}
		buf = rest
		if _, err := b.Validate(record.ValidateOptions{AllowCompacted: true}); err != nil {
			t.Fatalf("batch at %d: %v", b.BaseOffset(), err)
		}
		if b.BaseOffset() <= prev {
			t.Fatalf("batch base %d after offset %d", b.BaseOffset(), prev)
		}
		recs, err := b.Records(0)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			o := r.Offset(b)
			if o <= prev {
				t.Fatalf("offset %d after %d", o, prev)
			}
			prev = o
			out = append(out, scanned{offset: o, key: string(r.Key), value: r.Value})
		}
		prev = b.LastOffset()
	}
	return out
}

// checkLatest asserts that the last record of every key in model is its
// value; a tombstoned key (nil) may be absent or end with a tombstone.
func checkLatest(t testing.TB, recs []scanned, model map[string][]byte) {
	t.Helper()
	last := map[string]scanned{}
	for _, r := range recs {
		last[r.key] = r
	}
	for k, v := range model {
		r, ok := last[k]
		switch {
		case v == nil && ok && r.value != nil:
			t.Fatalf("key %s deleted, but reads %q at %d", k, r.value, r.offset)
		case v != nil && !ok:
			t.Fatalf("key %s lost (want %q)", k, v)
		case v != nil && string(r.value) != string(v):
			t.Fatalf("key %s = %q at %d, want %q", k, r.value, r.offset, v)
		}
	}
}

func TestCleanerKeepsLatestValuePerKey(t *testing.T) {
	for _, codec := range []record.Codec{record.CodecNone, record.CodecZstd} {
		t.Run("codec="+codec.String(), func(t *testing.T) {
			forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
				c := newClock(1_700_000_000_000)
				cfg := compactConfig()
				m := openCleanerManager(t, fs, dir, c, cfg)
				defer func() { m.Close() }()
				l, _ := m.Create(testTP, [16]byte{1}, cfg)
				stableToEnd(l)
				model := map[string][]byte{}
				for i := 0; i < 300; i++ {
					k := fmt.Sprintf("k%d", i%10)
					v := []byte(fmt.Sprintf("v%d", i))
					put(t, l, c, codec, k, v)
					model[k] = v
				}
				before := l.Size()
				leo := l.LogEndOffset()
				m.RunRetention() // compact-only: retention deletes nothing
				if l.LogStartOffset() != 0 {
					t.Fatalf("retention moved log start to %d on a compact-only log", l.LogStartOffset())
				}
				n, err := m.RunCleaner()
				if err != nil || n != 1 {
					t.Fatalf("RunCleaner = %d, %v", n, err)
				}
				if l.LogEndOffset() != leo || l.LogStartOffset() != 0 {
					t.Fatalf("offsets moved: %d..%d", l.LogStartOffset(), l.LogEndOffset())
				}
				if l.Size() >= before/2 {
					t.Fatalf("size %d after cleaning, %d before", l.Size(), before)
				}
				recs := scanLog(t, l)
				checkLatest(t, recs, model)
				// Below the active segment each key appears once.
				active := l.activeSegment().baseOffset
				seen := map[string]int64{}
				for _, r := range recs {
					if r.offset >= active {
						break
					}
					if o, dup := seen[r.key]; dup {
						t.Fatalf("key %s at %d and %d below the active segment", r.key, o, r.offset)
					}
					seen[r.key] = r.offset
				}
				// A read at a cleaned-away offset returns the next batch.
				gap, next := int64(-1), int64(0)
				for _, r := range recs {
					if r.offset > next {
						gap = next
						break
					}
					next = r.offset + 1
				}
				if gap < 0 {
					t.Fatalf("no offset gap after cleaning: %v", recs)
				}
				got := readBytes(t, l, gap, 1, 1<<62, true)
				b, _, err := record.Split(got)
				if err != nil || b.LastOffset() < gap {
					t.Fatalf("Read(%d) in a gap: batch %d..%d, %v", gap, b.BaseOffset(), b.LastOffset(), err)
				}
				if ck := string(readFileBytes(t, fs, filepath.Join(dir, cleanerCheckpointFile))); ck != fmt.Sprintf("0\n1\norders 3 %d\n", active) {
					t.Fatalf("cleaner checkpoint %q, active segment at %d", ck, active)
				}
				// Nothing new is dirty: no second cleaning.
				if n, err := m.RunCleaner(); n != 0 || err != nil {
					t.Fatalf("second RunCleaner = %d, %v", n, err)
				}
				// Reopen: checkpoint and contents survive.
				if err := m.Close(); err != nil {
					t.Fatal(err)
				}
				m = openCleanerManager(t, fs, dir, c, cfg)
				l = m.Log(testTP)
				if l.CleanerCheckpoint() != active {
					t.Fatalf("checkpoint after reopen %d, want %d", l.CleanerCheckpoint(), active)
				}
				checkLatest(t, scanLog(t, l), model)
				if _, ok, err := func() (int64, bool, error) { o, _, ok, err := l.OffsetForTimestamp(0); return o, ok, err }(); !ok || err != nil {
					t.Fatalf("OffsetForTimestamp(0) after cleaning: %v %v", ok, err)
				}
			})
		})
	}
}

func TestCleanerRespectsDirtyRatioAndMinLag(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		c := newClock(1_700_000_000_000)
		cfg := compactConfig()
		cfg.MinCleanableDirtyRatio = 0.5
		cfg.MinCompactionLagMs = 10_000
		m := openCleanerManager(t, fs, dir, c, cfg)
		defer m.Close()
		l, _ := m.Create(testTP, [16]byte{1}, cfg)
		stableToEnd(l)
		for i := 0; i < 100; i++ {
			put(t, l, c, record.CodecNone, fmt.Sprintf("k%d", i%5), []byte(fmt.Sprintf("v%d", i)))
		}
		if r := l.DirtyRatio(c.nowMs()); r != 0 {
			t.Fatalf("dirty ratio %v inside min.compaction.lag.ms", r)
		}
		if n, _ := m.RunCleaner(); n != 0 {
			t.Fatal("cleaned segments younger than min.compaction.lag.ms")
		}
		c.advance(10_001)
		if r := l.DirtyRatio(c.nowMs()); r != 1 {
			t.Fatalf("dirty ratio %v of a never cleaned log, want 1", r)
		}
		if n, err := m.RunCleaner(); n != 1 || err != nil {
			t.Fatalf("RunCleaner = %d, %v", n, err)
		}
		cleanedTo := l.CleanerCheckpoint()
		// A little more dirty data: below the ratio, no cleaning.
		for l.activeSegment().baseOffset == cleanedTo {
			put(t, l, c, record.CodecNone, "k1", []byte("small"))
		}
		c.advance(10_001)
		r := l.DirtyRatio(c.nowMs())
		if r <= 0 || r >= 0.5 {
			t.Fatalf("dirty ratio %v, want in (0, 0.5)", r)
		}
		if n, _ := m.RunCleaner(); n != 0 {
			t.Fatal("cleaned below min.cleanable.dirty.ratio")
		}
		// max.compaction.lag.ms forces it.
		cfg.MaxCompactionLagMs = 5_000
		l.SetConfig(cfg)
		if n, err := m.RunCleaner(); n != 1 || err != nil {
			t.Fatalf("RunCleaner past max.compaction.lag.ms = %d, %v", n, err)
		}
	})
}

func TestCleanerKeepsProducerLastBatchAndTransactions(t *testing.T) {
	fs := vfs.NewMemFS()
	c := newClock(1_700_000_000_000)
	cfg := compactConfig()
	m := openCleanerManager(t, fs, "/data", c, cfg)
	defer m.Close()
	l, _ := m.Create(testTP, [16]byte{1}, cfg)
	stableToEnd(l)
	// Producer 7's only batch holds key a, overwritten later.
	bb := &record.Builder{BaseTimestamp: c.nowMs(), ProducerID: 7, ProducerEpoch: 2, BaseSequence: 40}
	bb.Add(record.Record{Key: []byte("a"), Value: []byte("old")})
	b, _ := bb.Build()
	res, err := l.Append(b, 1, false, c.nowMs())
	if err != nil {
		t.Fatal(err)
	}
	pidBatch := res.BaseOffset
	for i := 0; i < 60; i++ {
		put(t, l, c, record.CodecNone, "a", []byte(fmt.Sprintf("new%d", i)))
	}
	if n, err := m.RunCleaner(); n != 1 || err != nil {
		t.Fatalf("RunCleaner = %d, %v", n, err)
	}
	got := readBytes(t, l, pidBatch, 1, 1<<62, true)
	kept, _, err := record.Split(got)
	if err != nil {
		t.Fatal(err)
	}
	if kept.BaseOffset() != pidBatch || kept.ProducerID() != 7 || kept.ProducerEpoch() != 2 || kept.BaseSequence() != 40 || kept.NumRecords() != 0 {
		t.Fatalf("producer batch after cleaning: base %d pid %d epoch %d seq %d records %d",
			kept.BaseOffset(), kept.ProducerID(), kept.ProducerEpoch(), kept.BaseSequence(), kept.NumRecords())
	}
	if _, err := kept.Validate(record.ValidateOptions{AllowCompacted: true}); err != nil {
		t.Fatal(err)
	}
}

// TestCompactionModel is the compaction model test: random puts and deletes
// over a small key space with tiny segments, cleaning at random points,
// crashes at random points (power cuts through MemFS.CrashClone, and
// failures injected into the Nth rename, remove or directory sync of a
// swap). After every step the log scans with strictly increasing offsets
// and the latest value of every key; at the end, tombstones are gone once
// delete.retention.ms has passed since the cleaning that set their delete
// horizon.
func TestCompactionModel(t *testing.T) {
	seeds := 12
	if raceEnabled {
		seeds = 4
	}
	for seed := 0; seed < seeds; seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			rng := rand.New(rand.NewSource(int64(seed)))
			c := newClock(1_700_000_000_000)
			cfg := compactConfig()
			if seed%3 == 1 {
				cfg.CleanupPolicy = CleanupPolicyCompactDelete
				cfg.RetentionMs = -1
			}
			codec := []record.Codec{record.CodecNone, record.CodecLZ4}[seed%2]
			mem := vfs.NewMemFS()
			inj := vfs.NewInjector()
			open := func() (*Manager, *Log) {
				inj.Reset()
				m := openCleanerManager(t, vfs.WithErrors(mem, inj), "/data", c, cfg)
				l := m.Log(testTP)
				if l == nil {
					var err error
					if l, err = m.Create(testTP, [16]byte{3}, cfg); err != nil {
						t.Fatal(err)
					}
				}
				l.SetConfig(cfg)
				return m, stableToEnd(l)
			}
			m, l := open()
			model := map[string][]byte{}
			check := func(when string) {
				t.Helper()
				recs := scanLog(t, l)
				checkLatest(t, recs, model)
				if len(recs) > 0 && recs[len(recs)-1].offset >= l.LogEndOffset() {
					t.Fatalf("%s: record at %d past the log end %d", when, recs[len(recs)-1].offset, l.LogEndOffset())
				}
			}
			steps := 400
			if raceEnabled {
				steps = 150
			}
			for step := 0; step < steps; step++ {
				switch p := rng.Intn(100); {
				case p < 80:
					k := fmt.Sprintf("key-%d", rng.Intn(12))
					var v []byte
					if rng.Intn(5) > 0 {
						v = []byte(fmt.Sprintf("%s@%d", k, step))
					}
					put(t, l, c, codec, k, v)
					model[k] = v
					c.advance(int64(rng.Intn(50)))
				case p < 90:
					if _, err := m.RunCleaner(); err != nil {
						t.Fatalf("step %d: RunCleaner: %v", step, err)
					}
					check(fmt.Sprintf("step %d after cleaning", step))
				case p < 95:
					// Power cut at a random point, maybe in the middle of a swap.
					if rng.Intn(2) == 0 {
						ops := []vfs.Op{vfs.OpRename, vfs.OpRemove, vfs.OpSyncDir, vfs.OpSync, vfs.OpWrite}
						inj.FailAfter(ops[rng.Intn(len(ops))], rng.Intn(8))
						m.RunCleaner() // may fail and take the log dir offline
					}
					clone := mem.CrashClone()
					crash(m)
					mem = clone
					m, l = open()
					check(fmt.Sprintf("step %d after a power cut", step))
				default:
					// Process crash: everything written reached the OS.
					crash(m)
					m, l = open()
					check(fmt.Sprintf("step %d after a crash", step))
				}
			}
			// Roll past everything written so far and clean: every
			// tombstone is cleanable and gets its delete horizon. Once
			// delete.retention.ms has passed, the next cleaning removes
			// them all. Reference: KIP-534.
			roll := func() {
				start := l.LogEndOffset()
				for l.activeSegment().baseOffset < start {
					put(t, l, c, codec, "filler", []byte("f"))
				}
			}
			roll()
			model["filler"] = []byte("f")
			if n, err := m.RunCleaner(); n != 1 || err != nil {
				t.Fatalf("RunCleaner that sets the horizons = %d, %v", n, err)
			}
			c.advance(cfg.DeleteRetentionMs)
			roll()
			if n, err := m.RunCleaner(); n != 1 || err != nil {
				t.Fatalf("final RunCleaner = %d, %v", n, err)
			}
			recs := scanLog(t, l)
			checkLatest(t, recs, model)
			for _, r := range recs {
				if r.value == nil && r.offset < l.activeSegment().baseOffset {
					t.Fatalf("tombstone of %s at %d survives delete.retention.ms", r.key, r.offset)
				}
			}
			// Read from offset 0 still serves the log (from its start).
			if l.LogStartOffset() == 0 && len(readBytes(t, l, 0, 1, 1<<62, true)) == 0 {
				t.Fatal("Read(0) returned nothing")
			}
			if err := m.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// The steps of a swap, each interrupted: the reopened log has every key's
// latest value and no duplicated offset.
func TestCleanerSwapCrashAtEveryStep(t *testing.T) {
	for _, op := range []vfs.Op{vfs.OpRename, vfs.OpSyncDir, vfs.OpSync} {
		for n := 0; n < 12; n++ {
			t.Run(fmt.Sprintf("fail=%s/after=%d", op, n), func(t *testing.T) {
				mem := vfs.NewMemFS()
				inj := vfs.NewInjector()
				c := newClock(1_700_000_000_000)
				cfg := compactConfig()
				m := openCleanerManager(t, vfs.WithErrors(mem, inj), "/data", c, cfg)
				l, _ := m.Create(testTP, [16]byte{3}, cfg)
				stableToEnd(l)
				model := map[string][]byte{}
				for i := 0; i < 80; i++ {
					k := fmt.Sprintf("k%d", i%6)
					model[k] = []byte(fmt.Sprintf("v%d", i))
					put(t, l, c, record.CodecNone, k, model[k])
				}
				inj.FailAfter(op, n)
				m.RunCleaner()
				for _, clone := range []*vfs.MemFS{mem.CrashClone(), nil} {
					if clone == nil {
						crash(m)
						clone = mem
					}
					m2 := openCleanerManager(t, clone, "/data", c, cfg)
					checkLatest(t, scanLog(t, m2.Log(testTP)), model)
					names, _ := clone.List("/data/orders-3")
					for _, name := range names {
						if ext := filepath.Ext(name); ext == swapSuffix || ext == cleanedSuffix {
							t.Fatalf("leftover %s after recovery", name)
						}
					}
					m2.Close()
				}
			})
		}
	}
}

// Regions handed out by Read before a swap stay readable after it.
func TestCleanerKeepsEarlierReadsReadable(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		c := newClock(1_700_000_000_000)
		cfg := compactConfig()
		cfg.FileDeleteDelayMs = 60000
		m := openCleanerManager(t, fs, dir, c, cfg)
		defer m.Close()
		l, _ := m.Create(testTP, [16]byte{1}, cfg)
		stableToEnd(l)
		for i := 0; i < 100; i++ {
			put(t, l, c, record.CodecNone, fmt.Sprintf("k%d", i%4), []byte(fmt.Sprintf("v%d", i)))
		}
		res, err := l.Read(0, 1<<30, 1<<62, true)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := res.AppendTo(nil)
		if n, err := m.RunCleaner(); n != 1 || err != nil {
			t.Fatalf("RunCleaner = %d, %v", n, err)
		}
		got, err := res.AppendTo(nil)
		if err != nil || string(got) != string(want) {
			t.Fatalf("earlier read after the swap: %d bytes, %v; want %d", len(got), err, len(want))
		}
	})
}

func BenchmarkClean(b *testing.B) {
	for _, keys := range []int{100, 10000} {
		b.Run(fmt.Sprintf("keys=%d/records=50000", keys), func(b *testing.B) {
			cfg := compactConfig()
			cfg.SegmentBytes = 1 << 20
			cfg.IndexIntervalBytes = 4096
			var total int64
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				c := newClock(1_700_000_000_000)
				m := openCleanerManager(b, vfs.NewMemFS(), "/data", c, cfg)
				l, _ := m.Create(testTP, [16]byte{1}, cfg)
				stableToEnd(l)
				for j := 0; j < 50000/10; j++ {
					bb := record.NewBuilder(record.CodecNone, c.nowMs())
					for r := 0; r < 10; r++ {
						bb.Add(record.Record{Key: []byte(fmt.Sprintf("key-%d", (j*10+r)%keys)), Value: make([]byte, 100)})
					}
					batch, _ := bb.Build()
					if _, err := l.Append(batch, 0, false, c.nowMs()); err != nil {
						b.Fatal(err)
					}
				}
				total = l.Size()
				b.StartTimer()
				if n, err := m.RunCleaner(); n != 1 || err != nil {
					b.Fatalf("RunCleaner = %d, %v", n, err)
				}
				b.StopTimer()
				m.Close()
			}
			b.SetBytes(total)
			b.ReportAllocs()
		})
	}
}

// The cleaner leaves a log alone until it knows the last stable offset,
// and then cleans only segments entirely below it: records at or after it
// may still be truncated or belong to an open transaction.
// Reference: Kafka LogCleanerManager.cleanableOffsets.
func TestCleanerStopsBeforeLastStableOffset(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		c := newClock(1_700_000_000_000)
		cfg := compactConfig()
		m := openCleanerManager(t, fs, dir, c, cfg)
		defer m.Close()
		l, _ := m.Create(testTP, [16]byte{1}, cfg)
		for i := 0; i < 200; i++ {
			put(t, l, c, record.CodecNone, fmt.Sprintf("k%d", i%5), []byte(fmt.Sprintf("v%d", i)))
		}
		if n, err := m.RunCleaner(); n != 0 || err != nil {
			t.Fatalf("RunCleaner without a last stable offset = %d, %v", n, err)
		}
		if r := l.DirtyRatio(c.nowMs()); r != 0 {
			t.Fatalf("dirty ratio %v without a last stable offset", r)
		}
		const stable = 100
		l.SetLastStableOffsetFunc(func() int64 { return stable })
		from := l.segs[segmentFor(l.segs, stable)].baseOffset
		before := readBytes(t, l, from, 1<<40, 1<<62, true)
		if n, err := m.RunCleaner(); n != 1 || err != nil {
			t.Fatalf("RunCleaner = %d, %v", n, err)
		}
		if ck := l.CleanerCheckpoint(); ck != from {
			t.Fatalf("cleaner checkpoint %d, want %d (base of the segment holding offset %d)", ck, from, stable)
		}
		if after := readBytes(t, l, from, 1<<40, 1<<62, true); string(after) != string(before) {
			t.Fatalf("segments from offset %d changed: %d bytes, %d before", from, len(after), len(before))
		}
		seen := map[string]bool{}
		for _, r := range scanLog(t, l) {
			if r.offset >= from {
				break
			}
			if seen[r.key] {
				t.Fatalf("key %s twice below %d", r.key, from)
			}
			seen[r.key] = true
		}
	})
}
