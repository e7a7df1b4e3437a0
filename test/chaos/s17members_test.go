package chaos

import (
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestS17EtcdMembers is TESTPLAN S-17 (etcd faults) on a three-member
// etcd (memberCluster), with the safe producer writing throughout:
//
//	phase  | fault                                           | short | long
//	-------+-------------------------------------------------+-------+----------------
//	pause  | SIGSTOP the etcd leader, then SIGCONT           | 10 s  | 10 s, repeated
//	kill   | kill -9 one member (the leader; in long cycles  | 5 s   | 20 s, repeated
//	       | also a follower), restart it on its data dir    |       |
//	quorum | kill -9 two members (the leader and a follower) | 15 s  | 60 s; then 60 s
//	       |                                                 |       | of SIGSTOP too
//	cut    | cut the controller broker from every member     | 15 s  | 15 s, twice
//
// What must hold:
//
//  1. The checker finds no lost, duplicate or inconsistent record.
//  2. With one member down etcd keeps its quorum, so no partition goes
//     without an acknowledgement for more than T_s + 5 s. A killed
//     member costs nothing (its connections close, the brokers' clients
//     use the others). A paused leader does cost: renewals of the
//     brokers' registration leases stall (on the paused member's open
//     connections, which gRPC's keep-alive gives up on only after more
//     than 10 s, and on the followers forwarding them to it), the leases
//     of T_s expire, the brokers register again and the controller moves
//     leaders meanwhile; each phase logs how many.
//  3. Without a quorum nothing changes: the surviving member's copy of
//     every partition state (read locally, no quorum needed) stays as it
//     was, no broker logs a partition state or ISR write it made, and
//     every batch acknowledged meanwhile comes from the partition's
//     leader as etcd last recorded it (leaders with their full ISR need
//     no etcd write to advance their high watermark).
//  4. Once the quorum returns, every partition acknowledges writes again
//     within T_s + 5 s (TESTPLAN's pass bound).
//  5. The controller is fenced by etcd (TESTPLAN): every partition state
//     a broker writes as controller is written while etcd holds it as
//     controller (its election candidate key is the oldest), as a poll of
//     etcd every 50ms sees it (checkFencing).
//  6. A controller cut from etcd loses its registration lease; another
//     broker becomes controller within T_s + 5 s (in etcd and in the
//     Metadata of the brokers that still reach etcd). The cut broker
//     writes no partition or ISR state, and acknowledges no write to a
//     partition once a new leader epoch of it is committed (plus a
//     second for fetches already under way).
func TestS17EtcdMembers(t *testing.T) {
	const (
		topic      = "s17m"
		partitions = 5
		// bound is TESTPLAN's "writes resume <= T_s + 5 s", and its
		// "new controller within T_s + a few seconds".
		bound = sessionTimeout + 5*time.Second
		// grace covers produce and fetch requests already under way when
		// a fault began or a new epoch was committed.
		grace = time.Second
		// settleTimeout bounds the wait for a healed cluster: members
		// healthy, full ISR, acks on every partition.
		settleTimeout = 60 * time.Second
	)
	var (
		memberFor = pick(0, 150*time.Second) // pause and kill cycles
		pause     = 10 * time.Second
		down      = pick(5*time.Second, 20*time.Second)
		quorum    = pick(15*time.Second, 60*time.Second)
		cut       = 15 * time.Second
		cuts      = 1
	)
	if longProfile() {
		cuts = 2
	}
	mc := startMemberCluster(t)
	c := mc.testCluster
	c.createTopic(topic, partitions)
	hist := watchStates(c, topic, partitions)
	ctlHist := mc.watchController()
	ctlFrom := time.Now()
	w := startWorkload(t, c, topic, partitions)
	for p := range int32(partitions) {
		w.waitAcks(p, 20, 30*time.Second)
	}
	r := &s17mRun{t: t, mc: mc, w: w, hist: hist, topic: topic, partitions: partitions, bound: bound,
		grace: grace, settleTimeout: settleTimeout}

	// One member at a time: the leader paused, a member killed.
	began := time.Now()
	for cycle := 1; cycle == 1 || time.Since(began) < memberFor; cycle++ {
		lead := mc.waitLeader(10 * time.Second)
		ph := r.begin(fmt.Sprintf("cycle %d pause leader %s", cycle, lead.name))
		lead.signal(syscall.SIGSTOP)
		ph.elected = r.waitNewLeader(lead)
		sleepUntil(ph.from.Add(pause))
		lead.signal(syscall.SIGCONT)
		ph.back = time.Now()
		r.settle(ph)
		r.oneMemberBound(ph)

		victim := mc.waitLeader(10 * time.Second)
		role := "leader"
		if cycle%2 == 0 {
			// Every other long cycle kills a follower instead.
			for _, m := range mc.members {
				if m != victim {
					victim, role = m, "follower"
					break
				}
			}
		}
		ph = r.begin(fmt.Sprintf("cycle %d kill %s %s", cycle, role, victim.name))
		victim.kill()
		if role == "leader" {
			ph.elected = r.waitNewLeader(victim)
		}
		sleepUntil(ph.from.Add(down))
		victim.start()
		ph.back = time.Now()
		r.settle(ph)
		r.oneMemberBound(ph)
	}

	// Quorum loss: two of three members down.
	r.quorumLoss("quorum loss (kill -9)", quorum, false)
	if longProfile() {
		r.quorumLoss("quorum loss (SIGSTOP)", quorum, true)
	}

	// The controller cut from etcd.
	for i := 1; i <= cuts; i++ {
		r.cutController(i, cut)
	}

	for p := range int32(partitions) {
		w.waitAcks(p, 20, 30*time.Second)
	}
	w.stop(30 * time.Second)
	hist.stop()
	ctlHist.stop()
	res := w.check(c)
	r.checkFencing(ctlHist, ctlFrom)
	for _, ph := range r.phases {
		t.Logf("S-17 members: %s", ph)
	}
	t.Logf("S-17 members: %v; with one member down the longest ack gap was %s; acks resumed within %s of the quorum returning; controller elections took %v; %s",
		res, r.oneMemberWorstAckGap.Round(time.Millisecond), r.quorumResumeWorst.Round(time.Millisecond), r.controllerElections, r.fencing)
}

// checkFencing checks TESTPLAN's "controller fenced by etcd revision":
// every partition state a broker wrote as controller (its log line
// "controller: partition state changed") was written while etcd held
// that broker as controller, as the history polled it. A write counts
// against the broker only if every answer of the history within a
// second either side of it names another controller.
func (r *s17mRun) checkFencing(h *controllerHistory, from time.Time) {
	r.t.Helper()
	const window = time.Second
	writes, unknown := 0, 0
	var bad []string
	for _, b := range r.mc.brokers {
		for l := range strings.SplitSeq(b.log(), "\n") {
			if !strings.Contains(l, "controller: partition state changed") {
				continue
			}
			at, ok := logTime(l)
			if !ok || at.Before(from.Add(window)) {
				continue
			}
			writes++
			known, held, seen := h.heldBy(b.id, at, window)
			switch {
			case !known:
				unknown++
			case !held:
				bad = append(bad, fmt.Sprintf("broker %d (%s; etcd's controller around it: %s): %s", b.id, r.phaseAt(at), seen, l))
			}
		}
	}
	r.fencing = fmt.Sprintf("%d controller writes, %d by a broker etcd did not hold as controller, %d not known (no answers around them)",
		writes, len(bad), unknown)
	for _, l := range bad[:min(len(bad), 10)] {
		r.t.Errorf("controller write by a broker etcd did not hold as controller: %s", l)
	}
}

// phaseAt names the phase running at t.
func (r *s17mRun) phaseAt(t time.Time) string {
	name := "before the first fault"
	for _, ph := range r.phases {
		if !t.Before(ph.from) {
			name = ph.name
		}
	}
	return name
}

// s17mRun is the state TestS17EtcdMembers shares between its phases.
type s17mRun struct {
	t                    *testing.T
	mc                   *memberCluster
	w                    *workload
	hist                 *stateHistory
	topic                string
	partitions           int32
	bound, grace         time.Duration
	settleTimeout        time.Duration
	phases               []*s17mPhase
	controllerElections  []time.Duration
	quorumResumeWorst    time.Duration
	oneMemberWorstAckGap time.Duration
	fencing              string // what checkFencing found
}

// s17mPhase is one fault and what was measured about it.
type s17mPhase struct {
	name string
	// from is when the fault began, back when it ended (the process
	// continued or restarted, the links healed), settled when the
	// cluster was whole again (members healthy, full ISR).
	from, back, settled time.Time
	before              []partitionState
	// elected is how long etcd took to agree on a new leader, or the
	// brokers on a new controller (zero if not measured).
	elected time.Duration
	// acksDuring counts acks in [from, back); worstGap is the longest
	// any partition went without an ack, counted from from
	// (resumeDelay), and resume the same counted from back.
	acksDuring       int
	worstGap, resume time.Duration
	worstPartition   int32
	// Broker log lines from the fault's start until settled.
	leaseLost, reregistered, decisions, isrWrites int
	moved                                         []int32 // partitions whose leader epoch rose
	notes                                         []string
}

func (ph *s17mPhase) String() string {
	s := fmt.Sprintf("%s: %s faulted, %d acks meanwhile; longest ack gap %s (partition %d), acks resumed %s after the fault ended; "+
		"settled %s after it; brokers logged %d lease losses, %d re-registrations; controller wrote %d partition states, leaders %d ISR changes; leader epoch rose on %v",
		ph.name, ph.back.Sub(ph.from).Round(time.Millisecond), ph.acksDuring, ph.worstGap.Round(time.Millisecond),
		ph.worstPartition, ph.resume.Round(time.Millisecond), ph.settled.Sub(ph.back).Round(time.Millisecond),
		ph.leaseLost, ph.reregistered, ph.decisions, ph.isrWrites, ph.moved)
	if ph.elected > 0 {
		s += fmt.Sprintf("; new leader/controller after %s", ph.elected.Round(time.Millisecond))
	}
	for _, n := range ph.notes {
		s += "; " + n
	}
	return s
}

func s17mMarker(ph *s17mPhase) string { return "S-17 fault: " + ph.name }

// begin records the partition states and marks every log.
func (r *s17mRun) begin(name string) *s17mPhase {
	r.t.Helper()
	ph := &s17mPhase{name: name}
	for p := range r.partitions {
		ph.before = append(ph.before, r.mc.mustState(r.topic, p))
	}
	r.mc.noteAll("%s", s17mMarker(ph))
	ph.from = time.Now()
	r.phases = append(r.phases, ph)
	return ph
}

// waitNewLeader waits until the running members agree on a leader other
// than old and returns how long that took since the phase began.
func (r *s17mRun) waitNewLeader(old *etcdMember) time.Duration {
	r.t.Helper()
	ph := r.phases[len(r.phases)-1]
	waitFor(r.t, 30*time.Second, func() error {
		m, err := r.mc.leader()
		if err != nil {
			return err
		}
		if m == old {
			return fmt.Errorf("%s still leads", old.name)
		}
		return nil
	})
	return time.Since(ph.from)
}

// settle waits until the cluster is whole again, then measures the
// phase: ack gaps, broker log lines, leadership moves.
func (r *s17mRun) settle(ph *s17mPhase) {
	r.t.Helper()
	r.mc.waitHealthy(r.settleTimeout)
	r.mc.waitFullISR(r.topic, r.partitions)
	for _, b := range r.mc.brokers {
		if err := b.exited(); err != nil {
			r.t.Fatal(err)
		}
	}
	// Every partition acknowledges again, at least T_s after the fault
	// ended, so a late lease expiry shows up in the gaps.
	waitFor(r.t, r.settleTimeout, func() error {
		for p := range r.partitions {
			if len(r.w.acksBetween(p, ph.back.Add(sessionTimeout), time.Now())) == 0 {
				return fmt.Errorf("partition %d: no ack since the fault ended + T_s", p)
			}
		}
		return nil
	})
	ph.settled = time.Now()
	ph.acksDuring = len(r.w.acksBetween(-1, ph.from, ph.back))
	for p := range r.partitions {
		acks := r.w.acksBetween(p, ph.from.Add(-time.Minute), ph.settled)
		if d := resumeDelay(acks, ph.from, ph.settled); d > ph.worstGap {
			ph.worstGap, ph.worstPartition = d, p
		}
		ph.resume = max(ph.resume, resumeDelay(acks, ph.back, ph.settled))
		if _, ok := r.hist.firstAfter(p, ph.from, func(s partitionState) bool { return s.LeaderEpoch > ph.before[p].LeaderEpoch }); ok {
			ph.moved = append(ph.moved, p)
		}
	}
	for _, b := range r.mc.brokers {
		for _, l := range linesAfter(b.log(), s17mMarker(ph)) {
			switch {
			case strings.Contains(l, "registration lease lost"):
				ph.leaseLost++
			case strings.Contains(l, "broker registered again"):
				ph.reregistered++
			case strings.Contains(l, "replica: ISR changed"):
				ph.isrWrites++
			case strings.Contains(l, "controller: partition state changed"):
				ph.decisions++
			}
		}
	}
	r.t.Logf("%s", ph)
}

// oneMemberBound checks what must hold while one member of three is
// down: etcd keeps its quorum, so no partition goes without acks for
// longer than T_s + 5 s.
func (r *s17mRun) oneMemberBound(ph *s17mPhase) {
	r.t.Helper()
	r.oneMemberWorstAckGap = max(r.oneMemberWorstAckGap, ph.worstGap)
	if ph.worstGap > r.bound {
		r.t.Errorf("%s: partition %d acknowledged nothing for %s with etcd's quorum intact, above T_s + 5 s",
			ph.name, ph.worstPartition, ph.worstGap.Round(time.Millisecond))
	}
}

// quorumLoss takes two of the three members down (the leader and a
// follower) for d, by SIGKILL or SIGSTOP, and checks that nothing
// changes meanwhile and that writes resume within the bound after.
func (r *s17mRun) quorumLoss(name string, d time.Duration, stop bool) {
	r.t.Helper()
	mc := r.mc
	lead := mc.waitLeader(10 * time.Second)
	down := []*etcdMember{lead}
	var survivor *etcdMember
	for _, m := range mc.members {
		switch {
		case m == lead:
		case len(down) < 2:
			down = append(down, m)
		default:
			survivor = m
		}
	}
	ph := r.begin(fmt.Sprintf("%s of %s and %s, %s survives", name, down[0].name, down[1].name, survivor.name))
	for _, m := range down {
		if stop {
			m.signal(syscall.SIGSTOP)
		} else {
			m.kill()
		}
	}
	downAt := time.Now()

	// The survivor's own copy of the partition states, polled locally.
	// Entries committed before the fault may still be applied during
	// its first second; from then on nothing may change.
	time.Sleep(r.grace)
	var (
		base    []partitionState
		baseRev int64
	)
	waitFor(r.t, 10*time.Second, func() (err error) {
		base, baseRev, err = mc.localStates(survivor, r.topic, r.partitions)
		return err
	})
	for p := range r.partitions {
		if !sameVersion(base[p], ph.before[p]) {
			ph.notes = append(ph.notes, fmt.Sprintf("partition %d changed as the members went down: %v -> %v", p, ph.before[p], base[p]))
		}
	}
	// A read that times out (a loaded machine; each read dials anew) is
	// counted, not failed: the check needs reads, not every read.
	reads, changes, failedReads := 0, 0, 0
	var lastReadErr error
	for time.Since(downAt) < d {
		sts, rev, err := mc.localStates(survivor, r.topic, r.partitions)
		if err != nil {
			failedReads++
			lastReadErr = err
			time.Sleep(200 * time.Millisecond)
			continue
		}
		reads++
		if rev != baseRev {
			changes++
			r.t.Errorf("%s: survivor %s applied revision %d (was %d) without a quorum", ph.name, survivor.name, rev, baseRev)
		}
		for p := range r.partitions {
			if !sameVersion(sts[p], base[p]) {
				changes++
				r.t.Errorf("%s: partition %d changed without a quorum: %v -> %v", ph.name, p, base[p], sts[p])
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	if reads == 0 {
		r.t.Errorf("%s: survivor %s: no read succeeded without a quorum (%d failed, last: %v)", ph.name, survivor.name, failedReads, lastReadErr)
	}
	noQuorumUntil := time.Now()
	for _, m := range down {
		if stop {
			m.signal(syscall.SIGCONT)
		} else {
			m.start()
		}
	}
	ph.back = time.Now()
	// The quorum is back once a linearizable read succeeds.
	waitFor(r.t, 30*time.Second, func() error {
		_, err := mc.revision()
		return err
	})
	quorumAt := time.Now()
	// The first committed states after the quorum returned: nothing was
	// decided while it was away, and nothing needs deciding now unless a
	// registration lease ran out meanwhile.
	var differ []int32
	for p := range r.partitions {
		if st, err := mc.state(r.topic, p); err != nil || !sameVersion(st, base[p]) {
			differ = append(differ, p)
		}
	}
	ph.notes = append(ph.notes, fmt.Sprintf("states read as the quorum returned differ from those before on partitions %v", differ))
	ph.notes = append(ph.notes, fmt.Sprintf("survivor read %d times without a change (%d changes, %d reads timed out); quorum answered %s after the members returned",
		reads, changes, failedReads, quorumAt.Sub(ph.back).Round(time.Millisecond)))

	// No broker may claim a state write while there was no quorum.
	for _, b := range mc.brokers {
		for _, l := range linesAfter(b.log(), s17mMarker(ph)) {
			at, ok := logTime(l)
			if !ok || at.Before(downAt.Add(r.grace)) || !at.Before(noQuorumUntil) {
				continue
			}
			if strings.Contains(l, "controller: partition state changed") || strings.Contains(l, "replica: ISR changed") {
				r.t.Errorf("%s: %s wrote a state without a quorum: %s", ph.name, b.name, l)
			}
		}
	}
	// Acks without a quorum come only from the leaders etcd recorded.
	byLeader, byOther := 0, 0
	for p := range r.partitions {
		for _, b := range mc.brokers {
			for _, bw := range r.w.batches.by(b.id, p, downAt.Add(r.grace), noQuorumUntil) {
				if b.id == base[p].Leader {
					byLeader += bw.records
					continue
				}
				byOther += bw.records
				r.t.Errorf("%s: broker %d acknowledged %d records on partition %d at %s; etcd's leader is %d",
					ph.name, b.id, bw.records, p, bw.at.Format("15:04:05.000"), base[p].Leader)
			}
		}
	}
	ph.notes = append(ph.notes, fmt.Sprintf("without a quorum %d records acknowledged by the recorded leaders, %d by others", byLeader, byOther))

	r.settle(ph)
	// TESTPLAN's bound counts from the quorum's return.
	resume := time.Duration(0)
	var worst int32
	for p := range r.partitions {
		acks := r.w.acksBetween(p, ph.from.Add(-time.Minute), ph.settled)
		if d := resumeDelay(acks, quorumAt, ph.settled); d > resume {
			resume, worst = d, p
		}
	}
	ph.notes = append(ph.notes, fmt.Sprintf("acks resumed within %s of the quorum answering (partition %d)", resume.Round(time.Millisecond), worst))
	r.quorumResumeWorst = max(r.quorumResumeWorst, resume)
	if resume > r.bound {
		r.t.Errorf("%s: partition %d acknowledged nothing for %s after the quorum returned, above T_s + 5 s",
			ph.name, worst, resume.Round(time.Millisecond))
	}
}

// sameState reports whether two partition states are the same version.
func sameVersion(a, b partitionState) bool {
	return a.Leader == b.Leader && a.LeaderEpoch == b.LeaderEpoch && a.PartitionEpoch == b.PartitionEpoch &&
		slices.Equal(a.ISR, b.ISR)
}

// cutController cuts the controller broker from every etcd member for d,
// checks that another broker takes over and that the cut one stops
// acting, then heals.
func (r *s17mRun) cutController(cycle int, d time.Duration) {
	r.t.Helper()
	mc := r.mc
	var ctl int32
	waitFor(r.t, 30*time.Second, func() error {
		var err error
		if ctl, err = mc.controllerInEtcd(); err != nil {
			return err
		}
		for _, b := range mc.brokers {
			if got, err := mc.controllerSeenBy(b); err != nil || got != ctl {
				return fmt.Errorf("broker %d: controller %d (%v), etcd says %d", b.id, got, err, ctl)
			}
		}
		return nil
	})
	ph := r.begin(fmt.Sprintf("cut %d: controller broker %d cut from etcd", cycle, ctl))
	led := make(map[int32]int32) // partition -> the cut broker's leader epoch
	for p, s := range ph.before {
		if s.Leader == ctl {
			led[int32(p)] = s.LeaderEpoch
		}
	}
	mc.cutEtcd(ctl)
	cutAt := time.Now()

	// Another broker becomes controller, in etcd and for every broker
	// that still reaches it.
	var next int32
	waitFor(r.t, r.bound+10*time.Second, func() error {
		var err error
		if next, err = mc.controllerInEtcd(); err != nil {
			return err
		}
		if next == ctl {
			return fmt.Errorf("broker %d is still the controller", ctl)
		}
		for _, b := range mc.brokers {
			if b.id == ctl {
				continue
			}
			if got, err := mc.controllerSeenBy(b); err != nil || got != next {
				return fmt.Errorf("broker %d: controller %d (%v), etcd says %d", b.id, got, err, next)
			}
		}
		return nil
	})
	ph.elected = time.Since(cutAt)
	r.controllerElections = append(r.controllerElections, ph.elected)
	if ph.elected > r.bound {
		r.t.Errorf("%s: broker %d became controller after %s, above T_s + 5 s", ph.name, next, ph.elected.Round(time.Millisecond))
	}
	// The partitions it led move to leaders that reach etcd.
	for p, e := range led {
		st := mc.waitLeaderChange(r.topic, p, ctl, e, r.bound+10*time.Second)
		ph.notes = append(ph.notes, fmt.Sprintf("partition %d: broker %d leads at epoch %d after %s",
			p, st.Leader, st.LeaderEpoch, time.Since(cutAt).Round(time.Millisecond)))
	}
	sleepUntil(cutAt.Add(d))
	seen, err := mc.controllerSeenBy(mc.brokers[ctl])
	ph.notes = append(ph.notes, fmt.Sprintf("controller %d after %s; the cut broker reports controller %d (%v) at the end of the cut",
		next, ph.elected.Round(time.Millisecond), seen, err))
	mc.healEtcd(ctl)
	ph.back = time.Now()

	// The cut broker wrote nothing and acknowledged nothing it no longer
	// led.
	tried := 0
	cutLog := mc.brokers[ctl].log()
	for _, l := range linesAfter(cutLog, s17mMarker(ph)) {
		if strings.Contains(l, "etcd links healed") {
			break
		}
		switch {
		case strings.Contains(l, "controller: partition state changed"), strings.Contains(l, "replica: ISR changed"):
			r.t.Errorf("%s: the cut broker wrote a state: %s", ph.name, l)
		case strings.Contains(l, "controller: partition state write failed"):
			tried++
		}
	}
	zombie := 0
	for p := range led {
		o, ok := r.hist.firstAfter(p, cutAt, func(s partitionState) bool { return s.LeaderEpoch > led[p] })
		if !ok {
			continue
		}
		until := ph.back
		if back, ok := r.hist.firstAfter(p, o.at, func(s partitionState) bool { return s.Leader == ctl }); ok && back.at.Before(until) {
			until = back.at
		}
		for _, bw := range r.w.batches.by(ctl, p, o.at.Add(r.grace), until) {
			zombie += bw.records
			r.t.Errorf("%s: cut broker %d acknowledged %d records on partition %d at %s, after epoch %d was committed at %s",
				ph.name, ctl, bw.records, p, bw.at.Format("15:04:05.000"), o.LeaderEpoch, o.at.Format("15:04:05.000"))
		}
	}
	ph.notes = append(ph.notes, fmt.Sprintf("the cut broker logged %d failed controller writes and acknowledged %d records on partitions it lost",
		tried, zombie))

	r.settle(ph)
	// After the heal the old controller catches up and follows the new.
	waitFor(r.t, 30*time.Second, func() error {
		now, err := mc.controllerInEtcd()
		if err != nil {
			return err
		}
		for _, b := range mc.brokers {
			if got, err := mc.controllerSeenBy(b); err != nil || got != now {
				return fmt.Errorf("broker %d: controller %d (%v), etcd says %d", b.id, got, err, now)
			}
		}
		return nil
	})
}
