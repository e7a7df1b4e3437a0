package chaos

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/group"
)

// TestS22GroupCoordinatorFaults is TESTPLAN S-22: consumer group members
// (separate processes, cooperative-sticky, manual commit after processing
// each poll, one of them static) consume a topic of 6 partitions that the
// safe producer keeps writing, while a fault schedule runs in cycles:
//
//	step                 | fault                                        | must hold
//	---------------------+----------------------------------------------+-------------------------------
//	coordinator killed   | kill -9 the leader of the group's            | commits resume on every
//	                     | __consumer_offsets partition; restart it     | partition; a commit with an
//	                     | after a few seconds                          | older generation is refused
//	member killed in     | start a member, kill -9 another while the    | the group settles without it
//	rebalance            | group is PreparingRebalance                  |
//	leader killed in     | start a member, kill -9 the group leader     | the group settles without it
//	sync                 | while it computes the assignment, in         |
//	                     | CompletingRebalance (leaders take 1 s)       |
//	dynamic zombie       | SIGSTOP a member past its session; SIGCONT   | its commit with its old id and
//	                     | once the group moved on                      | generation is refused
//	static zombie        | SIGSTOP the static member; start another     | its commit gets
//	                     | with its group.instance.id; SIGCONT          | FENCED_INSTANCE_ID
//	coordinator isolated | cut the coordinator off from etcd and        | it accepts no commit while
//	                     | replication (clients still reach it); heal   | cut off
//
// Afterwards the producer stops, the members catch up, and the checker
// (groupHistory.check) requires: no accepted commit below one accepted
// before it was sent, no offset fetch below an accepted commit, final
// committed offsets at least every accepted commit, no member starting
// an assignment below an accepted commit, and every record below the final
// committed offset processed with the log's value. Duplicates are counted,
// not failed (at-least-once), and so are stale OffsetFetch answers of the
// isolated ex-coordinator from the cut until it has resigned after the
// heal (see resignWatch): cut off, it cannot know it was replaced. A stale
// answer from any other broker, or from it after it resigned, fails. The
// producer's log is checked as in S-02.
func TestS22GroupCoordinatorFaults(t *testing.T) {
	const (
		topic      = "s22"
		groupID    = "s22-group"
		partitions = 6
		instanceID = "s22-static"
		// grace covers commits already being replicated when the links
		// were cut.
		grace = time.Second
	)
	var (
		runFor   = pick(20*time.Second, 5*time.Minute)
		down     = pick(4*time.Second, 8*time.Second)
		isolated = pick(8*time.Second, 15*time.Second)
		settle   = memberSession + memberRebalance + 30*time.Second
	)
	nc := startNetCluster(t)
	c := nc.testCluster
	c.createTopic(topic, partitions)
	w := startWorkload(t, c, topic, partitions)
	w.waitAcks(0, 50, 30*time.Second)
	g := startGroupRun(t, c, topic, groupID, partitions)
	part := group.Partition(groupID, offsetsPartitions)
	// Who led the group's __consumer_offsets partition when: the context
	// of any stale answer.
	coord := watchStates(c, offsetsTopicName, offsetsPartitions)

	static := g.startMember(instanceID)
	g.startMember("")
	g.startMember("")
	began := time.Now()
	g.waitSettled(60 * time.Second)
	g.waitProgress(began, 30*time.Second)
	t.Logf("group %s (coordinator partition %s-%d, leader %d) settled with 3 members after %s",
		groupID, offsetsTopicName, part, c.mustState(offsetsTopicName, part).Leader, time.Since(began).Round(time.Millisecond))

	fencingErrs := []*kerr.Error{kerr.IllegalGeneration, kerr.UnknownMemberID, kerr.RebalanceInProgress, kerr.FencedInstanceID}
	isFencing := func(msg string, allowed ...*kerr.Error) bool {
		return slices.ContainsFunc(allowed, func(e *kerr.Error) bool { return strings.HasPrefix(msg, e.Message) })
	}
	type zombieResult struct {
		kind, member, got string
	}
	var (
		zombies         []zombieResult
		staleProbes     []string
		failovers       []string
		isolatedAccepts int
		victimIdx       int
	)

	// awaitZombie waits for the commit m sends when continued.
	awaitZombie := func(m *memberProc, before int) []commitEvent {
		var zc []commitEvent
		waitFor(t, 30*time.Second, func() error {
			if zc = g.hist.zombieCommits(m.name); len(zc) > before {
				return nil
			}
			return fmt.Errorf("member %s sent no commit after SIGCONT", m.name)
		})
		return zc[before:]
	}

	// probeStaleGeneration sends the new coordinator (just failed over)
	// a commit of offset 0 of partition 0 as a live member, with the
	// generation before its current one: it must refuse it.
	probeStaleGeneration := func(cycle int, coordinator *broker) {
		live := g.live()
		if len(live) == 0 {
			return
		}
		m := live[0]
		mid, gen, _ := g.hist.generation(m.name)
		if mid == "" || gen < 1 {
			return
		}
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Group, req.MemberID, req.Generation = groupID, mid, gen-1
		if m.cfg.InstanceID != "" {
			req.InstanceID = &m.cfg.InstanceID
		}
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = 0, 0, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		cl, err := kgo.NewClient(kgo.SeedBrokers(coordinator.addr()), kgo.RequestRetries(0))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		// It may still be loading the group.
		got := ""
		_ = poll(20*time.Second, func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			resp, err := req.RequestWith(ctx, cl.SeedBrokers()[0])
			switch {
			case err != nil:
				got = err.Error()
				return err
			case len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1:
				got = "malformed response"
			case resp.Topics[0].Partitions[0].ErrorCode == 0:
				got = "accepted"
			case resp.Topics[0].Partitions[0].ErrorCode == kerr.CoordinatorLoadInProgress.Code:
				got = kerr.CoordinatorLoadInProgress.Error()
				return kerr.CoordinatorLoadInProgress
			default:
				got = kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode).Error()
			}
			return nil
		})
		staleProbes = append(staleProbes, got)
		t.Logf("cycle %d: commit to broker %d as %s with generation %d (current %d): %s", cycle, coordinator.id, m.name, gen-1, gen, got)
		if !isFencing(got, kerr.IllegalGeneration, kerr.UnknownMemberID) {
			t.Errorf("cycle %d: commit with stale generation %d after coordinator failover: %s, want ILLEGAL_GENERATION", cycle, gen-1, got)
		}
	}

	steps := []struct {
		name string
		run  func(cycle int)
	}{
		{"coordinator killed", func(cycle int) {
			st := c.mustState(offsetsTopicName, part)
			victim := c.brokers[st.Leader]
			killedAt := time.Now()
			victim.kill()
			next := c.waitLeaderChange(offsetsTopicName, part, st.Leader, st.LeaderEpoch, sessionTimeout+15*time.Second)
			elected := time.Since(killedAt)
			g.waitProgress(killedAt, 60*time.Second)
			resumed := time.Since(killedAt)
			failovers = append(failovers, fmt.Sprintf("new coordinator %s, commits on every partition %s", elected.Round(time.Millisecond), resumed.Round(time.Millisecond)))
			t.Logf("cycle %d: coordinator %d (epoch %d) killed; broker %d leads %s-%d at epoch %d after %s; commits accepted on every partition after %s",
				cycle, st.Leader, st.LeaderEpoch, next.Leader, offsetsTopicName, part, next.LeaderEpoch, elected.Round(time.Millisecond), resumed.Round(time.Millisecond))
			probeStaleGeneration(cycle, c.brokers[next.Leader])
			sleepUntil(killedAt.Add(down))
			c.restart(victim)
			c.waitFullISR(offsetsTopicName, offsetsPartitions)
			c.waitFullISR(topic, partitions)
		}},
		{"member killed in rebalance", func(cycle int) {
			var old []*memberProc
			for _, m := range g.live() {
				if m.cfg.InstanceID == "" {
					old = append(old, m)
				}
			}
			newcomer := g.startMember("")
			state := "not seen"
			_ = poll(30*time.Second, func() error {
				d, err := g.describe()
				if err != nil {
					return err
				}
				if d.State == "PreparingRebalance" || d.State == "CompletingRebalance" {
					state = d.State
					return nil
				}
				return fmt.Errorf("group %s", d.State)
			})
			victim := old[victimIdx%len(old)]
			victimIdx++
			g.kill(victim)
			killedAt := time.Now()
			t.Logf("cycle %d: %s joined; killed %s while the group was %s", cycle, newcomer.name, victim.name, state)
			if state == "not seen" {
				t.Logf("cycle %d: no rebalance seen after %s joined", cycle, newcomer.name)
			}
			g.waitSettled(settle)
			t.Logf("cycle %d: group settled without %s after %s", cycle, victim.name, time.Since(killedAt).Round(time.Millisecond))
		}},
		{"leader killed in sync", func(cycle int) {
			from := time.Now()
			newcomer := g.startMember("")
			var leader *memberProc
			err := poll(30*time.Second, func() error {
				d, err := g.describe()
				if err != nil {
					return err
				}
				name, ok := g.hist.leaderSince(from)
				if d.State != "CompletingRebalance" || !ok {
					return fmt.Errorf("group %s, leader %q", d.State, name)
				}
				leader = g.byName(name)
				return nil
			})
			if err != nil {
				t.Logf("cycle %d: %s joined; no leader seen in CompletingRebalance: %v", cycle, newcomer.name, err)
				g.waitSettled(settle)
				return
			}
			g.kill(leader)
			killedAt := time.Now()
			t.Logf("cycle %d: %s joined; killed the leader %s while the group was CompletingRebalance", cycle, newcomer.name, leader.name)
			if leader == static {
				static = g.startMember(instanceID)
			}
			g.waitSettled(settle)
			t.Logf("cycle %d: group settled without %s after %s", cycle, leader.name, time.Since(killedAt).Round(time.Millisecond))
		}},
		{"dynamic zombie", func(cycle int) {
			var z *memberProc
			for _, m := range g.live() {
				if m.cfg.InstanceID == "" {
					z = m
					break
				}
			}
			_, gen0, _ := g.hist.generation(z.name)
			before := len(g.hist.zombieCommits(z.name))
			g.signal(z, syscall.SIGSTOP)
			stoppedAt := time.Now()
			waitFor(t, settle, func() error {
				d, err := g.describe()
				if err != nil {
					return err
				}
				for _, dm := range d.Members {
					if dm.ClientID == z.name {
						return fmt.Errorf("stopped %s still a member", z.name)
					}
				}
				if _, _, top := g.hist.generation(z.name); d.State != "Stable" || top <= gen0 {
					return fmt.Errorf("group %s, generation %d", d.State, top)
				}
				return nil
			})
			_, _, top := g.hist.generation(z.name)
			t.Logf("cycle %d: %s (generation %d) stopped; removed, group at generation %d after %s",
				cycle, z.name, gen0, top, time.Since(stoppedAt).Round(time.Millisecond))
			g.signal(z, syscall.SIGCONT)
			for _, zc := range awaitZombie(z, before) {
				t.Logf("cycle %d: %s continued: commit %d/%d as generation %d: %s", cycle, z.name, zc.p, zc.o, zc.gen, orAccepted(zc.err))
				zombies = append(zombies, zombieResult{"dynamic", z.name, orAccepted(zc.err)})
				if zc.err == "" || !isFencing(zc.err, fencingErrs...) {
					t.Errorf("cycle %d: zombie %s's commit of %d/%d with generation %d: %s, want ILLEGAL_GENERATION or UNKNOWN_MEMBER_ID",
						cycle, z.name, zc.p, zc.o, zc.gen, orAccepted(zc.err))
				}
			}
			// It rejoins as a new member.
			g.waitSettled(settle)
		}},
		{"static zombie", func(cycle int) {
			old := static
			before := len(g.hist.zombieCommits(old.name))
			g.signal(old, syscall.SIGSTOP)
			repl := g.startMember(instanceID)
			startedAt := time.Now()
			waitFor(t, settle, func() error {
				if g.hist.assignedSince(repl.name, startedAt) {
					return nil
				}
				return fmt.Errorf("%s, with instance id %s, has no assignment", repl.name, instanceID)
			})
			t.Logf("cycle %d: %s stopped; %s took over instance %s after %s", cycle, old.name, repl.name, instanceID, time.Since(startedAt).Round(time.Millisecond))
			g.signal(old, syscall.SIGCONT)
			for _, zc := range awaitZombie(old, before) {
				t.Logf("cycle %d: %s continued: commit %d/%d as generation %d: %s", cycle, old.name, zc.p, zc.o, zc.gen, orAccepted(zc.err))
				zombies = append(zombies, zombieResult{"static", old.name, orAccepted(zc.err)})
				if !isFencing(zc.err, kerr.FencedInstanceID) {
					t.Errorf("cycle %d: replaced static member %s's commit of %d/%d: %s, want FENCED_INSTANCE_ID",
						cycle, old.name, zc.p, zc.o, orAccepted(zc.err))
				}
			}
			// Two processes with one instance id would fence each other
			// forever: the old one goes.
			g.kill(old)
			static = repl
			g.waitSettled(settle)
		}},
		{"coordinator isolated", func(cycle int) {
			st := c.mustState(offsetsTopicName, part)
			victim := st.Leader
			rw := g.watchResign(c.brokers[victim], part, st.LeaderEpoch)
			cutAt := time.Now()
			nc.isolate(victim)
			next := c.waitLeaderChange(offsetsTopicName, part, victim, st.LeaderEpoch, sessionTimeout+20*time.Second)
			t.Logf("cycle %d: coordinator %d isolated; broker %d leads %s-%d at epoch %d after %s",
				cycle, victim, next.Leader, offsetsTopicName, part, next.LeaderEpoch, time.Since(cutAt).Round(time.Millisecond))
			sleepUntil(cutAt.Add(isolated))
			nc.healAll()
			healedAt := time.Now()
			if err := c.brokers[victim].exited(); err != nil {
				t.Fatal(err)
			}
			c.waitFullISR(offsetsTopicName, offsetsPartitions)
			c.waitFullISR(topic, partitions)
			resigned := rw.end(t, 30*time.Second)
			g.hist.addIsolation(victim, cutAt, healedAt, resigned)
			t.Logf("cycle %d: broker %d answered as coordinator from the state it had before the cut until %s after the heal",
				cycle, victim, resigned.Sub(healedAt).Round(time.Millisecond))
			g.waitSettled(settle)
			g.waitProgress(healedAt, 60*time.Second)
			t.Logf("cycle %d: healed; group settled and commits accepted on every partition after %s", cycle, time.Since(healedAt).Round(time.Millisecond))
			for _, a := range g.hist.acceptedBy(victim, cutAt.Add(grace), healedAt) {
				isolatedAccepts++
				t.Errorf("cycle %d: isolated coordinator %d accepted %s's commit of %d/%d at %s",
					cycle, victim, a.member, a.p, a.o, a.at.Format("15:04:05.000"))
			}
		}},
	}

	faultsFrom := time.Now()
	cycles := 0
	for cycles == 0 || time.Since(faultsFrom) < runFor {
		cycles++
		for _, s := range steps {
			from := time.Now()
			s.run(cycles)
			t.Logf("cycle %d: %s: %s", cycles, s.name, time.Since(from).Round(time.Millisecond))
		}
	}
	faultTime := time.Since(faultsFrom)

	w.stop(30 * time.Second)
	caughtUpAt := time.Now()
	final := g.waitCaughtUp(90 * time.Second)
	t.Logf("members caught up %s after the producer stopped; final committed offsets %v", time.Since(caughtUpAt).Round(time.Millisecond), final)
	g.hist.stopFetching()
	for _, m := range g.members {
		g.kill(m)
	}
	r := w.check(c)
	logs := readAll(t, c, topic, partitions)
	gr := g.hist.check(t, logs, final, partitions)
	coord.stop()
	coord.mu.Lock()
	var leads []string
	for _, o := range coord.changes[part] {
		leads = append(leads, fmt.Sprintf("%s %v", o.at.Format("15:04:05.000"), o.partitionState))
	}
	coord.mu.Unlock()
	t.Logf("S-22: %s-%d as seen in etcd: %s", offsetsTopicName, part, strings.Join(leads, "; "))

	var zs []string
	for _, z := range zombies {
		zs = append(zs, z.kind+" "+z.member+": "+z.got)
	}
	t.Logf("S-22: %d cycles in %s, %d member processes; coordinator failovers: %s; stale-generation commits: %s; zombie commits: %s; %d commits accepted by an isolated coordinator",
		cycles, faultTime.Round(time.Second), len(g.members), strings.Join(failovers, ", "), strings.Join(staleProbes, ", "), strings.Join(zs, ", "), isolatedAccepts)
	t.Logf("S-22: group: %v", gr)
	t.Logf("S-22: producer: %v", r)
}

// orAccepted names an empty commit error.
func orAccepted(err string) string {
	if err == "" {
		return "accepted"
	}
	return err
}
