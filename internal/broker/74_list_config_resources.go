package broker

// ListConfigResources: v0-1 (KIP-1000 as ListClientMetricsResources,
// renamed and widened by KIP-1142 in Kafka 4.1)
//
// The config resources of the types asked for, as Kafka's
// KafkaApis.handleListConfigResources lists them:
//
// * v0: client-metrics resources only (the request names no type).
//   samsa has no client-metrics resources, so the list is empty.
// * v1: ResourceTypes, a filter over TOPIC (2), BROKER (4), BROKER_LOGGER
//   (8), CLIENT_METRICS (16) and GROUP (32); empty asks for all of them.
//   A type outside these answers UNSUPPORTED_VERSION and no resources.
//   Each resource carries its type. Listed, in Kafka's order of types:
//   GROUP, the groups with config overrides (configs/groups/ in etcd,
//   the groups DescribeConfigs shows overrides for); CLIENT_METRICS,
//   none; BROKER_LOGGER, none; BROKER, every registered broker by node
//   id; TOPIC, every topic, internal ones included, by name. Within a
//   type the names are sorted.
//
// Kafka lists each broker as a BROKER_LOGGER resource too; samsa's
// DescribeConfigs does not serve broker loggers, so it lists none rather
// than resources it would refuse to describe.
//
// The request needs DESCRIBE_CONFIGS on the cluster, else the whole answer
// is CLUSTER_AUTHORIZATION_FAILED (authz_apis.go).

import (
	"maps"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// listConfigResourceTypes are the types ListConfigResources v1 lists, in
// the order of its answer.
var listConfigResourceTypes = []kmsg.ConfigResourceType{
	kmsg.ConfigResourceTypeGroupConfig,
	kmsg.ConfigResourceTypeClientMetrics,
	kmsg.ConfigResourceTypeBrokerLogger,
	kmsg.ConfigResourceTypeBroker,
	kmsg.ConfigResourceTypeTopic,
}

func (b *Broker) handleListConfigResources(req *kmsg.ListConfigResourcesRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ListConfigResourcesResponse)
	resp.ConfigResources = []kmsg.ListConfigResourcesResponseConfigResource{}
	if req.Version == 0 {
		return resp // client-metrics resources only: none
	}
	asked := make(map[kmsg.ConfigResourceType]bool, len(req.ResourceTypes))
	for _, t := range req.ResourceTypes {
		rt := kmsg.ConfigResourceType(t)
		if !slices.Contains(listConfigResourceTypes, rt) {
			resp.ErrorCode = kerr.UnsupportedVersion.Code
			return resp
		}
		asked[rt] = true
	}
	img := b.cluster.Image()
	add := func(rt kmsg.ConfigResourceType, names []string) {
		for _, name := range names {
			r := kmsg.NewListConfigResourcesResponseConfigResource()
			r.Name, r.Type = name, int8(rt)
			resp.ConfigResources = append(resp.ConfigResources, r)
		}
	}
	for _, rt := range listConfigResourceTypes {
		if len(asked) > 0 && !asked[rt] {
			continue
		}
		switch rt {
		case kmsg.ConfigResourceTypeGroupConfig:
			add(rt, slices.Sorted(maps.Keys(img.GroupConfigs)))
		case kmsg.ConfigResourceTypeBroker:
			var names []string
			for _, id := range img.BrokerIDs() {
				names = append(names, strconv.Itoa(int(id)))
			}
			add(rt, names)
		case kmsg.ConfigResourceTypeTopic:
			add(rt, slices.Sorted(maps.Keys(img.Topics)))
		}
	}
	return resp
}
