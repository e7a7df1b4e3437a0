package broker_test

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"samsa/internal/testutil"
)

// Reference: KIP-98: a read_committed consumer sees the records of
// committed transactions, each once, and never those of aborted ones.
func TestTransactionCommittedVisibleAbortedNot(t *testing.T) {
	t.Parallel()
	b := testutil.StartBroker(t)
	testutil.CreateTopic(t, b.Admin(), "txv", 3)
	p := txnProducer(t, []string{b.Addr()}, "txv-1", "txv")
	runTxn(t, p, kgo.TryCommit, txnValues("c1", 9)...)
	runTxn(t, p, kgo.TryAbort, txnValues("a1", 6)...)
	runTxn(t, p, kgo.TryCommit, txnValues("c2", 3)...)
	got := readCommitted(t, []string{b.Addr()}, "txv", 12, func(v string) bool { return !strings.HasPrefix(v, "a1") })
	for _, v := range append(txnValues("c1", 9), txnValues("c2", 3)...) {
		if !got[v] {
			t.Errorf("committed record %s missing", v)
		}
	}
	// The markers complete in the background after EndTxn is answered.
	testutil.Eventually(t, 10*time.Second, func() error {
		d, err := b.Admin().DescribeTransactions(ctxT(t, 10*time.Second), "txv-1")
		if err != nil {
			return err
		}
		if s := d["txv-1"]; s.State != "CompleteCommit" || s.Err != nil || len(s.Topics) != 0 {
			return testutil.Errorf("described %+v, want CompleteCommit", s)
		}
		return nil
	})
}

// Reference: KIP-98 zombie fencing: a second producer with the same
// transactional id aborts the first one's transaction and fences it.
func TestTransactionSecondProducerFencesFirst(t *testing.T) {
	t.Parallel()
	b := testutil.StartBroker(t)
	testutil.CreateTopic(t, b.Admin(), "txf", 1)
	ctx := ctxT(t, 60*time.Second)
	p1 := txnProducer(t, []string{b.Addr()}, "txf-1", "txf")
	if err := p1.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p1.ProduceSync(ctx, &kgo.Record{Value: []byte("zombie")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	p2 := txnProducer(t, []string{b.Addr()}, "txf-1", "txf")
	runTxn(t, p2, kgo.TryCommit, "live")
	err := p1.EndTransaction(ctx, kgo.TryCommit)
	if !errorsIs(err, kerr.ProducerFenced) && !errorsIs(err, kerr.InvalidProducerEpoch) {
		t.Fatalf("fenced producer's commit: %v, want PRODUCER_FENCED or INVALID_PRODUCER_EPOCH", err)
	}
	readCommitted(t, []string{b.Addr()}, "txf", 1, func(v string) bool { return v == "live" })
}

// Reference: Kafka TransactionCoordinator.abortTimedOutTransactions: an
// abandoned transaction is aborted after its timeout and its producer
// fenced.
func TestTransactionTimeoutAbortsAbandonedTransaction(t *testing.T) {
	t.Parallel()
	b := testutil.StartBroker(t, "transaction.abort.timed.out.transaction.cleanup.interval.ms=100")
	testutil.CreateTopic(t, b.Admin(), "txt", 1)
	ctx := ctxT(t, 60*time.Second)
	p := txnProducer(t, []string{b.Addr()}, "txt-1", "txt", kgo.TransactionTimeout(time.Second))
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceSync(ctx, &kgo.Record{Value: []byte("abandoned")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	adm := b.Admin()
	var epoch int16 = -1
	testutil.Eventually(t, 20*time.Second, func() error {
		d, err := adm.DescribeTransactions(ctx, "txt-1")
		if err != nil {
			return err
		}
		s := d["txt-1"]
		if epoch < 0 && s.State == "Ongoing" {
			epoch = s.ProducerEpoch
		}
		if s.State != "CompleteAbort" {
			return testutil.Errorf("state %s", s.State)
		}
		if epoch >= 0 && s.ProducerEpoch != epoch+1 {
			t.Errorf("epoch after the timeout abort %d, want %d", s.ProducerEpoch, epoch+1)
		}
		return nil
	})
	// A later committed transaction from a new producer is readable: the
	// abort ended the abandoned one, so the last stable offset moved past it.
	p2 := txnProducer(t, []string{b.Addr()}, "txt-2", "txt")
	runTxn(t, p2, kgo.TryCommit, "after")
	readCommitted(t, []string{b.Addr()}, "txt", 1, func(v string) bool { return v == "after" })
	if err := p.EndTransaction(ctx, kgo.TryCommit); err == nil {
		t.Fatal("the timed-out producer committed")
	}
}

// A transaction over partitions led by three brokers: the coordinator
// writes the markers of the others through WriteTxnMarkers.
func TestTransactionAcrossClusterCommitsEveryPartition(t *testing.T) {
	t.Parallel()
	c := testutil.StartCluster(t, 3)
	if resp, err := c.Admin().CreateTopic(ctxT(t, 10*time.Second), 6, 3, nil, "txc"); err != nil || resp.Err != nil {
		t.Fatalf("create topic: %v %v", err, resp.Err)
	}
	p := txnProducer(t, c.Addrs(), "txc-1", "txc")
	runTxn(t, p, kgo.TryCommit, txnValues("c", 12)...)
	runTxn(t, p, kgo.TryAbort, txnValues("a", 12)...)
	runTxn(t, p, kgo.TryCommit, txnValues("d", 6)...)
	readCommitted(t, c.Addrs(), "txc", 18, func(v string) bool { return !strings.HasPrefix(v, "a-") })
}
