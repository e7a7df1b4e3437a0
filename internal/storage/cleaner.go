package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"sort"
	"time"

	"samsa/internal/record"
	"samsa/internal/vfs"
)

// cleanerCheckpointFile holds, per compacted partition, the offset below
// which the log was cleaned (Kafka's name and checkpoint text format).
const cleanerCheckpointFile = "cleaner-offset-checkpoint"

// errCleanAborted reports that a segment being cleaned changed under the
// cleaner (truncation, retention, DeleteRecords); the cleaned copy is
// thrown away and the next pass starts over.
var errCleanAborted = errors.New("storage: clean aborted by a concurrent change")

// cleanerWriteChunk is how many bytes the cleaner buffers before a write.
const cleanerWriteChunk = 1 << 20

// cleanerLoop runs RunCleaner until Close, sleeping log.cleaner.backoff.ms
// whenever a pass found nothing to clean.
func (m *Manager) cleanerLoop() {
	m.every(m.cleanerBackoff, nil, func(bool) time.Duration {
		n, err := m.RunCleaner()
		if err != nil {
			m.logger.Warn("storage: cleaner pass", "dir", m.dir, "err", err)
		}
		if n > 0 {
			return 0 // more may be due; Kafka's cleaner only backs off when idle
		}
		return m.cleanerBackoff
	})
}

// RunCleaner runs one log cleaner pass: every log whose cleanup.policy
// includes "compact" and that is due (dirty ratio at least
// min.cleanable.dirty.ratio, or its dirty part older than
// max.compaction.lag.ms) is compacted, and the cleaner checkpoint is
// written. It returns how many logs were cleaned. Passes are serialised;
// a pass blocks appends to a log only while it swaps cleaned segments in.
// Tests call it to run a pass deterministically.
func (m *Manager) RunCleaner() (cleaned int, err error) {
	m.cleanerMu.Lock()
	defer m.cleanerMu.Unlock()
	now := m.now().UnixMilli()
	var errs []error
	for _, l := range m.Logs() {
		if m.isClosed() {
			break
		}
		ok, err := l.clean(now)
		switch {
		case errors.Is(err, errCleanAborted):
			m.logger.Debug("storage: clean aborted", "dir", l.dir)
		case err != nil:
			errs = append(errs, fmt.Errorf("storage: clean %s: %w", l.dir, err))
		case ok:
			cleaned++
		}
	}
	if cleaned > 0 && !m.isClosed() && !m.offline.Load() {
		if err := m.writeCleanerCheckpoint(); err != nil {
			errs = append(errs, err)
		}
	}
	return cleaned, errors.Join(errs...)
}

// writeCleanerCheckpoint writes cleaner-offset-checkpoint for every open log
// the cleaner has cleaned.
func (m *Manager) writeCleanerCheckpoint() error {
	offs := map[TopicPartition]int64{}
	for _, l := range m.Logs() {
		if o := l.cleanedTo.Load(); o > 0 {
			offs[l.tp] = o
		}
	}
	m.ckMu.Lock()
	defer m.ckMu.Unlock()
	return writeCheckpoint(m.fs, m.dir, cleanerCheckpointFile, offs)
}

// srcSegment is a segment to clean with what the plan read of it under
// Log.mu.
type srcSegment struct {
	seg   *segment
	size  int64
	next  int64 // next offset: last offset of its last batch + 1
	maxTs int64 // largest timestamp, -1 when empty
	// txns is a copy of the segment's .txnindex entries; the swap checks
	// they did not change meanwhile.
	txns []AbortedTxn
}

// cleanPlan is what one cleaning of a log covers: segments [0, len(segs))
// are rewritten, segments [dirty, len(segs)) feed the offset map, and end
// (the first uncleanable offset) becomes the cleaner checkpoint.
type cleanPlan struct {
	segs  []srcSegment
	dirty int
	end   int64
	ratio float64
	// aborted holds the aborted transactions with records in the cleanable
	// segments, ordered by first offset.
	aborted []AbortedTxn
}

// SetLastStableOffsetFunc tells the cleaner where the partition's last
// stable offset is: f returns the smaller of the high watermark and the
// first offset of the oldest open transaction (Reference: KIP-98, Kafka
// LogCleanerManager.cleanableOffsets). The cleaner never cleans a segment
// that holds an offset at or after it, so it never decides about records
// that may still be truncated or whose transaction is still open. Until
// it is called the cleaner leaves the log alone, since the log alone
// cannot tell. f is called from the cleaner's goroutine with no storage
// lock held; it must not block on IO. It is safe for concurrent use.
func (l *Log) SetLastStableOffsetFunc(f func() int64) { l.lastStable.Store(&f) }

// cleanableEnd returns the offset the cleaner must stay below, and false
// while the log has no SetLastStableOffsetFunc.
func (l *Log) cleanableEnd() (int64, bool) {
	f := l.lastStable.Load()
	if f == nil {
		return 0, false
	}
	return (*f)(), true
}

// DirtyRatio returns the log's cleanable dirty ratio at nowMs: bytes of
// cleanable segments at or after the cleaner checkpoint over bytes of all
// cleanable segments (not the active one, entirely below the last stable
// offset, and older than min.compaction.lag.ms). It is 0 when nothing is
// cleanable.
func (l *Log) DirtyRatio(nowMs int64) float64 {
	end, ok := l.cleanableEnd()
	if !ok {
		return 0
	}
	p, _ := l.planClean(l.cfg.Load(), nowMs, end)
	return p.ratio
}

// CleanerCheckpoint returns the offset below which the log has been
// cleaned (0 when it never was).
func (l *Log) CleanerCheckpoint() int64 { return l.cleanedTo.Load() }

// planClean decides whether l is due for cleaning at nowMs and what the
// cleaning covers: never a segment with offsets at or after stableEnd.
func (l *Log) planClean(cfg *Config, nowMs, stableEnd int64) (cleanPlan, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	segs := l.segs
	k := 0 // segments [0, k) are cleanable: never the active one
	for ; k < len(segs)-1; k++ {
		s := segs[k]
		if s.nextOffset.Load() > stableEnd {
			break
		}
		if cfg.MinCompactionLagMs > 0 && s.maxTimestamp >= 0 && nowMs-s.maxTimestamp < cfg.MinCompactionLagMs {
			break
		}
	}
	if k == 0 {
		return cleanPlan{}, false
	}
	p := cleanPlan{end: segs[k].baseOffset, dirty: k}
	firstDirty := l.cleanedTo.Load()
	if firstDirty < segs[0].baseOffset || firstDirty > l.logEnd.Load() {
		firstDirty = segs[0].baseOffset // unknown or stale (truncation)
	}
	var clean, dirty int64
	for i := 0; i < k; i++ {
		s := segs[i]
		p.segs = append(p.segs, srcSegment{seg: s, size: s.size.Load(), next: s.nextOffset.Load(), maxTs: s.maxTimestamp,
			txns: slices.Clone(s.txnIndex.entries)})
		if s.baseOffset < firstDirty {
			clean += s.size.Load()
			continue
		}
		if p.dirty == k {
			p.dirty = i
		}
		dirty += s.size.Load()
	}
	if dirty == 0 {
		return p, false
	}
	// NB: an aborted transaction's marker may lie past p.end (the active
	// segment), so the search goes on until an entry shows that no later
	// transaction begins below p.end.
	for i := 0; i < len(segs); i++ {
		var complete bool
		p.aborted, complete = segs[i].txnIndex.collectAborted(p.aborted, segs[0].baseOffset, p.end)
		if complete {
			break
		}
	}
	sort.SliceStable(p.aborted, func(i, j int) bool { return p.aborted[i].FirstOffset < p.aborted[j].FirstOffset })
	p.ratio = float64(dirty) / float64(clean+dirty)
	first := segs[p.dirty]
	overdue := cfg.MaxCompactionLagMs < math.MaxInt64 && first.firstBatchTs >= 0 &&
		nowMs-first.firstBatchTs > cfg.MaxCompactionLagMs
	return p, p.ratio >= cfg.MinCleanableDirtyRatio || overdue
}

// cleanState is the offset map of one cleaning and its scratch buffers.
type cleanState struct {
	// offsets maps each key in the dirty section to its latest offset.
	offsets map[string]int64
	// lastOfProducer maps a producer id to the base offset of its last
	// data batch in the cleanable section, or of its last control batch
	// when it has no data batch there; that batch is kept (empty if need
	// be) so the producer's sequence and epoch survive, as Kafka does.
	lastOfProducer map[int64]int64
	// txns follows transactions through the rewrite.
	txns *txnTracker
	// nowMs and horizonMs are the time of the cleaning and the delete
	// horizon it gives batches with tombstones or a removable marker:
	// nowMs + delete.retention.ms.
	nowMs, horizonMs int64
	keep             []record.Record
	raw, body        []byte
	out              []byte
}

// txnTracker follows the transactions of the cleanable segments while a
// walk reads their batches in offset order, as Kafka's
// CleanedTransactionMetadata does: it tells which data batches belong to
// aborted transactions (from the .txnindex) and which markers have no
// batch of their transaction left before them. It is not safe for
// concurrent use.
type txnTracker struct {
	pending []AbortedTxn // by first offset, not reached by the walk yet
	// aborted maps a producer to its aborted transaction that the walk
	// is inside of; seen reports that a batch of it was read.
	aborted map[int64]*abortedRun
	// committed holds the producers with batches read of a transaction
	// not aborted whose marker the walk has not reached.
	committed map[int64]bool
}

type abortedRun struct {
	txn  AbortedTxn
	seen bool
}

func newTxnTracker(aborted []AbortedTxn) *txnTracker {
	return &txnTracker{pending: aborted, aborted: map[int64]*abortedRun{}, committed: map[int64]bool{}}
}

// reach makes the aborted transactions that begin at or before offset
// current.
func (t *txnTracker) reach(offset int64) {
	for len(t.pending) > 0 && t.pending[0].FirstOffset <= offset {
		a := t.pending[0]
		t.pending = t.pending[1:]
		if t.aborted[a.ProducerID] == nil {
			t.aborted[a.ProducerID] = &abortedRun{txn: a}
		}
	}
}

// onData reads data batch b and reports whether it belongs to an aborted
// transaction.
func (t *txnTracker) onData(b record.Batch) bool {
	t.reach(b.LastOffset())
	if !b.Transactional() {
		return false
	}
	if r := t.aborted[b.ProducerID()]; r != nil {
		r.seen = true
		return true
	}
	t.committed[b.ProducerID()] = true
	return false
}

// onControl reads control batch b and reports whether it may go: an
// end-transaction marker whose transaction has no batch left before it
// (none was read since the previous marker), or an empty control batch.
// Other control records stay.
func (t *txnTracker) onControl(b record.Batch) bool {
	t.reach(b.LastOffset())
	if b.NumRecords() == 0 {
		return true
	}
	m, err := b.EndTxnMarker(maxDecompressed)
	if err != nil {
		return false
	}
	pid := b.ProducerID()
	if !m.Commit() {
		r := t.aborted[pid]
		delete(t.aborted, pid)
		return r == nil || !r.seen
	}
	had := t.committed[pid]
	delete(t.committed, pid)
	return !had
}

// clean compacts l at nowMs when its cleanup.policy includes "compact" and
// it is due. It reports whether it cleaned.
func (l *Log) clean(nowMs int64) (bool, error) {
	cfg := l.cfg.Load()
	if !cfg.Compact() || l.checkWritable() != nil {
		return false, nil
	}
	end, ok := l.cleanableEnd()
	if !ok {
		return false, nil
	}
	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	p, due := l.planClean(cfg, nowMs, end)
	if !due {
		return false, nil
	}
	st, err := l.buildOffsetMap(p)
	if err != nil {
		return false, err
	}
	st.txns = newTxnTracker(p.aborted)
	st.nowMs = nowMs
	st.horizonMs = nowMs + min(cfg.DeleteRetentionMs, math.MaxInt64-nowMs)
	for _, g := range groupSegments(p.segs, cfg) {
		if l.m != nil && l.m.isClosed() {
			return false, ErrClosed
		}
		if err := l.cleanGroup(g, st, cfg); err != nil {
			return false, err
		}
	}
	l.cleanedTo.Store(p.end)
	var before, after int64
	for _, sg := range p.segs {
		before += sg.size
	}
	l.mu.RLock()
	for _, sg := range l.segs {
		if sg.baseOffset < p.end {
			after += sg.size.Load()
		}
	}
	l.mu.RUnlock()
	l.logger.Info("storage: cleaned log", "topic", l.tp.Topic, "partition", l.tp.Partition, "cleaned_to", p.end,
		"dirty_ratio", p.ratio, "segments", len(p.segs), "bytes_before", before, "bytes_after", after,
		"bytes_removed", before-after, "aborted_txns", len(p.aborted), "dir", l.dir)
	return true, nil
}

// buildOffsetMap reads the cleanable segments: records of the dirty ones
// go into the key -> latest offset map, every batch's producer into the
// last-batch map. Records of aborted transactions and control records do
// not enter the map, so they never shadow anything; committed
// transactional records do (Reference: Kafka Cleaner.buildOffsetMap).
func (l *Log) buildOffsetMap(p cleanPlan) (*cleanState, error) {
	st := &cleanState{offsets: map[string]int64{}, lastOfProducer: map[int64]int64{}}
	txns := newTxnTracker(p.aborted)
	lastControl := map[int64]int64{}
	for i, src := range p.segs {
		dirty := i >= p.dirty
		err := forEachBatch(src.seg.log, src.size, func(b record.Batch) error {
			pid := b.ProducerID()
			if b.Control() {
				txns.onControl(b)
				if pid >= 0 {
					lastControl[pid] = b.BaseOffset()
				}
				return nil
			}
			if pid >= 0 {
				st.lastOfProducer[pid] = b.BaseOffset()
			}
			if txns.onData(b) || !dirty {
				return nil
			}
			recs, err := b.Records(maxDecompressed)
			if err != nil {
				return err
			}
			for i := range recs {
				if recs[i].Key != nil {
					st.offsets[string(recs[i].Key)] = recs[i].Offset(b)
				}
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("storage: read %s: %w", src.seg.path(logSuffix), err)
		}
	}
	for pid, o := range lastControl {
		if _, ok := st.lastOfProducer[pid]; !ok {
			st.lastOfProducer[pid] = o
		}
	}
	return st, nil
}

// groupSegments splits segs into runs whose combined size fits
// segment.bytes (a cleaned group is never larger than its sources) and
// whose offsets fit a segment's int32 relative offsets.
func groupSegments(segs []srcSegment, cfg *Config) [][]srcSegment {
	var out [][]srcSegment
	for i := 0; i < len(segs); {
		j, size := i+1, segs[i].size
		for j < len(segs) && size+segs[j].size <= min(cfg.SegmentBytes, maxSegmentSize) &&
			segs[j].next-1-segs[i].seg.baseOffset <= math.MaxInt32 {
			size += segs[j].size
			j++
		}
		out = append(out, segs[i:j])
		i = j
	}
	return out
}

// forEachBatch calls fn with every batch of the first size bytes of f, in
// order. The batch aliases a buffer that is reused after fn returns.
func forEachBatch(f vfs.File, size int64, fn func(b record.Batch) error) error {
	var buf []byte
	var pos int64 // file position of buf[0]
	off := 0      // bytes of buf consumed
	for pos+int64(off) < size {
		b, _, err := record.Split(buf[off:])
		if errors.Is(err, record.ErrShortBatch) {
			rest := len(buf) - off
			need := cleanerWriteChunk
			if rest >= record.LogOverhead {
				b := record.Batch(buf[off:])
				need = max(need, record.LogOverhead+int(b.BatchLength()))
			}
			nb := make([]byte, need)
			copy(nb, buf[off:])
			pos += int64(off)
			off = 0
			n := int(min(int64(need-rest), size-pos-int64(rest)))
			if n <= 0 {
				return record.MarkCorrupt(fmt.Errorf("storage: torn batch at %d", pos))
			}
			if _, err := f.ReadAt(nb[rest:rest+n], pos+int64(rest)); err != nil {
				return err
			}
			buf = nb[:rest+n]
			continue
		}
		if err != nil {
			return fmt.Errorf("storage: batch at %d: %w", pos+int64(off), err)
		}
		if err := fn(b); err != nil {
			return fmt.Errorf("storage: batch at %d: %w", pos+int64(off), err)
		}
		off += len(b)
	}
	return nil
}

// filterBatch returns what is left of b after cleaning, reading it
// through st.txns in offset order: b itself when it stays as it is, nil
// when it goes, or a re-encoded batch (st.out) with the surviving records
// under b's header (same base offset, lastOffsetDelta, producer fields and
// codec). keepEmpty keeps an empty batch header when no record survives;
// the last batch of each producer is kept that way too. marker reports
// that b is a control batch that may go, kept only until its delete
// horizon.
//
// The rules, Kafka's (Reference: KIP-98, KIP-534, Kafka Cleaner.cleanInto):
//   - the records of an aborted transaction go;
//   - a record goes when a later offset of its key is in the offset map;
//   - a tombstone, or a marker with no batch of its transaction left
//     before it, first gets a delete horizon, nowMs + delete.retention.ms,
//     kept in the base timestamp with the delete horizon attribute; a
//     later cleaning at or after the horizon removes it.
func (st *cleanState) filterBatch(b record.Batch, keepEmpty bool) (out record.Batch, marker bool, err error) {
	if pid := b.ProducerID(); pid >= 0 && st.lastOfProducer[pid] == b.BaseOffset() {
		keepEmpty = true
	}
	horizon, hasHorizon := b.DeleteHorizonMs()
	if b.Control() {
		if !st.txns.onControl(b) {
			return b, false, nil
		}
		switch {
		case !hasHorizon:
			recs, err := b.Records(maxDecompressed)
			if err != nil {
				return nil, true, err
			}
			st.keep = append(st.keep[:0], recs...)
			out, err := st.encode(b, st.horizonMs)
			return out, true, err
		case st.nowMs < horizon, keepEmpty && b.NumRecords() == 0:
			return b, true, nil
		case keepEmpty:
			st.keep = st.keep[:0]
			out, err := st.encode(b, b.BaseTimestamp())
			return out, true, err
		}
		return nil, true, nil
	}
	aborted := st.txns.onData(b)
	if aborted && b.NumRecords() == 0 && keepEmpty {
		return b, false, nil
	}
	var recs []record.Record
	if !aborted {
		if recs, err = b.Records(maxDecompressed); err != nil {
			return nil, false, err
		}
	}
	st.keep = st.keep[:0]
	tombstones := false
	for i := range recs {
		r := &recs[i]
		if r.Key != nil {
			if latest, ok := st.offsets[string(r.Key)]; ok && r.Offset(b) < latest {
				continue
			}
			if r.Value == nil {
				if hasHorizon && st.nowMs >= horizon {
					continue
				}
				tombstones = true
			}
		}
		st.keep = append(st.keep, *r)
	}
	needHorizon := tombstones && !hasHorizon
	if !aborted && len(st.keep) == len(recs) && !needHorizon {
		return b, false, nil
	}
	if len(st.keep) == 0 && !keepEmpty {
		return nil, false, nil
	}
	base := b.BaseTimestamp()
	if needHorizon {
		base = st.horizonMs
	}
	out, err = st.encode(b, base)
	return out, false, err
}

// encode builds a batch with st.keep under b's header into st.out, with
// base timestamp base: when it differs from b's, it is a delete horizon,
// the attribute says so and the records' timestamp deltas are rebased. An
// empty batch is written uncompressed, as Kafka writes empty batch headers.
func (st *cleanState) encode(b record.Batch, base int64) (record.Batch, error) {
	shift := b.BaseTimestamp() - base
	st.raw = st.raw[:0]
	for i := range st.keep {
		st.keep[i].TimestampDelta += shift
		st.raw = st.appendRecord(st.raw, &st.keep[i])
	}
	codec := b.Codec()
	if len(st.keep) == 0 {
		codec = record.CodecNone
	}
	out := append(st.out[:0], b[:record.HeaderSize]...)
	out, err := record.Compress(codec, out, st.raw)
	if err != nil {
		return nil, err
	}
	st.out = out
	be := binary.BigEndian
	be.PutUint32(out[8:12], uint32(len(out)-record.LogOverhead))
	attrs := uint16(b.Attributes())&^record.AttrCompressionMask | uint16(codec)&record.AttrCompressionMask
	if base != b.BaseTimestamp() {
		attrs |= record.AttrDeleteHorizon
		be.PutUint64(out[27:35], uint64(base))
	}
	be.PutUint16(out[21:23], attrs)
	be.PutUint32(out[57:61], uint32(len(st.keep)))
	nb := record.Batch(out)
	nb.UpdateCRC()
	return nb, nil
}

// appendRecord appends r in the in-batch encoding (zigzag varints, length
// first), keeping its offset and timestamp deltas.
func (st *cleanState) appendRecord(dst []byte, r *record.Record) []byte {
	body := append(st.body[:0], byte(r.Attributes))
	body = binary.AppendVarint(body, r.TimestampDelta)
	body = binary.AppendVarint(body, int64(r.OffsetDelta))
	body = appendNullableBytes(body, r.Key)
	body = appendNullableBytes(body, r.Value)
	body = binary.AppendVarint(body, int64(len(r.Headers)))
	for _, h := range r.Headers {
		body = binary.AppendVarint(body, int64(len(h.Key)))
		body = append(body, h.Key...)
		body = appendNullableBytes(body, h.Value)
	}
	st.body = body
	dst = binary.AppendVarint(dst, int64(len(body)))
	return append(dst, body...)
}

func appendNullableBytes(dst, b []byte) []byte {
	if b == nil {
		return binary.AppendVarint(dst, -1)
	}
	return append(binary.AppendVarint(dst, int64(len(b))), b...)
}

// cleanedWriter writes a cleaned segment's .cleaned files and builds its
// indexes the way recovery does.
type cleanedWriter struct {
	fs  vfs.FS
	seg *segment
	cfg *Config
	buf []byte
	pos int64
}

func newCleanedWriter(fs vfs.FS, dir string, base int64, cfg *Config) (*cleanedWriter, error) {
	seg := newSegment(fs, dir, base, cfg)
	// NB: append mode (OpenReadWrite), so that appends after a Truncate
	// that makes this segment active land at its new end.
	open := func(suffix string) (vfs.File, error) {
		name := seg.path(suffix) + cleanedSuffix
		f, err := fs.OpenReadWrite(name)
		if err != nil {
			return nil, fmt.Errorf("storage: create %s: %w", name, err)
		}
		if err := f.Truncate(0); err != nil {
			f.Close()
			return nil, fmt.Errorf("storage: create %s: %w", name, err)
		}
		return f, nil
	}
	var err error
	if seg.log, err = open(logSuffix); err != nil {
		return nil, err
	}
	if err := seg.index.file.openAs(seg.path(indexSuffix) + cleanedSuffix); err != nil {
		seg.log.Close()
		return nil, err
	}
	if err := seg.timeIndex.file.openAs(seg.path(timeIndexSuffix) + cleanedSuffix); err != nil {
		seg.log.Close()
		seg.index.file.close()
		return nil, err
	}
	return &cleanedWriter{fs: fs, seg: seg, cfg: cfg}, nil
}

// add appends b to the cleaned segment.
func (w *cleanedWriter) add(b record.Batch) error {
	seg, size := w.seg, int64(len(b))
	maxTs, last := b.MaxTimestamp(), b.LastOffset()
	if seg.maxTimestamp < 0 || maxTs > seg.maxTimestamp {
		seg.maxTimestamp, seg.offsetOfMaxTs = maxTs, last
	}
	if seg.firstBatchTs < 0 {
		seg.firstBatchTs = maxTs
	}
	if seg.bytesSinceIndex > w.cfg.IndexIntervalBytes {
		seg.index.entries = append(seg.index.entries, offsetEntry{rel: int32(last - seg.baseOffset), pos: int32(w.pos)})
		appendTimeEntry(seg)
		seg.bytesSinceIndex = 0
	}
	seg.bytesSinceIndex += size
	seg.nextOffset.Store(last + 1)
	w.buf = append(w.buf, b...)
	w.pos += size
	if len(w.buf) >= cleanerWriteChunk {
		return w.flush()
	}
	return nil
}

func (w *cleanedWriter) flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	if _, err := w.seg.log.Write(w.buf); err != nil {
		return fmt.Errorf("storage: write %s: %w", w.seg.path(logSuffix)+cleanedSuffix, err)
	}
	w.buf = w.buf[:0]
	return nil
}

// finish writes the rest, the index files, and fsyncs all three files.
func (w *cleanedWriter) finish() error {
	if err := w.flush(); err != nil {
		return err
	}
	seg := w.seg
	seg.size.Store(w.pos)
	appendTimeEntry(seg)
	if err := writeIndexFiles(seg); err != nil {
		return err
	}
	if err := seg.log.Sync(); err != nil {
		return fmt.Errorf("storage: sync cleaned segment %s: %w", seg.path(logSuffix), err)
	}
	// NB: released, the index files are opened again under their final
	// names, which the swap gives them.
	if err := seg.index.file.release(); err != nil {
		return err
	}
	return seg.timeIndex.file.release()
}

// discard closes the cleaned files and removes them (as .cleaned or .swap).
func (w *cleanedWriter) discard() {
	w.seg.close()
	for _, suf := range segmentSuffixes {
		for _, state := range []string{cleanedSuffix, swapSuffix} {
			if err := w.fs.Remove(w.seg.path(suf) + state); err != nil && !os.IsNotExist(err) {
				// Recovery removes what is left.
				continue
			}
		}
	}
}

// cleanGroup rewrites the segments of g into one cleaned segment and swaps
// it in. A group whose rewrite changes nothing is left alone.
func (l *Log) cleanGroup(g []srcSegment, st *cleanState, cfg *Config) error {
	w, err := newCleanedWriter(l.fs, l.dir, g[0].seg.baseOffset, cfg)
	if err != nil {
		return err
	}
	changed := len(g) > 1
	last := g[len(g)-1]
	// removable holds the offsets of the markers that may go: the
	// aborted transactions they end have no records left, so their
	// .txnindex entries go too (Kafka keeps only the entries of markers
	// it keeps for their batches).
	removable := map[int64]bool{}
	for gi, src := range g {
		lastSeg := gi == len(g)-1
		err := forEachBatch(src.seg.log, src.size, func(b record.Batch) error {
			// The group's last batch always stays (empty if need be), so
			// the cleaned segment ends where its sources ended: recovery of
			// a .swap relies on it to find the segments it replaces.
			keepEmpty := lastSeg && b.LastOffset() == last.next-1
			out, marker, err := st.filterBatch(b, keepEmpty)
			if err != nil {
				return err
			}
			if marker {
				removable[b.BaseOffset()] = true
			}
			if len(out) != len(b) || (len(out) > 0 && &out[0] != &b[0]) {
				changed = true
			}
			if out == nil {
				return nil
			}
			return w.add(out)
		})
		if err != nil {
			w.discard()
			return fmt.Errorf("storage: clean %s: %w", src.seg.path(logSuffix), err)
		}
	}
	var txns []AbortedTxn
	n := 0
	for _, src := range g {
		n += len(src.txns)
		for _, t := range src.txns {
			if !removable[t.LastOffset] {
				txns = append(txns, t)
			}
		}
	}
	changed = changed || len(txns) != n
	if !changed {
		w.discard()
		return nil
	}
	if err := w.finish(); err != nil {
		w.discard()
		return err
	}
	return l.swapCleaned(g, w, txns)
}

// swapCleaned replaces g's segments by the cleaned one. The steps, each a
// state recovery resolves (see resolveLeftovers):
//
//  1. rename the cleaned files .cleaned -> .swap (indexes first, the log
//     last) and fsync the directory: from here on the swap must happen;
//  2. rename the old segments' files to .deleted;
//  3. rename .swap -> final names (log first) and fsync the directory;
//  4. replace the segments in memory; the old files are removed after
//     file.delete.delay.ms so regions handed out by Read stay readable.
//
// A failure in step 1 before the log is renamed abandons the swap; a
// failure after it takes the log dir offline, and the next open completes
// the swap.
func (l *Log) swapCleaned(g []srcSegment, w *cleanedWriter, txns []AbortedTxn) error {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.checkWritable(); err != nil {
		w.discard()
		return err
	}
	l.mu.RLock()
	segs := l.segs
	i := segmentFor(segs, g[0].seg.baseOffset)
	same := i+len(g) < len(segs) // never the active segment
	for j := 0; same && j < len(g); j++ {
		s := segs[i+j]
		same = s == g[j].seg && s.size.Load() == g[j].size && s.nextOffset.Load() == g[j].next &&
			slices.Equal(s.txnIndex.entries, g[j].txns)
	}
	l.mu.RUnlock()
	if !same {
		w.discard()
		return errCleanAborted
	}
	cs := w.seg
	fs := l.fs
	l.cleanGen.Add(1) // a log move under way copies the log again
	// The cleaned segment keeps the aborted transactions of its sources
	// that still have records in the log. appendMu keeps new entries out
	// meanwhile.
	suffixes := []string{indexSuffix, timeIndexSuffix, logSuffix}
	if err := w.writeTxnIndex(txns); err != nil {
		w.discard()
		return err
	}
	if cs.txnFile != nil {
		suffixes = []string{indexSuffix, timeIndexSuffix, txnIndexSuffix, logSuffix}
	}
	for _, suf := range suffixes {
		if err := fs.Rename(cs.path(suf)+cleanedSuffix, cs.path(suf)+swapSuffix); err != nil {
			w.discard()
			return fmt.Errorf("storage: swap %s: %w", cs.path(suf), err)
		}
	}
	fail := func(err error) error {
		cs.close()
		l.goOffline(err)
		return ErrLogDirOffline
	}
	if err := fs.SyncDir(l.dir); err != nil {
		return fail(fmt.Errorf("storage: sync dir %s: %w", l.dir, err))
	}
	old := make([]*segment, len(g))
	for j, src := range g {
		old[j] = src.seg
		for _, suf := range segmentSuffixes {
			if err := fs.Rename(src.seg.path(suf), src.seg.path(suf)+deletedSuffix); err != nil {
				if suf == txnIndexSuffix && os.IsNotExist(err) {
					continue // a segment without aborted transactions
				}
				return fail(fmt.Errorf("storage: swap: delete %s: %w", src.seg.path(suf), err))
			}
		}
	}
	// The log first: once it has its final name the swap is done, and
	// recovery renames any index .swap left into place.
	suffixes = append([]string{logSuffix}, suffixes[:len(suffixes)-1]...)
	for _, suf := range suffixes {
		if err := fs.Rename(cs.path(suf)+swapSuffix, cs.path(suf)); err != nil {
			return fail(fmt.Errorf("storage: swap %s: %w", cs.path(suf), err))
		}
	}
	if err := fs.SyncDir(l.dir); err != nil {
		return fail(fmt.Errorf("storage: sync dir %s: %w", l.dir, err))
	}
	l.mu.Lock()
	ns := make([]*segment, 0, len(l.segs)-len(g)+1)
	ns = append(ns, l.segs[:i]...)
	ns = append(ns, cs)
	ns = append(ns, l.segs[i+len(g):]...)
	l.segs = ns
	l.mu.Unlock()
	l.logger.Debug("storage: swapped in cleaned segment", "file", cs.path(logSuffix), "replaced", len(g), "bytes", cs.size.Load())
	if l.m != nil {
		l.m.removeSegmentsLater(old, l.cfg.Load().FileDeleteDelayMs)
	} else {
		for _, s := range old {
			s.close()
		}
	}
	return nil
}

// writeTxnIndex gives the cleaned segment the aborted transactions txns,
// in marker order, written to its .txnindex.cleaned and fsynced (the swap
// renames it with the other files). Called with l.appendMu held.
func (w *cleanedWriter) writeTxnIndex(txns []AbortedTxn) error {
	if len(txns) == 0 {
		return nil
	}
	x := txnIndex{entries: txns}
	cs := w.seg
	name := cs.path(txnIndexSuffix) + cleanedSuffix
	f, err := w.fs.OpenReadWrite(name)
	if err != nil {
		return fmt.Errorf("storage: create %s: %w", name, err)
	}
	err = f.Truncate(0)
	if err == nil {
		_, err = f.Write(x.encode(make([]byte, 0, len(x.entries)*abortedTxnSize)))
	}
	if err == nil {
		err = f.Sync()
	}
	if err != nil {
		f.Close()
		return fmt.Errorf("storage: write %s: %w", name, err)
	}
	cs.txnFile, cs.txnIndex = f, x
	return nil
}
