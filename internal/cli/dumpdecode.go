package cli

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/record"
	"samsa/internal/txn"
)

// recordDecoder prints a record's key and value decoded, for the internal
// topics whose records have a schema.
type recordDecoder func(w io.Writer, key, value []byte)

// writeDecodedRecord prints one record of b through dec. A control
// batch's record is a transaction marker whatever the topic.
func writeDecodedRecord(w io.Writer, b record.Batch, r *record.Record, dec recordDecoder) {
	fmt.Fprintf(w, "  record offset %d ts %d", r.Offset(b), r.Timestamp(b))
	if b.Control() {
		writeControlRecord(w, r.Key, r.Value)
		return
	}
	dec(w, r.Key, r.Value)
}

// writeControlRecord prints a control record: its key is a version and a
// type (0 abort, 1 commit), its value a version and the coordinator epoch.
func writeControlRecord(w io.Writer, key, value []byte) {
	if len(key) < 4 {
		fmt.Fprintf(w, " control key %s (undecodable: %d bytes)\n", quoteOrNull(key), len(key))
		return
	}
	typ := "unknown(" + strconv.Itoa(int(int16(binary.BigEndian.Uint16(key[2:4])))) + ")"
	switch binary.BigEndian.Uint16(key[2:4]) {
	case 0:
		typ = "ABORT"
	case 1:
		typ = "COMMIT"
	}
	fmt.Fprintf(w, " control %s", typ)
	if len(value) >= 6 {
		fmt.Fprintf(w, " coordinator-epoch %d", int32(binary.BigEndian.Uint32(value[2:6])))
	}
	fmt.Fprintln(w)
}

// undecodable prints a key or value that does not parse, quoted, with
// why.
func undecodable(w io.Writer, what string, b []byte, err error) {
	fmt.Fprintf(w, " %s %s (undecodable: %v)", what, quoteOrNull(b), err)
}

// decodeOffsetsRecord decodes a record of __consumer_offsets: key
// versions 0 and 1 are an offset commit, version 2 a group's metadata; a
// null value deletes the key.
func decodeOffsetsRecord(w io.Writer, key, value []byte) {
	defer fmt.Fprintln(w)
	if len(key) < 2 {
		undecodable(w, "key", key, fmt.Errorf("%d bytes", len(key)))
		return
	}
	switch v := int16(binary.BigEndian.Uint16(key)); v {
	case 0, 1:
		var k kmsg.OffsetCommitKey
		if err := k.ReadFrom(key); err != nil {
			undecodable(w, "key", key, err)
			return
		}
		fmt.Fprintf(w, " offset_commit group %s topic %s partition %d", strconv.Quote(k.Group), strconv.Quote(k.Topic), k.Partition)
		if value == nil {
			fmt.Fprint(w, " value null (deleted)")
			return
		}
		var val kmsg.OffsetCommitValue
		if err := val.ReadFrom(value); err != nil {
			undecodable(w, "value", value, err)
			return
		}
		fmt.Fprintf(w, " value version %d offset %d leader-epoch %d metadata %s commit-ts %s",
			val.Version, val.Offset, leaderEpochOf(val), strconv.Quote(val.Metadata), msTime(val.CommitTimestamp))
		if val.Version == 1 {
			fmt.Fprintf(w, " expire-ts %s", msTime(val.ExpireTimestamp))
		}
	case 2:
		var k kmsg.GroupMetadataKey
		if err := k.ReadFrom(key); err != nil {
			undecodable(w, "key", key, err)
			return
		}
		fmt.Fprintf(w, " group_metadata group %s", strconv.Quote(k.Group))
		if value == nil {
			fmt.Fprint(w, " value null (deleted)")
			return
		}
		var val kmsg.GroupMetadataValue
		if err := val.ReadFrom(value); err != nil {
			undecodable(w, "value", value, err)
			return
		}
		fmt.Fprintf(w, " value version %d protocol-type %s generation %d protocol %s leader %s state-ts %s members %d",
			val.Version, strconv.Quote(val.ProtocolType), val.Generation, quoteStrPtr(val.Protocol), quoteStrPtr(val.Leader),
			msTime(val.CurrentStateTimestamp), len(val.Members))
		for _, m := range val.Members {
			fmt.Fprintf(w, "\n    member %s instance %s client %s host %s session-timeout-ms %d rebalance-timeout-ms %d",
				strconv.Quote(m.MemberID), quoteStrPtr(m.InstanceID), strconv.Quote(m.ClientID), strconv.Quote(m.ClientHost),
				m.SessionTimeoutMillis, m.RebalanceTimeoutMillis)
			if val.ProtocolType == "consumer" {
				writeConsumerProtocol(w, m.Subscription, m.Assignment)
			} else {
				fmt.Fprintf(w, " subscription %d bytes assignment %d bytes", len(m.Subscription), len(m.Assignment))
			}
		}
	default:
		undecodable(w, "key", key, fmt.Errorf("unknown key version %d", v))
	}
}

// leaderEpochOf is the committed leader epoch, -1 before value version 3
// carried it.
func leaderEpochOf(v kmsg.OffsetCommitValue) int32 {
	if v.Version < 3 {
		return -1
	}
	return v.LeaderEpoch
}

// writeConsumerProtocol prints a consumer group member's subscribed topics
// and assigned partitions (the consumer protocol's metadata and
// assignment).
func writeConsumerProtocol(w io.Writer, subscription, assignment []byte) {
	var s kmsg.ConsumerMemberMetadata
	if err := s.ReadFrom(subscription); err != nil {
		fmt.Fprintf(w, " subscription (undecodable: %v)", err)
	} else {
		fmt.Fprintf(w, " subscription [%s]", strings.Join(s.Topics, ","))
	}
	if len(assignment) == 0 {
		fmt.Fprint(w, " assignment -")
		return
	}
	var a kmsg.ConsumerMemberAssignment
	if err := a.ReadFrom(assignment); err != nil {
		fmt.Fprintf(w, " assignment (undecodable: %v)", err)
		return
	}
	m := make(map[string][]int32, len(a.Topics))
	for _, t := range a.Topics {
		m[t.Topic] = append(m[t.Topic], t.Partitions...)
	}
	fmt.Fprintf(w, " assignment %s", formatAssignment(m))
}

// decodeTxnRecord decodes a record of __transaction_state: the key is a
// transactional id, the value its metadata; a null value deletes it.
func decodeTxnRecord(w io.Writer, key, value []byte) {
	defer fmt.Fprintln(w)
	var k kmsg.TxnMetadataKey
	if err := k.ReadFrom(key); err != nil {
		undecodable(w, "key", key, err)
		return
	}
	fmt.Fprintf(w, " transaction_metadata transactional-id %s", strconv.Quote(k.TransactionalID))
	if value == nil {
		fmt.Fprint(w, " value null (deleted)")
		return
	}
	var v kmsg.TxnMetadataValue
	if err := v.ReadFrom(value); err != nil {
		undecodable(w, "value", value, err)
		return
	}
	parts := make(map[string][]int32, len(v.Topics))
	for _, t := range v.Topics {
		parts[t.Topic] = append(parts[t.Topic], t.Partitions...)
	}
	fmt.Fprintf(w, " value version %d producer %d/%d state %s timeout-ms %d partitions %s last-update-ts %s start-ts %s",
		v.Version, v.ProducerID, v.ProducerEpoch, v.State, v.TimeoutMillis, formatAssignment(parts),
		msTime(v.LastUpdateTimestamp), msTime(v.StartTimestamp))
	if v.Version >= 1 {
		fmt.Fprintf(w, " previous-producer %d next-producer %d", v.PreviousProducerID, v.NextProducerID)
	}
}

func quoteStrPtr(s *string) string {
	if s == nil {
		return "null"
	}
	return strconv.Quote(*s)
}

// dumpSnapshotFile prints a producer state snapshot (the format of
// internal/txn's package doc): its version and offset, then one line per
// producer and one per remembered batch.
func dumpSnapshotFile(w io.Writer, path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("dump-log: %w", err)
	}
	fmt.Fprintf(w, "Dumping %s\n", path)
	s, err := txn.UnmarshalSnapshot(b)
	if err != nil {
		fmt.Fprintf(w, "summary: invalid snapshot (%v)\n", err)
		return fmt.Errorf("dump-log: %s: %w", path, err)
	}
	// UnmarshalSnapshot checked the header, so the version is there.
	fmt.Fprintf(w, "snapshot version %d offset %s producers %d\n",
		binary.BigEndian.Uint16(b[4:6]), snapshotOffset(path), s.Len())
	for _, p := range s.Producers() {
		txnFirst := "-"
		if p.CurrentTxnFirstOffset >= 0 {
			txnFirst = strconv.FormatInt(p.CurrentTxnFirstOffset, 10)
		}
		fmt.Fprintf(w, "producer %d epoch %d last-update %s coordinator-epoch %d txn-first-offset %s batches %d\n",
			p.ID, p.Epoch, msTime(p.LastUpdateMs), p.CoordinatorEpoch, txnFirst, len(p.Batches))
		for _, m := range p.Batches {
			fmt.Fprintf(w, "  batch seq %d..%d offsets %d..%d ts %s\n",
				m.FirstSeq, m.LastSeq, m.FirstOffset, m.LastOffset, msTime(m.Timestamp))
		}
	}
	return nil
}

// snapshotOffset is the offset in a snapshot's file name, "?" when the
// name is not one the broker writes.
func snapshotOffset(path string) string {
	name := path[strings.LastIndexAny(path, `/\`)+1:]
	n, err := strconv.ParseUint(strings.TrimSuffix(name, txn.SnapshotSuffix), 10, 63)
	if err != nil {
		return "?"
	}
	return strconv.FormatUint(n, 10)
}
