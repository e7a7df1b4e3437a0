package chaos

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestS16MembershipChanges is TESTPLAN S-16: during the acks=all
// workload a new broker joins, every partition is reassigned from the
// oldest broker to it (KIP-455), the adding and the removing replica are
// each killed with SIGKILL while the partitions move and started again,
// and once every partition is at its target the old broker is
// decommissioned (SIGTERM, exit 0, nothing led or hosted). The long
// profile repeats this with the next broker for 5 min, so the cluster
// ends on none of the brokers it started with. Afterwards nothing
// acknowledged is lost, duplicated or stale.
func TestS16MembershipChanges(t *testing.T) {
	const (
		topic      = "s16"
		partitions = 5
	)
	runFor := pick(0, 5*time.Minute)
	c := startCluster(t)
	c.createTopic(topic, partitions)
	w := startWorkload(t, c, topic, partitions)
	w.waitAcks(0, 50, 30*time.Second)

	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()

	began := time.Now()
	live := []*broker{c.brokers[0], c.brokers[1], c.brokers[2]}
	for round := 1; round == 1 || time.Since(began) < runFor; round++ {
		old := live[0]
		// A new broker joins.
		nb := c.startBroker(len(c.brokers), nil)
		for _, b := range append(slices.Clone(live), nb) {
			c.waitReady(b, len(live)+1)
		}

		// Every partition moves from old to nb, keeping its order.
		target := kadm.AlterPartitionAssignmentsReq{}
		meta, err := adm.Metadata(ctx, topic)
		if err != nil {
			t.Fatalf("round %d: metadata: %v", round, err)
		}
		for _, p := range meta.Topics[topic].Partitions {
			reps := slices.Clone(p.Replicas)
			i := slices.Index(reps, old.id)
			if i < 0 {
				t.Fatalf("round %d: %s-%d replicas %v lack broker %d", round, topic, p.Partition, reps, old.id)
			}
			reps[i] = nb.id
			target.Assign(topic, p.Partition, reps)
		}
		movedAt := time.Now()
		resps, err := adm.AlterPartitionAssignments(ctx, target)
		if err == nil {
			err = resps.Error()
		}
		if err != nil {
			t.Fatalf("round %d: reassign: %v", round, err)
		}

		// kill -9 the adding replica, then the removing one, while the
		// partitions move.
		for _, victim := range []*broker{nb, old} {
			moving := inProgress(t, adm, topic, partitions)
			victim.kill()
			time.Sleep(2 * time.Second)
			victim.start()
			c.waitReady(victim, len(live)+1)
			t.Logf("round %d: broker %d killed with %d partitions still moving, back after %s",
				round, victim.id, moving, time.Since(movedAt).Round(time.Millisecond))
		}

		// Every partition reaches its target with a full ISR.
		waitFor(t, 2*time.Minute, func() error {
			if n := inProgress(t, adm, topic, partitions); n != 0 {
				return fmt.Errorf("%d partitions still moving", n)
			}
			meta, err := adm.Metadata(ctx, topic)
			if err != nil {
				return err
			}
			for _, p := range meta.Topics[topic].Partitions {
				want := target[topic][p.Partition]
				if !slices.Equal(p.Replicas, want) {
					return fmt.Errorf("%s-%d replicas %v, want %v", topic, p.Partition, p.Replicas, want)
				}
				st, err := c.state(topic, p.Partition)
				if err != nil {
					return err
				}
				if st.Leader < 0 || len(st.ISR) != len(want) || st.inISR(old.id) {
					return fmt.Errorf("%s-%d: %v", topic, p.Partition, st)
				}
			}
			return nil
		})
		t.Logf("round %d: every partition moved from broker %d to broker %d in %s", round, old.id, nb.id,
			time.Since(movedAt).Round(time.Millisecond))

		// The old broker deletes the replicas it no longer holds.
		waitFor(t, 30*time.Second, func() error {
			dirs, _ := filepath.Glob(filepath.Join(old.dir, "data", topic+"-*"))
			if len(dirs) > 0 {
				return fmt.Errorf("broker %d still holds %v", old.id, dirs)
			}
			return nil
		})

		// Decommission it.
		old.signal(syscall.SIGTERM)
		st, ok := old.waitExit(40 * time.Second)
		if !ok {
			t.Fatalf("round %d: broker %d still running 40 s after SIGTERM", round, old.id)
		}
		if st.ExitCode() != 0 {
			t.Errorf("round %d: broker %d exited with %v", round, old.id, st)
		}
		live = append(live[1:], nb)
		for p := range int32(partitions) {
			w.waitAcks(p, 20, 30*time.Second)
		}
	}
	w.stop(30 * time.Second)
	r := w.check(c)
	ids := make([]string, len(live))
	for i, b := range live {
		ids[i] = fmt.Sprint(b.id)
	}
	t.Logf("S-16: cluster ended on brokers %s after %s; %v", strings.Join(ids, ", "), time.Since(began).Round(time.Second), r)
}

// inProgress is the number of partitions of topic with a reassignment in
// progress, or -1 if the brokers could not be asked.
func inProgress(t *testing.T, adm *kadm.Client, topic string, partitions int32) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	set := kadm.TopicsSet{}
	for p := range partitions {
		set.Add(topic, p)
	}
	resps, err := adm.ListPartitionReassignments(ctx, set)
	if err != nil {
		t.Logf("list reassignments: %v", err)
		return -1
	}
	n := 0
	resps.Each(func(r kadm.ListPartitionReassignmentsResponse) {
		if len(r.AddingReplicas) > 0 || len(r.RemovingReplicas) > 0 {
			n++
		}
	})
	return n
}
