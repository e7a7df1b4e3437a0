package broker

// DescribeTopicPartitions: v0 (KIP-966)
//
// The partitions of the topics named, or of every topic the principal may
// describe when none is named, in name order and partition order, as the
// Java admin client's describeTopics asks for them from Kafka 3.8 on. At
// most ResponsePartitionLimit partitions (capped at Kafka's
// max.request.partition.size.limit default, 2000) are answered; NextCursor
// then names the first partition left out, and a request with Cursor
// starts there. A named topic that does not exist gets
// UNKNOWN_TOPIC_OR_PARTITION, one the principal may not describe
// TOPIC_AUTHORIZATION_FAILED; in the listing of every topic those are left
// out. A Cursor naming a topic outside the request's list is
// INVALID_REQUEST. EligibleLeaderReplicas and LastKnownELR are the
// partition's KIP-966 sets as the controller keeps them (empty while
// eligible.leader.replicas.enable is off).
//
// Reference: Kafka DescribeTopicPartitionsRequestHandler.

import (
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/server"
)

// maxDescribePartitions is Kafka's max.request.partition.size.limit
// default: the most partitions one DescribeTopicPartitions answers.
const maxDescribePartitions = 2000

func (b *Broker) handleDescribeTopicPartitions(c *server.Conn, req *kmsg.DescribeTopicPartitionsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeTopicPartitionsResponse)
	img := b.cluster.Image()
	z := b.authzFor(c)
	all := len(req.Topics) == 0
	var names []string
	if all {
		for name := range img.Topics {
			if z.topic(opDescribe, name) {
				names = append(names, name)
			}
		}
	} else {
		for _, t := range req.Topics {
			names = append(names, t.Topic)
		}
		if req.Cursor != nil && !slices.Contains(names, req.Cursor.Topic) {
			resp.Topics = nil
			for _, name := range names {
				rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
				rt.Topic, rt.ErrorCode = &name, kerr.InvalidRequest.Code
				resp.Topics = append(resp.Topics, rt)
			}
			return resp
		}
	}
	sort.Strings(names)
	names = slices.Compact(names)
	limit := int(req.ResponsePartitionLimit)
	if limit <= 0 || limit > maxDescribePartitions {
		limit = maxDescribePartitions
	}
	start := 0
	if req.Cursor != nil {
		start = sort.SearchStrings(names, req.Cursor.Topic)
	}
	left := limit
	for i := start; i < len(names); i++ {
		name := names[i]
		rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
		rt.Topic = &name
		rt.AuthorizedOperations = -2147483648
		t := img.Topics[name]
		switch {
		case !z.topic(opDescribe, name):
			rt.ErrorCode = kerr.TopicAuthorizationFailed.Code
			resp.Topics = append(resp.Topics, rt)
			continue
		case t == nil:
			rt.ErrorCode = kerr.UnknownTopicOrPartition.Code
			resp.Topics = append(resp.Topics, rt)
			continue
		}
		rt.TopicID, rt.IsInternal = t.ID, isInternalTopic(name)
		rt.AuthorizedOperations = z.authorizedOperations(kmsg.ACLResourceTypeTopic, name, topicOps...)
		first := 0
		if req.Cursor != nil && name == req.Cursor.Topic {
			first = int(max(req.Cursor.Partition, 0))
		}
		mt := metadataTopic(img, t)
		for p := first; p < len(mt.Partitions); p++ {
			if left == 0 {
				resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name, Partition: int32(p)}
				break
			}
			mp := mt.Partitions[p]
			rp := kmsg.NewDescribeTopicPartitionsResponseTopicPartition()
			rp.ErrorCode, rp.Partition = mp.ErrorCode, mp.Partition
			rp.LeaderID, rp.LeaderEpoch = mp.Leader, mp.LeaderEpoch
			rp.Replicas, rp.ISR, rp.OfflineReplicas = mp.Replicas, mp.ISR, mp.OfflineReplicas
			rp.EligibleLeaderReplicas, rp.LastKnownELR = []int32{}, []int32{}
			if p < len(t.Partitions) {
				rp.EligibleLeaderReplicas = append(rp.EligibleLeaderReplicas, t.Partitions[p].ELR...)
				rp.LastKnownELR = append(rp.LastKnownELR, t.Partitions[p].LastKnownELR...)
			}
			if rp.OfflineReplicas == nil {
				rp.OfflineReplicas = []int32{}
			}
			rt.Partitions = append(rt.Partitions, rp)
			left--
		}
		resp.Topics = append(resp.Topics, rt)
		if resp.NextCursor != nil {
			break
		}
		if left == 0 && i+1 < len(names) {
			resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: names[i+1], Partition: 0}
			break
		}
	}
	return resp
}
