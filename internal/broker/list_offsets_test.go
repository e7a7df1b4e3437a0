package broker_test

import (
	"bytes"
	"cmp"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/record"
	"samsa/internal/testutil"
)

func TestListOffsetsEarliestLatestByTimestampAndMax(t *testing.T) {
	b := testutil.StartBroker(t)
	topic := "lo"
	testutil.CreateTopic(t, b.Admin(), topic, 1)
	cl := producer(t, b, kgo.ProducerLinger(0))

	// One record per batch, timestamps rising by 1s, except that offset 5
	// carries the largest timestamp of the partition.
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	ts := []time.Duration{1, 2, 3, 4, 5, 100, 6, 7, 8, 9}
	for i, d := range ts {
		produceSync(t, cl, &kgo.Record{Topic: topic, Value: []byte{byte(i)}, Timestamp: base.Add(d * time.Second)})
	}
	ms := func(d time.Duration) int64 { return base.Add(d).UnixMilli() }

	for _, c := range []struct {
		name       string
		ts         int64
		wantOffset int64
		wantTs     int64
	}{
		{"latest", -1, 10, -1},
		{"earliest", -2, 0, -1},
		{"max timestamp", -3, 5, ms(100 * time.Second)},
		{"earliest local", -4, 0, -1},
		{"before every record", ms(0), 0, ms(1 * time.Second)},
		{"exact timestamp", ms(3 * time.Second), 2, ms(3 * time.Second)},
		{"between timestamps", ms(3500 * time.Millisecond), 3, ms(4 * time.Second)},
		// The first record at or after the target, in offset order, even
		// when a later record has a smaller timestamp.
		{"first at or after", ms(6500 * time.Millisecond), 5, ms(100 * time.Second)},
		{"after every record", ms(101 * time.Second), -1, -1},
	} {
		t.Run(c.name, func(t *testing.T) {
			off, gotTs, code := listOffset(t, cl, topic, 0, c.ts)
			if code != 0 {
				t.Fatalf("error code %d", code)
			}
			if off != c.wantOffset {
				t.Fatalf("offset %d, want %d", off, c.wantOffset)
			}
			if c.wantTs != -1 && gotTs != c.wantTs {
				t.Fatalf("timestamp %d, want %d", gotTs, c.wantTs)
			}
		})
	}

	// After DeleteRecords, earliest and lookups before the log start
	// offset follow it.
	var o kadm.Offsets
	o.Add(kadm.Offset{Topic: topic, Partition: 0, At: 4})
	if _, err := b.Admin().DeleteRecords(ctxT(t, 10*time.Second), o); err != nil {
		t.Fatalf("delete records: %v", err)
	}
	if off, _, code := listOffset(t, cl, topic, 0, -2); code != 0 || off != 4 {
		t.Fatalf("earliest after deleting below 4: %d (error %d)", off, code)
	}
	if off, _, code := listOffset(t, cl, topic, 0, ms(0)); code != 0 || off != 4 {
		t.Fatalf("offset for a time before every record after deleting below 4: %d (error %d)", off, code)
	}
}

// TestLogAppendTimeTopicStampsBrokerTime covers
// message.timestamp.type=LogAppendTime: the produce response, the fetched
// batch and consumed records carry the broker's time, not the producer's.
func TestLogAppendTimeTopicStampsBrokerTime(t *testing.T) {
	b := testutil.StartBroker(t)
	topic := "lat"
	testutil.CreateTopic(t, b.Admin(), topic, 1, "message.timestamp.type=LogAppendTime")
	cl := b.Client()

	producerTs := time.Now().Add(-24 * time.Hour).UnixMilli()
	before := time.Now().UnixMilli()
	sp := produceRaw(t, cl, -1, topic, 0, buildBatch(t, record.CodecNone, 3, producerTs))
	after := time.Now().UnixMilli()
	if sp.ErrorCode != 0 {
		t.Fatalf("produce error %d", sp.ErrorCode)
	}
	if sp.LogAppendTime < before || sp.LogAppendTime > after {
		t.Fatalf("produce response LogAppendTime %d, want within [%d, %d]", sp.LogAppendTime, before, after)
	}
	// A compressed batch is stamped too.
	sp2 := produceRaw(t, cl, -1, topic, 0, buildBatch(t, record.CodecZstd, 2, producerTs))
	if sp2.ErrorCode != 0 || sp2.LogAppendTime < sp.LogAppendTime {
		t.Fatalf("second produce: error %d, LogAppendTime %d", sp2.ErrorCode, sp2.LogAppendTime)
	}

	fp := fetchRaw(t, cl, topic, 0, 0, nil)
	buf := fp.RecordBatches
	for i, want := range []int64{sp.LogAppendTime, sp2.LogAppendTime} {
		batch, rest, err := record.Split(buf)
		if err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
		buf = rest
		if !batch.LogAppendTime() {
			t.Fatalf("batch %d: timestamp type bit not set", i)
		}
		if batch.MaxTimestamp() != want {
			t.Fatalf("batch %d: max timestamp %d, want the append time %d", i, batch.MaxTimestamp(), want)
		}
		if batch.CRC() != batch.ComputeCRC() {
			t.Fatalf("batch %d: CRC does not verify after stamping", i)
		}
	}

	got := consumeFrom(t, b.Addr(), topic, 0, 5)
	for i, r := range got {
		want := sp.LogAppendTime
		if i >= 3 {
			want = sp2.LogAppendTime
		}
		if r.Timestamp.UnixMilli() != want || r.Attrs.TimestampType() != 1 {
			t.Fatalf("record %d: timestamp %d type %d, want %d type 1", i, r.Timestamp.UnixMilli(), r.Attrs.TimestampType(), want)
		}
	}

	// Lookups by time use the append time: the producer's time is before
	// every record, and the max timestamp is the last batch's.
	if off, _, code := listOffset(t, cl, topic, 0, producerTs+1000); code != 0 || off != 0 {
		t.Fatalf("offset for the producer's time: %d (error %d), want 0", off, code)
	}
	// The offset is that of the first record holding the largest
	// timestamp: the second batch's, unless both were stamped in the same
	// millisecond.
	wantOff := int64(3)
	if sp2.LogAppendTime == sp.LogAppendTime {
		wantOff = 0
	}
	if off, mts, code := listOffset(t, cl, topic, 0, -3); code != 0 || mts != sp2.LogAppendTime || off != wantOff {
		t.Fatalf("max timestamp: offset %d ts %d (error %d), want %d at %d", off, mts, code, wantOff, sp2.LogAppendTime)
	}
}

// TestListOffsetsV0 (a client of Kafka 0.10.0 or older, or a monitoring
// tool that still sends v0): the old-style list of offsets, newest first,
// bounded by MaxNumOffsets.
func TestListOffsetsV0(t *testing.T) {
	t.Parallel()
	b := testutil.StartBroker(t, "log.segment.bytes=1024")
	topic := "lo-v0"
	testutil.CreateTopic(t, b.Admin(), topic, 1)
	cl := producer(t, b, kgo.ProducerLinger(0))
	for i := range 20 {
		produceSync(t, cl, &kgo.Record{Topic: topic, Value: bytes.Repeat([]byte{byte(i)}, 200)})
	}
	v0 := pinned(t, b, 2, 0)
	list := func(topic string, ts int64, maxNum int32) kmsg.ListOffsetsResponseTopicPartition {
		t.Helper()
		req := kmsg.NewPtrListOffsetsRequest()
		req.ReplicaID = -1
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp, rp.MaxNumOffsets = 0, ts, maxNum
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := request[*kmsg.ListOffsetsResponse](t, v0, req)
		if resp.Version != 0 {
			t.Fatalf("answered at v%d, want v0", resp.Version)
		}
		return resp.Topics[0].Partitions[0]
	}
	if p := list(topic, -1, 1); p.ErrorCode != 0 || !slices.Equal(p.OldStyleOffsets, []int64{20}) {
		t.Fatalf("latest, 1 offset: %v %v, want [20]", kerr.ErrorForCode(p.ErrorCode), p.OldStyleOffsets)
	}
	if p := list(topic, -2, 1); p.ErrorCode != 0 || !slices.Equal(p.OldStyleOffsets, []int64{0}) {
		t.Fatalf("earliest: %v %v, want [0]", kerr.ErrorForCode(p.ErrorCode), p.OldStyleOffsets)
	}
	// With 1 KiB segments the list holds the log end, then each
	// segment's base offset down to 0.
	all := list(topic, -1, 100).OldStyleOffsets
	if len(all) < 3 || all[0] != 20 || all[len(all)-1] != 0 || !slices.IsSortedFunc(all, func(a, b int64) int { return cmp.Compare(b, a) }) {
		t.Fatalf("latest, 100 offsets: %v, want 20, the segments' bases descending, 0", all)
	}
	if p := list(topic, -1, 2); !slices.Equal(p.OldStyleOffsets, all[:2]) {
		t.Fatalf("latest, 2 offsets: %v, want %v", p.OldStyleOffsets, all[:2])
	}
}

// TestListOffsetsTieredTimestampsWithoutTieredStorage: -5 (latest tiered,
// v9+) and -6 (earliest pending upload, v11+) find nothing, offset -1 with
// no error, as Kafka answers for a topic without remote storage; below
// their versions they are UNSUPPORTED_VERSION.
//
// Reference: KIP-1005, KIP-1023; Kafka UnifiedLog.fetchOffsetByTimestamp.
func TestListOffsetsTieredTimestampsWithoutTieredStorage(t *testing.T) {
	t.Parallel()
	b := testutil.StartBroker(t)
	topic := "lo-tiered"
	testutil.CreateTopic(t, b.Admin(), topic, 1)
	cl := producer(t, b, kgo.ProducerLinger(0))
	for i := range 3 {
		produceSync(t, cl, &kgo.Record{Topic: topic, Value: []byte{byte(i)}})
	}
	list := func(v int16, ts int64) kmsg.ListOffsetsResponseTopicPartition {
		t.Helper()
		req := kmsg.NewPtrListOffsetsRequest()
		req.ReplicaID = -1
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Timestamp = ts
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := request[*kmsg.ListOffsetsResponse](t, pinned(t, b, 2, v), req)
		if resp.Version != v {
			t.Fatalf("answered at v%d, want v%d", resp.Version, v)
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("malformed response: %+v", resp.Topics)
		}
		return resp.Topics[0].Partitions[0]
	}
	for _, c := range []struct {
		name string
		v    int16
		ts   int64
		code int16
	}{
		{"latest tiered v9", 9, -5, 0},
		{"latest tiered v10", 10, -5, 0},
		{"latest tiered v11", 11, -5, 0},
		{"earliest pending upload v11", 11, -6, 0},
		{"latest tiered v8", 8, -5, kerr.UnsupportedVersion.Code},
		{"earliest pending upload v10", 10, -6, kerr.UnsupportedVersion.Code},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := list(c.v, c.ts)
			if p.ErrorCode != c.code {
				t.Fatalf("error %v, want %v", kerr.ErrorForCode(p.ErrorCode), kerr.ErrorForCode(c.code))
			}
			if p.Offset != -1 || p.Timestamp != -1 || (c.code == 0 && p.LeaderEpoch != -1) {
				t.Fatalf("offset %d timestamp %d leader epoch %d, want -1 each", p.Offset, p.Timestamp, p.LeaderEpoch)
			}
		})
	}
	// The other timestamps answer as before at the new versions.
	if p := list(11, -1); p.ErrorCode != 0 || p.Offset != 3 || p.LeaderEpoch < 0 {
		t.Fatalf("latest at v11: %v offset %d epoch %d, want 3", kerr.ErrorForCode(p.ErrorCode), p.Offset, p.LeaderEpoch)
	}
	if p := list(10, -2); p.ErrorCode != 0 || p.Offset != 0 {
		t.Fatalf("earliest at v10: %v offset %d, want 0", kerr.ErrorForCode(p.ErrorCode), p.Offset)
	}
}
