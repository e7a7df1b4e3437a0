package cli

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/record"
	"samsa/internal/txn"
)

// batchOf builds one batch at base holding recs.
func batchOf(t *testing.T, base int64, bb *record.Builder, recs ...record.Record) []byte {
	t.Helper()
	for _, r := range recs {
		bb.Add(r)
	}
	b, err := bb.Build()
	if err != nil {
		t.Fatal(err)
	}
	b.SetBaseOffset(base)
	return b
}

// offsetsSegment returns a __consumer_offsets segment: a consumer group's
// metadata, an offset commit, a deleted commit and a commit marker.
func offsetsSegment(t *testing.T) []byte {
	t.Helper()
	const ts = 1700000000000
	sub := (&kmsg.ConsumerMemberMetadata{Topics: []string{"orders", "payments"}}).AppendTo(nil)
	asg := kmsg.ConsumerMemberAssignment{Topics: []kmsg.ConsumerMemberAssignmentTopic{{Topic: "orders", Partitions: []int32{1, 0}}}}
	gv := kmsg.NewGroupMetadataValue()
	gv.Version, gv.ProtocolType, gv.Generation, gv.CurrentStateTimestamp = 3, "consumer", 4, ts
	proto, leader := "range", "m-1"
	gv.Protocol, gv.Leader = &proto, &leader
	m := kmsg.NewGroupMetadataValueMember()
	m.MemberID, m.ClientID, m.ClientHost = "m-1", "billing-app", "/10.0.0.5"
	m.RebalanceTimeoutMillis, m.SessionTimeoutMillis = 60000, 45000
	m.Subscription, m.Assignment = sub, asg.AppendTo(nil)
	gv.Members = append(gv.Members, m)
	gk := kmsg.GroupMetadataKey{Version: 2, Group: "billing"}
	ok := kmsg.OffsetCommitKey{Version: 1, Group: "billing", Topic: "orders", Partition: 1}
	ov := kmsg.NewOffsetCommitValue()
	ov.Version, ov.Offset, ov.LeaderEpoch, ov.Metadata, ov.CommitTimestamp = 3, 42, 7, "checkpoint", ts+5
	deleted := kmsg.OffsetCommitKey{Version: 1, Group: "billing", Topic: "orders", Partition: 0}

	var seg []byte
	seg = append(seg, batchOf(t, 0, record.NewBuilder(record.CodecNone, ts),
		record.Record{Key: gk.AppendTo(nil), Value: gv.AppendTo(nil)},
		record.Record{TimestampDelta: 5, Key: ok.AppendTo(nil), Value: ov.AppendTo(nil)},
		record.Record{TimestampDelta: 6, Key: deleted.AppendTo(nil)},
		record.Record{TimestampDelta: 7, Key: []byte{0, 9, 'x'}, Value: []byte("?")})...)
	ctl := record.NewBuilder(record.CodecNone, ts+10)
	ctl.ProducerID, ctl.ProducerEpoch, ctl.Transactional, ctl.Control = 4000, 0, true, true
	key := binary.BigEndian.AppendUint16(binary.BigEndian.AppendUint16(nil, 0), 1)
	val := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint16(nil, 0), 3)
	seg = append(seg, batchOf(t, 4, ctl, record.Record{Key: key, Value: val})...)
	return seg
}

// txnSegment returns a __transaction_state segment: an ongoing
// transaction, its commit and a deleted id.
func txnSegment(t *testing.T) []byte {
	t.Helper()
	const ts = 1700000000000
	k := kmsg.TxnMetadataKey{Version: 0, TransactionalID: "payments-writer"}
	v := kmsg.NewTxnMetadataValue()
	v.Version, v.ProducerID, v.ProducerEpoch, v.TimeoutMillis = 0, 4000, 2, 60000
	v.State, v.LastUpdateTimestamp, v.StartTimestamp = 1, ts, ts
	v.Topics = []kmsg.TxnMetadataValueTopic{{Topic: "orders", Partitions: []int32{3, 1}}, {Topic: "audit", Partitions: []int32{0}}}
	c := v
	c.Version, c.State, c.Topics, c.LastUpdateTimestamp, c.PreviousProducerID, c.NextProducerID = 1, 4, nil, ts+20, -1, -1
	gone := kmsg.TxnMetadataKey{Version: 0, TransactionalID: "old-writer"}
	return batchOf(t, 0, record.NewBuilder(record.CodecNone, ts),
		record.Record{Key: k.AppendTo(nil), Value: v.AppendTo(nil)},
		record.Record{TimestampDelta: 20, Key: k.AppendTo(nil), Value: c.AppendTo(nil)},
		record.Record{TimestampDelta: 21, Key: gone.AppendTo(nil)})
}

func TestDumpLogDecodersGolden(t *testing.T) {
	for _, tt := range []struct {
		name string
		data []byte
		flag string
	}{
		{"offsets-decoder", offsetsSegment(t), "--offsets-decoder"},
		{"transaction-log-decoder", txnSegment(t), "--transaction-log-decoder"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := dumpGolden(t, tt.data, tt.flag)
			if r.code != ExitOK || r.stderr != "" {
				t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
			}
			checkGolden(t, "dump-log/"+tt.name+".golden", r.stdout)
		})
	}
	r := dumpGolden(t, txnSegment(t), "--offsets-decoder", "--transaction-log-decoder")
	if r.code != ExitMisuse || !strings.Contains(r.stderr, "not both") {
		t.Fatalf("both decoders: exit %d, stderr %q", r.code, r.stderr)
	}
}

func TestDumpLogSnapshotGolden(t *testing.T) {
	s := txn.NewState()
	s.Update(txn.Batch{ProducerID: 4000, Epoch: 2, BaseSequence: 0, LastOffsetDelta: 2}, 0, 2, 1700000000000, 1700000001000)
	s.Update(txn.Batch{ProducerID: 4000, Epoch: 2, BaseSequence: 3, LastOffsetDelta: 0}, 5, 5, 1700000002000, 1700000003000)
	s.Update(txn.Batch{ProducerID: 4001, Epoch: 0, BaseSequence: 0, LastOffsetDelta: 1, Transactional: true}, 6, 7, 1700000004000, 1700000005000)
	dir := t.TempDir()
	path := filepath.Join(dir, txn.SnapshotName(8))
	if err := os.WriteFile(path, s.MarshalSnapshot(), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, "", "dump-log", path)
	if r.code != ExitOK || r.stderr != "" {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	checkGolden(t, "dump-log/snapshot.golden", strings.ReplaceAll(r.stdout, dir, "DIR"))

	b := s.MarshalSnapshot()
	b[len(b)-1] ^= 0xff
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	r = runCLI(t, "", "dump-log", path)
	if r.code != ExitFailure || !strings.Contains(r.stderr, "crc") || !strings.Contains(r.stdout, "invalid snapshot") {
		t.Fatalf("corrupt snapshot: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}
