package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/server"
)

// guard authorizes a request before its handler runs, as Kafka's KafkaApis
// does (acl.APIRequirements lists the checks). It returns either deny, a
// response that answers the whole request (the one resource it names is
// denied), or it removes from the request the resources the principal may
// not use and returns fix, which adds their error entries to the handler's
// response. Both nil: the request goes through unchanged. These check
// inside their handlers instead, interleaved with their own work: Produce,
// Fetch, Metadata, DescribeTopicPartitions, FindCoordinator, DescribeCluster (its authorized
// operations), the ACL APIs (29-31), the client quota APIs (48, 49) and the
// SCRAM credential APIs (50, 51).
func (b *Broker) guard(z authz, body kmsg.Request) (deny kmsg.Response, fix func(kmsg.Response)) {
	topicAuthFailed := kerr.TopicAuthorizationFailed.Code
	groupAuthFailed := kerr.GroupAuthorizationFailed.Code
	clusterAuthFailed := kerr.ClusterAuthorizationFailed.Code
	switch r := body.(type) {
	case *kmsg.JoinGroupRequest:
		if !z.group(opRead, r.Group) {
			resp := r.ResponseKind().(*kmsg.JoinGroupResponse)
			resp.ErrorCode, resp.Generation, resp.MemberID = groupAuthFailed, -1, r.MemberID
			return resp, nil
		}
	case *kmsg.SyncGroupRequest:
		if !z.group(opRead, r.Group) {
			resp := r.ResponseKind().(*kmsg.SyncGroupResponse)
			resp.ErrorCode, resp.MemberAssignment = groupAuthFailed, []byte{}
			return resp, nil
		}
	case *kmsg.HeartbeatRequest:
		if !z.group(opRead, r.Group) {
			resp := r.ResponseKind().(*kmsg.HeartbeatResponse)
			resp.ErrorCode = groupAuthFailed
			return resp, nil
		}
	case *kmsg.LeaveGroupRequest:
		if !z.group(opRead, r.Group) {
			resp := r.ResponseKind().(*kmsg.LeaveGroupResponse)
			resp.ErrorCode = groupAuthFailed
			return resp, nil
		}
	case *kmsg.OffsetCommitRequest:
		// Reference: KafkaApis.handleOffsetCommitRequest: READ on the
		// group, then READ on each topic.
		if !z.group(opRead, r.Group) {
			resp := r.ResponseKind().(*kmsg.OffsetCommitResponse)
			for _, t := range r.Topics {
				rt := kmsg.NewOffsetCommitResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewOffsetCommitResponseTopicPartition()
					rp.Partition, rp.ErrorCode = p.Partition, groupAuthFailed
					rt.Partitions = append(rt.Partitions, rp)
				}
				resp.Topics = append(resp.Topics, rt)
			}
			return resp, nil
		}
		var denied []kmsg.OffsetCommitRequestTopic
		r.Topics, denied = split(r.Topics, func(t kmsg.OffsetCommitRequestTopic) bool { return z.topic(opRead, t.Topic) })
		if len(denied) > 0 {
			return nil, func(m kmsg.Response) {
				resp := m.(*kmsg.OffsetCommitResponse)
				for _, t := range denied {
					rt := kmsg.NewOffsetCommitResponseTopic()
					rt.Topic = t.Topic
					for _, p := range t.Partitions {
						rp := kmsg.NewOffsetCommitResponseTopicPartition()
						rp.Partition, rp.ErrorCode = p.Partition, topicAuthFailed
						rt.Partitions = append(rt.Partitions, rp)
					}
					resp.Topics = append(resp.Topics, rt)
				}
			}
		}
	case *kmsg.TxnOffsetCommitRequest:
		// Reference: KafkaApis.handleTxnOffsetCommitRequest: WRITE on the
		// transactional id, READ on the group (each failure on every
		// partition), then READ on each topic.
		code := int16(0)
		switch {
		case !z.transactionalID(opWrite, r.TransactionalID):
			code = kerr.TransactionalIDAuthorizationFailed.Code
		case !z.group(opRead, r.Group):
			code = groupAuthFailed
		}
		if code != 0 {
			resp := r.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
			resp.Topics = txnOffsetCommitErrors(r.Topics, code)
			return resp, nil
		}
		var denied []kmsg.TxnOffsetCommitRequestTopic
		r.Topics, denied = split(r.Topics, func(t kmsg.TxnOffsetCommitRequestTopic) bool { return z.topic(opRead, t.Topic) })
		if len(denied) > 0 {
			return nil, func(m kmsg.Response) {
				resp := m.(*kmsg.TxnOffsetCommitResponse)
				resp.Topics = append(resp.Topics, txnOffsetCommitErrors(denied, topicAuthFailed)...)
			}
		}
	case *kmsg.OffsetFetchRequest:
		return b.guardOffsetFetch(z, r)
	case *kmsg.OffsetDeleteRequest:
		if !z.group(aclDelete, r.Group) {
			resp := r.ResponseKind().(*kmsg.OffsetDeleteResponse)
			resp.ErrorCode = groupAuthFailed
			return resp, nil
		}
		var denied []kmsg.OffsetDeleteRequestTopic
		r.Topics, denied = split(r.Topics, func(t kmsg.OffsetDeleteRequestTopic) bool { return z.topic(opRead, t.Topic) })
		if len(denied) > 0 {
			return nil, func(m kmsg.Response) {
				resp := m.(*kmsg.OffsetDeleteResponse)
				for _, t := range denied {
					rt := kmsg.NewOffsetDeleteResponseTopic()
					rt.Topic = t.Topic
					for _, p := range t.Partitions {
						rp := kmsg.NewOffsetDeleteResponseTopicPartition()
						rp.Partition, rp.ErrorCode = p.Partition, topicAuthFailed
						rt.Partitions = append(rt.Partitions, rp)
					}
					resp.Topics = append(resp.Topics, rt)
				}
			}
		}
	case *kmsg.DescribeGroupsRequest:
		var denied []string
		r.Groups, denied = split(r.Groups, func(g string) bool { return z.group(opDescribe, g) })
		return nil, func(m kmsg.Response) {
			resp := m.(*kmsg.DescribeGroupsResponse)
			if r.IncludeAuthorizedOperations {
				for i := range resp.Groups {
					resp.Groups[i].AuthorizedOperations = z.authorizedOperations(kmsg.ACLResourceTypeGroup, resp.Groups[i].Group, groupOps...)
				}
			}
			for _, g := range denied {
				rg := kmsg.NewDescribeGroupsResponseGroup()
				rg.Group, rg.ErrorCode = g, groupAuthFailed
				rg.AuthorizedOperations = -2147483648
				resp.Groups = append(resp.Groups, rg)
			}
		}
	case *kmsg.ListGroupsRequest:
		// Reference: KafkaApis.handleListGroupsRequest: DESCRIBE on the
		// cluster lists every group, else only those the principal may
		// describe.
		if !z.cluster(opDescribe) {
			return nil, func(m kmsg.Response) {
				resp := m.(*kmsg.ListGroupsResponse)
				resp.Groups, _ = split(resp.Groups, func(g kmsg.ListGroupsResponseGroup) bool { return z.group(opDescribe, g.Group) })
			}
		}
	case *kmsg.ConsumerGroupHeartbeatRequest:
		// Reference: KafkaApis.handleConsumerGroupHeartbeat: READ on the
		// group, and DESCRIBE on every subscribed topic name. NB: topics
		// a regular expression matches are not filtered by the member's
		// DESCRIBE rights (Kafka 4.0+ resolves regexes per principal).
		deny := int16(0)
		switch {
		case !z.group(opRead, r.Group):
			deny = groupAuthFailed
		case len(r.SubscribedTopicNames) > 0:
			for _, t := range r.SubscribedTopicNames {
				if !z.topic(opDescribe, t) {
					deny = topicAuthFailed
					break
				}
			}
		}
		if deny != 0 {
			resp := r.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
			resp.ErrorCode = deny
			return resp, nil
		}
	case *kmsg.ConsumerGroupDescribeRequest:
		// Reference: KafkaApis.handleConsumerGroupDescribe: DESCRIBE on
		// each group; a group with a member subscribed or assigned to a
		// topic the principal may not describe is
		// TOPIC_AUTHORIZATION_FAILED.
		var denied []string
		r.Groups, denied = split(r.Groups, func(g string) bool { return z.group(opDescribe, g) })
		return nil, func(m kmsg.Response) {
			resp := m.(*kmsg.ConsumerGroupDescribeResponse)
			for i := range resp.Groups {
				g := &resp.Groups[i]
				if g.ErrorCode != 0 {
					continue
				}
				if !consumerGroupTopicsDescribable(z, g) {
					*g = kmsg.NewConsumerGroupDescribeResponseGroup()
					g.Group, g.ErrorCode = resp.Groups[i].Group, topicAuthFailed
					continue
				}
				if r.IncludeAuthorizedOperations {
					g.AuthorizedOperations = z.authorizedOperations(kmsg.ACLResourceTypeGroup, g.Group, groupOps...)
				}
			}
			for _, id := range denied {
				rg := kmsg.NewConsumerGroupDescribeResponseGroup()
				rg.Group, rg.ErrorCode = id, groupAuthFailed
				resp.Groups = append(resp.Groups, rg)
			}
		}
	case *kmsg.DeleteGroupsRequest:
		var denied []string
		r.Groups, denied = split(r.Groups, func(g string) bool { return z.group(aclDelete, g) })
		if len(denied) > 0 {
			return nil, func(m kmsg.Response) {
				resp := m.(*kmsg.DeleteGroupsResponse)
				for _, g := range denied {
					rg := kmsg.NewDeleteGroupsResponseGroup()
					rg.Group, rg.ErrorCode = g, groupAuthFailed
					resp.Groups = append(resp.Groups, rg)
				}
			}
		}
	case *kmsg.ListOffsetsRequest:
		var denied []kmsg.ListOffsetsRequestTopic
		r.Topics, denied = split(r.Topics, func(t kmsg.ListOffsetsRequestTopic) bool { return z.topic(opDescribe, t.Topic) })
		if len(denied) > 0 {
			return nil, func(m kmsg.Response) {
				resp := m.(*kmsg.ListOffsetsResponse)
				for _, t := range denied {
					rt := kmsg.NewListOffsetsResponseTopic()
					rt.Topic = t.Topic
					for _, p := range t.Partitions {
						rp := kmsg.NewListOffsetsResponseTopicPartition()
						rp.Partition, rp.ErrorCode = p.Partition, topicAuthFailed
						rp.Timestamp, rp.Offset, rp.LeaderEpoch = -1, -1, -1
						rt.Partitions = append(rt.Partitions, rp)
					}
					resp.Topics = append(resp.Topics, rt)
				}
			}
		}
	case *kmsg.DeleteRecordsRequest:
		var denied []kmsg.DeleteRecordsRequestTopic
		r.Topics, denied = split(r.Topics, func(t kmsg.DeleteRecordsRequestTopic) bool { return z.topic(aclDelete, t.Topic) })
		if len(denied) > 0 {
			return nil, func(m kmsg.Response) {
				resp := m.(*kmsg.DeleteRecordsResponse)
				for _, t := range denied {
					rt := kmsg.NewDeleteRecordsResponseTopic()
					rt.Topic = t.Topic
					for _, p := range t.Partitions {
						rp := kmsg.NewDeleteRecordsResponseTopicPartition()
						rp.Partition, rp.ErrorCode, rp.LowWatermark = p.Partition, topicAuthFailed, -1
						rt.Partitions = append(rt.Partitions, rp)
					}
					resp.Topics = append(resp.Topics, rt)
				}
			}
		}
	case *kmsg.DescribeProducersRequest:
		var denied []kmsg.DescribeProducersRequestTopic
		r.Topics, denied = split(r.Topics, func(t kmsg.DescribeProducersRequestTopic) bool { return z.topic(opRead, t.Topic) })
		if len(denied) > 0 {
			return nil, func(m kmsg.Response) {
				resp := m.(*kmsg.DescribeProducersResponse)
				for _, t := range denied {
					rt := kmsg.NewDescribeProducersResponseTopic()
					rt.Topic = t.Topic
					for _, p := range t.Partitions {
						rp := kmsg.NewDescribeProducersResponseTopicPartition()
						rp.Partition, rp.ErrorCode = p, topicAuthFailed
						rt.Partitions = append(rt.Partitions, rp)
					}
					resp.Topics = append(resp.Topics, rt)
				}
			}
		}
	case *kmsg.OffsetForLeaderEpochRequest:
		// Reference: KafkaApis.handleOffsetForLeaderEpochRequest:
		// CLUSTER_ACTION on the cluster (a follower), else DESCRIBE on each
		// topic (a consumer, KIP-320), whatever the replica id: the answer
		// is the same end offset either way.
		if z.cluster(opClusterAction) {
			return nil, nil
		}
		var denied []kmsg.OffsetForLeaderEpochRequestTopic
		r.Topics, denied = split(r.Topics, func(t kmsg.OffsetForLeaderEpochRequestTopic) bool { return z.topic(opDescribe, t.Topic) })
		if len(denied) > 0 {
			return nil, func(m kmsg.Response) {
				resp := m.(*kmsg.OffsetForLeaderEpochResponse)
				for _, t := range denied {
					rt := kmsg.NewOffsetForLeaderEpochResponseTopic()
					rt.Topic = t.Topic
					for _, p := range t.Partitions {
						rp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
						rp.Partition, rp.ErrorCode, rp.LeaderEpoch, rp.EndOffset = p.Partition, topicAuthFailed, -1, -1
						rt.Partitions = append(rt.Partitions, rp)
					}
					resp.Topics = append(resp.Topics, rt)
				}
			}
		}
	case *kmsg.CreateTopicsRequest:
		// Reference: KafkaApis.handleCreateTopicsRequest: CREATE on the
		// cluster, else CREATE on each topic. A created topic's configs,
		// partition count and replication factor (v5+) are shown only
		// with DESCRIBE_CONFIGS on it; otherwise ConfigErrorCode is
		// TOPIC_AUTHORIZATION_FAILED (ReplicationControlManager.createTopic).
		var denied []kmsg.CreateTopicsRequestTopic
		if !z.cluster(opCreate) {
			r.Topics, denied = split(r.Topics, func(t kmsg.CreateTopicsRequestTopic) bool { return z.topic(opCreate, t.Topic) })
		}
		return nil, func(m kmsg.Response) {
			resp := m.(*kmsg.CreateTopicsResponse)
			for i := range resp.Topics {
				rt := &resp.Topics[i]
				if resp.Version >= 5 && rt.ErrorCode == 0 && !z.topic(opDescribeConfigs, rt.Topic) {
					rt.ConfigErrorCode, rt.Configs = topicAuthFailed, nil
					rt.NumPartitions, rt.ReplicationFactor = -1, -1
				}
			}
			for _, t := range denied {
				rt := kmsg.NewCreateTopicsResponseTopic()
				rt.Topic, rt.ErrorCode = t.Topic, topicAuthFailed
				resp.Topics = append(resp.Topics, rt)
			}
		}
	case *kmsg.DeleteTopicsRequest:
		return b.guardDeleteTopics(z, r)
	case *kmsg.CreatePartitionsRequest:
		var denied []kmsg.CreatePartitionsRequestTopic
		r.Topics, denied = split(r.Topics, func(t kmsg.CreatePartitionsRequestTopic) bool { return z.topic(opAlter, t.Topic) })
		if len(denied) > 0 {
			return nil, func(m kmsg.Response) {
				resp := m.(*kmsg.CreatePartitionsResponse)
				for _, t := range denied {
					rt := kmsg.NewCreatePartitionsResponseTopic()
					rt.Topic, rt.ErrorCode = t.Topic, topicAuthFailed
					resp.Topics = append(resp.Topics, rt)
				}
			}
		}
	case *kmsg.DescribeConfigsRequest:
		var denied []kmsg.DescribeConfigsRequestResource
		r.Resources, denied = split(r.Resources, func(rs kmsg.DescribeConfigsRequestResource) bool {
			return z.configResource(opDescribeConfigs, rs.ResourceType, rs.ResourceName)
		})
		if len(denied) > 0 {
			return nil, func(m kmsg.Response) {
				resp := m.(*kmsg.DescribeConfigsResponse)
				for _, rs := range denied {
					rr := kmsg.NewDescribeConfigsResponseResource()
					rr.ResourceType, rr.ResourceName = rs.ResourceType, rs.ResourceName
					rr.ErrorCode = configAuthFailed(rs.ResourceType)
					resp.Resources = append(resp.Resources, rr)
				}
			}
		}
	case *kmsg.AlterConfigsRequest:
		var denied []kmsg.AlterConfigsRequestResource
		r.Resources, denied = split(r.Resources, func(rs kmsg.AlterConfigsRequestResource) bool {
			return z.configResource(opAlterConfigs, rs.ResourceType, rs.ResourceName)
		})
		if len(denied) > 0 {
			return nil, func(m kmsg.Response) {
				resp := m.(*kmsg.AlterConfigsResponse)
				for _, rs := range denied {
					rr := kmsg.NewAlterConfigsResponseResource()
					rr.ResourceType, rr.ResourceName = rs.ResourceType, rs.ResourceName
					rr.ErrorCode = configAuthFailed(rs.ResourceType)
					resp.Resources = append(resp.Resources, rr)
				}
			}
		}
	case *kmsg.IncrementalAlterConfigsRequest:
		var denied []kmsg.IncrementalAlterConfigsRequestResource
		r.Resources, denied = split(r.Resources, func(rs kmsg.IncrementalAlterConfigsRequestResource) bool {
			return z.configResource(opAlterConfigs, rs.ResourceType, rs.ResourceName)
		})
		if len(denied) > 0 {
			return nil, func(m kmsg.Response) {
				resp := m.(*kmsg.IncrementalAlterConfigsResponse)
				for _, rs := range denied {
					rr := kmsg.NewIncrementalAlterConfigsResponseResource()
					rr.ResourceType, rr.ResourceName = rs.ResourceType, rs.ResourceName
					rr.ErrorCode = configAuthFailed(rs.ResourceType)
					resp.Resources = append(resp.Resources, rr)
				}
			}
		}
	case *kmsg.AlterReplicaLogDirsRequest:
		if !z.cluster(opAlter) {
			resp := r.ResponseKind().(*kmsg.AlterReplicaLogDirsResponse)
			for _, d := range r.Dirs {
				for _, t := range d.Topics {
					rt := kmsg.NewAlterReplicaLogDirsResponseTopic()
					rt.Topic = t.Topic
					for _, p := range t.Partitions {
						rp := kmsg.NewAlterReplicaLogDirsResponseTopicPartition()
						rp.Partition, rp.ErrorCode = p, clusterAuthFailed
						rt.Partitions = append(rt.Partitions, rp)
					}
					resp.Topics = append(resp.Topics, rt)
				}
			}
			return resp, nil
		}
	case *kmsg.DescribeLogDirsRequest:
		if !z.cluster(opDescribe) {
			resp := r.ResponseKind().(*kmsg.DescribeLogDirsResponse)
			resp.ErrorCode = clusterAuthFailed // v3+; older versions get no dirs
			return resp, nil
		}
	case *kmsg.ElectLeadersRequest:
		if !z.cluster(opAlter) {
			resp := r.ResponseKind().(*kmsg.ElectLeadersResponse)
			resp.ErrorCode = clusterAuthFailed
			for _, t := range r.Topics {
				rt := kmsg.NewElectLeadersResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewElectLeadersResponseTopicPartition()
					rp.Partition, rp.ErrorCode = p, clusterAuthFailed
					rt.Partitions = append(rt.Partitions, rp)
				}
				resp.Topics = append(resp.Topics, rt)
			}
			return resp, nil
		}
	case *kmsg.AlterPartitionAssignmentsRequest:
		if !z.cluster(opAlter) {
			resp := r.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
			resp.ErrorCode = clusterAuthFailed
			return resp, nil
		}
	case *kmsg.UpdateFeaturesRequest:
		// Reference: ControllerApis.handleUpdateFeatures: ALTER on the
		// cluster.
		if !z.cluster(opAlter) {
			resp := r.ResponseKind().(*kmsg.UpdateFeaturesResponse)
			resp.ErrorCode = clusterAuthFailed
			return resp, nil
		}
	case *kmsg.ListConfigResourcesRequest:
		// Reference: KafkaApis.handleListConfigResources.
		if !z.cluster(opDescribeConfigs) {
			resp := r.ResponseKind().(*kmsg.ListConfigResourcesResponse)
			resp.ErrorCode = clusterAuthFailed
			return resp, nil
		}
	case *kmsg.ListPartitionReassignmentsRequest:
		if !z.cluster(opDescribe) {
			resp := r.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
			resp.ErrorCode = clusterAuthFailed
			return resp, nil
		}
	case *kmsg.InitProducerIDRequest:
		// Reference: KafkaApis.handleInitProducerIdRequest and KIP-679: a
		// transactional id needs WRITE on it; an idempotent producer
		// IDEMPOTENT_WRITE on the cluster or WRITE on some topic.
		resp := r.ResponseKind().(*kmsg.InitProducerIDResponse)
		resp.ProducerID, resp.ProducerEpoch = -1, -1
		if r.TransactionalID != nil {
			if !z.transactionalID(opWrite, *r.TransactionalID) {
				resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
				return resp, nil
			}
		} else if !z.cluster(opIdempotentWrite) && !z.anyTopic(opWrite) {
			resp.ErrorCode = clusterAuthFailed
			return resp, nil
		}
	case *kmsg.DescribeClusterRequest:
		if r.IncludeClusterAuthorizedOperations {
			return nil, func(m kmsg.Response) {
				resp := m.(*kmsg.DescribeClusterResponse)
				resp.ClusterAuthorizedOperations = z.clusterAuthorizedOperations()
			}
		}
	}
	return nil, nil
}

// guardOffsetFetch: DESCRIBE on each group, and DESCRIBE on each topic,
// whose partitions get TOPIC_AUTHORIZATION_FAILED; fetching all topics of
// a group leaves out those the principal may not describe (Reference:
// KafkaApis.handleOffsetFetchRequest).
func (b *Broker) guardOffsetFetch(z authz, r *kmsg.OffsetFetchRequest) (kmsg.Response, func(kmsg.Response)) {
	topicAuthFailed := kerr.TopicAuthorizationFailed.Code
	if r.Version < 8 {
		if !z.group(opDescribe, r.Group) {
			resp := r.ResponseKind().(*kmsg.OffsetFetchResponse)
			resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
			return resp, nil
		}
		var denied []kmsg.OffsetFetchRequestTopic
		r.Topics, denied = split(r.Topics, func(t kmsg.OffsetFetchRequestTopic) bool { return z.topic(opDescribe, t.Topic) })
		all := r.Topics == nil
		return nil, func(m kmsg.Response) {
			resp := m.(*kmsg.OffsetFetchResponse)
			if all {
				resp.Topics, _ = split(resp.Topics, func(t kmsg.OffsetFetchResponseTopic) bool { return z.topic(opDescribe, t.Topic) })
			}
			for _, t := range denied {
				rt := kmsg.NewOffsetFetchResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewOffsetFetchResponseTopicPartition()
					rp.Partition, rp.ErrorCode, rp.Offset, rp.LeaderEpoch = p, topicAuthFailed, -1, -1
					rt.Partitions = append(rt.Partitions, rp)
				}
				resp.Topics = append(resp.Topics, rt)
			}
		}
	}
	var deniedGroups []kmsg.OffsetFetchRequestGroup
	r.Groups, deniedGroups = split(r.Groups, func(g kmsg.OffsetFetchRequestGroup) bool { return z.group(opDescribe, g.Group) })
	deniedTopics := make(map[string][]kmsg.OffsetFetchRequestGroupTopic)
	all := make(map[string]bool)
	for i := range r.Groups {
		g := &r.Groups[i]
		all[g.Group] = g.Topics == nil
		var d []kmsg.OffsetFetchRequestGroupTopic
		g.Topics, d = split(g.Topics, func(t kmsg.OffsetFetchRequestGroupTopic) bool { return z.topic(opDescribe, t.Topic) })
		if len(d) > 0 {
			deniedTopics[g.Group] = d
		}
	}
	return nil, func(m kmsg.Response) {
		resp := m.(*kmsg.OffsetFetchResponse)
		for i := range resp.Groups {
			g := &resp.Groups[i]
			if all[g.Group] {
				g.Topics, _ = split(g.Topics, func(t kmsg.OffsetFetchResponseGroupTopic) bool { return z.topic(opDescribe, t.Topic) })
			}
			for _, t := range deniedTopics[g.Group] {
				rt := kmsg.NewOffsetFetchResponseGroupTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
					rp.Partition, rp.ErrorCode, rp.Offset, rp.LeaderEpoch = p, topicAuthFailed, -1, -1
					rt.Partitions = append(rt.Partitions, rp)
				}
				g.Topics = append(g.Topics, rt)
			}
		}
		for _, g := range deniedGroups {
			rg := kmsg.NewOffsetFetchResponseGroup()
			rg.Group, rg.ErrorCode = g.Group, kerr.GroupAuthorizationFailed.Code
			resp.Groups = append(resp.Groups, rg)
		}
	}
}

// guardDeleteTopics: DELETE on each topic named (by name, or by id once
// resolved); Kafka also answers TOPIC_AUTHORIZATION_FAILED for a topic
// the principal may not describe, so its existence is not revealed.
func (b *Broker) guardDeleteTopics(z authz, r *kmsg.DeleteTopicsRequest) (kmsg.Response, func(kmsg.Response)) {
	img := b.cluster.Image()
	name := func(t kmsg.DeleteTopicsRequestTopic) (string, bool) {
		if t.Topic != nil {
			return *t.Topic, true
		}
		if tp := img.TopicIDs[t.TopicID]; tp != nil {
			return tp.Name, true
		}
		return "", false
	}
	var denied []kmsg.DeleteTopicsRequestTopic
	r.Topics, denied = split(r.Topics, func(t kmsg.DeleteTopicsRequestTopic) bool {
		n, ok := name(t)
		return !ok || z.topic(aclDelete, n)
	})
	var deniedNames []string
	if r.Version < 6 {
		r.TopicNames, deniedNames = split(r.TopicNames, func(n string) bool { return z.topic(aclDelete, n) })
	}
	if len(denied) == 0 && len(deniedNames) == 0 {
		return nil, nil
	}
	return nil, func(m kmsg.Response) {
		resp := m.(*kmsg.DeleteTopicsResponse)
		add := func(n *string, id [16]byte) {
			rt := kmsg.NewDeleteTopicsResponseTopic()
			rt.Topic, rt.TopicID, rt.ErrorCode = n, id, kerr.TopicAuthorizationFailed.Code
			resp.Topics = append(resp.Topics, rt)
		}
		for _, t := range denied {
			n, _ := name(t)
			add(&n, t.TopicID)
		}
		for _, n := range deniedNames {
			add(&n, [16]byte{})
		}
	}
}

// configResource authorizes op on a DescribeConfigs/AlterConfigs
// resource: a topic, a group (GROUP config resources, as Kafka's
// ConfigHelper and ConfigAdminManager authorize them), or the cluster for
// broker and broker-logger resources.
func (z authz) configResource(op kmsg.ACLOperation, rt kmsg.ConfigResourceType, name string) bool {
	switch rt {
	case kmsg.ConfigResourceTypeTopic:
		return z.topic(op, name)
	case kmsg.ConfigResourceTypeGroupConfig:
		return z.group(op, name)
	case kmsg.ConfigResourceTypeBroker, kmsg.ConfigResourceTypeBrokerLogger:
		return z.cluster(op)
	}
	return true // other types are refused by the handler itself
}

func configAuthFailed(rt kmsg.ConfigResourceType) int16 {
	switch rt {
	case kmsg.ConfigResourceTypeTopic:
		return kerr.TopicAuthorizationFailed.Code
	case kmsg.ConfigResourceTypeGroupConfig:
		return kerr.GroupAuthorizationFailed.Code
	}
	return kerr.ClusterAuthorizationFailed.Code
}

// split returns the elements of s that keep accepts and those it refuses,
// each in order. A nil s gives nil kept (a null list stays null).
func split[T any](s []T, keep func(T) bool) (kept, refused []T) {
	if s == nil {
		return nil, nil
	}
	kept = s[:0:0]
	for _, v := range s {
		if keep(v) {
			kept = append(kept, v)
		} else {
			refused = append(refused, v)
		}
	}
	return kept, refused
}

// patchReply applies fix to the response r carries, now or when its Wait
// produces it.
func patchReply(r server.Reply, fix func(kmsg.Response)) server.Reply {
	switch {
	case r.Msg != nil:
		fix(r.Msg)
	case r.Wait != nil:
		wait := r.Wait
		r.Wait = func(ctx context.Context) server.Reply { return patchReply(wait(ctx), fix) }
	}
	return r
}

// txnOffsetCommitErrors answers every partition of topics with code.
func txnOffsetCommitErrors(topics []kmsg.TxnOffsetCommitRequestTopic, code int16) []kmsg.TxnOffsetCommitResponseTopic {
	out := make([]kmsg.TxnOffsetCommitResponseTopic, 0, len(topics))
	for _, t := range topics {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		out = append(out, rt)
	}
	return out
}

// consumerGroupTopicsDescribable reports whether the principal may
// describe every topic a described consumer group's members subscribe to
// or are assigned.
func consumerGroupTopicsDescribable(z authz, g *kmsg.ConsumerGroupDescribeResponseGroup) bool {
	for _, m := range g.Members {
		for _, t := range m.SubscribedTopics {
			if !z.topic(opDescribe, t) {
				return false
			}
		}
		for _, a := range []kmsg.Assignment{m.Assignment, m.TargetAssignment} {
			for _, tp := range a.TopicPartitions {
				if tp.Topic != "" && !z.topic(opDescribe, tp.Topic) {
					return false
				}
			}
		}
	}
	return true
}
