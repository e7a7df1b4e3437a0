package e2e

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/rcrowley/go-metrics"
)

// sarama's metrics start a ticker goroutine per process that never
// stops; nil metrics keep the package's leak check meaningful.
func init() { metrics.UseNilMetrics = true }

// saramaConfig is a sarama configuration pinned to version v, with
// timeouts short enough for a test and a synchronous producer.
func saramaConfig(v sarama.KafkaVersion) *sarama.Config {
	c := sarama.NewConfig()
	c.Version = v
	c.ClientID = "samsa-e2e-sarama"
	c.Net.DialTimeout = 5 * time.Second
	c.Net.ReadTimeout = 10 * time.Second
	c.Metadata.Retry.Max = 3
	c.Metadata.Retry.Backoff = 100 * time.Millisecond
	c.Producer.Return.Successes = true
	c.Producer.RequiredAcks = sarama.WaitForAll
	c.Producer.Retry.Max = 0
	c.Producer.Partitioner = sarama.NewManualPartitioner
	c.Consumer.Return.Errors = true
	c.Consumer.Offsets.Initial = sarama.OffsetOldest
	c.Consumer.Offsets.AutoCommit.Enable = false
	return c
}

// saramaHandler consumes one claim per partition until want records have
// arrived, marking each and committing synchronously at the end.
type saramaHandler struct {
	want int
	mu   sync.Mutex
	got  []*sarama.ConsumerMessage
	done chan struct{}
	once sync.Once
}

func (h *saramaHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (h *saramaHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (h *saramaHandler) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for {
		select {
		case m, ok := <-c.Messages():
			if !ok {
				return nil
			}
			s.MarkMessage(m, "")
			h.mu.Lock()
			h.got = append(h.got, m)
			n := len(h.got)
			h.mu.Unlock()
			if n == h.want {
				s.Commit()
				h.once.Do(func() { close(h.done) })
			}
		case <-s.Context().Done():
			return nil
		}
	}
}

// TestSaramaV2 runs sarama pinned to Kafka 2.0 (Produce v6, Fetch v8, the
// v2 record format, classic consumer groups) through a produce, a group
// consume and a commit, and checks every record and the committed offset.
func TestSaramaV2(t *testing.T) {
	b := newBroker(t)
	const topic, group, count = "sarama-v2", "sarama-v2-group", 50
	createTopic(t, b.addr(), topic, 1, nil)
	conf := saramaConfig(sarama.V2_0_0_0)

	prod, err := sarama.NewSyncProducer([]string{b.addr()}, conf)
	if err != nil {
		t.Fatalf("producer: %v", err)
	}
	for i := range count {
		part, off, err := prod.SendMessage(&sarama.ProducerMessage{
			Topic:     topic,
			Key:       sarama.StringEncoder(fmt.Sprintf("k%d", i)),
			Value:     sarama.StringEncoder(fmt.Sprintf("v%d", i)),
			Headers:   []sarama.RecordHeader{{Key: []byte("h"), Value: []byte(fmt.Sprint(i))}},
			Partition: 0,
		})
		if err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		if part != 0 || off != int64(i) {
			t.Fatalf("send %d stored at %d/%d, want 0/%d", i, part, off, i)
		}
	}
	if err := prod.Close(); err != nil {
		t.Fatalf("producer close: %v", err)
	}

	cg, err := sarama.NewConsumerGroup([]string{b.addr()}, group, conf)
	if err != nil {
		t.Fatalf("consumer group: %v", err)
	}
	h := &saramaHandler{want: count, done: make(chan struct{})}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	consumed := make(chan error, 1)
	go func() {
		for ctx.Err() == nil {
			if err := cg.Consume(ctx, []string{topic}, h); err != nil && !errors.Is(err, sarama.ErrClosedConsumerGroup) {
				consumed <- err
				return
			}
		}
		consumed <- nil
	}()
	select {
	case <-h.done:
	case err := <-consumed:
		t.Fatalf("consume ended before %d records: %v", count, err)
	case <-ctx.Done():
		h.mu.Lock()
		t.Fatalf("consumed %d of %d records in 60 s", len(h.got), count)
	}
	cancel()
	<-consumed
	if err := cg.Close(); err != nil {
		t.Fatalf("consumer group close: %v", err)
	}
	for i, m := range h.got {
		if m.Offset != int64(i) || string(m.Key) != fmt.Sprintf("k%d", i) || string(m.Value) != fmt.Sprintf("v%d", i) {
			t.Fatalf("record %d: offset %d key %q value %q", i, m.Offset, m.Key, m.Value)
		}
		if len(m.Headers) != 1 || string(m.Headers[0].Key) != "h" || string(m.Headers[0].Value) != fmt.Sprint(i) {
			t.Fatalf("record %d headers %v", i, m.Headers)
		}
	}

	if got := saramaCommitted(t, b.addr(), conf, group, topic); got != count {
		t.Fatalf("committed offset %d, want %d", got, count)
	}
}

// saramaCommitted is the group's committed offset of partition 0, read
// with a fresh sarama client of the same version.
func saramaCommitted(t *testing.T, addr string, conf *sarama.Config, group, topic string) int64 {
	t.Helper()
	cl, err := sarama.NewClient([]string{addr}, conf)
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	defer cl.Close()
	om, err := sarama.NewOffsetManagerFromClient(group, cl)
	if err != nil {
		t.Fatalf("offset manager: %v", err)
	}
	defer om.Close()
	pom, err := om.ManagePartition(topic, 0)
	if err != nil {
		t.Fatalf("manage partition: %v", err)
	}
	defer pom.AsyncClose()
	off, _ := pom.NextOffset()
	return off
}

// TestSaramaV0_10 runs sarama pinned to Kafka 0.10.0, whose Produce v2
// and Fetch v2 carry the v0/v1 message formats samsa does not store. A
// send fails with UNSUPPORTED_VERSION and a consumer reports it, both
// without the connection being dropped; the group offset APIs of that
// version (OffsetCommit v2, OffsetFetch v1, FindCoordinator v0) are
// served and round-trip a commit.
func TestSaramaV0_10(t *testing.T) {
	b := newBroker(t)
	const topic, group = "sarama-v0-10", "sarama-v0-10-group"
	createTopic(t, b.addr(), topic, 1, nil)
	conf := saramaConfig(sarama.V0_10_0_0)

	prod, err := sarama.NewSyncProducer([]string{b.addr()}, conf)
	if err != nil {
		t.Fatalf("producer: %v", err)
	}
	for i := range 3 {
		_, _, err := prod.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: 0, Value: sarama.StringEncoder("v")})
		if !errors.Is(err, sarama.ErrUnsupportedVersion) {
			t.Fatalf("send %d: %v, want %v", i, err, sarama.ErrUnsupportedVersion)
		}
	}
	prod.Close()
	if ends := endOffsets(t, b.addr(), topic); ends[0] != 0 {
		t.Fatalf("log end %d after refused sends, want 0", ends[0])
	}

	cons, err := sarama.NewConsumer([]string{b.addr()}, conf)
	if err != nil {
		t.Fatalf("consumer: %v", err)
	}
	defer cons.Close()
	pc, err := cons.ConsumePartition(topic, 0, sarama.OffsetOldest)
	if err != nil {
		t.Fatalf("consume partition: %v", err)
	}
	select {
	case cerr := <-pc.Errors():
		if !errors.Is(cerr.Err, sarama.ErrUnsupportedVersion) {
			t.Fatalf("consumer error %v, want %v", cerr.Err, sarama.ErrUnsupportedVersion)
		}
	case m := <-pc.Messages():
		t.Fatalf("consumer got a message at offset %d from an empty log", m.Offset)
	case <-time.After(30 * time.Second):
		t.Fatal("consumer reported nothing in 30 s")
	}
	pc.AsyncClose()

	// Commit offset 7 with the 0.10 client's OffsetCommit, read it back.
	cl, err := sarama.NewClient([]string{b.addr()}, conf)
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	om, err := sarama.NewOffsetManagerFromClient(group, cl)
	if err != nil {
		t.Fatalf("offset manager: %v", err)
	}
	pom, err := om.ManagePartition(topic, 0)
	if err != nil {
		t.Fatalf("manage partition: %v", err)
	}
	pom.MarkOffset(7, "")
	om.Commit()
	select {
	case perr := <-pom.Errors():
		t.Fatalf("commit: %v", perr.Err)
	default:
	}
	pom.AsyncClose()
	om.Close()
	cl.Close()
	if got := saramaCommitted(t, b.addr(), conf, group, topic); got != 7 {
		t.Fatalf("committed offset %d, want 7", got)
	}
}
