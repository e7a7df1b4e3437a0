package replica

import (
	"context"
	"fmt"

	"samsa/internal/storage"
)

// Isolation is how far a read may go into a partition's log.
type Isolation int8

// The isolation levels of a read. ReadUncommitted and ReadCommitted are a
// consumer's (Kafka's isolation_level 0 and 1); ReadLogEnd is a follower's,
// which replicates what is not committed yet.
const (
	// ReadUncommitted reads below the high watermark.
	ReadUncommitted Isolation = iota
	// ReadCommitted reads below the last stable offset.
	ReadCommitted
	// ReadLogEnd reads below the log end offset.
	ReadLogEnd
)

// ReadResult is what Read read, with the partition's offsets as they were
// when it read them.
type ReadResult struct {
	// ReadResult holds the file regions of the batches read and the
	// offset after the last of them.
	storage.ReadResult
	// HighWatermark, LastStableOffset and LogStartOffset are the
	// partition's, read before the records.
	HighWatermark, LastStableOffset, LogStartOffset int64
	// End is the bound the read stopped at: the high watermark, the last
	// stable offset or the log end offset, as the isolation said.
	End int64
}

// LogStartOffset is the first offset the log holds. It is an atomic read.
func (p *Partition) LogStartOffset() int64 { return p.lg().LogStartOffset() }

// LogEndOffset is the offset the next appended record gets. It is an
// atomic read.
func (p *Partition) LogEndOffset() int64 { return p.lg().LogEndOffset() }

// Size is the size of the partition's segment files in bytes.
func (p *Partition) Size() int64 { return p.lg().Size() }

// SegmentCount is the number of the partition's segments.
func (p *Partition) SegmentCount() int { return p.lg().SegmentCount() }

// EndOffset is the first offset a reader at iso cannot read yet: the high
// watermark, the last stable offset or the log end offset. ListOffsets
// answers LATEST with it.
func (p *Partition) EndOffset(iso Isolation) int64 {
	switch iso {
	case ReadCommitted:
		return p.LastStableOffset()
	case ReadLogEnd:
		return p.LogEndOffset()
	}
	return p.HighWatermark()
}

// Read reads whole batches from offset, at most maxBytes of them (but one
// batch whatever its size when minOne is set), below the bound iso gives:
// a consumer at ReadUncommitted reads below the high watermark, at
// ReadCommitted below the last stable offset, a follower (ReadLogEnd)
// below the log end. An offset outside [log start, log end] is
// storage.ErrOffsetOutOfRange; an offset at or past the bound reads
// nothing. The regions returned stay readable until the segments are
// deleted; the caller owns the result. It takes no lock of the partition
// and allocates nothing beyond the log's read.
func (p *Partition) Read(offset, maxBytes int64, minOne bool, iso Isolation) (ReadResult, error) {
	// NB: the last stable offset is read first: it is at most the high
	// watermark read after it, which can only have grown.
	var r ReadResult
	r.LastStableOffset = p.LastStableOffset()
	r.HighWatermark = p.HighWatermark()
	r.LogStartOffset = p.lg().LogStartOffset()
	leo := p.lg().LogEndOffset()
	if offset < r.LogStartOffset || offset > leo {
		return r, storage.ErrOffsetOutOfRange
	}
	switch iso {
	case ReadCommitted:
		r.End = r.LastStableOffset
	case ReadLogEnd:
		r.End = leo
	default:
		r.End = r.HighWatermark
	}
	if offset >= r.End {
		return r, nil
	}
	res, err := p.lg().Read(offset, max(maxBytes, 0), r.End, minOne)
	if err != nil {
		p.readFailed(err)
	}
	r.ReadResult = res
	return r, err
}

// ReadRecords reads whole batches from offset below end (capped by the log
// end), at most maxBytes of them but at least one. The coordinators load
// their partitions with it, up to the log end they saw when the load began,
// committed or not (a new leader's high watermark trails records it will
// never truncate).
func (p *Partition) ReadRecords(offset, maxBytes, end int64) (storage.ReadResult, error) {
	res, err := p.lg().Read(offset, maxBytes, min(end, p.lg().LogEndOffset()), true)
	if err != nil {
		p.readFailed(err)
	}
	return res, err
}

// OffsetForTimestamp answers ListOffsets by timestamp: the first offset
// whose record timestamp is at least ts, with that timestamp. ok is false
// when there is none below the bound iso gives: a consumer is never told
// of an offset it could not fetch yet (Reference: Kafka
// Partition.fetchOffsetForTimestamp).
func (p *Partition) OffsetForTimestamp(ts int64, iso Isolation) (offset, timestamp int64, ok bool, err error) {
	bound := p.EndOffset(iso)
	off, found, ok, err := p.lg().OffsetForTimestamp(ts)
	if err != nil || !ok || off >= bound {
		return 0, 0, false, err
	}
	return off, found, true, nil
}

// MaxTimestamp answers ListOffsets' MAX_TIMESTAMP (KIP-734): the largest
// timestamp in the log and the first offset that has it. ok is false for an
// empty log and when that offset is not below the bound iso gives.
func (p *Partition) MaxTimestamp(iso Isolation) (timestamp, offset int64, ok bool, err error) {
	bound := p.EndOffset(iso)
	ts, off, ok, err := p.lg().MaxTimestamp()
	if err != nil || !ok || off >= bound {
		return 0, 0, false, err
	}
	return ts, off, true, nil
}

// EndOffsetForEpoch answers OffsetForLeaderEpoch (KIP-101, KIP-279) for
// epoch: the largest epoch at most epoch the log knows and the offset it
// ends at. The current leader epoch ends at the log end offset even before
// anything was written in it (the epoch is assigned at the log end when
// this replica becomes leader); an epoch newer than the current one, and
// one older than every epoch the log knows, is (-1, -1).
func (p *Partition) EndOffsetForEpoch(epoch int32) (foundEpoch int32, endOffset int64) {
	cur := p.LeaderEpoch()
	switch {
	case epoch < 0 || epoch > cur:
		return -1, -1
	case epoch == cur:
		return epoch, p.lg().LogEndOffset()
	}
	return p.lg().EndOffsetForEpoch(epoch)
}

// HoldAck reports whether the flusher is behind on the partition's log, so
// that an acks=1 answer should wait until its batch is durable
// (storage.Log.HoldAck). It is an atomic read.
func (p *Partition) HoldAck() bool { return p.lg().HoldAck() }

// WaitDurable blocks until the log is durable below offset, the log fails
// (its error) or ctx is done (its error). Role changes do not end it: an
// acks=1 answer held by HoldAck only paces the producer.
func (p *Partition) WaitDurable(ctx context.Context, offset int64) error {
	return p.lg().WaitDurable(ctx, offset)
}

// DeleteRecords moves the log start offset up to offset (DeleteRecords)
// and deletes the segments wholly below it; offset -1 means the high
// watermark. It returns the new log start offset. It fails with
// ErrNotLeader unless this broker leads the partition, and with
// storage.ErrOffsetOutOfRange for an offset below zero or above the high
// watermark (Reference: Kafka Partition.deleteRecordsOnLeader).
//
// The leadership check, the high watermark it reads and the deletion run
// under the append lock, which a change of role also takes, so the records
// are deleted only by the leader that checked, below its own high
// watermark.
func (p *Partition) DeleteRecords(offset int64) (int64, error) {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	if !p.IsLeader() {
		return 0, ErrNotLeader
	}
	hw := p.HighWatermark()
	if offset == -1 {
		offset = hw
	}
	if offset < 0 || offset > hw {
		return 0, fmt.Errorf("replica: delete records before %d (high watermark %d): %w", offset, hw, storage.ErrOffsetOutOfRange)
	}
	return p.lg().DeleteRecordsBefore(offset)
}

// LegacyOffsets answers a ListOffsets v0 partition as Kafka 3.x did
// (Partition.legacyFetchOffsetsForTimestamp): see legacyOffsets. It lists
// the segments, one allocation per call.
func (p *Partition) LegacyOffsets(ts int64, maxNum int32, nowMs int64) []int64 {
	hw := p.HighWatermark()
	return legacyOffsets(p.lg().Segments(), p.lg().LogStartOffset(), p.lg().LogEndOffset(), hw, ts, maxNum, nowMs)
}

// legacyOffsets lists a ListOffsets v0 answer (Kafka 3.x
// UnifiedLog.legacyFetchOffsetsBefore, then the high watermark clamp of
// Partition.legacyFetchOffsetsForTimestamp): the candidates are each
// segment's base offset (at least the log start) and, when the last
// segment holds records, the log end offset; timestamp -1 starts at the
// newest candidate, -2 at the oldest, any other at the newest whose
// segment's time is at most it. From there up to maxNum offsets are
// listed, newest first; offsets above the high watermark hw are replaced
// by hw. Kafka dates a segment by its file's modification time; samsa by
// the largest record timestamp in it (the log end by now), which is when
// the segment's last record was written unless producers set timestamps.
// The log end is dated nowMs.
func legacyOffsets(segs []storage.SegmentInfo, logStart, logEnd, hw, ts int64, maxNum int32, nowMs int64) []int64 {
	type cand struct{ offset, time int64 }
	cands := make([]cand, 0, len(segs)+1)
	for _, s := range segs {
		cands = append(cands, cand{max(s.BaseOffset, logStart), s.MaxTimestamp})
	}
	if n := len(segs); n > 0 && segs[n-1].Size > 0 {
		cands = append(cands, cand{max(logEnd, logStart), nowMs})
	}
	start := len(cands) - 1
	switch ts {
	case -1:
	case -2:
		start = min(start, 0)
	default:
		for start >= 0 && cands[start].time > ts {
			start--
		}
	}
	out := make([]int64, 0, max(0, min(int(maxNum), start+1)))
	for i := start; i >= 0 && len(out) < int(maxNum); i-- {
		out = append(out, cands[i].offset)
	}
	// Reference: Kafka Partition.legacyFetchOffsetsForTimestamp: a
	// consumer is never told of an offset above the high watermark.
	if len(out) > 0 && out[0] > hw {
		i := 0
		for i < len(out) && out[i] > hw {
			i++
		}
		out = append([]int64{hw}, out[i:]...)
	}
	return out
}
