package broker_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"samsa/internal/testutil"
)

// TestConsumerDetectsTruncationByUncleanElection is TESTPLAN S-08: a
// consumer has read records that only the leader held (it led alone, with
// min.insync.replicas=1), the leader dies, and an operator forces an
// unclean election of an out-of-sync replica. The consumer must not skip
// the new leader's records nor read old ones again: franz-go validates its
// position with OffsetForLeaderEpoch (KIP-320), reports the lost range as
// ErrDataLoss and goes on from where the logs diverged. The old leader,
// back as a follower, removes the lost offsets and counts them.
func TestConsumerDetectsTruncationByUncleanElection(t *testing.T) {
	const topic = "s08"
	c := faultCluster(t, "auto.leader.rebalance.enable=false")
	createReplicated(t, c, topic, 1, "min.insync.replicas=1")
	leader := c.Leader(topic, 0)
	fs := othersThan(leader)
	stale, other := fs[0], fs[1]
	addr := waitLeading(t, c, topic, 0, leader)
	wantProduce(t, "w", produceRawAcks(t, addr, -1, topic, 0, plainBatch(t, "w", 3)), 0, 0)
	c.Kill(int(stale))
	waitISR(t, c, topic, 0, strings.Join(sortedIDs(leader, other), " "))
	wantProduce(t, "x", produceRawAcks(t, addr, -1, topic, 0, plainBatch(t, "x", 3)), 0, 3)
	c.Kill(int(other))
	waitISR(t, c, topic, 0, itoa(leader))
	wantProduce(t, "y", produceRawAcks(t, addr, -1, topic, 0, plainBatch(t, "y", 3)), 0, 6)

	// Seeded with every broker: the two followers are down now, and the
	// client must find the new leader once the old one is gone.
	seeds := []string{c.Brokers[0].Addr(), c.Brokers[1].Addr(), c.Brokers[2].Addr()}
	cons := c.Client(kgo.SeedBrokers(seeds...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(0)}}),
		kgo.MetadataMinAge(50*time.Millisecond),
		kgo.FetchMaxWait(100*time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }))
	var got []*kgo.Record
	var lost []*kgo.ErrDataLoss
	poll := func(until func() bool, what string) {
		t.Helper()
		ctx := ctxT(t, 60*time.Second)
		for !until() {
			fetches := cons.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("%s: timed out with %q and data loss %v", what, values(got), lost)
			}
			fetches.EachError(func(_ string, _ int32, err error) {
				var dl *kgo.ErrDataLoss
				if errors.As(err, &dl) {
					lost = append(lost, dl)
				}
			})
			got = append(got, fetches.Records()...)
		}
	}
	poll(func() bool { return len(got) >= 9 }, "read w x y")
	before := append(append(tagged("w", 3), tagged("x", 3)...), tagged("y", 3)...)
	if vs := values(got); !slices.Equal(vs, before) {
		t.Fatalf("read %q from the leader, want %q", vs, before)
	}

	// The leader dies; the replica that has only w is started and an
	// operator forces it to lead (unclean election).
	c.Kill(int(leader))
	c.Start(int(stale))
	adm := c.Admin()
	testutil.Eventually(t, 30*time.Second, func() error {
		res, err := adm.ElectLeaders(ctxT(t, 10*time.Second), kadm.ElectLiveReplica, kadm.TopicsSet{topic: {0: {}}})
		if err != nil {
			return err
		}
		for _, ps := range res {
			for _, r := range ps {
				if r.Err != nil {
					return fmt.Errorf("unclean election of %s-%d: %w", r.Topic, r.Partition, r.Err)
				}
			}
		}
		return nil
	})
	staleAddr := waitLeading(t, c, topic, 0, stale)
	wantProduce(t, "z", produceRawAcks(t, staleAddr, -1, topic, 0, plainBatch(t, "z", 4)), 0, 3)

	poll(func() bool { return len(got) >= 13 || len(got) > 9 && string(got[len(got)-1].Value) == "z-3" }, "read z after the unclean election")
	if len(lost) != 1 || lost[0].ConsumedTo != 9 || lost[0].ResetTo != 3 {
		t.Fatalf("data loss reported %v, want one report: consumed to 9, reset to 3", lost)
	}
	after := got[9:]
	if vs := values(after); !slices.Equal(vs, tagged("z", 4)) {
		t.Fatalf("read %q after the unclean election, want %q (no skip, no re-read)", vs, tagged("z", 4))
	}
	for i, r := range after {
		if r.Offset != int64(3+i) {
			t.Fatalf("record %q at offset %d, want %d", r.Value, r.Offset, 3+i)
		}
	}

	// The old leader comes back as a follower: it removes x and y
	// (offsets 3-8, which the new leader never had) and counts them.
	c.Start(int(leader))
	waitISR(t, c, topic, 0, strings.Join(sortedIDs(leader, stale), " "))
	if n := c.Brokers[leader].Node.Broker().Replicas().TruncatedOffsets(); n != 6 {
		t.Fatalf("old leader truncated %d offsets, want 6", n)
	}
}
