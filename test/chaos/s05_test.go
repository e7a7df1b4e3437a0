package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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
// batch a witness producer (see witness) saw it acknowledge on a partition
// it lost, from the new epoch until the cycle ends, is judged by the
// leader epochs of its records in the log (judgeBatch): it must have
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
	wit := startWitness(t, c, w, topic, partitions)
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
	wit.stop(30 * time.Second)
	w.stop(30 * time.Second)
	hist.stop()
	r := w.check(c)
	z := checkZombieAcks(t, c, hist, wit, topic, partitions, watch, probes)
	t.Logf("S-05: %d pause cycles, %d fenced leaderships; witness sent %d, acked %d (in the checker's acks); %v; %v",
		cycles, len(watch), wit.sent.Load(), wit.acked.Load(), z, r)
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

// zombieResult counts the batches the paused broker acknowledged to the
// witness on a partition after it lost the leadership, by judgeBatch's
// verdict, and the writes sent straight to it that it acknowledged in a
// leadership it no longer held (zombie).
type zombieResult struct {
	batches int // acknowledged by the replaced broker while watched
	zombie  int // must be zero (see judgeBatch)
	late    int // written before it lost the epoch, answered after
	newTerm int // written in a term it was elected to again
	retried int // a retry deduplicated against a later leader's write
}

func (z zombieResult) String() string {
	return fmt.Sprintf("witness batches acknowledged by a replaced leader %d: zombie %d, late answers from the replaced epoch %d, in its new term %d, deduplicated retries %d",
		z.batches, z.zombie, z.late, z.newTerm, z.retried)
}

func (z *zombieResult) add(o zombieResult) {
	z.batches += o.batches
	z.zombie += o.zombie
	z.late += o.late
	z.newTerm += o.newTerm
	z.retried += o.retried
}

// checkZombieAcks judges every batch the witness saw the replaced broker
// of each fenced leadership acknowledge on that partition, from the new
// epoch until the cycle ended (judgeBatch), and every write sent straight
// to a resumed broker that it acknowledged (probeAck), with the topic as
// read back now and each epoch's leader from etcd's history of the
// partition's state.
func checkZombieAcks(t *testing.T, c *testCluster, hist *stateHistory, wit *witness, topic string, partitions int32, watch []fenced, probes []probeAck) zombieResult {
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
	wit.mu.Lock()
	batches := slices.Clone(wit.mu.batches)
	wit.mu.Unlock()
	for _, f := range watch {
		p := f.partition
		byOffset := make(map[int64]*kgo.Record, len(logs[p]))
		for _, rec := range logs[p] {
			byOffset[rec.Offset] = rec
		}
		var epochs []string
		for _, e := range slices.Sorted(maps.Keys(leadersOf(p))) {
			if e >= f.oldEpoch {
				epochs = append(epochs, fmt.Sprintf("%d:%d", e, leaders[p][e]))
			}
		}
		reelected := "not seen"
		if o, ok := hist.firstAfter(p, f.newAt, func(s partitionState) bool { return s.Leader == f.node }); ok {
			reelected = o.at.Sub(f.newAt).Round(time.Millisecond).String()
		}
		replacedAt := func(e int32) (time.Time, bool) {
			o, ok := hist.firstAfter(p, time.Time{}, func(s partitionState) bool { return s.LeaderEpoch > e && s.Leader != f.node })
			return o.at, ok
		}
		var counts zombieResult
		for _, b := range batches {
			if b.node != f.node || b.partition != p || b.at.Before(f.newAt) || !b.at.Before(f.until) {
				continue
			}
			counts.batches++
			when := fmt.Sprintf("%s after the new epoch, %s after SIGCONT",
				b.at.Sub(f.newAt).Round(time.Millisecond), b.at.Sub(f.resumedAt).Round(time.Millisecond))
			v := judgeBatch(f.node, f.oldEpoch, b, byOffset, leaders[p], replacedAt)
			switch v.kind {
			case ackZombie:
				counts.zombie++
				t.Errorf("cycle %d: broker %d acknowledged offsets %d-%d of partition %d at %s, %s (epoch %d replaced): %s",
					f.cycle, f.node, b.first, b.end-1, p, b.at.Format("15:04:05.000"), when, f.oldEpoch, v.why)
			case ackLate:
				counts.late++
				t.Logf("cycle %d: broker %d acknowledged offsets %d-%d of partition %d at %s, %s (epoch %d replaced): %s",
					f.cycle, f.node, b.first, b.end-1, p, b.at.Format("15:04:05.000"), when, f.oldEpoch, v.why)
			case ackNewTerm:
				counts.newTerm++
			case ackRetried:
				counts.retried++
				t.Logf("cycle %d: broker %d acknowledged offsets %d-%d of partition %d at %s: %s",
					f.cycle, f.node, b.first, b.end-1, p, b.at.Format("15:04:05.000"), v.why)
			}
		}
		t.Logf("cycle %d: partition %d (leader epoch:leader %s; broker %d seen elected again %s after the new epoch): %v",
			f.cycle, p, strings.Join(epochs, " "), f.node, reelected, counts)
		z.add(counts)
	}
	return z
}

// witness is a second producer of the safe profile (franz-go, 10 records/s
// per partition, values <topic>-witness-p<partition>-<seq>) whose debug
// log says, for every batch a broker acknowledged, which broker did and at
// which offsets: franz-go logs each produce response as "produced" with
// the broker and partition{base=>end} per batch. The workload's hook names
// the broker but not the offsets, and tying its batches to records by
// time does not hold on a loaded machine. Its values are probes of the
// workload (acknowledged ones are checked like acks). Start it with
// startWitness, end it with stop before the workload's stop; mu guards
// the fields in it.
type witness struct {
	t        *testing.T
	topic    string
	cl       *kgo.Client
	cancel   context.CancelFunc
	sendDone chan struct{}
	inflight sync.WaitGroup
	sent     atomic.Int64
	acked    atomic.Int64
	mu       struct {
		sync.Mutex
		batches []witnessBatch
	}
}

// witnessBatch is one batch a broker acknowledged to the witness: offsets
// [first, end) of partition, logged at at.
type witnessBatch struct {
	node      int32
	partition int32
	first     int64
	end       int64
	at        time.Time
}

// witnessInterval spreads 10 records/s per partition over the topic.
const witnessInterval = 100 * time.Millisecond

func startWitness(t *testing.T, c *testCluster, w *workload, topic string, partitions int32) *witness {
	t.Helper()
	wit := &witness{t: t, topic: topic, sendDone: make(chan struct{})}
	opts := append(safeProducerOpts(c.addrs()), kgo.WithLogger(wit))
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	wit.cl = cl
	ctx, cancel := context.WithCancel(context.Background())
	wit.cancel = cancel
	go func() {
		defer close(wit.sendDone)
		tick := time.NewTicker(witnessInterval / time.Duration(partitions))
		defer tick.Stop()
		for seq := int64(0); ; seq++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			p := int32(seq % int64(partitions))
			value := fmt.Sprintf("%s-witness-p%d-%08d", topic, p, seq)
			wit.inflight.Add(1)
			wit.sent.Add(1)
			cl.Produce(context.Background(), &kgo.Record{Topic: topic, Partition: p, Value: []byte(value)}, func(r *kgo.Record, err error) {
				defer wit.inflight.Done()
				if err == nil {
					wit.acked.Add(1)
				}
				w.addProbe(r.Partition, r.Offset, value, err == nil)
			})
		}
	}()
	t.Cleanup(wit.stopNow)
	return wit
}

// stop ends the witness: no new sends, up to d for those outstanding,
// then the client closes (failing the rest, which the workload then takes
// as probes of unknown outcome). It ties every batch to its records.
func (wit *witness) stop(d time.Duration) {
	wit.cancel()
	<-wit.sendDone
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if err := wit.cl.Flush(ctx); err != nil {
		wit.t.Logf("witness: flush after %s: %v", d, err)
	}
	wit.stopNow()
}

// stopNow ends the witness at once; it is idempotent.
func (wit *witness) stopNow() {
	wit.cancel()
	<-wit.sendDone
	wit.cl.Close()
	wit.inflight.Wait()
}

// Level implements kgo.Logger: debug, for the "produced" lines.
func (wit *witness) Level() kgo.LogLevel { return kgo.LogLevelDebug }

// Log implements kgo.Logger: it keeps the batches of "produced" lines.
func (wit *witness) Log(_ kgo.LogLevel, msg string, keyvals ...any) {
	if msg != "produced" {
		return
	}
	var broker, to string
	for i := 0; i+1 < len(keyvals); i += 2 {
		switch keyvals[i] {
		case "broker":
			broker, _ = keyvals[i+1].(string)
		case "to":
			to, _ = keyvals[i+1].(string)
		}
	}
	bs := parseProduced(wit.topic, broker, to, time.Now())
	wit.mu.Lock()
	wit.mu.batches = append(wit.mu.batches, bs...)
	wit.mu.Unlock()
}

var (
	producedTopic = regexp.MustCompile(`([^\s\[\],]+)\[([^\]]*)\]`)
	producedBatch = regexp.MustCompile(`(\d+)\{(\d+)=>(\d+)\}`)
)

// parseProduced reads the batches of topic a broker acknowledged from
// franz-go's "produced" debug line: broker is the node id ("seed_<n>" for a seed
// broker, skipped), to lists topic[partition{base=>end}, ...] for every
// topic; a batch that failed or was retried has another form
// (partition{err@base,n(...)}, partition{retrying@...}) and is skipped.
func parseProduced(topic, broker, to string, at time.Time) []witnessBatch {
	node, err := strconv.ParseInt(broker, 10, 32)
	if err != nil {
		return nil
	}
	var out []witnessBatch
	for _, tm := range producedTopic.FindAllStringSubmatch(to, -1) {
		if tm[1] != topic {
			continue
		}
		for _, bm := range producedBatch.FindAllStringSubmatch(tm[2], -1) {
			p, err1 := strconv.ParseInt(bm[1], 10, 32)
			first, err2 := strconv.ParseInt(bm[2], 10, 64)
			end, err3 := strconv.ParseInt(bm[3], 10, 64)
			if err1 != nil || err2 != nil || err3 != nil || end <= first {
				continue
			}
			out = append(out, witnessBatch{node: int32(node), partition: int32(p), first: first, end: end, at: at})
		}
	}
	return out
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
// when it acknowledged the witness's batch b. log holds the partition as
// read back by offset; each record carries the leader epoch of the leader that
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
func judgeBatch(node, replaced int32, b witnessBatch, log map[int64]*kgo.Record, leaders map[int32]int32, replacedAt func(e int32) (time.Time, bool)) ackVerdict {
	at := b.at
	var stamps []int32
	for o := b.first; o < b.end; o++ {
		rec := log[o]
		switch {
		case rec == nil:
			return ackVerdict{ackZombie, fmt.Sprintf("offset %d is not in the log", o)}
		case !strings.Contains(string(rec.Value), "-witness-"):
			return ackVerdict{ackZombie, fmt.Sprintf("offset %d holds %s, not a write of the witness", o, rec.Value)}
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
		10: {Offset: 10, Value: []byte("s05-witness-p0-1"), LeaderEpoch: 1},
		11: {Offset: 11, Value: []byte("s05-witness-p0-2"), LeaderEpoch: 2},
		12: {Offset: 12, Value: []byte("s05-witness-p0-3"), LeaderEpoch: 3},
		13: {Offset: 13, Value: []byte("s05-witness-p0-4"), LeaderEpoch: 4},
		14: {Offset: 14, Value: []byte("s05-witness-p0-5"), LeaderEpoch: 5},
		15: {Offset: 15, Value: []byte("s05-p0-00000001"), LeaderEpoch: 4},
	}
	batch := func(first, end int64, at time.Time) witnessBatch {
		return witnessBatch{node: 1, first: first, end: end, at: at}
	}
	for _, tc := range []struct {
		name       string
		b          witnessBatch
		replacedAt func(int32) (time.Time, bool)
		want       ackKind
	}{
		{"acknowledged offsets holding another write", batch(15, 16, t0), never, ackZombie},
		{"acknowledged an offset the log does not have", batch(16, 17, t0), never, ackZombie},
		{"written in the replaced epoch, answered late", batch(11, 12, t0), never, ackLate},
		{"written before the replaced epoch", batch(10, 11, t0), never, ackLate},
		{"written in its new term", batch(13, 14, t0), never, ackNewTerm},
		{"new term, answered after it was replaced", batch(13, 14, t0.Add(2*time.Second)), replaced4, ackLate},
		{"new term, answered before it was replaced", batch(13, 14, t0), replaced4, ackNewTerm},
		{"retry of the successor's write, answered in the new term", batch(12, 13, t0), never, ackRetried},
		{"one record in the replaced epoch", batch(11, 14, t0), never, ackLate},
		{"written at an epoch etcd never held", batch(14, 15, t0), never, ackZombie},
	} {
		if got := judgeBatch(1, 2, tc.b, log, leaders, tc.replacedAt); got.kind != tc.want {
			t.Errorf("%s: got %d (%s), want %d", tc.name, got.kind, got.why, tc.want)
		}
	}
	// Epoch 3 led by broker 0 and none later by broker 1.
	if got := judgeBatch(1, 2, batch(12, 13, t0), log, map[int32]int32{2: 1, 3: 0}, never); got.kind != ackZombie {
		t.Errorf("answered as a leader it never was: got %d (%s)", got.kind, got.why)
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
}

// TestParseProducedReadsAcknowledgedBatches checks the reading of
// franz-go's "produced" debug line.
func TestParseProducedReadsAcknowledgedBatches(t *testing.T) {
	at := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	got := parseProduced("s05", "1", "s05[0{873=>999}, 3{err@5,2(NOT_LEADER_FOR_PARTITION)}, 4{retrying@7,1(REQUEST_TIMED_OUT)}, 2{12=>14}], other[1{skipped@3=>4}, 0{0=>1}]", at)
	want := []witnessBatch{
		{node: 1, partition: 0, first: 873, end: 999, at: at},
		{node: 1, partition: 2, first: 12, end: 14, at: at},
	}
	if !slices.Equal(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if got := parseProduced("s05", "seed_0", "s05[0{1=>2}]", at); len(got) != 0 {
		t.Errorf("a seed broker's line gave %+v", got)
	}
}
