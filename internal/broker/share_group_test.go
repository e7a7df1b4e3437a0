package broker_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/broker"
	"samsa/internal/group"
	"samsa/internal/testutil"
	"samsa/internal/tlsconfig"
)

// group_Partition is the partition of a coordinator key.
var group_Partition = group.Partition

// shareBrokerConfig starts share groups at the log start and keeps
// acquisition locks short enough for a dead member's records to come back
// within a test.
var shareBrokerConfig = []string{
	"offsets.topic.num.partitions=4",
	"share.auto.offset.reset=earliest",
	"share.coordinator.state.topic.num.partitions=4",
	"group.share.record.lock.duration.ms=2000",
	"group.share.heartbeat.interval.ms=1000",
	"group.share.session.timeout.ms=6000",
}

// produceValues produces value "p-i" to each partition for i < n.
func produceValues(t *testing.T, cl *kgo.Client, topic string, partitions int32, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var recs []*kgo.Record
	for p := int32(0); p < partitions; p++ {
		for i := 0; i < n; i++ {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: []byte(fmt.Sprintf("%d-%d", p, i))})
		}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// shareLedger counts deliveries per (partition, offset). It is safe for
// concurrent use.
type shareLedger struct {
	mu        sync.Mutex
	delivered map[string]int
	counts    map[string][]int32 // delivery counts seen, in order
}

func newShareLedger() *shareLedger {
	return &shareLedger{delivered: map[string]int{}, counts: map[string][]int32{}}
}

func (l *shareLedger) add(r *kgo.Record) {
	k := fmt.Sprintf("%d/%d", r.Partition, r.Offset)
	l.mu.Lock()
	l.delivered[k]++
	l.counts[k] = append(l.counts[k], r.DeliveryCount())
	l.mu.Unlock()
}

func (l *shareLedger) distinct() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.delivered)
}

// shareConsumer polls a share group until ctx ends, handing every record
// to decide, which acknowledges it.
func shareConsumer(ctx context.Context, t *testing.T, addr, group, topic string, decide func(*kgo.Record) kgo.AckStatus, opts ...kgo.Opt) {
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(addr), kgo.ShareGroup(group), kgo.ConsumeTopics(topic),
		kgo.FetchMaxWait(500 * time.Millisecond),
	}, opts...)...)
	if err != nil {
		t.Error(err)
		return
	}
	defer cl.Close()
	for ctx.Err() == nil {
		fs := cl.PollRecords(ctx, 100)
		fs.EachRecord(func(r *kgo.Record) { r.Ack(decide(r)) })
		if err := cl.FlushAcks(ctx); err != nil && ctx.Err() == nil {
			t.Logf("flush acks: %v", err)
		}
	}
}

// rawShareMember is a share group member driven by hand over kmsg: a
// member that acquires records and then dies without acknowledging them.
type rawShareMember struct {
	cl      *kgo.Client
	group   string
	member  string
	epoch   int32 // member epoch
	session int32 // share session epoch
	maxWait int32 // ShareFetch MaxWaitMillis; 0 is 2000
	direct  bool  // ShareFetch goes to node, not where kgo routes it
	node    int32
}

// joinShareMember joins member to group, subscribed to topic, as a raw
// member whose fetches park at most maxWait ms.
func joinShareMember(ctx context.Context, t *testing.T, cl *kgo.Client, group, topic, member string, maxWait int32) *rawShareMember {
	t.Helper()
	m := &rawShareMember{cl: cl, group: group, member: member, maxWait: maxWait}
	testutil.Eventually(t, 15*time.Second, func() error {
		if resp, err := m.heartbeat(ctx, []string{topic}); err != nil || resp.ErrorCode != 0 {
			return fmt.Errorf("heartbeat: %v %v", err, resp)
		}
		return nil
	})
	return m
}

func (m *rawShareMember) heartbeat(ctx context.Context, topics []string) (*kmsg.ShareGroupHeartbeatResponse, error) {
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.GroupID, req.MemberID, req.MemberEpoch, req.SubscribedTopicNames = m.group, m.member, m.epoch, topics
	resp, err := req.RequestWith(ctx, m.cl)
	if err != nil {
		return nil, err
	}
	if resp.ErrorCode == 0 {
		m.epoch = resp.MemberEpoch
	}
	return resp, nil
}

func (m *rawShareMember) fetch(ctx context.Context, topicID [16]byte, partition int32, acks []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch) (*kmsg.ShareFetchResponse, error) {
	req := kmsg.NewPtrShareFetchRequest()
	req.Version = 1
	req.GroupID, req.MemberID = &m.group, &m.member
	req.ShareSessionEpoch = m.session
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.MaxRecords = 2000, 1, 1<<20, 500
	if m.maxWait > 0 {
		req.MaxWaitMillis = m.maxWait
	}
	t := kmsg.NewShareFetchRequestTopic()
	t.TopicID = topicID
	p := kmsg.NewShareFetchRequestTopicPartition()
	p.Partition, p.PartitionMaxBytes, p.AcknowledgementBatches = partition, 1<<20, acks
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	var resp *kmsg.ShareFetchResponse
	var err error
	if m.direct {
		var r kmsg.Response
		if r, err = m.cl.Broker(int(m.node)).Request(ctx, req); err == nil {
			resp = r.(*kmsg.ShareFetchResponse)
		}
	} else {
		resp, err = req.RequestWith(ctx, m.cl)
	}
	if err == nil && resp.ErrorCode == 0 {
		m.session++
	}
	return resp, err
}

func shareTopicID(t *testing.T, cl *kgo.Client, topic string) [16]byte {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = &topic
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil || len(resp.Topics) != 1 {
		t.Fatalf("metadata: %v", err)
	}
	return resp.Topics[0].TopicID
}

func acquiredCount(resp *kmsg.ShareFetchResponse) (n int, first int64, last int64) {
	first = -1
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			for _, a := range p.AcquiredRecords {
				if first < 0 {
					first = a.FirstOffset
				}
				last = a.LastOffset
				n += int(a.LastOffset - a.FirstOffset + 1)
			}
		}
	}
	return n, first, last
}

// firstAcquired returns the first acquired range of resp; ok is false
// when it acquired nothing.
func firstAcquired(resp *kmsg.ShareFetchResponse) (ar kmsg.ShareFetchResponseTopicPartitionAcquiredRecord, ok bool) {
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			for _, a := range p.AcquiredRecords {
				return a, true
			}
		}
	}
	return ar, false
}

// TestShareGroupFourConsumersAcceptEveryRecordOnce: four share consumers
// on two partitions accept every record exactly once, including the
// records a member acquired before it died without acknowledging them,
// which come back once their acquisition lock expires, with delivery
// count 2. Reference: KIP-932, "Acquisition lock".
func TestShareGroupFourConsumersAcceptEveryRecordOnce(t *testing.T) {
	t.Parallel()
	b := testutil.StartBroker(t, shareBrokerConfig...)
	const topic, group, perPartition = "share-four", "sg-four", 300
	testutil.CreateTopic(t, b.Admin(), topic, 2)
	cl := b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceValues(t, cl, topic, 2, perPartition)

	// A member acquires the first records of partition 0 and dies.
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	dead := &rawShareMember{cl: cl, group: group, member: "dead-member"}
	testutil.Eventually(t, 10*time.Second, func() error {
		// Retried while __consumer_offsets is created and loaded.
		if resp, err := dead.heartbeat(ctx, []string{topic}); err != nil || resp.ErrorCode != 0 {
			return fmt.Errorf("heartbeat: %v %v", err, resp)
		}
		return nil
	})
	fr, err := dead.fetch(ctx, shareTopicID(t, cl, topic), 0, nil)
	if err != nil || fr.ErrorCode != 0 {
		t.Fatalf("fetch: %v %+v", err, fr)
	}
	deadN, deadFirst, deadLast := acquiredCount(fr)
	if deadN == 0 || deadFirst != 0 {
		t.Fatalf("the dead member acquired %d records from %d: %+v", deadN, deadFirst, fr)
	}

	l := newShareLedger()
	cctx, ccancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			shareConsumer(cctx, t, b.Addr(), group, topic, func(r *kgo.Record) kgo.AckStatus {
				l.add(r)
				return kgo.AckAccept
			})
		}()
	}
	testutil.Eventually(t, 20*time.Second, func() error {
		if n := l.distinct(); n < 2*perPartition {
			return fmt.Errorf("%d of %d records delivered", n, 2*perPartition)
		}
		return nil
	})
	// Give duplicates a chance to show.
	time.Sleep(2500 * time.Millisecond)
	ccancel()
	wg.Wait()

	l.mu.Lock()
	defer l.mu.Unlock()
	for p := 0; p < 2; p++ {
		for o := 0; o < perPartition; o++ {
			k := fmt.Sprintf("%d/%d", p, o)
			if l.delivered[k] != 1 {
				t.Errorf("record %s delivered %d times (counts %v)", k, l.delivered[k], l.counts[k])
				continue
			}
			want := int32(1)
			if p == 0 && int64(o) >= deadFirst && int64(o) <= deadLast {
				want = 2 // the dead member's delivery counts
			}
			if got := l.counts[k][0]; got != want {
				t.Errorf("record %s delivery count %d, want %d", k, got, want)
			}
		}
	}
	if len(l.delivered) != 2*perPartition {
		t.Errorf("%d distinct records delivered, want %d", len(l.delivered), 2*perPartition)
	}
	// Metrics: one group, its two share-partitions, every record
	// acknowledged once (accept) or more (gaps, none here).
	if st := b.Node.Broker().ShareStats(); st.Groups != 1 || st.Partitions != 2 || st.AcknowledgedRecords < 2*perPartition {
		t.Errorf("share stats %+v", st)
	}
}

// TestShareGroupRejectReleaseAndPoisonRecord: a rejected record is never
// delivered again, a released one is, and one released every time is
// archived once its delivery count reaches group.share.delivery.count.limit.
// Reference: KIP-932, "Delivery count".
func TestShareGroupRejectReleaseAndPoisonRecord(t *testing.T) {
	t.Parallel()
	b := testutil.StartBroker(t, append(shareBrokerConfig, "group.share.delivery.count.limit=3")...)
	const topic, group = "share-acks", "sg-acks"
	testutil.CreateTopic(t, b.Admin(), topic, 1)
	cl := b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	for _, v := range []string{"reject", "release-once", "poison", "accept"} {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	seen := map[string][]int32{}
	produced := false
	cctx, ccancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		shareConsumer(cctx, t, b.Addr(), group, topic, func(r *kgo.Record) kgo.AckStatus {
			mu.Lock()
			defer mu.Unlock()
			v := string(r.Value)
			seen[v] = append(seen[v], r.DeliveryCount())
			switch {
			case v == "reject":
				return kgo.AckReject
			case v == "release-once" && len(seen[v]) == 1, v == "poison":
				return kgo.AckRelease
			}
			return kgo.AckAccept
		})
	}()
	testutil.Eventually(t, 20*time.Second, func() error {
		mu.Lock()
		defer mu.Unlock()
		if len(seen["poison"]) < 3 || len(seen["release-once"]) < 2 || len(seen["end"]) < 1 {
			if len(seen["poison"]) >= 3 && !produced {
				go cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("end")})
				produced = true
			}
			return fmt.Errorf("seen %v", seen)
		}
		return nil
	})
	time.Sleep(1500 * time.Millisecond)
	ccancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	want := map[string]string{
		"reject":       "[1]",
		"release-once": "[1 2]",
		"poison":       "[1 2 3]",
		"accept":       "[1]",
		"end":          "[1]",
	}
	for v, w := range want {
		if got := fmt.Sprint(seen[v]); got != w {
			t.Errorf("%s delivered with counts %s, want %s", v, got, w)
		}
	}
}

// TestShareGroupBadInputGetsKafkaErrors: unknown members, stale epochs,
// missing sessions, wrong session epochs and acknowledgements of records
// the member does not hold get Kafka's error codes.
func TestShareGroupBadInputGetsKafkaErrors(t *testing.T) {
	t.Parallel()
	b := testutil.StartBroker(t, append(shareBrokerConfig, "group.share.record.lock.duration.ms=30000", "group.share.session.timeout.ms=45000")...)
	const topic, group = "share-bad", "sg-bad"
	testutil.CreateTopic(t, b.Admin(), topic, 1)
	cl := b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceValues(t, cl, topic, 1, 10)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	id := shareTopicID(t, cl, topic)
	check := func(what string, code int16, want *kerr.Error) {
		t.Helper()
		if got := kerr.ErrorForCode(code); got != want && !(want == nil && code == 0) {
			t.Errorf("%s: %v, want %v", what, got, want)
		}
	}

	m := &rawShareMember{cl: cl, group: group, member: "m1", maxWait: 10}
	var resp *kmsg.ShareGroupHeartbeatResponse
	testutil.Eventually(t, 10*time.Second, func() error {
		m.epoch = 3
		var err error
		if resp, err = m.heartbeat(ctx, nil); err != nil {
			return err
		}
		if c := resp.ErrorCode; c == kerr.NotCoordinator.Code || c == kerr.CoordinatorLoadInProgress.Code {
			return kerr.ErrorForCode(c) // __consumer_offsets is being created
		}
		return nil
	})
	check("unknown member at epoch 3", resp.ErrorCode, kerr.UnknownMemberID)
	m.epoch = 0
	resp, _ = m.heartbeat(ctx, nil)
	check("join without topics", resp.ErrorCode, kerr.InvalidRequest)
	resp, _ = m.heartbeat(ctx, []string{topic})
	check("join", resp.ErrorCode, nil)
	if resp.Assignment == nil || len(resp.Assignment.TopicPartitions) != 1 {
		t.Fatalf("assignment %+v", resp.Assignment)
	}
	m.epoch += 5
	resp, _ = m.heartbeat(ctx, nil)
	check("heartbeat at a wrong epoch", resp.ErrorCode, kerr.FencedMemberEpoch)

	// A consumer group's id is not a share group.
	cg := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	cg.Group, cg.MemberID, cg.MemberEpoch, cg.RebalanceTimeoutMillis, cg.SubscribedTopicNames = "cg-bad", "c1", 0, 30000, []string{topic}
	cg.Version = 1
	cg.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	if r, err := cg.RequestWith(ctx, cl); err != nil || r.ErrorCode != 0 {
		t.Fatalf("consumer group heartbeat: %v %v %v", err, r, *r.ErrorMessage)
	}
	other := &rawShareMember{cl: cl, group: "cg-bad", member: "s1"}
	resp, _ = other.heartbeat(ctx, []string{topic})
	check("share heartbeat of a consumer group", resp.ErrorCode, kerr.GroupIDNotFound)

	// Share sessions.
	ack := kmsg.NewPtrShareAcknowledgeRequest()
	ack.Version = 1
	ack.GroupID, ack.MemberID, ack.ShareSessionEpoch = &m.group, &m.member, 1
	ar, err := ack.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	check("acknowledge without a session", ar.ErrorCode, kerr.ShareSessionNotFound)
	m.session = 4
	fr, _ := m.fetch(ctx, id, 0, nil)
	check("fetch at epoch 4 without a session", fr.ErrorCode, kerr.ShareSessionNotFound)
	m.session = 0
	fr, _ = m.fetch(ctx, id, 0, nil)
	check("open session", fr.ErrorCode, nil)
	if n, first, _ := acquiredCount(fr); n != 10 || first != 0 {
		t.Fatalf("acquired %d from %d", n, first)
	}
	m.session = 7
	fr, _ = m.fetch(ctx, id, 0, nil)
	check("fetch at a wrong session epoch", fr.ErrorCode, kerr.InvalidShareSessionEpoch)
	m.session = 1

	// Acknowledgements: beyond what was acquired, bad ranges, bad types.
	batch := func(first, last int64, types ...int8) []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch {
		b := kmsg.NewShareFetchRequestTopicPartitionAcknowledgementBatch()
		b.FirstOffset, b.LastOffset, b.AcknowledgeTypes = first, last, types
		return []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{b}
	}
	partCode := func(resp *kmsg.ShareFetchResponse) int16 {
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				return p.AcknowledgeErrorCode
			}
		}
		return -1
	}
	fr, _ = m.fetch(ctx, id, 0, batch(5, 20, 1))
	check("acknowledge records never acquired", partCode(fr), kerr.InvalidRecordState)
	fr, _ = m.fetch(ctx, id, 0, batch(5, 4, 1))
	check("acknowledge a reversed range", partCode(fr), kerr.InvalidRequest)
	fr, _ = m.fetch(ctx, id, 0, batch(0, 1, 9))
	check("acknowledge type 9", partCode(fr), kerr.InvalidRequest)
	// Another member may not acknowledge m1's records.
	o := &rawShareMember{cl: cl, group: group, member: "m2", maxWait: 10}
	if r, _ := o.heartbeat(ctx, []string{topic}); r.ErrorCode != 0 {
		t.Fatalf("join m2: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	o.fetch(ctx, id, 0, nil) // opens its session; nothing to acquire (m1 holds all)
	fr, _ = o.fetch(ctx, id, 0, batch(0, 9, 1))
	check("acknowledge another member's records", partCode(fr), kerr.InvalidRecordState)
	fr, _ = m.fetch(ctx, id, 0, batch(0, 9, 1))
	check("acknowledge own records", partCode(fr), nil)
	// Accepted twice is invalid.
	fr, _ = m.fetch(ctx, id, 0, batch(0, 0, 1))
	check("acknowledge an accepted record", partCode(fr), kerr.InvalidRecordState)

	// A request opening a session with acknowledgements is invalid.
	m.session = 0
	fr, _ = m.fetch(ctx, id, 0, batch(0, 0, 1))
	check("acknowledgements at session epoch 0", fr.ErrorCode, kerr.InvalidRequest)

	// Describe.
	dreq := kmsg.NewPtrShareGroupDescribeRequest()
	dreq.GroupIDs = []string{group, "no-such-group"}
	dr, err := dreq.RequestWith(ctx, cl)
	if err != nil || len(dr.Groups) != 2 {
		t.Fatalf("describe: %v", err)
	}
	if g := dr.Groups[0]; g.ErrorCode != 0 || g.GroupState != "Stable" || len(g.Members) != 2 {
		t.Errorf("described %+v", g)
	}
	check("describe unknown group", dr.Groups[1].ErrorCode, kerr.GroupIDNotFound)

	// The SPSO moved past the accepted records.
	oreq := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	og := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
	og.GroupID = group
	oreq.Groups = append(oreq.Groups, og)
	or, err := oreq.RequestWith(ctx, cl)
	if err != nil || len(or.Groups) != 1 || len(or.Groups[0].Topics) != 1 || len(or.Groups[0].Topics[0].Partitions) != 1 {
		t.Fatalf("describe share group offsets: %v %+v", err, or)
	}
	if p := or.Groups[0].Topics[0].Partitions[0]; p.ErrorCode != 0 || p.StartOffset != 10 {
		t.Errorf("share group offsets: %+v, want start offset 10", p)
	}

	// ListGroups shows it as a share group; classic members cannot join
	// it; it is deleted only once empty, with its share-partitions' state.
	lreq := kmsg.NewPtrListGroupsRequest()
	lreq.TypesFilter = []string{"share"}
	lr, err := lreq.RequestWith(ctx, cl)
	if err != nil || len(lr.Groups) != 1 || lr.Groups[0].Group != group || lr.Groups[0].GroupType != "share" {
		t.Fatalf("list share groups: %v %+v", err, lr)
	}
	jreq := kmsg.NewPtrJoinGroupRequest()
	jreq.Group, jreq.ProtocolType, jreq.SessionTimeoutMillis, jreq.RebalanceTimeoutMillis = group, "consumer", 10000, 10000
	jreq.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range"}}
	jr, err := jreq.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	check("classic join of a share group", jr.ErrorCode, kerr.InconsistentGroupProtocol)
	del := func() int16 {
		req := kmsg.NewPtrDeleteGroupsRequest()
		req.Groups = []string{group}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Groups[0].ErrorCode
	}
	check("delete a share group with members", del(), kerr.NonEmptyGroup)
	for _, mm := range []*rawShareMember{m, o} {
		mm.epoch = -1
		if r, _ := mm.heartbeat(ctx, nil); r.ErrorCode != 0 {
			t.Fatalf("leave: %v", kerr.ErrorForCode(r.ErrorCode))
		}
	}
	check("delete an empty share group", del(), nil)
	n := &rawShareMember{cl: cl, group: group, member: "m3", maxWait: 10}
	if r, _ := n.heartbeat(ctx, []string{topic}); r.ErrorCode != 0 {
		t.Fatalf("join m3: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	fr, _ = n.fetch(ctx, id, 0, nil)
	if c, first, _ := acquiredCount(fr); c != 10 || first != 0 {
		t.Errorf("after the group was deleted, a new member acquired %d from %d; want all 10 again", c, first)
	}
	_ = strconv.Itoa
}

// TestShareStateSurvivesLeaderAndShareCoordinatorKills: in a 3-broker
// cluster, records accepted before the partition leader is killed are
// never delivered again by the new leader, released and still-acquired
// ones are, with the delivery counts they had; and after the share
// coordinator is killed too, the state it wrote is what the next
// coordinator serves. Reference: KIP-932, "Share-group state persistence".
func TestShareStateSurvivesLeaderAndShareCoordinatorKills(t *testing.T) {
	t.Parallel()
	c := testutil.StartClusterLogged(t, 3, append(shareBrokerConfig,
		"offsets.topic.replication.factor=3", "share.coordinator.state.topic.replication.factor=3",
		"group.share.record.lock.duration.ms=30000", "group.share.session.timeout.ms=45000",
		// A killed follower leaves the ISR within 2 s, so that writes
		// commit again.
		"replica.lag.time.max.ms=2000")...)
	const topic, group = "share-fo", "sg-fo"
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	if r, err := c.Admin().CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": kmsg.StringPtr("2")}, topic); err != nil || r.Err != nil {
		t.Fatalf("create topic: %v %v", err, r.Err)
	}
	cl := c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceValues(t, cl, topic, 1, 20)
	id := shareTopicID(t, cl, topic)

	// fetchFrom opens a session on the partition's current leader and
	// acquires, retrying while leadership or the coordinators move.
	fetchFrom := func(m *rawShareMember) *kmsg.ShareFetchResponse {
		t.Helper()
		var fr *kmsg.ShareFetchResponse
		testutil.Eventually(t, 40*time.Second, func() error {
			if r, err := m.heartbeat(ctx, []string{topic}); err != nil || r.ErrorCode != 0 {
				m.epoch = 0
				return fmt.Errorf("heartbeat: %v %v", err, r)
			}
			m.direct, m.node, m.session = true, c.Leader(topic, 0), 0
			resp, err := m.fetch(ctx, id, 0, nil)
			if err != nil {
				return err
			}
			if resp.ErrorCode != 0 {
				return kerr.ErrorForCode(resp.ErrorCode)
			}
			for _, tp := range resp.Topics {
				for _, p := range tp.Partitions {
					if p.ErrorCode != 0 {
						if p.ErrorMessage != nil {
							return fmt.Errorf("%w: %s", kerr.ErrorForCode(p.ErrorCode), *p.ErrorMessage)
						}
						return kerr.ErrorForCode(p.ErrorCode)
					}
				}
			}
			if n, _, _ := acquiredCount(resp); n == 0 {
				return fmt.Errorf("nothing acquired yet") // a new leader's high watermark trails
			}
			fr = resp
			return nil
		})
		return fr
	}
	acks := func(m *rawShareMember, batches ...kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch) {
		t.Helper()
		req := kmsg.NewPtrShareAcknowledgeRequest()
		req.Version = 1
		req.GroupID, req.MemberID, req.ShareSessionEpoch = &m.group, &m.member, m.session
		rt := kmsg.NewShareAcknowledgeRequestTopic()
		rt.TopicID = id
		rp := kmsg.NewShareAcknowledgeRequestTopicPartition()
		rp.AcknowledgementBatches = batches
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		r, err := cl.Broker(int(m.node)).Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		resp := r.(*kmsg.ShareAcknowledgeResponse)
		if resp.ErrorCode != 0 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("acknowledge: %v / %v", kerr.ErrorForCode(resp.ErrorCode), kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode))
		}
		m.session++
	}
	ab := func(first, last int64, typ int8) kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch {
		b := kmsg.NewShareAcknowledgeRequestTopicPartitionAcknowledgementBatch()
		b.FirstOffset, b.LastOffset, b.AcknowledgeTypes = first, last, []int8{typ}
		return b
	}
	ranges := func(fr *kmsg.ShareFetchResponse) string {
		var s string
		for _, tp := range fr.Topics {
			for _, p := range tp.Partitions {
				for _, a := range p.AcquiredRecords {
					s += fmt.Sprintf("%d-%d(%d) ", a.FirstOffset, a.LastOffset, a.DeliveryCount)
				}
			}
		}
		return s
	}

	a := &rawShareMember{cl: cl, group: group, member: "a", maxWait: 100}
	if got := ranges(fetchFrom(a)); got != "0-19(1) " {
		t.Fatalf("a acquired %s", got)
	}
	acks(a, ab(0, 9, 1), ab(10, 14, 2)) // accept 0-9, release 10-14; 15-19 stay acquired

	leader := c.Leader(topic, 0)
	c.Kill(int(leader))
	testutil.Eventually(t, 30*time.Second, func() error {
		if l := c.Leader(topic, 0); l < 0 || l == leader {
			return fmt.Errorf("leader %d", l)
		}
		return nil
	})
	// A new client: the old one may keep dialing the dead coordinator.
	cl = c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	bm := &rawShareMember{cl: cl, group: group, member: "b", maxWait: 100}
	// NB: a fetch retried after a lost response finds the records of
	// the first attempt once their lock expired, one delivery later; the
	// count is at least 2, never 1, and 0-9 never come back.
	fb := fetchFrom(bm)
	var offs []int64
	for _, tp := range fb.Topics {
		for _, p := range tp.Partitions {
			for _, a := range p.AcquiredRecords {
				if a.DeliveryCount < 2 {
					t.Errorf("after the leader was killed, %d-%d delivered with count %d; want at least 2", a.FirstOffset, a.LastOffset, a.DeliveryCount)
				}
				for o := a.FirstOffset; o <= a.LastOffset; o++ {
					offs = append(offs, o)
				}
			}
		}
	}
	if len(offs) != 10 || offs[0] != 10 || offs[9] != 19 {
		t.Fatalf("after the leader was killed, b acquired %s; want 10-19 delivered again", ranges(fb))
	}
	acks(bm, ab(10, 19, 1))

	// Bring the old leader back, then kill the share coordinator of the
	// share-partition.
	c.Start(int(leader))
	key := fmt.Sprintf("%s:%x:%d", group, id, 0)
	coord := c.Leader("__share_group_state", group_Partition(key, 4))
	testutil.Eventually(t, 30*time.Second, func() error {
		if isr := c.ISR("__share_group_state", group_Partition(key, 4)); len(isr) < 5 {
			return fmt.Errorf("isr %q", isr)
		}
		return nil
	})
	t.Logf("killed partition leader %d, now killing share coordinator %d", leader, coord)
	c.Kill(int(coord))
	cl = c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceValues(t, cl, topic, 1, 3) // offsets 20-22
	cm := &rawShareMember{cl: cl, group: group, member: "c", maxWait: 100}
	testutil.Eventually(t, 30*time.Second, func() error {
		fr := fetchFrom(cm)
		if got := ranges(fr); got != "20-22(1) " {
			return fmt.Errorf("after the coordinator %d was killed, c acquired %q; want only the new records", coord, got)
		}
		return nil
	})
}

// interruptShareGroupDeletion makes share group group on b, whose member
// acquired the 10 records of topic, accepted 0-4 and left, then deletes
// it with a deletion that stops once its deleting topics are written (a
// coordinator failing there). It returns the topic's id.
func interruptShareGroupDeletion(t *testing.T, ctx context.Context, b *testutil.Broker, topic, group string) [16]byte {
	t.Helper()
	cl := b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	defer cl.Close()
	testutil.CreateTopic(t, b.Admin(), topic, 1)
	produceValues(t, cl, topic, 1, 10)
	id := shareTopicID(t, cl, topic)
	a := joinShareMember(ctx, t, cl, group, topic, "a", 100)
	testutil.Eventually(t, 20*time.Second, func() error {
		fr, err := a.fetch(ctx, id, 0, nil)
		if err != nil || fr.ErrorCode != 0 {
			return fmt.Errorf("fetch: %v %+v", err, fr)
		}
		if n, _, _ := acquiredCount(fr); n != 10 {
			return fmt.Errorf("acquired %d", n)
		}
		return nil
	})
	ack := kmsg.NewShareFetchRequestTopicPartitionAcknowledgementBatch()
	ack.FirstOffset, ack.LastOffset, ack.AcknowledgeTypes = 0, 4, []int8{1}
	if _, err := a.fetch(ctx, id, 0, []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{ack}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, func() error {
		if start, _ := shareOffsets(t, ctx, cl, group, topic, 0); start != 5 {
			return fmt.Errorf("start offset %d after accepting 0-4, want 5", start)
		}
		return nil
	})
	a.epoch = -1
	if r, err := a.heartbeat(ctx, nil); err != nil || r.ErrorCode != 0 {
		t.Fatalf("leave: %v %+v", err, r)
	}

	var failed atomic.Bool
	restore := broker.SetShareGroupDeletingHook(group, func() error {
		if failed.CompareAndSwap(false, true) {
			return errors.New("injected: coordinator failed mid-deletion")
		}
		return nil
	})
	t.Cleanup(restore)
	req := kmsg.NewPtrDeleteGroupsRequest()
	req.Groups = []string{group}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if !failed.Load() || resp.Groups[0].ErrorCode == 0 {
		t.Fatalf("the interrupted deletion answered %v (hook ran: %v)", kerr.ErrorForCode(resp.Groups[0].ErrorCode), failed.Load())
	}
	return id
}

// describeShareGroupLoaded returns ShareGroupDescribe's error for group
// (nil: it exists) once its coordinator has loaded it and until answers
// satisfies done (nil: any answer); before, the coordinator answers
// COORDINATOR_LOAD_IN_PROGRESS or NOT_COORDINATOR.
func describeShareGroupLoaded(t *testing.T, ctx context.Context, cl *kgo.Client, group string, done func(error) bool) error {
	t.Helper()
	var got error
	testutil.Eventually(t, 30*time.Second, func() error {
		req := kmsg.NewPtrShareGroupDescribeRequest()
		req.GroupIDs = []string{group}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return err
		}
		if len(resp.Groups) != 1 {
			return fmt.Errorf("described %d groups", len(resp.Groups))
		}
		got = kerr.ErrorForCode(resp.Groups[0].ErrorCode)
		if got == kerr.CoordinatorLoadInProgress || got == kerr.NotCoordinator || got == kerr.CoordinatorNotAvailable {
			return got
		}
		if done != nil && !done(got) {
			return fmt.Errorf("describe the group: %v", got)
		}
		return nil
	})
	return got
}

// firstAcquiredBy joins m and returns the first range it acquires of
// the topic with id.
func firstAcquiredBy(t *testing.T, ctx context.Context, m *rawShareMember, topic string, id [16]byte) kmsg.ShareFetchResponseTopicPartitionAcquiredRecord {
	t.Helper()
	var ar kmsg.ShareFetchResponseTopicPartitionAcquiredRecord
	testutil.Eventually(t, 20*time.Second, func() error {
		if r, err := m.heartbeat(ctx, []string{topic}); err != nil || r.ErrorCode != 0 {
			m.epoch = 0
			return fmt.Errorf("heartbeat: %v %v", err, r)
		}
		fr, err := m.fetch(ctx, id, 0, nil)
		if err != nil || fr.ErrorCode != 0 {
			return fmt.Errorf("fetch: %v %+v", err, fr)
		}
		var ok bool
		if ar, ok = firstAcquired(fr); !ok {
			return errors.New("nothing acquired yet")
		}
		return nil
	})
	return ar
}

// TestShareGroupDeletionInterruptedIsFinishedOnLoad: a share group
// deletion that stops after its deleting topics are written (the
// coordinator failed there) is finished by the next coordinator to load
// the group, here the same broker after a restart, without another
// DeleteGroups: the group is gone and a new member of the same id starts
// over, every record at delivery count 1.
func TestShareGroupDeletionInterruptedIsFinishedOnLoad(t *testing.T) {
	t.Parallel()
	b := testutil.StartBroker(t, shareBrokerConfig...)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const topic, group = "share-del-resume", "sg-del-resume"
	id := interruptShareGroupDeletion(t, ctx, b, topic, group)

	b.Restart()
	cl := b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	// Eventually fails the test unless the group goes.
	describeShareGroupLoaded(t, ctx, cl, group, func(err error) bool { return err == kerr.GroupIDNotFound })
	n := &rawShareMember{cl: cl, group: group, member: "n", maxWait: 100}
	if ar := firstAcquiredBy(t, ctx, n, topic, id); ar.FirstOffset != 0 || ar.LastOffset != 9 || ar.DeliveryCount != 1 {
		t.Fatalf("after the deletion was finished, a new member acquired %d-%d at delivery count %d; want 0-9 at 1",
			ar.FirstOffset, ar.LastOffset, ar.DeliveryCount)
	}
}

// TestShareGroupJoinAbandonsAnInterruptedDeletion: a member that joins a
// group whose deletion stopped halfway abandons the deletion, so the
// coordinator that loads the group next (the same broker after a
// restart) keeps it, with its state: a new member starts at offset 5,
// after the records accepted before.
func TestShareGroupJoinAbandonsAnInterruptedDeletion(t *testing.T) {
	t.Parallel()
	b := testutil.StartBroker(t, shareBrokerConfig...)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const topic, group = "share-del-abandon", "sg-del-abandon"
	id := interruptShareGroupDeletion(t, ctx, b, topic, group)
	cl := b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	m := joinShareMember(ctx, t, cl, group, topic, "m", 100)
	m.epoch = -1
	if r, err := m.heartbeat(ctx, nil); err != nil || r.ErrorCode != 0 {
		t.Fatalf("leave: %v %+v", err, r)
	}
	cl.Close()

	b.Restart()
	cl = b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := describeShareGroupLoaded(t, ctx, cl, group, nil); err != nil {
		t.Fatalf("describe the group after the restart: %v, want it kept", err)
	}
	// A resumed deletion would run within milliseconds of the load.
	time.Sleep(500 * time.Millisecond)
	if err := describeShareGroupLoaded(t, ctx, cl, group, nil); err != nil {
		t.Fatalf("describe the group 500 ms after the restart: %v, want it kept", err)
	}
	n := &rawShareMember{cl: cl, group: group, member: "n", maxWait: 100}
	if ar := firstAcquiredBy(t, ctx, n, topic, id); ar.FirstOffset != 5 {
		t.Fatalf("a new member of the kept group acquired %d-%d; want from 5 (0-4 were accepted)", ar.FirstOffset, ar.LastOffset)
	}
}

// TestShareGroupConsumesOverTLS: a share fetch answers its batches from
// the log's files (sendfile on a plain listener); on an SSL listener they
// go through the TLS copy instead. Every record arrives once, with its
// value, in batches smaller and larger than the broker's 64 KiB header
// window.
func TestShareGroupConsumesOverTLS(t *testing.T) {
	t.Parallel()
	files, err := tlsconfig.GenerateDevCerts(t.TempDir(), nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	b := testutil.StartBroker(t, append(shareBrokerConfig,
		"listeners=PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
		"inter.broker.listener.name=PLAINTEXT",
		"ssl.keystore.location="+files.Server,
		"ssl.truststore.location="+files.CA,
	)...)
	const topic, group = "share-tls", "sg-tls"
	testutil.CreateTopic(t, b.Admin(), topic, 1)
	want := map[string]bool{}
	for i, size := range []int{10, 200 << 10, 100, 90 << 10, 5} {
		cl := b.Client(kgo.ProducerLinger(0))
		var recs []*kgo.Record
		for j := 0; j < 3; j++ {
			v := fmt.Sprintf("%d-%d-%s", i, j, bytes.Repeat([]byte("x"), size))
			want[v] = true
			recs = append(recs, &kgo.Record{Topic: topic, Value: []byte(v)})
		}
		produceSync(t, cl, recs...)
	}
	pem, err := os.ReadFile(files.CA)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var mu sync.Mutex
	got := map[string]int{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		shareConsumer(ctx, t, b.Node.ListenerAddr("SSL"), group, topic, func(r *kgo.Record) kgo.AckStatus {
			mu.Lock()
			got[string(r.Value)]++
			if len(got) == len(want) {
				cancel()
			}
			mu.Unlock()
			return kgo.AckAccept
		}, kgo.DialTLSConfig(&tls.Config{RootCAs: pool, ServerName: "localhost"}))
	}()
	<-done
	mu.Lock()
	defer mu.Unlock()
	for v := range want {
		if got[v] != 1 {
			t.Errorf("record %.8s... delivered %d times", v, got[v])
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d distinct records, want %d", len(got), len(want))
	}
}
