package broker

// CreatePartitions: v0-3
//
// * v2: flexible versions.
// * v3: THROTTLING_QUOTA_EXCEEDED per topic once the client's
//   controller_mutation_rate is spent (KIP-599), one token per partition
//   added; before v3 the request is only throttled.
//
// Grows a topic to Count partitions; new partitions get replicas assigned
// like a new topic's. Fewer or equal partitions than now is
// INVALID_PARTITIONS; manual assignments are refused (INVALID_REQUEST), as
// in CreateTopics.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Broker) handleCreatePartitions(ctx context.Context, mq *mutationQuota, req *kmsg.CreatePartitionsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	changed := false
	for _, rt := range req.Topics {
		st := kmsg.NewCreatePartitionsResponseTopic()
		st.Topic = rt.Topic
		t := b.cluster.Image().Topics[rt.Topic]
		var err error
		var code *kerr.Error
		switch {
		case t == nil:
			code, err = kerr.UnknownTopicOrPartition, fmt.Errorf("unknown topic %q", rt.Topic)
		case len(rt.Assignment) > 0:
			code, err = kerr.InvalidRequest, fmt.Errorf("manual replica assignment is not supported")
		case rt.Count > maxPartitions:
			code, err = kerr.InvalidPartitions, fmt.Errorf("%d partitions is more than the %d a topic may have", rt.Count, maxPartitions)
		case int(rt.Count) <= len(t.Replicas):
			code, err = kerr.InvalidPartitions, fmt.Errorf("topic %q has %d partitions; the count must grow", rt.Topic, len(t.Replicas))
		default:
			err = mq.record(int(rt.Count) - len(t.Replicas))
			if err != nil {
				code = errCode(err)
				break
			}
			if req.ValidateOnly {
				break
			}
			if err = b.cluster.CreatePartitions(ctx, rt.Topic, rt.Count); err != nil {
				code = errCode(err)
			} else {
				changed = true
			}
		}
		st.ErrorCode = errorCode(code)
		st.ErrorMessage = errMessage(err)
		resp.Topics = append(resp.Topics, st)
	}
	if changed {
		if err := b.reconcile(); err != nil {
			b.log.Warn("reconcile after create partitions", "err", err)
		}
	}
	resp.ThrottleMillis = mq.throttleMillis()
	return resp
}
