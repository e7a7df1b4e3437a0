package broker_test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"samsa/internal/testutil"
)

// TestTransactionCoordinatorFailoverCompletesCommit: a commit decided
// (PrepareCommit durable) while a partition of the transaction is down is
// finished by the next coordinator after the first one dies, once the
// partition is back: the records are committed exactly once.
// Reference: Kafka TransactionStateManager.loadTransactionsForTxnTopicPartition
// (prepared transactions are completed after a load).
func TestTransactionCoordinatorFailoverCompletesCommit(t *testing.T) {
	t.Parallel()
	c := testutil.StartCluster(t, 3)
	cl := c.Client()
	const id = "txfo-1"
	coord := int32(-1)
	testutil.Eventually(t, 30*time.Second, func() error {
		fc := kmsg.NewPtrFindCoordinatorRequest()
		fc.CoordinatorType, fc.CoordinatorKey, fc.CoordinatorKeys = 1, id, []string{id}
		r := request[*kmsg.FindCoordinatorResponse](t, cl, fc)
		if len(r.Coordinators) != 1 || r.Coordinators[0].ErrorCode != 0 {
			return testutil.Errorf("find coordinator: %+v", r)
		}
		coord = r.Coordinators[0].NodeID
		return nil
	})
	// Three partitions with one replica each, spread over the brokers:
	// the transaction writes to one whose broker is not the coordinator.
	if r, err := c.Admin().CreateTopic(ctxT(t, 10*time.Second), 3, 1, nil, "txfo"); err != nil || r.Err != nil {
		t.Fatalf("create topic: %v %v", err, r.Err)
	}
	part, data := int32(-1), int32(-1)
	testutil.Eventually(t, 30*time.Second, func() error {
		for i := int32(0); i < 3; i++ {
			if l := c.Leader("txfo", i); l >= 0 && l != coord {
				part, data = i, l
				return nil
			}
		}
		return testutil.Errorf("no partition led outside the coordinator %d", coord)
	})

	p := txnProducer(t, c.Addrs(), id, "txfo", kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx := ctxT(t, 120*time.Second)
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"once-0", "once-1"} {
		if err := p.ProduceSync(ctx, &kgo.Record{Value: []byte(v), Partition: part}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	c.Kill(int(data))
	if err := p.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit: %v", err)
	}
	state := func() string {
		// A new client each time: a client keeps a coordinator it found.
		d, err := c.Admin().DescribeTransactions(ctx, id)
		if err != nil {
			return err.Error()
		}
		if s := d[id]; s.Err != nil {
			return s.Err.Error()
		} else {
			return s.State
		}
	}
	if s := state(); s != "PrepareCommit" {
		t.Fatalf("with the data partition down: %s, want PrepareCommit", s)
	}
	// While the markers are pending, the producer's requests get
	// CONCURRENT_TRANSACTIONS, which clients retry (Reference: Kafka
	// TransactionCoordinator.handleEndTransaction, handleInitProducerId,
	// handleAddPartitionsToTransaction).
	d, err := c.Admin().DescribeTransactions(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	pid, epoch := d[id].ProducerID, d[id].ProducerEpoch
	raw := c.Client(kgo.RequestRetries(0), kgo.MaxVersions(func() *kversion.Versions {
		vs := kversion.Stable()
		vs.SetMaxKeyVersion(26, 4) // EndTxn v5 is transaction version 2
		vs.SetMaxKeyVersion(24, 3)
		return vs
	}()))
	end := kmsg.NewPtrEndTxnRequest()
	end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = id, pid, epoch, true
	if code := request[*kmsg.EndTxnResponse](t, raw, end).ErrorCode; code != kerr.ConcurrentTransactions.Code {
		t.Errorf("EndTxn during the commit: %v, want CONCURRENT_TRANSACTIONS", kerr.ErrorForCode(code))
	}
	add := kmsg.NewPtrAddPartitionsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch = id, pid, epoch
	at := kmsg.NewAddPartitionsToTxnRequestTopic()
	at.Topic, at.Partitions = "txfo", []int32{part}
	add.Topics = append(add.Topics, at)
	if code := request[*kmsg.AddPartitionsToTxnResponse](t, raw, add).Topics[0].Partitions[0].ErrorCode; code != kerr.ConcurrentTransactions.Code {
		t.Errorf("AddPartitionsToTxn during the commit: %v, want CONCURRENT_TRANSACTIONS", kerr.ErrorForCode(code))
	}
	ini := kmsg.NewPtrInitProducerIDRequest()
	ini.TransactionalID, ini.TransactionTimeoutMillis = kmsg.StringPtr(id), 60000
	if code := request[*kmsg.InitProducerIDResponse](t, raw, ini).ErrorCode; code != kerr.ConcurrentTransactions.Code {
		t.Errorf("InitProducerId during the commit: %v, want CONCURRENT_TRANSACTIONS", kerr.ErrorForCode(code))
	}
	c.Kill(int(coord))
	c.Start(int(data))
	testutil.Eventually(t, 60*time.Second, func() error {
		if s := state(); s != "CompleteCommit" {
			return testutil.Errorf("state %s", s)
		}
		return nil
	})
	c.Start(int(coord))
	readCommitted(t, c.Addrs(), "txfo", 2, func(v string) bool { return v == "once-0" || v == "once-1" })
}
