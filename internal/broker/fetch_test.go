package broker_test

import (
	"bytes"
	"math"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/record"
	"samsa/internal/testutil"
)

// TestFetchLongPollWakesOnProduce issues a Fetch with max_wait 10s and
// min_bytes 1 on an empty partition: it must answer with the record that
// another client produces meanwhile, well before the 10s pass.
func TestFetchLongPollWakesOnProduce(t *testing.T) {
	b := testutil.StartBroker(t)
	topic := "longpoll"
	testutil.CreateTopic(t, b.Admin(), topic, 1)
	fetcher := b.Client()
	id := topicID(t, fetcher, topic)

	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxWaitMillis = 10000
	req.MinBytes = 1
	req.MaxBytes = 1 << 20
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, id
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes = 1 << 20
	rp.CurrentLeaderEpoch = -1
	rp.LogStartOffset = -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)

	type result struct {
		p       kmsg.FetchResponseTopicPartition
		err     error
		elapsed time.Duration
	}
	done := make(chan result, 1)
	ctx := ctxT(t, 30*time.Second)
	start := time.Now()
	go func() {
		resp, err := fetcher.Request(ctx, req)
		r := result{err: err, elapsed: time.Since(start)}
		if err == nil {
			fr := resp.(*kmsg.FetchResponse)
			if len(fr.Topics) == 1 && len(fr.Topics[0].Partitions) == 1 {
				r.p = fr.Topics[0].Partitions[0]
			} else {
				r.err = testutil.Errorf("malformed fetch response")
			}
		}
		done <- r
	}()

	// Produce only once the fetch has been waiting a while, so that an
	// answer proves it was woken rather than served at once.
	const delay = 500 * time.Millisecond
	select {
	case r := <-done:
		t.Fatalf("fetch on an empty partition returned after %v (error %d, %d bytes)", r.elapsed, r.p.ErrorCode, len(r.p.RecordBatches))
	case <-time.After(delay):
	}
	produceSync(t, producer(t, b), &kgo.Record{Topic: topic, Value: []byte("wake")})

	var r result
	select {
	case r = <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("fetch did not return")
	}
	if r.err != nil || r.p.ErrorCode != 0 {
		t.Fatalf("fetch: %v, error code %d", r.err, r.p.ErrorCode)
	}
	if r.elapsed < delay || r.elapsed > 5*time.Second {
		t.Fatalf("fetch returned after %v, want between %v and 5s", r.elapsed, delay)
	}
	batch, rest, err := record.Split(r.p.RecordBatches)
	if err != nil || len(rest) != 0 {
		t.Fatalf("fetched %d bytes: %v, %d bytes left", len(r.p.RecordBatches), err, len(rest))
	}
	recs, err := batch.Records(0)
	if err != nil || len(recs) != 1 || !bytes.Equal(recs[0].Value, []byte("wake")) {
		t.Fatalf("fetched records %+v (%v), want one record \"wake\"", recs, err)
	}
	if r.p.HighWatermark != 1 {
		t.Fatalf("high watermark %d, want 1", r.p.HighWatermark)
	}
}

// TestFetchEmptyWaitsMaxWait: with nothing to read, the answer comes after
// max_wait and is empty.
func TestFetchEmptyWaitsMaxWait(t *testing.T) {
	b := testutil.StartBroker(t)
	topic := "emptywait"
	testutil.CreateTopic(t, b.Admin(), topic, 1)
	cl := b.Client()
	id := topicID(t, cl, topic)
	start := time.Now()
	p := fetchRaw(t, cl, topic, 0, 0, func(r *kmsg.FetchRequest) {
		r.MaxWaitMillis = 300
		r.MinBytes = 1
		r.Topics[0].TopicID = id
	})
	elapsed := time.Since(start)
	if p.ErrorCode != 0 || len(p.RecordBatches) != 0 || p.HighWatermark != 0 {
		t.Fatalf("error %d, %d bytes, high watermark %d; want an empty answer", p.ErrorCode, len(p.RecordBatches), p.HighWatermark)
	}
	if elapsed < 250*time.Millisecond || elapsed > 5*time.Second {
		t.Fatalf("empty fetch returned after %v, want about 300ms", elapsed)
	}
}

// TestFetchLimitsReturnWholeBatches covers max_bytes and
// partition_max_bytes, including tiny, negative and huge values (B-17):
// the first partition with data always gets one whole batch, nothing is
// ever cut mid-batch, and no value breaks the request.
func TestFetchLimitsReturnWholeBatches(t *testing.T) {
	b := testutil.StartBroker(t)
	topic := "limits"
	testutil.CreateTopic(t, b.Admin(), topic, 2)
	cl := producer(t, b, kgo.ProducerLinger(0), kgo.ProducerBatchCompression(kgo.NoCompression()))
	const perPartition = 5
	for i := 0; i < perPartition; i++ {
		for p := int32(0); p < 2; p++ {
			produceSync(t, cl, &kgo.Record{Topic: topic, Partition: p, Value: bytes.Repeat([]byte{byte(i)}, 1000)})
		}
	}
	id := topicID(t, cl, topic)

	fetch := func(maxBytes, partitionMaxBytes int32) [2]int {
		t.Helper()
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID = -1
		req.MaxBytes = maxBytes
		req.SessionEpoch = -1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = topic, id
		for p := int32(0); p < 2; p++ {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition = p
			rp.PartitionMaxBytes = partitionMaxBytes
			rp.CurrentLeaderEpoch = -1
			rp.LogStartOffset = -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		resp := request[*kmsg.FetchResponse](t, cl, req)
		if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 2 {
			t.Fatalf("max_bytes %d partition_max_bytes %d: malformed response (error %d)", maxBytes, partitionMaxBytes, resp.ErrorCode)
		}
		var n [2]int
		for i, p := range resp.Topics[0].Partitions {
			if p.ErrorCode != 0 {
				t.Fatalf("max_bytes %d partition_max_bytes %d: partition %d error %d", maxBytes, partitionMaxBytes, i, p.ErrorCode)
			}
			buf := p.RecordBatches
			var next int64
			for len(buf) > 0 {
				batch, rest, err := record.Split(buf)
				if err != nil {
					t.Fatalf("max_bytes %d partition_max_bytes %d: partition %d: batch cut short: %v", maxBytes, partitionMaxBytes, i, err)
				}
				if batch.BaseOffset() != next || batch.CRC() != batch.ComputeCRC() {
					t.Fatalf("partition %d: batch at %d (want %d), CRC ok %v", i, batch.BaseOffset(), next, batch.CRC() == batch.ComputeCRC())
				}
				next = batch.LastOffset() + 1
				buf = rest
				n[i]++
			}
		}
		return n
	}

	for _, c := range []struct {
		name                        string
		maxBytes, partitionMaxBytes int32
		want                        [2]int
	}{
		{"tiny", 1, 1, [2]int{1, 0}},
		{"zero", 0, 0, [2]int{1, 0}},
		{"negative", -1, -1, [2]int{1, 0}},
		{"min int32", math.MinInt32, math.MinInt32, [2]int{1, 0}},
		// Only the first partition with data may exceed its limit
		// (KIP-74).
		{"partition tiny", 1 << 20, 1, [2]int{1, 0}},
		// A batch here is about 1070 bytes.
		{"two batches per partition", 1 << 20, 2200, [2]int{2, 2}},
		{"response fits three", 3300, 1 << 20, [2]int{3, 0}},
		{"huge", math.MaxInt32, math.MaxInt32, [2]int{perPartition, perPartition}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := fetch(c.maxBytes, c.partitionMaxBytes); got != c.want {
				t.Fatalf("batches per partition %v, want %v", got, c.want)
			}
		})
	}
}
