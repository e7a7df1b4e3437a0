package broker

// OffsetCommit: v0-9
//
// * v1: Generation, MemberID and a per-partition Timestamp (ignored: the
//   commit time is the broker's).
// * v2-4: RetentionTimeMillis (ignored, as Kafka 2.1+ does:
//   offsets.retention.minutes applies).
// * v6: LeaderEpoch per partition (KIP-320), stored and returned by
//   OffsetFetch.
// * v7: InstanceID (KIP-345).
// * v8: flexible versions.
// * v9: the KIP-848 member epoch in Generation; classic groups check it as
//   the generation. A consumer group answers UNKNOWN_MEMBER_ID for a
//   member it does not know, STALE_MEMBER_EPOCH for another epoch than
//   the member's, and UNSUPPORTED_VERSION to its members below v9.
//
// A commit is answered once it is durable in __consumer_offsets (on the
// write goroutine).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/group"
	"samsa/internal/server"
)

func (b *Broker) handleOffsetCommit(req *kmsg.OffsetCommitRequest) server.Reply {
	gr := group.OffsetCommitRequest{
		Group: req.Group, MemberID: req.MemberID, InstanceID: req.InstanceID, Generation: req.Generation,
		Version: req.Version,
	}
	if req.Version == 0 {
		gr.Generation = -1
	}
	for _, t := range req.Topics {
		ct := group.OffsetCommitTopic{Topic: t.Topic}
		for _, p := range t.Partitions {
			epoch := p.LeaderEpoch
			if req.Version < 6 {
				epoch = -1
			}
			ct.Partitions = append(ct.Partitions, group.OffsetCommitPartition{
				Partition: p.Partition, Offset: p.Offset, LeaderEpoch: epoch, Metadata: p.Metadata,
			})
		}
		gr.Topics = append(gr.Topics, ct)
	}
	return server.Reply{Wait: func(ctx context.Context) server.Reply {
		res, err := b.groups.OffsetCommit(ctx, gr)
		resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
		for i, t := range req.Topics {
			rt := kmsg.NewOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for j, p := range t.Partitions {
				rp := kmsg.NewOffsetCommitResponseTopicPartition()
				rp.Partition = p.Partition
				perr := err
				if perr == nil && i < len(res.Topics) && j < len(res.Topics[i].Partitions) {
					perr = res.Topics[i].Partitions[j].Err
				}
				rp.ErrorCode = groupCode(perr)
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return server.Reply{Msg: resp}
	}}
}
