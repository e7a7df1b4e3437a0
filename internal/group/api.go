package group

import (
	"context"
	"log/slog"
	"time"

	"samsa/internal/config"
)

// Config configures a Coordinator. Field comments give the Kafka config
// names; zero values are replaced by Kafka's defaults in NewCoordinator.
type Config struct {
	MinSessionTimeout      time.Duration // group.min.session.timeout.ms (6000)
	MaxSessionTimeout      time.Duration // group.max.session.timeout.ms (1800000)
	InitialRebalanceDelay  time.Duration // group.initial.rebalance.delay.ms (3000); negative means 0
	MaxSize                int32         // group.max.size (MaxInt32)
	OffsetsRetention       time.Duration // offsets.retention.minutes (10080)
	OffsetsRetentionCheck  time.Duration // offsets.retention.check.interval.ms (600000)
	OffsetsTopicPartitions int32         // offsets.topic.num.partitions (50)
	OffsetMetadataMaxBytes int           // offset.metadata.max.bytes (4096)

	// Logger receives coordinator events; nil discards them.
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// ConfigFromBroker takes the group settings from a broker configuration.
func ConfigFromBroker(b *config.Broker) Config {
	panic("unimplemented")
}

// Log is one __consumer_offsets partition as the coordinator needs it.
// The broker implements it over its replica of the partition.
type Log interface {
	// Append writes the records (key/value, value nil = tombstone) as one
	// batch and returns once they are durable (or fails).
	Append(ctx context.Context, recs []KV) error
	// Replay calls fn for every record in the partition from the start, in
	// order.
	Replay(ctx context.Context, fn func(key, value []byte) error) error
}

// KV is one record of __consumer_offsets. A nil Value is a tombstone.
type KV struct{ Key, Value []byte }

// Partition returns the __consumer_offsets partition of a group:
// (javaHashCode(group) & 0x7fffffff) % numPartitions.
func Partition(group string, numPartitions int32) int32 {
	panic("unimplemented")
}

// Protocol is one assignment protocol a member supports, in preference order.
type Protocol struct {
	Name     string
	Metadata []byte
}

// JoinGroupRequest is a JoinGroup request (all versions).
type JoinGroupRequest struct {
	Group                string
	MemberID             string  // "" on a first join
	InstanceID           *string // group.instance.id (v5+, KIP-345); nil for dynamic members
	ProtocolType         string
	Protocols            []Protocol
	SessionTimeout       time.Duration
	RebalanceTimeout     time.Duration // v1+; the broker passes SessionTimeout for v0
	ClientID             string
	ClientHost           string
	RequireKnownMemberID bool   // v4+ (KIP-394)
	Reason               string // v8+ (KIP-800), logged only
}

// Member is a group member as the leader sees it in its JoinGroup response.
type Member struct {
	MemberID   string
	InstanceID *string
	Metadata   []byte
}

// JoinGroupResult is a JoinGroup response. With ErrMemberIDRequired the
// result still carries the generated MemberID.
type JoinGroupResult struct {
	Generation   int32
	ProtocolType string
	Protocol     string
	LeaderID     string
	MemberID     string
	// SkipAssignment (v9, KIP-814) is always false: a rejoining static
	// leader is sent the members and computes the assignment again.
	SkipAssignment bool
	// Members is filled for the leader only.
	Members []Member
}

// Assignment is one member's assignment from the leader's SyncGroup.
type Assignment struct {
	MemberID   string
	Assignment []byte
}

// SyncGroupRequest is a SyncGroup request (all versions).
type SyncGroupRequest struct {
	Group        string
	MemberID     string
	InstanceID   *string
	Generation   int32
	ProtocolType *string // v5+; checked when not nil
	Protocol     *string // v5+; checked when not nil
	Assignments  []Assignment
}

// SyncGroupResult is a SyncGroup response.
type SyncGroupResult struct {
	ProtocolType string
	Protocol     string
	Assignment   []byte
}

// HeartbeatRequest is a Heartbeat request (all versions).
type HeartbeatRequest struct {
	Group      string
	MemberID   string
	InstanceID *string
	Generation int32
}

// LeaveMember is one member of a LeaveGroup request. v0-2 carry one member
// by MemberID; v3+ (KIP-345) a batch, static members by InstanceID.
type LeaveMember struct {
	MemberID   string
	InstanceID *string
	Reason     string // v5+ (KIP-800), logged only
}

// LeaveGroupRequest is a LeaveGroup request.
type LeaveGroupRequest struct {
	Group   string
	Members []LeaveMember
}

// LeaveMemberResult is the outcome for one leaving member.
type LeaveMemberResult struct {
	MemberID   string
	InstanceID *string
	Err        error
}

// LeaveGroupResult is a LeaveGroup response, one entry per request member.
type LeaveGroupResult struct {
	Members []LeaveMemberResult
}

// OffsetCommitPartition is one partition's commit.
type OffsetCommitPartition struct {
	Partition   int32
	Offset      int64
	LeaderEpoch int32 // -1 when unknown (v6+)
	Metadata    *string
}

// OffsetCommitTopic groups commits by topic.
type OffsetCommitTopic struct {
	Topic      string
	Partitions []OffsetCommitPartition
}

// OffsetCommitRequest is an OffsetCommit request. Generation -1 with an
// empty MemberID is a simple (standalone) commit.
type OffsetCommitRequest struct {
	Group      string
	MemberID   string
	InstanceID *string
	Generation int32
	Topics     []OffsetCommitTopic
}

// PartitionError is a per-partition outcome; Err nil is success.
type PartitionError struct {
	Partition int32
	Err       error
}

// TopicErrors holds per-partition outcomes of one topic.
type TopicErrors struct {
	Topic      string
	Partitions []PartitionError
}

// OffsetCommitResult has an entry per request partition, in request order.
type OffsetCommitResult struct {
	Topics []TopicErrors
}

// OffsetFetchTopic names the partitions to fetch of one topic.
type OffsetFetchTopic struct {
	Topic      string
	Partitions []int32
}

// OffsetFetchRequest is one group of an OffsetFetch request. Topics nil
// means every committed partition of the group.
type OffsetFetchRequest struct {
	Group  string
	Topics []OffsetFetchTopic
}

// FetchedOffset is one partition's committed offset; Offset is -1 and
// LeaderEpoch -1 when nothing is committed.
type FetchedOffset struct {
	Partition   int32
	Offset      int64
	LeaderEpoch int32
	Metadata    string
	Err         error
}

// FetchedTopic holds the fetched offsets of one topic.
type FetchedTopic struct {
	Topic      string
	Partitions []FetchedOffset
}

// OffsetFetchResult is the answer for one group.
type OffsetFetchResult struct {
	Topics []FetchedTopic
}

// OffsetDeleteRequest is an OffsetDelete request.
type OffsetDeleteRequest struct {
	Group  string
	Topics []OffsetFetchTopic
}

// OffsetDeleteResult has an entry per request partition.
type OffsetDeleteResult struct {
	Topics []TopicErrors
}

// MemberDescription describes a member in DescribeGroups.
type MemberDescription struct {
	MemberID   string
	InstanceID *string
	ClientID   string
	ClientHost string
	Metadata   []byte // the selected protocol's metadata
	Assignment []byte
}

// GroupDescription is one group of a DescribeGroups response.
type GroupDescription struct {
	Group        string
	State        string // Kafka's names: Empty, PreparingRebalance, CompletingRebalance, Stable, Dead
	ProtocolType string
	Protocol     string
	Members      []MemberDescription
}

// ListGroupsRequest filters ListGroups; empty filters match everything.
type ListGroupsRequest struct {
	States []string // v4+ (KIP-518), compared case-insensitively
	Types  []string // v5+ (KIP-848): group types; "classic" and "consumer" match our groups
}

// ListedGroup is one group of a ListGroups response.
type ListedGroup struct {
	Group        string
	ProtocolType string
	State        string
}

// Coordinator serves the groups of the __consumer_offsets partitions it has
// loaded. It is safe for concurrent use.
type Coordinator struct{}

// NewCoordinator returns a coordinator with no partition loaded. It starts
// one timer goroutine; Close stops it.
func NewCoordinator(cfg Config) *Coordinator { panic("unimplemented") }

// Close stops the timer goroutine and fails waiting calls with
// ErrNotCoordinator. It is idempotent.
func (c *Coordinator) Close() error { panic("unimplemented") }

// Load replays a __consumer_offsets partition and then serves its groups.
// While it runs, calls for those groups return ErrCoordinatorLoadInProgress.
func (c *Coordinator) Load(ctx context.Context, partition int32, log Log) error {
	panic("unimplemented")
}

// Unload stops serving the partition's groups: waiting calls fail with
// ErrNotCoordinator.
func (c *Coordinator) Unload(partition int32) { panic("unimplemented") }

// Owns returns nil when the group's partition is loaded here,
// ErrCoordinatorLoadInProgress while it loads, else ErrNotCoordinator.
func (c *Coordinator) Owns(group string) error { panic("unimplemented") }

// JoinGroup joins (or rejoins) a member and blocks until the rebalance
// completes, ctx ends, or the join fails.
func (c *Coordinator) JoinGroup(ctx context.Context, req JoinGroupRequest) (JoinGroupResult, error) {
	panic("unimplemented")
}

// SyncGroup blocks until the leader's assignment is known (the leader's own
// call persists the group first).
func (c *Coordinator) SyncGroup(ctx context.Context, req SyncGroupRequest) (SyncGroupResult, error) {
	panic("unimplemented")
}

// Heartbeat keeps a member alive; during a rebalance it returns
// ErrRebalanceInProgress.
func (c *Coordinator) Heartbeat(ctx context.Context, req HeartbeatRequest) error {
	panic("unimplemented")
}

// LeaveGroup removes members. A top-level error fails the whole request;
// otherwise each member has its own outcome.
func (c *Coordinator) LeaveGroup(ctx context.Context, req LeaveGroupRequest) (LeaveGroupResult, error) {
	panic("unimplemented")
}

// OffsetCommit validates and durably stores offsets. A non-nil error is
// also set on every partition of the result.
func (c *Coordinator) OffsetCommit(ctx context.Context, req OffsetCommitRequest) (OffsetCommitResult, error) {
	panic("unimplemented")
}

// OffsetFetch returns committed offsets of one group.
func (c *Coordinator) OffsetFetch(ctx context.Context, req OffsetFetchRequest) (OffsetFetchResult, error) {
	panic("unimplemented")
}

// OffsetDelete deletes offsets of partitions the group is not subscribed to.
func (c *Coordinator) OffsetDelete(ctx context.Context, req OffsetDeleteRequest) (OffsetDeleteResult, error) {
	panic("unimplemented")
}

// DescribeGroup describes one group. An unknown group gives State "Dead"
// and ErrGroupIDNotFound (DescribeGroups v6+ returns the error; earlier
// versions return NONE with the Dead state).
func (c *Coordinator) DescribeGroup(ctx context.Context, group string) (GroupDescription, error) {
	panic("unimplemented")
}

// ListGroups lists the groups of loaded partitions. It returns
// ErrCoordinatorLoadInProgress (with the groups so far) while a partition loads.
func (c *Coordinator) ListGroups(ctx context.Context, req ListGroupsRequest) ([]ListedGroup, error) {
	panic("unimplemented")
}

// DeleteGroups deletes Empty groups and their offsets; the result has one
// error (nil on success) per requested group, in order.
func (c *Coordinator) DeleteGroups(ctx context.Context, groups []string) []error {
	panic("unimplemented")
}
