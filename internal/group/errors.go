package group

import "errors"

// Errors returned by the coordinator. The broker maps each to its Kafka
// error code.
var (
	ErrUnknownMemberID           = errors.New("group: unknown member id")
	ErrIllegalGeneration         = errors.New("group: illegal generation")
	ErrRebalanceInProgress       = errors.New("group: rebalance in progress")
	ErrNotCoordinator            = errors.New("group: not coordinator")
	ErrCoordinatorLoadInProgress = errors.New("group: coordinator load in progress")
	ErrCoordinatorNotAvailable   = errors.New("group: coordinator not available")
	ErrFencedInstanceID          = errors.New("group: fenced instance id")
	ErrGroupMaxSizeReached       = errors.New("group: group max size reached")
	ErrInconsistentGroupProtocol = errors.New("group: inconsistent group protocol")
	ErrMemberIDRequired          = errors.New("group: member id required")
	ErrInvalidSessionTimeout     = errors.New("group: invalid session timeout")
	ErrGroupIDNotFound           = errors.New("group: group id not found")
	ErrNonEmptyGroup             = errors.New("group: non-empty group")
	ErrGroupSubscribedToTopic    = errors.New("group: group subscribed to topic")
	ErrInvalidGroupID            = errors.New("group: invalid group id")
	ErrOffsetMetadataTooLarge    = errors.New("group: offset metadata too large")
	ErrUnknownTopicOrPartition   = errors.New("group: unknown topic or partition")
	ErrUnstableOffsetCommit      = errors.New("group: unstable offset commit")
	// Consumer groups (KIP-848).
	ErrInvalidRequest           = errors.New("group: invalid request")
	ErrUnsupportedAssignor      = errors.New("group: unsupported assignor")
	ErrInvalidRegularExpression = errors.New("group: invalid regular expression")
	ErrFencedMemberEpoch        = errors.New("group: fenced member epoch")
	ErrStaleMemberEpoch         = errors.New("group: stale member epoch")
	ErrUnreleasedInstanceID     = errors.New("group: unreleased instance id")
	// ErrUnsupportedVersion: a consumer group member committed with
	// OffsetCommit below v9.
	ErrUnsupportedVersion = errors.New("group: unsupported version")
	// ErrInvalidProducerEpoch: the __consumer_offsets partition knows a
	// newer epoch of the producer of a TxnOffsetCommit (Log.AppendTxn
	// wraps it).
	ErrInvalidProducerEpoch = errors.New("group: invalid producer epoch")
)
