package broker_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"samsa/internal/testutil"
)

// Reference: KIP-98 and Kafka's log cleaner: on a compacted topic the
// cleaner removes the records of aborted transactions and compacts the
// committed ones by key; a read_committed consumer reads the same latest
// value per key before and after, and a read_uncommitted one no longer
// sees the aborted records at all.
func TestCleanerRemovesAbortedTransactionsOfRealProducer(t *testing.T) {
	t.Parallel()
	b := testutil.StartBroker(t, "log.cleaner.backoff.ms=100")
	topic := "txn-compact"
	testutil.CreateTopic(t, b.Admin(), topic, 1,
		"cleanup.policy=compact", "segment.bytes=2048", "min.cleanable.dirty.ratio=0.01",
		"delete.retention.ms=0")
	p := txnProducer(t, []string{b.Addr()}, "txn-compact-id", topic,
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.NoCompression()))
	ctx := ctxT(t, 60*time.Second)
	txn := func(commit kgo.TransactionEndTry, prefix, key string, keys int) {
		t.Helper()
		if err := p.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for k := range keys {
			r := &kgo.Record{Key: fmt.Appendf(nil, "%s%d", key, k), Value: fmt.Appendf(nil, "%s-%d-%s", prefix, k, strings.Repeat("x", 200))}
			if err := p.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.EndTransaction(ctx, commit); err != nil {
			t.Fatal(err)
		}
	}
	txn(kgo.TryCommit, "c1", "k", 10)
	txn(kgo.TryAbort, "a", "k", 10)
	txn(kgo.TryCommit, "c2", "k", 5)
	// Roll past the transactions with other keys: the active segment is
	// never cleaned. NB: the aborted values are newer than c1's for k5-k9;
	// a cleaner that took them for live records would drop c1's.
	txn(kgo.TryCommit, "fill", "f", 20)
	want := map[string]string{}
	for k := range 10 {
		want[fmt.Sprintf("k%d", k)] = fmt.Sprintf("c1-%d", k)
		if k < 5 {
			want[fmt.Sprintf("k%d", k)] = fmt.Sprintf("c2-%d", k)
		}
	}
	for k := range 20 {
		want[fmt.Sprintf("f%d", k)] = fmt.Sprintf("fill-%d", k)
	}
	latest := func(committed bool) (map[string]string, []string) {
		opts := []kgo.Opt{
			kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
			kgo.FetchMaxWait(200 * time.Millisecond),
		}
		if committed {
			opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
		}
		cl := testutil.NewClient(t, b.Addr(), opts...)
		defer cl.Close()
		// The log ends with a marker, which is no record: read until a
		// poll finds nothing more.
		got := map[string]string{}
		var all []string
		for {
			pctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			fs := cl.PollFetches(pctx)
			cancel()
			n := 0
			fs.EachRecord(func(r *kgo.Record) {
				got[string(r.Key)] = prefixOf(string(r.Value))
				all = append(all, prefixOf(string(r.Value)))
				n++
			})
			if n == 0 {
				return got, all
			}
		}
	}
	if got, _ := latest(true); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("read_committed before cleaning: %v, want %v", got, want)
	}
	testutil.Eventually(t, 30*time.Second, func() error {
		_, all := latest(false)
		for _, v := range all {
			if strings.HasPrefix(v, "a-") {
				return testutil.Errorf("aborted record %s still in the log (%d records)", v, len(all))
			}
		}
		return nil
	})
	if got, _ := latest(true); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("read_committed after cleaning: %v, want %v", got, want)
	}
}

// prefixOf returns a value of TestCleanerRemovesAbortedTransactionsOfRealProducer
// without its padding: "c1-3".
func prefixOf(v string) string {
	v, _, _ = strings.Cut(v, "-x")
	return v
}
