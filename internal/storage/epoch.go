package storage

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// leaderEpochFile is the per-partition leader epoch checkpoint.
const leaderEpochFile = "leader-epoch-checkpoint"

// EpochEntry is one leader epoch and the first offset written under it.
type EpochEntry struct {
	Epoch       int32
	StartOffset int64
}

// LatestEpoch returns the largest leader epoch in the log's epoch cache,
// and false when the cache is empty. It is safe for concurrent use.
func (l *Log) LatestEpoch() (epoch int32, ok bool) {
	l.epochMu.RLock()
	defer l.epochMu.RUnlock()
	if n := len(l.epochs); n > 0 {
		return l.epochs[n-1].Epoch, true
	}
	return -1, false
}

// EndOffsetForEpoch answers OffsetForLeaderEpoch (KIP-101, KIP-279): for
// epoch, the largest cached epoch <= epoch and its end offset, which is the
// start offset of the next larger cached epoch, or the log end offset when
// the found epoch is the latest. It returns (-1, -1) (UNDEFINED_EPOCH,
// UNDEFINED_EPOCH_OFFSET) when epoch is below every cached epoch or the
// cache is empty. It is safe for concurrent use.
func (l *Log) EndOffsetForEpoch(epoch int32) (foundEpoch int32, endOffset int64) {
	l.epochMu.RLock()
	defer l.epochMu.RUnlock()
	// NB: read the log end under epochMu: writers assign an epoch before
	// moving the log end, so the latest entry never starts past it.
	return endOffsetForEpoch(l.epochs, epoch, l.logEnd.Load())
}

// endOffsetForEpoch is EndOffsetForEpoch over entries (sorted by epoch and
// start offset) with log end leo.
func endOffsetForEpoch(entries []EpochEntry, epoch int32, leo int64) (int32, int64) {
	// i is the first entry with a larger epoch.
	i := 0
	for i < len(entries) && entries[i].Epoch <= epoch {
		i++
	}
	if i == 0 {
		return -1, -1
	}
	found := entries[i-1].Epoch
	if i == len(entries) {
		return found, leo
	}
	return found, entries[i].StartOffset
}

// EpochEntries returns a copy of the epoch cache, oldest first. The caller
// owns the returned slice.
func (l *Log) EpochEntries() []EpochEntry {
	l.epochMu.RLock()
	defer l.epochMu.RUnlock()
	return append([]EpochEntry(nil), l.epochs...)
}

// assignEpochLocked records that epoch starts at offset when epoch is
// larger than the latest cached one (or the cache is empty) and writes the
// checkpoint. Negative epochs (a batch written without a leader) are
// ignored. Called with appendMu held, before the batch is written, so the
// checkpoint is never behind the log (it may be ahead after a crash; load
// trims it to the log end).
func (l *Log) assignEpochLocked(epoch int32, offset int64) error {
	if epoch < 0 {
		return nil
	}
	// appendMu is held: no other writer changes epochs, so reading it
	// without epochMu is safe.
	if n := len(l.epochs); n > 0 && l.epochs[n-1].Epoch >= epoch {
		return nil
	}
	// An epoch that never got a batch (assigned at the log end, then
	// superseded there) goes, as in Kafka.
	n := len(l.epochs)
	for n > 0 && l.epochs[n-1].StartOffset >= offset {
		n--
	}
	entries := append(append(make([]EpochEntry, 0, n+1), l.epochs[:n]...), EpochEntry{epoch, offset})
	return l.setEpochsLocked(entries)
}

// setEpochsLocked persists entries as the checkpoint and then publishes
// them. Called with appendMu held.
func (l *Log) setEpochsLocked(entries []EpochEntry) error {
	if err := writeFileAtomic(l.fs, l.dir, leaderEpochFile, encodeEpochs(entries)); err != nil {
		return err
	}
	l.epochMu.Lock()
	l.epochs = entries
	l.epochMu.Unlock()
	return nil
}

// trimEpochsEndLocked removes the entries that start at or after offset
// (Kafka's truncateFromEnd). Called with appendMu held.
func (l *Log) trimEpochsEndLocked(offset int64) error {
	n := len(l.epochs)
	for n > 0 && l.epochs[n-1].StartOffset >= offset {
		n--
	}
	if n == len(l.epochs) {
		return nil
	}
	return l.setEpochsLocked(append([]EpochEntry(nil), l.epochs[:n]...))
}

// trimEpochsStartLocked applies a new log start offset (Kafka's
// truncateFromStart): entries wholly below it go, and the one that covers
// it starts at it. Called with appendMu held.
func (l *Log) trimEpochsStartLocked(lso int64) error {
	entries, changed := trimEpochsStart(l.epochs, lso)
	if !changed {
		return nil
	}
	return l.setEpochsLocked(entries)
}

// trimEpochsStart returns entries with the log start offset lso applied,
// and whether anything changed. entries is not modified.
func trimEpochsStart(entries []EpochEntry, lso int64) ([]EpochEntry, bool) {
	// i is the number of entries starting at or below lso.
	i := 0
	for i < len(entries) && entries[i].StartOffset <= lso {
		i++
	}
	if i == 0 || (i == 1 && entries[0].StartOffset == lso) {
		return entries, false
	}
	out := make([]EpochEntry, 0, len(entries)-i+1)
	out = append(out, EpochEntry{Epoch: entries[i-1].Epoch, StartOffset: lso})
	out = append(out, entries[i:]...)
	return out, true
}

// encodeEpochs returns the checkpoint text: "0\n<n>\n" then "<epoch>
// <startOffset>\n" per entry.
func encodeEpochs(entries []EpochEntry) []byte {
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "0\n%d\n", len(entries))
	for _, e := range entries {
		fmt.Fprintf(&buf, "%d %d\n", e.Epoch, e.StartOffset)
	}
	return buf.Bytes()
}

// parseEpochs parses a leader epoch checkpoint. Entries must have
// increasing epochs and non-decreasing start offsets.
func parseEpochs(data []byte) ([]EpochEntry, error) {
	lines, err := parseCheckpointText(data, 2)
	if err != nil {
		return nil, err
	}
	out := make([]EpochEntry, 0, len(lines))
	for i, f := range lines {
		e, err1 := strconv.ParseInt(f[0], 10, 32)
		o, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil || e < 0 || o < 0 {
			return nil, fmt.Errorf("%w: entry %d %q", errBadCheckpoint, i, strings.Join(f, " "))
		}
		if k := len(out); k > 0 && (int32(e) <= out[k-1].Epoch || o < out[k-1].StartOffset) {
			return nil, fmt.Errorf("%w: entry %d %q out of order", errBadCheckpoint, i, strings.Join(f, " "))
		}
		out = append(out, EpochEntry{Epoch: int32(e), StartOffset: o})
	}
	return out, nil
}

// loadEpochs reads the epoch checkpoint of a log being opened (segments,
// log start and log end set), trims it to [log start, log end) and, when
// the file is missing or unreadable or the last batch carries a larger
// epoch than the file knows (the file is behind), rebuilds the missing
// part from the batches' partitionLeaderEpoch. The file is rewritten when
// the result differs from it. Called before the log is shared.
func (l *Log) loadEpochs() error {
	path := filepath.Join(l.dir, leaderEpochFile)
	data, err := readFile(l.fs, path)
	var entries []EpochEntry
	rebuildFrom := int64(-1)
	switch {
	case os.IsNotExist(err):
		rebuildFrom = l.logStart.Load()
	case err != nil:
		return fmt.Errorf("storage: read %s: %w", path, err)
	default:
		if entries, err = parseEpochs(data); err != nil {
			l.logger.Warn("storage: rebuilding leader epoch checkpoint", "file", path, "err", err)
			entries, rebuildFrom = nil, l.logStart.Load()
		}
	}
	leo, lso := l.logEnd.Load(), l.logStart.Load()
	n := len(entries)
	for n > 0 && entries[n-1].StartOffset >= leo {
		n--
	}
	entries = entries[:n]
	entries, _ = trimEpochsStart(entries, lso)
	if rebuildFrom < 0 && leo > lso {
		last, err := l.lastBatchEpoch()
		if err != nil {
			return err
		}
		if n := len(entries); last >= 0 && (n == 0 || entries[n-1].Epoch < last) {
			rebuildFrom = lso
			if n > 0 {
				rebuildFrom = entries[n-1].StartOffset
			}
		}
	}
	if rebuildFrom >= 0 {
		if entries, err = l.scanEpochs(entries, rebuildFrom); err != nil {
			return err
		}
	}
	l.epochs = entries
	enc := encodeEpochs(entries)
	if bytes.Equal(enc, data) || (data == nil && len(entries) == 0) {
		return nil
	}
	return writeFileAtomic(l.fs, l.dir, leaderEpochFile, enc)
}

// lastBatchEpoch returns the partitionLeaderEpoch of the log's last batch,
// or -1 when the log is empty.
func (l *Log) lastBatchEpoch() (int32, error) {
	epoch := int32(-1)
	for i := len(l.segs) - 1; i >= 0; i-- {
		seg := l.segs[i]
		size := seg.size.Load()
		if size == 0 {
			continue
		}
		pos := seg.index.lookup(int32(seg.nextOffset.Load() - 1 - seg.baseOffset))
		var hbuf [scanHeaderSize]byte
		for pos < size {
			h, err := readHeader(seg.log, pos, size, &hbuf)
			if err != nil {
				return -1, fmt.Errorf("storage: read %s: %w", seg.path(logSuffix), err)
			}
			epoch = h.leaderEpoch
			pos += h.size
		}
		return epoch, nil
	}
	return epoch, nil
}

// scanEpochs reads the header of every batch holding offsets at or after
// from and adds an entry for each epoch larger than the latest in entries.
func (l *Log) scanEpochs(entries []EpochEntry, from int64) ([]EpochEntry, error) {
	var hbuf [scanHeaderSize]byte
	for i := segmentFor(l.segs, from); i < len(l.segs); i++ {
		seg := l.segs[i]
		size := seg.size.Load()
		var pos int64
		if seg.baseOffset <= from {
			pos = seg.index.lookup(int32(from - seg.baseOffset))
		}
		for pos < size {
			h, err := readHeader(seg.log, pos, size, &hbuf)
			if err != nil {
				return nil, fmt.Errorf("storage: read %s: %w", seg.path(logSuffix), err)
			}
			pos += h.size
			if h.lastOffset < from || h.leaderEpoch < 0 {
				continue
			}
			if n := len(entries); n == 0 || entries[n-1].Epoch < h.leaderEpoch {
				entries = append(entries, EpochEntry{Epoch: h.leaderEpoch, StartOffset: max(h.baseOffset, l.logStart.Load())})
			}
		}
	}
	return entries, nil
}

// AssignLeaderEpoch records that epoch starts at the current log end
// offset when it is larger than the latest cached epoch, as a replica that
// becomes leader does before it appends (Kafka's makeLeader), so that
// EndOffsetForEpoch answers for the epochs before it even while nothing
// was written in it. It writes the checkpoint; an IO error takes the log
// dir offline. It is safe for concurrent use.
func (l *Log) AssignLeaderEpoch(epoch int32) error {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.checkWritable(); err != nil {
		return err
	}
	if err := l.assignEpochLocked(epoch, l.logEnd.Load()); err != nil {
		l.goOffline(err)
		return ErrLogDirOffline
	}
	return nil
}
