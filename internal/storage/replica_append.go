package storage

import (
	"fmt"

	"samsa/internal/record"
)

// AppendReplica appends batches a follower fetched from its leader exactly
// as they are: their base offsets, leader epochs, timestamps and CRCs are
// kept byte for byte. It returns the last offset of the last batch (the
// log end offset minus one; with no batches, LogEndOffset()-1).
//
// Every batch is checked before anything is written, so a refused call
// writes nothing: batches must be whole (record.Split; a truncated tail is
// refused with record.ErrShortBatch), pass record.Batch.Validate with
// AllowCompacted (framing, magic 2, CRC-32C, records), and continue the log:
// the first batch's base offset equals LogEndOffset and each next one
// starts right after the previous one's last offset. Otherwise the error
// wraps ErrOffsetMismatch. NB: a log whose cleanup.policy includes
// "compact" accepts gaps (a larger base offset), since a cleaned leader
// log has them; overlaps are always refused.
//
// A batch with a leader epoch larger than the latest cached one adds an
// epoch cache entry at its base offset. Durability follows Append: the
// flusher fsyncs, and WaitDurable(ctx, lastOffset+1) waits for it. An IO
// error takes the log dir offline (ErrLogDirOffline). batches is not
// modified or retained. It is safe for concurrent use.
func (l *Log) AppendReplica(batches []byte) (lastOffset int64, err error) {
	var bs []record.Batch
	compact := l.cfg.Load().Compact()
	for rest := batches; len(rest) > 0; {
		b, r, err := record.Split(rest)
		if err != nil {
			return -1, fmt.Errorf("storage: append replica batch %d: %w", len(bs), err)
		}
		if _, err := b.Validate(record.ValidateOptions{AllowCompacted: true}); err != nil {
			return -1, fmt.Errorf("storage: append replica batch %d at offset %d: %w", len(bs), b.BaseOffset(), err)
		}
		if int64(len(b)) > maxSegmentSize {
			return -1, fmt.Errorf("storage: append replica batch %d of %d bytes: %w", len(bs), len(b), ErrMessageTooLarge)
		}
		if k := len(bs); k > 0 {
			if err := checkContinues(bs[k-1].LastOffset()+1, b.BaseOffset(), compact); err != nil {
				return -1, fmt.Errorf("storage: append replica batch %d: %w", k, err)
			}
		}
		bs = append(bs, b)
		rest = r
	}

	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.checkWritable(); err != nil {
		return -1, err
	}
	leo := l.logEnd.Load()
	if len(bs) == 0 {
		return leo - 1, nil
	}
	if err := checkContinues(leo, bs[0].BaseOffset(), compact); err != nil {
		return -1, fmt.Errorf("storage: append replica: %w", err)
	}
	cfg := l.cfg.Load()
	nowMs := l.now().UnixMilli()
	var records int64
	for _, b := range bs {
		if err := l.writeReplicaBatchLocked(b, cfg, nowMs); err != nil {
			return -1, err
		}
		records += int64(b.NumRecords())
	}
	lastOffset = bs[len(bs)-1].LastOffset()

	l.mu.Lock()
	if !cfg.Durable() {
		l.pendingMsgs += records
	}
	pending := l.pendingMsgs
	l.mu.Unlock()
	l.notify(!cfg.Durable())
	if cfg.Durable() || (cfg.FlushMessages > 0 && pending >= cfg.FlushMessages) {
		if l.m != nil {
			l.m.markDirty(l)
		}
	}
	return lastOffset, nil
}

// checkContinues checks that a batch starting at base continues a log
// whose next offset is next.
func checkContinues(next, base int64, allowGap bool) error {
	if base == next || (allowGap && base > next) {
		return nil
	}
	return fmt.Errorf("%w: base offset %d, log continues at %d", ErrOffsetMismatch, base, next)
}

// writeReplicaBatchLocked writes one checked batch at the log end, rolling
// the segment when due. Called with appendMu held.
func (l *Log) writeReplicaBatchLocked(b record.Batch, cfg *Config, nowMs int64) error {
	if err := l.assignEpochLocked(b.LeaderEpoch(), b.BaseOffset()); err != nil {
		l.goOffline(err)
		return ErrLogDirOffline
	}
	size := int64(len(b))
	last := b.LastOffset()
	seg := l.activeSegment()
	if l.shouldRoll(seg, cfg, size, last, nowMs) {
		var err error
		if seg, err = l.rollLocked(); err != nil {
			l.goOffline(err)
			return ErrLogDirOffline
		}
	}
	pos := seg.size.Load()
	if n, err := seg.log.Write(b); err != nil || n != len(b) {
		if err == nil {
			err = fmt.Errorf("short write %d of %d", n, len(b))
		}
		l.goOffline(fmt.Errorf("storage: write %s: %w", seg.path(logSuffix), err))
		return ErrLogDirOffline
	}
	if err := l.indexBatchLocked(seg, cfg, pos, size, last, b.MaxTimestamp()); err != nil {
		l.goOffline(err)
		return ErrLogDirOffline
	}
	l.mu.Lock()
	seg.size.Store(pos + size)
	seg.nextOffset.Store(last + 1)
	l.logEnd.Store(last + 1)
	if cfg.Durable() {
		l.backlog.appendedLocked(size, l.now)
	}
	l.mu.Unlock()
	return nil
}
