package broker_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"samsa/internal/testutil"
)

// sessionFetch is one raw Fetch of partitions 0..n-1 of topic (named by
// name and id; kgo picks the version) with the given session fields and
// offsets; offsets not given are not named (an incremental fetch).
func sessionFetch(t *testing.T, cl *kgo.Client, topic string, id [16]byte, sessionID, epoch int32, offsets map[int32]int64, forget ...int32) *kmsg.FetchResponse {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 0, 0, 50<<20
	req.SessionID, req.SessionEpoch = sessionID, epoch
	if len(offsets) > 0 {
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = topic, id
		for p := int32(0); p < 100; p++ {
			off, ok := offsets[p]
			if !ok {
				continue
			}
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p, off, 1<<20
			rp.CurrentLeaderEpoch, rp.LogStartOffset = -1, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	if len(forget) > 0 {
		ft := kmsg.NewFetchRequestForgottenTopic()
		ft.Topic, ft.TopicID, ft.Partitions = topic, id, forget
		req.ForgottenTopics = append(req.ForgottenTopics, ft)
	}
	return request[*kmsg.FetchResponse](t, cl, req)
}

// answered lists the partitions a Fetch response holds as "p:records",
// with the record count of each.
func answered(t *testing.T, resp *kmsg.FetchResponse) string {
	t.Helper()
	out := ""
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if rp.ErrorCode != 0 {
				t.Fatalf("partition %d: %v", rp.Partition, kerr.ErrorForCode(rp.ErrorCode))
			}
			n := 0
			for buf := rp.RecordBatches; len(buf) >= 61; {
				size := int(int32(uint32(buf[8])<<24|uint32(buf[9])<<16|uint32(buf[10])<<8|uint32(buf[11]))) + 12
				n += int(int32(uint32(buf[57])<<24 | uint32(buf[58])<<16 | uint32(buf[59])<<8 | uint32(buf[60])))
				buf = buf[size:]
			}
			if out != "" {
				out += " "
			}
			out += fmt.Sprintf("%d:%d", rp.Partition, n)
		}
	}
	return out
}

// Reference: KIP-227 "Incremental Fetch Requests" and "Fetch Session
// Epochs": an incremental fetch names only what changed, and its response
// omits partitions with nothing new.
func TestFetchSessionIncrementalAnswersOnlyWhatChanged(t *testing.T) {
	b := testutil.StartBroker(t)
	cl := b.Client()
	testutil.CreateTopic(t, b.Admin(), "fs", 3)
	id := topicID(t, cl, "fs")
	// kgo's default partitioner would move the record; name the partition.
	prod := b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceSync(t, prod, &kgo.Record{Topic: "fs", Partition: 0, Value: []byte("a")})

	full := sessionFetch(t, cl, "fs", id, 0, 0, map[int32]int64{0: 0, 1: 0, 2: 0})
	if full.ErrorCode != 0 || full.SessionID == 0 {
		t.Fatalf("full fetch with epoch 0: error %v session %d, want a session", kerr.ErrorForCode(full.ErrorCode), full.SessionID)
	}
	if got := answered(t, full); got != "0:1 1:0 2:0" {
		t.Fatalf("full fetch answered %q, want every partition", got)
	}
	sid := full.SessionID

	// Nothing new, offset 0 of partition 0 still cached: the record
	// comes again, the others are left out.
	if got := answered(t, sessionFetch(t, cl, "fs", id, sid, 1, nil)); got != "0:1" {
		t.Fatalf("incremental fetch naming nothing answered %q, want 0:1", got)
	}
	if got := answered(t, sessionFetch(t, cl, "fs", id, sid, 2, map[int32]int64{0: 1})); got != "" {
		t.Fatalf("incremental fetch at the end answered %q, want nothing", got)
	}
	produceSync(t, prod, &kgo.Record{Topic: "fs", Partition: 2, Value: []byte("b")}, &kgo.Record{Topic: "fs", Partition: 2, Value: []byte("c")})
	if got := answered(t, sessionFetch(t, cl, "fs", id, sid, 3, nil)); got != "2:2" {
		t.Fatalf("after a produce to partition 2 the fetch answered %q, want 2:2", got)
	}
	if got := answered(t, sessionFetch(t, cl, "fs", id, sid, 4, map[int32]int64{2: 2}, 1)); got != "" {
		t.Fatalf("after forgetting partition 1 the fetch answered %q, want nothing", got)
	}

	// The same epoch again: the fetcher is out of step.
	if r := sessionFetch(t, cl, "fs", id, sid, 4, nil); r.ErrorCode != kerr.InvalidFetchSessionEpoch.Code || len(r.Topics) != 0 {
		t.Fatalf("a repeated epoch: %v with %d topics, want INVALID_FETCH_SESSION_EPOCH and none", kerr.ErrorForCode(r.ErrorCode), len(r.Topics))
	}
	if r := sessionFetch(t, cl, "fs", id, sid+1, 1, nil); r.ErrorCode != kerr.FetchSessionIDNotFound.Code || r.SessionID != 0 {
		t.Fatalf("an unknown session: %v session %d, want FETCH_SESSION_ID_NOT_FOUND and 0", kerr.ErrorForCode(r.ErrorCode), r.SessionID)
	}
	// The refusals did not move the session on.
	if r := sessionFetch(t, cl, "fs", id, sid, 5, nil); r.ErrorCode != 0 || r.SessionID != sid {
		t.Fatalf("epoch 5 after the refusals: %v session %d, want session %d", kerr.ErrorForCode(r.ErrorCode), r.SessionID, sid)
	}

	// Epoch -1 closes the session and fetches without one.
	closed := sessionFetch(t, cl, "fs", id, sid, -1, map[int32]int64{0: 1, 2: 2})
	if closed.ErrorCode != 0 || closed.SessionID != 0 || answered(t, closed) != "0:0 2:0" {
		t.Fatalf("closing fetch: %v session %d answered %q, want session 0 and both partitions", kerr.ErrorForCode(closed.ErrorCode), closed.SessionID, answered(t, closed))
	}
	if r := sessionFetch(t, cl, "fs", id, sid, 6, nil); r.ErrorCode != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("a closed session: %v, want FETCH_SESSION_ID_NOT_FOUND", kerr.ErrorForCode(r.ErrorCode))
	}
}

// A session opened naming topics by id (v13+) refuses a request naming
// them by name (v12), and the reverse. Reference: KIP-516, Kafka's
// FETCH_SESSION_TOPIC_ID_ERROR.
func TestFetchSessionTopicIDsAndNamesDoNotMix(t *testing.T) {
	b := testutil.StartBroker(t)
	v16 := b.Client()
	v12 := b.Client(kgo.MaxVersions(kversion.V3_0_0()))
	testutil.CreateTopic(t, b.Admin(), "fsid", 1)
	id := topicID(t, v16, "fsid")

	s16 := sessionFetch(t, v16, "fsid", id, 0, 0, map[int32]int64{0: 0})
	s12 := sessionFetch(t, v12, "fsid", id, 0, 0, map[int32]int64{0: 0})
	if s16.SessionID == 0 || s12.SessionID == 0 || s16.Version < 13 || s12.Version != 12 {
		t.Fatalf("sessions %d (v%d) and %d (v%d), want two sessions at v13+ and v12", s16.SessionID, s16.Version, s12.SessionID, s12.Version)
	}
	if r := sessionFetch(t, v12, "fsid", id, s16.SessionID, 1, nil); r.ErrorCode != kerr.FetchSessionTopicIDError.Code {
		t.Fatalf("v12 in a v%d session: %v, want FETCH_SESSION_TOPIC_ID_ERROR", s16.Version, kerr.ErrorForCode(r.ErrorCode))
	}
	if r := sessionFetch(t, v16, "fsid", id, s12.SessionID, 1, nil); r.ErrorCode != kerr.FetchSessionTopicIDError.Code {
		t.Fatalf("v%d in a v12 session: %v, want FETCH_SESSION_TOPIC_ID_ERROR", s16.Version, kerr.ErrorForCode(r.ErrorCode))
	}
	for _, c := range []struct {
		cl  *kgo.Client
		sid int32
	}{{v16, s16.SessionID}, {v12, s12.SessionID}} {
		if r := sessionFetch(t, c.cl, "fsid", id, c.sid, 1, nil); r.ErrorCode != 0 || r.SessionID != c.sid {
			t.Fatalf("session %d at its own version: %v", c.sid, kerr.ErrorForCode(r.ErrorCode))
		}
	}
}

// fetchBytes counts the bytes of the Fetch requests a client writes and
// how many were small (under 1 KiB).
type fetchBytes struct {
	requests, small, bytes atomic.Int64
}

func (h *fetchBytes) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, n int, _, _ time.Duration, err error) {
	if key != int16(kmsg.Fetch) || err != nil {
		return
	}
	h.requests.Add(1)
	h.bytes.Add(int64(n))
	if n < 1024 {
		h.small.Add(1)
	}
}

// checkRecords consumes with cl until it has want records of each
// produced key order, and fails on a record out of order, duplicated or
// missing: per partition the values must be 0, 1, 2, ... as produced.
func checkRecords(t *testing.T, ctx context.Context, cl *kgo.Client, want map[int32]int) {
	t.Helper()
	next := make(map[int32]int)
	total := 0
	for _, n := range want {
		total += n
	}
	got := 0
	for got < total {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records: %v (per partition %v, want %v)", got, total, ctx.Err(), next, want)
		}
		fs.EachError(func(topic string, p int32, err error) {
			t.Logf("fetch error %s-%d: %v", topic, p, err)
		})
		fs.EachRecord(func(r *kgo.Record) {
			v, err := strconv.Atoi(string(r.Value))
			if err != nil || v != next[r.Partition] {
				t.Fatalf("partition %d: record %q at offset %d, want %d (a loss, duplicate or reorder)", r.Partition, r.Value, r.Offset, next[r.Partition])
			}
			next[r.Partition]++
			got++
		})
	}
	for p, n := range want {
		if next[p] != n {
			t.Fatalf("partition %d: %d records, want %d", p, next[p], n)
		}
	}
}

// produceNumbered produces n records to each partition in parts, valued
// from[p], from[p]+1, ..., in rounds, pausing between rounds so the
// consumer's fetches are incremental in between.
func produceNumbered(t *testing.T, cl *kgo.Client, topic string, parts []int32, from map[int32]int, n, rounds int) {
	t.Helper()
	per := n / rounds
	for r := range rounds {
		var rs []*kgo.Record
		for _, p := range parts {
			for range per {
				rs = append(rs, &kgo.Record{Topic: topic, Partition: p, Value: []byte(strconv.Itoa(from[p]))})
				from[p]++
			}
		}
		produceSync(t, cl, rs...)
		if r < rounds-1 {
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// A franz-go consumer of many partitions, of which a few get records,
// reads every record once and in order over an incremental fetch session,
// and its fetches, once the session is open, name almost nothing.
func TestFetchSessionConsumerOfManyPartitionsSeesEveryRecord(t *testing.T) {
	const partitions = 200
	b := testutil.StartBroker(t)
	testutil.CreateTopic(t, b.Admin(), "fsmany", partitions)
	prod := b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	hook := new(fetchBytes)
	cons := b.Client(kgo.ConsumeTopics("fsmany"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(100*time.Millisecond), kgo.WithHooks(hook))
	ctx := ctxT(t, 60*time.Second)

	hot := []int32{3, 77, 150, 199}
	from := make(map[int32]int)
	want := make(map[int32]int)
	done := make(chan struct{})
	go func() {
		defer close(done)
		produceNumbered(t, prod, "fsmany", hot, from, scaled(2000, 4), 20)
	}()
	for _, p := range hot {
		want[p] = scaled(2000, 4) / 20 * 20
	}
	checkRecords(t, ctx, cons, want)
	<-done

	if st := b.Node.Broker().FetchSessionStats(); st.Sessions != 1 || st.Partitions != partitions {
		t.Fatalf("fetch sessions %+v, want one of %d partitions", st, partitions)
	}
	// A full fetch of 200 partitions is about 6 KiB; an incremental one
	// names only the partitions the consumer moved on.
	if req, small := hook.requests.Load(), hook.small.Load(); small < req*3/4 {
		t.Fatalf("%d of %d fetch requests under 1 KiB (%d bytes in all); want most of them incremental", small, req, hook.bytes.Load())
	}
}

// evictionLog counts franz-go's log lines saying its fetch session was
// evicted.
type evictionLog struct{ evicted atomic.Int64 }

func (l *evictionLog) Level() kgo.LogLevel { return kgo.LogLevelInfo }
func (l *evictionLog) Log(_ kgo.LogLevel, msg string, _ ...any) {
	if strings.Contains(msg, "SessionIDNotFound") {
		l.evicted.Add(1)
	}
}

// With one session slot that any new session may take, a consumer whose
// session is evicted over and over mid-consume (by another fetcher's
// sessions) opens a new one each time and loses or repeats no record.
func TestFetchSessionEvictedMidConsumeLosesNothing(t *testing.T) {
	b := testutil.StartBroker(t, "max.incremental.fetch.session.cache.slots=1", "min.incremental.fetch.session.eviction.ms=0")
	testutil.CreateTopic(t, b.Admin(), "fsevict", 20)
	prod := b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	logs := new(evictionLog)
	cons := b.Client(kgo.ConsumeTopics("fsevict"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(50*time.Millisecond), kgo.WithLogger(logs))
	thief := b.Client()
	id := topicID(t, thief, "fsevict")
	ctx := ctxT(t, 90*time.Second)

	hot := []int32{0, 7, 19}
	const rounds = 40
	per := scaled(40, 4)
	want := make(map[int32]int)
	for _, p := range hot {
		want[p] = per * rounds
	}
	produced := make(chan error, 1)
	go func() {
		from := make(map[int32]int)
		for r := range rounds {
			var rs []*kgo.Record
			for _, p := range hot {
				for range per {
					rs = append(rs, &kgo.Record{Topic: "fsevict", Partition: p, Value: []byte(strconv.Itoa(from[p]))})
					from[p]++
				}
			}
			if err := prod.ProduceSync(ctx, rs...).FirstErr(); err != nil {
				produced <- fmt.Errorf("produce round %d: %w", r, err)
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		produced <- nil
	}()
	consumed := make(chan struct{})
	var checkErr error
	go func() {
		defer close(consumed)
		next := make(map[int32]int)
		total, got := 3*per*rounds, 0
		for got < total && ctx.Err() == nil {
			cons.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
				if v, _ := strconv.Atoi(string(r.Value)); v != next[r.Partition] && checkErr == nil {
					checkErr = fmt.Errorf("partition %d: record %q at offset %d, want %d", r.Partition, r.Value, r.Offset, next[r.Partition])
				}
				next[r.Partition]++
				got++
			})
		}
		if got != total && checkErr == nil {
			checkErr = fmt.Errorf("%d of %d records (%v, want %v)", got, total, next, want)
		}
	}()
	testutil.Eventually(t, 10*time.Second, func() error {
		if st := b.Node.Broker().FetchSessionStats(); st.Partitions != 20 {
			return fmt.Errorf("fetch sessions %+v, want the consumer's of 20 partitions", st)
		}
		return nil
	})
	// Every few milliseconds another session takes the slot.
	for stealing := true; stealing; {
		select {
		case <-consumed:
			stealing = false
		case <-time.After(15 * time.Millisecond):
			sessionFetch(t, thief, "fsevict", id, 0, 0, map[int32]int64{0: 0})
		}
	}
	if err := <-produced; err != nil {
		t.Fatal(err)
	}
	if checkErr != nil {
		t.Fatal(checkErr)
	}
	if logs.evicted.Load() == 0 {
		t.Fatalf("the consumer never saw its session evicted (broker %+v), so the test proved nothing", b.Node.Broker().FetchSessionStats())
	}
	t.Logf("consumer's session evicted %d times; broker %+v", logs.evicted.Load(), b.Node.Broker().FetchSessionStats())
}

// A broker restart loses every fetch session: the consumer's next
// incremental fetch gets FETCH_SESSION_ID_NOT_FOUND, and it opens a new
// session and goes on, missing and repeating nothing.
func TestFetchSessionLostInBrokerRestartIsRecreated(t *testing.T) {
	b := testutil.StartBroker(t)
	testutil.CreateTopic(t, b.Admin(), "fsrestart", 10)
	prod := b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	cons := b.Client(kgo.ConsumeTopics("fsrestart"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(100*time.Millisecond), kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }))
	ctx := ctxT(t, 90*time.Second)
	hot := []int32{1, 8}
	from := make(map[int32]int)
	produceNumbered(t, prod, "fsrestart", hot, from, 100, 5)
	checkRecords(t, ctx, cons, map[int32]int{1: 100, 8: 100})
	testutil.Eventually(t, 10*time.Second, func() error {
		if st := b.Node.Broker().FetchSessionStats(); st.Sessions != 1 || st.Partitions != 10 {
			return fmt.Errorf("fetch sessions %+v, want the consumer's of 10 partitions", st)
		}
		return nil
	})

	raw := b.Client()
	id := topicID(t, raw, "fsrestart")
	open := sessionFetch(t, raw, "fsrestart", id, 0, 0, map[int32]int64{1: 0})

	b.Restart()
	if r := sessionFetch(t, raw, "fsrestart", id, open.SessionID, 1, nil); r.ErrorCode != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("a session of before the restart: %v, want FETCH_SESSION_ID_NOT_FOUND", kerr.ErrorForCode(r.ErrorCode))
	}
	prod2 := b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceNumbered(t, prod2, "fsrestart", hot, from, 100, 5)
	next := map[int32]int{}
	for p, n := range from {
		next[p] = n - 100
	}
	// The consumer resumes at 100 in each partition.
	got := 0
	for got < 200 {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("after the restart consumed %d of 200: %v", got, ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			v, _ := strconv.Atoi(string(r.Value))
			if v != next[r.Partition] {
				t.Fatalf("partition %d after the restart: record %d, want %d", r.Partition, v, next[r.Partition])
			}
			next[r.Partition]++
			got++
		})
	}
	testutil.Eventually(t, 10*time.Second, func() error {
		if st := b.Node.Broker().FetchSessionStats(); st.Sessions != 1 || st.Partitions != 10 {
			return fmt.Errorf("fetch sessions %+v after the restart, want the consumer's new one of 10 partitions", st)
		}
		return nil
	})
}

// Followers fetch in sessions: each leader holds one session per follower
// with every partition it follows, and an idle follower, whose fetches
// name nothing, stays in the ISR past replica.lag.time.max.ms; records
// written after the idle spell are committed by all three replicas.
// Reference: KIP-227 (followers), Kafka's lastCaughtUpTimeMs (KIP-16).
func TestFollowerFetchSessionsKeepIdleFollowersInTheISR(t *testing.T) {
	const topic, partitions, lagMs = "fsrepl", 30, 1000
	c := testutil.StartCluster(t, 3,
		"default.replication.factor=3",
		"replica.lag.time.max.ms="+strconv.Itoa(lagMs),
		"offsets.topic.num.partitions=1",
		"auto.leader.rebalance.enable=false",
	)
	mir := "3"
	if resp, err := c.Admin().CreateTopic(ctxT(t, 10*time.Second), partitions, 3, map[string]*string{"min.insync.replicas": &mir}, topic); err != nil || resp.Err != nil {
		t.Fatalf("create topic: %v %v", err, resp.Err)
	}
	full := func() error {
		for p := range int32(partitions) {
			if isr := c.ISR(topic, p); isr != "0 1 2" {
				return fmt.Errorf("partition %d: ISR [%s]", p, isr)
			}
		}
		return nil
	}
	testutil.Eventually(t, 30*time.Second, full)
	prod := c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()))
	produceSync(t, prod, &kgo.Record{Topic: topic, Partition: 0, Value: []byte("0")}, &kgo.Record{Topic: topic, Partition: 5, Value: []byte("0")})

	led := make(map[int32]int64)
	for p := range int32(partitions) {
		led[c.Leader(topic, p)]++
	}
	sessions := func() error {
		for i, b := range c.Brokers {
			// Two followers of every partition the broker leads, and
			// __consumer_offsets' one partition if it leads it.
			st := b.Node.Broker().FetchSessionStats()
			if st.Sessions != 2 || st.Partitions < 2*led[int32(i)] || st.Partitions > 2*led[int32(i)]+2 {
				return fmt.Errorf("broker %d leads %d partitions; fetch sessions %+v", i, led[int32(i)], st)
			}
		}
		return nil
	}
	testutil.Eventually(t, 10*time.Second, sessions)

	time.Sleep(3 * lagMs * time.Millisecond)
	if err := full(); err != nil {
		t.Fatalf("after %d ms idle: %v", 3*lagMs, err)
	}
	if err := sessions(); err != nil {
		t.Fatalf("after %d ms idle: %v", 3*lagMs, err)
	}
	// min.insync.replicas=3: committed only once both followers fetched
	// it in their sessions and reported the new offset.
	var rs []*kgo.Record
	for p := range int32(partitions) {
		v := "0"
		if p == 0 || p == 5 {
			v = "1"
		}
		rs = append(rs, &kgo.Record{Topic: topic, Partition: p, Value: []byte(v)})
	}
	produceSync(t, prod, rs...)
	cons := c.Client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	want := make(map[int32]int)
	for p := range int32(partitions) {
		want[p] = 1
	}
	want[0], want[5] = 2, 2
	checkRecords(t, ctxT(t, 30*time.Second), cons, want)
}
