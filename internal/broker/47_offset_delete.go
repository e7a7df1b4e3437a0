package broker

// OffsetDelete: v0 (KIP-496)
//
// Deletes a group's committed offsets of partitions it is not subscribed to
// (GROUP_SUBSCRIBED_TO_TOPIC otherwise).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/group"
	"samsa/internal/server"
)

func (b *Broker) handleOffsetDelete(req *kmsg.OffsetDeleteRequest) server.Reply {
	gr := group.OffsetDeleteRequest{Group: req.Group}
	for _, t := range req.Topics {
		ft := group.OffsetFetchTopic{Topic: t.Topic}
		for _, p := range t.Partitions {
			ft.Partitions = append(ft.Partitions, p.Partition)
		}
		gr.Topics = append(gr.Topics, ft)
	}
	return server.Reply{Wait: func(ctx context.Context) server.Reply {
		res, err := b.groups.OffsetDelete(ctx, gr)
		resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
		resp.ErrorCode = groupCode(err)
		if err == nil {
			for _, t := range res.Topics {
				rt := kmsg.NewOffsetDeleteResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewOffsetDeleteResponseTopicPartition()
					rp.Partition, rp.ErrorCode = p.Partition, groupCode(p.Err)
					rt.Partitions = append(rt.Partitions, rp)
				}
				resp.Topics = append(resp.Topics, rt)
			}
		}
		return server.Reply{Msg: resp}
	}}
}
