package cluster

// This file holds the API contract of package cluster that is not yet
// implemented. Replace each stub with its real implementation in a file
// named for its concern and delete this file once it is empty.

import (
	"context"
	"errors"
	"log/slog"
	"time"
)

// Sentinel errors; the broker maps them to Kafka error codes.
var (
	ErrTopicExists              = errors.New("cluster: topic already exists")       // TOPIC_ALREADY_EXISTS
	ErrUnknownTopic             = errors.New("cluster: unknown topic")              // UNKNOWN_TOPIC_OR_PARTITION / UNKNOWN_TOPIC_ID
	ErrInvalidReplicationFactor = errors.New("cluster: invalid replication factor") // INVALID_REPLICATION_FACTOR
	ErrInvalidPartitions        = errors.New("cluster: invalid partition count")    // INVALID_PARTITIONS
	ErrConflict                 = errors.New("cluster: concurrent update")          // retried internally; surfaced only when retries run out
)

// Broker is a registered broker.
type Broker struct {
	NodeID      int32
	Host        string
	Port        int32
	Rack        *string
	Incarnation string // unique per process start
}

// PartitionState is the replicated state of one partition
// (/samsa/<cluster>/partitions/<topic>/<p>).
type PartitionState struct {
	Leader         int32
	LeaderEpoch    int32
	ISR            []int32
	PartitionEpoch int32
	// ModRevision is the etcd revision of the key; CAS writes compare it.
	ModRevision int64
}

// Topic is a topic as the image holds it (/samsa/<cluster>/topics/<name>
// plus its partition state keys).
type Topic struct {
	Name       string
	ID         [16]byte
	Replicas   [][]int32         // replica assignment per partition
	Configs    map[string]string // topic config overrides (only those set)
	Partitions []PartitionState  // same length as Replicas once loaded
}

// Image is an immutable snapshot of the cluster metadata. Never modify one.
type Image struct {
	ClusterID    string
	Revision     int64 // etcd revision the image reflects
	ControllerID int32
	Brokers      map[int32]Broker
	Topics       map[string]*Topic
	TopicIDs     map[[16]byte]*Topic
	// BrokerConfigs holds dynamic broker configs: key "" is cluster-wide
	// default, otherwise the node id in decimal.
	BrokerConfigs map[string]map[string]string
}

// Config configures the cluster membership of this broker.
type Config struct {
	NodeID int32
	// DataDir holds the embedded etcd's data (<DataDir>/etcd) and
	// meta.properties (cluster.id, node.id).
	DataDir string
	// EtcdEndpoints, if set, connects to an existing etcd cluster instead
	// of embedding one.
	EtcdEndpoints []string
	// AdvertisedHost/Port is what clients are told to connect to.
	AdvertisedHost string
	AdvertisedPort int32
	Rack           *string
	// SessionTimeout is broker.session.timeout.ms: the TTL of the
	// registration lease.
	SessionTimeout time.Duration
	Logger         *slog.Logger
}

// Cluster is this broker's view of, and handle on, the cluster metadata in
// etcd. It is safe for concurrent use.
type Cluster struct{}

// Open starts (or connects to) etcd, loads the image, registers the broker
// under a lease and starts watching. It returns once the first image is
// loaded and the registration is visible in it.
func Open(ctx context.Context, cfg Config) (*Cluster, error) { panic("unimplemented") }

// Image returns the current image. It never blocks.
func (c *Cluster) Image() *Image { panic("unimplemented") }

// Changed returns a channel closed at the next image swap.
func (c *Cluster) Changed() <-chan struct{} { panic("unimplemented") }

// CreateTopic creates a topic with numPartitions partitions and
// replicationFactor replicas each, assigned round robin over the live
// brokers, and an initial partition state (leader = first replica, epoch 0,
// ISR = replicas). The returned topic is as written. It waits until the
// image reflects the write.
func (c *Cluster) CreateTopic(ctx context.Context, name string, numPartitions int32, replicationFactor int16, configs map[string]string) (*Topic, error) {
	panic("unimplemented")
}

// DeleteTopic removes a topic and its partition states.
func (c *Cluster) DeleteTopic(ctx context.Context, name string) error { panic("unimplemented") }

// CreatePartitions grows a topic to count partitions.
func (c *Cluster) CreatePartitions(ctx context.Context, name string, count int32) error {
	panic("unimplemented")
}

// SetTopicConfigs replaces a topic's config overrides.
func (c *Cluster) SetTopicConfigs(ctx context.Context, name string, configs map[string]string) error {
	panic("unimplemented")
}

// SetBrokerConfigs replaces the dynamic configs of a broker ("" for the
// cluster-wide default).
func (c *Cluster) SetBrokerConfigs(ctx context.Context, node string, configs map[string]string) error {
	panic("unimplemented")
}

// Close deregisters the broker (revokes its lease), stops watching, and
// stops the embedded etcd if there is one. It is idempotent.
func (c *Cluster) Close() error { panic("unimplemented") }
