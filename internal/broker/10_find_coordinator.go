package broker

// FindCoordinator: v0-4
//
// * v1: CoordinatorType (0 group, 1 transaction), ErrorMessage.
// * v3: flexible versions.
// * v4: many keys per request (KIP-699), one result each.
//
// The coordinator of group G (key type 0) is the leader of partition
// abs(javaHashCode(G)) % offsets.topic.num.partitions of __consumer_offsets;
// the coordinator of transactional id T (key type 1) is the leader of
// partition abs(javaHashCode(T)) % transaction.state.log.num.partitions of
// __transaction_state (txn.Partition). The first FindCoordinator of each
// type creates its topic (compacted, as Kafka does). An empty key gets
// INVALID_GROUP_ID (groups) or INVALID_REQUEST (transactional ids), and an
// unknown key type INVALID_REQUEST, as in Kafka.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/group"
	"samsa/internal/server"
	"samsa/internal/txn"
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
	topic := offsetsTopic
	switch {
	case typ == 0 && key == "":
		return kerr.InvalidGroupID, fmt.Errorf("empty group id")
	case typ == 0:
		if err := b.ensureOffsetsTopic(ctx); err != nil {
			return kerr.CoordinatorNotAvailable, err
		}
	case typ == 1 && key == "":
		return kerr.InvalidRequest, fmt.Errorf("empty transactional id")
	case typ == 1:
		topic = txnStateTopic
		if err := b.ensureTxnStateTopic(ctx); err != nil {
			return kerr.CoordinatorNotAvailable, err
		}
	default:
		return kerr.InvalidRequest, fmt.Errorf("unknown coordinator type %d", typ)
	}
	img := b.cluster.Image()
	t := img.Topics[topic]
	if t == nil || len(t.Partitions) == 0 {
		return kerr.CoordinatorNotAvailable, nil
	}
	var part int32
	if typ == 0 {
		part = group.Partition(key, int32(len(t.Replicas)))
	} else {
		// NB: the coordinator maps ids with the configured count, as
		// Kafka does; FindCoordinator must agree with it.
		part = txn.Partition(key, b.cfg.TransactionStateLogNumParts)
		if int(part) >= len(t.Partitions) {
			return kerr.CoordinatorNotAvailable, fmt.Errorf("%s has %d partitions, transaction.state.log.num.partitions is %d",
				txnStateTopic, len(t.Partitions), b.cfg.TransactionStateLogNumParts)
		}
	}
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
