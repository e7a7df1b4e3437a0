package storage

import (
	"errors"
	"fmt"
	"io"

	"samsa/internal/record"
	"samsa/internal/vfs"
)

// Region is a byte range of a segment file holding whole batches.
type Region struct {
	File vfs.File
	Pos  int64
	Size int64
}

// ReadResult is the result of Read.
type ReadResult struct {
	Regions []Region
	Size    int64
	// NextOffset is the offset after the last batch returned (its last
	// offset + 1), 0 when none was.
	NextOffset int64
}

// AppendTo reads the regions' bytes and appends them to dst.
func (r ReadResult) AppendTo(dst []byte) ([]byte, error) {
	for _, rg := range r.Regions {
		n := len(dst)
		dst = append(dst, make([]byte, rg.Size)...)
		if _, err := rg.File.ReadAt(dst[n:], rg.Pos); err != nil {
			return dst[:n], fmt.Errorf("storage: read region at %d: %w", rg.Pos, err)
		}
	}
	return dst, nil
}

// Read returns whole batches starting with the one that contains offset and
// ending before maxOffset (exclusive; callers pass the high watermark),
// totalling at most maxBytes, except that when minOneBatch is set the first
// batch is returned even if it is larger. It returns ErrOffsetOutOfRange
// when offset < LogStartOffset or offset > LogEndOffset, and
// ErrLogDirOffline once the log dir is offline (Kafka serves no replica of
// a failed dir, even where its files could still be read). Files referenced by
// the result stay open for at least FileDeleteDelayMs after a segment is
// deleted, so callers may read them after Read returns.
//
// Read does not block on Append beyond a short read lock. A Read that
// races a truncation (Truncate, TruncateFullyAndStartAt) waits for it to
// end and starts over, so it answers for the log as it is after the
// truncation and never reports the cut as corruption.
func (l *Log) Read(offset int64, maxBytes int64, maxOffset int64, minOneBatch bool) (ReadResult, error) {
	if err := l.offlineErr(); err != nil {
		return ReadResult{}, err
	}
	return retryTruncated(l, func() (ReadResult, error) {
		return l.read(offset, maxBytes, maxOffset, minOneBatch)
	})
}

// readRetries bounds how often a read starts over after racing a
// truncation before it holds truncations off.
const readRetries = 4

// retryTruncated runs read until no truncation ran during it: a truncation
// cuts and closes files under a running read, which then sees short or
// failed reads that are not corruption. It waits for a running truncation
// before each try. After readRetries raced tries it runs read once more
// under appendMu, which every truncation holds, so that a log truncated
// again and again still answers; appends wait for that one read.
// NB: no caller of a read holds appendMu, and reads take no lock that an
// append holds while it waits for appendMu.
func retryTruncated[T any](l *Log, read func() (T, error)) (T, error) {
	for try := 0; try < readRetries; try++ {
		gen := l.waitTruncation()
		res, err := read()
		if l.truncGen.Load() == gen {
			return res, err
		}
	}
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	return read()
}

// waitTruncation returns truncGen once no truncation is running, waiting
// for a running one to end.
func (l *Log) waitTruncation() int64 {
	for {
		gen := l.truncGen.Load()
		if gen%2 == 0 {
			return gen
		}
		l.chMu.Lock()
		ch := l.truncDone
		l.chMu.Unlock()
		if ch != nil {
			<-ch
		}
	}
}

func (l *Log) read(offset int64, maxBytes int64, maxOffset int64, minOneBatch bool) (ReadResult, error) {
	if l.closed.Load() {
		return ReadResult{}, ErrClosed
	}
	leo := l.logEnd.Load()
	if offset < l.logStart.Load() || offset > leo {
		return ReadResult{}, fmt.Errorf("storage: read %s at %d (log %d..%d): %w",
			l.tp.Topic, offset, l.logStart.Load(), leo, ErrOffsetOutOfRange)
	}
	var res ReadResult
	if offset >= maxOffset || offset == leo {
		return res, nil
	}
	l.mu.RLock()
	segs := l.segs
	i := segmentFor(segs, offset)
	pos := segs[i].index.lookup(int32(offset - segs[i].baseOffset))
	l.mu.RUnlock()

	w := newBatchWindow()
	defer w.release()
	found := false
	for ; i < len(segs); i, pos = i+1, 0 {
		seg := segs[i]
		end := seg.size.Load()
		regionStart := int64(-1)
		chk := newBatchCheck(segs, i)
		w.reset(seg.log)
		for pos < end {
			// NB: ahead is what the read may still return, and the
			// next header; bounded, maxBytes may be math.MaxInt64.
			h, hb, err := w.header(pos, min(maxBytes-res.Size, crcBufSize)+scanHeaderSize, end)
			if err != nil {
				if cerr := chk.headerErr(l, pos, err); cerr != nil {
					if res.Size > 0 {
						return res.add(seg, regionStart, pos), nil
					}
					return ReadResult{}, cerr
				}
				return res, l.readErr(seg, pos, err)
			}
			if !found {
				if h.lastOffset < offset {
					chk.skip(h)
					pos += h.size
					continue
				}
				found = true
			}
			if h.lastOffset >= maxOffset {
				return res.add(seg, regionStart, pos), nil
			}
			if res.Size+h.size > maxBytes && !(minOneBatch && res.Size == 0 && regionStart < 0) {
				return res.add(seg, regionStart, pos), nil
			}
			// Every batch handed out is checked first (see the package
			// doc, "Checks on read"). The good batches before a bad one
			// are returned; a read that starts at the bad one fails.
			if err := chk.check(l, pos, h, hb, w, end); err != nil {
				if res.Size > 0 && errors.Is(err, ErrCorrupt) {
					return res.add(seg, regionStart, pos), nil
				}
				return ReadResult{}, err
			}
			if regionStart < 0 {
				regionStart = pos
			}
			res.Size += h.size
			res.NextOffset = h.lastOffset + 1
			pos += h.size
		}
		res = res.add(seg, regionStart, pos)
	}
	return res, nil
}

// add appends the region [start, end) of seg when start >= 0.
func (r ReadResult) add(seg *segment, start, end int64) ReadResult {
	if start >= 0 && end > start {
		r.Regions = append(r.Regions, Region{File: seg.log, Pos: start, Size: end - start})
	}
	return r
}

// readErr turns an error from a header read into what Read returns: a
// short file is marked corrupt. A read racing a truncation also sees short
// or closed files; retryTruncated drops those errors and reads again.
func (l *Log) readErr(seg *segment, pos int64, err error) error {
	if l.closed.Load() {
		return ErrClosed
	}
	if errors.Is(err, errTornTail) || errors.Is(err, io.EOF) {
		err = record.MarkCorrupt(err)
	}
	return fmt.Errorf("storage: read %s at position %d: %w", seg.path(logSuffix), pos, err)
}

// maxDecompressed caps decompression when a lookup needs a batch's records.
const maxDecompressed = 64 << 20

// readBatch reads the whole batch at pos of size bytes.
func readBatch(f vfs.File, pos, size int64) (record.Batch, error) {
	buf := make([]byte, size)
	if _, err := f.ReadAt(buf, pos); err != nil {
		return nil, err
	}
	b, _, err := record.Split(buf)
	return b, err
}

// OffsetForTimestamp returns the first offset whose record timestamp is >=
// ts, with that record's timestamp; ok is false if there is none.
// Like Read, it starts over when it races a truncation.
func (l *Log) OffsetForTimestamp(ts int64) (offset, timestamp int64, ok bool, err error) {
	if err := l.offlineErr(); err != nil {
		return 0, 0, false, err
	}
	type result struct {
		offset, timestamp int64
		ok                bool
	}
	r, err := retryTruncated(l, func() (result, error) {
		o, t, ok, err := l.offsetForTimestamp(ts)
		return result{o, t, ok}, err
	})
	return r.offset, r.timestamp, r.ok, err
}

func (l *Log) offsetForTimestamp(ts int64) (offset, timestamp int64, ok bool, err error) {
	if l.closed.Load() {
		return 0, 0, false, ErrClosed
	}
	l.mu.RLock()
	segs := l.segs
	type start struct {
		seg *segment
		pos int64
	}
	var starts []start
	for _, s := range segs {
		if s.maxTimestamp < ts {
			continue // also skips empty segments (maxTimestamp -1)
		}
		starts = append(starts, start{s, s.index.lookup(s.timeIndex.lookup(ts))})
	}
	l.mu.RUnlock()
	lso := l.logStart.Load()
	var hbuf [scanHeaderSize]byte
	for _, st := range starts {
		seg, pos := st.seg, st.pos
		end := seg.size.Load()
		for pos < end {
			h, err := readHeader(seg.log, pos, end, &hbuf)
			if err != nil {
				return 0, 0, false, l.readErr(seg, pos, err)
			}
			if h.maxTimestamp < ts || h.lastOffset < lso {
				pos += h.size
				continue
			}
			b, err := readBatch(seg.log, pos, h.size)
			if err != nil {
				return 0, 0, false, l.readErr(seg, pos, err)
			}
			recs, err := b.Records(maxDecompressed)
			if err != nil {
				return 0, 0, false, fmt.Errorf("storage: decode batch at %d of %s: %w", pos, seg.path(logSuffix), err)
			}
			for i := range recs {
				o, t := recs[i].Offset(b), recs[i].Timestamp(b)
				if t >= ts && o >= lso {
					return o, t, true, nil
				}
			}
			pos += h.size
		}
	}
	return 0, 0, false, nil
}

// MaxTimestamp returns the largest timestamp in the log and the offset of the
// first record that has it; ok is false for an empty log.
// Like Read, it starts over when it races a truncation.
func (l *Log) MaxTimestamp() (timestamp, offset int64, ok bool, err error) {
	if err := l.offlineErr(); err != nil {
		return 0, 0, false, err
	}
	type result struct {
		timestamp, offset int64
		ok                bool
	}
	r, err := retryTruncated(l, func() (result, error) {
		t, o, ok, err := l.maxTimestamp()
		return result{t, o, ok}, err
	})
	return r.timestamp, r.offset, r.ok, err
}

func (l *Log) maxTimestamp() (timestamp, offset int64, ok bool, err error) {
	if l.closed.Load() {
		return 0, 0, false, ErrClosed
	}
	l.mu.RLock()
	var best *segment
	var bestTs int64 = -1
	for _, s := range l.segs {
		if s.size.Load() > 0 && (best == nil || s.maxTimestamp > bestTs) {
			best, bestTs = s, s.maxTimestamp
		}
	}
	var pos int64
	if best != nil {
		pos = best.index.lookup(int32(best.offsetOfMaxTs - best.baseOffset))
	}
	l.mu.RUnlock()
	if best == nil {
		return 0, 0, false, nil
	}
	end := best.size.Load()
	var hbuf [scanHeaderSize]byte
	for pos < end {
		h, err := readHeader(best.log, pos, end, &hbuf)
		if err != nil {
			return 0, 0, false, l.readErr(best, pos, err)
		}
		if h.maxTimestamp != bestTs {
			pos += h.size
			continue
		}
		b, err := readBatch(best.log, pos, h.size)
		if err != nil {
			return 0, 0, false, l.readErr(best, pos, err)
		}
		recs, err := b.Records(maxDecompressed)
		if err != nil {
			return 0, 0, false, fmt.Errorf("storage: decode batch at %d of %s: %w", pos, best.path(logSuffix), err)
		}
		for i := range recs {
			if recs[i].Timestamp(b) == bestTs {
				return bestTs, recs[i].Offset(b), true, nil
			}
		}
		return bestTs, h.lastOffset, true, nil
	}
	return bestTs, best.offsetOfMaxTs, true, nil
}
