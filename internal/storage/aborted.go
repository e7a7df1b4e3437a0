package storage

import (
	"fmt"
	"os"

	"samsa/internal/vfs"
)

// AppendAbortedTxn records an aborted transaction in the .txnindex of the
// segment that holds its ABORT marker (t.LastOffset), normally the active
// one: the partition calls it right after appending the marker, with the
// last stable offset the partition has once the transaction ended
// (Reference: Kafka LogSegment.updateTxnIndex). The file is created with
// the segment's first entry and written at once, but fsynced only with the
// segment, by SyncAbortedTxns, or not at all: the partition rebuilds
// entries above its newest producer snapshot from the log at load
// (TruncateAbortedTxnsFrom, then a replay of the markers).
//
// Entries must come in increasing marker offset; an entry at or below the
// last one, or a marker outside the log, fails with an error and changes
// nothing. A write error takes the log dir offline (ErrLogDirOffline). It
// is safe for concurrent use.
func (l *Log) AppendAbortedTxn(t AbortedTxn) error {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.checkWritable(); err != nil {
		return err
	}
	if t.LastOffset < l.logStart.Load() || t.LastOffset >= l.logEnd.Load() {
		return fmt.Errorf("storage: aborted transaction at %d outside the log [%d, %d)", t.LastOffset, l.logStart.Load(), l.logEnd.Load())
	}
	l.mu.RLock()
	seg := l.segs[segmentFor(l.segs, t.LastOffset)]
	err := seg.txnIndex.check(t)
	l.mu.RUnlock()
	if err != nil {
		return fmt.Errorf("storage: %s: %w", seg.path(txnIndexSuffix), err)
	}
	if seg.txnFile == nil {
		f, err := l.fs.OpenReadWrite(seg.path(txnIndexSuffix))
		if err == nil {
			err = f.Truncate(0)
			if err != nil {
				f.Close()
			}
		}
		if err != nil {
			l.goOffline(fmt.Errorf("storage: create %s: %w", seg.path(txnIndexSuffix), err))
			return ErrLogDirOffline
		}
		seg.fileMu.Lock()
		seg.txnFile = f
		seg.fileMu.Unlock()
		l.mu.Lock()
		l.dirDirty = true
		l.mu.Unlock()
	}
	var buf [abortedTxnSize]byte
	if _, err := seg.txnFile.Write(t.encode(buf[:0])); err != nil {
		l.goOffline(fmt.Errorf("storage: write %s: %w", seg.path(txnIndexSuffix), err))
		return ErrLogDirOffline
	}
	seg.txnUnsynced = true
	l.mu.Lock()
	err = seg.txnIndex.append(t)
	l.mu.Unlock()
	return err
}

// CollectAbortedTxns returns the aborted transactions that overlap the
// offsets [start, end): marker at or after start and first record before
// end, in marker order. It walks the segments from the one holding start
// and stops at the first whose index shows that no later transaction can
// begin below end (Reference: Kafka LocalLog.collectAbortedTransactions).
// The caller owns the returned slice; it is nil when there is none. It is
// safe for concurrent use and does no IO.
func (l *Log) CollectAbortedTxns(start, end int64) []AbortedTxn {
	if start >= end {
		return nil
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	var out []AbortedTxn
	for i := segmentFor(l.segs, start); i < len(l.segs); i++ {
		// NB: a segment past end can still hold the marker of a
		// transaction that began below end; only an entry whose last
		// stable offset reaches end proves that none is left.
		var complete bool
		out, complete = l.segs[i].txnIndex.collectAborted(out, start, end)
		if complete {
			break
		}
	}
	return out
}

// TruncateAbortedTxnsFrom drops the aborted transactions whose marker is at
// or after offset from every segment's index and file. The partition calls
// it before replaying the log from offset into its producer state, which
// adds them again, so a crash between a marker's append and its index
// entry never leaves an entry lost or doubled. A file error takes the log
// dir offline (ErrLogDirOffline). It is safe for concurrent use.
func (l *Log) TruncateAbortedTxnsFrom(offset int64) error {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.checkWritable(); err != nil {
		return err
	}
	var err error
	l.mu.Lock()
	for i := segmentFor(l.segs, offset); i < len(l.segs) && err == nil; i++ {
		err = l.truncateTxnIndexLocked(l.segs[i], offset)
	}
	l.mu.Unlock()
	if err != nil {
		l.goOffline(err)
		return ErrLogDirOffline
	}
	return nil
}

// truncateTxnIndexLocked drops seg's aborted transactions with a marker at
// or after offset, in memory and in its file. Called with appendMu and mu
// held.
func (l *Log) truncateTxnIndexLocked(seg *segment, offset int64) error {
	n := len(seg.txnIndex.entries)
	size := seg.txnIndex.truncateFrom(offset)
	if seg.txnFile == nil || len(seg.txnIndex.entries) == n {
		return nil
	}
	if err := seg.txnFile.Truncate(size); err != nil {
		return fmt.Errorf("storage: truncate %s: %w", seg.path(txnIndexSuffix), err)
	}
	seg.txnUnsynced = true
	return nil
}

// SyncAbortedTxns fsyncs the .txnindex files written since the last call
// (and the directory, if one was created), so that every aborted
// transaction below the log end is durable. The partition calls it before
// writing a producer snapshot: markers below a snapshot are not replayed
// at load, so their entries must already be on disk. It blocks on IO; a
// failed fsync takes the log dir offline (ErrLogDirOffline).
func (l *Log) SyncAbortedTxns() error {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.checkWritable(); err != nil {
		return err
	}
	l.mu.RLock()
	segs := l.segs
	dirDirty := l.dirDirty
	l.mu.RUnlock()
	for _, seg := range segs {
		if !seg.txnUnsynced {
			continue
		}
		seg.fileMu.Lock()
		var err error
		if !seg.closed && seg.txnFile != nil {
			err = seg.txnFile.Sync()
		}
		seg.fileMu.Unlock()
		if err != nil {
			err = fmt.Errorf("storage: sync %s: %w", seg.path(txnIndexSuffix), err)
			l.goOffline(err)
			return ErrLogDirOffline
		}
		seg.txnUnsynced = false
	}
	if dirDirty {
		// NB: dirDirty stays set for the flusher, which also syncs the
		// segments created since; a second directory fsync is harmless.
		if err := l.syncDir(); err != nil {
			l.goOffline(err)
			return ErrLogDirOffline
		}
	}
	return nil
}

// openTxnIndex opens and decodes seg's .txnindex when it exists. A torn
// tail or a bad entry is cut off the file: what follows a bad entry cannot
// be trusted, and the partition rebuilds entries above its newest producer
// snapshot from the log anyway. Entries whose marker is at or after the
// segment's next offset (the log lost its tail) are dropped too. Called
// while the log is opened, before it is shared.
func (l *Log) openTxnIndex(seg *segment) error {
	name := seg.path(txnIndexSuffix)
	if !fileExists(l.fs, name) {
		return nil
	}
	f, err := l.fs.OpenReadWrite(name)
	if err != nil {
		return fmt.Errorf("storage: %w", err)
	}
	seg.txnFile = f
	buf, err := readAllAt(f)
	if err != nil {
		return fmt.Errorf("storage: read %s: %w", name, err)
	}
	x, valid, derr := decodeTxnIndex(buf)
	if derr != nil {
		l.logger.Warn("storage: cutting a bad .txnindex", "file", name, "validBytes", valid, "err", derr)
	}
	seg.txnIndex = x
	if valid < int64(len(buf)) {
		if err := f.Truncate(valid); err != nil {
			return fmt.Errorf("storage: truncate %s: %w", name, err)
		}
	}
	size := seg.txnIndex.truncateFrom(seg.nextOffset.Load())
	if size < valid {
		if err := f.Truncate(size); err != nil {
			return fmt.Errorf("storage: truncate %s: %w", name, err)
		}
	}
	return nil
}

// removeStaleTxnIndex removes a .txnindex left at base by an earlier
// segment, so that a new segment there starts with none.
func removeStaleTxnIndex(fs vfs.FS, s *segment) error {
	if err := fs.Remove(s.path(txnIndexSuffix)); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("storage: create segment: remove %s: %w", s.path(txnIndexSuffix), err)
	}
	return nil
}
