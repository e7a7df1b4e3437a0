package broker

// FindCoordinator: v0-4
//
// * v1: CoordinatorType (0 group, 1 transaction), ErrorMessage.
// * v3: flexible versions.
// * v4: many keys per request (KIP-699), one result each.
//
// The coordinator of group G is the leader of partition
// abs(javaHashCode(G)) % offsets.topic.num.partitions of __consumer_offsets,
// which the first FindCoordinator creates (compacted, as Kafka does).
// Transaction coordinators do not exist yet: key type 1 gets
// INVALID_REQUEST rather than a retriable error, since retrying would never
// succeed.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/group"
	"samsa/internal/server"
)

func (b *Broker) handleFindCoordinator(ctx context.Context, conn *server.Conn, req *kmsg.FindCoordinatorRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	keys := req.CoordinatorKeys
	if req.Version < 4 {
		keys = []string{req.CoordinatorKey}
	}
	for _, key := range keys {
		c := kmsg.NewFindCoordinatorResponseCoordinator()
		c.Key = key
		c.NodeID, c.Port = -1, -1
		// Reference: KafkaApis.handleFindCoordinatorRequest: DESCRIBE on
		// the group (or transactional id).
		var code *kerr.Error
		var err error
		z := b.authzFor(conn)
		switch {
		case req.CoordinatorType == 0 && !z.group(opDescribe, key):
			code = kerr.GroupAuthorizationFailed
		case req.CoordinatorType == 1 && !z.transactionalID(opDescribe, key):
			code = kerr.TransactionalIDAuthorizationFailed
		default:
			code, err = b.findCoordinator(ctx, conn.Listener, req.CoordinatorType, key, &c)
		}
		c.ErrorCode = errorCode(code)
		c.ErrorMessage = errMessage(err)
		resp.Coordinators = append(resp.Coordinators, c)
	}
	if req.Version < 4 && len(resp.Coordinators) == 1 {
		c := resp.Coordinators[0]
		resp.ErrorCode, resp.ErrorMessage = c.ErrorCode, c.ErrorMessage
		resp.NodeID, resp.Host, resp.Port = c.NodeID, c.Host, c.Port
		resp.Coordinators = nil
	}
	return resp
}

func (b *Broker) findCoordinator(ctx context.Context, listener string, typ int8, key string, c *kmsg.FindCoordinatorResponseCoordinator) (*kerr.Error, error) {
	if typ != 0 {
		return kerr.InvalidRequest, fmt.Errorf("coordinator type %d is not served: samsa has no transaction coordinator yet", typ)
	}
	if key == "" {
		return kerr.InvalidGroupID, fmt.Errorf("empty group id")
	}
	if err := b.ensureOffsetsTopic(ctx); err != nil {
		return kerr.CoordinatorNotAvailable, err
	}
	img := b.cluster.Image()
	t := img.Topics[offsetsTopic]
	if t == nil || len(t.Partitions) == 0 {
		return kerr.CoordinatorNotAvailable, nil
	}
	part := group.Partition(key, int32(len(t.Replicas)))
	leader := t.Partitions[part].Leader
	br, ok := img.Brokers[leader]
	if !ok {
		return kerr.CoordinatorNotAvailable, nil
	}
	host, port, ok := br.Endpoint(listener)
	if !ok {
		return kerr.CoordinatorNotAvailable, fmt.Errorf("the coordinator, broker %d, has no listener %s", br.NodeID, listener)
	}
	c.NodeID, c.Host, c.Port = br.NodeID, host, port
	return nil, nil
}
