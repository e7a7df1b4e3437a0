package broker

// ConsumerGroupHeartbeat: v0-1 (KIP-848)
//
// * v0: the coordinator makes the member id of a member that sends none.
// * v1: SubscribedTopicRegex; the member makes its own id (an empty one
//   is INVALID_REQUEST).
//
// The heartbeat runs on the connection's write goroutine (inOrder), so
// that an OffsetCommit pipelined after it sees the epoch it answered.
// A first heartbeat of a classic group of the consumer protocol type
// converts it to a consumer group when group.consumer.migration.policy
// allows upgrades (see group.Coordinator). Differences from Kafka: no
// rack-aware assignment (RackID is stored and described only).

import (
	"context"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/group"
	"samsa/internal/server"
)

func (b *Broker) handleConsumerGroupHeartbeat(c *server.Conn, clientID *string, req *kmsg.ConsumerGroupHeartbeatRequest) server.Reply {
	gr := group.ConsumerHeartbeatRequest{
		Group:                req.Group,
		MemberID:             req.MemberID,
		MemberEpoch:          req.MemberEpoch,
		InstanceID:           req.InstanceID,
		RackID:               req.RackID,
		RebalanceTimeout:     time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond,
		SubscribedTopicNames: req.SubscribedTopicNames,
		SubscribedTopicRegex: req.SubscribedTopicRegex,
		ServerAssignor:       req.ServerAssignor,
		ClientHost:           clientHost(c),
	}
	if req.RebalanceTimeoutMillis < 0 {
		gr.RebalanceTimeout = -1
	}
	if clientID != nil {
		gr.ClientID = *clientID
	}
	if req.Topics != nil {
		gr.Owned = make([]group.TopicPartitions, 0, len(req.Topics))
		for _, t := range req.Topics {
			gr.Owned = append(gr.Owned, group.TopicPartitions{TopicID: t.TopicID, Partitions: t.Partitions})
		}
	}
	return inOrder(func(ctx context.Context) kmsg.Response {
		resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
		if b.isShareGroup(req.Group) {
			// A share group is not a consumer group.
			resp.ErrorCode = kerr.GroupIDNotFound.Code
			return resp
		}
		res, err := b.groups.ConsumerGroupHeartbeat(ctx, gr, req.Version >= 1)
		resp.ErrorCode = groupCode(err)
		if err != nil {
			if m := group.ErrorMessage(err); m != "" {
				resp.ErrorMessage = &m
			}
			// Kafka echoes the member id and epoch of a leave's error.
			return resp
		}
		if res.MemberID != "" {
			id := res.MemberID
			resp.MemberID = &id
		}
		resp.MemberEpoch = res.MemberEpoch
		resp.HeartbeatIntervalMillis = int32(res.HeartbeatInterval.Milliseconds())
		if res.HasAssignment {
			a := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
			for _, tp := range res.Assignment {
				t := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
				t.TopicID, t.Partitions = tp.TopicID, tp.Partitions
				a.Topics = append(a.Topics, t)
			}
			if a.Topics == nil {
				a.Topics = []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{}
			}
			resp.Assignment = &a
		}
		return resp
	})
}

// clientHost is the client address as Kafka shows it ("/host").
func clientHost(c *server.Conn) string {
	if c == nil || c.Remote == nil {
		return ""
	}
	host, _, err := net.SplitHostPort(c.Remote.String())
	if err != nil {
		host = c.Remote.String()
	}
	return "/" + host
}
