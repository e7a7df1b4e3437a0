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
	"time"

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
		if code == kerr.CoordinatorNotAvailable && err != nil {
			b.logCoordinatorLookup(req.CoordinatorType, key, err)
		}
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

// coordinatorLogInterval is how often one reason a coordinator lookup
// fails is logged; clients retry the lookup many times a second.
const coordinatorLogInterval = 30 * time.Second

// logCoordinatorLookup logs why a coordinator lookup failed, at most once
// per coordinatorLogInterval for each coordinator type and reason.
func (b *Broker) logCoordinatorLookup(typ int8, key string, err error) {
	kind := "group"
	if typ == 1 {
		kind = "transactional id"
	}
	reason := err.Error()
	now := b.now()
	b.coordLogMu.Lock()
	if b.coordLogged == nil {
		b.coordLogged = make(map[string]time.Time)
	}
	k := kind + "\x00" + reason
	last, seen := b.coordLogged[k]
	if seen && now.Sub(last) < coordinatorLogInterval {
		b.coordLogMu.Unlock()
		return
	}
	b.coordLogged[k] = now
	b.coordLogMu.Unlock()
	b.log.Warn("coordinator lookup failed", "type", kind, "key", key, "err", err)
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
		return kerr.CoordinatorNotAvailable, fmt.Errorf("%s has no partitions yet", topic)
	}
	// NB: the coordinators map keys with the configured count, as
	// Kafka's transaction coordinator does; FindCoordinator must agree
	// with them, and a topic with fewer partitions (made by hand before
	// CreateTopics refused it) leaves some keys without a coordinator.
	var part int32
	n, name := b.cfg.OffsetsTopicNumPartitions, "offsets.topic.num.partitions"
	if typ == 0 {
		part = group.Partition(key, n)
	} else {
		n, name = b.cfg.TransactionStateLogNumParts, "transaction.state.log.num.partitions"
		part = txn.Partition(key, n)
	}
	if int(part) >= len(t.Partitions) {
		return kerr.CoordinatorNotAvailable, fmt.Errorf("%q maps to partition %d of %s, which has only %d partitions while %s is %d; recreate the topic with %d partitions",
			key, part, topic, len(t.Partitions), name, n, n)
	}
	leader := t.Partitions[part].Leader
	br, ok := img.Brokers[leader]
	if !ok {
		return kerr.CoordinatorNotAvailable, fmt.Errorf("partition %d of %s has no live leader (leader %d)", part, topic, leader)
	}
	host, port, ok := br.Endpoint(listener)
	if !ok {
		return kerr.CoordinatorNotAvailable, fmt.Errorf("the coordinator, broker %d, has no listener %s", br.NodeID, listener)
	}
	c.NodeID, c.Host, c.Port = br.NodeID, host, port
	return nil, nil
}
