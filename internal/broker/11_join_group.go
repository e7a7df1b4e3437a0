package broker

// JoinGroup: v0-9
//
// * v1: RebalanceTimeoutMillis (v0 uses the session timeout for both).
// * v4: a first join without a member id gets MEMBER_ID_REQUIRED with a
//   generated id and must join again with it (KIP-394).
// * v5: InstanceID, static membership (KIP-345).
// * v6: flexible versions.
// * v7: ProtocolType in the response.
// * v8: Reason (KIP-800), logged only.
// * v9: SkipAssignment (KIP-814), always false.
//
// The join waits for the rebalance to complete, on the connection's write
// goroutine (Reply.Wait), as Kafka holds the response. A join of a KIP-848
// consumer group with members makes a classic member of it and is
// answered at once, with the member epoch as generation and no leader:
// the coordinator assigns (group.Coordinator, online migration).

import (
	"context"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/group"
	"samsa/internal/server"
)

func (b *Broker) handleJoinGroup(c *server.Conn, clientID *string, req *kmsg.JoinGroupRequest) server.Reply {
	gr := group.JoinGroupRequest{
		Group:                req.Group,
		MemberID:             req.MemberID,
		InstanceID:           req.InstanceID,
		ProtocolType:         req.ProtocolType,
		SessionTimeout:       time.Duration(req.SessionTimeoutMillis) * time.Millisecond,
		RebalanceTimeout:     time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond,
		RequireKnownMemberID: req.Version >= 4,
	}
	if req.Version == 0 {
		gr.RebalanceTimeout = gr.SessionTimeout
	}
	if clientID != nil {
		gr.ClientID = *clientID
	}
	if req.Reason != nil {
		gr.Reason = *req.Reason
	}
	if c != nil && c.Remote != nil {
		host, _, err := net.SplitHostPort(c.Remote.String())
		if err != nil {
			host = c.Remote.String()
		}
		gr.ClientHost = "/" + host
	}
	for _, p := range req.Protocols {
		gr.Protocols = append(gr.Protocols, group.Protocol{Name: p.Name, Metadata: p.Metadata})
	}
	if b.isShareGroup(req.Group) {
		// Reference: GroupMetadataManager: a classic join of a share
		// group is INCONSISTENT_GROUP_PROTOCOL.
		resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
		resp.ErrorCode, resp.Generation = kerr.InconsistentGroupProtocol.Code, -1
		return server.Reply{Msg: resp}
	}
	return server.Reply{Wait: func(ctx context.Context) server.Reply {
		// The wait for the other members is by design: the slow
		// request log leaves the whole call out (server/slow.go).
		start := time.Now()
		res, err := b.groups.JoinGroup(ctx, gr)
		parked := time.Since(start)
		resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
		resp.ErrorCode = groupCode(err)
		resp.Generation = res.Generation
		resp.MemberID = res.MemberID
		resp.LeaderID = res.LeaderID
		if err != nil && res.MemberID == "" {
			resp.Generation = -1
		}
		if res.ProtocolType != "" {
			pt := res.ProtocolType
			resp.ProtocolType = &pt
		}
		if res.Protocol != "" || err == nil {
			p := res.Protocol
			resp.Protocol = &p
		}
		for _, m := range res.Members {
			rm := kmsg.NewJoinGroupResponseMember()
			rm.MemberID, rm.InstanceID, rm.ProtocolMetadata = m.MemberID, m.InstanceID, m.Metadata
			resp.Members = append(resp.Members, rm)
		}
		return server.Reply{Msg: resp, Parked: parked}
	}}
}
