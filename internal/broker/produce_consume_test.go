package broker_test

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"samsa/internal/record"
	"samsa/internal/testutil"
)

// producer returns a client that writes with acks=all and without
// idempotence (the broker does not issue producer ids yet), placing each
// record in the partition it names.
func producer(t *testing.T, b *testutil.Broker, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	return b.Client(append([]kgo.Opt{
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DisableIdempotentWrite(),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
	}, opts...)...)
}

// testRecord is record i of a test workload: distinct key, value and
// headers, with a null key or header value now and then.
func testRecord(topic string, partition int32, i int) *kgo.Record {
	r := &kgo.Record{
		Topic:     topic,
		Partition: partition,
		Key:       []byte(fmt.Sprintf("key-%d", i)),
		Value:     bytes.Repeat([]byte{byte(i), byte(i >> 8)}, 1+i%50),
		Headers: []kgo.RecordHeader{
			{Key: "i", Value: []byte(fmt.Sprint(i))},
			{Key: "p", Value: []byte{byte(partition)}},
		},
	}
	if i%97 == 0 {
		r.Key = nil
	}
	if i%89 == 0 {
		r.Headers = append(r.Headers, kgo.RecordHeader{Key: "null"})
	}
	return r
}

// produceMany produces total records spread round robin over partitions
// and returns what was produced per partition, in produce order.
func produceMany(t *testing.T, cl *kgo.Client, topic string, partitions int32, first, total int) map[int32][]*kgo.Record {
	t.Helper()
	want := make(map[int32][]*kgo.Record)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	ctx := ctxT(t, 60*time.Second)
	for i := first; i < first+total; i++ {
		p := int32(i) % partitions
		r := testRecord(topic, p, i)
		want[p] = append(want[p], r)
		wg.Add(1)
		cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		t.Fatalf("produce: %v", firstErr)
	}
	return want
}

// checkSame fails the test unless got holds exactly want per partition,
// in order, byte for byte, at contiguous offsets from base[p].
func checkSame(t *testing.T, got, want map[int32][]*kgo.Record, base map[int32]int64) {
	t.Helper()
	for p, ws := range want {
		gs := got[p]
		if len(gs) != len(ws) {
			t.Fatalf("partition %d: got %d records, want %d", p, len(gs), len(ws))
		}
		for i, w := range ws {
			g := gs[i]
			if g.Offset != base[p]+int64(i) {
				t.Fatalf("partition %d record %d: offset %d, want %d", p, i, g.Offset, base[p]+int64(i))
			}
			if !bytes.Equal(g.Key, w.Key) || (g.Key == nil) != (w.Key == nil) {
				t.Fatalf("partition %d offset %d: key %q, want %q", p, g.Offset, g.Key, w.Key)
			}
			if !bytes.Equal(g.Value, w.Value) {
				t.Fatalf("partition %d offset %d: value differs (%d bytes, want %d)", p, g.Offset, len(g.Value), len(w.Value))
			}
			if len(g.Headers) != len(w.Headers) {
				t.Fatalf("partition %d offset %d: %d headers, want %d", p, g.Offset, len(g.Headers), len(w.Headers))
			}
			for j := range w.Headers {
				gh, wh := g.Headers[j], w.Headers[j]
				if gh.Key != wh.Key || !bytes.Equal(gh.Value, wh.Value) || (gh.Value == nil) != (wh.Value == nil) {
					t.Fatalf("partition %d offset %d header %d: %q=%q, want %q=%q", p, g.Offset, j, gh.Key, gh.Value, wh.Key, wh.Value)
				}
			}
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			t.Fatalf("partition %d: got %d records, want none", p, len(got[p]))
		}
	}
}

func TestProducedRecordsConsumeInOrderByteEqual(t *testing.T) {
	const partitions = 8
	total := scaled(100_000, 10)
	b := testutil.StartBroker(t)
	topic := "many"
	testutil.CreateTopic(t, b.Admin(), topic, partitions)
	cl := producer(t, b, kgo.ProducerLinger(5*time.Millisecond))

	want := produceMany(t, cl, topic, partitions, 0, total)
	got := consumeAll(t, b.Addr(), topic, partitions, total)
	checkSame(t, got, want, map[int32]int64{})

	// The high watermark of each partition is its record count.
	for p := int32(0); p < partitions; p++ {
		off, _, code := listOffset(t, cl, topic, p, -1)
		if code != 0 || off != int64(len(want[p])) {
			t.Fatalf("partition %d: latest offset %d (error %d), want %d", p, off, code, len(want[p]))
		}
	}
}

// TestCodecsRoundTripStoredAsProduced covers every codec: kgo batches read
// back equal, and the fetched batches keep the producer's codec bits and a
// CRC that still verifies (the broker stores the batch as it arrived).
func TestCodecsRoundTripStoredAsProduced(t *testing.T) {
	b := testutil.StartBroker(t)
	codecs := []struct {
		name  string
		kgo   kgo.CompressionCodec
		codec record.Codec
	}{
		{"none", kgo.NoCompression(), record.CodecNone},
		{"gzip", kgo.GzipCompression(), record.CodecGzip},
		{"snappy", kgo.SnappyCompression(), record.CodecSnappy},
		{"lz4", kgo.Lz4Compression(), record.CodecLZ4},
		{"zstd", kgo.ZstdCompression(), record.CodecZstd},
	}
	adm := b.Admin()
	for _, c := range codecs {
		t.Run(c.name, func(t *testing.T) {
			topic := "codec-" + c.name
			testutil.CreateTopic(t, adm, topic, 1)
			cl := producer(t, b, kgo.ProducerBatchCompression(c.kgo), kgo.ProducerLinger(50*time.Millisecond))
			const n = 500
			want := produceMany(t, cl, topic, 1, 0, n)
			got := consumeAll(t, b.Addr(), topic, 1, n)
			checkSame(t, got, want, map[int32]int64{})

			fp := fetchRaw(t, cl, topic, 0, 0, nil)
			if fp.ErrorCode != 0 {
				t.Fatalf("fetch error %d", fp.ErrorCode)
			}
			buf := fp.RecordBatches
			var next int64
			for len(buf) > 0 {
				batch, rest, err := record.Split(buf)
				if err != nil {
					t.Fatalf("split fetched batches at offset %d: %v", next, err)
				}
				buf = rest
				if batch.Codec() != c.codec {
					t.Fatalf("batch at %d: codec %v, want %v", batch.BaseOffset(), batch.Codec(), c.codec)
				}
				if batch.CRC() != batch.ComputeCRC() {
					t.Fatalf("batch at %d: stored CRC %#x, computed %#x", batch.BaseOffset(), batch.CRC(), batch.ComputeCRC())
				}
				if batch.BaseOffset() != next {
					t.Fatalf("batch base offset %d, want %d", batch.BaseOffset(), next)
				}
				next = batch.LastOffset() + 1
			}
			if next != n {
				t.Fatalf("fetched batches end at %d, want %d", next, n)
			}
		})
	}
}

// TestRawBatchFetchedByteEqualExceptOffsetAndEpoch produces hand-built
// batches in each codec and checks that Fetch returns the same bytes with
// only baseOffset and partitionLeaderEpoch (outside the CRC) patched.
func TestRawBatchFetchedByteEqualExceptOffsetAndEpoch(t *testing.T) {
	b := testutil.StartBroker(t)
	topic := "raw"
	testutil.CreateTopic(t, b.Admin(), topic, 1)
	cl := b.Client()
	var sent []record.Batch
	for i, c := range record.Codecs {
		batch := buildBatch(t, c, 3+i, time.Now().UnixMilli())
		sent = append(sent, append(record.Batch(nil), batch...))
		sp := produceRaw(t, cl, -1, topic, 0, batch)
		if sp.ErrorCode != 0 {
			t.Fatalf("%v: produce error %d", c, sp.ErrorCode)
		}
	}
	fp := fetchRaw(t, cl, topic, 0, 0, nil)
	buf := fp.RecordBatches
	var next int64
	for i, want := range sent {
		got, rest, err := record.Split(buf)
		if err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
		buf = rest
		if got.BaseOffset() != next {
			t.Fatalf("batch %d: base offset %d, want %d", i, got.BaseOffset(), next)
		}
		next += int64(want.NumRecords())
		if !bytes.Equal(got[16:], want[16:]) || !bytes.Equal(got[8:12], want[8:12]) {
			t.Fatalf("batch %d (%v): stored bytes differ from produced bytes", i, want.Codec())
		}
	}
	if len(buf) != 0 {
		t.Fatalf("%d bytes after the produced batches", len(buf))
	}
}

func TestRestartKeepsRecordsAndOffsetsContinue(t *testing.T) {
	const partitions = 4
	total := scaled(20_000, 10)
	b := testutil.StartBroker(t)
	topic := "restart"
	testutil.CreateTopic(t, b.Admin(), topic, partitions)
	want := produceMany(t, producer(t, b), topic, partitions, 0, total)

	b.Restart()

	got := consumeAll(t, b.Addr(), topic, partitions, total)
	checkSame(t, got, want, map[int32]int64{})

	// More records after the restart continue each partition's offsets.
	cl := producer(t, b)
	more := produceMany(t, cl, topic, partitions, total, 4*partitions)
	for p, rs := range more {
		for i, r := range rs {
			if wantOff := int64(len(want[p]) + i); r.Offset != wantOff {
				t.Fatalf("partition %d: produced at offset %d after restart, want %d", p, r.Offset, wantOff)
			}
		}
		want[p] = append(want[p], rs...)
	}
	got = consumeAll(t, b.Addr(), topic, partitions, total+4*partitions)
	checkSame(t, got, want, map[int32]int64{})
}
