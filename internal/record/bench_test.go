package record

import (
	"bytes"
	"fmt"
	"testing"
)

func benchBatch(b *testing.B, c Codec, n, valueSize int) Batch {
	b.Helper()
	bb := NewBuilder(c, 1_700_000_000_000)
	val := bytes.Repeat([]byte("v"), valueSize)
	for i := range n {
		bb.Add(Record{TimestampDelta: int64(i), Key: []byte(fmt.Sprintf("key-%d", i)), Value: val,
			Headers: []Header{{Key: "h", Value: []byte("x")}}})
	}
	batch, err := bb.Build()
	if err != nil {
		b.Fatal(err)
	}
	return batch
}

func BenchmarkValidate(b *testing.B) {
	for _, c := range Codecs {
		for _, n := range []int{1, 100, 1000} {
			b.Run(fmt.Sprintf("codec=%s/records=%d", c, n), func(b *testing.B) {
				batch := benchBatch(b, c, n, 100)
				b.SetBytes(int64(len(batch)))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := batch.Validate(ValidateOptions{FromClient: true}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func BenchmarkRecords(b *testing.B) {
	batch := benchBatch(b, CodecNone, 100, 100)
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := batch.Records(0); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCRC(b *testing.B) {
	for _, size := range []int{1 << 10, 16 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("size=%dKiB", size>>10), func(b *testing.B) {
			batch := Batch(make([]byte, size))
			b.SetBytes(int64(size - crcStart))
			b.ReportAllocs()
			for b.Loop() {
				_ = batch.ComputeCRC()
			}
		})
	}
}
