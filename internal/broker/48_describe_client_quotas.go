package broker

// DescribeClientQuotas: v0-1
//
// * v0: quota entities matching a filter, with their values (KIP-546).
// * v1: flexible versions.
//
// Requires DESCRIBE_CONFIGS on the cluster: without it the whole response
// gets CLUSTER_AUTHORIZATION_FAILED. Every filter component must match a
// component of the entity (an exact name, the default, or any); with strict
// set the entity may have no other component type. A filter Kafka refuses
// (an unknown entity type or match type, a type twice, an exact match
// without a name, ip combined with user or client-id) is INVALID_REQUEST
// with a message, for the whole response. Unlike Kafka, whose order follows
// a hash map, entries come sorted by entity path (/users/alice/clients/app)
// and each entry's values by key.

import (
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/quota"
	"samsa/internal/server"
)

func (b *Broker) handleDescribeClientQuotas(c *server.Conn, req *kmsg.DescribeClientQuotasRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
	if !b.authzFor(c).cluster(opDescribeConfigs) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp
	}
	filter := make([]quota.FilterComponent, len(req.Components))
	for i, fc := range req.Components {
		filter[i] = quota.FilterComponent{EntityType: fc.EntityType, MatchType: int8(fc.MatchType), Match: fc.Match}
	}
	found, err := b.quotaImage().Describe(filter, req.Strict)
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = errCode(err).Code, errMessage(err)
		return resp
	}
	resp.Entries = make([]kmsg.DescribeClientQuotasResponseEntry, 0, len(found))
	for _, d := range found {
		e := kmsg.NewDescribeClientQuotasResponseEntry()
		for _, comp := range d.Entity.Components() {
			ec := kmsg.NewDescribeClientQuotasResponseEntryEntity()
			ec.Type, ec.Name = comp.Type, comp.Name
			e.Entity = append(e.Entity, ec)
		}
		for k, v := range d.Values {
			ev := kmsg.NewDescribeClientQuotasResponseEntryValue()
			ev.Key, ev.Value = k, v
			e.Values = append(e.Values, ev)
		}
		slices.SortFunc(e.Values, func(x, y kmsg.DescribeClientQuotasResponseEntryValue) int { return strings.Compare(x.Key, y.Key) })
		resp.Entries = append(resp.Entries, e)
	}
	return resp
}
