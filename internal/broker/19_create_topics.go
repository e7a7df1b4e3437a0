package broker

// CreateTopics: v0-7
//
// * v0: topics, partitions, replication factor, configs.
// * v1: ValidateOnly and ErrorMessage.
// * v4: NumPartitions and ReplicationFactor may be -1: the broker defaults
//   (num.partitions, default.replication.factor). (KIP-464)
// * v5: flexible versions; the response carries the topic's partition count,
//   replication factor and configs (KIP-525).
// * v6: THROTTLING_QUOTA_EXCEEDED per topic once the client's
//   controller_mutation_rate is spent (KIP-599); before v6 the request
//   goes through and is only throttled. One token per partition, taken
//   after every other check, also for validate_only, as in Kafka.
// * v7: topic ids (KIP-516).
//
// Names follow Kafka's rules: 1-249 characters of [a-zA-Z0-9._-], not "."
// or "..", and not colliding with an existing topic when '.' and '_' are
// treated alike. samsa does not take hand-made replica assignments yet: a
// request with one gets INVALID_REQUEST.
//
// Internal topics (__consumer_offsets, __transaction_state) are normally
// created by the broker on first use. A hand-made one must have the
// partition count the coordinators map keys onto
// (offsets.topic.num.partitions, transaction.state.log.num.partitions;
// -1 means that count) and stay compacted; otherwise INVALID_REQUEST, the
// code Kafka gives a create of its internal __cluster_metadata topic
// (ControllerApis.createTopics). Unlike Kafka, whose group coordinator
// follows the partition count of an existing __consumer_offsets, samsa's
// coordinators use the configured count, so a different count would leave
// some groups without a coordinator for good.

import (
	"context"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/cluster"
	"samsa/internal/config"
)

func (b *Broker) handleCreateTopics(ctx context.Context, mq *mutationQuota, req *kmsg.CreateTopicsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	seen := make(map[string]int)
	for _, rt := range req.Topics {
		seen[rt.Topic]++
	}
	created := false
	for _, rt := range req.Topics {
		st := kmsg.NewCreateTopicsResponseTopic()
		st.Topic = rt.Topic
		st.NumPartitions, st.ReplicationFactor = -1, -1
		fail := func(code *kerr.Error, err error) {
			st.ErrorCode = code.Code
			st.ErrorMessage = errMessage(err)
			resp.Topics = append(resp.Topics, st)
		}
		img := b.cluster.Image()
		if seen[rt.Topic] > 1 {
			fail(kerr.InvalidRequest, fmt.Errorf("topic %q appears more than once in the request", rt.Topic))
			continue
		}
		if err := validateTopicName(img, rt.Topic); err != nil {
			fail(kerr.InvalidTopicException, err)
			continue
		}
		if img.Topics[rt.Topic] != nil {
			fail(kerr.TopicAlreadyExists, fmt.Errorf("topic %q already exists", rt.Topic))
			continue
		}
		if len(rt.ReplicaAssignment) > 0 {
			fail(kerr.InvalidRequest, fmt.Errorf("manual replica assignment is not supported"))
			continue
		}
		partitions, rf := rt.NumPartitions, rt.ReplicationFactor
		internalParts, internal := b.internalTopicPartitions(rt.Topic)
		if partitions == -1 {
			partitions = b.cfg.NumPartitions
			if internal {
				partitions = internalParts
			}
		}
		if internal && partitions != internalParts {
			fail(kerr.InvalidRequest, fmt.Errorf("creation of internal topic %s with %d partitions is refused: its coordinator maps keys onto %d partitions (%s); leave it to the broker, which creates it on first use",
				rt.Topic, partitions, internalParts, internalPartitionsConfig(rt.Topic)))
			continue
		}
		if rf == -1 {
			rf = b.cfg.DefaultReplicationFactor
		}
		if partitions <= 0 {
			fail(kerr.InvalidPartitions, fmt.Errorf("number of partitions must be larger than 0"))
			continue
		}
		if partitions > maxPartitions {
			fail(kerr.InvalidPartitions, fmt.Errorf("%d partitions is more than the %d a topic may have", partitions, maxPartitions))
			continue
		}
		if rf <= 0 {
			fail(kerr.InvalidReplicationFactor, fmt.Errorf("replication factor must be larger than 0"))
			continue
		}
		if int(rf) > len(img.Brokers) {
			fail(kerr.InvalidReplicationFactor, fmt.Errorf("replication factor %d larger than the %d available brokers", rf, len(img.Brokers)))
			continue
		}
		configs := make(map[string]string, len(rt.Configs))
		for _, c := range rt.Configs {
			if c.Value == nil {
				continue
			}
			configs[c.Name] = *c.Value
		}
		if internal {
			if p, ok := configs["cleanup.policy"]; ok && strings.TrimSpace(p) != "compact" {
				fail(kerr.InvalidRequest, fmt.Errorf("creation of internal topic %s with cleanup.policy=%s is refused: it must be compacted", rt.Topic, p))
				continue
			}
			for k, v := range b.internalTopicConfigs(rt.Topic, rf) {
				if _, set := configs[k]; !set {
					configs[k] = v
				}
			}
		}
		if err := config.ValidateTopic(configs); err != nil {
			fail(kerr.InvalidConfig, err)
			continue
		}
		if _, err := b.topicConfig(img, configs); err != nil {
			fail(kerr.InvalidConfig, err)
			continue
		}
		if err := mq.record(int(partitions)); err != nil {
			fail(errCode(err), err)
			continue
		}
		if !req.ValidateOnly {
			t, err := b.cluster.CreateTopic(ctx, rt.Topic, partitions, rf, configs)
			if err != nil {
				fail(errCode(err), err)
				continue
			}
			st.TopicID = t.ID
			created = true
		}
		st.NumPartitions, st.ReplicationFactor = partitions, rf
		if req.Version >= 5 {
			st.Configs = b.describedTopicConfigs(b.cluster.Image(), configs)
		}
		resp.Topics = append(resp.Topics, st)
	}
	if created {
		if err := b.reconcile(); err != nil {
			b.log.Warn("reconcile after create topics", "err", err)
		}
	}
	resp.ThrottleMillis = mq.throttleMillis()
	return resp
}

// internalTopicPartitions reports whether name is an internal topic and,
// if so, the partition count its coordinator maps keys onto.
func (b *Broker) internalTopicPartitions(name string) (int32, bool) {
	switch name {
	case offsetsTopic:
		return b.cfg.OffsetsTopicNumPartitions, true
	case txnStateTopic:
		return b.cfg.TransactionStateLogNumParts, true
	}
	return 0, false
}

// internalPartitionsConfig names the config that sets an internal topic's
// partition count, with its value.
func internalPartitionsConfig(name string) string {
	if name == txnStateTopic {
		return "transaction.state.log.num.partitions"
	}
	return "offsets.topic.num.partitions"
}

// internalTopicConfigs returns the topic configs the broker gives an
// internal topic it creates with replication factor rf.
func (b *Broker) internalTopicConfigs(name string, rf int16) map[string]string {
	if name == txnStateTopic {
		return map[string]string{
			"cleanup.policy":      "compact",
			"compression.type":    "uncompressed",
			"segment.bytes":       fmt.Sprint(b.cfg.TransactionStateLogSegmentBytes),
			"min.insync.replicas": fmt.Sprint(min(b.cfg.TransactionStateLogMinISR, int32(rf))),
			// Reference: Kafka TransactionLog: the topic never elects an
			// unclean leader, which could lose a decided commit.
			"unclean.leader.election.enable": "false",
		}
	}
	return map[string]string{
		"cleanup.policy": "compact",
		"segment.bytes":  fmt.Sprint(b.cfg.OffsetsTopicSegmentBytes),
	}
}

// describedTopicConfigs lists every topic config with its value and source,
// in the shape CreateTopics v5+ returns.
func (b *Broker) describedTopicConfigs(img *cluster.Image, overrides map[string]string) []kmsg.CreateTopicsResponseTopicConfig {
	var out []kmsg.CreateTopicsResponseTopicConfig
	for _, e := range b.topicConfigEntries(img, overrides) {
		c := kmsg.NewCreateTopicsResponseTopicConfig()
		c.Name, c.Value, c.ReadOnly, c.Source, c.IsSensitive = e.name, e.value, e.readOnly, int8(e.source), e.sensitive
		out = append(out, c)
	}
	return out
}

// maxPartitions bounds a topic's partition count. Kafka has no such limit,
// but a count taken from the network must not size an allocation freely,
// and a topic is created in one etcd transaction whose operations are
// bounded too.
const maxPartitions = 10000

// validateTopicName applies Kafka's topic name rules.
func validateTopicName(img *cluster.Image, name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: the empty string", errTopicName)
	case name == "." || name == "..":
		return fmt.Errorf("%w: %q", errTopicName, name)
	case len(name) > 249:
		return fmt.Errorf("%w: longer than 249 characters", errTopicName)
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("%w: %q contains a character other than ASCII alphanumerics, '.', '_' and '-'", errTopicName, name)
		}
	}
	if img != nil && img.Topics[name] == nil && strings.ContainsAny(name, "._") {
		norm := strings.ReplaceAll(name, ".", "_")
		for other := range img.Topics {
			if strings.ReplaceAll(other, ".", "_") == norm {
				return fmt.Errorf("%w: %q collides with existing topic %q", errTopicName, name, other)
			}
		}
	}
	return nil
}
