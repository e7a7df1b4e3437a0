package cluster

import (
	"context"
	"errors"
	"slices"
	"sort"
	"strconv"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// PartitionUpdate is a partition state change decided by the controller.
// State.ModRevision is the revision it was decided from, so the write is a
// compare-and-swap against exactly what the decision saw.
type PartitionUpdate struct {
	Topic     string
	Partition int32
	State     PartitionState
	// Replicas, when not nil, is the partition's new replica list in
	// topics/<Topic>, written with State in one transaction (AlterReplicas)
	// that also compares the topic key's mod revision with TopicRevision.
	Replicas      []int32
	TopicRevision int64
}

// ElectionPolicy is what the controller's decisions depend on beyond the
// image.
type ElectionPolicy struct {
	// Unclean reports whether a topic allows unclean leader election.
	Unclean func(topic string) bool
	// Preferred moves leadership back to the preferred replica.
	Preferred bool
	// ELR keeps eligible leader replicas (KIP-966, elr.go) with MinISR,
	// a topic's min.insync.replicas.
	ELR    bool
	MinISR func(topic string) int
}

// Decide computes the partition state changes the controller makes for img.
// It is a pure function of its inputs (the controller's decisions are
// deterministic and tested as such).
//
// For each partition:
//
//  1. A replica is eligible when its broker is registered and not
//     shutting down, and the broker has not reported it offline (its log
//     dir failed, Broker.OfflineReplicas). An offline replica is treated
//     as unregistered for this partition: it leaves the ISR, a leader
//     that is offline is replaced, and with no other eligible in-sync
//     replica the partition goes offline (leader -1) keeping its ISR.
//  2. If the leader is eligible and in its ISR, or no other eligible
//     replica is in the ISR, it stays; a leader that left its own ISR
//     (it resigned: its log is corrupt, replica.LeaderState.Resign) is
//     replaced as in rule 3. If the leader stays, in-sync replicas that are not eligible
//     are removed from the ISR (the leader stays); with Preferred, the
//     first replica takes over when it is eligible and in sync. A
//     replica in controlled shutdown leaves the ISR at once, as in
//     Kafka's KRaft controller, so that acks=all produces stop waiting
//     for a follower that has stopped fetching: it comes back through
//     the leader's ISR expansion once it has restarted and caught up. A
//     leader kept while it shuts down (nobody else can take over) stays
//     in its ISR.
//  3. Otherwise a new leader is the first replica, in assignment order,
//     that is eligible and in the ISR; the ISR loses unregistered members.
//     Failing that, with Unclean, the first eligible replica, with an ISR of
//     itself (its missing records are lost: KIP-106 makes this opt-in).
//     The ISR loses replicas in controlled shutdown as in rule 2.
//     Failing that, a leader still registered but shutting down keeps the
//     partition; otherwise the partition goes offline (leader -1) and keeps
//     its ISR, so that an in-sync replica is elected when it returns.
//  4. A leader whose registration has another incarnation than the one
//     it was elected with (it restarted, keeping its node id) is elected
//     again: it may have lost an unsynced tail that followers hold in the
//     same epoch, so it must lead at a new one.
//  5. Every leader change or re-election bumps LeaderEpoch and records the
//     leader's incarnation; every change bumps PartitionEpoch.
//  6. With pol.ELR (KIP-966, elr.go): when rule 3 finds no ISR member, the
//     first eligible ELR member in assignment order leads with an ISR of
//     itself. A replica that may have lost records it had reported
//     (MayHaveLostReported: unclean shutdown under a relaxed flush
//     policy) is not elected on its ISR membership when it is a restarted
//     leader or the partition is already offline; it leaves the ISR (which
//     may then be empty, the partition offline until a clean ELR member
//     or an unclean election), and leaves the ELR for LastKnownELR. The ELR
//     is kept by UpdateELR on every change.
//
// Before these, a reassignment in progress (KIP-455) whose adding replicas
// are all in the ISR finishes: the replicas become the target (the update
// carries Replicas), the ISR loses the removed replicas, a leader being
// removed hands over to the first eligible target replica in the ISR, and
// the change bumps LeaderEpoch (the replica set changed). It waits while no
// target replica is in sync, or while the leader is being removed and no
// target replica can take over.
func Decide(img *Image, pol ElectionPolicy) []PartitionUpdate {
	registered := func(b int32) bool { _, ok := img.Brokers[b]; return ok }
	lost := func(topic string, b int32) bool { return MayHaveLostReported(img, topic, b) }
	names := make([]string, 0, len(img.Topics))
	for name := range img.Topics {
		names = append(names, name)
	}
	sort.Strings(names)
	var out []PartitionUpdate
	for _, name := range names {
		t := img.Topics[name]
		for p := range t.Partitions {
			if p >= len(t.Replicas) {
				continue
			}
			if u, ok := completeReassignment(img, t, p); ok {
				out = append(out, u)
				continue
			}
			st, replicas := t.Partitions[p], t.Replicas[p]
			eligible := func(b int32) bool { return img.ReplicaEligible(b, name, int32(p)) }
			// A leader whose replica is in a failed log dir is gone for
			// this partition as if unregistered: it is never kept.
			live := func(b int32) bool { return registered(b) && !img.Brokers[b].ReplicaOffline(name, int32(p)) }
			next := st
			next.ISR = nil
			for _, r := range st.ISR {
				if eligible(r) {
					next.ISR = append(next.ISR, r)
				}
			}
			restarted := false
			resigned := st.Leader >= 0 && !slices.Contains(st.ISR, st.Leader) &&
				slices.ContainsFunc(next.ISR, func(r int32) bool { return r != st.Leader && slices.Contains(replicas, r) })
			// KIP-966: a replica whose unclean shutdown may have lost
			// records it had reported does not lead on its ISR
			// membership: a restarted leader, or the ISR members of a
			// partition already offline (they were in sync before they
			// restarted). They leave the ISR; the ELR may hold a
			// replica that has everything committed.
			lostLeader := pol.ELR && st.Leader >= 0 && eligible(st.Leader) && st.LeaderIncarnation != "" &&
				img.Brokers[st.Leader].Incarnation != st.LeaderIncarnation && lost(name, st.Leader)
			droppedLost := false
			if pol.ELR && (lostLeader || st.Leader < 0) {
				kept := next.ISR[:0:0]
				for _, r := range next.ISR {
					if lost(name, r) {
						droppedLost = true
						continue
					}
					kept = append(kept, r)
				}
				next.ISR = kept
			}
			switch {
			case st.Leader >= 0 && eligible(st.Leader) && !resigned && !lostLeader:
				restarted = st.LeaderIncarnation != "" && img.Brokers[st.Leader].Incarnation != st.LeaderIncarnation
				if pol.Preferred && len(replicas) > 0 && replicas[0] != st.Leader &&
					eligible(replicas[0]) && slices.Contains(next.ISR, replicas[0]) {
					next.Leader = replicas[0]
				}
			default:
				leader := int32(-1)
				for _, r := range replicas {
					if eligible(r) && slices.Contains(next.ISR, r) && !(pol.ELR && lost(name, r)) {
						leader = r
						break
					}
				}
				if leader < 0 && pol.ELR {
					for _, r := range replicas {
						if eligible(r) && slices.Contains(st.ELR, r) && !lost(name, r) {
							leader = r
							next.ISR = []int32{r}
							break
						}
					}
				}
				if leader < 0 && pol.Unclean != nil && pol.Unclean(name) {
					for _, r := range replicas {
						if eligible(r) {
							leader = r
							next.ISR = []int32{r}
							break
						}
					}
				}
				switch {
				case leader >= 0:
					next.Leader = leader
				case st.Leader >= 0 && live(st.Leader) && !lostLeader:
					// Shutting down with nobody to take over: keep it.
					next.Leader = st.Leader
				default:
					next.Leader = -1
					if !droppedLost {
						next.ISR = st.ISR
					}
				}
			}
			if next.Leader >= 0 && live(next.Leader) && !slices.Contains(next.ISR, next.Leader) && slices.Contains(st.ISR, next.Leader) {
				// A leader kept while it shuts down stays in its ISR.
				next.ISR = append([]int32{next.Leader}, next.ISR...)
			}
			if len(next.ISR) == 0 && !droppedLost {
				next.ISR = st.ISR
			}
			if pol.ELR {
				// UpdateELR gives both sets fresh slices.
				UpdateELR(st, &next, replicas, pol.MinISR(name))
				elr := next.ELR[:0]
				for _, r := range next.ELR {
					switch {
					case !lost(name, r):
						elr = append(elr, r)
					case !slices.Contains(next.LastKnownELR, r):
						next.LastKnownELR = append(next.LastKnownELR, r)
					}
				}
				next.ELR = elr
			} else {
				next.ELR, next.LastKnownELR = nil, nil
			}
			if next.Leader == st.Leader && slices.Equal(next.ISR, st.ISR) && !restarted && !lostLeader &&
				slices.Equal(next.ELR, st.ELR) && slices.Equal(next.LastKnownELR, st.LastKnownELR) {
				continue
			}
			if next.Leader != st.Leader || restarted || (lostLeader && next.Leader >= 0) {
				next.LeaderEpoch++
				next.LeaderIncarnation = img.Brokers[next.Leader].Incarnation
			}
			next.PartitionEpoch++
			out = append(out, PartitionUpdate{Topic: name, Partition: int32(p), State: next})
		}
	}
	return out
}

// runController acts as the controller while this broker wins the election
// (Image.ControllerID): after every image change it applies Decide with
// compare-and-swap writes. A write that loses its compare is dropped; the
// next image brings the new state and a new decision. A broker that stops
// being controller stops acting at the next image; a write it makes in
// between either wins its compare (the state it decided from is current,
// so the decision is still right) or loses it.
func (c *Cluster) runController() {
	active := false
	for {
		st := c.state.Load()
		img := st.img
		if now := img.ControllerID == c.cfg.NodeID; now != active {
			active = now
			if active {
				c.log.Info("controller: this broker became controller", "node", c.cfg.NodeID, "controller_rev", img.controllerRev)
			} else {
				c.log.Info("controller: this broker stopped being controller", "node", c.cfg.NodeID, "controller", img.ControllerID)
			}
		}
		if active {
			c.applyDecisions(img)
		}
		select {
		case <-c.ctx.Done():
			return
		case <-st.changed:
		case <-time.After(controllerRecheck):
		}
	}
}

// controllerFence returns the compares that make a controller write fail
// unless this broker still wins the election in etcd at the moment of the
// write, as img says it does: its candidate key is the one img saw (same
// CreateRevision), and no candidate key is older. A broker acting on a
// stale image (it was paused, or cut off from etcd, and another broker has
// taken over) thus cannot commit a decision, even one whose partition
// compare would pass (TESTPLAN S-17: the controller is fenced by etcd
// revision). With no candidate keys at all (img.controllerRev 0) the
// fence is that there still are none.
func (c *Cluster) controllerFence(img *Image) []clientv3.Cmp {
	// A compare over a key range holds only if it holds for every key in
	// it (an empty range compares as one absent key, CreateRevision 0).
	all := clientv3.Compare(clientv3.CreateRevision(c.keys.prefix+controllerDir), ">", img.controllerRev-1).WithPrefix()
	if img.controllerRev == 0 {
		all = clientv3.Compare(clientv3.CreateRevision(c.keys.prefix+controllerDir), "=", 0).WithPrefix()
	}
	return []clientv3.Cmp{
		clientv3.Compare(clientv3.CreateRevision(c.keys.controllerCandidate(c.cfg.NodeID)), "=", img.controllerRev),
		all,
	}
}

// controllerRecheck bounds how long a lost compare or failed write waits
// for the next decision when no image change arrives.
const controllerRecheck = 2 * time.Second

func (c *Cluster) applyDecisions(img *Image) {
	pol := ElectionPolicy{
		Preferred: c.cfg.AutoLeaderRebalance,
		Unclean: func(topic string) bool {
			if t := img.Topics[topic]; t != nil {
				if v, ok := t.Configs["unclean.leader.election.enable"]; ok {
					b, err := strconv.ParseBool(v)
					return err == nil && b
				}
			}
			return c.cfg.UncleanLeaderElection
		},
		ELR:    c.cfg.EligibleLeaderReplicas,
		MinISR: func(topic string) int { return minISROf(img, topic, c.cfg.MinInsyncReplicas) },
	}
	fence := c.controllerFence(img)
	updates := Decide(img, pol)
	// NB: a broker restarting with thousands of partitions gets a new
	// leader epoch on each; one transaction per partition, each waited
	// for, took 20 s for 10,000. Leader and ISR changes go in batches,
	// and a batch whose compare fails is written one by one.
	var states []PartitionUpdate
	var one []PartitionUpdate
	for _, u := range updates {
		if u.Replicas == nil {
			states = append(states, u)
		} else {
			one = append(one, u)
		}
	}
	for len(states) > 0 {
		n := min(len(states), controllerBatch)
		batch := states[:n]
		states = states[n:]
		ctx, cancel := context.WithTimeout(c.ctx, 10*time.Second)
		ok, err := c.alterPartitions(ctx, batch, fence)
		cancel()
		switch {
		case ok && err == nil:
			c.controllerWrites.Add(int64(len(batch)))
			for _, u := range batch {
				c.logDecision(img, u)
			}
		case err != nil:
			if c.ctx.Err() == nil {
				c.controllerFailed.Add(int64(len(batch)))
				c.log.Warn("controller: partition state write failed", "partitions", len(batch), "first_topic", batch[0].Topic,
					"first_partition", batch[0].Partition, "err", err)
			}
		default:
			one = append(one, batch...)
		}
	}
	for _, u := range one {
		ctx, cancel := context.WithTimeout(c.ctx, 5*time.Second)
		var err error
		if u.Replicas != nil {
			_, err = c.alterReplicas(ctx, u, fence)
		} else {
			_, err = c.alterPartition(ctx, u.Topic, u.Partition, u.State, fence)
		}
		cancel()
		switch {
		case err == nil:
			c.controllerWrites.Add(1)
			c.logDecision(img, u)
		case errors.Is(err, ErrInvalidUpdateVersion), errors.Is(err, ErrUnknownPartition):
		default:
			if c.ctx.Err() == nil {
				c.controllerFailed.Add(1)
				c.log.Warn("controller: partition state write failed", "topic", u.Topic, "partition", u.Partition, "err", err)
			}
		}
	}
}

// controllerBatch is how many partition state writes the controller puts
// in one etcd transaction: 2 compares each plus the fence stay below an
// external etcd's default --max-txn-ops of 128.
const controllerBatch = 50

// logDecision logs a partition state change the controller wrote.
func (c *Cluster) logDecision(img *Image, u PartitionUpdate) {
	prev := partitionStateOf(img, u.Topic, u.Partition)
	c.log.Info("controller: partition state changed", "topic", u.Topic, "partition", u.Partition,
		"reason", decisionReason(img, u), "leader", u.State.Leader, "prev_leader", prev.Leader,
		"leader_epoch", u.State.LeaderEpoch, "partition_epoch", u.State.PartitionEpoch,
		"isr", u.State.ISR, "prev_isr", prev.ISR, "replicas", u.Replicas)
}

// partitionStateOf returns the state of topic's partition p in img, or a
// state with leader -1 if img has none.
func partitionStateOf(img *Image, topic string, p int32) PartitionState {
	if t := img.Topics[topic]; t != nil && int(p) < len(t.Partitions) {
		return t.Partitions[p]
	}
	return PartitionState{Leader: -1}
}

// decisionReason names why Decide made u from img, for the log:
//
//	reassignment_completed  a reassignment's target replicas took over
//	leader_offline          no eligible in-sync replica: the partition is offline
//	unclean_election        the new leader was not in the ISR (records may be lost)
//	preferred_leader        leadership moved back to the preferred replica
//	controlled_shutdown     the leader is shutting down and handed over
//	leader_failed           the leader's registration is gone (crash, lost lease)
//	leader_elected          an offline partition has a leader again
//	leader_restarted        the leader came back with a new incarnation
//	isr_shrink_unregistered in-sync replicas whose registration is gone left the ISR
//	isr_shrink_log_dir_offline in-sync replicas in a failed log dir left the ISR
//	log_dir_offline         the leader's replica is in a failed log dir
func decisionReason(img *Image, u PartitionUpdate) string {
	if u.Replicas != nil {
		return "reassignment_completed"
	}
	prev := partitionStateOf(img, u.Topic, u.Partition)
	next := u.State
	offline := func(b int32) bool { br, ok := img.Brokers[b]; return ok && br.ReplicaOffline(u.Topic, u.Partition) }
	switch {
	case next.Leader == prev.Leader && next.LeaderEpoch != prev.LeaderEpoch:
		return "leader_restarted"
	case next.Leader == prev.Leader && slices.ContainsFunc(prev.ISR, offline) && !slices.ContainsFunc(next.ISR, offline):
		return "isr_shrink_log_dir_offline"
	case next.Leader == prev.Leader && !slices.Equal(next.ISR, prev.ISR):
		return "isr_shrink_unregistered"
	case next.Leader == prev.Leader:
		return "elr_changed"
	case next.Leader < 0:
		return "leader_offline"
	case slices.Contains(prev.ELR, next.Leader):
		return "elr_election"
	case prev.Leader >= 0 && offline(prev.Leader):
		return "log_dir_offline"
	case !slices.Contains(prev.ISR, next.Leader):
		return "unclean_election"
	case prev.Leader < 0:
		return "leader_elected"
	}
	old, registered := img.Brokers[prev.Leader]
	switch {
	case !registered:
		return "leader_failed"
	case old.ShuttingDown:
		return "controlled_shutdown"
	}
	return "preferred_leader"
}

// BeginControlledShutdown marks this broker as shutting down in its
// registration, so the controller moves its leaderships to other in-sync
// replicas. Call WaitLeadershipsMoved to wait for that.
func (c *Cluster) BeginControlledShutdown(ctx context.Context) error {
	c.regMu.Lock()
	c.reg.shuttingDown = true
	c.regMu.Unlock()
	return c.putRegistration(ctx)
}

// WaitLeadershipsMoved waits until this broker leads no partition that has
// another in-sync replica able to take over, and is in the ISR of no
// partition whose leader is another broker not shutting down (the
// controller removes it), or until ctx is done.
func (c *Cluster) WaitLeadershipsMoved(ctx context.Context) error {
	for {
		st := c.state.Load()
		if !c.leadsMovable(st.img) && !c.followsInSync(st.img) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-st.changed:
		}
	}
}

func (c *Cluster) leadsMovable(img *Image) bool {
	self := c.cfg.NodeID
	for _, t := range img.Topics {
		for _, st := range t.Partitions {
			if st.Leader != self {
				continue
			}
			for _, r := range st.ISR {
				if br, ok := img.Brokers[r]; r != self && ok && !br.ShuttingDown {
					return true
				}
			}
		}
	}
	return false
}

// followsInSync reports whether this broker is still in the ISR of a
// partition led by another broker that is not shutting down.
func (c *Cluster) followsInSync(img *Image) bool {
	self := c.cfg.NodeID
	for _, t := range img.Topics {
		for _, st := range t.Partitions {
			if st.Leader < 0 || st.Leader == self || !slices.Contains(st.ISR, self) {
				continue
			}
			if br, ok := img.Brokers[st.Leader]; ok && !br.ShuttingDown {
				return true
			}
		}
	}
	return false
}
