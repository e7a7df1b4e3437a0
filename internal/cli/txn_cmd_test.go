package cli_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/record"
	"samsa/internal/testutil"
)

// TestTxnFindHangingAndAbort makes a hanging transaction, a transactional
// batch whose producer id no coordinator knows (written with KIP-890
// verification off, which is how a hanging transaction arises on brokers
// without it), beside a live transaction of a franz-go producer.
// find-hanging reports the first and not the second; abort --start-offset
// closes it and the partition's last stable offset moves past it; the
// live transaction then commits and read_committed sees its record.
func TestTxnFindHangingAndAbort(t *testing.T) {
	t.Parallel()
	b := testutil.StartBroker(t, "transaction.partition.verification.enable=false")
	addr := b.Addr()
	const topic = "hang"
	adm := b.Admin()
	testutil.CreateTopic(t, adm, topic, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// The hanging transaction: an idempotent producer id, a transactional
	// batch at sequence 0.
	cl := b.Client()
	initReq := kmsg.NewPtrInitProducerIDRequest()
	initReq.TransactionTimeoutMillis = -1
	initResp, err := initReq.RequestWith(ctx, cl)
	if err != nil || initResp.ErrorCode != 0 {
		t.Fatalf("init producer id: %v (code %d)", err, initResp.ErrorCode)
	}
	bb := &record.Builder{Codec: record.CodecNone, BaseTimestamp: time.Now().UnixMilli(),
		ProducerID: initResp.ProducerID, ProducerEpoch: initResp.ProducerEpoch, BaseSequence: 0, Transactional: true}
	bb.Add(record.Record{Value: []byte("hanging")})
	batch, err := bb.Build()
	if err != nil {
		t.Fatal(err)
	}
	prod := kmsg.NewPtrProduceRequest()
	prod.Acks, prod.TimeoutMillis = -1, 10000
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = topic
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Partition, pp.Records = 0, batch
	pt.Partitions = append(pt.Partitions, pp)
	prod.Topics = append(prod.Topics, pt)
	prodResp, err := prod.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if c := prodResp.Topics[0].Partitions[0].ErrorCode; c != 0 {
		t.Fatalf("transactional produce: error code %d", c)
	}
	hangAt := prodResp.Topics[0].Partitions[0].BaseOffset

	// The live transaction, after it.
	live := b.Client(kgo.TransactionalID("live-1"), kgo.DefaultProduceTopic(topic))
	if err := live.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := live.ProduceSync(ctx, kgo.StringRecord("live")).FirstErr(); err != nil {
		t.Fatal(err)
	}

	out := mustSamsa(t, addr, "txn", "producers", "--topic", topic)
	if !strings.Contains(out, strconv.FormatInt(initResp.ProducerID, 10)) {
		t.Fatalf("txn producers does not list producer %d:\n%s", initResp.ProducerID, out)
	}
	out = mustSamsa(t, addr, "txn", "find-hanging", "--max-transaction-timeout", "0s")
	r := rows(out)
	if len(r) != 2 || r[1][0] != topic || r[1][2] != strconv.FormatInt(initResp.ProducerID, 10) || r[1][5] != strconv.FormatInt(hangAt, 10) {
		t.Fatalf("find-hanging: want exactly the hanging producer %d at offset %d:\n%s", initResp.ProducerID, hangAt, out)
	}
	if lso := lastStable(ctx, t, adm, topic); lso != hangAt {
		t.Fatalf("last stable offset %d before the abort, want %d (held by the hanging transaction)", lso, hangAt)
	}

	mustSamsa(t, addr, "txn", "abort", "--topic", topic, "--partition", "0", "--start-offset", strconv.FormatInt(hangAt, 10))
	out = mustSamsa(t, addr, "txn", "find-hanging", "--max-transaction-timeout", "0s")
	if r := rows(out); len(r) != 1 {
		t.Fatalf("find-hanging after the abort:\n%s", out)
	}
	// The live transaction's first record now holds the LSO.
	if lso := lastStable(ctx, t, adm, topic); lso != hangAt+1 {
		t.Fatalf("last stable offset %d after the abort, want %d (the live transaction's first record)", lso, hangAt+1)
	}
	out = mustSamsa(t, addr, "txn", "list")
	if !strings.Contains(out, "live-1") || !strings.Contains(out, "Ongoing") {
		t.Fatalf("txn list does not show live-1 Ongoing:\n%s", out)
	}
	out = mustSamsa(t, addr, "txn", "describe", "live-1")
	if !strings.Contains(out, "hang[0]") {
		t.Fatalf("txn describe live-1 does not show its partition:\n%s", out)
	}
	if err := live.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	rc := b.Client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	fs := rc.PollFetches(ctx)
	var got []string
	fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	if len(got) != 1 || got[0] != "live" {
		t.Fatalf("read_committed after the abort and the commit: %q, want [live]", got)
	}
}

// lastStable returns partition 0's last stable offset (ListOffsets at
// read_committed).
func lastStable(ctx context.Context, t *testing.T, adm *kadm.Client, topic string) int64 {
	t.Helper()
	l, err := adm.ListCommittedOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	o, ok := l.Lookup(topic, 0)
	if !ok || o.Err != nil {
		t.Fatalf("list committed offsets: %v", o.Err)
	}
	return o.Offset
}
