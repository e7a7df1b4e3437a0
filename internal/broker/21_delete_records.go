package broker

// DeleteRecords: v0-2
//
// * v2: flexible versions.
//
// Offset -1 means the high watermark. An offset above the high watermark or
// below zero gets OFFSET_OUT_OF_RANGE. The log start offset moves at once
// (LowWatermark in the response) and segments wholly below it are deleted.
// The rules are the partition's (replica.Partition.DeleteRecords): it
// checks leadership and the high watermark under the append lock, so a
// broker that loses leadership meanwhile answers NOT_LEADER_OR_FOLLOWER
// and deletes nothing.

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Broker) handleDeleteRecords(req *kmsg.DeleteRecordsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	img := b.cluster.Image()
	for _, rt := range req.Topics {
		st := kmsg.NewDeleteRecordsResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewDeleteRecordsResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.LowWatermark = -1
			p, code := b.leaderPartition(img, rt.Topic, rp.Partition)
			if code != nil {
				sp.ErrorCode = code.Code
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			low, err := p.DeleteRecords(rp.Offset)
			if err != nil {
				sp.ErrorCode = errCode(err).Code
			} else {
				sp.LowWatermark = low
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}
