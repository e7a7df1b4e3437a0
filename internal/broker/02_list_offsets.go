package broker

// ListOffsets: v0-11
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
// * v9: timestamp -5, the latest offset in tiered storage (KIP-1005).
//   samsa has no tiered storage, so it answers as Kafka does for a topic
//   without remote storage: no error, offset -1, timestamp -1, leader
//   epoch -1 (Reference: Kafka UnifiedLog.fetchOffsetByTimestamp,
//   LATEST_TIERED_TIMESTAMP when remoteLogEnabled is false).
// * v10: TimeoutMillis (KIP-1075), a bound on remote storage lookups;
//   samsa has none to bound, so it is accepted and not used.
// * v11: timestamp -6, the earliest offset still pending upload to tiered
//   storage (KIP-1023); answered as -5 is, offset -1, timestamp -1,
//   leader epoch -1, as Kafka's fetchEarliestPendingUploadOffset does
//   without remote storage.
//
// A special timestamp below the version that introduced it (-3 below v7,
// -5 below v9, -6 below v11) is UNSUPPORTED_VERSION, like any other
// negative timestamp that is not one of them.
//
// Offsets are bounded by what a consumer at the request's isolation level
// can fetch: a lookup by timestamp never returns an offset it could not
// fetch yet. A new leader whose high watermark is still below the start
// of its leader epoch answers a client (replica id -1, v1+)
// OFFSET_NOT_AVAILABLE, which clients retry: its high watermark may trail
// what the previous leader acknowledged until the followers' next fetches
// (Reference: Kafka Partition.fetchOffsetForTimestamp).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/replica"
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
			if err := p.OffsetsAvailable(); err != nil && req.Version >= 1 && req.ReplicaID == -1 {
				sp.ErrorCode = errCode(err).Code
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			sp.LeaderEpoch = p.LeaderEpoch()
			if req.Version == 0 {
				sp.OldStyleOffsets = p.LegacyOffsets(rp.Timestamp, rp.MaxNumOffsets, b.now().UnixMilli())
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			iso := replica.ReadUncommitted
			if req.Version >= 2 && req.IsolationLevel == 1 {
				iso = replica.ReadCommitted
			}
			switch ts := rp.Timestamp; {
			case ts == -1: // latest
				sp.Offset = p.EndOffset(iso)
			case ts == -2 || ts == -4: // earliest, earliest local
				sp.Offset = p.LogStartOffset()
			case ts == -5 && req.Version >= 9, ts == -6 && req.Version >= 11:
				// Latest tiered, earliest pending upload: no tiered
				// storage, so nothing is tiered or pending.
				sp.LeaderEpoch = -1
			case ts == -3 && req.Version >= 7: // max timestamp
				mts, off, ok, err := p.MaxTimestamp(iso)
				switch {
				case err != nil:
					sp.ErrorCode = errCode(err).Code
				case ok:
					sp.Timestamp, sp.Offset = mts, off
				}
			case ts < 0:
				sp.ErrorCode = kerr.UnsupportedVersion.Code
			default:
				off, found, ok, err := p.OffsetForTimestamp(ts, iso)
				switch {
				case err != nil:
					sp.ErrorCode = errCode(err).Code
				case ok:
					sp.Timestamp, sp.Offset = found, off
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}
