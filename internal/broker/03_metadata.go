package broker

// Metadata: v0-12
//
// * v0: an empty topic list means every topic.
// * v1: a null topic list means every topic and an empty one none;
//   ControllerID, IsInternal, Rack.
// * v2: ClusterID.
// * v4: AllowAutoTopicCreation: an unknown topic is created with
//   num.partitions and default.replication.factor when the request allows it
//   and auto.create.topics.enable is set (for v0-3 requests as Kafka does).
// * v5: OfflineReplicas: replicas on unregistered brokers and replicas in a
//   broker's failed log dir (KIP-112).
// * v7: LeaderEpoch per partition.
// * v8-10: cluster authorized operations when asked for (KIP-430): 0
//   without DESCRIBE on the cluster, as in Kafka; -2147483648 ("not
//   requested") otherwise. Topic authorized operations (v8+) likewise.
// * v9: flexible versions.
// * v10: topic ids (KIP-516).
// * v12: topics may be named by id only.

import (
	"context"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/cluster"
	"samsa/internal/server"
)

func (b *Broker) handleMetadata(ctx context.Context, c *server.Conn, req *kmsg.MetadataRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	img := b.cluster.Image()

	all := req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0)
	autoCreate := b.cfg.AutoCreateTopics && (req.Version < 4 || req.AllowAutoTopicCreation)
	// Reference: KafkaApis.handleTopicMetadataRequest: a topic is shown
	// only to who may DESCRIBE it (named topics get
	// TOPIC_AUTHORIZATION_FAILED, whether they exist or not); creating one
	// needs CREATE on the cluster or the topic.
	z := b.authzFor(c)
	describe := func(name string) bool { return z.topic(opDescribe, name) }
	canCreate := func(name string) bool { return z.cluster(opCreate) || z.topic(opCreate, name) }
	if !all && autoCreate {
		created := false
		for _, rt := range req.Topics {
			if rt.Topic == nil || img.Topics[*rt.Topic] != nil || !describe(*rt.Topic) || !canCreate(*rt.Topic) {
				continue
			}
			if err := validateTopicName(img, *rt.Topic); err != nil {
				continue
			}
			_, err := b.cluster.CreateTopic(ctx, *rt.Topic, b.cfg.NumPartitions, b.cfg.DefaultReplicationFactor, nil)
			if err != nil && errCode(err) != kerr.TopicAlreadyExists {
				b.log.Warn("auto-create topic", "topic", *rt.Topic, "err", err)
				continue
			}
			created = true
		}
		if created {
			if err := b.reconcile(); err != nil {
				b.log.Warn("reconcile after auto-create", "err", err)
			}
			img = b.cluster.Image()
		}
	}

	for _, id := range img.BrokerIDs() {
		br := img.Brokers[id]
		host, port, ok := br.Endpoint(c.Listener)
		if !ok {
			continue // Kafka leaves out brokers without the request's listener
		}
		mb := kmsg.NewMetadataResponseBroker()
		mb.NodeID, mb.Host, mb.Port, mb.Rack = br.NodeID, host, port, br.Rack
		resp.Brokers = append(resp.Brokers, mb)
	}
	cid := img.ClusterID
	resp.ClusterID = &cid
	resp.ControllerID = img.ControllerID
	resp.AuthorizedOperations = -2147483648
	if req.IncludeClusterAuthorizedOperations && req.Version >= 8 && req.Version <= 10 {
		resp.AuthorizedOperations = z.clusterAuthorizedOperations()
	}
	topicOpsOf := func(mt *kmsg.MetadataResponseTopic) {
		if req.IncludeTopicAuthorizedOperations && req.Version >= 8 && mt.Topic != nil {
			mt.AuthorizedOperations = z.authorizedOperations(kmsg.ACLResourceTypeTopic, *mt.Topic, topicOps...)
		}
	}

	if all {
		names := make([]string, 0, len(img.Topics))
		for name := range img.Topics {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			if !describe(name) {
				continue
			}
			mt := metadataTopic(img, img.Topics[name])
			topicOpsOf(&mt)
			resp.Topics = append(resp.Topics, mt)
		}
		return resp
	}
	for _, rt := range req.Topics {
		var t *cluster.Topic
		if rt.Topic != nil {
			t = img.Topics[*rt.Topic]
		} else {
			t = img.TopicIDs[rt.TopicID]
		}
		if (t != nil && !describe(t.Name)) || (t == nil && rt.Topic != nil && z.on() && (!describe(*rt.Topic) || autoCreate && !canCreate(*rt.Topic))) {
			mt := kmsg.NewMetadataResponseTopic()
			mt.Topic, mt.TopicID = rt.Topic, rt.TopicID
			mt.ErrorCode = kerr.TopicAuthorizationFailed.Code
			mt.AuthorizedOperations = -2147483648
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		if t == nil {
			mt := kmsg.NewMetadataResponseTopic()
			mt.Topic, mt.TopicID = rt.Topic, rt.TopicID
			mt.ErrorCode = kerr.UnknownTopicOrPartition.Code
			if rt.Topic == nil {
				mt.ErrorCode = kerr.UnknownTopicID.Code
			} else if validateTopicName(img, *rt.Topic) != nil {
				mt.ErrorCode = kerr.InvalidTopicException.Code
			}
			mt.AuthorizedOperations = -2147483648
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		mt := metadataTopic(img, t)
		topicOpsOf(&mt)
		resp.Topics = append(resp.Topics, mt)
	}
	return resp
}

func metadataTopic(img *cluster.Image, t *cluster.Topic) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	name := t.Name
	mt.Topic = &name
	mt.TopicID = t.ID
	mt.IsInternal = isInternalTopic(t.Name)
	mt.AuthorizedOperations = -2147483648
	for p, replicas := range t.Replicas {
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition = int32(p)
		mp.Replicas = replicas
		mp.Leader, mp.LeaderEpoch = -1, -1
		if p < len(t.Partitions) {
			st := t.Partitions[p]
			mp.Leader, mp.LeaderEpoch, mp.ISR = st.Leader, st.LeaderEpoch, st.ISR
		}
		if _, ok := img.Brokers[mp.Leader]; !ok {
			mp.ErrorCode = kerr.LeaderNotAvailable.Code
		}
		for _, r := range replicas {
			// Offline: the broker is gone, or its replica is in a
			// failed log dir (KIP-112).
			if br, ok := img.Brokers[r]; !ok || br.ReplicaOffline(t.Name, int32(p)) {
				mp.OfflineReplicas = append(mp.OfflineReplicas, r)
			}
		}
		if mp.ISR == nil {
			mp.ISR = []int32{}
		}
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}

func isInternalTopic(name string) bool {
	return name == "__consumer_offsets" || name == "__transaction_state"
}
