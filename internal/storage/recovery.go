package storage

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"samsa/internal/record"
	"samsa/internal/vfs"
)

// recoverAll opens every partition log in the log dir. See the package doc
// for the rules.
func (m *Manager) recoverAll() error {
	names, err := m.fs.List(m.dir)
	if err != nil {
		return fmt.Errorf("storage: list %s: %w", m.dir, err)
	}
	clean := fileExists(m.fs, filepath.Join(m.dir, cleanShutdownFile))
	rps, err := readCheckpoint(m.fs, m.dir, recoveryPointFile)
	if err != nil {
		m.logger.Warn("storage: ignoring recovery point checkpoint", "err", err)
		rps, clean = map[TopicPartition]int64{}, false
	}
	lsos, err := readCheckpoint(m.fs, m.dir, logStartOffsetFile)
	if err != nil {
		m.logger.Warn("storage: ignoring log start offset checkpoint", "err", err)
		lsos = map[TopicPartition]int64{}
	}
	cleaned, err := readCheckpoint(m.fs, m.dir, cleanerCheckpointFile)
	if err != nil {
		// Only the cleaner's scheduling depends on it: start over.
		m.logger.Warn("storage: ignoring cleaner offset checkpoint", "err", err)
		cleaned = map[TopicPartition]int64{}
	}
	type load struct {
		tp   TopicPartition
		path string
	}
	var loads []load
	for _, name := range names {
		path := filepath.Join(m.dir, name)
		if strings.HasSuffix(name, "-delete") {
			if err := m.fs.RemoveAll(path); err != nil {
				return fmt.Errorf("storage: remove %s: %w", path, err)
			}
			continue
		}
		if strings.HasSuffix(name, ".tmp") {
			m.fs.Remove(path)
			continue
		}
		tp, ok := parsePartitionDir(name)
		if !ok {
			continue
		}
		if fi, err := m.fs.Stat(path); err != nil || !fi.IsDir() {
			continue
		}
		loads = append(loads, load{tp, path})
	}
	// NB: a log's load is a few reads, and after a crash a scan and
	// fsyncs; one log after the other, 10,000 partitions took a minute
	// to recover. Logs are independent, so a few load at once (Kafka's
	// num.recovery.threads.per.data.dir).
	var mu sync.Mutex
	var firstErr error
	ParallelEach(len(loads), recoveryWorkers, func(i int) {
		ld := loads[i]
		l, err := m.loadLog(ld.tp, ld.path, rps[ld.tp], lsos[ld.tp], clean)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			return
		}
		l.cleanedTo.Store(cleaned[ld.tp])
		m.logs[ld.tp] = l
	})
	if firstErr != nil {
		return firstErr
	}
	if clean {
		if err := m.fs.Remove(filepath.Join(m.dir, cleanShutdownFile)); err != nil {
			return fmt.Errorf("storage: remove clean shutdown marker: %w", err)
		}
		if err := m.fs.SyncDir(m.dir); err != nil {
			return fmt.Errorf("storage: sync dir %s: %w", m.dir, err)
		}
	}
	return nil
}

// errIndexUnreadable marks an index file that could not be opened or
// read (as opposed to one that reads but fails the check): the open
// fails rather than rebuild it.
var errIndexUnreadable = errors.New("storage: index file unreadable")

// recoveryWorkers bounds the logs OpenManager loads at once.
const recoveryWorkers = 8

// parsePartitionDir parses "<topic>-<partition>".
func parsePartitionDir(name string) (TopicPartition, bool) {
	i := strings.LastIndexByte(name, '-')
	if i <= 0 {
		return TopicPartition{}, false
	}
	p, err := strconv.ParseInt(name[i+1:], 10, 32)
	if err != nil || p < 0 || strconv.FormatInt(p, 10) != name[i+1:] {
		return TopicPartition{}, false
	}
	return TopicPartition{Topic: name[:i], Partition: int32(p)}, true
}

// resolveLeftovers finishes or undoes what a crash interrupted in a
// partition directory and returns the remaining names, with the base
// offsets of segments whose files came from a swap (their indexes are
// rebuilt from the log).
//
//   - <base>.log.swap: a cleaned segment whose swap was committed (its
//     files were fsynced before the rename). Every segment with a base
//     offset in [base, next offset of the swap) is removed with its
//     indexes, and the swap becomes <base>.log.
//   - .index.swap / .timeindex.swap without a .log.swap: renamed into place
//     when the original is gone, removed otherwise.
//   - .deleted, .cleaned and .tmp files are removed.
func resolveLeftovers(fs vfs.FS, dir string, names []string) ([]string, map[int64]bool, error) {
	have := map[string]bool{}
	for _, n := range names {
		have[n] = true
	}
	forced := map[int64]bool{}
	remove := func(n string) error {
		if !have[n] {
			return nil
		}
		if err := fs.Remove(filepath.Join(dir, n)); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("storage: remove %s: %w", filepath.Join(dir, n), err)
		}
		delete(have, n)
		return nil
	}
	for _, n := range names {
		stem, ok := strings.CutSuffix(n, logSuffix+swapSuffix)
		if !ok {
			continue
		}
		base, err := strconv.ParseInt(stem, 10, 64)
		if err != nil || base < 0 {
			continue
		}
		path := filepath.Join(dir, n)
		next, whole, err := swapNextOffset(fs, path, base)
		if err != nil {
			return nil, nil, err
		}
		if !whole {
			// Not a committed swap (those are fsynced before the rename):
			// the generic rule below drops it or renames it into place.
			continue
		}
		for m := range have {
			s, ok := strings.CutSuffix(m, logSuffix)
			if !ok {
				continue
			}
			b, err := strconv.ParseInt(s, 10, 64)
			if err != nil || b < base || (b >= next && b != base) {
				continue
			}
			for _, suf := range segmentSuffixes {
				if err := remove(s + suf); err != nil {
					return nil, nil, err
				}
			}
		}
		for _, suf := range []string{indexSuffix, timeIndexSuffix} {
			for _, state := range []string{"", swapSuffix, cleanedSuffix} {
				if err := remove(stem + suf + state); err != nil {
					return nil, nil, err
				}
			}
		}
		// The offset and time indexes are rebuilt from the log; the
		// aborted transactions cannot be, so the swap's .txnindex (written
		// and fsynced before the log's rename) takes the old one's place.
		if err := remove(stem + txnIndexSuffix + cleanedSuffix); err != nil {
			return nil, nil, err
		}
		if tswap := stem + txnIndexSuffix + swapSuffix; have[tswap] {
			if err := fs.Rename(filepath.Join(dir, tswap), filepath.Join(dir, stem+txnIndexSuffix)); err != nil {
				return nil, nil, fmt.Errorf("storage: rename %s: %w", filepath.Join(dir, tswap), err)
			}
			delete(have, tswap)
			have[stem+txnIndexSuffix] = true
		}
		if err := fs.Rename(path, filepath.Join(dir, stem+logSuffix)); err != nil {
			return nil, nil, fmt.Errorf("storage: rename %s: %w", path, err)
		}
		delete(have, n)
		have[stem+logSuffix] = true
		forced[base] = true
	}
	for _, n := range names {
		if !have[n] {
			continue
		}
		switch {
		case strings.HasSuffix(n, deletedSuffix), strings.HasSuffix(n, cleanedSuffix), strings.HasSuffix(n, ".tmp"):
			if err := remove(n); err != nil {
				return nil, nil, err
			}
		case strings.HasSuffix(n, swapSuffix):
			orig := strings.TrimSuffix(n, swapSuffix)
			if stem, _, ok := strings.Cut(orig, "."); ok {
				if b, err := strconv.ParseInt(stem, 10, 64); err == nil {
					forced[b] = true
				}
			}
			if have[orig] {
				if err := remove(n); err != nil {
					return nil, nil, err
				}
				continue
			}
			path := filepath.Join(dir, n)
			if err := fs.Rename(path, filepath.Join(dir, orig)); err != nil {
				return nil, nil, fmt.Errorf("storage: rename %s: %w", path, err)
			}
			delete(have, n)
			have[orig] = true
		}
	}
	out := make([]string, 0, len(have))
	for n := range have {
		out = append(out, n)
	}
	sort.Strings(out)
	return out, forced, nil
}

// swapNextOffset returns the offset after the last batch of the swap file
// at path, and whether the file is a non-empty chain of whole batch
// headers with increasing offsets from base.
func swapNextOffset(fs vfs.FS, path string, base int64) (next int64, whole bool, err error) {
	f, err := fs.Open(path)
	if err != nil {
		return 0, false, fmt.Errorf("storage: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, false, fmt.Errorf("storage: stat %s: %w", path, err)
	}
	next = base
	var hbuf [scanHeaderSize]byte
	size := fi.Size()
	for pos := int64(0); pos < size; {
		h, err := readHeader(f, pos, size, &hbuf)
		if err != nil || h.magic != 2 || h.baseOffset < next {
			return next, false, nil
		}
		next = h.lastOffset + 1
		pos += h.size
	}
	return next, size > 0, nil
}

// loadLog opens and recovers one partition directory.
func (m *Manager) loadLog(tp TopicPartition, dir string, recoveryPoint, logStart int64, clean bool) (*Log, error) {
	names, err := m.fs.List(dir)
	if err != nil {
		return nil, fmt.Errorf("storage: list %s: %w", dir, err)
	}
	listed := len(names)
	names, forced, err := resolveLeftovers(m.fs, dir, names)
	if err != nil {
		return nil, err
	}
	// dirChanged says the directory's entries changed, so it needs an
	// fsync before the log opens; a clean open of intact files changes
	// nothing and syncs nothing.
	dirChanged := len(names) != listed || len(forced) > 0
	var topicID [16]byte
	if data, err := readFile(m.fs, filepath.Join(dir, metadataFile)); err == nil {
		if topicID, err = decodeMetadata(data); err != nil {
			m.logger.Warn("storage: bad partition.metadata", "dir", dir, "err", err)
		}
	}
	cfg := m.defCfg
	l := m.newLog(tp, topicID, dir, cfg)

	var bases []int64
	for _, n := range names {
		if stem, ok := strings.CutSuffix(n, logSuffix); ok {
			if b, err := strconv.ParseInt(stem, 10, 64); err == nil && b >= 0 {
				bases = append(bases, b)
			}
		}
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	// A segment from bases[i] must be scanned when it can hold offsets at or
	// above the recovery point.
	scanned, truncated := 0, false
	var recovered []*segment // scanned: their files must be fsynced
	for i, base := range bases {
		seg, err := openSegment(m.fs, dir, base, &cfg)
		if err != nil {
			l.closeFiles()
			return nil, err
		}
		l.segs = append(l.segs, seg)
		mustScan := forced[base] || !clean && (i == len(bases)-1 || bases[i+1] > recoveryPoint)
		torn := false
		if !mustScan {
			if err := l.loadTrusted(seg, i == len(bases)-1); errors.Is(err, errIndexUnreadable) {
				// NB: out of descriptors, say: not a sign of a bad
				// index, and no reason to scan and rewrite one.
				l.closeFiles()
				return nil, err
			} else if err != nil {
				m.logger.Warn("storage: segment needs recovery", "file", seg.path(logSuffix), "err", err)
				mustScan = true
			}
		}
		if mustScan {
			scanned++
			if torn, err = l.recoverSegment(seg, i == len(bases)-1); err != nil {
				l.closeFiles()
				return nil, err
			}
			truncated = truncated || torn
			recovered = append(recovered, seg)
		}
		if err := l.openTxnIndex(seg); err != nil {
			l.closeFiles()
			return nil, err
		}
		if torn && i < len(bases)-1 {
			// Everything after a torn batch is gone: delete later segments.
			for _, b := range bases[i+1:] {
				s := newSegment(m.fs, dir, b, &cfg)
				for _, suf := range segmentSuffixes {
					if err := m.fs.Remove(s.path(suf)); err != nil && !os.IsNotExist(err) {
						l.closeFiles()
						return nil, fmt.Errorf("storage: remove %s: %w", s.path(suf), err)
					}
				}
				m.logger.Warn("storage: deleted segment after torn batch", "topic", l.tp.Topic, "partition", l.tp.Partition,
					"file", s.path(logSuffix), "base_offset", b)
				dirChanged = true
			}
			break
		}
	}
	// Drop trailing empty segments but the first, so the active segment is
	// the last non-empty one or the only one.
	if len(l.segs) == 0 {
		seg, err := createSegment(m.fs, dir, max(logStart, 0), &cfg)
		if err != nil {
			return nil, err
		}
		l.segs = []*segment{seg}
		dirChanged = true
	}
	// NB: segments loaded as trusted were fsynced before the recovery
	// point or the clean-shutdown marker covered them; only what the scan
	// read (and may have cut or re-indexed) can still be in the page
	// cache alone.
	for _, s := range recovered {
		if err := s.sync(true); err != nil {
			l.closeFiles()
			return nil, err
		}
	}
	if dirChanged || len(recovered) > 0 {
		if err := m.fs.SyncDir(dir); err != nil {
			l.closeFiles()
			return nil, fmt.Errorf("storage: sync dir %s: %w", dir, err)
		}
	}
	leo := l.segs[len(l.segs)-1].nextOffset.Load()
	lso := max(l.segs[0].baseOffset, min(logStart, leo))
	l.logStart.Store(lso)
	l.logEnd.Store(leo)
	l.durable.Store(leo)
	l.recoveryPoint.Store(leo)
	if err := l.loadEpochs(); err != nil {
		l.closeFiles()
		return nil, err
	}
	if !clean && scanned > 0 {
		m.logger.Info("storage: recovered log", "topic", tp.Topic, "partition", tp.Partition, "recovery_point", recoveryPoint,
			"scanned_segments", scanned, "truncated", truncated, "log_end_offset", leo, "dir", dir)
	}
	return l, nil
}

// openSegment opens an existing segment's .log for appending. The index
// files stay closed: loading reads them, a write opens them, and a
// missing one reads as empty, which the load's index check then rebuilds
// where batches should have had entries.
func openSegment(fs vfs.FS, dir string, base int64, cfg *Config) (*segment, error) {
	s := newSegment(fs, dir, base, cfg)
	var err error
	if s.log, err = fs.OpenReadWrite(s.path(logSuffix)); err != nil {
		return nil, fmt.Errorf("storage: open segment: %w", err)
	}
	fi, err := s.log.Stat()
	if err != nil {
		s.close()
		return nil, fmt.Errorf("storage: stat %s: %w", s.path(logSuffix), err)
	}
	s.size.Store(fi.Size())
	return s, nil
}

// loadTrusted loads seg's indexes from their files, checking them, and
// scans the batch headers after the last time index entry to find the
// segment's end offset and largest timestamp. Any inconsistency is an error:
// the caller then recovers the segment.
func (l *Log) loadTrusted(seg *segment, active bool) error {
	size := seg.size.Load()
	ibuf, err := seg.index.file.readAll()
	if err != nil {
		return fmt.Errorf("%w: %w", errIndexUnreadable, err)
	}
	tbuf, err := seg.timeIndex.file.readAll()
	if err != nil {
		return fmt.Errorf("%w: %w", errIndexUnreadable, err)
	}
	idx, err := decodeOffsetIndex(ibuf, size)
	if err != nil {
		return err
	}
	tidx, err := decodeTimeIndex(tbuf, math.MaxInt32)
	if err != nil {
		return err
	}
	var hbuf [scanHeaderSize]byte
	if n := len(idx); n > 0 {
		h, err := readHeader(seg.log, int64(idx[n-1].pos), size, &hbuf)
		if err != nil {
			return err
		}
		if h.lastOffset != seg.baseOffset+int64(idx[n-1].rel) {
			return fmt.Errorf("%w: last entry points at offset %d, not %d", errBadIndex, h.lastOffset, seg.baseOffset+int64(idx[n-1].rel))
		}
	}
	seg.index.entries, seg.timeIndex.entries = idx, tidx
	t, err := l.scanTail(seg, true)
	if err != nil {
		seg.index.entries, seg.timeIndex.entries = nil, nil
		return err
	}
	if last, ok := seg.timeIndex.last(); ok && seg.baseOffset+int64(last.rel) >= t.nextOffset {
		seg.index.entries, seg.timeIndex.entries = nil, nil
		return fmt.Errorf("%w: time index past the end of the segment", errBadIndex)
	}
	t.apply(seg)
	return nil
}

// tailState is what scanTail learns about a segment.
type tailState struct {
	nextOffset      int64
	maxTimestamp    int64
	offsetOfMaxTs   int64
	firstBatchTs    int64
	bytesSinceIndex int64
	lastTimeIndexed int64
	lastTimeRel     int32
}

func (t tailState) apply(seg *segment) {
	seg.nextOffset.Store(t.nextOffset)
	seg.maxTimestamp, seg.offsetOfMaxTs = t.maxTimestamp, t.offsetOfMaxTs
	seg.firstBatchTs = t.firstBatchTs
	seg.bytesSinceIndex = t.bytesSinceIndex
	seg.lastTimeIndexed, seg.lastTimeIndexedRel = t.lastTimeIndexed, t.lastTimeRel
}

// scanTail reads batch headers from the position of seg's last time index
// entry to the end of the segment. seg's index entries must be loaded and
// not change during the call. With checkIndex it fails with errBadIndex
// when a batch past the last offset index entry should have had one.
func (l *Log) scanTail(seg *segment, checkIndex bool) (tailState, error) {
	size := seg.size.Load()
	t := tailState{nextOffset: seg.baseOffset, maxTimestamp: -1, offsetOfMaxTs: -1, firstBatchTs: -1, lastTimeIndexed: -1}
	var hbuf [scanHeaderSize]byte
	if size == 0 {
		return t, nil
	}
	first, err := readHeader(seg.log, 0, size, &hbuf)
	if err != nil {
		return t, err
	}
	t.firstBatchTs = first.maxTimestamp
	var pos int64
	if last, ok := seg.timeIndex.last(); ok {
		t.maxTimestamp, t.offsetOfMaxTs = last.ts, seg.baseOffset+int64(last.rel)
		t.lastTimeIndexed, t.lastTimeRel = last.ts, last.rel
		pos = seg.index.lookup(last.rel)
	}
	// indexed is where the bytes counted toward the next index entry
	// start: the last entry's batch, or the segment's start.
	var indexed int64
	if n := len(seg.index.entries); n > 0 {
		indexed = int64(seg.index.entries[n-1].pos)
	}
	t.bytesSinceIndex = size - indexed
	interval := l.cfg.Load().IndexIntervalBytes
	for pos < size {
		h, err := readHeader(seg.log, pos, size, &hbuf)
		if err != nil {
			return t, err
		}
		// Appends index a batch once more than index.interval.bytes
		// were written since the last entry (indexBatchLocked); a batch
		// past the last entry that should have one means the index lost
		// entries (deleted, zeroed or cut short). A segment written under
		// a larger index.interval.bytes fails too, and is only rescanned.
		if checkIndex && pos > indexed && pos-indexed > interval {
			return t, fmt.Errorf("%w: no entry for the batch at %d, %d bytes after the last one", errBadIndex, pos, pos-indexed)
		}
		if h.magic != 2 || h.baseOffset < t.nextOffset && pos > 0 {
			return t, record.MarkCorrupt(fmt.Errorf("storage: bad batch at %d of %s", pos, seg.path(logSuffix)))
		}
		if h.maxTimestamp > t.maxTimestamp {
			t.maxTimestamp, t.offsetOfMaxTs = h.maxTimestamp, h.lastOffset
		}
		t.nextOffset = h.lastOffset + 1
		pos += h.size
	}
	return t, nil
}

// rescanSegment recomputes seg's tail state after a truncation. Called with
// appendMu held.
func (l *Log) rescanSegment(seg *segment) error {
	l.mu.RLock()
	t, err := l.scanTail(seg, false)
	l.mu.RUnlock()
	if err != nil {
		return err
	}
	l.mu.Lock()
	t.apply(seg)
	l.mu.Unlock()
	return nil
}

// recoverSegment reads every batch of seg, checking its length, magic, CRC
// and offsets, truncates the file at the first bad or short batch and
// rebuilds both indexes. It reports whether it truncated.
func (l *Log) recoverSegment(seg *segment, active bool) (bool, error) {
	cfg := l.cfg.Load()
	size := seg.size.Load()
	seg.index.entries, seg.timeIndex.entries = nil, nil
	seg.bytesSinceIndex, seg.maxTimestamp, seg.offsetOfMaxTs, seg.firstBatchTs = 0, -1, -1, -1
	seg.lastTimeIndexed, seg.lastTimeIndexedRel = -1, 0
	next := seg.baseOffset
	var pos int64
	var buf []byte
	var hbuf [scanHeaderSize]byte
	var bad error
	for pos < size {
		h, err := readHeader(seg.log, pos, size, &hbuf)
		if err != nil {
			bad = err
			break
		}
		if h.magic != 2 || h.baseOffset < next || h.lastOffset-seg.baseOffset > math.MaxInt32 {
			bad = fmt.Errorf("batch offsets %d..%d magic %d", h.baseOffset, h.lastOffset, h.magic)
			break
		}
		if int64(cap(buf)) < h.size {
			buf = make([]byte, h.size)
		}
		buf = buf[:h.size]
		if _, err := seg.log.ReadAt(buf, pos); err != nil {
			bad = err
			break
		}
		b, _, err := record.Split(buf)
		if err != nil {
			bad = err
			break
		}
		if b.ComputeCRC() != b.CRC() {
			bad = errors.New("crc mismatch")
			break
		}
		if seg.maxTimestamp < 0 || h.maxTimestamp > seg.maxTimestamp {
			seg.maxTimestamp, seg.offsetOfMaxTs = h.maxTimestamp, h.lastOffset
		}
		if seg.firstBatchTs < 0 {
			seg.firstBatchTs = h.maxTimestamp
		}
		if seg.bytesSinceIndex > cfg.IndexIntervalBytes {
			seg.index.entries = append(seg.index.entries, offsetEntry{rel: int32(h.lastOffset - seg.baseOffset), pos: int32(pos)})
			appendTimeEntry(seg)
			seg.bytesSinceIndex = 0
		}
		seg.bytesSinceIndex += h.size
		next = h.lastOffset + 1
		pos += h.size
	}
	if !active {
		appendTimeEntry(seg)
	}
	torn := pos < size
	if torn {
		l.logger.Warn("storage: truncating torn or corrupt segment tail", "topic", l.tp.Topic, "partition", l.tp.Partition,
			"file", seg.path(logSuffix), "from_offset", next, "position", pos, "truncated_bytes", size-pos, "reason", bad)
		if err := seg.log.Truncate(pos); err != nil {
			return false, fmt.Errorf("storage: truncate %s: %w", seg.path(logSuffix), err)
		}
		seg.size.Store(pos)
	}
	seg.nextOffset.Store(next)
	if err := writeIndexFiles(seg); err != nil {
		return false, err
	}
	return torn, nil
}

// appendTimeEntry adds (maxTimestamp, offsetOfMaxTs) to seg's in-memory time
// index when it grew.
func appendTimeEntry(seg *segment) {
	if seg.maxTimestamp < 0 || seg.maxTimestamp <= seg.lastTimeIndexed {
		return
	}
	rel := int32(seg.offsetOfMaxTs - seg.baseOffset)
	if len(seg.timeIndex.entries) > 0 && rel <= seg.lastTimeIndexedRel {
		return
	}
	seg.timeIndex.entries = append(seg.timeIndex.entries, timeEntry{ts: seg.maxTimestamp, rel: rel})
	seg.lastTimeIndexed, seg.lastTimeIndexedRel = seg.maxTimestamp, rel
}

// writeIndexFiles rewrites both index files from memory.
func writeIndexFiles(seg *segment) error {
	ib := make([]byte, 0, len(seg.index.entries)*offsetEntrySize)
	for _, e := range seg.index.entries {
		ib = e.encode(ib)
	}
	tb := make([]byte, 0, len(seg.timeIndex.entries)*timeEntrySize)
	for _, e := range seg.timeIndex.entries {
		tb = e.encode(tb)
	}
	if err := seg.index.file.rewrite(ib); err != nil {
		return err
	}
	return seg.timeIndex.file.rewrite(tb)
}

// readAllAt reads a whole file from position 0.
func readAllAt(f vfs.File) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	buf := make([]byte, fi.Size())
	if len(buf) == 0 {
		return buf, nil
	}
	if _, err := f.ReadAt(buf, 0); err != nil {
		return nil, err
	}
	return buf, nil
}

// HadCleanShutdown reports whether the log dir dir holds the clean-shutdown
// marker: the process that used it last closed it cleanly, so nothing it
// had written was lost. A new or wiped dir has no marker. Call it before
// OpenManager, which removes the marker.
func HadCleanShutdown(fs vfs.FS, dir string) bool {
	return fileExists(fs, filepath.Join(dir, cleanShutdownFile))
}

// HoldsNoPartition reports whether the log dir dir holds no partition log
// (it is new, or was wiped): a broker starting on it has none of the
// records its node id may be counted on for.
func HoldsNoPartition(fs vfs.FS, dir string) bool {
	names, err := fs.List(dir)
	if err != nil {
		return true
	}
	for _, name := range names {
		if _, ok := parsePartitionDir(name); ok {
			return false
		}
	}
	return true
}
