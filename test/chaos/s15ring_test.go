package chaos

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestS15RingAndSplits is the rest of TESTPLAN S-15 (network partitions):
// a rotation of three partitions of the brokers' replication and etcd
// paths on a netCluster, each held for a while, then healed, waiting for
// full ISR before the next. Clients reach every broker in every kind; the
// single etcd process is not itself cut, only the brokers' paths to it.
//
//	kind      | cut                                        | what must hold
//	----------+--------------------------------------------+------------------------------------------
//	ring      | replication A <-> C both ways; A-B, B-C    | every node sees a majority: A drops C and
//	          | and every etcd path intact                 | C drops A from the ISRs they lead (>= min
//	          |                                            | ISR 2), no leader moves, every partition
//	          |                                            | acknowledges writes while cut
//	etcd-maj  | the leader L of partition 0 from etcd and  | a new leader of partition 0 within T_s + 5 s;
//	          | from both others' replication (S-03)       | L leaves every ISR; every partition is
//	          |                                            | written on the majority side while cut;
//	          |                                            | L acknowledges nothing
//	etcd-min  | X keeps etcd; the other two lose etcd but  | X leads every partition within T_s + 5 s;
//	          | reach each other; X is cut from both       | nothing produced during the cut is
//	          |                                            | acknowledged; the old leaders acknowledge
//	          |                                            | nothing once their leadership moved;
//	          |                                            | direct acks=all produces fail
//
// Why nothing written during etcd-min can be acknowledged: every
// partition needs two in-sync copies (min.insync.replicas 2) and, when the
// cut begins, has all three brokers in its ISR (the rotation waits for
// full ISR). X reaches no other broker, so nothing X appends after the cut
// reaches a second copy, and once its ISR shrinks to {X} (the controller
// drops the others when their leases expire) strict min ISR (KIP-966)
// stops its high watermark. A leader Y without etcd still has X in its
// ISR; X does not fetch from it, and removing X is a compare-and-swap in
// etcd that Y cannot make, so Y's high watermark cannot pass X's last
// fetch either, although Z still copies Y's log. The controller on X's
// side (X itself, by election once the others' candidate keys expire with
// their leases) moves the others' leaderships to X, the one eligible
// in-sync replica, with an ISR of {X}. So the figures asserted are:
//
//  1. 0 acks, while the cut lasts, of records produced after it began
//     (by the workload's send numbers). Records produced before may still
//     be acknowledged late, and rightly: when the others' leases expire
//     a moment apart, the controller may first drop only one of them from
//     the ISR of a partition X leads, and X's high watermark then moves up
//     to what the other had fetched before the cut (two copies). These
//     late commits are counted, not asserted.
//  2. 0 batches acknowledged by Y or Z on a partition from the moment etcd
//     shows its leadership moved until they are elected again (zombie
//     leaders), and none from the cut plus 1 s on partitions they did not
//     lead. A late commit is the one exception, counted, not failed: a
//     batch of records all produced before the cut, found in the final
//     log at their acknowledged offsets in the leader epoch of the cut
//     (each ISR member of that epoch had copied them before the cut; the
//     old leader's answer came after). See lateCommit; etcd-maj's L is
//     judged the same way.
//  3. Direct acks=all produces to each old leader and then to X all fail.
//
// The appends the old leaders took meanwhile were never acknowledged;
// after the heal they are truncated away (KIP-101), and the checker finds
// every acknowledged value once and at its offset.
//
// Short profile: each kind once, held 12 s (ring: T_lag 5 s passes before
// the shrink) or 10 s. Long profile: the rotation for 5 minutes, each cut
// held 15 s, with the roles rotating over the brokers. The checker then
// asserts 0 anomalies over the whole run.
func TestS15RingAndSplits(t *testing.T) {
	const (
		topic      = "s15r"
		partitions = 5
	)
	runFor := pick(0, 5*time.Minute)
	nc := startNetCluster(t)
	c := nc.testCluster
	c.createTopic(topic, partitions)
	hist := watchStates(c, topic, partitions)
	w := startWorkload(t, c, topic, partitions)
	w.waitAcks(0, 50, 30*time.Second)
	r := &s15Run{t: t, nc: nc, c: c, w: w, hist: hist, topic: topic, partitions: partitions}

	began := time.Now()
	var phases []*s15Phase
	for cycle := 0; ; cycle++ {
		kind, round := cycle%3, cycle/3
		if longProfile() {
			if cycle > 0 && time.Since(began)+s15Hold(kind) > runFor {
				break
			}
		} else if cycle == 3 {
			break
		}
		var ph *s15Phase
		switch kind {
		case 0:
			a := int32(round % numBrokers)
			ph = r.ring(cycle, a, (a+2)%numBrokers, (a+1)%numBrokers)
		case 1:
			ph = r.etcdWithMajority(cycle, c.mustState(topic, 0).Leader)
		case 2:
			ctl, err := controllerOf(c)
			if err != nil {
				t.Fatal(err)
			}
			ph = r.etcdWithMinority(cycle, (ctl+1+int32(round))%numBrokers, ctl)
		}
		phases = append(phases, ph)
		t.Logf("cycle %d: %s", cycle, ph)
		if t.Failed() {
			break
		}
	}
	w.stop(30 * time.Second)
	hist.stop()
	res := w.check(c)
	fencedAcks := r.checkFenced()
	for _, ph := range phases {
		t.Logf("S-15 %s", ph)
	}
	t.Logf("S-15 ring and splits: %d phases in %s; %d brokers cut from etcd watched, %v; %v; failures: %v",
		len(phases), time.Since(began).Round(time.Second), len(r.fenced), fencedAcks, res, failureKinds(w))
}

const (
	// s15Grace covers replica fetches and produce answers already on
	// their way when a cut begins.
	s15Grace = time.Second
	// s15ElectionBound is TESTPLAN's "within T_s + a few seconds".
	s15ElectionBound = sessionTimeout + 5*time.Second
	// s15Wait bounds the waits for what a partition must reach while cut
	// (an ISR shrink, a leader, acks); it is not a speed figure.
	s15Wait = 30 * time.Second
)

// s15Hold is how long a cut of kind (0 ring, 1 etcd-maj, 2 etcd-min) is
// held.
func s15Hold(kind int) time.Duration {
	if kind == 0 {
		return pick(12*time.Second, 15*time.Second)
	}
	return pick(10*time.Second, 15*time.Second)
}

// s15Split is one network partition: the brokers cut off from etcd and
// the broker pairs whose replication is cut both ways (neither's fetcher
// reaches the other). Clients reach every broker.
type s15Split struct {
	noEtcd []int32
	pairs  [][2]int32
}

// apply cuts the split's links and notes cycle and what in every
// broker's log, after cutMark(cycle). A
// link holds one rule, so the replica tags each broker's Kafka link must
// block are gathered first and cut with one rule per link.
func (s s15Split) apply(nc *netCluster, cycle int, what string) {
	blocked := make(map[int32]map[string]bool)
	block := func(at, fetcher int32) {
		if blocked[at] == nil {
			blocked[at] = make(map[string]bool)
		}
		blocked[at][replicaTag(fetcher)] = true
	}
	for _, pr := range s.pairs {
		block(pr[0], pr[1])
		block(pr[1], pr[0])
	}
	for id, tags := range blocked {
		nc.cutKafka(id, func(tag string) bool { return tags[tag] })
	}
	for _, id := range s.noEtcd {
		nc.etcdLinks[id].cut(all)
	}
	for _, b := range nc.brokers {
		b.note("%s %s", cutMark(cycle), what)
	}
}

// s15Run holds what the phases of TestS15RingAndSplits share. It is used
// by the test goroutine only.
type s15Run struct {
	t          *testing.T
	nc         *netCluster
	c          *testCluster
	w          *workload
	hist       *stateHistory
	topic      string
	partitions int32
	fenced     []s15Fenced
}

// s15Phase is what one phase measured.
type s15Phase struct {
	cycle int
	kind  string
	roles string
	// moved is the time from the cut until the cluster had reacted: ring,
	// the last ISR shrink; etcd-maj, a new leader of partition 0;
	// etcd-min, X leading every partition.
	moved time.Duration
	// acks are the records each broker acknowledged (producer hook) from
	// the cut plus s15Grace until the heal.
	acks map[int32]int
	// writable lists the partitions with workload acks in that window.
	writable []int32
	// late counts the acks in that window of records produced before
	// the cut (etcd-min).
	late   int
	probes []string
	// truncated counts the records each broker truncated from its logs of
	// the topic after the heal (etcd-min: the old leaders' appends).
	truncated map[int32]int
	held      time.Duration
	// resumed is the time from the heal until every partition had an ack
	// again; fullISR until every partition had its full ISR.
	resumed, fullISR time.Duration
}

func (ph *s15Phase) String() string {
	var acks []string
	for id := range int32(numBrokers) {
		acks = append(acks, fmt.Sprintf("%d:%d", id, ph.acks[id]))
	}
	s := fmt.Sprintf("%s (%s), held %s: reacted after %s; records acked per broker while cut %s; writable partitions %v; acks on every partition %s after heal, full ISR after %s",
		ph.kind, ph.roles, ph.held.Round(time.Millisecond), ph.moved.Round(time.Millisecond),
		strings.Join(acks, " "), ph.writable, ph.resumed.Round(time.Millisecond), ph.fullISR.Round(time.Millisecond))
	if ph.kind == "etcd-min" {
		s += fmt.Sprintf("; late acks of records produced before the cut %d", ph.late)
	}
	if ph.truncated != nil {
		var tr []string
		for id := range int32(numBrokers) {
			tr = append(tr, fmt.Sprintf("%d:%d", id, ph.truncated[id]))
		}
		s += "; records truncated after heal per broker " + strings.Join(tr, " ")
	}
	if len(ph.probes) > 0 {
		s += "; probes: " + strings.Join(ph.probes, ", ")
	}
	return s
}

// states reads the committed state of every partition.
func (r *s15Run) states() []partitionState {
	r.t.Helper()
	out := make([]partitionState, r.partitions)
	for p := range r.partitions {
		out[p] = r.c.mustState(r.topic, p)
	}
	return out
}

// ledBy lists the partitions node leads in sts.
func ledBy(sts []partitionState, node int32) []int32 {
	var out []int32
	for p, s := range sts {
		if s.Leader == node {
			out = append(out, int32(p))
		}
	}
	return out
}

// waitStates polls every partition's state until ok holds for all of
// them or s15Wait passes; it returns how long that took, or an error
// naming a partition that did not get there.
func (r *s15Run) waitStates(from time.Time, ok func(p int32, s partitionState) bool) (time.Duration, error) {
	err := poll(s15Wait, func() error {
		for p := range r.partitions {
			s, err := r.c.state(r.topic, p)
			if err != nil {
				return err
			}
			if !ok(p, s) {
				return fmt.Errorf("%s-%d: %v", r.topic, p, s)
			}
		}
		return nil
	})
	return time.Since(from), err
}

// waitAcksSince waits until every partition has n workload acks that
// arrived at or after since, for up to s15Wait.
func (r *s15Run) waitAcksSince(since time.Time, n int) error {
	return poll(s15Wait, func() error {
		for p := range r.partitions {
			if got := len(r.w.acksBetween(p, since, time.Now().Add(time.Hour))); got < n {
				return fmt.Errorf("partition %d: %d acks since %s", p, got, since.Format("15:04:05.000"))
			}
		}
		return nil
	})
}

// heal heals every link, then measures how long until every partition
// has an ack and its full ISR again.
func (r *s15Run) heal(ph *s15Phase, cutAt time.Time) time.Time {
	r.t.Helper()
	r.nc.healAll()
	healedAt := time.Now()
	ph.held = healedAt.Sub(cutAt)
	if err := r.waitAcksSince(healedAt, 1); err != nil {
		r.t.Errorf("cycle %d (%s): no acks after healing: %v", ph.cycle, ph.kind, err)
	}
	ph.resumed = time.Since(healedAt)
	r.c.waitFullISR(r.topic, r.partitions)
	ph.fullISR = time.Since(healedAt)
	for _, b := range r.c.brokers {
		if err := b.exited(); err != nil {
			r.t.Fatal(err)
		}
	}
	return healedAt
}

// account fills ph.acks and ph.writable for the window [from, to).
func (r *s15Run) account(ph *s15Phase, from, to time.Time) {
	ph.acks = make(map[int32]int)
	for node := range int32(numBrokers) {
		for p := range r.partitions {
			for _, b := range r.w.batches.by(node, p, from, to) {
				ph.acks[node] += b.records
			}
		}
	}
	for p := range r.partitions {
		if len(r.w.acksBetween(p, from, to)) > 0 {
			ph.writable = append(ph.writable, p)
		}
	}
}

// s15Fenced is a broker cut off from etcd in one phase: from from on,
// it must acknowledge nothing on any partition until etcd shows it
// elected leader of that partition at an epoch above the one before the
// cut, late commits apart (see lateCommit). With afterMove, on a
// partition it led the window starts only when etcd shows the partition
// at a new leader epoch. cutSeq is the workload's first send number at
// or after the cut.
type s15Fenced struct {
	cycle     int
	kind      string
	node      int32
	before    []partitionState
	cutSeq    int64
	from      time.Time
	afterMove bool
}

// fence records that node must acknowledge nothing from from on until it
// is elected again; checkFenced checks it once the history is complete.
func (r *s15Run) fence(ph *s15Phase, node int32, before []partitionState, cutSeq int64, from time.Time, afterMove bool) {
	r.fenced = append(r.fenced, s15Fenced{ph.cycle, ph.kind, node, before, cutSeq, from, afterMove})
}

// s15TieSlack bounds how far apart franz-go reports a batch to the
// producer's hook and its records to their promises: both follow one
// produce response, on different goroutines. On a loaded machine they
// were up to 50 ms apart; the bound is ten times that, and no wider, so
// that a late answer of the old leader is not taken for a run of records
// the new leader acknowledged a moment later.
const s15TieSlack = 500 * time.Millisecond

// s15Candidates returns every run of b.records franz-go acks of the
// partition (recs, sorted by offset) at consecutive offsets whose
// promises all ran within s15TieSlack of the hook seeing b: the records
// of b are one of them. The hook gives a batch's broker and size but not
// its offsets, and it does not see a partition's batches in offset order
// when two answers race (a late answer from an old leader, say), so a
// batch is not tied to one run by order.
func s15Candidates(recs []ack, b batchWrite) [][]ack {
	var near []ack
	for _, a := range recs {
		if a.at.Sub(b.at).Abs() <= s15TieSlack {
			near = append(near, a)
		}
	}
	var out [][]ack
	for i := 0; b.records > 0 && i+b.records <= len(near); i++ {
		run := near[i : i+b.records]
		if run[len(run)-1].offset-run[0].offset == int64(b.records-1) {
			out = append(out, run)
		}
	}
	return out
}

// lateCommit returns "" if a batch which f.node acknowledged on partition
// p in its fenced window, and whose records are one of the candidate runs
// (see s15Candidates), is a late commit, and otherwise why it may not be.
// A late commit answers writes the broker took in the leadership it held
// at the cut, which committed there because every ISR member of that
// epoch had copied them before the cut; the answer (or the broker's own
// fsync) came after. So every record of every candidate run must
//
//	be produced before the cut         seq < f.cutSeq
//	be in the final log at its offset  log[offset] holds its value
//	carry the leader epoch of the cut  f.before[p].LeaderEpoch, led by f.node
//
// Anything else may be an acknowledgement from a leadership the broker no
// longer held.
func (f s15Fenced) lateCommit(p int32, runs [][]ack, log map[int64]*kgo.Record) string {
	old := f.before[p]
	switch {
	case old.Leader != f.node:
		return fmt.Sprintf("broker %d did not lead it at the cut (%v)", f.node, old)
	case len(runs) == 0:
		return fmt.Sprintf("no run of acknowledged records at consecutive offsets, promised within %s, fits the batch", s15TieSlack)
	}
	for _, run := range runs {
		for _, a := range run {
			rec := log[a.offset]
			why := ""
			switch {
			case a.seq >= f.cutSeq:
				why = fmt.Sprintf("%s at offset %d was produced after the cut (send %d, first after the cut %d)", a.value, a.offset, a.seq, f.cutSeq)
			case rec == nil:
				why = fmt.Sprintf("%s at offset %d is not in the final log", a.value, a.offset)
			case string(rec.Value) != a.value:
				why = fmt.Sprintf("offset %d holds %s in the final log, not %s", a.offset, rec.Value, a.value)
			case rec.LeaderEpoch != old.LeaderEpoch:
				why = fmt.Sprintf("%s at offset %d was written at leader epoch %d, not %d of the cut", a.value, a.offset, rec.LeaderEpoch, old.LeaderEpoch)
			default:
				continue
			}
			if len(runs) > 1 {
				why += fmt.Sprintf(" (one of %d runs of records the batch may hold)", len(runs))
			}
			return why
		}
	}
	return ""
}

// s15FenceResult counts the batches fenced brokers acknowledged in their
// windows.
type s15FenceResult struct {
	batches int // acknowledged by a fenced broker in its window
	late    int // late commits (see lateCommit), allowed
	zombie  int // the rest: must be zero
}

func (f s15FenceResult) String() string {
	return fmt.Sprintf("%d batches acknowledged by one of them (late commits %d, zombie acks %d)", f.batches, f.late, f.zombie)
}

// checkFenced judges every batch a fenced broker acknowledged on a
// partition in its window, which ends when the history first shows it
// leader of that partition at a higher epoch (less a second, as S-03
// does, since the history sees an election up to a poll late). A late
// commit is logged and counted; any other batch fails the test. The log
// is read back for the judgement, so call it after the workload and the
// history stopped, so that no ack or election is missing.
func (r *s15Run) checkFenced() s15FenceResult {
	var res s15FenceResult
	r.w.mu.Lock()
	acks := slices.Clone(r.w.mu.acks)
	r.w.mu.Unlock()
	var logs map[int32][]*kgo.Record
	for _, f := range r.fenced {
		for p := range r.partitions {
			from, until := f.from, time.Now()
			epoch := f.before[p].LeaderEpoch
			if f.afterMove && f.before[p].Leader == f.node {
				o, ok := r.hist.firstAfter(p, f.from.Add(-s15Grace), func(s partitionState) bool { return s.LeaderEpoch > epoch })
				if !ok {
					continue // never moved: acks need X, checked by send number
				}
				from = o.at
			}
			if o, ok := r.hist.firstAfter(p, f.from, func(s partitionState) bool { return s.Leader == f.node && s.LeaderEpoch > epoch }); ok {
				until = o.at.Add(-time.Second)
			}
			batches := r.w.batches.by(f.node, p, from, until)
			if len(batches) == 0 {
				continue
			}
			if logs == nil {
				logs, _ = readLogs(r.t, r.c, r.topic, r.partitions)
			}
			logAt := make(map[int64]*kgo.Record)
			for _, rec := range logs[p] {
				logAt[rec.Offset] = rec
			}
			var recs []ack
			for _, a := range acks {
				if a.stack == stackFranz && a.partition == p && a.seq >= 0 && a.offset >= 0 {
					recs = append(recs, a)
				}
			}
			slices.SortFunc(recs, func(a, b ack) int { return cmp.Compare(a.offset, b.offset) })
			for _, b := range batches {
				res.batches++
				what := fmt.Sprintf("cycle %d (%s): broker %d acknowledged %d records on partition %d at %s",
					f.cycle, f.kind, f.node, b.records, p, b.at.Format("15:04:05.000"))
				runs := s15Candidates(recs, b)
				if why := f.lateCommit(p, runs, logAt); why != "" {
					res.zombie++
					r.t.Errorf("%s: %s", what, why)
					continue
				}
				res.late++
				var offs []string
				for _, run := range runs {
					offs = append(offs, fmt.Sprintf("%d-%d", run[0].offset, run[len(run)-1].offset))
				}
				r.t.Logf("%s: a late commit of records produced before the cut, in the final log at leader epoch %d (offsets %s)",
					what, epoch, strings.Join(offs, " or "))
			}
		}
	}
	return res
}

// ring cuts replication between a and c both ways; b reaches both, and
// everyone reaches etcd.
func (r *s15Run) ring(cycle int, a, b, c int32) *s15Phase {
	t := r.t
	ph := &s15Phase{cycle: cycle, kind: "ring", roles: fmt.Sprintf("A=%d B=%d C=%d, A<->C cut", a, b, c)}
	before := r.states()
	ledA, ledC := ledBy(before, a), ledBy(before, c)
	cutAt := time.Now()
	s15Split{pairs: [][2]int32{{a, c}}}.apply(r.nc, cycle, fmt.Sprintf("ring: replication %d <-> %d cut", a, c))

	// A drops C, C drops A, from the ISRs they lead; nothing else moves.
	moved, err := r.waitStates(cutAt, func(p int32, s partitionState) bool {
		switch {
		case slices.Contains(ledA, p):
			return !s.inISR(c)
		case slices.Contains(ledC, p):
			return !s.inISR(a)
		}
		return true
	})
	ph.moved = moved
	if err != nil {
		t.Errorf("cycle %d (ring): ISRs of partitions led by %d (%v) and %d (%v) not shrunk: %v", cycle, a, ledA, c, ledC, err)
	}
	shrunkAt := time.Now()
	for p, s := range r.states() {
		if s.Leader != before[p].Leader || s.LeaderEpoch != before[p].LeaderEpoch {
			t.Errorf("cycle %d (ring): partition %d changed leader: %v, before %v", cycle, p, s, before[p])
		}
		if len(s.ISR) < 2 {
			t.Errorf("cycle %d (ring): partition %d ISR below min ISR: %v", cycle, p, s)
		}
	}
	// Writes go on: every partition acknowledges after the shrinks.
	if err := r.waitAcksSince(shrunkAt, 10); err != nil {
		t.Errorf("cycle %d (ring): writes did not continue while cut: %v", cycle, err)
	}
	sleepUntil(cutAt.Add(s15Hold(0)))
	for p := range r.partitions {
		if o, ok := r.hist.firstAfter(p, cutAt, func(s partitionState) bool { return s.LeaderEpoch != before[p].LeaderEpoch }); ok {
			t.Errorf("cycle %d (ring): partition %d changed leader at %s: %v", cycle, p, o.at.Format("15:04:05.000"), o.partitionState)
		}
	}
	after := r.states()
	healedAt := r.heal(ph, cutAt)
	r.account(ph, cutAt.Add(s15Grace), healedAt)
	t.Logf("cycle %d (ring): before %v; while cut %v", cycle, before, after)
	return ph
}

// etcdWithMajority cuts leader off from etcd and from both others'
// replication (S-03 as part of the rotation).
func (r *s15Run) etcdWithMajority(cycle int, leader int32) *s15Phase {
	t := r.t
	others := otherBrokers(leader)
	ph := &s15Phase{cycle: cycle, kind: "etcd-maj", roles: fmt.Sprintf("minority %d without etcd, majority %v with etcd", leader, others)}
	before := r.states()
	cutSeq := r.w.sent.Load()
	cutAt := time.Now()
	s15Split{noEtcd: []int32{leader}, pairs: [][2]int32{{leader, others[0]}, {leader, others[1]}}}.
		apply(r.nc, cycle, fmt.Sprintf("etcd-maj: %d cut from etcd and replication", leader))

	// A new leader of partition 0 within T_s + 5 s.
	err := poll(s15ElectionBound+10*time.Second, func() error {
		s, err := r.c.state(r.topic, 0)
		if err != nil {
			return err
		}
		if s.Leader < 0 || s.Leader == leader || s.LeaderEpoch <= before[0].LeaderEpoch {
			return fmt.Errorf("partition 0: %v", s)
		}
		return nil
	})
	ph.moved = time.Since(cutAt)
	if err != nil {
		t.Errorf("cycle %d (etcd-maj): no new leader of partition 0: %v", cycle, err)
	} else if ph.moved > s15ElectionBound {
		t.Errorf("cycle %d (etcd-maj): new leader of partition 0 after %s, above T_s + 5 s", cycle, ph.moved.Round(time.Millisecond))
	}
	// The majority takes every partition over without the cut-off broker,
	// and writes go on there.
	if _, err := r.waitStates(cutAt, func(_ int32, s partitionState) bool {
		return s.Leader >= 0 && s.Leader != leader && !s.inISR(leader) && len(s.ISR) >= 2
	}); err != nil {
		t.Errorf("cycle %d (etcd-maj): majority did not take over every partition: %v", cycle, err)
	}
	movedAt := time.Now()
	if err := r.waitAcksSince(movedAt, 10); err != nil {
		t.Errorf("cycle %d (etcd-maj): majority side did not write every partition: %v", cycle, err)
	}
	sleepUntil(cutAt.Add(s15Hold(1)))
	after := r.states()
	healedAt := r.heal(ph, cutAt)
	r.account(ph, cutAt.Add(s15Grace), healedAt)
	r.fence(ph, leader, before, cutSeq, cutAt.Add(s15Grace), false)
	t.Logf("cycle %d (etcd-maj): before %v; while cut %v", cycle, before, after)
	return ph
}

// etcdWithMinority leaves x alone with etcd: the other two lose etcd but
// reach each other, and x is cut from both. ctl is the controller when
// the cut begins (for the log).
func (r *s15Run) etcdWithMinority(cycle int, x, ctl int32) *s15Phase {
	t := r.t
	others := otherBrokers(x)
	ph := &s15Phase{cycle: cycle, kind: "etcd-min",
		roles: fmt.Sprintf("%d alone with etcd, majority %v without etcd, controller %d", x, others, ctl)}
	before := r.states()
	cutSeq := r.w.sent.Load()
	cutAt := time.Now()
	s15Split{noEtcd: others, pairs: [][2]int32{{x, others[0]}, {x, others[1]}}}.
		apply(r.nc, cycle, fmt.Sprintf("etcd-min: %d alone with etcd, %v without etcd", x, others))
	// Every send numbered from here on was produced after the cut.
	firstSeq := r.w.sent.Load()

	// Straight to each partition's leader as of the cut, once fetches in
	// flight have landed: no acks=all write may succeed.
	time.Sleep(s15Grace)
	var wg sync.WaitGroup
	var mu sync.Mutex
	probe := func(node, p int32, v string) {
		defer wg.Done()
		code, err := produceDirect(r.c.brokers[node].addr(), r.topic, p, v)
		r.w.addProbe(p, -1, v, false)
		mu.Lock()
		defer mu.Unlock()
		got := "ok"
		switch ke := (*kerr.Error)(nil); {
		case err != nil:
			got = err.Error()
		case errors.As(kerr.ErrorForCode(code), &ke):
			got = ke.Message
		}
		ph.probes = append(ph.probes, fmt.Sprintf("p%d@%d %s", p, node, got))
		if err == nil && code == 0 {
			t.Errorf("cycle %d (etcd-min): broker %d acknowledged an acks=all write to partition %d", cycle, node, p)
		}
	}
	for p := range r.partitions {
		wg.Add(1)
		go probe(before[p].Leader, p, fmt.Sprintf("%s-etcdmin-%d-old-%d", r.topic, cycle, p))
	}

	// The controller on x's side moves everything to x, with ISR {x}.
	moved, err := r.waitStates(cutAt, func(_ int32, s partitionState) bool { return s.Leader == x })
	ph.moved = moved
	if err != nil {
		t.Errorf("cycle %d (etcd-min): broker %d does not lead every partition: %v", cycle, x, err)
	} else if moved > s15ElectionBound {
		t.Errorf("cycle %d (etcd-min): broker %d led every partition only after %s, above T_s + 5 s", cycle, x, moved.Round(time.Millisecond))
	}
	for p := range r.partitions {
		wg.Add(1)
		go probe(x, p, fmt.Sprintf("%s-etcdmin-%d-new-%d", r.topic, cycle, p))
	}
	wg.Wait()
	sleepUntil(cutAt.Add(s15Hold(2)))
	after := r.states()
	healedAt := r.heal(ph, cutAt)
	from := cutAt.Add(s15Grace)
	r.account(ph, from, healedAt)
	var fresh []string
	for _, a := range r.w.acksBetween(-1, cutAt, healedAt) {
		switch {
		case a.seq < 0 || a.value != r.w.value(a.partition, a.seq):
			// Not one of this workload's sends.
		case a.seq >= firstSeq:
			fresh = append(fresh, fmt.Sprintf("%s at %d/%d at %s", a.value, a.partition, a.offset, a.at.Format("15:04:05.000")))
		case !a.at.Before(from):
			ph.late++
		}
	}
	if len(fresh) > 0 {
		t.Errorf("cycle %d (etcd-min): %d records produced after the cut were acknowledged while it lasted; first: %s",
			cycle, len(fresh), strings.Join(fresh[:min(len(fresh), 5)], "; "))
	}
	for _, node := range others {
		r.fence(ph, node, before, cutSeq, from, true)
	}
	ph.truncated = make(map[int32]int)
	for _, b := range r.c.brokers {
		ph.truncated[b.id] = truncatedSince(b.log(), cutMark(cycle), r.topic)
	}
	t.Logf("cycle %d (etcd-min): before %v; while cut %v", cycle, before, after)
	return ph
}

// cutMark is the text apply notes in the broker logs at a cut.
func cutMark(cycle int) string { return fmt.Sprintf("S-15 cycle %d:", cycle) }

// truncatedSince sums the records a broker log says were truncated from
// partitions of topic after the last line holding mark. The replica
// package logs each truncation as a text line with topic, from (the log
// end before) and to (the offset truncated to).
func truncatedSince(log, mark, topic string) int {
	if i := strings.LastIndex(log, mark); i >= 0 {
		log = log[i:]
	}
	n := 0
	for line := range strings.Lines(log) {
		if !strings.Contains(line, "truncating follower log") || !strings.Contains(line, " topic="+topic+" ") {
			continue
		}
		var from, to int64 = -1, -1
		for f := range strings.FieldsSeq(line) {
			if v, ok := strings.CutPrefix(f, "from="); ok {
				from, _ = strconv.ParseInt(v, 10, 64)
			}
			if v, ok := strings.CutPrefix(f, "to="); ok {
				to, _ = strconv.ParseInt(v, 10, 64)
			}
		}
		if from > to && to >= 0 {
			n += int(from - to)
		}
	}
	return n
}

// otherBrokers lists the brokers other than id.
func otherBrokers(id int32) []int32 {
	var out []int32
	for b := range int32(numBrokers) {
		if b != id {
			out = append(out, b)
		}
	}
	return out
}

// controllerOf returns the controller: the election candidate with the
// oldest key (docs/etcd-keys.md, controller/<node>).
func controllerOf(c *testCluster) (int32, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	resp, err := c.etcdCli.Get(ctx, "/samsa/cluster-id")
	if err != nil {
		return 0, fmt.Errorf("get cluster id: %w", err)
	}
	if len(resp.Kvs) == 0 {
		return 0, errors.New("no cluster id in etcd")
	}
	prefix := "/samsa/" + strings.TrimSpace(string(resp.Kvs[0].Value)) + "/controller/"
	if resp, err = c.etcdCli.Get(ctx, prefix, clientv3.WithPrefix()); err != nil {
		return 0, fmt.Errorf("get %s: %w", prefix, err)
	}
	if len(resp.Kvs) == 0 {
		return 0, fmt.Errorf("no candidate under %s", prefix)
	}
	oldest := resp.Kvs[0]
	for _, kv := range resp.Kvs[1:] {
		if kv.CreateRevision < oldest.CreateRevision {
			oldest = kv
		}
	}
	id, err := strconv.ParseInt(strings.TrimPrefix(string(oldest.Key), prefix), 10, 32)
	if err != nil {
		return 0, fmt.Errorf("controller key %s: %w", oldest.Key, err)
	}
	return int32(id), nil
}

// TestS15LateCommitJudge checks s15Candidates and lateCommit on made-up
// batches: only a batch each of whose possible runs of records was
// produced before the cut, and is in the final log at its offsets in the
// epoch of the cut, passes as a late commit.
func TestS15LateCommitJudge(t *testing.T) {
	at := time.Date(2024, 1, 1, 0, 0, 10, 0, time.UTC)
	before := []partitionState{{Leader: 1, LeaderEpoch: 2, ISR: []int32{0, 1, 2}}, {Leader: 0, LeaderEpoch: 4}}
	f := s15Fenced{node: 1, before: before, cutSeq: 100}
	rec := func(o int64, v string, e int32) *kgo.Record {
		return &kgo.Record{Offset: o, Value: []byte(v), LeaderEpoch: e}
	}
	franz := func(seq, o int64, v string, d time.Duration) ack {
		return ack{seq: seq, partition: 0, offset: o, value: v, at: at.Add(d), stack: stackFranz}
	}
	// Offsets 7-8 one batch; 9 a batch produced after the cut; 11 another
	// stack's record (not listed); 12 a batch 5 s later.
	recs := []ack{
		franz(90, 7, "a", 0), franz(95, 8, "b", time.Millisecond),
		franz(101, 9, "c", 3*time.Second), franz(96, 10, "d", 3*time.Second),
		franz(97, 12, "e", 5*time.Second),
	}
	two := batchWrite{node: 1, partition: 0, records: 2, at: at}
	if runs := s15Candidates(recs, two); len(runs) != 1 || runs[0][0].offset != 7 {
		t.Fatalf("candidates of a batch of 2: %v", runs)
	}
	// 9 and 10 are consecutive and near, 12 is neither.
	one := batchWrite{node: 1, partition: 0, records: 1, at: at.Add(3 * time.Second)}
	if runs := s15Candidates(recs, one); len(runs) != 2 {
		t.Fatalf("candidates of a batch of 1: %v", runs)
	}
	if runs := s15Candidates(recs, batchWrite{node: 1, partition: 0, records: 2, at: at.Add(5 * time.Second)}); len(runs) != 0 {
		t.Fatalf("candidates across a gap: %v", runs)
	}
	good := map[int64]*kgo.Record{7: rec(7, "a", 2), 8: rec(8, "b", 2), 9: rec(9, "c", 2), 10: rec(10, "d", 2), 12: rec(12, "e", 2)}
	if why := f.lateCommit(0, s15Candidates(recs, two), good); why != "" {
		t.Errorf("late commit rejected: %s", why)
	}
	for _, tc := range []struct {
		name string
		p    int32
		b    batchWrite
		log  map[int64]*kgo.Record
	}{
		{"produced after the cut (one of two runs)", 0, one, good},
		{"not in the final log", 0, two, map[int64]*kgo.Record{7: rec(7, "a", 2)}},
		{"another value at the offset", 0, two, map[int64]*kgo.Record{7: rec(7, "a", 2), 8: rec(8, "x", 2)}},
		{"a later epoch", 0, two, map[int64]*kgo.Record{7: rec(7, "a", 2), 8: rec(8, "b", 3)}},
		{"a partition it did not lead", 1, two, good},
		{"no run fits", 0, batchWrite{node: 1, partition: 0, records: 3, at: at}, good},
	} {
		if why := f.lateCommit(tc.p, s15Candidates(recs, tc.b), tc.log); why == "" {
			t.Errorf("%s: passed as a late commit", tc.name)
		} else {
			t.Logf("%s: %s", tc.name, why)
		}
	}
}
