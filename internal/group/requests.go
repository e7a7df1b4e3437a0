package group

import "time"

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
	// Version is the request's version: a consumer group (KIP-848)
	// member must commit with v9+.
	Version int16
}

// TxnOffsetCommitRequest is a TxnOffsetCommit request: offsets committed
// as part of producer ProducerID's transaction. v0-2 carry no member:
// Generation -1, MemberID "" and InstanceID nil.
type TxnOffsetCommitRequest struct {
	Group         string
	ProducerID    int64
	ProducerEpoch int16
	MemberID      string  // v3+ (KIP-447)
	InstanceID    *string // v3+
	Generation    int32   // v3+; -1 when absent
	Topics        []OffsetCommitTopic
	// Guard is what the broker took from the group's __consumer_offsets
	// partition before it verified the commit with the transaction
	// coordinator; opaque here, it is passed to Log.AppendTxn.
	Guard any
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
	// RequireStable (v7+, KIP-447) asks for ErrUnstableOffsetCommit on the
	// partitions an open transaction has an offset for.
	RequireStable bool
	// MemberID and MemberEpoch (v9+, KIP-848) are checked against a
	// consumer group's member; MemberID nil and MemberEpoch -1 are not.
	MemberID    *string
	MemberEpoch int32
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
	Types  []string // v5+ (KIP-848): group types; "classic" or "consumer"
}

// ListedGroup is one group of a ListGroups response.
type ListedGroup struct {
	Group        string
	ProtocolType string
	State        string
	Type         string // "classic" or "consumer" (KIP-848)
}
