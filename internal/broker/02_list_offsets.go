package broker

// ListOffsets: v0-8
//
// * v0: a list of offsets per partition, at most MaxNumOffsets, newest
//   first, as Kafka 3.x answered it (legacyOffsets).
// * v1: one offset per partition; timestamp -1 latest, -2 earliest.
// * v2: isolation level (KIP-98); at read_committed (1) LATEST is the last
//   stable offset and a lookup by timestamp (or -3) never returns an offset
//   at or above it; at read_uncommitted the bound is the high watermark.
// * v4: CurrentLeaderEpoch in the request (KIP-320), LeaderEpoch in the
//   response.
// * v6: flexible versions.
// * v7: timestamp -3, the record with the largest timestamp (KIP-734).
// * v8: timestamp -4, earliest local offset (KIP-405); without tiered
//   storage it is the log start offset.
//
// Offsets are bounded by what a consumer at the request's isolation level
// can fetch: a lookup by timestamp never returns an offset it could not
// fetch yet (Reference: Kafka Partition.fetchOffsetForTimestamp).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/storage"
)

func (b *Broker) handleListOffsets(req *kmsg.ListOffsetsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	img := b.cluster.Image()
	for i := range req.Topics {
		rt := &req.Topics[i]
		st := kmsg.NewListOffsetsResponseTopic()
		st.Topic = rt.Topic
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			sp := kmsg.NewListOffsetsResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.Timestamp, sp.Offset, sp.LeaderEpoch = -1, -1, -1
			p, code := b.leaderPartition(img, rt.Topic, rp.Partition)
			if code != nil {
				sp.ErrorCode = code.Code
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			if code := checkLeaderEpoch(p, rp.CurrentLeaderEpoch); code != 0 {
				sp.ErrorCode = code
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			sp.LeaderEpoch = p.LeaderEpoch()
			// bound is the first offset the consumer cannot fetch yet.
			bound := p.HighWatermark()
			if req.Version == 0 {
				sp.OldStyleOffsets = legacyOffsets(p.Log.Segments(), p.Log.LogStartOffset(), p.Log.LogEndOffset(), bound, rp.Timestamp, rp.MaxNumOffsets, b.now().UnixMilli())
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			if req.Version >= 2 && req.IsolationLevel == 1 {
				bound = p.LastStableOffset()
			}
			switch ts := rp.Timestamp; {
			case ts == -1: // latest
				sp.Offset = bound
			case ts == -2 || ts == -4: // earliest, earliest local
				sp.Offset = p.Log.LogStartOffset()
			case ts == -3 && req.Version >= 7: // max timestamp
				mts, off, ok, err := p.Log.MaxTimestamp()
				switch {
				case err != nil:
					sp.ErrorCode = errCode(err).Code
				case ok && off < bound:
					sp.Timestamp, sp.Offset = mts, off
				}
			case ts < 0:
				sp.ErrorCode = kerr.UnsupportedVersion.Code
			default:
				off, found, ok, err := p.Log.OffsetForTimestamp(ts)
				switch {
				case err != nil:
					sp.ErrorCode = errCode(err).Code
				case ok && off < bound:
					sp.Timestamp, sp.Offset = found, off
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

// legacyOffsets answers a ListOffsets v0 partition as Kafka 3.x did
// (UnifiedLog.legacyFetchOffsetsBefore, then the high watermark clamp of
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
