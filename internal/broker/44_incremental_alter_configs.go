package broker

// IncrementalAlterConfigs: v0-1
//
// * v0: SET, DELETE, APPEND, SUBTRACT per config (KIP-339); APPEND and
//   SUBTRACT only for list configs.
// * v1: flexible versions.
//
// Same resources (topics, brokers, groups) and rules as AlterConfigs, but
// only the named configs change. A group's changed set is validated as a
// whole (a session timeout set alone must still exceed the heartbeat
// interval the group has).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Broker) handleIncrementalAlterConfigs(ctx context.Context, req *kmsg.IncrementalAlterConfigsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	for _, rr := range req.Resources {
		sr := kmsg.NewIncrementalAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		configs, code, err := b.currentOverrides(rr.ResourceType, rr.ResourceName)
		if err == nil {
			for _, c := range rr.Configs {
				if err = b.applyIncremental(rr.ResourceType, configs, c.Name, int8(c.Op), c.Value); err != nil {
					code = kerr.InvalidConfig
					break
				}
			}
		}
		if err == nil {
			code, err = b.alterConfigs(ctx, rr.ResourceType, rr.ResourceName, configs, req.ValidateOnly)
		}
		sr.ErrorCode = errorCode(code)
		sr.ErrorMessage = errMessage(err)
		resp.Resources = append(resp.Resources, sr)
	}
	return resp
}
