package broker_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/testutil"
)

// Transaction version 2 (KIP-890 part 2): the broker advertises the
// transaction.version feature, a Produce v12 adds its partition to the
// transaction, TxnOffsetCommit v5 adds the group's partition, and every
// EndTxn v5 bumps the epoch, so that a write of an earlier transaction is
// refused by epoch.

// finalizedTxnVersion returns the transaction.version level b finalizes
// in ApiVersions v3, or -1 when it lists none.
func finalizedTxnVersion(t *testing.T, b *testutil.Broker) int16 {
	t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = "samsa-test", "1"
	resp := direct[*kmsg.ApiVersionsResponse](t, b.Client(), req)
	supported := false
	for _, f := range resp.SupportedFeatures {
		if f.Name == "transaction.version" && f.MinVersion == 0 && f.MaxVersion == 2 {
			supported = true
		}
	}
	if !supported {
		t.Errorf("SupportedFeatures %+v lack transaction.version 0-2", resp.SupportedFeatures)
	}
	for _, f := range resp.FinalizedFeatures {
		if f.Name == "transaction.version" {
			if f.MinVersionLevel != f.MaxVersionLevel {
				t.Errorf("finalized transaction.version %d-%d, want one level", f.MinVersionLevel, f.MaxVersionLevel)
			}
			return f.MaxVersionLevel
		}
	}
	return -1
}

func TestTransactionVersionFeatureFollowsConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		override string
		want     int16
	}{
		{"", 2}, // Kafka 4's default for a new cluster
		{"transaction.version=1", 1},
		{"transaction.version=0", -1}, // no finalized feature at level 0
	} {
		t.Run(fmt.Sprintf("config=%q", tc.override), func(t *testing.T) {
			t.Parallel()
			var b *testutil.Broker
			if tc.override == "" {
				b = testutil.StartBroker(t)
			} else {
				b = testutil.StartBroker(t, tc.override)
			}
			if got := finalizedTxnVersion(t, b); got != tc.want {
				t.Fatalf("finalized transaction.version %d, want %d", got, tc.want)
			}
		})
	}
}

// endTxnV5 sends EndTxn v5 and returns its code and the producer id and
// epoch to go on with.
func endTxnV5(t *testing.T, cl *kgo.Client, id string, pid int64, epoch int16, commit bool) (int16, int64, int16) {
	t.Helper()
	req := kmsg.NewPtrEndTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = id, pid, epoch, commit
	resp := request[*kmsg.EndTxnResponse](t, cl, req)
	return resp.ErrorCode, resp.ProducerID, resp.ProducerEpoch
}

// describeTxn returns the coordinator's state of id.
func describeTxn(t *testing.T, cl *kgo.Client, id string) kmsg.DescribeTransactionsResponseTransactionState {
	t.Helper()
	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.TransactionalIDs = []string{id}
	resp := request[*kmsg.DescribeTransactionsResponse](t, cl, req)
	if len(resp.TransactionStates) != 1 {
		t.Fatalf("DescribeTransactions: %d states", len(resp.TransactionStates))
	}
	return resp.TransactionStates[0]
}

// waitTxnState waits until id's coordinator reports state.
func waitTxnState(t *testing.T, cl *kgo.Client, id, state string) kmsg.DescribeTransactionsResponseTransactionState {
	t.Helper()
	var s kmsg.DescribeTransactionsResponseTransactionState
	testutil.Eventually(t, 10*time.Second, func() error {
		s = describeTxn(t, cl, id)
		if s.State != state {
			return testutil.Errorf("state %s, want %s", s.State, state)
		}
		return nil
	})
	return s
}

// Reference: KIP-890 part 2: a Produce v12 needs no AddPartitionsToTxn,
// the end of a transaction bumps the epoch, and a write that belongs to
// the ended transaction (a late retry, a zombie) is refused by that epoch
// and never joins the next transaction.
func TestTransactionVersion2LateWriteRefusedByEpoch(t *testing.T) {
	t.Parallel()
	b := testutil.StartBroker(t)
	testutil.CreateTopic(t, b.Admin(), "tv2", 2)
	cl := pinned(t, b, 0, 12) // Produce v12, EndTxn v5: the newest both know
	const id = "tv2-1"
	pid, e0 := initTxnID(t, cl, id, 60000)

	// T1: two partitions, added by the produces alone.
	for p := int32(0); p < 2; p++ {
		if c := produceTxnBatch(t, cl, id, "tv2", p, pid, e0, 0, fmt.Sprintf("t1-p%d", p)); c != 0 {
			t.Fatalf("T1 produce to partition %d: %v", p, kerr.ErrorForCode(c))
		}
	}
	if s := describeTxn(t, cl, id); s.State != "Ongoing" || len(s.Topics) != 1 || len(s.Topics[0].Partitions) != 2 {
		t.Fatalf("after the produces: %s with %+v, want Ongoing with both partitions", s.State, s.Topics)
	}
	code, pid1, e1 := endTxnV5(t, cl, id, pid, e0, true)
	if code != 0 || pid1 != pid || e1 != e0+1 {
		t.Fatalf("EndTxn v5 commit: %v, producer %d epoch %d; want no error, %d, %d", kerr.ErrorForCode(code), pid1, e1, pid, e0+1)
	}
	waitTxnState(t, cl, id, "CompleteCommit")

	// A late T1 write, with T1's epoch and the next sequence, to a
	// partition T1 had and to one it had not: both refused, both before
	// and after T2 starts.
	late := func(when string) {
		t.Helper()
		for p := int32(0); p < 2; p++ {
			if c := produceTxnBatch(t, cl, id, "tv2", p, pid, e0, 1, "late-"+when); c != kerr.InvalidProducerEpoch.Code {
				t.Errorf("late T1 write to partition %d %s: %v, want INVALID_PRODUCER_EPOCH", p, when, kerr.ErrorForCode(c))
			}
		}
	}
	late("before T2")
	if c := produceTxnBatch(t, cl, id, "tv2", 0, pid, e1, 0, "t2-p0"); c != 0 {
		t.Fatalf("T2 produce: %v", kerr.ErrorForCode(c))
	}
	late("during T2")
	// A retried T1 end is recognised as one (the epoch before the bump)
	// and answered without ending T2.
	if code, _, _ := endTxnV5(t, cl, id, pid, e0, true); code != kerr.ProducerFenced.Code {
		t.Errorf("T1's end retried during T2: %v, want PRODUCER_FENCED", kerr.ErrorForCode(code))
	}
	code, _, e2 := endTxnV5(t, cl, id, pid, e1, false)
	if code != 0 || e2 != e1+1 {
		t.Fatalf("EndTxn v5 abort of T2: %v epoch %d, want no error, %d", kerr.ErrorForCode(code), e2, e1+1)
	}
	waitTxnState(t, cl, id, "CompleteAbort")
	late("after T2")

	got := readCommitted(t, []string{b.Addr()}, "tv2", 2, func(v string) bool { return strings.HasPrefix(v, "t1-") })
	if !got["t1-p0"] || !got["t1-p1"] {
		t.Fatalf("read_committed %v, want T1's two records", got)
	}
	// Read uncommitted: T1's two records and T2's aborted one, nothing else.
	for p, recs := range consumeAll(t, b.Addr(), "tv2", 2, 3) {
		for _, r := range recs {
			if v := string(r.Value); strings.HasPrefix(v, "late-") {
				t.Errorf("a late write reached partition %d at offset %d: %q", p, r.Offset, v)
			}
		}
	}
}

// Reference: KIP-890 part 2: TxnOffsetCommit v5 adds the group's
// __consumer_offsets partition itself; the offsets count once the
// transaction commits.
func TestTransactionVersion2OffsetCommitAddsPartition(t *testing.T) {
	t.Parallel()
	b := testutil.StartBroker(t)
	testutil.CreateTopic(t, b.Admin(), "tv2o", 1)
	cl := pinned(t, b, 28, 5)
	const id, groupID = "tv2o-1", "tv2o-group"
	pid, epoch := initTxnID(t, cl, id, 60000)
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch, req.Generation = id, groupID, pid, epoch, -1
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic = "tv2o"
	rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset, rp.LeaderEpoch = 0, 42, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	testutil.Eventually(t, 30*time.Second, func() error {
		resp, err := req.RequestWith(ctxT(t, 10*time.Second), cl)
		if err != nil {
			return err
		}
		return kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
	})
	s := describeTxn(t, cl, id)
	if s.State != "Ongoing" || len(s.Topics) != 1 || s.Topics[0].Topic != "__consumer_offsets" {
		t.Fatalf("after TxnOffsetCommit v5: %s with %+v, want Ongoing with the group's partition", s.State, s.Topics)
	}
	if code, _, _ := endTxnV5(t, cl, id, pid, epoch, true); code != 0 {
		t.Fatalf("commit: %v", kerr.ErrorForCode(code))
	}
	testutil.Eventually(t, 10*time.Second, func() error {
		offs, err := b.Admin().FetchOffsets(ctxT(t, 5*time.Second), groupID)
		if err != nil {
			return err
		}
		if o, ok := offs.Lookup("tv2o", 0); !ok || o.At != 42 {
			return testutil.Errorf("committed offset %+v, want 42", o)
		}
		return nil
	})
	// A commit with the epoch before the bump is fenced.
	rp.Offset = 99
	rt.Partitions[0] = rp
	req.Topics[0] = rt
	resp, err := req.RequestWith(ctxT(t, 10*time.Second), cl)
	if err != nil {
		t.Fatal(err)
	}
	if c := resp.Topics[0].Partitions[0].ErrorCode; c != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("TxnOffsetCommit v5 with the old epoch: %v, want INVALID_PRODUCER_EPOCH", kerr.ErrorForCode(c))
	}
}

// franz-go uses transaction version 2 when the broker finalizes it, and
// version 1 when it does not; both commit and abort correctly. The epoch
// the coordinator describes shows which was used: version 2 bumps it at
// every end. (franz-go opts in after its first transaction, with an
// InitProducerId, so the test compares the second and third.)
func TestTransactionVersionsWithFranzGo(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		override []string
		bump     int16
	}{
		{"version=2", nil, 1},
		{"version=1", []string{"transaction.version=1"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := testutil.StartBroker(t, tc.override...)
			topic := "tvf-" + strings.TrimPrefix(tc.name, "version=")
			id := topic + "-id"
			testutil.CreateTopic(t, b.Admin(), topic, 3)
			p := txnProducer(t, []string{b.Addr()}, id, topic)
			runTxn(t, p, kgo.TryCommit, txnValues("c1", 6)...)
			runTxn(t, p, kgo.TryAbort, txnValues("a", 6)...)
			e2 := waitTxnState(t, b.Client(), id, "CompleteAbort").ProducerEpoch
			runTxn(t, p, kgo.TryCommit, txnValues("c2", 6)...)
			e3 := waitTxnState(t, b.Client(), id, "CompleteCommit").ProducerEpoch
			if e3 != e2+tc.bump {
				t.Errorf("epoch %d after the abort and %d after the next commit, want a bump of %d", e2, e3, tc.bump)
			}
			readCommitted(t, []string{b.Addr()}, topic, 12, func(v string) bool { return !strings.HasPrefix(v, "a-") })
		})
	}
}

// Under transaction version 2 the first produce of a transaction nearly
// always reaches the coordinator while it still writes the previous
// transaction's markers (CONCURRENT_TRANSACTIONS); the broker asks again
// itself, so a producer that begins the next transaction at once goes on
// without failing or stalling, and read_committed sees exactly the
// committed transactions. Reference: KAFKA-18654.
func TestTransactionVersion2BackToBackTransactions(t *testing.T) {
	t.Parallel()
	const (
		partitions = 8
		txns       = 20
		perTxn     = 40
	)
	b := testutil.StartBroker(t)
	testutil.CreateTopic(t, b.Admin(), "tv2-b2b", partitions)
	p := txnProducer(t, []string{b.Addr()}, "tv2-b2b-id", "tv2-b2b")
	ctx := ctxT(t, 60*time.Second)
	committed := 0
	for i := range txns {
		if err := p.BeginTransaction(); err != nil {
			t.Fatalf("begin %d: %v", i, err)
		}
		commit := i%5 != 4
		prefix := fmt.Sprintf("c%d", i)
		if !commit {
			prefix = fmt.Sprintf("a%d", i)
		}
		var recs []*kgo.Record
		for _, v := range txnValues(prefix, perTxn) {
			recs = append(recs, &kgo.Record{Value: []byte(v)})
		}
		if err := p.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("produce in transaction %d: %v", i, err)
		}
		if err := p.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatalf("end transaction %d: %v", i, err)
		}
		if commit {
			committed += perTxn
		}
	}
	readCommitted(t, []string{b.Addr()}, "tv2-b2b", committed, func(v string) bool { return strings.HasPrefix(v, "c") })
}
