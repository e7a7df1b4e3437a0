package broker_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"samsa/internal/record"
	"samsa/internal/testutil"
)

// txnProducer returns a transactional franz-go producer for topic.
func txnProducer(t *testing.T, addrs []string, id, topic string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	return testutil.NewClient(t, strings.Join(addrs, ","), append([]kgo.Opt{
		kgo.SeedBrokers(addrs...),
		kgo.TransactionalID(id),
		kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
	}, opts...)...)
}

// runTxn produces the values in one transaction and ends it.
func runTxn(t *testing.T, p *kgo.Client, commit kgo.TransactionEndTry, values ...string) {
	t.Helper()
	ctx := ctxT(t, 60*time.Second)
	if err := p.BeginTransaction(); err != nil {
		t.Fatalf("begin: %v", err)
	}
	for _, v := range values {
		if err := p.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("produce %s: %v", v, err)
		}
	}
	if err := p.EndTransaction(ctx, commit); err != nil {
		t.Fatalf("end transaction (commit %v): %v", commit, err)
	}
}

// readCommitted consumes topic at read_committed until it has want
// records, and fails on a record outside allowed or seen twice.
func readCommitted(t *testing.T, addrs []string, topic string, want int, allowed func(string) bool) map[string]bool {
	t.Helper()
	cl := testutil.NewClient(t, strings.Join(addrs, ","), kgo.SeedBrokers(addrs...), kgo.ConsumeTopics(topic),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx := ctxT(t, 60*time.Second)
	got := map[string]bool{}
	for len(got) < want {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read_committed: %d of %d records before the deadline: %v", len(got), want, got)
		}
		fs.EachError(func(tp string, p int32, err error) { t.Logf("fetch %s-%d: %v", tp, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			v := string(r.Value)
			if !allowed(v) {
				t.Errorf("read_committed consumer saw %q", v)
			}
			if got[v] {
				t.Errorf("record %q seen twice", v)
			}
			got[v] = true
		})
	}
	return got
}

func txnValues(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", prefix, i)
	}
	return out
}

// A coordinator that restarts keeps its transactional ids: a committed
// transaction stays committed exactly once, and the producer goes on with
// the next epoch.
func TestTransactionCoordinatorRestartKeepsState(t *testing.T) {
	t.Parallel()
	b := testutil.StartBroker(t)
	testutil.CreateTopic(t, b.Admin(), "txr", 2)
	cl := b.Client()
	pid, epoch := initTxnID(t, cl, "txr-1", 60000)
	addPartitionsV3(t, b, "txr-1", pid, epoch, "txr", 0, 0)
	produceTxnBatch(t, cl, "txr-1", "txr", 0, pid, epoch, 0, "r-0", "r-1")
	if c := endTxn(t, pinned(t, b, 26, 4), "txr-1", pid, epoch, true); c != 0 {
		t.Fatalf("end: %v", kerr.ErrorForCode(c))
	}
	b.Restart()
	cl = b.Client()
	testutil.Eventually(t, 20*time.Second, func() error {
		d, err := b.Admin().DescribeTransactions(ctxT(t, 5*time.Second), "txr-1")
		if err != nil {
			return err
		}
		if s := d["txr-1"]; s.Err != nil || s.State != "CompleteCommit" || s.ProducerID != pid {
			return testutil.Errorf("described %+v", s)
		}
		return nil
	})
	readCommitted(t, []string{b.Addr()}, "txr", 2, func(v string) bool { return strings.HasPrefix(v, "r-") })
	// Reference: KIP-360: the producer re-initialises with its id and
	// epoch and gets the next epoch.
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionalID, req.TransactionTimeoutMillis = kmsg.StringPtr("txr-1"), 60000
	req.ProducerID, req.ProducerEpoch = pid, epoch
	resp := request[*kmsg.InitProducerIDResponse](t, cl, req)
	if resp.ErrorCode != 0 || resp.ProducerID != pid || resp.ProducerEpoch != epoch+1 {
		t.Fatalf("init after restart: %v %d/%d, want %d/%d", kerr.ErrorForCode(resp.ErrorCode), resp.ProducerID, resp.ProducerEpoch, pid, epoch+1)
	}
}

// initTxnID finds the coordinator of id (creating __transaction_state) and
// initialises a producer id for it on this single broker.
func initTxnID(t *testing.T, cl *kgo.Client, id string, timeoutMs int32) (int64, int16) {
	t.Helper()
	var pid int64
	var epoch int16
	testutil.Eventually(t, 30*time.Second, func() error {
		fc := kmsg.NewPtrFindCoordinatorRequest()
		fc.CoordinatorType, fc.CoordinatorKey = 1, id
		if r := request[*kmsg.FindCoordinatorResponse](t, cl, fc); r.ErrorCode != 0 {
			return kerr.ErrorForCode(r.ErrorCode)
		}
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID, req.TransactionTimeoutMillis = kmsg.StringPtr(id), timeoutMs
		resp := request[*kmsg.InitProducerIDResponse](t, cl, req)
		if resp.ErrorCode != 0 {
			return kerr.ErrorForCode(resp.ErrorCode)
		}
		pid, epoch = resp.ProducerID, resp.ProducerEpoch
		return nil
	})
	return pid, epoch
}

// pinned returns a client for b that sends key at most at version v.
func pinned(t *testing.T, b *testutil.Broker, key int16, v int16, more ...int16) *kgo.Client {
	t.Helper()
	vs := kversion.Stable()
	vs.SetMaxKeyVersion(key, v)
	for i := 0; i+1 < len(more); i += 2 {
		vs.SetMaxKeyVersion(more[i], more[i+1])
	}
	return b.Client(kgo.MaxVersions(vs), kgo.RequestRetries(0))
}

// addPartitionsV3 sends AddPartitionsToTxn v3 (the client form) and
// returns the code of each partition.
func addPartitionsV3(t *testing.T, b *testutil.Broker, id string, pid int64, epoch int16, topic string, parts ...int32) []int16 {
	t.Helper()
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch = id, pid, epoch
	rt := kmsg.NewAddPartitionsToTxnRequestTopic()
	rt.Topic, rt.Partitions = topic, parts
	req.Topics = append(req.Topics, rt)
	resp := request[*kmsg.AddPartitionsToTxnResponse](t, pinned(t, b, 24, 3), req)
	var codes []int16
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			codes = append(codes, p.ErrorCode)
		}
	}
	return codes
}

func endTxn(t *testing.T, cl *kgo.Client, id string, pid int64, epoch int16, commit bool) int16 {
	t.Helper()
	req := kmsg.NewPtrEndTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = id, pid, epoch, commit
	return request[*kmsg.EndTxnResponse](t, cl, req).ErrorCode
}

// produceTxnBatch produces one transactional batch and returns its code.
func produceTxnBatch(t *testing.T, cl *kgo.Client, id, topic string, partition int32, pid int64, epoch int16, seq int32, vals ...string) int16 {
	t.Helper()
	bb := record.NewBuilder(record.CodecNone, time.Now().UnixMilli())
	bb.ProducerID, bb.ProducerEpoch, bb.BaseSequence, bb.Transactional = pid, epoch, seq, true
	for _, v := range vals {
		bb.Add(record.Record{Value: []byte(v)})
	}
	batch, err := bb.Build()
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrProduceRequest()
	req.TransactionID, req.Acks, req.TimeoutMillis = kmsg.StringPtr(id), -1, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = partition, batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := request[*kmsg.ProduceResponse](t, cl, req)
	return resp.Topics[0].Partitions[0].ErrorCode
}

// TestTransactionBadInputGetsKafkaCodes sends requests a broken or stale
// client could send, and checks Kafka's answer to each.
// Reference: Kafka TransactionCoordinator, KafkaApis (KIP-588 for the
// PRODUCER_FENCED versions).
func TestTransactionBadInputGetsKafkaCodes(t *testing.T) {
	t.Parallel()
	b := testutil.StartBroker(t)
	testutil.CreateTopic(t, b.Admin(), "txb", 2)
	// EndTxn v5 and Produce v12 are transaction version 2; this is the
	// version 1 protocol, and TestTransactionVersion2 is the other.
	cl := pinned(t, b, 26, 4, 0, 11)
	pid, epoch := initTxnID(t, cl, "txb-1", 60000)
	is := func(what string, got int16, want *kerr.Error) {
		t.Helper()
		if got != want.Code {
			t.Errorf("%s: %v, want %s", what, kerr.ErrorForCode(got), want.Message)
		}
	}
	initCode := func(id string, timeout int32) int16 {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID, req.TransactionTimeoutMillis = kmsg.StringPtr(id), timeout
		return direct[*kmsg.InitProducerIDResponse](t, cl, req).ErrorCode
	}
	is("init with timeout above transaction.max.timeout.ms", initCode("txb-1", 900001), kerr.InvalidTransactionTimeout)
	is("init with timeout 0", initCode("txb-1", 0), kerr.InvalidTransactionTimeout)
	is("init with an empty transactional id", initCode("", 1000), kerr.InvalidRequest)
	is("end of an unknown transactional id", endTxn(t, cl, "txb-unknown", pid, epoch, true), kerr.InvalidProducerIDMapping)
	is("commit with no transaction", endTxn(t, cl, "txb-1", pid, epoch, true), kerr.InvalidTxnState)
	is("end with a wrong producer id", endTxn(t, cl, "txb-1", pid+1, epoch, false), kerr.InvalidProducerIDMapping)
	is("add with a wrong producer id", addPartitionsV3(t, b, "txb-1", pid+1, epoch, "txb", 0)[0], kerr.InvalidProducerIDMapping)
	is("add with a newer epoch", addPartitionsV3(t, b, "txb-1", pid, epoch+1, "txb", 0)[0], kerr.ProducerFenced)
	codes := addPartitionsV3(t, b, "txb-1", pid, epoch, "txb", 0, 7)
	is("add of an unknown partition", codes[1], kerr.UnknownTopicOrPartition)
	is("add beside an unknown partition", codes[0], kerr.OperationNotAttempted)
	// KIP-890 part 1: a transactional batch for a partition not in the
	// transaction is refused and not written.
	is("transactional produce before AddPartitionsToTxn", produceTxnBatch(t, cl, "txb-1", "txb", 0, pid, epoch, 0, "x"), kerr.InvalidTxnState)
	if off, _, _ := listOffset(t, cl, "txb", 0, -1); off != 0 {
		t.Errorf("refused batch written: log end %d", off)
	}
	is("add", addPartitionsV3(t, b, "txb-1", pid, epoch, "txb", 0)[0], nil0)
	is("transactional produce after AddPartitionsToTxn", produceTxnBatch(t, cl, "txb-1", "txb", 0, pid, epoch, 0, "y"), nil0)
	is("commit", endTxn(t, cl, "txb-1", pid, epoch, true), nil0)
	// A retry while the markers are written gets CONCURRENT_TRANSACTIONS,
	// which clients retry; once complete, no error.
	retryConcurrent(t, "retried commit", func() int16 { return endTxn(t, cl, "txb-1", pid, epoch, true) })
	is("abort after the commit", endTxn(t, cl, "txb-1", pid, epoch, false), kerr.InvalidTxnState)

	// A second initialisation bumps the epoch: the old one is fenced,
	// answered PRODUCER_FENCED from EndTxn v2+ and INVALID_PRODUCER_EPOCH
	// before.
	retryConcurrent(t, "re-init", func() int16 { return initCode("txb-1", 60000) })
	is("end with the old epoch", endTxn(t, cl, "txb-1", pid, epoch, true), kerr.ProducerFenced)
	is("EndTxn v1 with the old epoch", endTxn(t, pinned(t, b, 26, 1), "txb-1", pid, epoch, true), kerr.InvalidProducerEpoch)
	is("add with the old epoch", addPartitionsV3(t, b, "txb-1", pid, epoch, "txb", 1)[0], kerr.ProducerFenced)
	is("produce with the old epoch", produceTxnBatch(t, cl, "txb-1", "txb", 1, pid, epoch, 0, "z"), kerr.InvalidProducerEpoch)

	// FindCoordinator: an empty transactional id, an unknown key type.
	findCode := func(typ int8, key string) int16 {
		fc := kmsg.NewPtrFindCoordinatorRequest()
		fc.CoordinatorType, fc.CoordinatorKey, fc.CoordinatorKeys = typ, key, []string{key}
		r := direct[*kmsg.FindCoordinatorResponse](t, cl, fc)
		if len(r.Coordinators) == 1 {
			return r.Coordinators[0].ErrorCode
		}
		return r.ErrorCode
	}
	is("FindCoordinator for an empty transactional id", findCode(1, ""), kerr.InvalidRequest)
	is("FindCoordinator of key type 5", findCode(5, "x"), kerr.InvalidRequest)
}

// retryConcurrent calls f until it answers something other than
// CONCURRENT_TRANSACTIONS, and fails unless that is no error.
func retryConcurrent(t *testing.T, what string, f func() int16) {
	t.Helper()
	testutil.Eventually(t, 10*time.Second, func() error {
		switch c := f(); c {
		case 0:
			return nil
		case kerr.ConcurrentTransactions.Code:
			return kerr.ConcurrentTransactions
		default:
			t.Fatalf("%s: %v", what, kerr.ErrorForCode(c))
		}
		return nil
	})
}

// nil0 stands for "no error" in TestTransactionBadInputGetsKafkaCodes.
var nil0 = &kerr.Error{Message: "no error", Code: 0}

func TestDescribeAndListTransactions(t *testing.T) {
	t.Parallel()
	b := testutil.StartBroker(t)
	testutil.CreateTopic(t, b.Admin(), "txd", 2)
	ctx := ctxT(t, 60*time.Second)
	done := txnProducer(t, []string{b.Addr()}, "txd-done", "txd")
	runTxn(t, done, kgo.TryCommit, "v")
	open := txnProducer(t, []string{b.Addr()}, "txd-open", "txd", kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := open.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := open.ProduceSync(ctx, &kgo.Record{Value: []byte("w"), Partition: 1}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	adm := b.Admin()
	d, err := adm.DescribeTransactions(ctx, "txd-done", "txd-open", "txd-none")
	if err != nil {
		t.Fatal(err)
	}
	if s := d["txd-done"]; s.State != "CompleteCommit" || s.Err != nil || s.TimeoutMillis <= 0 {
		t.Errorf("txd-done: %+v", s)
	}
	if s := d["txd-open"]; s.State != "Ongoing" || s.StartTimestamp <= 0 || len(s.Topics["txd"]) != 1 {
		t.Errorf("txd-open: %+v", s)
	} else if _, ok := s.Topics["txd"][1]; !ok {
		t.Errorf("txd-open partitions %v, want txd-1", s.Topics)
	}
	if s := d["txd-none"]; !errors.Is(s.Err, kerr.TransactionalIDNotFound) {
		t.Errorf("txd-none: %v, want TRANSACTIONAL_ID_NOT_FOUND", s.Err)
	}
	all, err := adm.ListTransactions(ctx, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if all["txd-done"].State != "CompleteCommit" || all["txd-open"].State != "Ongoing" {
		t.Errorf("listed %+v", all)
	}
	ongoing, err := adm.ListTransactions(ctx, nil, []string{"Ongoing"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := ongoing["txd-done"]; ok || len(ongoing) != 1 {
		t.Errorf("listed Ongoing: %+v", ongoing)
	}
	byPID, err := adm.ListTransactions(ctx, []int64{all["txd-done"].ProducerID}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(byPID) != 1 || byPID["txd-done"].TxnID != "txd-done" {
		t.Errorf("listed by producer id: %+v", byPID)
	}
	// KIP-994: running longer than an hour: none.
	lt := kmsg.NewPtrListTransactionsRequest()
	lt.DurationFilterMillis = time.Hour.Milliseconds()
	if r := request[*kmsg.ListTransactionsResponse](t, b.Client(), lt); r.ErrorCode != 0 || len(r.TransactionStates) != 0 {
		t.Errorf("duration filter: %+v", r)
	}
	lt = kmsg.NewPtrListTransactionsRequest()
	lt.StateFilters = []string{"Bogus"}
	if r := request[*kmsg.ListTransactionsResponse](t, b.Client(), lt); len(r.UnknownStateFilters) != 1 || len(r.TransactionStates) != 0 {
		t.Errorf("unknown state filter: %+v", r)
	}
	if err := open.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatal(err)
	}
}

// Reference: KIP-890 part 2: EndTxn v5 bumps the epoch when the
// transaction ends and answers with it; a retry with the epoch before the
// bump is answered the same, and the old epoch is fenced.
func TestEndTxnV5ReturnsBumpedEpoch(t *testing.T) {
	t.Parallel()
	b := testutil.StartBroker(t)
	testutil.CreateTopic(t, b.Admin(), "tx5", 1)
	cl := b.Client(kgo.RequestRetries(0))
	pid, epoch := initTxnID(t, cl, "tx5-1", 60000)
	if c := addPartitionsV3(t, b, "tx5-1", pid, epoch, "tx5", 0)[0]; c != 0 {
		t.Fatalf("add: %v", kerr.ErrorForCode(c))
	}
	end := func() *kmsg.EndTxnResponse {
		req := kmsg.NewPtrEndTxnRequest()
		req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = "tx5-1", pid, epoch, true
		return request[*kmsg.EndTxnResponse](t, cl, req)
	}
	check := func(what string, r *kmsg.EndTxnResponse) {
		if r.Version < 5 || r.ErrorCode != 0 || r.ProducerID != pid || r.ProducerEpoch != epoch+1 {
			t.Fatalf("%s: v%d %v %d/%d, want %d/%d", what, r.Version, kerr.ErrorForCode(r.ErrorCode), r.ProducerID, r.ProducerEpoch, pid, epoch+1)
		}
	}
	check("end", end())
	var r *kmsg.EndTxnResponse
	retryConcurrent(t, "retried end", func() int16 { r = end(); return r.ErrorCode })
	check("retried end", r)
	if c := addPartitionsV3(t, b, "tx5-1", pid, epoch, "tx5", 0)[0]; c != kerr.ProducerFenced.Code {
		t.Fatalf("add with the epoch before the bump: %v, want PRODUCER_FENCED", kerr.ErrorForCode(c))
	}
}

// Reference: Kafka TransactionStateManager.removeExpiredTransactionalIds:
// an id idle for transactional.id.expiration.ms is removed with a
// tombstone, and stays removed after the coordinator restarts.
func TestTransactionalIDExpiresAndStaysExpired(t *testing.T) {
	t.Parallel()
	b := testutil.StartBroker(t, "transactional.id.expiration.ms=500",
		"transaction.remove.expired.transaction.cleanup.interval.ms=100")
	testutil.CreateTopic(t, b.Admin(), "txe", 1)
	p := txnProducer(t, []string{b.Addr()}, "txe-1", "txe")
	runTxn(t, p, kgo.TryCommit, "v")
	notFound := func() error {
		d, err := b.Admin().DescribeTransactions(ctxT(t, 5*time.Second), "txe-1")
		if err != nil {
			return err
		}
		if s := d["txe-1"]; !errors.Is(s.Err, kerr.TransactionalIDNotFound) {
			return testutil.Errorf("described %+v, want TRANSACTIONAL_ID_NOT_FOUND", s)
		}
		return nil
	}
	testutil.Eventually(t, 20*time.Second, notFound)
	b.Restart()
	testutil.Eventually(t, 20*time.Second, notFound)
}

// WriteTxnMarkers for a partition that does not exist gets
// UNKNOWN_TOPIC_OR_PARTITION, and nothing is written.
func TestWriteTxnMarkersUnknownPartition(t *testing.T) {
	t.Parallel()
	b := testutil.StartBroker(t)
	testutil.CreateTopic(t, b.Admin(), "wtu", 1)
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	mk := kmsg.NewWriteTxnMarkersRequestMarker()
	mk.ProducerID, mk.ProducerEpoch, mk.Committed = 1, 0, true
	for _, tp := range []struct {
		topic string
		part  int32
	}{{"wtu", 5}, {"wtu-none", 0}, {"wtu", -1}} {
		rt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
		rt.Topic, rt.Partitions = tp.topic, []int32{tp.part}
		mk.Topics = append(mk.Topics, rt)
	}
	req.Markers = append(req.Markers, mk)
	resp := direct[*kmsg.WriteTxnMarkersResponse](t, b.Client(), req)
	for _, rt := range resp.Markers[0].Topics {
		for _, rp := range rt.Partitions {
			if rp.ErrorCode != kerr.UnknownTopicOrPartition.Code {
				t.Errorf("%s-%d: %v, want UNKNOWN_TOPIC_OR_PARTITION", rt.Topic, rp.Partition, kerr.ErrorForCode(rp.ErrorCode))
			}
		}
	}
	if off, _, _ := listOffset(t, b.Client(), "wtu", 0, -1); off != 0 {
		t.Errorf("log end %d, want 0", off)
	}
}
