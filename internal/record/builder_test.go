package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// sampleRecords has keys, values and headers, each null, empty and set.
func sampleRecords() []Record {
	return []Record{
		{TimestampDelta: 0, Key: []byte("k0"), Value: []byte("v0")},
		{TimestampDelta: 5, Key: nil, Value: []byte("null key")},
		{TimestampDelta: 3, Key: []byte("tombstone"), Value: nil},
		{TimestampDelta: 900000, Key: []byte{}, Value: []byte{}},
		{TimestampDelta: -2, Key: []byte("h"), Value: bytes.Repeat([]byte("x"), 300), Headers: []Header{
			{Key: "a", Value: []byte("1")},
			{Key: "", Value: nil},
			{Key: "trace-id", Value: []byte{}},
		}},
	}
}

func mustBuild(t testing.TB, bb *Builder, recs []Record) Batch {
	t.Helper()
	for _, r := range recs {
		bb.Add(r)
	}
	b, err := bb.Build()
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return b
}

func TestBuilderRoundTripsEveryCodec(t *testing.T) {
	for _, c := range Codecs {
		t.Run("codec="+c.String(), func(t *testing.T) {
			bb := NewBuilder(c, 1_700_000_000_000)
			want := sampleRecords()
			b := mustBuild(t, bb, want)

			if b.Codec() != c || b.Magic() != 2 || b.BaseOffset() != 0 || b.LeaderEpoch() != -1 {
				t.Fatalf("header: codec %v magic %d base %d epoch %d", b.Codec(), b.Magic(), b.BaseOffset(), b.LeaderEpoch())
			}
			if b.ProducerID() != -1 || b.ProducerEpoch() != -1 || b.BaseSequence() != -1 {
				t.Fatalf("producer fields %d/%d/%d", b.ProducerID(), b.ProducerEpoch(), b.BaseSequence())
			}
			if b.NumRecords() != 5 || b.LastOffsetDelta() != 4 {
				t.Fatalf("count %d lastOffsetDelta %d", b.NumRecords(), b.LastOffsetDelta())
			}
			if got := b.MaxTimestamp(); got != 1_700_000_900_000 {
				t.Fatalf("maxTimestamp %d", got)
			}
			info, err := b.Validate(ValidateOptions{FromClient: true})
			if err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if info.NumRecords != 5 || info.MaxTimestamp != b.MaxTimestamp() {
				t.Fatalf("info %+v", info)
			}
			got, err := b.Records(0)
			if err != nil {
				t.Fatalf("Records: %v", err)
			}
			if len(got) != len(want) {
				t.Fatalf("%d records, want %d", len(got), len(want))
			}
			for i := range want {
				w := want[i]
				w.OffsetDelta = int32(i)
				if s, ws := fmt.Sprintf("%#v", got[i]), fmt.Sprintf("%#v", w); s != ws {
					t.Errorf("record %d:\n got %s\nwant %s", i, s, ws)
				}
				if got[i].Offset(b) != int64(i) {
					t.Errorf("record %d offset %d", i, got[i].Offset(b))
				}
				if ts := got[i].Timestamp(b); ts != 1_700_000_000_000+w.TimestampDelta {
					t.Errorf("record %d timestamp %d", i, ts)
				}
			}
		})
	}
}

func TestBuilderSetsProducerAndAttributeFields(t *testing.T) {
	bb := &Builder{Codec: CodecNone, BaseTimestamp: 10, ProducerID: 77, ProducerEpoch: 3,
		BaseSequence: 41, Transactional: true}
	b := mustBuild(t, bb, []Record{{Value: []byte("v")}})
	if b.ProducerID() != 77 || b.ProducerEpoch() != 3 || b.BaseSequence() != 41 {
		t.Fatalf("producer fields %d/%d/%d", b.ProducerID(), b.ProducerEpoch(), b.BaseSequence())
	}
	if !b.Transactional() || b.Control() || b.LogAppendTime() {
		t.Fatalf("attributes %#x", b.Attributes())
	}
	if _, err := (&Builder{}).Build(); !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("empty Build: %v", err)
	}
	if _, err := (&Builder{Codec: 5, records: []Record{{}}}).Build(); !errors.Is(err, ErrUnsupportedCodec) {
		t.Fatalf("codec 5 Build: %v", err)
	}
}

// kmsgBatch encodes recs with franz-go's kmsg types, an independent
// encoder of the same format, compressing the records with our codec.
func kmsgBatch(t *testing.T, c Codec, baseTs int64, recs []Record) []byte {
	t.Helper()
	var raw []byte
	var maxDelta int64
	for i, r := range recs {
		kr := kmsg.Record{
			Attributes:       r.Attributes,
			TimestampDelta64: r.TimestampDelta,
			OffsetDelta:      int32(i),
			Key:              r.Key,
			Value:            r.Value,
		}
		for _, h := range r.Headers {
			kr.Headers = append(kr.Headers, kmsg.Header{Key: h.Key, Value: h.Value})
		}
		// Length counts the bytes after itself: encode once to learn it.
		enc := kr.AppendTo(nil)
		_, k := binary.Varint(enc)
		kr.Length = int32(len(enc) - k)
		raw = kr.AppendTo(raw)
		if i == 0 || r.TimestampDelta > maxDelta {
			maxDelta = r.TimestampDelta
		}
	}
	section, err := Compress(c, nil, raw)
	if err != nil {
		t.Fatal(err)
	}
	kb := kmsg.RecordBatch{
		FirstOffset:          0,
		Length:               int32(HeaderSize - LogOverhead + len(section)),
		PartitionLeaderEpoch: -1,
		Magic:                2,
		Attributes:           int16(c),
		LastOffsetDelta:      int32(len(recs) - 1),
		FirstTimestamp:       baseTs,
		MaxTimestamp:         baseTs + maxDelta,
		ProducerID:           -1,
		ProducerEpoch:        -1,
		FirstSequence:        -1,
		NumRecords:           int32(len(recs)),
		Records:              section,
	}
	out := kb.AppendTo(nil)
	crc := crc32.Checksum(out[21:], crc32.MakeTable(crc32.Castagnoli))
	binary.BigEndian.PutUint32(out[17:21], crc)
	return out
}

func TestBuilderMatchesKmsgEncoding(t *testing.T) {
	recs := sampleRecords()
	want := kmsgBatch(t, CodecNone, 123456, recs)
	got := mustBuild(t, NewBuilder(CodecNone, 123456), recs)
	if !bytes.Equal(got, want) {
		t.Fatalf("builder bytes differ from kmsg:\n got %x\nwant %x", []byte(got), want)
	}
	var kb kmsg.RecordBatch
	if err := kb.ReadFrom(got); err != nil {
		t.Fatalf("kmsg cannot read our batch: %v", err)
	}
	if uint32(kb.CRC) != got.CRC() || kb.NumRecords != 5 {
		t.Fatalf("kmsg read crc %#x count %d", uint32(kb.CRC), kb.NumRecords)
	}
}

func TestRecordsDecodesKmsgBatchEveryCodec(t *testing.T) {
	recs := sampleRecords()
	for _, c := range Codecs {
		t.Run("codec="+c.String(), func(t *testing.T) {
			b := Batch(kmsgBatch(t, c, 99, recs))
			if _, err := b.Validate(ValidateOptions{FromClient: true}); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			got, err := b.Records(0)
			if err != nil {
				t.Fatalf("Records: %v", err)
			}
			for i := range recs {
				if !bytes.Equal(got[i].Key, recs[i].Key) || (got[i].Key == nil) != (recs[i].Key == nil) ||
					!bytes.Equal(got[i].Value, recs[i].Value) || (got[i].Value == nil) != (recs[i].Value == nil) ||
					len(got[i].Headers) != len(recs[i].Headers) {
					t.Fatalf("record %d: got %+v want %+v", i, got[i], recs[i])
				}
			}
		})
	}
}

// TestValidateReportsTheRecordsTimestampRange checks the smallest and
// largest record timestamps Validate computes from the records (not the
// header), uncompressed and through the streaming check: the broker
// bounds both by message.timestamp.before/after.max.ms (KIP-937).
func TestValidateReportsTheRecordsTimestampRange(t *testing.T) {
	for _, c := range []Codec{CodecNone, CodecGzip, CodecSnappy, CodecLZ4, CodecZstd} {
		bb := NewBuilder(c, 1_700_000_000_000)
		for _, d := range []int64{40, -25, 0, 90, 3} {
			bb.Add(Record{TimestampDelta: d, Value: []byte("v")})
		}
		b, err := bb.Build()
		if err != nil {
			t.Fatal(err)
		}
		info, err := b.Validate(ValidateOptions{FromClient: true})
		if err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		if info.MinTimestamp != 1_700_000_000_000-25 || info.MaxTimestamp != 1_700_000_000_000+90 {
			t.Errorf("%s: timestamps %d..%d, want %d..%d", c, info.MinTimestamp, info.MaxTimestamp,
				int64(1_700_000_000_000-25), int64(1_700_000_000_000+90))
		}
	}
}
