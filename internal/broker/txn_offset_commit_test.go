package broker_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"samsa/internal/broker"
	"samsa/internal/group"
	"samsa/internal/testutil"
)

// txnOffsets drives one group's transactional offsets with raw requests.
type txnOffsets struct {
	t     *testing.T
	cl    *kgo.Client
	group string
	topic string
	// part is the group's __consumer_offsets partition.
	part int32
}

// unverifiedOffsetsConfig is groupBrokerConfig without KIP-890
// verification: these tests commit offsets of producer ids that no
// transactional id holds (the markers come from WriteTxnMarkers), which a
// verifying coordinator refuses (TestTxnOffsetCommitVerifiedWithCoordinator).
var unverifiedOffsetsConfig = append(slices.Clone(groupBrokerConfig), "transaction.partition.verification.enable=false")

func newTxnOffsets(t *testing.T, b *testutil.Broker, groupID, topic string) *txnOffsets {
	t.Helper()
	testutil.CreateTopic(t, b.Admin(), topic, 2)
	// TxnOffsetCommit v4: the version 1 protocol, where a commit does not
	// add the group's partition to the transaction (v5 does, see
	// TestTransactionVersion2OffsetCommitAddsPartition).
	x := &txnOffsets{t: t, cl: pinned(t, b, 28, 4), group: groupID, topic: topic, part: group.Partition(groupID, 4)}
	x.waitCoordinator()
	return x
}

// waitCoordinator waits until the group's coordinator serves it. The
// client sends the newest versions both sides know (FindCoordinator v4,
// OffsetFetch v9).
func (x *txnOffsets) waitCoordinator() {
	x.t.Helper()
	testutil.Eventually(x.t, 30*time.Second, func() error {
		fc := kmsg.NewPtrFindCoordinatorRequest()
		fc.CoordinatorKeys = []string{x.group}
		resp := direct[*kmsg.FindCoordinatorResponse](x.t, x.cl, fc)
		if len(resp.Coordinators) != 1 {
			return fmt.Errorf("FindCoordinator: %d coordinators", len(resp.Coordinators))
		}
		if c := resp.Coordinators[0].ErrorCode; c != 0 {
			return kerr.ErrorForCode(c)
		}
		_, err := x.fetchErr(false)
		return err
	})
}

// commit sends a TxnOffsetCommit (v4) of pid at epoch (generation -1, no
// member) and returns each partition's error code.
func (x *txnOffsets) commit(pid int64, epoch int16, offsets map[int32]int64) map[int32]int16 {
	x.t.Helper()
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = "txo-tid", x.group, pid, epoch
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic = x.topic
	for p, o := range offsets {
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata = p, o, 0, kmsg.StringPtr(fmt.Sprintf("txn-%d", o))
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	got := map[int32]int16{}
	for _, t := range direct[*kmsg.TxnOffsetCommitResponse](x.t, x.cl, req).Topics {
		for _, p := range t.Partitions {
			got[p.Partition] = p.ErrorCode
		}
	}
	return got
}

// mustCommit is commit that fails the test on any error.
func (x *txnOffsets) mustCommit(pid int64, epoch int16, offsets map[int32]int64) {
	x.t.Helper()
	for p, c := range x.commit(pid, epoch, offsets) {
		if c != 0 {
			x.t.Fatalf("TxnOffsetCommit of partition %d: %v", p, kerr.ErrorForCode(c))
		}
	}
}

// marker writes pid's COMMIT or ABORT marker to the group's partition
// with WriteTxnMarkers, as the transaction coordinator does.
func (x *txnOffsets) marker(pid int64, epoch int16, commit bool) {
	x.t.Helper()
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch = pid, epoch, commit, 0
	mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	mt.Topic, mt.Partitions = "__consumer_offsets", []int32{x.part}
	m.Topics = append(m.Topics, mt)
	req.Markers = append(req.Markers, m)
	testutil.Eventually(x.t, 30*time.Second, func() error {
		for _, rm := range direct[*kmsg.WriteTxnMarkersResponse](x.t, x.cl, req).Markers {
			for _, t := range rm.Topics {
				for _, p := range t.Partitions {
					if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
						return fmt.Errorf("marker: %w", err)
					}
				}
			}
		}
		return nil
	})
}

// fetched is one partition of an OffsetFetch answer.
type fetched struct {
	offset int64
	code   int16
}

func (f fetched) String() string {
	if f.code != 0 {
		return kerr.ErrorForCode(f.code).Error()
	}
	return fmt.Sprint(f.offset)
}

// fetchErr sends an OffsetFetch (v8+: groups) with RequireStable set to
// stable, for partitions 0 and 1.
func (x *txnOffsets) fetchErr(stable bool) (map[int32]fetched, error) {
	x.t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.RequireStable = stable
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group = x.group
	rt := kmsg.NewOffsetFetchRequestGroupTopic()
	rt.Topic, rt.Partitions = x.topic, []int32{0, 1}
	rg.Topics = append(rg.Topics, rt)
	req.Groups = append(req.Groups, rg)
	resp := direct[*kmsg.OffsetFetchResponse](x.t, x.cl, req)
	if len(resp.Groups) != 1 {
		return nil, fmt.Errorf("OffsetFetch: %d groups", len(resp.Groups))
	}
	if err := kerr.ErrorForCode(resp.Groups[0].ErrorCode); err != nil {
		return nil, err
	}
	got := map[int32]fetched{}
	for _, t := range resp.Groups[0].Topics {
		for _, p := range t.Partitions {
			got[p.Partition] = fetched{offset: p.Offset, code: p.ErrorCode}
		}
	}
	return got, nil
}

// fetch is fetchErr that fails the test on a group error.
func (x *txnOffsets) fetch(stable bool) map[int32]fetched {
	x.t.Helper()
	got, err := x.fetchErr(stable)
	if err != nil {
		x.t.Fatalf("OffsetFetch: %v", err)
	}
	return got
}

// expect checks a fetch: want maps each partition to an offset, or to -2
// for UNSTABLE_OFFSET_COMMIT.
func (x *txnOffsets) expect(what string, stable bool, want map[int32]int64) {
	x.t.Helper()
	got := x.fetch(stable)
	for p, w := range want {
		g := got[p]
		ok := g.code == 0 && g.offset == w
		if w == -2 {
			ok = g.code == kerr.UnstableOffsetCommit.Code
		}
		if !ok {
			wantS := fmt.Sprint(w)
			if w == -2 {
				wantS = "UNSTABLE_OFFSET_COMMIT"
			}
			x.t.Errorf("%s: partition %d: got %v, want %s", what, p, g, wantS)
		}
	}
}

const unstable = -2

// TestTxnOffsetCommitVisibleOnlyAfterCommitMarker: transactional offsets
// are pending until the producer's COMMIT marker reaches the group's
// partition, an ABORT drops them, and a restarted coordinator has exactly
// the committed offsets and the open transaction's pending ones.
// Reference: KIP-98 (transactional offsets), KIP-447 (require_stable).
func TestTxnOffsetCommitVisibleOnlyAfterCommitMarker(t *testing.T) {
	t.Parallel()
	b := testutil.StartBroker(t, unverifiedOffsetsConfig...)
	x := newTxnOffsets(t, b, "txo-group", "txo")
	const pid = 4000

	x.mustCommit(pid, 0, map[int32]int64{0: 10, 1: 20})
	x.expect("before the marker", false, map[int32]int64{0: -1, 1: -1})
	x.expect("before the marker, stable", true, map[int32]int64{0: unstable, 1: unstable})

	x.marker(pid, 0, true)
	x.expect("after COMMIT", true, map[int32]int64{0: 10, 1: 20})

	// An aborted transaction leaves the committed offsets.
	x.mustCommit(pid, 0, map[int32]int64{0: 30})
	x.marker(pid, 0, false)
	x.expect("after ABORT", true, map[int32]int64{0: 10, 1: 20})

	// A transaction open at the restart.
	x.mustCommit(pid, 0, map[int32]int64{1: 40})
	x.expect("open transaction", true, map[int32]int64{0: 10, 1: unstable})

	b.Restart()
	x.cl = b.Client()
	x.waitCoordinator()
	x.expect("after restart", false, map[int32]int64{0: 10, 1: 20})
	x.expect("after restart, stable", true, map[int32]int64{0: 10, 1: unstable})

	x.marker(pid, 0, true)
	x.expect("open transaction committed after restart", true, map[int32]int64{0: 10, 1: 40})

	b.Restart()
	x.cl = b.Client()
	x.waitCoordinator()
	x.expect("after second restart", true, map[int32]int64{0: 10, 1: 40})
}

// TestTxnOffsetCommitErrorCodes covers the request-level answers.
func TestTxnOffsetCommitErrorCodes(t *testing.T) {
	t.Parallel()
	b := testutil.StartBroker(t, unverifiedOffsetsConfig...)
	x := newTxnOffsets(t, b, "txo-codes", "txo-codes")

	// A partition the metadata does not know (Kafka checks it before the
	// coordinator).
	if got := x.commit(1, 0, map[int32]int64{0: 1, 7: 1}); got[0] != 0 || got[7] != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("unknown partition: %v, want partition 0 ok and 7 UNKNOWN_TOPIC_OR_PARTITION", got)
	}
	x.marker(1, 0, true)

	// A producer epoch older than the partition knows is refused.
	x.mustCommit(2, 3, map[int32]int64{0: 5})
	x.marker(2, 3, true)
	if got := x.commit(2, 2, map[int32]int64{0: 6}); got[0] != kerr.InvalidProducerEpoch.Code {
		t.Errorf("stale producer epoch: %v, want INVALID_PRODUCER_EPOCH", kerr.ErrorForCode(got[0]))
	}
	x.expect("after the stale commit", true, map[int32]int64{0: 5})

	// No producer id, or no epoch: refused before anything is written.
	if got := x.commit(-1, 0, map[int32]int64{0: 7}); got[0] != kerr.InvalidProducerIDMapping.Code {
		t.Errorf("producer id -1: %v, want INVALID_PRODUCER_ID_MAPPING", kerr.ErrorForCode(got[0]))
	}
	if got := x.commit(3, -1, map[int32]int64{0: 7}); got[0] != kerr.InvalidProducerEpoch.Code {
		t.Errorf("producer epoch -1: %v, want INVALID_PRODUCER_EPOCH", kerr.ErrorForCode(got[0]))
	}
	x.expect("after the refused commits", false, map[int32]int64{0: 5})

	// v3+ member checks: a generation for a group with no such member.
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = "txo-tid", "txo-nogroup", 9, 0
	req.MemberID, req.Generation = "m", 1
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic = x.topic
	rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	if c := direct[*kmsg.TxnOffsetCommitResponse](t, x.cl, req).Topics[0].Partitions[0].ErrorCode; c != kerr.IllegalGeneration.Code {
		t.Errorf("generation for an unknown group: %v, want ILLEGAL_GENERATION", kerr.ErrorForCode(c))
	}
	req.Group = x.group
	if c := direct[*kmsg.TxnOffsetCommitResponse](t, x.cl, req).Topics[0].Partitions[0].ErrorCode; c != kerr.UnknownMemberID.Code {
		t.Errorf("unknown member of a simple group: %v, want UNKNOWN_MEMBER_ID", kerr.ErrorForCode(c))
	}
}

// TestTxnOffsetCommitV2IgnoresMembership: TxnOffsetCommit v0-2 carries no
// member id or generation, so a commit into a group with live members is
// accepted; from v3 (KIP-447) the member is checked.
// Reference: Kafka ClassicGroup.validateOffsetCommit, isTransactional.
func TestTxnOffsetCommitV2IgnoresMembership(t *testing.T) {
	t.Parallel()
	b := testutil.StartBroker(t, unverifiedOffsetsConfig...)
	x := newTxnOffsets(t, b, "txo-v2", "txo-v2")
	member := b.Client(kgo.ConsumerGroup(x.group), kgo.ConsumeTopics(x.topic), kgo.DisableAutoCommit(), kgo.SessionTimeout(6*time.Second),
		kgo.HeartbeatInterval(200*time.Millisecond), kgo.FetchMaxWait(100*time.Millisecond))
	go member.PollFetches(ctxT(t, 30*time.Second))
	testutil.Eventually(t, 30*time.Second, func() error {
		gs, err := b.Admin().DescribeGroups(ctxT(t, 5*time.Second), x.group)
		if err != nil {
			return err
		}
		if g := gs[x.group]; g.State != "Stable" {
			return fmt.Errorf("group %s is %s", x.group, g.State)
		}
		return nil
	})

	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = "txo-tid", x.group, 5, 0
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic = x.topic
	rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	rp.Offset = 3
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)

	v2 := b.Client(kgo.MaxVersions(func() *kversion.Versions {
		v := kversion.Stable()
		v.SetMaxKeyVersion(req.Key(), 2)
		return v
	}()))
	if c := direct[*kmsg.TxnOffsetCommitResponse](t, v2, req).Topics[0].Partitions[0].ErrorCode; c != 0 {
		t.Errorf("v2 commit into a Stable group: %v, want accepted", kerr.ErrorForCode(c))
	}
	// The same request at v3+ names a member the group does not have.
	req.MemberID, req.Generation = "not-a-member", 1
	if c := direct[*kmsg.TxnOffsetCommitResponse](t, x.cl, req).Topics[0].Partitions[0].ErrorCode; c != kerr.UnknownMemberID.Code {
		t.Errorf("v3+ commit of an unknown member: %v, want UNKNOWN_MEMBER_ID", kerr.ErrorForCode(c))
	}
	x.marker(5, 0, true)
	x.expect("after the v2 commit's marker", true, map[int32]int64{0: 3})
}

// Reference: KIP-890 part 1 (Kafka verifies TxnOffsetCommit v0-4 with the
// transaction coordinator): a commit whose group partition is not in the
// producer's ongoing transaction, never added or added by a transaction
// that has ended, is refused, TRANSACTION_ABORTABLE from v4 and
// INVALID_TXN_STATE before, and writes nothing; after AddOffsetsToTxn it
// is accepted and counts once the transaction commits.
func TestTxnOffsetCommitVerifiedWithCoordinator(t *testing.T) {
	t.Parallel()
	b := testutil.StartBroker(t, groupBrokerConfig...)
	testutil.CreateTopic(t, b.Admin(), "txv-in", 1)
	cl := pinned(t, b, 28, 4, 26, 4)
	const id, groupID = "txv-id", "txv-group"
	pid, epoch := initTxnID(t, cl, id, 60000)
	commit := func(c *kgo.Client, offset int64) int16 {
		t.Helper()
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch, req.Generation = id, groupID, pid, epoch, -1
		rt := kmsg.NewTxnOffsetCommitRequestTopic()
		rt.Topic = "txv-in"
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = 0, offset, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		var code int16
		testutil.Eventually(t, 30*time.Second, func() error {
			resp, err := req.RequestWith(ctxT(t, 10*time.Second), c)
			if err != nil {
				return err
			}
			code = resp.Topics[0].Partitions[0].ErrorCode
			if code == kerr.CoordinatorLoadInProgress.Code || code == kerr.CoordinatorNotAvailable.Code || code == kerr.NotCoordinator.Code {
				return kerr.ErrorForCode(code)
			}
			return nil
		})
		return code
	}
	addOffsets := func() {
		t.Helper()
		req := kmsg.NewPtrAddOffsetsToTxnRequest()
		req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = id, pid, epoch, groupID
		if c := request[*kmsg.AddOffsetsToTxnResponse](t, cl, req).ErrorCode; c != 0 {
			t.Fatalf("AddOffsetsToTxn: %v", kerr.ErrorForCode(c))
		}
	}
	if c := commit(cl, 5); c != kerr.TransactionAbortable.Code {
		t.Errorf("v4 commit without AddOffsetsToTxn: %v, want TRANSACTION_ABORTABLE", kerr.ErrorForCode(c))
	}
	if c := commit(pinned(t, b, 28, 3), 5); c != kerr.InvalidTxnState.Code {
		t.Errorf("v3 commit without AddOffsetsToTxn: %v, want INVALID_TXN_STATE", kerr.ErrorForCode(c))
	}
	addOffsets()
	if c := commit(cl, 7); c != 0 {
		t.Fatalf("commit after AddOffsetsToTxn: %v", kerr.ErrorForCode(c))
	}
	retryConcurrent(t, "commit", func() int16 { return endTxn(t, cl, id, pid, epoch, true) })
	waitTxnState(t, cl, id, "CompleteCommit")
	// The transaction ended: a late commit of it is refused and changes
	// nothing.
	if c := commit(cl, 99); c != kerr.TransactionAbortable.Code {
		t.Errorf("v4 commit after the transaction committed: %v, want TRANSACTION_ABORTABLE", kerr.ErrorForCode(c))
	}
	testutil.Eventually(t, 10*time.Second, func() error {
		offs, err := b.Admin().FetchOffsets(ctxT(t, 5*time.Second), groupID)
		if err != nil {
			return err
		}
		if o, ok := offs.Lookup("txv-in", 0); !ok || o.At != 7 {
			return testutil.Errorf("committed offset %+v, want 7", o)
		}
		return nil
	})
}

// TestTxnOffsetCommitAbortedWhileVerified: a transaction (version 1, so
// its abort keeps the epoch) is aborted between the verification of its
// TxnOffsetCommit and the commit's append. The append is refused
// (COORDINATOR_NOT_AVAILABLE, and the retry TRANSACTION_ABORTABLE), and
// the producer's next transaction, committing another partition's offset,
// does not commit the aborted one's: appended after the ABORT marker,
// those offsets would have stayed pending for the next COMMIT, and a
// consumer taking over the partition would skip input whose output was
// aborted.
func TestTxnOffsetCommitAbortedWhileVerified(t *testing.T) {
	t.Parallel()
	b := testutil.StartBroker(t, groupBrokerConfig...)
	testutil.CreateTopic(t, b.Admin(), "txa-in", 2)
	cl := pinned(t, b, 28, 4, 26, 4)
	const id, groupID = "txa-id", "txa-group"
	pid, epoch := initTxnID(t, cl, id, 60000)
	addOffsets := func() {
		t.Helper()
		req := kmsg.NewPtrAddOffsetsToTxnRequest()
		req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = id, pid, epoch, groupID
		testutil.Eventually(t, 30*time.Second, func() error {
			return kerr.ErrorForCode(request[*kmsg.AddOffsetsToTxnResponse](t, cl, req).ErrorCode)
		})
	}
	commit := func(partition int32, offset int64) int16 {
		t.Helper()
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch, req.Generation = id, groupID, pid, epoch, -1
		rt := kmsg.NewTxnOffsetCommitRequestTopic()
		rt.Topic = "txa-in"
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = partition, offset, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctxT(t, 20*time.Second), cl)
		if err != nil {
			t.Fatalf("TxnOffsetCommit: %v", err)
		}
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	// The group's coordinator is loaded before the hook is set.
	addOffsets()
	if c := commit(1, 1); c != 0 {
		t.Fatalf("first commit: %v", kerr.ErrorForCode(c))
	}
	retryConcurrent(t, "commit", func() int16 { return endTxn(t, cl, id, pid, epoch, true) })
	waitTxnState(t, cl, id, "CompleteCommit")

	addOffsets()
	var once sync.Once
	restore := broker.SetTxnOffsetsVerifiedHook(func(g string) {
		if g != groupID {
			return
		}
		once.Do(func() {
			ab := pinned(t, b, 26, 4)
			retryConcurrent(t, "abort", func() int16 { return endTxn(t, ab, id, pid, epoch, false) })
			waitTxnState(t, ab, id, "CompleteAbort")
		})
	})
	defer restore()
	if c := commit(0, 10); c != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("commit whose transaction was aborted after its verification: %v, want COORDINATOR_NOT_AVAILABLE", kerr.ErrorForCode(c))
	}
	if c := commit(0, 10); c != kerr.TransactionAbortable.Code {
		t.Fatalf("its retry: %v, want TRANSACTION_ABORTABLE", kerr.ErrorForCode(c))
	}
	restore()

	addOffsets()
	if c := commit(1, 3); c != 0 {
		t.Fatalf("next transaction's commit: %v", kerr.ErrorForCode(c))
	}
	retryConcurrent(t, "commit", func() int16 { return endTxn(t, cl, id, pid, epoch, true) })
	waitTxnState(t, cl, id, "CompleteCommit")
	testutil.Eventually(t, 10*time.Second, func() error {
		offs, err := b.Admin().FetchOffsets(ctxT(t, 5*time.Second), groupID)
		if err != nil {
			return err
		}
		if o, ok := offs.Lookup("txa-in", 1); !ok || o.At != 3 {
			return testutil.Errorf("txa-in-1 committed %+v, want 3", o)
		}
		if o, ok := offs.Lookup("txa-in", 0); ok && o.At >= 0 {
			t.Fatalf("txa-in-0 committed at %d: the aborted transaction's offset", o.At)
		}
		return nil
	})
}
