package broker_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"samsa/internal/testutil"
)

// startOffset returns the log start offset of topic/partition through
// kadm's ListStartOffsets (ListOffsets earliest).
func startOffset(t *testing.T, adm *kadm.Client, topic string, partition int32) (int64, error) {
	t.Helper()
	offs, err := adm.ListStartOffsets(ctxT(t, 10*time.Second), topic)
	if err != nil {
		return 0, err
	}
	o, ok := offs.Lookup(topic, partition)
	if !ok {
		return 0, testutil.Errorf("no offset for %s[%d]", topic, partition)
	}
	return o.Offset, o.Err
}

// produceFill produces n records of size bytes each with timestamp ts
// (zero: now) to partition 0 and returns the offset after the last.
func produceFill(t *testing.T, cl *kgo.Client, topic string, n, size int, ts time.Time) int64 {
	t.Helper()
	rs := make([]*kgo.Record, n)
	for i := range rs {
		rs[i] = &kgo.Record{Topic: topic, Value: bytes.Repeat([]byte{byte(i)}, size), Timestamp: ts}
	}
	res := cl.ProduceSync(ctxT(t, 30*time.Second), rs...)
	if err := res.FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	return res[len(res)-1].Record.Offset + 1
}

// checkOutOfRangeBelow fetches offset and expects OFFSET_OUT_OF_RANGE.
func checkOutOfRangeBelow(t *testing.T, cl *kgo.Client, topic string, offset int64) {
	t.Helper()
	fp := fetchRaw(t, cl, topic, 0, offset, nil)
	if fp.ErrorCode != kerr.OffsetOutOfRange.Code {
		t.Fatalf("fetch at %d: error %v, want OFFSET_OUT_OF_RANGE", offset, kerr.ErrorForCode(fp.ErrorCode))
	}
}

func TestRetentionBytesMovesLogStartOffset(t *testing.T) {
	b := testutil.StartBroker(t, "log.retention.check.interval.ms=100")
	adm := b.Admin()
	topic := "ret-bytes"
	testutil.CreateTopic(t, adm, topic, 1, "segment.bytes=16384", "retention.bytes=32768")
	// Uncompressed 1 KiB records fill a 16 KiB segment every ~15.
	cl := producer(t, b, kgo.ProducerLinger(0), kgo.ProducerBatchCompression(kgo.NoCompression()))
	var end int64
	for i := 0; i < 10; i++ {
		end = produceFill(t, cl, topic, 20, 1024, time.Time{})
	}

	var lso int64
	testutil.Eventually(t, 10*time.Second, func() error {
		var err error
		if lso, err = startOffset(t, adm, topic, 0); err != nil {
			return err
		}
		if lso == 0 {
			return testutil.Errorf("log start offset still 0")
		}
		return nil
	})
	// retention.bytes keeps at least 32 KiB minus one segment: the newest
	// records are all still there.
	if lso > end-16 {
		t.Fatalf("log start offset %d leaves fewer than 16 of %d records", lso, end)
	}
	checkOutOfRangeBelow(t, cl, topic, lso-1)
	checkOutOfRangeBelow(t, cl, topic, 0)
	fp := fetchRaw(t, cl, topic, 0, lso, nil)
	if fp.ErrorCode != 0 || len(fp.RecordBatches) == 0 || fp.LogStartOffset != lso {
		t.Fatalf("fetch at log start %d: error %d, %d bytes, log start %d", lso, fp.ErrorCode, len(fp.RecordBatches), fp.LogStartOffset)
	}
	got := consumeFrom(t, b.Addr(), topic, lso, int(end-lso))
	if got[0].Offset != lso || got[len(got)-1].Offset != end-1 {
		t.Fatalf("consumed offsets %d..%d, want %d..%d", got[0].Offset, got[len(got)-1].Offset, lso, end-1)
	}
}

func TestRetentionMsDeletesSegmentsWithOldTimestamps(t *testing.T) {
	b := testutil.StartBroker(t, "log.retention.check.interval.ms=100")
	adm := b.Admin()
	topic := "ret-ms"
	testutil.CreateTopic(t, adm, topic, 1, "segment.bytes=16384", "retention.ms=60000")
	cl := producer(t, b, kgo.ProducerLinger(0), kgo.ProducerBatchCompression(kgo.NoCompression()))
	old := time.Now().Add(-time.Hour)
	oldEnd := produceFill(t, cl, topic, 60, 1024, old)
	// Fresh records roll past the old ones; they must survive retention.
	end := produceFill(t, cl, topic, 30, 1024, time.Time{})

	testutil.Eventually(t, 20*time.Second, func() error {
		lso, err := startOffset(t, adm, topic, 0)
		if err != nil {
			return err
		}
		// Every segment holding only old records goes; the one where old
		// and new records meet stays.
		if lso < oldEnd-16 {
			return testutil.Errorf("log start offset %d, want near %d", lso, oldEnd)
		}
		// NB: a pass may still be deleting the last old-only segment;
		// settled means unchanged across several retention checks.
		time.Sleep(500 * time.Millisecond)
		if again, err := startOffset(t, adm, topic, 0); err != nil || again != lso {
			return testutil.Errorf("log start offset moved from %d to %d (%v)", lso, again, err)
		}
		return nil
	})
	lso, err := startOffset(t, adm, topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	if lso > oldEnd {
		t.Fatalf("log start offset %d is past the old records (%d): fresh records were deleted", lso, oldEnd)
	}
	checkOutOfRangeBelow(t, cl, topic, 0)
	got := consumeFrom(t, b.Addr(), topic, lso, int(end-lso))
	if got[len(got)-1].Offset != end-1 {
		t.Fatalf("last consumed offset %d, want %d", got[len(got)-1].Offset, end-1)
	}
}

func TestDeleteRecordsMovesLowWatermark(t *testing.T) {
	b := testutil.StartBroker(t)
	adm := b.Admin()
	topic := "delrec"
	testutil.CreateTopic(t, adm, topic, 1)
	cl := producer(t, b)
	end := produceFill(t, cl, topic, 50, 100, time.Time{})
	ctx := ctxT(t, 30*time.Second)

	del := func(off int64) kadm.DeleteRecordsResponse {
		t.Helper()
		var o kadm.Offsets
		o.Add(kadm.Offset{Topic: topic, Partition: 0, At: off})
		resp, err := adm.DeleteRecords(ctx, o)
		if err != nil {
			t.Fatalf("delete records: %v", err)
		}
		r, ok := resp.Lookup(topic, 0)
		if !ok {
			t.Fatalf("delete records: no response for partition 0")
		}
		return r
	}

	if r := del(20); r.Err != nil || r.LowWatermark != 20 {
		t.Fatalf("delete before 20: low watermark %d, err %v", r.LowWatermark, r.Err)
	}
	if lso, err := startOffset(t, adm, topic, 0); err != nil || lso != 20 {
		t.Fatalf("log start offset %d (%v), want 20", lso, err)
	}
	checkOutOfRangeBelow(t, cl, topic, 19)
	if fp := fetchRaw(t, cl, topic, 0, 20, nil); fp.ErrorCode != 0 || fp.LogStartOffset != 20 {
		t.Fatalf("fetch at 20: error %d, log start %d", fp.ErrorCode, fp.LogStartOffset)
	}
	got := consumeFrom(t, b.Addr(), topic, 20, int(end-20))
	if got[0].Offset != 20 {
		t.Fatalf("first consumed offset %d, want 20", got[0].Offset)
	}

	// Moving backwards keeps the low watermark where it is.
	if r := del(10); r.Err != nil || r.LowWatermark != 20 {
		t.Fatalf("delete before 10 after 20: low watermark %d, err %v", r.LowWatermark, r.Err)
	}
	// Beyond the high watermark is out of range and changes nothing.
	if r := del(end + 1); !errorsIs(r.Err, kerr.OffsetOutOfRange) {
		t.Fatalf("delete beyond the high watermark: err %v, want OFFSET_OUT_OF_RANGE", r.Err)
	}
	// -1 means the high watermark.
	if r := del(-1); r.Err != nil || r.LowWatermark != end {
		t.Fatalf("delete before -1: low watermark %d, err %v, want %d", r.LowWatermark, r.Err, end)
	}
	if lso, err := startOffset(t, adm, topic, 0); err != nil || lso != end {
		t.Fatalf("log start offset %d (%v), want %d", lso, err, end)
	}
	// The partition stays writable and continues its offsets.
	if next := produceFill(t, cl, topic, 1, 10, time.Time{}); next != end+1 {
		t.Fatalf("produce after delete: next offset %d, want %d", next, end+1)
	}
}
