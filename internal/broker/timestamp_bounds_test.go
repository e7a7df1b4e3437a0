package broker_test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"samsa/internal/record"
	"samsa/internal/testutil"
)

// TestRecordTimestampsBoundedByTopicConfig covers KIP-937: with
// CreateTime, a batch with a record more than message.timestamp.after.max.ms
// ahead of the broker's clock (default 1 h) or more than
// message.timestamp.before.max.ms behind it is refused with
// INVALID_TIMESTAMP and not written; with LogAppendTime the broker's
// timestamp replaces the record's and the batch is stored.
func TestRecordTimestampsBoundedByTopicConfig(t *testing.T) {
	t.Parallel()
	b := testutil.StartBroker(t)
	adm := b.Admin()
	testutil.CreateTopic(t, adm, "ts-create", 1, "message.timestamp.before.max.ms=600000")
	testutil.CreateTopic(t, adm, "ts-append", 1, "message.timestamp.type=LogAppendTime")
	batchAt := func(ts int64, deltas ...int64) []byte {
		t.Helper()
		bb := record.NewBuilder(record.CodecNone, ts)
		for _, d := range deltas {
			bb.Add(record.Record{TimestampDelta: d, Value: []byte("v")})
		}
		out, err := bb.Build()
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	now := time.Now().UnixMilli()
	hour := time.Hour.Milliseconds()
	addr := b.Addr()
	bad := kerr.InvalidTimestamp.Code
	wantProduce(t, "now", produceRawAcks(t, addr, -1, "ts-create", 0, batchAt(now, 0, 5)), 0, 0)
	wantProduce(t, "one record 2 h ahead", produceRawAcks(t, addr, -1, "ts-create", 0, batchAt(now, 0, 2*hour)), bad, 0)
	wantProduce(t, "20 min behind, before.max 10 min", produceRawAcks(t, addr, -1, "ts-create", 0, batchAt(now-20*60_000, 0)), bad, 0)
	wantProduce(t, "5 min behind, 30 min ahead", produceRawAcks(t, addr, -1, "ts-create", 0, batchAt(now-5*60_000, 0, 35*60_000)), 0, 2)
	if end := logEnd(t, b.Client(), "ts-create", 0); end != 4 {
		t.Fatalf("log end %d after two refused batches, want 4", end)
	}
	wantProduce(t, "LogAppendTime, 2 h ahead", produceRawAcks(t, addr, -1, "ts-append", 0, batchAt(now+2*hour, 0)), 0, 0)
}
