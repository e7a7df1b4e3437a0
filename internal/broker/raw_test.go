package broker_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/record"
)

// buildBatch returns a valid producer batch of n records in codec c.
func buildBatch(t *testing.T, c record.Codec, n int, baseTs int64) record.Batch {
	t.Helper()
	bb := record.NewBuilder(c, baseTs)
	for i := 0; i < n; i++ {
		bb.Add(record.Record{
			TimestampDelta: int64(i),
			Key:            []byte(fmt.Sprintf("k%d", i)),
			Value:          bytes.Repeat([]byte("v"), 10+i),
			Headers:        []record.Header{{Key: "h", Value: []byte{byte(i)}}},
		})
	}
	batch, err := bb.Build()
	if err != nil {
		t.Fatalf("build batch: %v", err)
	}
	return batch
}

// produceRaw sends records as the whole record set of one partition in a
// Produce v9 request with acks and returns that partition's response.
func produceRaw(t *testing.T, cl *kgo.Client, acks int16, topic string, partition int32, records []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Version = 9
	req.Acks = acks
	req.TimeoutMillis = 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = partition
	rp.Records = records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := request[*kmsg.ProduceResponse](t, cl, req)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("produce: malformed response")
	}
	return resp.Topics[0].Partitions[0]
}
