package broker

// DeleteTopics: v0-6
//
// * v0: as v1, without a throttle time in the response.
// * v4: flexible versions.
// * v5: ErrorMessage; THROTTLING_QUOTA_EXCEEDED per topic once the
//   client's controller_mutation_rate is spent (KIP-599), one token per
//   partition deleted; before v5 the request is only throttled.
// * v6: topics by name or by id (KIP-516); UNKNOWN_TOPIC_ID.
//
// The topic's metadata goes from etcd at once; each broker then deletes its
// logs (renamed to <topic>-<p>.<id>-delete first) as its reconciler sees the
// topic gone. Internal topics cannot be deleted: INVALID_TOPIC_EXCEPTION.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Broker) handleDeleteTopics(ctx context.Context, mq *mutationQuota, req *kmsg.DeleteTopicsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	type target struct {
		name *string
		id   [16]byte
	}
	var targets []target
	if req.Version >= 6 {
		for _, rt := range req.Topics {
			targets = append(targets, target{rt.Topic, rt.TopicID})
		}
	} else {
		for _, name := range req.TopicNames {
			n := name
			targets = append(targets, target{name: &n})
		}
	}
	deleted := false
	for _, tg := range targets {
		st := kmsg.NewDeleteTopicsResponseTopic()
		st.Topic, st.TopicID = tg.name, tg.id
		img := b.cluster.Image()
		t := img.TopicIDs[tg.id]
		if tg.name != nil {
			t = img.Topics[*tg.name]
		}
		switch {
		case t == nil && tg.name == nil:
			st.ErrorCode = kerr.UnknownTopicID.Code
		case t == nil:
			st.ErrorCode = kerr.UnknownTopicOrPartition.Code
		case isInternalTopic(t.Name):
			st.ErrorCode = kerr.InvalidTopicException.Code
			msg := "internal topics cannot be deleted"
			st.ErrorMessage = &msg
		default:
			name := t.Name
			st.Topic, st.TopicID = &name, t.ID
			if err := mq.record(len(t.Replicas)); err != nil {
				st.ErrorCode = errCode(err).Code
				st.ErrorMessage = errMessage(err)
			} else if err := b.cluster.DeleteTopic(ctx, t.Name); err != nil {
				st.ErrorCode = errCode(err).Code
				st.ErrorMessage = errMessage(err)
			} else {
				deleted = true
			}
		}
		resp.Topics = append(resp.Topics, st)
	}
	if deleted {
		if err := b.reconcile(); err != nil {
			b.log.Warn("reconcile after delete topics", "err", err)
		}
	}
	resp.ThrottleMillis = mq.throttleMillis()
	return resp
}
