package broker_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"samsa/internal/record"
	"samsa/internal/testutil"
)

// patched returns a copy of batch changed by f, with the CRC recomputed
// when fixCRC is set (so that only f's inconsistency remains).
func patched(batch record.Batch, fixCRC bool, f func(b record.Batch)) []byte {
	b := append(record.Batch(nil), batch...)
	f(b)
	if fixCRC {
		b.UpdateCRC()
	}
	return b
}

// appendZigzag appends v as a Kafka (zigzag) varint.
func appendZigzag(dst []byte, v int64) []byte {
	return binary.AppendUvarint(dst, uint64((v<<1)^(v>>63)))
}

// bombBatch returns a batch of one record whose value is size zero bytes,
// compressed with c (gzip or zstd) so the batch itself stays small. The
// value is streamed into the compressor, never held whole.
func bombBatch(t *testing.T, c record.Codec, size int) []byte {
	t.Helper()
	var rec []byte
	body := []byte{0}             // attributes
	body = appendZigzag(body, 0)  // timestamp delta
	body = appendZigzag(body, 0)  // offset delta
	body = appendZigzag(body, -1) // null key
	body = appendZigzag(body, int64(size))
	bodyLen := len(body) + size + 1 // + value + header count
	rec = appendZigzag(rec, int64(bodyLen))
	rec = append(rec, body...)

	var comp bytes.Buffer
	var w io.WriteCloser
	switch c {
	case record.CodecGzip:
		w, _ = gzip.NewWriterLevel(&comp, gzip.BestCompression)
	case record.CodecZstd:
		zw, err := zstd.NewWriter(&comp, zstd.WithEncoderLevel(zstd.SpeedBestCompression))
		if err != nil {
			t.Fatal(err)
		}
		w = zw
	default:
		t.Fatalf("no bomb for %v", c)
	}
	zeros := make([]byte, 1<<20)
	w.Write(rec)
	for n := 0; n < size; n += len(zeros) {
		w.Write(zeros[:min(len(zeros), size-n)])
	}
	w.Write([]byte{0}) // no headers
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	// Take a valid one-record batch of codec c and swap its records section
	// for the bomb, fixing batchLength and the CRC.
	b := buildBatch(t, c, 1, 0)
	out := append(record.Batch(nil), b[:record.HeaderSize]...)
	out = append(out, comp.Bytes()...)
	binary.BigEndian.PutUint32(out[8:12], uint32(len(out)-12))
	out.UpdateCRC()
	return out
}

// TestProduceBadInputAppendsNothing sends malformed and refused batches
// (B-10 to B-15) through raw Produce requests: each gets Kafka's error and
// leaves the log untouched; valid batches before and after still land, and
// the log then holds exactly them.
func TestProduceBadInputAppendsNothing(t *testing.T) {
	b := testutil.StartBroker(t)
	topic := "bad"
	adm := b.Admin()
	testutil.CreateTopic(t, adm, topic, 1, "max.message.bytes=100000")
	cl := b.Client()

	var valid []record.Batch
	produceValid := func() {
		t.Helper()
		batch := buildBatch(t, record.CodecNone, 3, 1000)
		want := int64(3 * len(valid))
		sp := produceRaw(t, cl, -1, topic, 0, batch)
		if sp.ErrorCode != 0 || sp.BaseOffset != want {
			t.Fatalf("valid produce: error %d, base offset %d, want 0 and %d", sp.ErrorCode, sp.BaseOffset, want)
		}
		valid = append(valid, batch)
	}
	produceValid()

	gb := record.NewBuilder(record.CodecNone, 1000)
	for i := 0; i < 3; i++ {
		gb.Add(record.Record{Key: []byte{'k', byte('0' + i)}, Value: []byte("value")})
	}
	good, err := gb.Build()
	if err != nil {
		t.Fatal(err)
	}
	gzipped := buildBatch(t, record.CodecGzip, 3, 1000)
	// Each record of good is the same size, so record i starts at
	// HeaderSize + i*recLen; its offset delta follows the length varint,
	// the attributes byte and the (one-byte) timestamp delta.
	recLen := (len(good) - record.HeaderSize) / 3
	offsetDeltaAt := func(i int) int { return record.HeaderSize + i*recLen + 3 }
	if good[offsetDeltaAt(1)] != 2 { // zigzag(1)
		t.Fatalf("test layout assumption broken: record 1 offset delta byte %d", good[offsetDeltaAt(1)])
	}
	withPID := record.NewBuilder(record.CodecNone, 1000)
	withPID.ProducerID, withPID.ProducerEpoch, withPID.BaseSequence = 4242, 0, 0
	withPID.Add(record.Record{Value: []byte("idempotent")})
	idem, err := withPID.Build()
	if err != nil {
		t.Fatal(err)
	}
	withPID.Transactional = true
	txn, err := withPID.Build()
	if err != nil {
		t.Fatal(err)
	}
	marker, err := record.BuildEndTxnMarker(4242, 0, 1000, record.EndTxnMarker{Type: record.ControlAbort})
	if err != nil {
		t.Fatal(err)
	}
	big := record.NewBuilder(record.CodecNone, 1000)
	big.Add(record.Record{Value: make([]byte, 150_000)})
	tooLarge, err := big.Build()
	if err != nil {
		t.Fatal(err)
	}

	testutil.CreateTopic(t, b.Admin(), topic+"-scratch", 1)
	waitProducerIDRefused(t, b.Addr(), topic+"-scratch", idem)

	corrupt := []int16{kerr.CorruptMessage.Code}
	invalidOrCorrupt := []int16{kerr.InvalidRecord.Code, kerr.CorruptMessage.Code}
	for _, c := range []struct {
		name      string
		topic     string
		partition int32
		acks      int16
		records   []byte
		want      []int16
	}{
		// B-10
		{name: "crc field wrong", records: patched(good, false, func(b record.Batch) { b[17] ^= 0xff }), want: corrupt},
		{name: "record byte flipped", records: patched(good, false, func(b record.Batch) { b[len(b)-2] ^= 0x01 }), want: corrupt},
		{name: "compressed byte flipped", records: patched(gzipped, false, func(b record.Batch) { b[record.HeaderSize+12] ^= 0x10 }), want: corrupt},
		// B-11
		{name: "batch length too long", records: patched(good, false, func(b record.Batch) {
			binary.BigEndian.PutUint32(b[8:12], uint32(len(b)))
		}), want: invalidOrCorrupt},
		{name: "batch length too short", records: patched(good, false, func(b record.Batch) {
			binary.BigEndian.PutUint32(b[8:12], uint32(len(b)-20))
		}), want: invalidOrCorrupt},
		{name: "batch length below header", records: patched(good, false, func(b record.Batch) {
			binary.BigEndian.PutUint32(b[8:12], 10)
		}), want: invalidOrCorrupt},
		{name: "truncated batch", records: good[:len(good)-5], want: invalidOrCorrupt},
		{name: "record count too high", records: patched(good, true, func(b record.Batch) {
			binary.BigEndian.PutUint32(b[57:61], 4)
		}), want: invalidOrCorrupt},
		{name: "record count too low", records: patched(good, true, func(b record.Batch) {
			binary.BigEndian.PutUint32(b[57:61], 2)
		}), want: invalidOrCorrupt},
		{name: "record count negative", records: patched(good, true, func(b record.Batch) {
			binary.BigEndian.PutUint32(b[57:61], 0xffffffff)
		}), want: invalidOrCorrupt},
		{name: "last offset delta wrong", records: patched(good, true, func(b record.Batch) {
			binary.BigEndian.PutUint32(b[23:27], 5)
		}), want: invalidOrCorrupt},
		{name: "offset deltas not monotonic", records: patched(good, true, func(b record.Batch) {
			b[offsetDeltaAt(1)] = 0 // record 1 claims delta 0 as well
		}), want: invalidOrCorrupt},
		{name: "base offset not zero", records: patched(good, false, func(b record.Batch) { b.SetBaseOffset(7) }), want: invalidOrCorrupt},
		{name: "magic 1", records: patched(good, true, func(b record.Batch) { b[16] = 1 }), want: invalidOrCorrupt},
		{name: "two batches", records: append(append([]byte(nil), good...), good...), want: []int16{kerr.InvalidRecord.Code}},
		{name: "empty record set", records: []byte{}, want: invalidOrCorrupt},
		// B-12
		{name: "larger than max.message.bytes", records: tooLarge, want: []int16{kerr.MessageTooLarge.Code}},
		// B-14
		{name: "acks 5", acks: 5, records: good, want: []int16{kerr.InvalidRequiredAcks.Code}},
		{name: "acks -2", acks: -2, records: good, want: []int16{kerr.InvalidRequiredAcks.Code}},
		// B-15
		{name: "unknown topic", topic: "nope", records: good, want: []int16{kerr.UnknownTopicOrPartition.Code}},
		{name: "partition -1", partition: -1, records: good, want: []int16{kerr.UnknownTopicOrPartition.Code}},
		{name: "partition beyond count", partition: 1, records: good, want: []int16{kerr.UnknownTopicOrPartition.Code}},
		// Producer ids this broker never issued.
		{name: "idempotent batch", records: idem, want: []int16{kerr.UnknownProducerID.Code}},
		{name: "transactional batch", records: txn, want: []int16{kerr.UnknownProducerID.Code}},
		// Only the partition leader writes end-transaction markers.
		{name: "control batch", records: marker, want: []int16{kerr.InvalidRecord.Code}},
	} {
		t.Run(c.name, func(t *testing.T) {
			leo, _, code := listOffset(t, cl, topic, 0, -1)
			if code != 0 {
				t.Fatalf("list offsets error %d", code)
			}
			if c.topic == "" {
				c.topic = topic
			}
			if c.acks == 0 {
				c.acks = -1
			}
			sp := produceRawAcks(t, b.Addr(), c.acks, c.topic, c.partition, c.records)
			ok := false
			for _, w := range c.want {
				ok = ok || sp.ErrorCode == w
			}
			if !ok {
				t.Fatalf("error %v, want one of %v", kerr.ErrorForCode(sp.ErrorCode), codeNames(c.want))
			}
			if sp.BaseOffset != -1 {
				t.Fatalf("base offset %d on error, want -1", sp.BaseOffset)
			}
			if after, _, _ := listOffset(t, cl, topic, 0, -1); after != leo {
				t.Fatalf("log end offset moved from %d to %d", leo, after)
			}
		})
	}

	produceValid()
	fp := fetchRaw(t, cl, topic, 0, 0, nil)
	buf := fp.RecordBatches
	for i, want := range valid {
		got, rest, err := record.Split(buf)
		if err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
		if got.BaseOffset() != int64(3*i) || !bytes.Equal(got[16:], want[16:]) {
			t.Fatalf("batch %d at %d differs from the valid batch produced", i, got.BaseOffset())
		}
		buf = rest
	}
	if len(buf) != 0 {
		t.Fatalf("the log holds %d bytes beyond the valid batches", len(buf))
	}
}

func codeNames(codes []int16) []string {
	var out []string
	for _, c := range codes {
		out = append(out, kerr.ErrorForCode(c).Error())
	}
	return out
}

// TestProduceCompressionBombRejectedWithBoundedMemory (B-13): a small
// batch whose records decompress past the ceiling
// (record.DefaultMaxDecompressedBytes, 64 MiB) is refused with
// INVALID_RECORD, and the broker (in this process) does not allocate
// anywhere near the decompressed size while refusing it.
// Reference: CVE-2023-34455.
func TestProduceCompressionBombRejectedWithBoundedMemory(t *testing.T) {
	b := testutil.StartBroker(t)
	topic := "bomb"
	testutil.CreateTopic(t, b.Admin(), topic, 1)
	cl := b.Client()
	size := scaled(256<<20, 4)
	const allocBound = 48 << 20

	for _, c := range []record.Codec{record.CodecGzip, record.CodecZstd} {
		t.Run(c.String(), func(t *testing.T) {
			bomb := bombBatch(t, c, size)
			if len(bomb) > 1<<20 {
				t.Fatalf("bomb batch is %d bytes; it must fit max.message.bytes", len(bomb))
			}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			sp := produceRaw(t, cl, -1, topic, 0, bomb)
			runtime.ReadMemStats(&after)
			if sp.ErrorCode != kerr.InvalidRecord.Code {
				t.Fatalf("bomb of %d bytes (%d compressed): error %v, want INVALID_RECORD", size, len(bomb), kerr.ErrorForCode(sp.ErrorCode))
			}
			t.Logf("refusing a %d MiB bomb (%d KiB compressed) allocated %d KiB", size>>20, len(bomb)>>10, (after.TotalAlloc-before.TotalAlloc)>>10)
			if d := after.TotalAlloc - before.TotalAlloc; d > allocBound {
				t.Fatalf("allocated %d MiB while refusing a %d MiB bomb, bound %d MiB", d>>20, size>>20, allocBound>>20)
			}
			if d := int64(after.HeapAlloc) - int64(before.HeapAlloc); d > allocBound {
				t.Fatalf("heap grew %d MiB while refusing the bomb", d>>20)
			}
		})
	}
	if leo, _, code := listOffset(t, cl, topic, 0, -1); code != 0 || leo != 0 {
		t.Fatalf("log end offset %d (error %d) after bombs, want 0", leo, code)
	}
	produceSync(t, producer(t, b), &kgo.Record{Topic: topic, Value: []byte("ok")})
}

// TestProduceHighRatioBatchStored: max.message.bytes limits a batch as
// sent, not decompressed (as in Kafka): three 1 MiB records of zeros
// gzip'd into one batch of a few KiB are stored and read back whole by a
// consumer; one whose MaxDecompressBatchBytes is below their 3 MiB reports
// ErrDecompressTooLarge itself.
func TestProduceHighRatioBatchStored(t *testing.T) {
	t.Parallel()
	b := testutil.StartBroker(t)
	const topic = "high-ratio"
	testutil.CreateTopic(t, b.Admin(), topic, 1)
	bb := record.NewBuilder(record.CodecGzip, time.Now().UnixMilli())
	for i := range 3 {
		bb.Add(record.Record{Key: []byte{'k', byte('0' + i)}, Value: make([]byte, 1<<20)})
	}
	batch, err := bb.Build()
	if err != nil {
		t.Fatal(err)
	}
	if len(batch) > 64<<10 {
		t.Fatalf("batch is %d bytes; want a few KiB", len(batch))
	}
	if sp := produceRaw(t, b.Client(), -1, topic, 0, batch); sp.ErrorCode != 0 {
		t.Fatalf("produce of a %d byte batch holding 3 MiB: %v", len(batch), kerr.ErrorForCode(sp.ErrorCode))
	}
	cl := b.Client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var got []*kgo.Record
	testutil.Eventually(t, 20*time.Second, func() error {
		fs := cl.PollFetches(ctxT(t, 2*time.Second))
		if err := fs.Err0(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("consume: %v", err)
		}
		got = append(got, fs.Records()...)
		if len(got) < 3 {
			return testutil.Errorf("%d of 3 records", len(got))
		}
		return nil
	})
	for i, r := range got {
		if want := []byte{'k', byte('0' + i)}; !bytes.Equal(r.Key, want) || len(r.Value) != 1<<20 || r.Offset != int64(i) {
			t.Fatalf("record %d: key %q, %d byte value, offset %d", i, r.Key, len(r.Value), r.Offset)
		}
		if bytes.ContainsFunc(r.Value, func(c rune) bool { return c != 0 }) {
			t.Fatalf("record %d: value is not zeros", i)
		}
	}
	small := b.Client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.MaxDecompressBatchBytes(2<<20))
	testutil.Eventually(t, 20*time.Second, func() error {
		fs := small.PollFetches(ctxT(t, 2*time.Second))
		if n := fs.NumRecords(); n != 0 {
			t.Fatalf("a consumer capped at 2 MiB got %d records", n)
		}
		if _, ok := errors.AsType[*kgo.ErrDecompressTooLarge](fs.Err0()); !ok {
			return testutil.Errorf("consumer capped at 2 MiB: %v, want ErrDecompressTooLarge", fs.Err0())
		}
		return nil
	})
}
