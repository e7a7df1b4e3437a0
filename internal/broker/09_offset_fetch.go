package broker

// OffsetFetch: v0-9
//
// * v0: as v1. Kafka 3.x read v0's offsets from ZooKeeper (clients of
//   Kafka 0.8.1); there is none here, so v0 reads the offsets the group
//   coordinator stores, as v1 does.
// * v2: a null topic list fetches every committed partition; top-level
//   ErrorCode.
// * v5: LeaderEpoch per partition (KIP-320).
// * v6: flexible versions.
// * v7: RequireStable (KIP-447): a partition that an open transaction has
//   a pending offset for (TxnOffsetCommit) answers UNSTABLE_OFFSET_COMMIT
//   and offset -1, and the consumer retries.
// * v8: many groups per request (KIP-709).
// * v9: MemberID and MemberEpoch (KIP-848), not checked for classic
//   groups; a consumer group answers UNKNOWN_MEMBER_ID or
//   STALE_MEMBER_EPOCH for a member id it does not know or another epoch
//   (no member id is not checked, as Kafka's admin fetches).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/group"
)

func (b *Broker) handleOffsetFetch(ctx context.Context, req *kmsg.OffsetFetchRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	if req.Version >= 8 {
		for _, g := range req.Groups {
			rg := kmsg.NewOffsetFetchResponseGroup()
			rg.Group = g.Group
			topics := fetchTopics(g.Topics, func(t kmsg.OffsetFetchRequestGroupTopic) group.OffsetFetchTopic {
				return group.OffsetFetchTopic{Topic: t.Topic, Partitions: t.Partitions}
			})
			gr := group.OffsetFetchRequest{Group: g.Group, Topics: topics, RequireStable: req.RequireStable}
			if req.Version >= 9 {
				gr.MemberID, gr.MemberEpoch = g.MemberID, g.MemberEpoch
			}
			res, err := b.groups.OffsetFetch(ctx, gr)
			rg.ErrorCode = groupCode(err)
			for _, t := range res.Topics {
				rt := kmsg.NewOffsetFetchResponseGroupTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
					rp.Partition, rp.Offset, rp.LeaderEpoch = p.Partition, p.Offset, p.LeaderEpoch
					md := p.Metadata
					rp.Metadata = &md
					rp.ErrorCode = groupCode(p.Err)
					rt.Partitions = append(rt.Partitions, rp)
				}
				rg.Topics = append(rg.Topics, rt)
			}
			resp.Groups = append(resp.Groups, rg)
		}
		return resp
	}
	topics := fetchTopics(req.Topics, func(t kmsg.OffsetFetchRequestTopic) group.OffsetFetchTopic {
		return group.OffsetFetchTopic{Topic: t.Topic, Partitions: t.Partitions}
	})
	res, err := b.groups.OffsetFetch(ctx, group.OffsetFetchRequest{Group: req.Group, Topics: topics, RequireStable: req.RequireStable})
	resp.ErrorCode = groupCode(err)
	if err != nil && req.Version < 2 {
		// v0-1 have no top-level error: report it on every partition asked.
		for _, t := range req.Topics {
			rt := kmsg.NewOffsetFetchResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetFetchResponseTopicPartition()
				rp.Partition, rp.Offset, rp.ErrorCode = p, -1, groupCode(err)
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	for _, t := range res.Topics {
		rt := kmsg.NewOffsetFetchResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetFetchResponseTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch = p.Partition, p.Offset, p.LeaderEpoch
			md := p.Metadata
			rp.Metadata = &md
			rp.ErrorCode = groupCode(p.Err)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// fetchTopics converts the topics of an OffsetFetch request; a null list
// (every committed partition) stays nil.
func fetchTopics[T any](ts []T, conv func(T) group.OffsetFetchTopic) []group.OffsetFetchTopic {
	if ts == nil {
		return nil
	}
	out := make([]group.OffsetFetchTopic, len(ts))
	for i, t := range ts {
		out[i] = conv(t)
	}
	return out
}
