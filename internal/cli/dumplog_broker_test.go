package cli_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"samsa/internal/cli"
	"samsa/internal/testutil"
)

// TestDumpLogDecodesBrokerFiles has a broker commit a transaction and a
// consumer group's offsets, shuts it down, and decodes the files it left:
// the topic's producer snapshot, the __transaction_state segment and the
// __consumer_offsets segment.
func TestDumpLogDecodesBrokerFiles(t *testing.T) {
	t.Parallel()
	b := testutil.StartBroker(t, "offsets.topic.num.partitions=1", "transaction.state.log.num.partitions=1",
		"group.initial.rebalance.delay.ms=0")
	testutil.CreateTopic(t, b.Admin(), "dl", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	p := b.Client(kgo.TransactionalID("dl-writer"), kgo.DefaultProduceTopic("dl"))
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceSync(ctx, kgo.StringRecord("one"), kgo.StringRecord("two")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := p.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	c := b.Client(kgo.ConsumerGroup("dl-group"), kgo.ConsumeTopics("dl"), kgo.ClientID("dl-consumer"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	var n int
	for n < 2 {
		fs := c.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d records: %v", n, err)
		}
		n += fs.NumRecords()
	}
	if err := c.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	c.Close()
	p.Close()
	if err := b.Node.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}

	dump := func(args ...string) string {
		t.Helper()
		code, out, errs := cli.RunForTest(ctx, "", append([]string{"dump-log"}, args...)...)
		if code != cli.ExitOK {
			t.Fatalf("dump-log %v: exit %d\n%s\n%s", args, code, out, errs)
		}
		return out
	}
	glob := func(pattern string) []string {
		t.Helper()
		m, err := filepath.Glob(filepath.Join(b.Dir, pattern))
		if err != nil || len(m) == 0 {
			t.Fatalf("no %s under %s: %v", pattern, b.Dir, err)
		}
		return m
	}

	snap := dump(glob("dl-0/*.snapshot")...)
	if !strings.Contains(snap, "producers 1\n") || !strings.Contains(snap, "txn-first-offset - batches 1") || !strings.Contains(snap, "batch seq 0..1 offsets 0..1") {
		t.Fatalf("producer snapshot:\n%s", snap)
	}
	if out := dump("--print-data", glob("dl-0/*.log")[0]); !strings.Contains(out, "control true") {
		t.Fatalf("dl-0 segment has no commit marker:\n%s", out)
	}

	tl := dump(append([]string{"--transaction-log-decoder"}, glob("__transaction_state-0/*.log")...)...)
	for _, want := range []string{
		`transactional-id "dl-writer" value version`,
		"state Ongoing timeout-ms",
		"partitions dl[0]",
		"state CompleteCommit",
	} {
		if !strings.Contains(tl, want) {
			t.Fatalf("__transaction_state lacks %q:\n%s", want, tl)
		}
	}

	ol := dump(append([]string{"--offsets-decoder"}, glob("__consumer_offsets-0/*.log")...)...)
	for _, want := range []string{
		`group_metadata group "dl-group" value version`,
		`protocol-type "consumer" generation 1`,
		`client "dl-consumer"`,
		"subscription [dl] assignment dl[0]",
		`offset_commit group "dl-group" topic "dl" partition 0 value version`,
		"offset 2 leader-epoch",
	} {
		if !strings.Contains(ol, want) {
			t.Fatalf("__consumer_offsets lacks %q:\n%s", want, ol)
		}
	}
}
