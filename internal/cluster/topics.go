package cluster

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/google/uuid"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// maxCASRetries bounds the read-compare-write loops of topic updates that
// race with other writers; after that ErrConflict comes back.
const maxCASRetries = 16

// CreateTopic creates a topic with numPartitions partitions and
// replicationFactor replicas each, assigned round robin over the live
// brokers, and an initial partition state (leader = first replica, epoch 0,
// ISR = replicas). The returned topic is as written. It waits until the
// image reflects the write.
//
// The topic key and all partition keys are written in one etcd transaction
// that requires the topic key to be absent, so of concurrent creates of a
// name exactly one succeeds; the others get ErrTopicExists. Other errors:
// ErrInvalidTopic, ErrInvalidPartitions, ErrInvalidReplicationFactor (also
// when fewer brokers are registered than replicationFactor).
func (c *Cluster) CreateTopic(ctx context.Context, name string, numPartitions int32, replicationFactor int16, configs map[string]string) (*Topic, error) {
	if !validTopicName(name) {
		return nil, fmt.Errorf("%w: %q", ErrInvalidTopic, name)
	}
	if numPartitions <= 0 {
		return nil, fmt.Errorf("%w: %d partitions for topic %s", ErrInvalidPartitions, numPartitions, name)
	}
	if replicationFactor <= 0 {
		return nil, fmt.Errorf("%w: %d for topic %s", ErrInvalidReplicationFactor, replicationFactor, name)
	}
	img := c.Image()
	brokers := img.BrokerIDs()
	rf := int(replicationFactor)
	if rf > len(brokers) {
		return nil, fmt.Errorf("%w: %d is larger than the %d available brokers", ErrInvalidReplicationFactor, rf, len(brokers))
	}
	replicas := placeReplicas(img, name, 0, numPartitions, rf)

	id := newTopicID(img)
	tv := topicValue{ID: uuid.UUID(id).String(), Replicas: replicas, Configs: cloneConfigs(configs)}
	topicKey := c.keys.topic(name)
	ops := make([]clientv3.Op, 0, 1+len(replicas))
	ops = append(ops, clientv3.OpPut(topicKey, mustJSON(tv)))
	states := make([]PartitionState, len(replicas))
	for p, r := range replicas {
		states[p] = PartitionState{Leader: r[0], LeaderEpoch: 0, ISR: slices.Clone(r), PartitionEpoch: 0,
			LeaderIncarnation: img.Brokers[r[0]].Incarnation}
		ops = append(ops, clientv3.OpPut(c.keys.partition(name, int32(p)), mustJSON(partitionValueOf(states[p]))))
	}
	resp, err := c.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(topicKey), "=", 0)).
		Then(ops...).
		Commit()
	if err != nil {
		return nil, fmt.Errorf("cluster: create topic %s: %w", name, err)
	}
	if !resp.Succeeded {
		return nil, fmt.Errorf("%w: %s", ErrTopicExists, name)
	}
	rev := resp.Header.Revision
	for p := range states {
		states[p].ModRevision = rev
	}
	c.log.Info("cluster: topic created", "topic", name, "topic_id", kafkaUUID(id), "partitions", numPartitions,
		"replication_factor", replicationFactor, "replicas", replicas, "configs", tv.Configs, "revision", rev)
	if err := c.waitRevision(ctx, rev); err != nil {
		return nil, err
	}
	return &Topic{Name: name, ID: id, Replicas: replicas, Configs: tv.Configs, Partitions: states, ModRevision: rev}, nil
}

// kafkaUUID returns id as Kafka prints a Uuid: URL-safe base64 without
// padding, so log lines match what kafka-topics.sh shows.
func kafkaUUID(id [16]byte) string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// newTopicID returns a random topic id that is not the zero id, not
// Kafka's reserved metadata topic id (0...01) and not in use.
func newTopicID(img *Image) [16]byte {
	for {
		u := uuid.New()
		var id [16]byte = u
		if id == ([16]byte{}) || id == ([16]byte{15: 1}) {
			continue
		}
		if _, taken := img.TopicIDs[id]; taken {
			continue
		}
		return id
	}
}

// DeleteTopic removes a topic and its partition states in one transaction.
// It returns ErrUnknownTopic if there is no such topic, and waits until the
// image reflects the deletion.
func (c *Cluster) DeleteTopic(ctx context.Context, name string) error {
	if !validTopicName(name) {
		return fmt.Errorf("%w: %s", ErrUnknownTopic, name)
	}
	// NB: read before the delete: the watcher may apply it to the image
	// before this goroutine looks again.
	var id string
	var parts int
	if t := c.Image().Topics[name]; t != nil {
		id, parts = kafkaUUID(t.ID), len(t.Partitions)
	}
	topicKey := c.keys.topic(name)
	resp, err := c.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(topicKey), ">", 0)).
		Then(clientv3.OpDelete(topicKey), clientv3.OpDelete(c.keys.partitionsOf(name), clientv3.WithPrefix())).
		Commit()
	if err != nil {
		return fmt.Errorf("cluster: delete topic %s: %w", name, err)
	}
	if !resp.Succeeded {
		return fmt.Errorf("%w: %s", ErrUnknownTopic, name)
	}
	c.log.Info("cluster: topic deleted", "topic", name, "topic_id", id, "partitions", parts, "revision", resp.Header.Revision)
	return c.waitRevision(ctx, resp.Header.Revision)
}

// CreatePartitions grows a topic to count partitions. The new partitions
// get the topic's replication factor (that of partition 0), replicas
// assigned over the live brokers, and initial states as in CreateTopic.
// The write compares the topic key's mod revision and is retried on a
// concurrent change. Errors: ErrUnknownTopic, ErrInvalidPartitions (count
// not larger than the current count), ErrInvalidReplicationFactor (too few
// brokers), ErrConflict. It waits until the image reflects the write.
func (c *Cluster) CreatePartitions(ctx context.Context, name string, count int32) error {
	var cur int32
	var added [][]int32
	err := c.updateTopic(ctx, name, func(tv *topicValue) ([]clientv3.Op, error) {
		cur = int32(len(tv.Replicas))
		if count <= cur {
			return nil, fmt.Errorf("%w: topic %s has %d partitions, asked for %d", ErrInvalidPartitions, name, cur, count)
		}
		rf := 1
		if cur > 0 {
			rf = len(tv.Replicas[0])
		}
		img := c.Image()
		if n := len(img.Brokers); rf > n {
			return nil, fmt.Errorf("%w: %d is larger than the %d available brokers", ErrInvalidReplicationFactor, rf, n)
		}
		added = placeReplicas(img, name, cur, count-cur, rf)
		tv.Replicas = append(slices.Clone(tv.Replicas), added...)
		ops := make([]clientv3.Op, 0, len(added))
		for i, r := range added {
			st := PartitionState{Leader: r[0], ISR: slices.Clone(r)}
			ops = append(ops, clientv3.OpPut(c.keys.partition(name, cur+int32(i)), mustJSON(partitionValueOf(st))))
		}
		return ops, nil
	})
	if err == nil {
		c.log.Info("cluster: partitions created", "topic", name, "from", cur, "to", count, "replicas", added)
	}
	return err
}

// SetTopicConfigs replaces a topic's config overrides. Errors:
// ErrUnknownTopic, ErrConflict. It waits until the image reflects the write.
func (c *Cluster) SetTopicConfigs(ctx context.Context, name string, configs map[string]string) error {
	return c.updateTopic(ctx, name, func(tv *topicValue) ([]clientv3.Op, error) {
		tv.Configs = cloneConfigs(configs)
		return nil, nil
	})
}

// updateTopic reads topics/<name>, lets edit change it and add operations,
// and writes the result if the key's mod revision is unchanged, retrying
// otherwise.
func (c *Cluster) updateTopic(ctx context.Context, name string, edit func(*topicValue) ([]clientv3.Op, error)) error {
	if !validTopicName(name) {
		return fmt.Errorf("%w: %s", ErrUnknownTopic, name)
	}
	topicKey := c.keys.topic(name)
	for range maxCASRetries {
		get, err := c.cli.Get(ctx, topicKey)
		if err != nil {
			return fmt.Errorf("cluster: update topic %s: %w", name, err)
		}
		if len(get.Kvs) == 0 {
			return fmt.Errorf("%w: %s", ErrUnknownTopic, name)
		}
		kv := get.Kvs[0]
		var tv topicValue
		if err := json.Unmarshal(kv.Value, &tv); err != nil {
			return fmt.Errorf("cluster: update topic %s: decode: %w", name, err)
		}
		ops, err := edit(&tv)
		if err != nil {
			return err
		}
		ops = append([]clientv3.Op{clientv3.OpPut(topicKey, mustJSON(tv))}, ops...)
		resp, err := c.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(topicKey), "=", kv.ModRevision)).
			Then(ops...).
			Commit()
		if err != nil {
			return fmt.Errorf("cluster: update topic %s: %w", name, err)
		}
		if resp.Succeeded {
			return c.waitRevision(ctx, resp.Header.Revision)
		}
	}
	return fmt.Errorf("%w: topic %s changed %d times while updating it", ErrConflict, name, maxCASRetries)
}

// SetBrokerConfigs replaces the dynamic configs of a broker ("" for the
// cluster-wide default); an empty map removes them. node must be "" or a
// node id in decimal. It waits until the image reflects the write.
func (c *Cluster) SetBrokerConfigs(ctx context.Context, node string, configs map[string]string) error {
	if node != "" {
		if n, err := strconv.ParseInt(node, 10, 32); err != nil || n < 0 || strconv.FormatInt(n, 10) != node {
			return fmt.Errorf("cluster: set broker configs: invalid node %q", node)
		}
	}
	key := c.keys.brokerConfig(node)
	if len(configs) == 0 {
		resp, err := c.cli.Delete(ctx, key)
		if err != nil {
			return fmt.Errorf("cluster: set broker configs of %q: %w", node, err)
		}
		if resp.Deleted == 0 {
			// Nothing changed, so no revision of ours to wait for.
			return nil
		}
		return c.waitRevision(ctx, resp.Header.Revision)
	}
	resp, err := c.cli.Put(ctx, key, mustJSON(configsValue{Configs: cloneConfigs(configs)}))
	if err != nil {
		return fmt.Errorf("cluster: set broker configs of %q: %w", node, err)
	}
	return c.waitRevision(ctx, resp.Header.Revision)
}

// SetGroupConfigs replaces the config overrides of a group (the GROUP
// config resource); an empty map removes them. The group need not exist:
// as in Kafka, a group's configs are kept apart from its state and may be
// set before its first member joins. It waits until the image reflects
// the write.
func (c *Cluster) SetGroupConfigs(ctx context.Context, group string, configs map[string]string) error {
	if group == "" {
		return fmt.Errorf("cluster: set group configs: empty group id")
	}
	key := c.keys.groupConfig(group)
	if len(configs) == 0 {
		resp, err := c.cli.Delete(ctx, key)
		if err != nil {
			return fmt.Errorf("cluster: set group configs of %q: %w", group, err)
		}
		if resp.Deleted == 0 {
			return nil
		}
		return c.waitRevision(ctx, resp.Header.Revision)
	}
	resp, err := c.cli.Put(ctx, key, mustJSON(configsValue{Configs: cloneConfigs(configs)}))
	if err != nil {
		return fmt.Errorf("cluster: set group configs of %q: %w", group, err)
	}
	return c.waitRevision(ctx, resp.Header.Revision)
}

// AlterPartition writes the state of partition p of topic if its key still
// has mod revision st.ModRevision (compare-and-swap), and returns the state
// as written, with the new ModRevision. The caller sets the epochs: bump
// LeaderEpoch on a leader change and PartitionEpoch on every change.
// Errors: ErrUnknownPartition if the key does not exist,
// ErrInvalidUpdateVersion if it changed since st was read (never retried
// here: the caller must decide again from the new state). It waits until
// the image reflects the write.
func (c *Cluster) AlterPartition(ctx context.Context, topic string, p int32, st PartitionState) (PartitionState, error) {
	return c.alterPartition(ctx, topic, p, st, nil)
}

// alterPartition is AlterPartition with extra compares in the transaction
// (fence); if one fails the write fails with ErrInvalidUpdateVersion.
func (c *Cluster) alterPartition(ctx context.Context, topic string, p int32, st PartitionState, fence []clientv3.Cmp) (PartitionState, error) {
	if !validTopicName(topic) || p < 0 {
		return PartitionState{}, fmt.Errorf("%w: %s-%d", ErrUnknownPartition, topic, p)
	}
	key := c.keys.partition(topic, p)
	cmps := append([]clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(key), "=", st.ModRevision),
		clientv3.Compare(clientv3.CreateRevision(key), ">", 0)}, fence...)
	resp, err := c.cli.Txn(ctx).
		If(cmps...).
		Then(clientv3.OpPut(key, mustJSON(partitionValueOf(st)))).
		Else(clientv3.OpGet(key, clientv3.WithCountOnly())).
		Commit()
	if err != nil {
		return PartitionState{}, fmt.Errorf("cluster: alter partition %s-%d: %w", topic, p, err)
	}
	if !resp.Succeeded {
		if resp.Responses[0].GetResponseRange().Count == 0 {
			return PartitionState{}, fmt.Errorf("%w: %s-%d", ErrUnknownPartition, topic, p)
		}
		if len(fence) > 0 {
			return PartitionState{}, fmt.Errorf("%w: %s-%d is no longer at revision %d, or this broker is no longer controller", ErrInvalidUpdateVersion, topic, p, st.ModRevision)
		}
		return PartitionState{}, fmt.Errorf("%w: %s-%d is no longer at revision %d", ErrInvalidUpdateVersion, topic, p, st.ModRevision)
	}
	st.ISR = slices.Clone(st.ISR)
	st.ModRevision = resp.Header.Revision
	if err := c.waitRevision(ctx, st.ModRevision); err != nil {
		return PartitionState{}, err
	}
	return st, nil
}

// alterPartitions writes the states of us (updates without Replicas) in
// one transaction that compares every partition key's mod revision, and
// fence. It reports whether the transaction succeeded; when a compare
// failed nothing was written, and the caller writes the updates one by one
// to learn which failed and why. On success it waits until the image has
// the write.
func (c *Cluster) alterPartitions(ctx context.Context, us []PartitionUpdate, fence []clientv3.Cmp) (bool, error) {
	cmps := make([]clientv3.Cmp, 0, 2*len(us)+len(fence))
	ops := make([]clientv3.Op, 0, len(us))
	for _, u := range us {
		if !validTopicName(u.Topic) || u.Partition < 0 {
			return false, nil
		}
		key := c.keys.partition(u.Topic, u.Partition)
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(key), "=", u.State.ModRevision),
			clientv3.Compare(clientv3.CreateRevision(key), ">", 0))
		ops = append(ops, clientv3.OpPut(key, mustJSON(partitionValueOf(u.State))))
	}
	resp, err := c.cli.Txn(ctx).If(append(cmps, fence...)...).Then(ops...).Commit()
	if err != nil {
		return false, fmt.Errorf("cluster: alter %d partitions: %w", len(us), err)
	}
	if !resp.Succeeded {
		return false, nil
	}
	return true, c.waitRevision(ctx, resp.Header.Revision)
}

func partitionValueOf(st PartitionState) partitionValue {
	isr := st.ISR
	if isr == nil {
		isr = []int32{}
	}
	return partitionValue{Leader: st.Leader, LeaderEpoch: st.LeaderEpoch, ISR: isr, PartitionEpoch: st.PartitionEpoch,
		AddingReplicas: st.AddingReplicas, RemovingReplicas: st.RemovingReplicas, LeaderIncarnation: st.LeaderIncarnation,
		ELR: st.ELR, LastKnownELR: st.LastKnownELR}
}

func cloneConfigs(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return maps.Clone(m)
}
