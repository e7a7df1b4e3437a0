package broker_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/goleak"

	"samsa/internal/testutil"
)

// The tests here run a real broker in process (embedded etcd, real TCP on
// 127.0.0.1) and talk to it with franz-go, as a Kafka user would.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// scaled returns n, or n/div under -race.
func scaled(n, div int) int {
	if raceEnabled {
		return max(n/div, 1)
	}
	return n
}

// ctxT returns a context that ends with the test or after d.
func ctxT(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// produceSync produces rs and fails the test on any error.
func produceSync(t *testing.T, cl *kgo.Client, rs ...*kgo.Record) {
	t.Helper()
	if err := cl.ProduceSync(ctxT(t, 30*time.Second), rs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

// request sends req on cl and fails the test if it gets no response.
func request[R kmsg.Response](t *testing.T, cl *kgo.Client, req kmsg.Request) R {
	t.Helper()
	resp, err := cl.Request(ctxT(t, 30*time.Second), req)
	if err != nil {
		t.Fatalf("%s request: %v", kmsg.NameForKey(req.Key()), err)
	}
	return resp.(R)
}

// topicID returns topic's id from Metadata.
func topicID(t *testing.T, cl *kgo.Client, topic string) [16]byte {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp := request[*kmsg.MetadataResponse](t, cl, req)
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("metadata for %s: %+v", topic, resp.Topics)
	}
	return resp.Topics[0].TopicID
}

// fetchRaw issues one Fetch for topic/partition from offset, naming the
// topic both by name and by id (kgo sends the highest version both sides
// support, so the request must be valid for either).
func fetchRaw(t *testing.T, cl *kgo.Client, topic string, partition int32, offset int64, mutate func(*kmsg.FetchRequest)) kmsg.FetchResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxWaitMillis = 0
	req.MinBytes = 0
	req.MaxBytes = 50 << 20
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rt.TopicID = topicID(t, cl, topic)
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition = partition
	rp.FetchOffset = offset
	rp.PartitionMaxBytes = 10 << 20
	rp.CurrentLeaderEpoch = -1
	rp.LogStartOffset = -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	if mutate != nil {
		mutate(req)
	}
	resp := request[*kmsg.FetchResponse](t, cl, req)
	if resp.ErrorCode != 0 {
		t.Fatalf("fetch: top-level error %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("fetch: got %d topics in response, want 1 with 1 partition", len(resp.Topics))
	}
	return resp.Topics[0].Partitions[0]
}

// listOffset returns the offset ListOffsets (v7+) gives for timestamp ts.
func listOffset(t *testing.T, cl *kgo.Client, topic string, partition int32, ts int64) (offset, timestamp int64, code int16) {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version = 7
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition = partition
	rp.Timestamp = ts
	rp.CurrentLeaderEpoch = -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := request[*kmsg.ListOffsetsResponse](t, cl, req)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("list offsets: malformed response")
	}
	p := resp.Topics[0].Partitions[0]
	return p.Offset, p.Timestamp, p.ErrorCode
}

// consumeAll reads count records from the start of every partition in
// partitions with direct partition consumption and returns them by
// partition, failing the test if they do not all arrive in time.
func consumeAll(t *testing.T, addr, topic string, partitions int32, count int) map[int32][]*kgo.Record {
	t.Helper()
	offs := make(map[int32]kgo.Offset, partitions)
	for p := int32(0); p < partitions; p++ {
		offs[p] = kgo.NewOffset().AtStart()
	}
	cl := testutil.NewClient(t, addr,
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offs}),
		kgo.FetchMaxWait(200*time.Millisecond),
	)
	ctx := ctxT(t, 60*time.Second)
	got := make(map[int32][]*kgo.Record)
	n := 0
	for n < count {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records: %v", n, count, err)
		}
		fs.EachError(func(topic string, p int32, err error) {
			t.Fatalf("consume %s[%d]: %v", topic, p, err)
		})
		fs.EachRecord(func(r *kgo.Record) {
			got[r.Partition] = append(got[r.Partition], r)
			n++
		})
	}
	if n != count {
		t.Fatalf("consumed %d records, want %d", n, count)
	}
	return got
}

// consumeFrom reads count records of partition 0 from offset.
func consumeFrom(t *testing.T, addr, topic string, offset int64, count int) []*kgo.Record {
	t.Helper()
	cl := testutil.NewClient(t, addr,
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(offset)}}),
		kgo.FetchMaxWait(200*time.Millisecond),
	)
	ctx := ctxT(t, 30*time.Second)
	var got []*kgo.Record
	for len(got) < count {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records from %d: %v", len(got), count, offset, err)
		}
		fs.EachError(func(topic string, p int32, err error) {
			t.Fatalf("consume %s[%d]: %v", topic, p, err)
		})
		got = append(got, fs.Records()...)
	}
	if len(got) != count {
		t.Fatalf("consumed %d records, want %d", len(got), count)
	}
	for i, r := range got {
		if r.Offset != offset+int64(i) {
			t.Fatalf("record %d at offset %d, want %d", i, r.Offset, offset+int64(i))
		}
	}
	return got
}

// errorsIs is errors.Is for a kerr error.
func errorsIs(err error, want *kerr.Error) bool { return errors.Is(err, want) }

func itoa(n int32) string { return strconv.Itoa(int(n)) }
