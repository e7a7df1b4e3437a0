package broker_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"samsa/internal/group"
	"samsa/internal/testutil"
)

// TestTxnOffsetsSurviveCoordinatorFailover: a transaction's offsets
// pending on the coordinator stay pending on the replica that takes the
// group's __consumer_offsets partition over when the coordinator dies, and
// the COMMIT marker written there makes them committed; an earlier
// transaction committed before the failover stays committed.
func TestTxnOffsetsSurviveCoordinatorFailover(t *testing.T) {
	t.Parallel()
	const topic, groupID = "tfo", "tfo-group"
	c := faultCluster(t, "transaction.partition.verification.enable=false") // commits of producer ids with no transactional id
	createReplicated(t, c, topic, 2)
	part := group.Partition(groupID, 3) // offsets.topic.num.partitions=3
	// TxnOffsetCommit v4: the commits are of a producer id with no
	// transactional id behind it, which v5 would add to a transaction.
	vs := kversion.Stable()
	vs.SetMaxKeyVersion(28, 4)
	cl := c.Client(kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }), kgo.MaxVersions(vs))

	commit := func(pid int64, p int32, offset int64) {
		t.Helper()
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = "tfo-tid", groupID, pid, 0
		rt := kmsg.NewTxnOffsetCommitRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = p, offset, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		testutil.Eventually(t, 30*time.Second, func() error {
			resp, err := req.RequestWith(ctxT(t, 5*time.Second), cl)
			if err != nil {
				return err
			}
			return kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
		})
	}
	// marker writes pid's COMMIT to the group's partition on its leader.
	marker := func(pid int64) {
		t.Helper()
		req := kmsg.NewPtrWriteTxnMarkersRequest()
		m := kmsg.NewWriteTxnMarkersRequestMarker()
		m.ProducerID, m.ProducerEpoch, m.Committed = pid, 0, true
		mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
		mt.Topic, mt.Partitions = "__consumer_offsets", []int32{part}
		m.Topics = append(m.Topics, mt)
		req.Markers = append(req.Markers, m)
		testutil.Eventually(t, 30*time.Second, func() error {
			leader := c.Leader("__consumer_offsets", part)
			if leader < 0 {
				return fmt.Errorf("no leader of __consumer_offsets-%d", part)
			}
			resp, err := cl.Broker(int(leader)).Request(ctxT(t, 5*time.Second), req)
			if err != nil {
				return err
			}
			return kerr.ErrorForCode(resp.(*kmsg.WriteTxnMarkersResponse).Markers[0].Topics[0].Partitions[0].ErrorCode)
		})
	}
	// expect waits until a stable fetch answers want: an offset per
	// partition, -2 for UNSTABLE_OFFSET_COMMIT.
	expect := func(what string, want map[int32]int64) {
		t.Helper()
		req := kmsg.NewPtrOffsetFetchRequest()
		req.RequireStable = true
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = groupID
		rgt := kmsg.NewOffsetFetchRequestGroupTopic()
		rgt.Topic, rgt.Partitions = topic, []int32{0, 1}
		rg.Topics = append(rg.Topics, rgt)
		req.Groups = append(req.Groups, rg)
		testutil.Eventually(t, 30*time.Second, func() error {
			resp, err := req.RequestWith(ctxT(t, 5*time.Second), cl)
			if err != nil {
				return err
			}
			if len(resp.Groups) != 1 {
				return fmt.Errorf("%d groups", len(resp.Groups))
			}
			if err := kerr.ErrorForCode(resp.Groups[0].ErrorCode); err != nil {
				return err
			}
			for _, rt := range resp.Groups[0].Topics {
				for _, p := range rt.Partitions {
					w := want[p.Partition]
					if w == unstable && p.ErrorCode == kerr.UnstableOffsetCommit.Code {
						continue
					}
					if p.ErrorCode != 0 || p.Offset != w {
						return fmt.Errorf("%s: partition %d: offset %d, error %v; want %d", what, p.Partition, p.Offset, kerr.ErrorForCode(p.ErrorCode), w)
					}
				}
			}
			return nil
		})
	}

	commit(1, 1, 20)
	marker(1)
	commit(2, 0, 10)
	expect("before the failover", map[int32]int64{0: unstable, 1: 20})

	old := c.Leader("__consumer_offsets", part)
	c.Kill(int(old))
	testutil.Eventually(t, 30*time.Second, func() error {
		if l := c.Leader("__consumer_offsets", part); l < 0 || l == old {
			return fmt.Errorf("__consumer_offsets-%d leader is %d", part, l)
		}
		return nil
	})
	expect("after the failover", map[int32]int64{0: unstable, 1: 20})
	marker(2)
	expect("after the commit on the new coordinator", map[int32]int64{0: 10, 1: 20})
}
