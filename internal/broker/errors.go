package broker

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"samsa/internal/acl"
	"samsa/internal/cluster"
	"samsa/internal/config"
	"samsa/internal/fetchsession"
	"samsa/internal/group"
	"samsa/internal/quota"
	"samsa/internal/record"
	"samsa/internal/replica"
	"samsa/internal/sasl"
	"samsa/internal/share"
	"samsa/internal/storage"
	"samsa/internal/txn"
)

// Sentinels of this package, each mapped by errCode.
var (
	errTopicName       = errors.New("broker: invalid topic name")
	errMessageTooLarge = errors.New("broker: record batch larger than max.message.bytes")
	errTransactional   = errors.New("broker: transactional batch without a transaction")
	errUnknownProducer = errors.New("broker: producer id was not issued by this cluster")
	// errTxnAbortable is a transactional request whose partition is not
	// in the producer's transaction, answered TRANSACTION_ABORTABLE
	// where the version knows it (KIP-890): the client aborts and goes on.
	errTxnAbortable = errors.New("broker: the partition is not in the transaction; abort it")
	// errInvalidTimestamp is a CreateTime record outside
	// message.timestamp.before.max.ms / after.max.ms of the broker's clock
	// (KIP-937): INVALID_TIMESTAMP.
	errInvalidTimestamp = errors.New("broker: record timestamp out of range")
	// errNoKeyOnCompactedTopic maps to INVALID_RECORD, as in Kafka.
	errNoKeyOnCompactedTopic = fmt.Errorf("%w: a compacted topic cannot accept a record without a key", record.ErrInvalidRecord)
)

// errCode maps an error from the packages below to the Kafka error it
// means. It is the only place that does so; errors_test.go covers every
// sentinel.
func errCode(err error) *kerr.Error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, storage.ErrCorrupt):
		// A stored batch failed its check on a read: the log, not the
		// request, is bad. Clients retry KAFKA_STORAGE_ERROR after a
		// metadata refresh, as for a log dir Kafka took offline.
		return kerr.KafkaStorageError
	case record.IsCorrupt(err):
		return kerr.CorruptMessage
	case errors.Is(err, record.ErrUnsupportedCodec):
		return kerr.UnsupportedCompressionType
	case errors.Is(err, record.ErrInvalidRecord),
		errors.Is(err, record.ErrDecompressedTooLarge):
		return kerr.InvalidRecord
	case errors.Is(err, storage.ErrOffsetOutOfRange):
		return kerr.OffsetOutOfRange
	case errors.Is(err, storage.ErrMessageTooLarge):
		return kerr.RecordListTooLarge
	case errors.Is(err, storage.ErrLogDirOffline):
		return kerr.KafkaStorageError
	case errors.Is(err, storage.ErrClosed), errors.Is(err, replica.ErrNotLeader):
		return kerr.NotLeaderForPartition
	case errors.Is(err, replica.ErrNotEnoughReplicas):
		return kerr.NotEnoughReplicas
	case errors.Is(err, replica.ErrNotEnoughReplicasAfterAppend):
		return kerr.NotEnoughReplicasAfterAppend
	case errors.Is(err, replica.ErrFencedLeaderEpoch):
		return kerr.FencedLeaderEpoch
	case errors.Is(err, replica.ErrUnknownLeaderEpoch):
		return kerr.UnknownLeaderEpoch
	case errors.Is(err, replica.ErrOffsetNotAvailable):
		return kerr.OffsetNotAvailable
	case errors.Is(err, cluster.ErrTopicExists):
		return kerr.TopicAlreadyExists
	case errors.Is(err, cluster.ErrUnknownTopic), errors.Is(err, cluster.ErrUnknownPartition):
		return kerr.UnknownTopicOrPartition
	case errors.Is(err, cluster.ErrInvalidTopic):
		return kerr.InvalidTopicException
	case errors.Is(err, cluster.ErrInvalidUpdateVersion):
		return kerr.InvalidUpdateVersion
	case errors.Is(err, cluster.ErrInconsistentClusterID):
		return kerr.InconsistentClusterID
	case errors.Is(err, cluster.ErrClosed):
		return kerr.NotController
	case errors.Is(err, cluster.ErrInvalidReplicationFactor):
		return kerr.InvalidReplicationFactor
	case errors.Is(err, cluster.ErrInvalidPartitions):
		return kerr.InvalidPartitions
	case errors.Is(err, cluster.ErrInvalidReplicaAssignment):
		return kerr.InvalidReplicaAssignment
	case errors.Is(err, cluster.ErrNoReassignmentInProgress):
		return kerr.NoReassignmentInProgress
	case errors.Is(err, cluster.ErrConflict):
		// A concurrent metadata change won every retry; the client may
		// retry the request.
		return kerr.RequestTimedOut
	case errors.Is(err, config.ErrUnknownConfig), errors.Is(err, config.ErrInvalidConfig):
		return kerr.InvalidConfig
	case errors.Is(err, errMessageTooLarge):
		return kerr.MessageTooLarge
	case errors.Is(err, errInvalidTimestamp):
		return kerr.InvalidTimestamp
	case errors.Is(err, errTransactional):
		return kerr.InvalidTxnState
	case errors.Is(err, errTxnAbortable):
		return kerr.TransactionAbortable
	case errors.Is(err, errUnknownProducer), errors.Is(err, txn.ErrUnknownProducerID):
		return kerr.UnknownProducerID
	case errors.Is(err, txn.ErrOutOfOrderSequence):
		return kerr.OutOfOrderSequenceNumber
	case errors.Is(err, txn.ErrInvalidProducerEpoch):
		return kerr.InvalidProducerEpoch
	case errors.Is(err, txn.ErrInvalidSequence):
		return kerr.InvalidRecord
	case errors.Is(err, txn.ErrCoordinatorFenced):
		return kerr.TransactionCoordinatorFenced
	case errors.Is(err, txn.ErrProducerFenced):
		return kerr.ProducerFenced
	case errors.Is(err, txn.ErrInvalidTxnState):
		return kerr.InvalidTxnState
	case errors.Is(err, txn.ErrConcurrentTransactions):
		return kerr.ConcurrentTransactions
	case errors.Is(err, txn.ErrInvalidTransactionTimeout):
		return kerr.InvalidTransactionTimeout
	case errors.Is(err, txn.ErrInvalidProducerIDMapping):
		return kerr.InvalidProducerIDMapping
	case errors.Is(err, txn.ErrNotCoordinator):
		return kerr.NotCoordinator
	case errors.Is(err, txn.ErrCoordinatorLoadInProgress):
		return kerr.CoordinatorLoadInProgress
	case errors.Is(err, txn.ErrCoordinatorNotAvailable):
		return kerr.CoordinatorNotAvailable
	case errors.Is(err, txn.ErrTransactionalIDNotFound):
		return kerr.TransactionalIDNotFound
	case errors.Is(err, errTopicName):
		return kerr.InvalidTopicException
	case errors.Is(err, errSecurityDisabled):
		return kerr.SecurityDisabled
	case errors.Is(err, acl.ErrInvalidBinding), errors.Is(err, acl.ErrInvalidFilter):
		return kerr.InvalidRequest
	case errors.Is(err, quota.ErrInvalidEntity), errors.Is(err, quota.ErrUnknownKey),
		errors.Is(err, quota.ErrInvalidValue), errors.Is(err, quota.ErrInvalidFilter),
		errors.Is(err, errDuplicateQuota):
		return kerr.InvalidRequest
	case errors.Is(err, quota.ErrThrottlingQuotaExceeded):
		return kerr.ThrottlingQuotaExceeded
	case errors.Is(err, fetchsession.ErrSessionIDNotFound):
		return kerr.FetchSessionIDNotFound
	case errors.Is(err, fetchsession.ErrInvalidEpoch):
		return kerr.InvalidFetchSessionEpoch
	case errors.Is(err, fetchsession.ErrTopicIDMismatch):
		return kerr.FetchSessionTopicIDError
	case errors.Is(err, cluster.ErrNotFound):
		return kerr.ResourceNotFound
	case errors.Is(err, sasl.ErrUnsupportedMechanism):
		return kerr.UnsupportedSaslMechanism
	case errors.Is(err, sasl.ErrIterations), errors.Is(err, sasl.ErrInvalidCredential), errors.Is(err, errEmptyUser):
		return kerr.UnacceptableCredential
	case errors.Is(err, group.ErrUnknownMemberID):
		return kerr.UnknownMemberID
	case errors.Is(err, group.ErrIllegalGeneration):
		return kerr.IllegalGeneration
	case errors.Is(err, group.ErrRebalanceInProgress):
		return kerr.RebalanceInProgress
	case errors.Is(err, group.ErrNotCoordinator):
		return kerr.NotCoordinator
	case errors.Is(err, group.ErrCoordinatorLoadInProgress):
		return kerr.CoordinatorLoadInProgress
	case errors.Is(err, group.ErrCoordinatorNotAvailable):
		return kerr.CoordinatorNotAvailable
	case errors.Is(err, group.ErrFencedInstanceID):
		return kerr.FencedInstanceID
	case errors.Is(err, group.ErrGroupMaxSizeReached):
		return kerr.GroupMaxSizeReached
	case errors.Is(err, group.ErrInconsistentGroupProtocol):
		return kerr.InconsistentGroupProtocol
	case errors.Is(err, group.ErrMemberIDRequired):
		return kerr.MemberIDRequired
	case errors.Is(err, group.ErrInvalidSessionTimeout):
		return kerr.InvalidSessionTimeout
	case errors.Is(err, group.ErrGroupIDNotFound):
		return kerr.GroupIDNotFound
	case errors.Is(err, group.ErrNonEmptyGroup):
		return kerr.NonEmptyGroup
	case errors.Is(err, group.ErrGroupSubscribedToTopic):
		return kerr.GroupSubscribedToTopic
	case errors.Is(err, group.ErrInvalidGroupID):
		return kerr.InvalidGroupID
	case errors.Is(err, group.ErrOffsetMetadataTooLarge):
		return kerr.OffsetMetadataTooLarge
	case errors.Is(err, group.ErrUnknownTopicOrPartition):
		return kerr.UnknownTopicOrPartition
	case errors.Is(err, group.ErrUnstableOffsetCommit):
		return kerr.UnstableOffsetCommit
	case errors.Is(err, group.ErrInvalidProducerEpoch):
		return kerr.InvalidProducerEpoch
	case errors.Is(err, group.ErrInvalidRequest):
		return kerr.InvalidRequest
	case errors.Is(err, group.ErrUnsupportedAssignor):
		return kerr.UnsupportedAssignor
	case errors.Is(err, group.ErrInvalidRegularExpression):
		return kerr.InvalidRegularExpression
	case errors.Is(err, group.ErrFencedMemberEpoch):
		return kerr.FencedMemberEpoch
	case errors.Is(err, group.ErrStaleMemberEpoch):
		return kerr.StaleMemberEpoch
	case errors.Is(err, group.ErrUnreleasedInstanceID):
		return kerr.UnreleasedInstanceID
	case errors.Is(err, group.ErrUnsupportedVersion):
		return kerr.UnsupportedVersion
	case errors.Is(err, share.ErrUnknownMemberID):
		return kerr.UnknownMemberID
	case errors.Is(err, share.ErrFencedMemberEpoch):
		return kerr.FencedMemberEpoch
	case errors.Is(err, share.ErrGroupIDNotFound):
		return kerr.GroupIDNotFound
	case errors.Is(err, share.ErrGroupMaxSize):
		return kerr.GroupMaxSizeReached
	case errors.Is(err, share.ErrInvalidRecordState):
		return kerr.InvalidRecordState
	case errors.Is(err, share.ErrInvalidRequest):
		return kerr.InvalidRequest
	case errors.Is(err, share.ErrFencedStateEpoch):
		return kerr.FencedStateEpoch
	case errors.Is(err, share.ErrFencedLeaderEpoch):
		return kerr.FencedLeaderEpoch
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return kerr.RequestTimedOut
	}
	return kerr.UnknownServerError
}

// errMessage returns err's text for the ErrorMessage fields of responses.
func errMessage(err error) *string {
	if err == nil {
		return nil
	}
	s := err.Error()
	return &s
}
