package broker

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"samsa/internal/acl"
	"samsa/internal/cluster"
	"samsa/internal/config"
	"samsa/internal/fetchsession"
	"samsa/internal/quota"
	"samsa/internal/record"
	"samsa/internal/replica"
	"samsa/internal/sasl"
	"samsa/internal/share"
	"samsa/internal/storage"
	"samsa/internal/txn"
)

// TestErrCodeMapsEverySentinel covers every sentinel the packages below
// return to the broker, wrapped as they arrive.
func TestErrCodeMapsEverySentinel(t *testing.T) {
	cases := []struct {
		err  error
		want *kerr.Error
	}{
		{nil, nil},
		{record.MarkCorrupt(errors.New("bad crc")), kerr.CorruptMessage},
		{record.ErrUnsupportedCodec, kerr.UnsupportedCompressionType},
		{record.ErrInvalidRecord, kerr.InvalidRecord},
		{record.ErrDecompressedTooLarge, kerr.InvalidRecord},
		{storage.ErrOffsetOutOfRange, kerr.OffsetOutOfRange},
		{storage.ErrMessageTooLarge, kerr.RecordListTooLarge},
		{storage.ErrLogDirOffline, kerr.KafkaStorageError},
		{&storage.CorruptBatchError{Reason: record.MarkCorrupt(errors.New("torn"))}, kerr.KafkaStorageError},
		{storage.ErrClosed, kerr.NotLeaderForPartition},
		{replica.ErrNotLeader, kerr.NotLeaderForPartition},
		{replica.ErrNotEnoughReplicas, kerr.NotEnoughReplicas},
		{replica.ErrNotEnoughReplicasAfterAppend, kerr.NotEnoughReplicasAfterAppend},
		{replica.ErrFencedLeaderEpoch, kerr.FencedLeaderEpoch},
		{replica.ErrUnknownLeaderEpoch, kerr.UnknownLeaderEpoch},
		{cluster.ErrTopicExists, kerr.TopicAlreadyExists},
		{cluster.ErrUnknownTopic, kerr.UnknownTopicOrPartition},
		{cluster.ErrUnknownPartition, kerr.UnknownTopicOrPartition},
		{cluster.ErrInvalidTopic, kerr.InvalidTopicException},
		{cluster.ErrInvalidReplicationFactor, kerr.InvalidReplicationFactor},
		{cluster.ErrInvalidPartitions, kerr.InvalidPartitions},
		{cluster.ErrInvalidReplicaAssignment, kerr.InvalidReplicaAssignment},
		{cluster.ErrNoReassignmentInProgress, kerr.NoReassignmentInProgress},
		{cluster.ErrInvalidUpdateVersion, kerr.InvalidUpdateVersion},
		{cluster.ErrInconsistentClusterID, kerr.InconsistentClusterID},
		{cluster.ErrClosed, kerr.NotController},
		{cluster.ErrConflict, kerr.RequestTimedOut},
		{config.ErrUnknownConfig, kerr.InvalidConfig},
		{config.ErrInvalidConfig, kerr.InvalidConfig},
		{txn.ErrOutOfOrderSequence, kerr.OutOfOrderSequenceNumber},
		{txn.ErrInvalidProducerEpoch, kerr.InvalidProducerEpoch},
		{txn.ErrUnknownProducerID, kerr.UnknownProducerID},
		{txn.ErrInvalidSequence, kerr.InvalidRecord},
		{txn.ErrCoordinatorFenced, kerr.TransactionCoordinatorFenced},
		{txn.ErrProducerFenced, kerr.ProducerFenced},
		{txn.ErrInvalidTxnState, kerr.InvalidTxnState},
		{txn.ErrConcurrentTransactions, kerr.ConcurrentTransactions},
		{txn.ErrInvalidTransactionTimeout, kerr.InvalidTransactionTimeout},
		{txn.ErrInvalidProducerIDMapping, kerr.InvalidProducerIDMapping},
		{txn.ErrNotCoordinator, kerr.NotCoordinator},
		{share.ErrUnknownMemberID, kerr.UnknownMemberID},
		{share.ErrFencedMemberEpoch, kerr.FencedMemberEpoch},
		{share.ErrGroupIDNotFound, kerr.GroupIDNotFound},
		{share.ErrGroupMaxSize, kerr.GroupMaxSizeReached},
		{share.ErrInvalidRecordState, kerr.InvalidRecordState},
		{share.ErrInvalidRequest, kerr.InvalidRequest},
		{share.ErrFencedStateEpoch, kerr.FencedStateEpoch},
		{share.ErrFencedLeaderEpoch, kerr.FencedLeaderEpoch},
		{txn.ErrCoordinatorLoadInProgress, kerr.CoordinatorLoadInProgress},
		{txn.ErrCoordinatorNotAvailable, kerr.CoordinatorNotAvailable},
		{txn.ErrTransactionalIDNotFound, kerr.TransactionalIDNotFound},
		{errTopicName, kerr.InvalidTopicException},
		{errMessageTooLarge, kerr.MessageTooLarge},
		{errInvalidTimestamp, kerr.InvalidTimestamp},
		{errTransactional, kerr.InvalidTxnState},
		{errSecurityDisabled, kerr.SecurityDisabled},
		{acl.ErrInvalidBinding, kerr.InvalidRequest},
		{acl.ErrInvalidFilter, kerr.InvalidRequest},
		{quota.ErrInvalidEntity, kerr.InvalidRequest},
		{quota.ErrUnknownKey, kerr.InvalidRequest},
		{quota.ErrInvalidValue, kerr.InvalidRequest},
		{quota.ErrInvalidFilter, kerr.InvalidRequest},
		{errDuplicateQuota, kerr.InvalidRequest},
		{quota.ErrThrottlingQuotaExceeded, kerr.ThrottlingQuotaExceeded},
		{fetchsession.ErrSessionIDNotFound, kerr.FetchSessionIDNotFound},
		{fetchsession.ErrInvalidEpoch, kerr.InvalidFetchSessionEpoch},
		{fetchsession.ErrTopicIDMismatch, kerr.FetchSessionTopicIDError},
		{cluster.ErrNotFound, kerr.ResourceNotFound},
		{sasl.ErrUnsupportedMechanism, kerr.UnsupportedSaslMechanism},
		{sasl.ErrIterations, kerr.UnacceptableCredential},
		{sasl.ErrInvalidCredential, kerr.UnacceptableCredential},
		{errEmptyUser, kerr.UnacceptableCredential},
		{errUnknownProducer, kerr.UnknownProducerID},
		{errTxnAbortable, kerr.TransactionAbortable},
		{errNotInTxn, kerr.InvalidTxnState},
		{context.DeadlineExceeded, kerr.RequestTimedOut},
		{errors.New("anything else"), kerr.UnknownServerError},
	}
	for _, c := range cases {
		got := errCode(fmt.Errorf("wrapped: %w", c.err))
		if c.err == nil {
			got = errCode(nil)
		}
		if got != c.want {
			t.Errorf("errCode(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
