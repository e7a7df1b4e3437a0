package storage

import (
	"errors"
	"fmt"
	"os"
	"time"
)

// retentionLoop runs RunRetention every RetentionCheckInterval until Close.
func (m *Manager) retentionLoop() {
	m.every(m.retInt, nil, func(bool) time.Duration {
		m.RunRetention()
		return m.retInt
	})
}

// RunRetention runs one retention pass over every log: roll active segments
// older than segment.ms, delete whole segments past retention.ms (by their
// largest timestamp) or beyond retention.bytes (both only when
// cleanup.policy includes "delete") or below the log start offset, then
// write the checkpoints. Tests call it to run a pass
// deterministically. It is safe for concurrent use.
func (m *Manager) RunRetention() {
	now := m.now().UnixMilli()
	for _, l := range m.Logs() {
		if err := l.retain(now); err != nil {
			m.logger.Warn("storage: retention", "dir", l.dir, "err", err)
		}
	}
	if !m.isClosed() && !m.offline.Load() {
		if err := m.checkpoint(); err != nil {
			m.logger.Warn("storage: checkpoint", "dir", m.dir, "err", err)
		}
	}
}

// retain applies the retention rules to l at time nowMs.
func (l *Log) retain(nowMs int64) error {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.checkWritable(); err != nil {
		return nil
	}
	cfg := l.cfg.Load()
	active := l.activeSegment()
	// An active segment that took no append since the last pass gives its
	// index descriptors back; its next index entry opens them again.
	if leo := l.logEnd.Load(); leo == l.idleEnd {
		if err := active.releaseIndexes(); err != nil {
			l.goOffline(err)
			return err
		}
	} else {
		l.idleEnd = leo
	}
	if !active.empty() {
		l.mu.RLock()
		due := cfg.SegmentMs >= 0 && active.firstBatchTs >= 0 && nowMs-active.firstBatchTs > cfg.SegmentMs
		l.mu.RUnlock()
		if due {
			if _, err := l.rollLocked(); err != nil {
				l.goOffline(err)
				return err
			}
		}
	}

	l.mu.RLock()
	segs := l.segs
	var total int64
	for _, s := range segs {
		total += s.size.Load()
	}
	lso := l.logStart.Load()
	// Kafka: a compact-only log is never deleted by time or size.
	del := cfg.DeleteRetention()
	n := 0       // segments to delete: a prefix, never the active one
	reason := "" // why the first of them goes, for the log
	for ; n < len(segs)-1; n++ {
		s := segs[n]
		why := ""
		switch {
		case segs[n+1].baseOffset <= lso:
			why = "log_start_offset"
		case del && cfg.RetentionMs >= 0 && s.maxTimestamp >= 0 && nowMs-s.maxTimestamp > cfg.RetentionMs:
			why = "retention.ms"
		case del && cfg.RetentionBytes >= 0 && total-s.size.Load() >= cfg.RetentionBytes:
			why = "retention.bytes"
		default:
			goto done
		}
		if reason == "" {
			reason = why
		}
		total -= s.size.Load()
	}
done:
	l.mu.RUnlock()
	if n == 0 {
		return nil
	}
	if err := l.deleteFirstLocked(n, cfg, reason); err != nil {
		l.goOffline(err)
		return err
	}
	if err := l.trimEpochsStartLocked(l.logStart.Load()); err != nil {
		l.goOffline(err)
		return err
	}
	return nil
}

// deleteFirstLocked removes the first n segments (never all of them) and
// advances the log start offset to the new first segment. It does not
// trim the epoch cache: the caller does, once. Called with appendMu held.
func (l *Log) deleteFirstLocked(n int, cfg *Config, reason string) error {
	l.mu.Lock()
	gone := l.segs[:n:n]
	var bytes int64
	for _, s := range gone {
		bytes += s.size.Load()
	}
	l.segs = append([]*segment(nil), l.segs[n:]...)
	if first := l.segs[0].baseOffset; first > l.logStart.Load() {
		l.logStart.Store(first)
	}
	l.mu.Unlock()
	l.logger.Info("storage: deleting segments", "topic", l.tp.Topic, "partition", l.tp.Partition, "reason", reason,
		"segments", n, "bytes", bytes, "first_base_offset", gone[0].baseOffset, "last_base_offset", gone[n-1].baseOffset,
		"log_start_offset", l.logStart.Load(), "dir", l.dir)
	l.notify(false)
	return l.dropSegments(gone, cfg)
}

// dropSegments renames gone's files to .deleted, fsyncs the directory and
// schedules the files' removal after file.delete.delay.ms. An error means
// the renames may not be durable: the caller takes the log offline.
func (l *Log) dropSegments(gone []*segment, cfg *Config) error {
	err := l.renameForDeletion(gone)
	if err == nil && len(gone) > 0 {
		err = l.syncDir()
	}
	l.removeSegmentsLater(gone, cfg)
	return err
}

// renameForDeletion renames segs' files to .deleted (a file already gone
// is skipped). The renames are durable after the next directory fsync.
func (l *Log) renameForDeletion(segs []*segment) error {
	var errs []error
	for _, s := range segs {
		for _, suf := range segmentSuffixes {
			if err := l.fs.Rename(s.path(suf), s.path(suf)+deletedSuffix); err != nil && !os.IsNotExist(err) {
				errs = append(errs, fmt.Errorf("storage: rename %s for deletion: %w", s.path(suf), err))
			}
		}
	}
	return errors.Join(errs...)
}

// syncDir fsyncs the log's directory.
func (l *Log) syncDir() error {
	if err := l.fs.SyncDir(l.dir); err != nil {
		return fmt.Errorf("storage: sync dir %s: %w", l.dir, err)
	}
	return nil
}

// removeSegmentsLater closes segs and removes their .deleted files after
// file.delete.delay.ms, so Regions handed out by Read stay readable.
func (l *Log) removeSegmentsLater(segs []*segment, cfg *Config) {
	if len(segs) == 0 {
		return
	}
	if l.m != nil {
		l.m.removeSegmentsLater(segs, cfg.FileDeleteDelayMs)
		return
	}
	for _, s := range segs {
		s.close()
	}
}

// DeleteRecordsBefore advances the log start offset to offset (DeleteRecords)
// and deletes segments wholly below it. offset must be <= the high
// watermark, which the caller checks. It returns the new log start offset.
func (l *Log) DeleteRecordsBefore(offset int64) (int64, error) {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.checkWritable(); err != nil {
		return 0, err
	}
	if offset > l.logEnd.Load() || offset < 0 {
		return 0, fmt.Errorf("storage: delete records before %d (log end %d): %w", offset, l.logEnd.Load(), ErrOffsetOutOfRange)
	}
	if offset <= l.logStart.Load() {
		return l.logStart.Load(), nil
	}
	l.logStart.Store(offset)
	l.notify(false)
	l.mu.RLock()
	n := 0
	for n < len(l.segs)-1 && l.segs[n+1].baseOffset <= offset {
		n++
	}
	l.mu.RUnlock()
	if n > 0 {
		if err := l.deleteFirstLocked(n, l.cfg.Load(), "delete_records"); err != nil {
			l.goOffline(err)
			return 0, ErrLogDirOffline
		}
	}
	if err := l.trimEpochsStartLocked(offset); err != nil {
		l.goOffline(err)
		return 0, ErrLogDirOffline
	}
	return l.logStart.Load(), nil
}

// Truncate removes every batch at or above offset (follower truncation). A
// batch that straddles offset is removed whole, so the log end offset
// becomes the base offset of the first removed batch. Truncating below the
// log start offset empties the log and restarts it at offset.
//
// The truncation is durable before the new log end is published: the cut
// segment is fsynced and the removed segments' renames are made durable by
// a directory fsync, so a crash cannot bring back offsets at or beyond the
// new log end. Reads that race it start over (see Read). An IO error takes
// the log dir offline (ErrLogDirOffline). It is safe for concurrent use.
func (l *Log) Truncate(offset int64) error {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.checkWritable(); err != nil {
		return err
	}
	if offset >= l.logEnd.Load() {
		return nil
	}
	if offset < 0 {
		return fmt.Errorf("storage: truncate to %d: %w", offset, ErrOffsetOutOfRange)
	}
	cfg := l.cfg.Load()
	l.beginTruncation()
	var err error
	if offset < l.logStart.Load() {
		err = l.truncateFullyLocked(offset, cfg)
	} else {
		err = l.truncateLocked(offset, cfg)
	}
	l.endTruncation()
	if err != nil {
		l.goOffline(err)
		return ErrLogDirOffline
	}
	l.notify(true)
	if l.m != nil {
		l.m.markDirty(l)
	}
	return nil
}

// beginTruncation makes truncGen odd: a truncation is running. Called with
// appendMu held, before any file is cut or closed.
func (l *Log) beginTruncation() {
	l.chMu.Lock()
	l.truncDone = make(chan struct{})
	l.chMu.Unlock()
	l.truncGen.Add(1)
}

// endTruncation makes truncGen even again and wakes reads waiting for the
// truncation to end. Called with appendMu held, after the new log end is
// published (or the truncation failed).
func (l *Log) endTruncation() {
	l.truncGen.Add(1)
	l.chMu.Lock()
	close(l.truncDone)
	l.truncDone = nil
	l.chMu.Unlock()
}

// truncateLocked is Truncate for offset in [log start, log end). Called
// between beginTruncation and endTruncation.
func (l *Log) truncateLocked(offset int64, cfg *Config) error {
	l.mu.RLock()
	segs := l.segs
	i := segmentFor(segs, offset)
	seg := segs[i]
	pos := seg.index.lookup(int32(offset - seg.baseOffset))
	l.mu.RUnlock()
	// Find the first batch whose last offset is >= offset.
	end := seg.size.Load()
	newEnd := seg.baseOffset
	var hbuf [scanHeaderSize]byte
	for pos < end {
		h, err := readHeader(seg.log, pos, end, &hbuf)
		if err != nil {
			return fmt.Errorf("storage: truncate %s: %w", seg.path(logSuffix), err)
		}
		if h.lastOffset >= offset {
			newEnd = h.baseOffset
			break
		}
		pos += h.size
		newEnd = h.lastOffset + 1
	}
	gone := append([]*segment(nil), segs[i+1:]...)
	// Make the cut and the removals durable before the log end moves.
	if err := seg.log.Truncate(pos); err != nil {
		return fmt.Errorf("storage: truncate %s: %w", seg.path(logSuffix), err)
	}
	if err := seg.log.Sync(); err != nil {
		return fmt.Errorf("storage: sync %s: %w", seg.path(logSuffix), err)
	}
	rerr := l.renameForDeletion(gone)
	if rerr == nil && len(gone) > 0 {
		rerr = l.syncDir()
	}
	l.mu.Lock()
	err := l.truncateIndexesLocked(seg, pos, newEnd)
	// The aborted transactions whose markers were cut go too. The file is
	// cut without a sync: an entry past the log end that a crash brings
	// back is dropped when the log is opened.
	if terr := l.truncateTxnIndexLocked(seg, newEnd); err == nil {
		err = terr
	}
	l.segs = append([]*segment(nil), segs[:i+1]...)
	var keep []*segment
	for _, u := range l.unsynced {
		if u.baseOffset < seg.baseOffset {
			keep = append(keep, u)
		}
	}
	l.unsynced = keep
	seg.size.Store(pos)
	seg.nextOffset.Store(newEnd)
	l.logEnd.Store(newEnd)
	if l.durable.Load() > newEnd {
		l.durable.Store(newEnd)
	}
	if l.recoveryPoint.Load() > newEnd {
		l.recoveryPoint.Store(newEnd)
	}
	l.mu.Unlock()
	l.removeSegmentsLater(gone, cfg)
	if err := errors.Join(rerr, err); err != nil {
		return err
	}
	l.logger.Info("storage: truncated", "topic", l.tp.Topic, "partition", l.tp.Partition, "offset", offset, "log_end_offset", newEnd, "dir", l.dir)
	if err := l.trimEpochsEndLocked(newEnd); err != nil {
		return err
	}
	return l.rescanSegment(seg)
}

// TruncateFullyAndStartAt deletes every segment and restarts the log empty
// at offset, with an empty leader epoch cache: a follower whose log end is
// below its leader's log start offset does this before fetching again
// (Kafka's truncateFullyAndStartAt). As with Truncate, the change is
// durable before it is published. It is safe for concurrent use.
func (l *Log) TruncateFullyAndStartAt(offset int64) error {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.checkWritable(); err != nil {
		return err
	}
	if offset < 0 {
		return fmt.Errorf("storage: truncate fully to %d: %w", offset, ErrOffsetOutOfRange)
	}
	l.logger.Info("storage: truncated fully", "topic", l.tp.Topic, "partition", l.tp.Partition, "log_start_offset", offset, "dir", l.dir)
	l.beginTruncation()
	err := l.truncateFullyLocked(offset, l.cfg.Load())
	l.endTruncation()
	if err != nil {
		l.goOffline(err)
		return ErrLogDirOffline
	}
	l.notify(true)
	return nil
}

// truncateIndexesLocked cuts seg's indexes after a truncation of its log to
// pos, where newEnd is the segment's new next offset.
func (l *Log) truncateIndexesLocked(seg *segment, pos, newEnd int64) error {
	if err := seg.index.truncateAfterPos(pos); err != nil {
		return fmt.Errorf("storage: truncate %s: %w", seg.path(indexSuffix), err)
	}
	if err := seg.timeIndex.truncateFromRel(int32(newEnd - seg.baseOffset)); err != nil {
		return fmt.Errorf("storage: truncate %s: %w", seg.path(timeIndexSuffix), err)
	}
	return nil
}

// truncateFullyLocked deletes every segment and starts an empty log at
// offset. The old files are renamed away and the new segment created
// before one directory fsync, which comes before the new offsets are
// published. Called between beginTruncation and endTruncation.
func (l *Log) truncateFullyLocked(offset int64, cfg *Config) error {
	l.mu.RLock()
	old := l.segs
	l.mu.RUnlock()
	// Move the old files aside first: the new segment may reuse a name.
	// NB: on an error the log goes offline with its old segments still
	// open; Close closes them and the next open removes the .deleted files.
	if err := l.renameForDeletion(old); err != nil {
		return err
	}
	seg, err := createSegment(l.fs, l.dir, offset, cfg)
	if err != nil {
		return err
	}
	if err := l.syncDir(); err != nil {
		seg.close()
		return err
	}
	l.mu.Lock()
	l.segs = []*segment{seg}
	l.unsynced = nil
	l.logStart.Store(offset)
	l.logEnd.Store(offset)
	l.durable.Store(offset)
	l.recoveryPoint.Store(offset)
	l.mu.Unlock()
	l.removeSegmentsLater(old, cfg)
	if len(l.epochs) > 0 {
		// Kafka clears the cache when a log restarts empty.
		return l.setEpochsLocked(nil)
	}
	return nil
}
