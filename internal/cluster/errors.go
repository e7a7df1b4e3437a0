package cluster

import "errors"

// Sentinel errors; the broker maps them to Kafka error codes.
var (
	ErrTopicExists              = errors.New("cluster: topic already exists")       // TOPIC_ALREADY_EXISTS
	ErrUnknownTopic             = errors.New("cluster: unknown topic")              // UNKNOWN_TOPIC_OR_PARTITION / UNKNOWN_TOPIC_ID
	ErrInvalidReplicationFactor = errors.New("cluster: invalid replication factor") // INVALID_REPLICATION_FACTOR
	ErrInvalidPartitions        = errors.New("cluster: invalid partition count")    // INVALID_PARTITIONS
	ErrConflict                 = errors.New("cluster: concurrent update")          // retried internally; surfaced only when retries run out

	// ErrInvalidTopic reports a topic name Kafka would refuse: empty, ".",
	// "..", longer than 249 bytes, or with a byte outside [a-zA-Z0-9._-].
	ErrInvalidTopic = errors.New("cluster: invalid topic name") // INVALID_TOPIC_EXCEPTION
	// ErrUnknownPartition reports a partition index the topic does not have.
	ErrUnknownPartition = errors.New("cluster: unknown partition") // UNKNOWN_TOPIC_OR_PARTITION
	// ErrInvalidUpdateVersion reports a compare-and-swap of a partition
	// state whose expected ModRevision is no longer current. It is never
	// retried internally: the caller must re-read the state and decide again.
	ErrInvalidUpdateVersion = errors.New("cluster: partition state changed") // INVALID_UPDATE_VERSION
	// ErrInconsistentClusterID reports a meta.properties whose cluster.id
	// differs from the one etcd holds.
	ErrInconsistentClusterID = errors.New("cluster: inconsistent cluster id") // INCONSISTENT_CLUSTER_ID
	// ErrInconsistentNodeID reports a meta.properties whose node.id differs
	// from Config.NodeID.
	ErrInconsistentNodeID = errors.New("cluster: inconsistent node id")
	// ErrEtcdConfig reports embedded etcd member settings that do not fit
	// together (a bad URL, a name missing from etcd.initial.cluster).
	ErrEtcdConfig = errors.New("cluster: invalid embedded etcd config")
	// ErrInvalidReplicaAssignment reports a reassignment target that is
	// empty, names a broker twice or names an unknown broker, or a cancel
	// that would leave the partition without an in-sync replica.
	ErrInvalidReplicaAssignment = errors.New("cluster: invalid replica assignment") // INVALID_REPLICA_ASSIGNMENT
	// ErrNoReassignmentInProgress reports a cancel of a partition that is
	// not being reassigned.
	ErrNoReassignmentInProgress = errors.New("cluster: no reassignment in progress") // NO_REASSIGNMENT_IN_PROGRESS
	// ErrClosed is returned by calls made after (or cut short by) Close.
	ErrClosed = errors.New("cluster: closed")
)
