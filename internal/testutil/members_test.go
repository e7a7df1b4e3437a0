package testutil

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestMemberClusterSurvivesLosingOneMember starts three brokers that embed
// the three members of one etcd cluster, creates a topic, stops one broker
// (and with it its etcd member), and checks that the other two still make
// metadata writes (a second topic) and see both topics.
func TestMemberClusterSurvivesLosingOneMember(t *testing.T) {
	// NB: an embedded member's peer server can hold a finished connection
	// for up to etcd's peer read timeout (5 s) after Close, because its
	// connection wrapper resets the read deadline that would end it; wait
	// that out before calling anything left a leak.
	t.Cleanup(func() {
		deadline := time.Now().Add(15 * time.Second)
		for {
			err := goleak.Find()
			if err == nil {
				return
			}
			if time.Now().After(deadline) {
				t.Error(err)
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	c := StartMemberCluster(t, 3, "default.replication.factor=1", "offsets.topic.num.partitions=1")
	// One etcd cluster: every broker sees every registration.
	Eventually(t, 10*time.Second, func() error {
		for i, b := range c.Brokers {
			if ids := b.Node.Image().BrokerIDs(); len(ids) != 3 {
				return fmt.Errorf("broker %d sees brokers %v", i, ids)
			}
		}
		return nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.Admin().CreateTopic(ctx, 3, 1, nil, "before"); err != nil {
		t.Fatal(err)
	}

	c.Stop(2)
	adm := c.Admin() // seeded with brokers 0 and 1
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "after"); err != nil {
		t.Fatalf("create a topic with one etcd member down: %v", err)
	}
	Eventually(t, 10*time.Second, func() error {
		for i := 0; i < 2; i++ {
			img := c.Brokers[i].Node.Image()
			if len(img.Topics["before"].Partitions) != 3 || len(img.Topics["after"].Partitions) != 2 {
				return fmt.Errorf("broker %d sees topics %v", i, topicNames(img.Topics))
			}
			if ids := img.BrokerIDs(); len(ids) != 2 {
				return fmt.Errorf("broker %d sees brokers %v", i, ids)
			}
		}
		return nil
	})
	// The listing is served from the image of either remaining broker.
	td, err := adm.ListTopics(ctx, "after")
	if err != nil || td["after"].Err != nil || len(td["after"].Partitions) != 2 {
		t.Fatalf("list topics after: %v %+v", err, td)
	}

	// The stopped member rejoins from its data dir (etcd.initial.cluster
	// is ignored then) and catches up with what it missed.
	c.Start(2)
	Eventually(t, 20*time.Second, func() error {
		img := c.Brokers[2].Node.Image()
		if len(img.Topics["after"].Partitions) != 2 || len(img.BrokerIDs()) != 3 {
			return fmt.Errorf("restarted broker sees topics %v, brokers %v", topicNames(img.Topics), img.BrokerIDs())
		}
		return nil
	})
}

func topicNames[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
