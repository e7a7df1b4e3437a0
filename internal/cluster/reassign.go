package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/google/uuid"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Partition reassignment (KIP-455).
//
// A reassignment in progress is kept in two keys, changed together in one
// transaction that compares the mod revision of both:
//
//	topics/<name>          replicas[p] = target ++ (original - target)
//	partitions/<name>/<p>  adding_replicas  = target - original
//	                       removing_replicas = original - target
//
// so every broker in the union hosts the partition: the adding replicas
// start following the leader and join the ISR once caught up. The
// controller (Decide) then finishes it: replicas[p] = target, ISR = ISR ∩
// target, a leader outside the target hands over to the first target
// replica in the ISR, and the adding/removing lists are cleared. Brokers no
// longer in replicas[p] stop hosting the partition and delete its log.
//
// Every change of a partition's replica set bumps its LeaderEpoch, so the
// leader rebuilds its table of followers (a new replica can join the ISR)
// and a removed replica is fenced.

// reassignRetryWait bounds how long ReassignPartition waits for the image
// to move past a state whose compare-and-swap it lost.
const reassignRetryWait = 100 * time.Millisecond

// Reassignment is a partition reassignment in progress.
type Reassignment struct {
	Topic     string
	Partition int32
	// Replicas is the partition's current replica list (the union of the
	// original and target replicas).
	Replicas         []int32
	AddingReplicas   []int32
	RemovingReplicas []int32
}

// Reassignments returns the reassignments in progress, sorted by topic and
// partition. The caller must not modify the slices inside the result; they
// are shared with the image.
func (img *Image) Reassignments() []Reassignment {
	var out []Reassignment
	for name, t := range img.Topics {
		for p, st := range t.Partitions {
			if !st.Reassigning() || p >= len(t.Replicas) {
				continue
			}
			out = append(out, Reassignment{Topic: name, Partition: int32(p), Replicas: t.Replicas[p],
				AddingReplicas: st.AddingReplicas, RemovingReplicas: st.RemovingReplicas})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out
}

// PlanReassignment computes the change that starts, changes or cancels a
// reassignment of partition p of topic in img. target is the new replica
// list; nil cancels the reassignment in progress and restores the original
// replicas. It is a pure function of its inputs. changed is false when the
// partition already is as asked (no write is needed).
//
// A target replaces any reassignment in progress, relative to the original
// replicas: replicas being added that the new target drops leave at once.
// Errors: ErrUnknownPartition; ErrInvalidReplicaAssignment for an empty
// target, a duplicate, a broker that is neither registered nor already a
// replica, or a change that would leave no in-sync replica;
// ErrNoReassignmentInProgress for a cancel with nothing to cancel.
func PlanReassignment(img *Image, topic string, p int32, target []int32) (u PartitionUpdate, changed bool, err error) {
	t := img.Topics[topic]
	if t == nil || p < 0 || int(p) >= len(t.Partitions) || int(p) >= len(t.Replicas) {
		return PartitionUpdate{}, false, fmt.Errorf("%w: %s-%d", ErrUnknownPartition, topic, p)
	}
	st, cur := t.Partitions[p], t.Replicas[p]
	original := without(cur, st.AddingReplicas)
	var replicas, adding, removing []int32
	if target == nil {
		if !st.Reassigning() {
			return PartitionUpdate{}, false, fmt.Errorf("%w: %s-%d", ErrNoReassignmentInProgress, topic, p)
		}
		replicas = original
	} else {
		if len(target) == 0 {
			return PartitionUpdate{}, false, fmt.Errorf("%w: %s-%d: empty replica list", ErrInvalidReplicaAssignment, topic, p)
		}
		for i, r := range target {
			if slices.Contains(target[:i], r) {
				return PartitionUpdate{}, false, fmt.Errorf("%w: %s-%d: broker %d appears twice in %v", ErrInvalidReplicaAssignment, topic, p, r, target)
			}
			if _, ok := img.Brokers[r]; !ok && !slices.Contains(cur, r) {
				return PartitionUpdate{}, false, fmt.Errorf("%w: %s-%d: broker %d is not registered", ErrInvalidReplicaAssignment, topic, p, r)
			}
		}
		replicas = append(slices.Clone(target), without(original, target)...)
		adding = without(target, original)
		removing = without(original, target)
	}
	if slices.Equal(replicas, cur) && slices.Equal(adding, st.AddingReplicas) && slices.Equal(removing, st.RemovingReplicas) {
		return PartitionUpdate{}, false, nil
	}
	next := st
	next.AddingReplicas, next.RemovingReplicas = adding, removing
	next.ISR = intersect(st.ISR, replicas)
	if len(next.ISR) == 0 {
		return PartitionUpdate{}, false, fmt.Errorf("%w: %s-%d: no in-sync replica (ISR %v) would remain in %v",
			ErrInvalidReplicaAssignment, topic, p, st.ISR, replicas)
	}
	if !slices.Contains(replicas, next.Leader) {
		next.Leader = firstEligible(img, topic, p, replicas, next.ISR)
	}
	if next.Leader != st.Leader || !sameSet(replicas, cur) {
		next.LeaderEpoch++
		next.LeaderIncarnation = img.Brokers[next.Leader].Incarnation
	}
	next.PartitionEpoch++
	return PartitionUpdate{Topic: topic, Partition: p, State: next, Replicas: replicas, TopicRevision: t.ModRevision}, true, nil
}

// completeReassignment returns the change that finishes the reassignment
// of partition p of t, if one is in progress and can finish: every adding
// replica is in the ISR, an in-sync target replica remains, and a leader
// that is being removed has an eligible in-sync target replica to hand
// over to.
func completeReassignment(img *Image, t *Topic, p int) (PartitionUpdate, bool) {
	st, cur := t.Partitions[p], t.Replicas[p]
	if !st.Reassigning() {
		return PartitionUpdate{}, false
	}
	for _, r := range st.AddingReplicas {
		if !slices.Contains(st.ISR, r) {
			return PartitionUpdate{}, false
		}
	}
	target := without(cur, st.RemovingReplicas)
	next := st
	next.ISR = intersect(st.ISR, target)
	if len(next.ISR) == 0 || len(target) == 0 {
		return PartitionUpdate{}, false
	}
	if !slices.Contains(target, st.Leader) {
		if next.Leader = firstEligible(img, t.Name, int32(p), target, next.ISR); next.Leader < 0 {
			return PartitionUpdate{}, false
		}
	}
	next.AddingReplicas, next.RemovingReplicas = nil, nil
	if next.Leader != st.Leader || !sameSet(target, cur) {
		next.LeaderEpoch++
		next.LeaderIncarnation = img.Brokers[next.Leader].Incarnation
	}
	next.PartitionEpoch++
	return PartitionUpdate{Topic: t.Name, Partition: int32(p), State: next, Replicas: target, TopicRevision: t.ModRevision}, true
}

// firstEligible returns the first of replicas that is in isr and eligible
// for partition p of topic (Image.ReplicaEligible), or -1.
func firstEligible(img *Image, topic string, p int32, replicas, isr []int32) int32 {
	for _, r := range replicas {
		if img.ReplicaEligible(r, topic, p) && slices.Contains(isr, r) {
			return r
		}
	}
	return -1
}

// without returns the members of a not in b, in a's order; nil if none.
func without(a, b []int32) []int32 {
	var out []int32
	for _, r := range a {
		if !slices.Contains(b, r) {
			out = append(out, r)
		}
	}
	return out
}

// intersect returns the members of a that are in b, in a's order.
func intersect(a, b []int32) []int32 {
	var out []int32
	for _, r := range a {
		if slices.Contains(b, r) {
			out = append(out, r)
		}
	}
	return out
}

func sameSet(a, b []int32) bool {
	return len(a) == len(b) && len(without(a, b)) == 0
}

// ReassignPartition starts, changes or (target nil) cancels a reassignment
// of partition p of topic, as PlanReassignment decides from the current
// image, and writes it with AlterReplicas. A write that loses its
// compare-and-swap is decided again from the newer image, up to
// maxCASRetries times (then ErrConflict). It returns PlanReassignment's
// errors, and once written waits until the image reflects the write.
func (c *Cluster) ReassignPartition(ctx context.Context, topic string, p int32, target []int32) error {
	for range maxCASRetries {
		ch := c.Changed()
		u, changed, err := PlanReassignment(c.Image(), topic, p, target)
		if err != nil || !changed {
			return err
		}
		if _, err = c.AlterReplicas(ctx, u); err == nil {
			c.log.Info("partition reassignment changed", "topic", topic, "partition", p, "replicas", u.Replicas,
				"adding", u.State.AddingReplicas, "removing", u.State.RemovingReplicas)
			return nil
		}
		if !isCASLoss(err) {
			return err
		}
		t := time.NewTimer(reassignRetryWait)
		select {
		case <-ch:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("cluster: reassign %s-%d: %w", topic, p, ctx.Err())
		}
		t.Stop()
	}
	return fmt.Errorf("%w: %s-%d changed %d times while reassigning it", ErrConflict, topic, p, maxCASRetries)
}

func isCASLoss(err error) bool { return errors.Is(err, ErrInvalidUpdateVersion) }

// AlterReplicas writes u.Replicas as the replica list of partition
// u.Partition in topics/<u.Topic> together with the partition state
// u.State, in one transaction that requires the topic key to still have mod
// revision u.TopicRevision and the partition key u.State.ModRevision. It
// returns the state as written. The caller sets the epochs, as for
// AlterPartition. Errors: ErrUnknownPartition; ErrInvalidUpdateVersion if
// either key changed (never retried here). It waits until the image
// reflects the write.
func (c *Cluster) AlterReplicas(ctx context.Context, u PartitionUpdate) (PartitionState, error) {
	return c.alterReplicas(ctx, u, nil)
}

// alterReplicas is AlterReplicas with extra compares in the transaction
// (fence); if one fails the write fails with ErrInvalidUpdateVersion.
func (c *Cluster) alterReplicas(ctx context.Context, u PartitionUpdate, fence []clientv3.Cmp) (PartitionState, error) {
	topic, p, st := u.Topic, u.Partition, u.State
	if len(u.Replicas) == 0 {
		return PartitionState{}, fmt.Errorf("%w: %s-%d: empty replica list", ErrInvalidReplicaAssignment, topic, p)
	}
	t := c.Image().Topics[topic]
	if t == nil || p < 0 || int(p) >= len(t.Replicas) {
		return PartitionState{}, fmt.Errorf("%w: %s-%d", ErrUnknownPartition, topic, p)
	}
	if t.ModRevision != u.TopicRevision {
		// The topic value this write would be based on is not the one
		// the decision saw; the compare would fail anyway.
		return PartitionState{}, fmt.Errorf("%w: topic %s is no longer at revision %d", ErrInvalidUpdateVersion, topic, u.TopicRevision)
	}
	replicas := slices.Clone(t.Replicas)
	replicas[p] = slices.Clone(u.Replicas)
	tv := topicValue{ID: uuid.UUID(t.ID).String(), Replicas: replicas, Configs: cloneConfigs(t.Configs)}
	topicKey, partKey := c.keys.topic(topic), c.keys.partition(topic, p)
	resp, err := c.cli.Txn(ctx).
		If(append([]clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(topicKey), "=", u.TopicRevision),
			clientv3.Compare(clientv3.ModRevision(partKey), "=", st.ModRevision),
			clientv3.Compare(clientv3.CreateRevision(partKey), ">", 0)}, fence...)...).
		Then(clientv3.OpPut(topicKey, mustJSON(tv)), clientv3.OpPut(partKey, mustJSON(partitionValueOf(st)))).
		Commit()
	if err != nil {
		return PartitionState{}, fmt.Errorf("cluster: alter replicas of %s-%d: %w", topic, p, err)
	}
	if !resp.Succeeded {
		return PartitionState{}, fmt.Errorf("%w: %s-%d or its topic changed since revision %d/%d",
			ErrInvalidUpdateVersion, topic, p, u.TopicRevision, st.ModRevision)
	}
	st.ISR = slices.Clone(st.ISR)
	st.ModRevision = resp.Header.Revision
	if err := c.waitRevision(ctx, st.ModRevision); err != nil {
		return PartitionState{}, err
	}
	return st, nil
}
