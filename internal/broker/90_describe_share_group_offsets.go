package broker

// DescribeShareGroupOffsets: v0 (KIP-932)
//
// Served by the group's coordinator: the share-partition start offset
// (SPSO) of each partition, read from its share coordinator, or -1 for a
// partition the group has no state for. No Topics means every topic the
// group's members subscribed to. DESCRIBE on the group (else
// GROUP_AUTHORIZATION_FAILED for the group) and on each topic (else
// TOPIC_AUTHORIZATION_FAILED for its partitions), as Kafka checks them.
// Differences from Kafka: v1 (Lag) is not served; LeaderEpoch is -1.

import (
	"context"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/server"
)

func (b *Broker) handleDescribeShareGroupOffsets(ctx context.Context, c *server.Conn, req *kmsg.DescribeShareGroupOffsetsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeShareGroupOffsetsResponse)
	z := b.authzFor(c)
	img := b.cluster.Image()
	for _, g := range req.Groups {
		rg := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
		rg.GroupID = g.GroupID
		if !z.group(opDescribe, g.GroupID) {
			rg.ErrorCode = kerr.GroupAuthorizationFailed.Code
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		if _, _, _, err := b.describeShareGroup(g.GroupID); err != nil {
			rg.ErrorCode, rg.ErrorMessage = groupCode(err), errMessage(err)
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		topics := g.Topics
		if topics == nil {
			b.shares.mu.Lock()
			var names []string
			for n := range b.shares.topics[g.GroupID] {
				names = append(names, n)
			}
			b.shares.mu.Unlock()
			sort.Strings(names)
			for _, n := range names {
				t := img.Topics[n]
				if t == nil {
					continue
				}
				rt := kmsg.NewDescribeShareGroupOffsetsRequestGroupTopic()
				rt.Topic = n
				for p := range t.Replicas {
					rt.Partitions = append(rt.Partitions, int32(p))
				}
				topics = append(topics, rt)
			}
		}
		for _, t := range topics {
			rt := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
			rt.Topic = t.Topic
			ti := img.Topics[t.Topic]
			if ti != nil {
				rt.TopicID = ti.ID
			}
			for _, p := range t.Partitions {
				rp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
				rp.Partition, rp.StartOffset, rp.LeaderEpoch = p, -1, -1
				switch {
				case !z.topic(opDescribe, t.Topic):
					rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				case ti == nil || p < 0 || int(p) >= len(ti.Replicas):
					rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				default:
					st, ok, err := (coordPersister{b}).read(ctx, sharePartKey{g.GroupID, ti.ID, p}, -1)
					if err != nil {
						rp.ErrorCode, rp.ErrorMessage = errorCode(errCode(err)), errMessage(err)
					} else if ok {
						rp.StartOffset = st.StartOffset
					}
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			rg.Topics = append(rg.Topics, rt)
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp
}
