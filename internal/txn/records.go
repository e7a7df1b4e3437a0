package txn

import (
	"errors"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ErrCorruptRecord is returned by DecodeRecord for a __transaction_state
// record that does not decode: an unknown key or value version, a
// truncated or oversized body, or a state or field out of range. A load
// fails on it rather than guess the metadata of a transactional id.
var ErrCorruptRecord = errors.New("txn: corrupt __transaction_state record")

// Record versions: the key has only version 0; value version 0 is Kafka's
// transaction version 0/1 layout, version 1 is flexible and adds the
// previous and next producer ids and the client's transaction version as
// tagged fields (Reference: Kafka TransactionLogKey.json,
// TransactionLogValue.json).
const (
	recordKeyVersion      = 0
	recordValueMaxVersion = 1
)

// EncodeKey returns the __transaction_state record key of a transactional
// id.
func EncodeKey(id string) []byte {
	k := kmsg.NewTxnMetadataKey()
	k.Version = recordKeyVersion
	k.TransactionalID = id
	return k.AppendTo(nil)
}

// EncodeValue returns the __transaction_state record value of m. A Dead id
// is written as a tombstone: EncodeValue returns nil. Version 1 is used only
// when m needs a field version 0 lacks, so that older Kafka tools read the
// common case. The caller owns the returned slice.
//
// LastProducerEpoch is not stored, as Kafka does not store it: after a
// coordinator moves, a KIP-360 retry with the last epoch is fenced.
func EncodeValue(m TxnMetadata) []byte {
	if m.State == TxnDead {
		return nil
	}
	v := kmsg.NewTxnMetadataValue()
	v.ProducerID = m.ProducerID
	v.ProducerEpoch = m.ProducerEpoch
	v.TimeoutMillis = m.TimeoutMs
	v.State = kmsg.TransactionState(m.State)
	v.LastUpdateTimestamp = m.LastUpdateMs
	v.StartTimestamp = m.TxnStartMs
	if m.State != TxnEmpty {
		for _, p := range m.Partitions {
			if n := len(v.Topics); n > 0 && v.Topics[n-1].Topic == p.Topic {
				v.Topics[n-1].Partitions = append(v.Topics[n-1].Partitions, p.Partition)
				continue
			}
			t := kmsg.NewTxnMetadataValueTopic()
			t.Topic = p.Topic
			t.Partitions = []int32{p.Partition}
			v.Topics = append(v.Topics, t)
		}
	}
	if m.LastProducerID != NoProducerID || m.NextProducerID != NoProducerID || m.V2 {
		v.Version = 1
		v.PreviousProducerID = m.LastProducerID
		v.NextProducerID = m.NextProducerID
		if m.V2 {
			v.ClientTransactionVersion = 2
		}
	}
	return v.AppendTo(nil)
}

// DecodeRecord decodes one __transaction_state record. A nil value is a
// tombstone: the id is returned with ok false. Any record that does not
// decode fails with an error wrapping ErrCorruptRecord.
func DecodeRecord(key, value []byte) (id string, m TxnMetadata, ok bool, err error) {
	var k kmsg.TxnMetadataKey
	if len(key) < 2 {
		return "", m, false, fmt.Errorf("%w: key of %d bytes", ErrCorruptRecord, len(key))
	}
	if err := k.ReadFrom(key); err != nil {
		return "", m, false, fmt.Errorf("%w: key: %w", ErrCorruptRecord, err)
	}
	if k.Version != recordKeyVersion {
		return "", m, false, fmt.Errorf("%w: key version %d", ErrCorruptRecord, k.Version)
	}
	id = k.TransactionalID
	if value == nil {
		return id, m, false, nil
	}
	v := kmsg.NewTxnMetadataValue()
	if len(value) < 2 {
		return id, m, false, fmt.Errorf("%w: %q: value of %d bytes", ErrCorruptRecord, id, len(value))
	}
	if err := v.ReadFrom(value); err != nil {
		return id, m, false, fmt.Errorf("%w: %q: value: %w", ErrCorruptRecord, id, err)
	}
	switch {
	case v.Version < 0 || v.Version > recordValueMaxVersion:
		return id, m, false, fmt.Errorf("%w: %q: value version %d", ErrCorruptRecord, id, v.Version)
	case v.State < 0 || int(v.State) >= len(txnStateNames):
		return id, m, false, fmt.Errorf("%w: %q: state %d", ErrCorruptRecord, id, v.State)
	case v.ProducerID < 0 || v.ProducerEpoch < 0:
		return id, m, false, fmt.Errorf("%w: %q: producer id %d epoch %d", ErrCorruptRecord, id, v.ProducerID, v.ProducerEpoch)
	case v.TimeoutMillis <= 0:
		return id, m, false, fmt.Errorf("%w: %q: timeout %d", ErrCorruptRecord, id, v.TimeoutMillis)
	}
	m = TxnMetadata{
		TransactionalID:   id,
		ProducerID:        v.ProducerID,
		LastProducerID:    max(v.PreviousProducerID, NoProducerID),
		ProducerEpoch:     v.ProducerEpoch,
		LastProducerEpoch: NoProducerEpoch,
		NextProducerID:    max(v.NextProducerID, NoProducerID),
		TimeoutMs:         v.TimeoutMillis,
		State:             TxnState(v.State),
		TxnStartMs:        v.StartTimestamp,
		LastUpdateMs:      v.LastUpdateTimestamp,
		V2:                v.ClientTransactionVersion >= 2,
	}
	// Reference: Kafka TransactionLog.readTxnRecordValue: the partitions of
	// an Empty id are ignored.
	if m.State != TxnEmpty {
		for _, t := range v.Topics {
			for _, p := range t.Partitions {
				tp := TopicPartition{Topic: t.Topic, Partition: p}
				if i, found := slices.BinarySearchFunc(m.Partitions, tp, compareTP); !found {
					m.Partitions = slices.Insert(m.Partitions, i, tp)
				}
			}
		}
	}
	return id, m, true, nil
}
