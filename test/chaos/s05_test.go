package chaos

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	clientv3 "go.etcd.io/etcd/client/v3"

	"samsa/internal/record"
)

// TestS05ZombieLeader is TESTPLAN S-05: the leader of partition 0 is
// SIGSTOPped for 2 x T_s (its lease expires, the controller elects new
// leaders at a higher epoch), then SIGCONTinued. Produce requests sent
// straight to it right after it resumes get errors once etcd has the new
// epoch (a slow controller may not have moved a partition yet). Every
// batch the producer's hook saw it acknowledge on a partition it lost,
// from the new epoch until the cycle ends, is tied to its records in the
// log and judged by their leader epochs (judgeBatch): it must have
// acknowledged only writes its successors hold, and new writes only in a
// term it was elected to again. Nothing acknowledged is lost.
func TestS05ZombieLeader(t *testing.T) {
	const (
		topic      = "s05"
		partitions = 5
		// fenceTimeout bounds how long after the pause a partition the
		// paused broker led may keep its epoch: the lease expires after
		// T_s, and a slow controller on a loaded machine still elects
		// well within it.
		fenceTimeout = 30 * time.Second
	)
	var (
		runFor = pick(15*time.Second, 5*time.Minute)
		pause  = 2 * sessionTimeout
	)
	c := startCluster(t)
	c.createTopic(topic, partitions)
	hist := watchStates(c, topic, partitions)
	w := startWorkload(t, c, topic, partitions)
	w.waitAcks(0, 50, 30*time.Second)

	var watch []fenced
	var probes []probeAck
	began := time.Now()
	cycles := 0
	for cycle := 1; cycle == 1 || time.Since(began) < runFor; cycle++ {
		cycles = cycle
		st := c.mustState(topic, 0)
		zombie := c.brokers[st.Leader]
		led := make(map[int32]int32) // partition -> epoch the zombie leads at
		for p := range int32(partitions) {
			if s := c.mustState(topic, p); s.Leader == zombie.id {
				led[p] = s.LeaderEpoch
			}
		}
		stoppedAt := time.Now()
		zombie.signal(syscall.SIGSTOP)
		next := c.waitLeaderChange(topic, 0, zombie.id, st.LeaderEpoch, pause+10*time.Second)
		t.Logf("cycle %d: broker %d stopped (led %v); partition 0 led by %d at epoch %d after %s",
			cycle, zombie.id, led, next.Leader, next.LeaderEpoch, time.Since(stoppedAt).Round(time.Millisecond))
		sleepUntil(stoppedAt.Add(pause))
		zombie.signal(syscall.SIGCONT)
		resumedAt := time.Now()

		// Straight to the resumed broker, before it has caught up with
		// anything: it must refuse, unless etcd has it lead (still, or
		// again: probeAck).
		for p, e := range led {
			value := fmt.Sprintf("%s-zombie-%d-%d", topic, cycle, p)
			code, err := produceDirect(zombie.addr(), topic, p, value)
			t.Logf("cycle %d: produce to resumed broker %d for partition %d: %v %v", cycle, zombie.id, p, kerr.ErrorForCode(code), err)
			w.addProbe(p, -1, value, false)
			if err == nil && code == 0 {
				probes = append(probes, probeAck{cycle, zombie.id, p, e, value})
			}
		}
		first := len(watch)
		for p, e := range led {
			o, ok := awaitEpochAbove(c, hist, topic, p, e, stoppedAt, fenceTimeout)
			if !ok {
				t.Errorf("cycle %d: partition %d still at epoch %d (%v) %s after broker %d was stopped",
					cycle, p, e, o.partitionState, fenceTimeout, zombie.id)
				continue
			}
			if o.at.After(resumedAt) {
				t.Logf("cycle %d: partition %d moved only after the resume (%v, seen %s after it)",
					cycle, p, o.partitionState, o.at.Sub(resumedAt).Round(time.Millisecond))
			}
			watch = append(watch, fenced{cycle: cycle, node: zombie.id, partition: p, oldEpoch: e, newAt: o.at, resumedAt: resumedAt})
		}
		if err := zombie.exited(); err != nil {
			t.Fatal(err)
		}
		c.waitFullISR(topic, partitions)
		w.waitAcks(0, 20, 30*time.Second)
		for i := first; i < len(watch); i++ {
			watch[i].until = time.Now()
		}
		t.Logf("cycle %d: full ISR %s after resume", cycle, time.Since(resumedAt).Round(time.Millisecond))
	}
	w.stop(30 * time.Second)
	hist.stop()
	r := w.check(c)
	z := checkZombieAcks(t, c, hist, w, topic, partitions, watch, probes)
	t.Logf("S-05: %d pause cycles, %d fenced leaderships; %v; %v", cycles, len(watch), z, r)
}

// fenced is a leadership the paused broker lost: node led partition at
// oldEpoch when it was stopped, a higher epoch was first seen at newAt,
// and the broker was continued at resumedAt. Batches node acknowledged on
// the partition from newAt until the cycle ended are judged by judgeBatch.
type fenced struct {
	cycle     int
	node      int32
	partition int32
	oldEpoch  int32
	newAt     time.Time
	resumedAt time.Time
	until     time.Time
}

// awaitEpochAbove waits up to d for partition p to reach a leader epoch
// above e, and returns the first such state seen since from with the time
// it was seen. The state poller can see a change late on a loaded machine
// or miss a short-lived one (the leadership may move away and come back
// between two polls), so etcd is also read here directly; its time is
// then that of the read. On timeout it returns the last state read and
// false.
func awaitEpochAbove(c *testCluster, hist *stateHistory, topic string, p, e int32, from time.Time, d time.Duration) (observed, bool) {
	var last observed
	err := poll(d, func() error {
		if o, ok := hist.firstAfter(p, from, func(s partitionState) bool { return s.LeaderEpoch > e }); ok {
			last = o
			return nil
		}
		st, err := c.state(topic, p)
		if err != nil {
			return err
		}
		last = observed{time.Now(), st}
		if st.LeaderEpoch > e {
			return nil
		}
		return fmt.Errorf("partition %d at epoch %d", p, st.LeaderEpoch)
	})
	return last, err == nil
}

// probeAck is a write sent straight to the resumed broker (value, to
// partition, which it led at oldEpoch when it was stopped) that it
// acknowledged.
type probeAck struct {
	cycle     int
	node      int32
	partition int32
	oldEpoch  int32
	value     string
}

// judge reports whether the broker acknowledged the probe in a term etcd
// gave it: the probe must be in the log (read in offset order) with a
// leader epoch that node led, at or above oldEpoch (the controller may not
// have moved the partition yet when the probe came, or may have elected
// node again by then). It also says what it found.
func (pa probeAck) judge(log []*kgo.Record, leaders map[int32]int32) (string, bool) {
	for _, rec := range log {
		if string(rec.Value) != pa.value {
			continue
		}
		l, ok := leaders[rec.LeaderEpoch]
		why := fmt.Sprintf("at offset %d, written at leader epoch %d (leader %d)", rec.Offset, rec.LeaderEpoch, l)
		return why, ok && l == pa.node && rec.LeaderEpoch >= pa.oldEpoch
	}
	return "not in the log", false
}

// zombieResult counts the batches the paused broker acknowledged on a
// partition after it lost the leadership, by judgeBatch's verdict.
type zombieResult struct {
	batches int // acknowledged by the replaced broker while watched
	zombie  int // must be zero (see judgeBatch)
	late    int // written before it lost the epoch, answered after
	newTerm int // written in a term it was elected to again
	retried int // a retry deduplicated against a later leader's write
	untied  int // not tied to offsets (see tieBatches)
}

func (z zombieResult) String() string {
	return fmt.Sprintf("batches acknowledged by a replaced leader %d: zombie %d, late answers from the replaced epoch %d, in its new term %d, deduplicated retries %d, not tied to offsets %d",
		z.batches, z.zombie, z.late, z.newTerm, z.retried, z.untied)
}

func (z *zombieResult) add(o zombieResult) {
	z.batches += o.batches
	z.zombie += o.zombie
	z.late += o.late
	z.newTerm += o.newTerm
	z.retried += o.retried
	z.untied += o.untied
}

// checkZombieAcks judges every batch the replaced broker of each fenced
// leadership acknowledged on that partition from the new epoch until the
// cycle ended (judgeBatch), with the topic as read back now (the records'
// values and leader epochs) and each epoch's leader from etcd's history of
// the partition's state. A batch that cannot be tied to its records is
// judged by time alone, as a zombie ack if it came before the broker was
// seen elected again (less a second, for the poller's delay).
func checkZombieAcks(t *testing.T, c *testCluster, hist *stateHistory, w *workload, topic string, partitions int32, watch []fenced, probes []probeAck) zombieResult {
	t.Helper()
	var z zombieResult
	logs := readAll(t, c, topic, partitions)
	leaders := make(map[int32]map[int32]int32) // partition -> leader epoch -> leader
	leadersOf := func(p int32) map[int32]int32 {
		if leaders[p] == nil {
			vs, err := c.stateVersions(topic, p)
			if err != nil {
				t.Fatalf("partition %d: state history from etcd: %v", p, err)
			}
			leaders[p] = make(map[int32]int32)
			for _, v := range vs {
				if v.Leader >= 0 {
					leaders[p][v.LeaderEpoch] = v.Leader
				}
			}
		}
		return leaders[p]
	}
	for _, pa := range probes {
		if why, ok := pa.judge(logs[pa.partition], leadersOf(pa.partition)); ok {
			t.Logf("cycle %d: resumed broker %d acknowledged the write sent straight to it on partition %d: %s", pa.cycle, pa.node, pa.partition, why)
		} else {
			z.zombie++
			t.Errorf("cycle %d: resumed broker %d acknowledged the write sent straight to it on partition %d after epoch %d was replaced: %s", pa.cycle, pa.node, pa.partition, pa.oldEpoch, why)
		}
	}
	tied := make(map[int32][]tiedBatch)
	w.batches.mu.Lock()
	writes := slices.Clone(w.batches.writes)
	w.batches.mu.Unlock()
	w.mu.Lock()
	acks := slices.Clone(w.mu.acks)
	w.mu.Unlock()
	for _, f := range watch {
		p := f.partition
		if tied[p] == nil {
			leadersOf(p)
			var why string
			tied[p], why = tieBatches(writes, acks, p)
			if why != "" {
				t.Logf("partition %d: batches not tied to offsets from %s", p, why)
			}
		}
		byOffset := make(map[int64]*kgo.Record, len(logs[p]))
		for _, rec := range logs[p] {
			byOffset[rec.Offset] = rec
		}
		var epochs []string
		for _, e := range slices.Sorted(maps.Keys(leaders[p])) {
			if e >= f.oldEpoch {
				epochs = append(epochs, fmt.Sprintf("%d:%d", e, leaders[p][e]))
			}
		}
		reelected := f.until
		if o, ok := hist.firstAfter(p, f.newAt, func(s partitionState) bool { return s.Leader == f.node }); ok {
			reelected = o.at
		}
		replacedAt := func(e int32) (time.Time, bool) {
			o, ok := hist.firstAfter(p, time.Time{}, func(s partitionState) bool { return s.LeaderEpoch > e && s.Leader != f.node })
			return o.at, ok
		}
		var counts zombieResult
		for _, b := range tied[p] {
			if b.node != f.node || b.at.Before(f.newAt) || !b.at.Before(f.until) {
				continue
			}
			counts.batches++
			late := fmt.Sprintf("%s after the new epoch, %s after SIGCONT",
				b.at.Sub(f.newAt).Round(time.Millisecond), b.at.Sub(f.resumedAt).Round(time.Millisecond))
			if b.first < 0 {
				counts.untied++
				if b.at.Before(reelected.Add(-time.Second)) {
					counts.zombie++
					t.Errorf("cycle %d: broker %d acknowledged %d records on partition %d at %s, %s (epoch %d replaced), before it was seen elected again (not tied to offsets)",
						f.cycle, f.node, b.records, p, b.at.Format("15:04:05.000"), late, f.oldEpoch)
				}
				continue
			}
			v := judgeBatch(f.node, f.oldEpoch, b, byOffset, b.at, leaders[p], replacedAt)
			switch v.kind {
			case ackZombie:
				counts.zombie++
				t.Errorf("cycle %d: broker %d acknowledged %d records (offsets %d-%d) on partition %d at %s, %s (epoch %d replaced): %s",
					f.cycle, f.node, b.records, b.first, b.last(), p, b.at.Format("15:04:05.000"), late, f.oldEpoch, v.why)
			case ackLate:
				counts.late++
				t.Logf("cycle %d: broker %d acknowledged offsets %d-%d of partition %d at %s, %s (epoch %d replaced): %s",
					f.cycle, f.node, b.first, b.last(), p, b.at.Format("15:04:05.000"), late, f.oldEpoch, v.why)
			case ackNewTerm:
				counts.newTerm++
			case ackRetried:
				counts.retried++
				t.Logf("cycle %d: broker %d acknowledged offsets %d-%d of partition %d at %s: %s",
					f.cycle, f.node, b.first, b.last(), p, b.at.Format("15:04:05.000"), v.why)
			}
		}
		t.Logf("cycle %d: partition %d (leader epoch:leader %s; broker %d seen elected again %s after the new epoch): %v",
			f.cycle, p, strings.Join(epochs, " "), f.node, reelected.Sub(f.newAt).Round(time.Millisecond), counts)
		z.add(counts)
	}
	return z
}

// tiedBatch is a batch franz-go's hook reported, with the acknowledged
// records it held, in offset order (first is -1 when it could not be tied
// to records).
type tiedBatch struct {
	batchWrite
	first int64
	recs  []ack
}

func (b tiedBatch) last() int64 { return b.first + int64(b.records) - 1 }

// tieSlack bounds how far apart franz-go reports a batch to the hook and
// its records to their promises: both follow the same produce response,
// on different goroutines.
const tieSlack = 2 * time.Second

// tieWindow is how many hook calls tieBatches considers for the next
// records: franz-go calls the hook from a goroutine of its own per produce
// response, so the calls of two responses may come in either order.
const tieWindow = 4

// tieBatches ties each batch franz-go acknowledged on partition p to its
// records and returns the partition's batches in the order the hook saw
// them, with why the first batch or record was left untied ("" if none
// was). The hook says which broker acknowledged a batch and how many
// records it held, but not their offsets; the records' promises give the
// offsets. franz-go acknowledges a partition's batches one after the other
// in offset order (idempotence keeps them in order) and each batch's
// records at consecutive offsets, so the next records of the partition's
// acks sorted by offset belong to one of the next tieWindow hook calls:
// the one whose records fit (lie at consecutive offsets, promised within
// tieSlack of the call) and were promised closest to it. When none fits,
// tying resumes at the first of the next tieWindow records that one fits,
// and failing that the first call in the window is left untied.
func tieBatches(writes []batchWrite, acks []ack, p int32) ([]tiedBatch, string) {
	var recs []ack
	for _, a := range acks {
		if a.stack == stackFranz && a.partition == p && a.seq >= 0 && a.offset >= 0 {
			recs = append(recs, a)
		}
	}
	slices.SortFunc(recs, func(a, b ack) int { return cmp.Compare(a.offset, b.offset) })
	var out []tiedBatch
	for _, w := range writes {
		if w.partition == p {
			out = append(out, tiedBatch{batchWrite: w, first: -1})
		}
	}
	done := make([]bool, len(out)) // tied, or left untied for good
	// fit returns how far from the call the records of w were promised,
	// or false if they do not fit.
	fit := func(w batchWrite, rest []ack) (time.Duration, bool) {
		if w.records <= 0 || len(rest) < w.records {
			return 0, false
		}
		var far time.Duration
		for i, a := range rest[:w.records] {
			d := a.at.Sub(w.at).Abs()
			if a.offset != rest[0].offset+int64(i) || d > tieSlack {
				return 0, false
			}
			far = max(far, d)
		}
		return far, true
	}
	// window returns the next tieWindow calls not done.
	window := func(first int) []int {
		var js []int
		for j := first; j < len(out) && len(js) < tieWindow; j++ {
			if !done[j] {
				js = append(js, j)
			}
		}
		return js
	}
	// best returns the call of js that fits the records from rest.
	best := func(js []int, rest []ack) int {
		found, closest := -1, time.Duration(0)
		for _, j := range js {
			if d, ok := fit(out[j].batchWrite, rest); ok && (found < 0 || d < closest) {
				found, closest = j, d
			}
		}
		return found
	}
	why := ""
	next, first := 0, 0 // the next record; the first call not done
	for next < len(recs) && first < len(out) {
		js := window(first)
		found, skip := best(js, recs[next:]), 0
		for k := 1; found < 0 && k < tieWindow && next+k < len(recs); k++ {
			found, skip = best(js, recs[next+k:]), k
		}
		if found < 0 || skip > 0 {
			if why == "" {
				var calls, offs []string
				for _, j := range js {
					calls = append(calls, fmt.Sprintf("%d from broker %d at %s", out[j].records, out[j].node, out[j].at.Format("15:04:05.000")))
				}
				for _, a := range recs[next:min(next+6, len(recs))] {
					offs = append(offs, fmt.Sprintf("%d at %s", a.offset, a.at.Format("15:04:05.000")))
				}
				why = fmt.Sprintf("offset %d: no batch fits (next hook calls: records %s; offsets promised %s)",
					recs[next].offset, strings.Join(calls, ", "), strings.Join(offs, ", "))
			}
			if found < 0 {
				done[js[0]] = true // left untied
				for first < len(out) && done[first] {
					first++
				}
				continue
			}
		}
		next += skip
		b := &out[found]
		b.first, b.recs = recs[next].offset, recs[next:next+b.records]
		done[found] = true
		next += b.records
		for first < len(out) && done[first] {
			first++
		}
	}
	if first < len(out) && why == "" {
		why = fmt.Sprintf("the batch of %d records broker %d acknowledged at %s: no acknowledged records left",
			out[first].records, out[first].node, out[first].at.Format("15:04:05.000"))
	}
	return out, why
}

// ackKind is judgeBatch's verdict on a batch a replaced leader acknowledged.
type ackKind int

const (
	ackZombie  ackKind = iota // see judgeBatch
	ackLate                   // written in an epoch it then lost, which its successors hold
	ackNewTerm                // written in an epoch it was elected to again
	ackRetried                // a retry, deduplicated against the write of a later leader
)

type ackVerdict struct {
	kind ackKind
	why  string
}

// judgeBatch decides what broker node, replaced at epoch replaced, did
// when it acknowledged batch b at time at. log holds the partition as read
// back by offset; each record carries the leader epoch of the leader that
// appended it (a deduplicated retry is answered with the records already
// in the log). leaders maps each epoch of the partition to its leader, from
// etcd's history. replacedAt(e) returns when a state with an epoch above e
// and another leader was first seen, if ever.
//
//	the batch's records                         | verdict
//	--------------------------------------------+----------------------------------
//	not in the log as acknowledged              | zombie: its successors do not hold
//	                                            | the write it acknowledged
//	epoch s <= replaced, or an epoch of its own | late: written while it led, held by
//	replaced before the ack                     | the successors; the answer left it
//	                                            | after SIGCONT (a SIGSTOP can fall
//	                                            | between the decision and the write)
//	epoch s of its own, not replaced before     | new term
//	epoch s of another broker, node led a later | retry: answered from its later term
//	epoch                                       |
//	epoch s of another broker, node led none    | zombie: it answered as a leader it
//	later; or an epoch etcd never held          | never was
//
// A leader whose stale epoch survived the replacement would have to
// acknowledge a write its successor lacks, which the first row catches; a
// write its successor holds was committed whoever answered for it.
func judgeBatch(node, replaced int32, b tiedBatch, log map[int64]*kgo.Record, at time.Time, leaders map[int32]int32, replacedAt func(e int32) (time.Time, bool)) ackVerdict {
	var stamps []int32
	for _, a := range b.recs {
		rec := log[a.offset]
		switch {
		case rec == nil:
			return ackVerdict{ackZombie, fmt.Sprintf("offset %d (%s) is not in the log", a.offset, a.value)}
		case string(rec.Value) != a.value:
			return ackVerdict{ackZombie, fmt.Sprintf("offset %d holds %s, not %s", a.offset, rec.Value, a.value)}
		}
		if !slices.Contains(stamps, rec.LeaderEpoch) {
			stamps = append(stamps, rec.LeaderEpoch)
		}
	}
	v := ackVerdict{kind: ackNewTerm}
	for _, s := range stamps {
		if s <= replaced {
			return ackVerdict{ackLate, fmt.Sprintf("records written at leader epoch %d, before epoch %d was replaced, and held by its successors", s, replaced)}
		}
		l, ok := leaders[s]
		if !ok {
			return ackVerdict{ackZombie, fmt.Sprintf("records written at leader epoch %d, which etcd never held", s)}
		}
		if l != node {
			var later []int32
			for e, l := range leaders {
				if l == node && e > s {
					later = append(later, e)
				}
			}
			if len(later) == 0 {
				return ackVerdict{ackZombie, fmt.Sprintf("records written at leader epoch %d by broker %d; broker %d led no later epoch", s, l, node)}
			}
			slices.Sort(later)
			v = ackVerdict{ackRetried, fmt.Sprintf("a retry of records broker %d wrote at leader epoch %d, answered in broker %d's later term (epochs %v)", l, s, node, later)}
			continue
		}
		if when, ok := replacedAt(s); ok && !when.After(at) {
			return ackVerdict{ackLate, fmt.Sprintf("records written at leader epoch %d, its own, replaced at %s before the answer, and held by its successors", s, when.Format("15:04:05.000"))}
		}
	}
	return v
}

// partitionVersion is one committed state of a partition, at the etcd
// revision that wrote it.
type partitionVersion struct {
	rev int64
	partitionState
}

// stateVersions returns every state topic/p has had in etcd, oldest first,
// from etcd's multi-version history (samsa's etcd keeps an hour of it): a
// record of every leadership, which the state poller may miss.
func (c *testCluster) stateVersions(topic string, p int32) ([]partitionVersion, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := c.etcdCli.Get(ctx, "/samsa/cluster-id")
	if err != nil {
		return nil, fmt.Errorf("get cluster id: %w", err)
	}
	if len(resp.Kvs) == 0 {
		return nil, errors.New("no cluster id in etcd")
	}
	key := "/samsa/" + strings.TrimSpace(string(resp.Kvs[0].Value)) + "/partitions/" + topic + "/" + strconv.Itoa(int(p))
	var out []partitionVersion
	var opts []clientv3.OpOption
	for {
		resp, err := c.etcdCli.Get(ctx, key, opts...)
		if err != nil {
			return nil, fmt.Errorf("get %s: %w", key, err)
		}
		if len(resp.Kvs) == 0 {
			break
		}
		kv := resp.Kvs[0]
		var st partitionState
		if err := json.Unmarshal(kv.Value, &st); err != nil {
			return nil, fmt.Errorf("decode %s at revision %d: %w", key, kv.ModRevision, err)
		}
		out = append(out, partitionVersion{kv.ModRevision, st})
		if kv.Version <= 1 {
			break // the key's first version
		}
		opts = []clientv3.OpOption{clientv3.WithRev(kv.ModRevision - 1)}
	}
	slices.Reverse(out)
	return out, nil
}

// produceDirect sends one acks=all Produce of a single record to the
// broker at addr itself and returns the partition's error code.
func produceDirect(addr, topic string, p int32, value string) (int16, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequestRetries(0))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	bb := record.NewBuilder(record.CodecNone, time.Now().UnixMilli())
	bb.Add(record.Record{Value: []byte(value)})
	batch, err := bb.Build()
	if err != nil {
		return 0, err
	}
	req := kmsg.NewPtrProduceRequest()
	req.Acks = -1
	req.TimeoutMillis = 3000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = p
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl.SeedBrokers()[0])
	if err != nil {
		return 0, err
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return 0, fmt.Errorf("produce response with %d topics", len(resp.Topics))
	}
	return resp.Topics[0].Partitions[0].ErrorCode, nil
}

// TestJudgeBatchVerdicts checks S-05's rule without a cluster: broker 1
// led epoch 2 of a partition, was replaced by broker 0 at epoch 3, and was
// elected again at epoch 4.
func TestJudgeBatchVerdicts(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	leaders := map[int32]int32{2: 1, 3: 0, 4: 1}
	never := func(int32) (time.Time, bool) { return time.Time{}, false }
	replaced4 := func(e int32) (time.Time, bool) {
		if e == 4 {
			return t0.Add(time.Second), true
		}
		return time.Time{}, false
	}
	log := map[int64]*kgo.Record{
		10: {Offset: 10, Value: []byte("v10"), LeaderEpoch: 1},
		11: {Offset: 11, Value: []byte("v11"), LeaderEpoch: 2},
		12: {Offset: 12, Value: []byte("v12"), LeaderEpoch: 3},
		13: {Offset: 13, Value: []byte("v13"), LeaderEpoch: 4},
		14: {Offset: 14, Value: []byte("v14"), LeaderEpoch: 5},
	}
	batch := func(values map[int64]string, offsets ...int64) tiedBatch {
		b := tiedBatch{batchWrite: batchWrite{node: 1, records: len(offsets)}, first: offsets[0]}
		for _, o := range offsets {
			v, ok := values[o]
			if !ok {
				v = fmt.Sprintf("v%d", o)
			}
			b.recs = append(b.recs, ack{offset: o, value: v})
		}
		return b
	}
	for _, tc := range []struct {
		name       string
		b          tiedBatch
		at         time.Time
		replacedAt func(int32) (time.Time, bool)
		want       ackKind
	}{
		{"acknowledged a write its successor lacks", batch(map[int64]string{13: "lost"}, 13), t0, never, ackZombie},
		{"acknowledged an offset the log does not have", batch(nil, 15), t0, never, ackZombie},
		{"written in the replaced epoch, answered late", batch(nil, 11), t0, never, ackLate},
		{"written before the replaced epoch", batch(nil, 10), t0, never, ackLate},
		{"written in its new term", batch(nil, 13), t0, never, ackNewTerm},
		{"new term, answered after it was replaced", batch(nil, 13), t0.Add(2 * time.Second), replaced4, ackLate},
		{"new term, answered before it was replaced", batch(nil, 13), t0, replaced4, ackNewTerm},
		{"retry of the successor's write, answered in the new term", batch(nil, 12), t0, never, ackRetried},
		{"written at an epoch etcd never held", batch(nil, 14), t0, never, ackZombie},
	} {
		if got := judgeBatch(1, 2, tc.b, log, tc.at, leaders, tc.replacedAt); got.kind != tc.want {
			t.Errorf("%s: got %d (%s), want %d", tc.name, got.kind, got.why, tc.want)
		}
	}
	// Writes sent straight to broker 1 after SIGCONT.
	probeLog := []*kgo.Record{
		{Offset: 20, Value: []byte("old"), LeaderEpoch: 2},
		{Offset: 21, Value: []byte("successor"), LeaderEpoch: 3},
		{Offset: 22, Value: []byte("again"), LeaderEpoch: 4},
	}
	for value, want := range map[string]bool{"old": true, "successor": false, "again": true, "gone": false} {
		pa := probeAck{node: 1, partition: 0, oldEpoch: 2, value: value}
		if why, ok := pa.judge(probeLog, leaders); ok != want {
			t.Errorf("probe %s: accepted %v (%s), want %v", value, ok, why, want)
		}
	}
	// Epoch 3 led by broker 0 and none later by broker 1.
	if got := judgeBatch(1, 2, batch(nil, 12), log, t0, map[int32]int32{2: 1, 3: 0}, never); got.kind != ackZombie {
		t.Errorf("answered as a leader it never was: got %d (%s)", got.kind, got.why)
	}
}

// TestTieBatchesChecksOffsetsAndTimes checks that hook batches are tied to
// the promised records in offset order, and that a tie that does not fit
// stops tying.
func TestTieBatchesChecksOffsetsAndTimes(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	franz := func(seq, off int64, at time.Time) ack {
		return ack{seq: seq, partition: 3, offset: off, at: at, stack: stackFranz}
	}
	acks := []ack{
		franz(1, 10, t0), franz(2, 11, t0), // batch 1 (broker 1)
		{seq: 0, partition: 3, offset: 12, at: t0, stack: stackRdk}, // another client's record
		franz(3, 13, t0.Add(time.Second)),                           // batch 2 (broker 2)
		franz(4, 20, t0.Add(5*time.Second)), franz(5, 22, t0.Add(5*time.Second)),
		franz(6, 0, t0), // another partition's
	}
	acks[6].partition = 4
	writes := []batchWrite{
		{node: 1, partition: 3, records: 2, at: t0},
		{node: 9, partition: 4, records: 1, at: t0},
		{node: 2, partition: 3, records: 1, at: t0.Add(time.Second)},
		{node: 2, partition: 3, records: 2, at: t0.Add(5 * time.Second)}, // offsets 20 and 22: not one batch
	}
	got, why := tieBatches(writes, acks, 3)
	if len(got) != 3 || why == "" {
		t.Fatalf("got %d batches (%q); want 3, the last not tied", len(got), why)
	}
	for i, want := range []int64{10, 13, -1} {
		if got[i].first != want {
			t.Errorf("batch %d: first offset %d, want %d", i, got[i].first, want)
		}
	}
	if len(got[0].recs) != 2 || got[0].recs[1].offset != 11 {
		t.Errorf("batch 0 holds %v", got[0].recs)
	}
	swapped := []batchWrite{
		{node: 2, partition: 3, records: 1, at: t0.Add(time.Second)}, // the hook calls of two responses swapped
		{node: 1, partition: 3, records: 2, at: t0},
	}
	if got, why := tieBatches(swapped, acks[:4], 3); why != "" || got[0].first != 13 || got[1].first != 10 {
		t.Errorf("swapped hook calls: tied at %d and %d (%s), want 13 and 10", got[0].first, got[1].first, why)
	}
	// A call naming more records than were promised near it is left
	// untied, and tying resumes with the next call that fits.
	resync := []ack{franz(1, 30, t0), franz(2, 40, t0.Add(time.Second)), franz(3, 41, t0.Add(time.Second))}
	calls := []batchWrite{
		{node: 1, partition: 3, records: 3, at: t0},
		{node: 1, partition: 3, records: 2, at: t0.Add(time.Second)},
	}
	if got, why := tieBatches(calls, resync, 3); why == "" || got[0].first != -1 || got[1].first != 40 {
		t.Errorf("resync: tied at %d and %d (%q), want -1 and 40", got[0].first, got[1].first, why)
	}
	late := []batchWrite{{node: 1, partition: 3, records: 2, at: t0.Add(10 * time.Second)}}
	if got, why := tieBatches(late, acks, 3); why == "" || got[0].first != -1 {
		t.Errorf("a hook 10 s after the promises was tied at %d", got[0].first)
	}
}
