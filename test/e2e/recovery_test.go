package e2e

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// batchSpan is where one record batch sits in a segment file.
//
// Record batch v2 header fields read here (big endian):
//
//	offset | size | field
//	-------+------+----------------
//	0      | 8    | baseOffset
//	8      | 4    | batchLength (bytes after this field)
//	23     | 4    | lastOffsetDelta
type batchSpan struct {
	baseOffset int64
	lastOffset int64
	end        int64 // file position just past the batch
}

// readBatchSpans walks a .log file and returns the batches in it.
func readBatchSpans(t *testing.T, path string) []batchSpan {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var spans []batchSpan
	for pos := int64(0); pos < int64(len(data)); {
		if int64(len(data))-pos < 27 {
			t.Fatalf("%s: %d trailing bytes at %d", path, int64(len(data))-pos, pos)
		}
		h := data[pos:]
		base := int64(binary.BigEndian.Uint64(h[0:8]))
		length := int64(binary.BigEndian.Uint32(h[8:12]))
		delta := int64(binary.BigEndian.Uint32(h[23:27]))
		end := pos + 12 + length
		if end > int64(len(data)) {
			t.Fatalf("%s: batch at %d runs past the end", path, pos)
		}
		spans = append(spans, batchSpan{base, base + delta, end})
		pos = end
	}
	return spans
}

// segmentFiles returns the files with the given extension in the
// partition directory, sorted by base offset.
func segmentFiles(t *testing.T, dir, topic string, partition int32, ext string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, fmt.Sprintf("%s-%d", topic, partition), "*"+ext))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files) // 20-digit zero-padded names sort by offset
	if len(files) == 0 {
		t.Fatalf("no %s files for %s-%d in %s", ext, topic, partition, dir)
	}
	return files
}

// produceSync produces recs one ProduceSync call at a time and returns the
// value acknowledged at each offset.
func produceBatches(t *testing.T, cl *kgo.Client, batches [][]*kgo.Record) map[int64]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	acked := make(map[int64]string)
	for i, recs := range batches {
		for _, res := range cl.ProduceSync(ctx, recs...) {
			if res.Err != nil {
				t.Fatalf("produce batch %d (%d records): %v", i, len(recs), res.Err)
			}
			acked[res.Record.Offset] = string(res.Record.Value)
		}
	}
	return acked
}

// TestD01TornTailRecovery kills the broker, cuts 1..4096 bytes off the end
// of the active segment and restarts it. The broker must start, serve
// every batch that ends before the tear with its acknowledged values, and
// append new records right after the last whole batch.
func TestD01TornTailRecovery(t *testing.T) {
	for _, cut := range []int64{1, 27, 61, 700, 4096} {
		t.Run(fmt.Sprintf("cut=%d", cut), func(t *testing.T) {
			const topic = "torn"
			b := newBroker(t)
			createTopic(t, b.addr(), topic, 1, nil)
			cl := newClient(t, b.addr(),
				kgo.RequiredAcks(kgo.AllISRAcks()),
				kgo.DisableIdempotentWrite(),
				kgo.RecordPartitioner(kgo.ManualPartitioner()),
				kgo.ProducerBatchCompression(kgo.NoCompression()))
			// 40 batches of 1-4 records, 50-450 byte values: about 25 KiB.
			var batches [][]*kgo.Record
			for i := 0; i < 40; i++ {
				var recs []*kgo.Record
				for j := 0; j <= i%4; j++ {
					v := fmt.Sprintf("b%02d-r%d-%s", i, j, strings.Repeat("v", 50+(i*37+j*11)%400))
					recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(v)})
				}
				batches = append(batches, recs)
			}
			acked := produceBatches(t, cl, batches)
			cl.Close()
			b.kill()

			logs := segmentFiles(t, b.dir, topic, 0, ".log")
			active := logs[len(logs)-1]
			spans := readBatchSpans(t, active)
			if len(spans) < 10 {
				t.Fatalf("active segment has %d batches; want many", len(spans))
			}
			size := spans[len(spans)-1].end
			if cut >= size {
				t.Fatalf("segment of %d bytes too small to cut %d", size, cut)
			}
			if err := os.Truncate(active, size-cut); err != nil {
				t.Fatal(err)
			}
			next := int64(0) // offset after the last whole batch
			whole := 0
			for _, s := range spans {
				if s.end <= size-cut {
					next = s.lastOffset + 1
					whole++
				}
			}
			t.Logf("segment %d bytes, %d batches, cut %d: %d whole batches, next offset %d",
				size, len(spans), cut, whole, next)

			b.start()
			if end := endOffsets(t, b.addr(), topic)[0]; end != next {
				t.Fatalf("end offset after recovery = %d, want %d", end, next)
			}
			got := consumeAll(t, b.addr(), topic)[0]
			if int64(len(got)) != next {
				t.Fatalf("read %d records after recovery, want %d", len(got), next)
			}
			for i, r := range got {
				if r.Offset != int64(i) {
					t.Fatalf("record %d has offset %d", i, r.Offset)
				}
				if w := acked[r.Offset]; string(r.Value) != w {
					t.Fatalf("offset %d: read %q, acknowledged %q", r.Offset, r.Value, w)
				}
			}

			cl2 := newClient(t, b.addr(), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DisableIdempotentWrite())
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			res := cl2.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("after-tear")})
			r, err := res.First()
			if err != nil {
				t.Fatalf("produce after recovery: %v", err)
			}
			if r.Offset != next {
				t.Fatalf("produce after recovery got offset %d, want %d", r.Offset, next)
			}
			got = consumeAll(t, b.addr(), topic)[0]
			if n := int64(len(got)); n != next+1 || string(got[n-1].Value) != "after-tear" || got[n-1].Offset != next {
				t.Fatalf("after new produce read %d records, last %+v; want %d ending in after-tear", n, got[len(got)-1], next+1)
			}
		})
	}
}
