package broker_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/record"
	"samsa/internal/testutil"
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

// waitProducerIDRefused produces records, whose producer id no broker of
// the cluster issued, to partition 0 of topic through addr until the
// broker refuses the id with UNKNOWN_PRODUCER_ID. The broker learns that
// an id above every block it knows of was never issued from a read of the
// cluster's limit in the background, which the first such produce starts;
// until that read ends the id is taken as Kafka takes any producer id, so
// records may be written to topic before the refusal.
func waitProducerIDRefused(t *testing.T, addr, topic string, records []byte) {
	t.Helper()
	testutil.Eventually(t, 10*time.Second, func() error {
		if sp := produceRawAcks(t, addr, -1, topic, 0, records); sp.ErrorCode != kerr.UnknownProducerID.Code {
			return fmt.Errorf("produce with a never issued producer id: %v", kerr.ErrorForCode(sp.ErrorCode))
		}
		return nil
	})
}

// produceRaw sends records as the whole record set of one partition in a
// Produce request and returns that partition's response. kgo replaces acks
// with the client's (acks=all by default); use produceRawAcks for other
// values.
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

// rawRequest sends req at its own version on a fresh TCP connection to
// addr and decodes the answer. Unlike kgo.Client.Request it sends the
// request exactly as given (kgo rewrites the acks of a Produce request and
// picks its own versions).
func rawRequest(t *testing.T, addr string, req kmsg.Request) kmsg.Response {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second))

	const correlationID = 77
	msg := []byte{0, 0, 0, 0}
	msg = binary.BigEndian.AppendUint16(msg, uint16(req.Key()))
	msg = binary.BigEndian.AppendUint16(msg, uint16(req.GetVersion()))
	msg = binary.BigEndian.AppendUint32(msg, correlationID)
	msg = binary.BigEndian.AppendUint16(msg, 4)
	msg = append(msg, "test"...)
	if req.IsFlexible() {
		msg = append(msg, 0) // no tagged fields
	}
	msg = req.AppendTo(msg)
	binary.BigEndian.PutUint32(msg, uint32(len(msg)-4))
	if _, err := conn.Write(msg); err != nil {
		t.Fatalf("write: %v", err)
	}

	var size [4]byte
	if _, err := io.ReadFull(conn, size[:]); err != nil {
		t.Fatalf("read response size: %v", err)
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(conn, body); err != nil {
		t.Fatalf("read response: %v", err)
	}
	if got := binary.BigEndian.Uint32(body); got != correlationID {
		t.Fatalf("correlation id %d, want %d", got, correlationID)
	}
	body = body[4:]
	if req.IsFlexible() && req.Key() != 18 { // ApiVersions keeps header v0
		body = body[1:] // empty tagged fields
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if err := resp.ReadFrom(body); err != nil {
		t.Fatalf("decode %s response: %v", kmsg.NameForKey(req.Key()), err)
	}
	return resp
}

// produceRawAcks is produceRaw over rawRequest (Produce v8), keeping acks
// as given.
func produceRawAcks(t *testing.T, addr string, acks int16, topic string, partition int32, records []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Version = 8
	req.Acks = acks
	req.TimeoutMillis = 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = partition
	rp.Records = records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := rawRequest(t, addr, req).(*kmsg.ProduceResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("produce: malformed response")
	}
	return resp.Topics[0].Partitions[0]
}
