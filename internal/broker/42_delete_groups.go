package broker

// DeleteGroups: v0-2
//
// * v2: flexible versions.
//
// Only Empty groups can be deleted (NON_EMPTY_GROUP); their offsets go
// with them (tombstones in __consumer_offsets). An empty share group is
// deleted with the state of its share-partitions
// (DeleteShareGroupState at their share coordinators).
//
// A group's configs (the GROUP config resource, group_configs.go) stay:
// as in Kafka, they are a config resource of their own, set and deleted
// with the config APIs (kafka-configs --entity-type groups), and a group
// made again under the same id takes them.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/server"
)

func (b *Broker) handleDeleteGroups(req *kmsg.DeleteGroupsRequest) server.Reply {
	return server.Reply{Wait: func(ctx context.Context) server.Reply {
		resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
		errs := b.groups.DeleteGroups(ctx, req.Groups)
		for i, name := range req.Groups {
			rg := kmsg.NewDeleteGroupsResponseGroup()
			rg.Group = name
			if i < len(errs) {
				rg.ErrorCode = groupCode(errs[i])
			}
			if isShare, err := b.deleteShareGroup(ctx, name); isShare {
				rg.ErrorCode = groupCode(err)
			}
			resp.Groups = append(resp.Groups, rg)
		}
		return server.Reply{Msg: resp}
	}}
}
