package broker

// LeaveGroup: v0-5
//
// * v3: a batch of members, static ones by InstanceID (KIP-345).
// * v4: flexible versions.
// * v5: Reason per member (KIP-800), logged only.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/group"
	"samsa/internal/server"
)

func (b *Broker) handleLeaveGroup(req *kmsg.LeaveGroupRequest) server.Reply {
	gr := group.LeaveGroupRequest{Group: req.Group}
	if req.Version < 3 {
		gr.Members = []group.LeaveMember{{MemberID: req.MemberID}}
	}
	for _, m := range req.Members {
		lm := group.LeaveMember{MemberID: m.MemberID, InstanceID: m.InstanceID}
		if m.Reason != nil {
			lm.Reason = *m.Reason
		}
		gr.Members = append(gr.Members, lm)
	}
	return server.Reply{Wait: func(ctx context.Context) server.Reply {
		res, err := b.groups.LeaveGroup(ctx, gr)
		resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
		resp.ErrorCode = groupCode(err)
		if err == nil && req.Version < 3 && len(res.Members) == 1 {
			resp.ErrorCode = groupCode(res.Members[0].Err)
		}
		if req.Version >= 3 && err == nil {
			for _, m := range res.Members {
				rm := kmsg.NewLeaveGroupResponseMember()
				rm.MemberID, rm.InstanceID, rm.ErrorCode = m.MemberID, m.InstanceID, groupCode(m.Err)
				resp.Members = append(resp.Members, rm)
			}
		}
		return server.Reply{Msg: resp}
	}}
}
