package broker

// Heartbeat: v0-4
//
// * v3: InstanceID (KIP-345).
// * v4: flexible versions.
//
// A classic member of a KIP-848 consumer group gets REBALANCE_IN_PROGRESS
// when it must rejoin (a new group epoch, partitions to revoke, or
// partitions it waited for now free).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/group"
)

func (b *Broker) handleHeartbeat(ctx context.Context, req *kmsg.HeartbeatRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
	err := b.groups.Heartbeat(ctx, group.HeartbeatRequest{
		Group: req.Group, MemberID: req.MemberID, InstanceID: req.InstanceID, Generation: req.Generation,
	})
	resp.ErrorCode = groupCode(err)
	return resp
}
