package broker

// SyncGroup: v0-5
//
// * v3: InstanceID (KIP-345).
// * v4: flexible versions.
// * v5: ProtocolType and Protocol in request and response (KIP-559),
//   checked against the group's.
//
// Followers wait for the leader's assignment on the write goroutine. A
// classic member of a KIP-848 consumer group is answered at once with the
// partitions the coordinator assigned it.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/group"
	"samsa/internal/server"
)

func (b *Broker) handleSyncGroup(req *kmsg.SyncGroupRequest) server.Reply {
	gr := group.SyncGroupRequest{
		Group:        req.Group,
		MemberID:     req.MemberID,
		InstanceID:   req.InstanceID,
		Generation:   req.Generation,
		ProtocolType: req.ProtocolType,
		Protocol:     req.Protocol,
	}
	for _, a := range req.GroupAssignment {
		gr.Assignments = append(gr.Assignments, group.Assignment{MemberID: a.MemberID, Assignment: a.MemberAssignment})
	}
	return server.Reply{Wait: func(ctx context.Context) server.Reply {
		// The wait for the other members is by design: the slow
		// request log leaves the whole call out (server/slow.go).
		start := time.Now()
		res, err := b.groups.SyncGroup(ctx, gr)
		parked := time.Since(start)
		resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
		resp.ErrorCode = groupCode(err)
		if err == nil {
			pt, p := res.ProtocolType, res.Protocol
			resp.ProtocolType, resp.Protocol = &pt, &p
			resp.MemberAssignment = res.Assignment
		}
		if resp.MemberAssignment == nil {
			resp.MemberAssignment = []byte{}
		}
		return server.Reply{Msg: resp, Parked: parked}
	}}
}
