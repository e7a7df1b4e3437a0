package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// newClient returns a franz-go client for addr, closed when the test ends.
func newClient(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// createTopic creates topic with the given partition count, replication
// factor 1, and configs (name=value pairs).
func createTopic(t *testing.T, addr, topic string, partitions int32, configs map[string]*string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, 1, configs, topic)
	if err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
	if resp.Err != nil {
		t.Fatalf("create topic %s: %v", topic, resp.Err)
	}
}

// endOffsets returns the high watermark of each partition of topic.
func endOffsets(t *testing.T, addr, topic string) map[int32]int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	listed, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("list end offsets: %v", err)
	}
	if err := listed.Error(); err != nil {
		t.Fatalf("list end offsets: %v", err)
	}
	out := make(map[int32]int64)
	listed.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
	return out
}

// consumeAll reads every partition of topic from offset 0 up to its
// current high watermark and returns the records per partition, in offset
// order.
func consumeAll(t *testing.T, addr, topic string) map[int32][]*kgo.Record {
	t.Helper()
	ends := endOffsets(t, addr, topic)
	start := make(map[int32]kgo.Offset)
	for p := range ends {
		start[p] = kgo.NewOffset().At(0)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: start}),
		kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	out := make(map[int32][]*kgo.Record)
	remaining := func() int {
		n := 0
		for p, end := range ends {
			recs := out[p]
			if end > 0 && (len(recs) == 0 || recs[len(recs)-1].Offset < end-1) {
				n++
			}
		}
		return n
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for remaining() > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consume %s: %d partitions short of their end offsets %v after 30s", topic, remaining(), ends)
		}
		fs.EachError(func(topic string, p int32, err error) {
			t.Fatalf("consume %s/%d: %v", topic, p, err)
		})
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset < ends[r.Partition] {
				out[r.Partition] = append(out[r.Partition], r)
			}
		})
	}
	return out
}

// topicID returns the topic id Metadata reports for topic.
func topicID(ctx context.Context, t *testing.T, cl *kgo.Client, topic string) [16]byte {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("metadata: %v", err)
	}
	for _, mt := range resp.Topics {
		if mt.Topic != nil && *mt.Topic == topic {
			if err := kerr.ErrorForCode(mt.ErrorCode); err != nil {
				t.Fatalf("metadata %s: %v", topic, err)
			}
			return mt.TopicID
		}
	}
	t.Fatalf("metadata: topic %s missing", topic)
	return [16]byte{}
}

// fetchResult is what one partition's Fetch answer says, for comparing
// answers across restarts.
type fetchResult struct {
	ErrorCode      int16
	HighWatermark  int64
	LogStartOffset int64
	RecordBatches  []byte
}

// fetchRaw sends one Fetch for topic/partition at offset with maxBytes to
// broker 0 and returns the partition's answer.
func fetchRaw(ctx context.Context, t *testing.T, cl *kgo.Client, topic string, id [16]byte, partition int32, offset int64, maxBytes int32) fetchResult {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxWaitMillis = 0
	req.MinBytes = 1
	req.MaxBytes = maxBytes
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rt.TopicID = id
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition = partition
	rp.FetchOffset = offset
	rp.PartitionMaxBytes = maxBytes
	rp.CurrentLeaderEpoch = -1
	rp.LogStartOffset = -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl.Broker(0))
	if err != nil {
		t.Fatalf("fetch %s/%d@%d: %v", topic, partition, offset, err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		t.Fatalf("fetch %s/%d@%d: %v", topic, partition, offset, err)
	}
	for _, st := range resp.Topics {
		for _, sp := range st.Partitions {
			if sp.Partition == partition {
				return fetchResult{sp.ErrorCode, sp.HighWatermark, sp.LogStartOffset, sp.RecordBatches}
			}
		}
	}
	t.Fatalf("fetch %s/%d@%d: partition missing from response", topic, partition, offset)
	return fetchResult{}
}

// listOffsetResult is one partition's ListOffsets answer.
type listOffsetResult struct {
	ErrorCode int16
	Timestamp int64
	Offset    int64
}

func (r listOffsetResult) String() string {
	return fmt.Sprintf("{err=%d ts=%d off=%d}", r.ErrorCode, r.Timestamp, r.Offset)
}

// listOffset sends one ListOffsets for topic/partition at timestamp (or
// -1 latest, -2 earliest, -3 max timestamp) to broker 0.
func listOffset(ctx context.Context, t *testing.T, cl *kgo.Client, topic string, partition int32, timestamp int64) listOffsetResult {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition = partition
	rp.Timestamp = timestamp
	rp.CurrentLeaderEpoch = -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl.Broker(0))
	if err != nil {
		t.Fatalf("list offsets %s/%d@%d: %v", topic, partition, timestamp, err)
	}
	for _, st := range resp.Topics {
		for _, sp := range st.Partitions {
			if sp.Partition == partition {
				return listOffsetResult{sp.ErrorCode, sp.Timestamp, sp.Offset}
			}
		}
	}
	t.Fatalf("list offsets %s/%d@%d: partition missing from response", topic, partition, timestamp)
	return listOffsetResult{}
}
