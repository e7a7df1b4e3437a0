package broker_test

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/record"
	"samsa/internal/testutil"
)

// quotaBroker starts a broker whose quota rates measure over two samples
// of one second, so a rate is the bytes of the last second or two and a
// throttle shows after one request.
func quotaBroker(t *testing.T) *testutil.Broker {
	t.Helper()
	return testutil.StartBroker(t, "quota.window.num=2", "quota.window.size.seconds=1", "num.partitions=1")
}

// setQuota stores one quota on a client id and fails the test on error.
func setQuota(t *testing.T, adm *kadm.Client, clientID, key string, v float64) {
	t.Helper()
	if errs := alterQuotas(t, adm, false, kadm.AlterClientQuotaEntry{
		Entity: entity("client-id", clientID), Ops: []kadm.AlterClientQuotaOp{set(key, v)},
	}); errs[0] != "" {
		t.Fatalf("set %s on client id %s: %s", key, clientID, errs[0])
	}
}

// rawConn is one Kafka connection that sends requests exactly as given
// (version, acks) under a chosen client id.
type rawConn struct {
	t        *testing.T
	nc       net.Conn
	r        *bufio.Reader
	clientID string
	corr     int32
}

func dialRaw(t *testing.T, addr, clientID string) *rawConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawConn{t: t, nc: nc, r: bufio.NewReader(nc), clientID: clientID}
}

// send writes req at its version.
func (c *rawConn) send(req kmsg.Request) {
	c.t.Helper()
	c.corr++
	msg := []byte{0, 0, 0, 0}
	msg = binary.BigEndian.AppendUint16(msg, uint16(req.Key()))
	msg = binary.BigEndian.AppendUint16(msg, uint16(req.GetVersion()))
	msg = binary.BigEndian.AppendUint32(msg, uint32(c.corr))
	msg = binary.BigEndian.AppendUint16(msg, uint16(len(c.clientID)))
	msg = append(msg, c.clientID...)
	if req.IsFlexible() {
		msg = append(msg, 0)
	}
	msg = req.AppendTo(msg)
	binary.BigEndian.PutUint32(msg, uint32(len(msg)-4))
	c.nc.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.nc.Write(msg); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// recv reads the response to the last request sent, req.
func (c *rawConn) recv(req kmsg.Request) kmsg.Response {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(30 * time.Second))
	var size [4]byte
	if _, err := io.ReadFull(c.r, size[:]); err != nil {
		c.t.Fatalf("read response size: %v", err)
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(c.r, body); err != nil {
		c.t.Fatalf("read response: %v", err)
	}
	if got := int32(binary.BigEndian.Uint32(body)); got != c.corr {
		c.t.Fatalf("correlation id %d, want %d", got, c.corr)
	}
	body = body[4:]
	if req.IsFlexible() && req.Key() != 18 {
		body = body[1:]
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if err := resp.ReadFrom(body); err != nil {
		c.t.Fatalf("decode %s response: %v", kmsg.NameForKey(req.Key()), err)
	}
	return resp
}

func (c *rawConn) roundTrip(req kmsg.Request) kmsg.Response {
	c.t.Helper()
	c.send(req)
	return c.recv(req)
}

// bigBatch is one record batch holding a value of n bytes.
func bigBatch(t *testing.T, n int) []byte {
	t.Helper()
	bb := record.NewBuilder(record.CodecNone, time.Now().UnixMilli())
	bb.Add(record.Record{Key: []byte("k"), Value: bytes.Repeat([]byte("v"), n)})
	batch, err := bb.Build()
	if err != nil {
		t.Fatal(err)
	}
	return batch
}

func produceReq(version, acks int16, topic string, records []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = version, acks, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func metadataReq() *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	req.Topics = []kmsg.MetadataRequestTopic{}
	return req
}

// Reference: KIP-219: a produce above producer_byte_rate is answered at
// once with throttle_time_ms, and the connection is muted for that long.
func TestProduceAboveProducerByteRateIsAnsweredThenMuted(t *testing.T) {
	t.Parallel()
	b := quotaBroker(t)
	adm := b.Admin()
	testutil.CreateTopic(t, adm, "q", 1)
	setQuota(t, adm, "slow", "producer_byte_rate", 4096)

	c := dialRaw(t, b.Addr(), "slow")
	// About 8 KiB in one second against 4 KiB/s: about one second.
	began := time.Now()
	resp := c.roundTrip(produceReq(8, 1, "q", bigBatch(t, 8<<10))).(*kmsg.ProduceResponse)
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("produce error %d", code)
	}
	throttle := time.Duration(resp.ThrottleMillis) * time.Millisecond
	if throttle <= 0 || throttle > 5*time.Second {
		t.Fatalf("throttle_time_ms %d, want about 1000", resp.ThrottleMillis)
	}
	if d := time.Since(began); d >= throttle {
		t.Errorf("the throttled response took %v; it must not wait for the %v throttle", d, throttle)
	}
	c.roundTrip(metadataReq())
	if d := time.Since(began); d < throttle {
		t.Errorf("the next request was answered after %v, inside the %v mute", d, throttle)
	}

	// A client id without a quota is never throttled.
	other := dialRaw(t, b.Addr(), "free")
	for range 3 {
		if resp := other.roundTrip(produceReq(8, 1, "q", bigBatch(t, 8<<10))).(*kmsg.ProduceResponse); resp.ThrottleMillis != 0 {
			t.Fatalf("unquoted client throttled %d ms", resp.ThrottleMillis)
		}
	}
}

// Reference: KafkaApis.handleProduceRequest: acks=0 is exempt from the
// request quota but still recorded against producer_byte_rate, and its
// connection is muted although no response is sent.
func TestProduceWithAcksZeroStillRecordsAndMutes(t *testing.T) {
	t.Parallel()
	b := quotaBroker(t)
	adm := b.Admin()
	testutil.CreateTopic(t, adm, "q0", 1)
	setQuota(t, adm, "fire", "producer_byte_rate", 4096)

	c := dialRaw(t, b.Addr(), "fire")
	began := time.Now()
	c.send(produceReq(8, 0, "q0", bigBatch(t, 8<<10)))
	c.roundTrip(metadataReq())
	if d := time.Since(began); d < 500*time.Millisecond {
		t.Errorf("a request after an acks=0 produce over the quota was answered after %v; want it muted about a second", d)
	}
	// The bytes were recorded: the client id's rate is over its quota, so
	// a tiny acks=1 produce on another connection is throttled too.
	resp := dialRaw(t, b.Addr(), "fire").roundTrip(produceReq(8, 1, "q0", bigBatch(t, 10))).(*kmsg.ProduceResponse)
	if resp.ThrottleMillis <= 0 {
		t.Errorf("throttle_time_ms %d after the acks=0 burst, want > 0", resp.ThrottleMillis)
	}
}

// Reference: KIP-219: a client older than it (Produce v5) does not back off
// by itself, so its throttled response is held back instead.
func TestPreKIP219ResponseIsDelayedByTheThrottle(t *testing.T) {
	t.Parallel()
	b := quotaBroker(t)
	adm := b.Admin()
	testutil.CreateTopic(t, adm, "q5", 1)
	setQuota(t, adm, "old", "producer_byte_rate", 4096)

	c := dialRaw(t, b.Addr(), "old")
	began := time.Now()
	resp := c.roundTrip(produceReq(5, 1, "q5", bigBatch(t, 8<<10))).(*kmsg.ProduceResponse)
	throttle := time.Duration(resp.ThrottleMillis) * time.Millisecond
	if throttle <= 0 {
		t.Fatalf("throttle_time_ms %d, want > 0", resp.ThrottleMillis)
	}
	if d := time.Since(began); d < throttle {
		t.Errorf("v5 response after %v, before its %v throttle", d, throttle)
	}
}

// Reference: KafkaApis.handleFetchRequest: a consumer fetch over
// consumer_byte_rate takes back what it recorded and answers with no data
// but the throttle time; the client fetches again after it. A response is
// capped at what the quota allows in a window, but a first batch larger
// than that still goes out, with its throttle, lest the consumer be stuck.
func TestFetchAboveConsumerByteRateAnswersEmptyWithThrottle(t *testing.T) {
	t.Parallel()
	b := quotaBroker(t)
	adm := b.Admin()
	testutil.CreateTopic(t, adm, "qf", 1)
	setQuota(t, adm, "reader", "consumer_byte_rate", 4096)
	w := dialRaw(t, b.Addr(), "writer")
	for _, n := range []int{3 << 10, 3 << 10, 12 << 10} {
		if resp := w.roundTrip(produceReq(8, -1, "qf", bigBatch(t, n))).(*kmsg.ProduceResponse); resp.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("produce: error %d", resp.Topics[0].Partitions[0].ErrorCode)
		}
	}
	fetch := func(offset int64) *kmsg.FetchRequest {
		req := kmsg.NewPtrFetchRequest()
		req.Version, req.ReplicaID, req.MaxBytes, req.SessionEpoch = 12, -1, 1<<20, -1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "qf"
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LogStartOffset = offset, 1<<20, -1, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return req
	}
	batches := func(resp *kmsg.FetchResponse) int {
		if len(resp.Topics) == 0 {
			return 0
		}
		n, rest := 0, resp.Topics[0].Partitions[0].RecordBatches
		for len(rest) > 0 {
			_, r, err := record.Split(rest)
			if err != nil {
				t.Fatalf("fetched records: %v", err)
			}
			n, rest = n+1, r
		}
		return n
	}
	// The window allows 4 KiB a response: one 3 KiB batch, within the quota.
	c := dialRaw(t, b.Addr(), "reader")
	resp := c.roundTrip(fetch(0)).(*kmsg.FetchResponse)
	if resp.ThrottleMillis != 0 || batches(resp) != 1 {
		t.Fatalf("first fetch: throttle_time_ms %d, %d batches; want 0 and 1", resp.ThrottleMillis, batches(resp))
	}
	// The next 3 KiB in the same second is over 4 KiB/s: no data, a throttle.
	resp = c.roundTrip(fetch(1)).(*kmsg.FetchResponse)
	if resp.ThrottleMillis <= 0 || len(resp.Topics) != 0 {
		t.Fatalf("second fetch: throttle_time_ms %d with %d topics; want > 0 and no data", resp.ThrottleMillis, len(resp.Topics))
	}
	// The 12 KiB batch alone is over what a window allows: it goes out
	// with its throttle (after the mute of the fetch before).
	resp = c.roundTrip(fetch(2)).(*kmsg.FetchResponse)
	if resp.ThrottleMillis <= 0 || batches(resp) != 1 {
		t.Fatalf("oversized batch: throttle_time_ms %d, %d batches; want > 0 and 1", resp.ThrottleMillis, batches(resp))
	}
	// A client id without a quota gets everything, unthrottled.
	resp = dialRaw(t, b.Addr(), "other").roundTrip(fetch(0)).(*kmsg.FetchResponse)
	if resp.ThrottleMillis != 0 || batches(resp) != 3 {
		t.Fatalf("unquoted fetch: throttle %d, %d batches", resp.ThrottleMillis, batches(resp))
	}
}

// Reference: ClientRequestQuotaManager: handler time counts against
// request_percentage, the throttle is capped at one window sample, and
// ApiVersions is not throttled.
func TestRequestPercentageThrottlesBusyClients(t *testing.T) {
	t.Parallel()
	b := quotaBroker(t)
	adm := b.Admin()
	setQuota(t, adm, "busy", "request_percentage", 0.001) // 10 µs of handler time per second

	var throttle int32
	for i := 0; i < 200 && throttle == 0; i++ {
		resp := dialRaw(t, b.Addr(), "busy").roundTrip(metadataReq()).(*kmsg.MetadataResponse)
		throttle = resp.ThrottleMillis
	}
	if throttle <= 0 || throttle > 1000 {
		t.Fatalf("throttle_time_ms %d, want 1..1000 (capped at one sample)", throttle)
	}
	av := kmsg.NewPtrApiVersionsRequest()
	av.Version = 3
	av.ClientSoftwareName, av.ClientSoftwareVersion = "t", "1"
	if resp := dialRaw(t, b.Addr(), "busy").roundTrip(av).(*kmsg.ApiVersionsResponse); resp.ThrottleMillis != 0 {
		t.Errorf("ApiVersions throttled %d ms", resp.ThrottleMillis)
	}
}

// throttleHook records the largest throttle a client was told of.
type throttleHook struct {
	mu  sync.Mutex
	max time.Duration
	n   int
}

func (h *throttleHook) OnBrokerThrottle(_ kgo.BrokerMetadata, d time.Duration, _ bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.n++
	h.max = max(h.max, d)
}

// Reference: KIP-13, KIP-219: a producer that sends as fast as it can is
// throttled and held near its producer_byte_rate. The bound is loose (2x):
// exact figures belong in a benchmark.
func TestProducerAboveByteRateIsHeldNearItsQuota(t *testing.T) {
	t.Parallel()
	// Three one-second samples: the first two seconds' worth is a burst the
	// quota allows, then the rate is held.
	b := testutil.StartBroker(t, "quota.window.num=3", "quota.window.size.seconds=1", "num.partitions=1")
	adm := b.Admin()
	testutil.CreateTopic(t, adm, "rate", 1)
	const quota = 128 << 10
	setQuota(t, adm, "rate-test", "producer_byte_rate", quota)

	hook := &throttleHook{}
	// NB: uncompressed, so that the bytes on the wire, which the quota
	// counts, are the bytes this test counts.
	cl := b.Client(kgo.ClientID("rate-test"), kgo.WithHooks(hook), kgo.DefaultProduceTopic("rate"),
		kgo.MaxBufferedRecords(64), kgo.ProducerLinger(0), kgo.ProducerBatchCompression(kgo.NoCompression()))
	value := bytes.Repeat([]byte("x"), 1<<10)
	var acked atomic.Int64
	var failed atomic.Value
	ctx := ctxT(t, 60*time.Second)
	const run = 4 * time.Second
	began := time.Now()
	for time.Since(began) < run {
		cl.Produce(ctx, &kgo.Record{Value: value}, func(r *kgo.Record, err error) {
			if err != nil {
				failed.Store(err)
				return
			}
			acked.Add(int64(len(r.Value)))
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(began)
	if err, _ := failed.Load().(error); err != nil {
		t.Fatalf("produce: %v", err)
	}
	rate := float64(acked.Load()) / elapsed.Seconds()
	hook.mu.Lock()
	n, maxThrottle := hook.n, hook.max
	hook.mu.Unlock()
	t.Logf("%d KiB in %v: %.0f KiB/s against a quota of %d KiB/s; %d throttles, the longest %v",
		acked.Load()>>10, elapsed.Round(time.Millisecond), rate/1024, quota>>10, n, maxThrottle)
	if n == 0 {
		t.Error("the producer was never throttled (throttle_time_ms always 0)")
	}
	if rate < quota/2 || rate > 2*quota {
		t.Errorf("measured %.0f B/s, want within 2x of the %d B/s quota", rate, quota)
	}
}

// Reference: KIP-13, KIP-219: a consumer over consumer_byte_rate is
// throttled, gets every record all the same (a throttled fetch is answered
// empty and fetched again), and reads near its quota.
func TestConsumerAboveByteRateReadsEverythingNearItsQuota(t *testing.T) {
	t.Parallel()
	b := testutil.StartBroker(t, "quota.window.num=3", "quota.window.size.seconds=1", "num.partitions=1")
	adm := b.Admin()
	testutil.CreateTopic(t, adm, "crate", 1)
	const quota = 64 << 10
	setQuota(t, adm, "crate-reader", "consumer_byte_rate", quota)

	const records, size = 256, 1 << 10
	// Batches well under the 128 KiB a response may hold (two one-second
	// samples of the quota).
	pr := b.Client(kgo.DefaultProduceTopic("crate"), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerBatchMaxBytes(16<<10))
	value := bytes.Repeat([]byte("y"), size)
	var rs []*kgo.Record
	for range records {
		rs = append(rs, &kgo.Record{Value: value})
	}
	produceSync(t, pr, rs...)

	hook := &throttleHook{}
	cl := b.Client(kgo.ClientID("crate-reader"), kgo.WithHooks(hook), kgo.ConsumeTopics("crate"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	ctx := ctxT(t, 60*time.Second)
	began := time.Now()
	var got, gotBytes int
	for got < records {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records: %v", got, records, err)
		}
		fs.EachRecord(func(r *kgo.Record) { got++; gotBytes += len(r.Value) })
	}
	elapsed := time.Since(began)
	rate := float64(gotBytes) / elapsed.Seconds()
	hook.mu.Lock()
	n, maxThrottle := hook.n, hook.max
	hook.mu.Unlock()
	t.Logf("%d KiB in %v: %.0f KiB/s against a quota of %d KiB/s; %d throttles, the longest %v",
		gotBytes>>10, elapsed.Round(time.Millisecond), rate/1024, quota>>10, n, maxThrottle)
	if n == 0 {
		t.Error("the consumer was never throttled")
	}
	if rate > 2*quota {
		t.Errorf("measured %.0f B/s, want at most twice the %d B/s quota", rate, quota)
	}
}

func createTopicsReq(version int16, partitions map[string]int32, order ...string) *kmsg.CreateTopicsRequest {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version, req.TimeoutMillis = version, 10000
	for _, name := range order {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions[name], 1
		req.Topics = append(req.Topics, rt)
	}
	return req
}

// Reference: KIP-599: controller_mutation_rate is a token bucket of
// partitions; from CreateTopics v6 on a topic asked for once it is spent
// gets THROTTLING_QUOTA_EXCEEDED (one topic may overdraw it), and older
// versions go through with only a throttle.
func TestControllerMutationRateRefusesTopicsOnceSpent(t *testing.T) {
	t.Parallel()
	b := quotaBroker(t) // a bucket of 2 samples x 1 s x quota tokens
	adm := b.Admin()
	setQuota(t, adm, "creator", "controller_mutation_rate", 2)
	setQuota(t, adm, "old-creator", "controller_mutation_rate", 2)
	parts := map[string]int32{"m1": 3, "m2": 3, "m3": 1}

	resp := dialRaw(t, b.Addr(), "creator").roundTrip(createTopicsReq(7, parts, "m1", "m2", "m3")).(*kmsg.CreateTopicsResponse)
	codes := map[string]int16{}
	for _, rt := range resp.Topics {
		codes[rt.Topic] = rt.ErrorCode
	}
	// 4 tokens: m1 takes 3, m2 overdraws to -2, m3 finds the bucket spent.
	if codes["m1"] != 0 || codes["m2"] != 0 || codes["m3"] != kerr.ThrottlingQuotaExceeded.Code {
		t.Fatalf("codes %v; want m1, m2 created and m3 THROTTLING_QUOTA_EXCEEDED", codes)
	}
	if resp.ThrottleMillis <= 0 || resp.ThrottleMillis > 2000 {
		t.Errorf("throttle_time_ms %d, want about 1000 (2 tokens at 2/s)", resp.ThrottleMillis)
	}

	// Before v6: every topic is created; the overdraft shows as a throttle.
	parts = map[string]int32{"o1": 3, "o2": 3, "o3": 1}
	resp = dialRaw(t, b.Addr(), "old-creator").roundTrip(createTopicsReq(5, parts, "o1", "o2", "o3")).(*kmsg.CreateTopicsResponse)
	for _, rt := range resp.Topics {
		if rt.ErrorCode != 0 {
			t.Errorf("v5 %s: error %d, want created", rt.Topic, rt.ErrorCode)
		}
	}
	if resp.ThrottleMillis <= 0 {
		t.Errorf("v5 throttle_time_ms %d, want > 0 after drawing 7 of 4 tokens", resp.ThrottleMillis)
	}

	// Deletes draw from the same bucket, a token per partition.
	del := kmsg.NewPtrDeleteTopicsRequest()
	del.Version, del.TimeoutMillis = 6, 10000
	for _, name := range []string{"m1", "m2"} {
		rt := kmsg.NewDeleteTopicsRequestTopic()
		rt.Topic = kmsg.StringPtr(name)
		del.Topics = append(del.Topics, rt)
	}
	dresp := dialRaw(t, b.Addr(), "creator").roundTrip(del).(*kmsg.DeleteTopicsResponse)
	for _, rt := range dresp.Topics {
		if rt.ErrorCode != kerr.ThrottlingQuotaExceeded.Code {
			t.Errorf("delete %s right after: error %d, want THROTTLING_QUOTA_EXCEEDED", *rt.Topic, rt.ErrorCode)
		}
	}
}
