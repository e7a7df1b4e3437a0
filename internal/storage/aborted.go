package storage

import "fmt"

// AppendAbortedTxn records an aborted transaction in the .txnindex of the
// segment that holds its ABORT marker (t.LastOffset), normally the active
// one: the partition calls it right after appending the marker, with the
// last stable offset the partition has once the transaction ended
// (Reference: Kafka LogSegment.updateTxnIndex). Entries must come in
// increasing marker offset; an entry at or below the last one fails with an
// error (the caller replays markers from where it dropped entries, see
// TruncateAbortedTxnsFrom). It is safe for concurrent use.
func (l *Log) AppendAbortedTxn(t AbortedTxn) error {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.checkWritable(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if t.LastOffset < l.logStart.Load() || t.LastOffset >= l.logEnd.Load() {
		return fmt.Errorf("storage: aborted transaction at %d outside the log [%d, %d)", t.LastOffset, l.logStart.Load(), l.logEnd.Load())
	}
	seg := l.segs[segmentFor(l.segs, t.LastOffset)]
	if err := seg.txnIndex.append(t); err != nil {
		return fmt.Errorf("storage: %s: %w", seg.path(txnIndexSuffix), err)
	}
	return nil
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
// or after offset from every segment's index. The partition calls it before
// replaying the log from offset into its producer state, which adds them
// again, so a crash between a marker's append and its index entry never
// leaves an entry lost or doubled. It is safe for concurrent use.
func (l *Log) TruncateAbortedTxnsFrom(offset int64) error {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := segmentFor(l.segs, offset); i < len(l.segs); i++ {
		l.segs[i].txnIndex.truncateFrom(offset)
	}
	return nil
}
