package broker_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/testutil"
)

// TestElectLeadersPreferredMovesLeadershipBack kills the preferred leader
// of a partition, restarts it, and checks that a preferred election (and
// nothing else: automatic rebalancing is off) gives it the leadership back
// at a new leader epoch. Reference: KIP-183, KIP-460.
func TestElectLeadersPreferredMovesLeadershipBack(t *testing.T) {
	c := testutil.StartCluster(t, 3,
		"default.replication.factor=3",
		"min.insync.replicas=2",
		"replica.lag.time.max.ms=3000",
		"auto.leader.rebalance.enable=false",
		"offsets.topic.num.partitions=1",
	)
	adm := c.Admin()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 1, 3, nil, "el"); err != nil {
		t.Fatal(err)
	}
	waitFullISR(t, c, "el", 1)
	pref := c.Brokers[0].Node.Image().Topics["el"].Replicas[0][0]
	if l := c.Leader("el", 0); l != pref {
		t.Fatalf("leader %d, want the preferred replica %d", l, pref)
	}
	one := kadm.TopicsSet{"el": {0: {}}}

	res := electOne(t, adm, kadm.ElectPreferredReplica, one)
	if !errors.Is(res.Err, kerr.ElectionNotNeeded) {
		t.Fatalf("preferred election with the preferred leader: %v, want ELECTION_NOT_NEEDED", res.Err)
	}
	res = electOne(t, adm, kadm.ElectLiveReplica, one)
	if !errors.Is(res.Err, kerr.ElectionNotNeeded) {
		t.Fatalf("unclean election with a live leader: %v, want ELECTION_NOT_NEEDED", res.Err)
	}

	c.Kill(int(pref))
	testutil.Eventually(t, 20*time.Second, func() error {
		if l := c.Leader("el", 0); l < 0 || l == pref {
			return fmt.Errorf("leader is %d", l)
		}
		return nil
	})
	adm = c.Admin() // seeded with the brokers still running
	res = electOne(t, adm, kadm.ElectPreferredReplica, one)
	if !errors.Is(res.Err, kerr.PreferredLeaderNotAvailable) {
		t.Fatalf("preferred election with the preferred replica down: %v, want PREFERRED_LEADER_NOT_AVAILABLE", res.Err)
	}

	c.Start(int(pref))
	waitFullISR(t, c, "el", 1)
	before, _ := c.Brokers[pref].Node.Image().Partition("el", 0)
	if before.Leader == pref {
		t.Fatalf("the restarted broker %d leads already without an election", pref)
	}
	res = electOne(t, adm, kadm.ElectPreferredReplica, one)
	if res.Err != nil {
		t.Fatalf("preferred election after restart: %v (%s)", res.Err, res.ErrMessage)
	}
	// The answering broker waited for its own image; every broker sees the
	// new leader soon after.
	testutil.Eventually(t, 10*time.Second, func() error {
		for i, b := range c.Brokers {
			st, _ := b.Node.Image().Partition("el", 0)
			if st.Leader != pref || st.LeaderEpoch != before.LeaderEpoch+1 {
				return fmt.Errorf("broker %d sees leader %d epoch %d, want %d epoch %d",
					i, st.Leader, st.LeaderEpoch, pref, before.LeaderEpoch+1)
			}
		}
		return nil
	})
	// Clients follow: a produce goes to the restored leader.
	produceAcked(t, c.Client(), "el", "x", 5)
}

// TestElectLeadersErrors checks the answers for unknown partitions, a null
// topic list and an unknown election type.
func TestElectLeadersErrors(t *testing.T) {
	c := testutil.StartCluster(t, 2,
		"default.replication.factor=2",
		"auto.leader.rebalance.enable=false",
		"offsets.topic.num.partitions=1",
	)
	adm := c.Admin()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 2, 2, nil, "ee"); err != nil {
		t.Fatal(err)
	}
	res, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{"ee": {5: {}}, "missing": {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tp := range []struct {
		topic string
		p     int32
	}{{"ee", 5}, {"missing", 0}} {
		if r := res[tp.topic][tp.p]; !errors.Is(r.Err, kerr.UnknownTopicOrPartition) {
			t.Fatalf("%s-%d: %v, want UNKNOWN_TOPIC_OR_PARTITION", tp.topic, tp.p, r.Err)
		}
	}

	// Every partition is led by its preferred replica: with a null topic
	// list, nothing needed an election and the response lists nothing.
	req := kmsg.NewPtrElectLeadersRequest()
	req.TimeoutMillis = 10000
	cl := c.Client()
	resp := request[*kmsg.ElectLeadersResponse](t, cl, req)
	if resp.ErrorCode != 0 || len(resp.Topics) != 0 {
		t.Fatalf("null topics: error %d, topics %+v; want none", resp.ErrorCode, resp.Topics)
	}

	req.ElectionType = 7
	resp = request[*kmsg.ElectLeadersResponse](t, cl, req)
	if resp.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("election type 7: error %d, want INVALID_REQUEST", resp.ErrorCode)
	}
}

func electOne(t *testing.T, adm *kadm.Client, how kadm.ElectLeadersHow, s kadm.TopicsSet) kadm.ElectLeadersResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := adm.ElectLeaders(ctx, how, s)
	if err != nil {
		t.Fatalf("elect leaders: %v", err)
	}
	for topic, ps := range s {
		for p := range ps {
			r, ok := res[topic][p]
			if !ok {
				t.Fatalf("no result for %s-%d in %+v", topic, p, res)
			}
			return r
		}
	}
	t.Fatal("empty topic set")
	return kadm.ElectLeadersResult{}
}
