package broker

// DescribeProducers: v0 (KIP-664)
//
// Lists the active producers of each partition led here: id, epoch, last
// sequence and the timestamp of its last batch, the coordinator epoch of
// its last transaction marker and the first offset of its open
// transaction (-1 when none).

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Broker) handleDescribeProducers(req *kmsg.DescribeProducersRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeProducersResponse)
	img := b.cluster.Image()
	for _, rt := range req.Topics {
		st := kmsg.NewDescribeProducersResponseTopic()
		st.Topic = rt.Topic
		for _, part := range rt.Partitions {
			sp := kmsg.NewDescribeProducersResponseTopicPartition()
			sp.Partition = part
			p, code := b.leaderPartition(img, rt.Topic, part)
			if code != nil {
				sp.ErrorCode = code.Code
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			for _, pr := range p.Producers() {
				ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
				ap.ProducerID = pr.ID
				ap.ProducerEpoch = int32(pr.Epoch)
				ap.LastSequence, ap.LastTimestamp = -1, -1
				if n := len(pr.Batches); n > 0 {
					ap.LastSequence = pr.Batches[n-1].LastSeq
					ap.LastTimestamp = pr.Batches[n-1].Timestamp
				}
				ap.CoordinatorEpoch = pr.CoordinatorEpoch
				ap.CurrentTxnStartOffset = pr.CurrentTxnFirstOffset
				sp.ActiveProducers = append(sp.ActiveProducers, ap)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}
