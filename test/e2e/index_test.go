package e2e

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// indexProbe is what a client sees of a partition: the Fetch answer at
// every offset and the ListOffsets answer for a set of timestamps.
type indexProbe struct {
	fetches map[int64]fetchResult
	lists   map[int64]listOffsetResult
}

// probePartition fetches from every offset in [0, end] and lists offsets
// for every timestamp in timestamps.
func probePartition(t *testing.T, addr, topic string, end int64, timestamps []int64) indexProbe {
	t.Helper()
	cl := newClient(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	id := topicID(ctx, t, cl, topic)
	p := indexProbe{fetches: make(map[int64]fetchResult), lists: make(map[int64]listOffsetResult)}
	for o := int64(0); o <= end; o++ {
		p.fetches[o] = fetchRaw(ctx, t, cl, topic, id, 0, o, 3000)
	}
	for _, ts := range timestamps {
		p.lists[ts] = listOffset(ctx, t, cl, topic, 0, ts)
	}
	return p
}

// firstBatchRange returns the base and last offset of the first batch in
// a Fetch answer.
func firstBatchRange(batches []byte) (base, last int64, ok bool) {
	if len(batches) < 27 {
		return 0, 0, false
	}
	base = int64(binary.BigEndian.Uint64(batches[0:8]))
	return base, base + int64(binary.BigEndian.Uint32(batches[23:27])), true
}

// TestD02IndexRebuildKeepsFetchAndListOffsets stops the broker, deletes,
// empties or zero-fills every .index and .timeindex file of a partition
// spread over several segments, and restarts it. Fetch at every offset and
// ListOffsets by timestamp must answer byte for byte as before.
func TestD02IndexRebuildKeepsFetchAndListOffsets(t *testing.T) {
	damages := map[string]func(path string) error{
		"delete": os.Remove,
		"empty":  func(path string) error { return os.Truncate(path, 0) },
		"zero": func(path string) error {
			fi, err := os.Stat(path)
			if err != nil {
				return err
			}
			return os.WriteFile(path, make([]byte, fi.Size()), 0o644)
		},
	}
	for _, stop := range []string{"kill", "term"} {
		for _, damage := range []string{"delete", "empty", "zero"} {
			t.Run(stop+"/"+damage, func(t *testing.T) {
				testIndexRebuild(t, stop == "term", damages[damage])
			})
		}
	}
}

func testIndexRebuild(t *testing.T, clean bool, damage func(string) error) {
	const (
		topic   = "idx"
		batches = 90
	)
	b := newBroker(t)
	segBytes, interval := "16384", "1024"
	createTopic(t, b.addr(), topic, 1, map[string]*string{
		"segment.bytes":        &segBytes,
		"index.interval.bytes": &interval,
	})
	cl := newClient(t, b.addr(),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DisableIdempotentWrite(),
		kgo.ProducerBatchCompression(kgo.NoCompression()))

	// Batch i holds 1+i%3 records stamped base+10i+j, so timestamps rise
	// across batches and each batch owns the range [base+10i, base+10i+9].
	base := time.Now().Add(-time.Hour).UnixMilli()
	firstOffset := make([]int64, batches)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := 0; i < batches; i++ {
		var recs []*kgo.Record
		for j := 0; j <= i%3; j++ {
			recs = append(recs, &kgo.Record{
				Topic:     topic,
				Key:       []byte(fmt.Sprintf("k%d", i)),
				Value:     []byte(fmt.Sprintf("b%03d-r%d-%s", i, j, strings.Repeat("i", 200+i%7*50))),
				Timestamp: time.UnixMilli(base + int64(10*i+j)),
			})
		}
		results := cl.ProduceSync(ctx, recs...)
		if err := results.FirstErr(); err != nil {
			t.Fatalf("produce batch %d: %v", i, err)
		}
		firstOffset[i] = results[0].Record.Offset
		for _, r := range results {
			if r.Record.Offset < firstOffset[i] {
				firstOffset[i] = r.Record.Offset
			}
		}
	}
	end := endOffsets(t, b.addr(), topic)[0]
	timestamps := []int64{-2, -1, base - 1000, base + int64(10*batches) + 1000}
	for i := 0; i < batches; i++ {
		timestamps = append(timestamps, base+int64(10*i), base+int64(10*i)+5)
	}
	before := probePartition(t, b.addr(), topic, end, timestamps)

	// The answers must be right before they can be compared.
	for o := int64(0); o < end; o++ {
		f := before.fetches[o]
		lo, hi, ok := firstBatchRange(f.RecordBatches)
		if f.ErrorCode != 0 || !ok || lo > o || hi < o || f.HighWatermark != end {
			t.Fatalf("fetch @%d: err %d, hw %d, first batch [%d,%d] (ok=%v); want a batch holding %d, hw %d",
				o, f.ErrorCode, f.HighWatermark, lo, hi, ok, o, end)
		}
	}
	wantList := func(ts, off int64) {
		t.Helper()
		if got := before.lists[ts]; got.ErrorCode != 0 || got.Offset != off {
			t.Fatalf("list offsets @%d = %v, want offset %d", ts, got, off)
		}
	}
	wantList(-2, 0)
	wantList(-1, end)
	wantList(base-1000, 0)
	wantList(base+int64(10*batches)+1000, -1) // Reference: ListOffsets v1+, no such record
	for i := 0; i < batches; i++ {
		wantList(base+int64(10*i), firstOffset[i])
		if i+1 < batches {
			wantList(base+int64(10*i)+5, firstOffset[i+1])
		}
	}

	if clean {
		b.signal(syscall.SIGTERM)
		if st, ok := b.waitExit(10 * time.Second); !ok || st.ExitCode() != 0 {
			t.Fatalf("SIGTERM: exited=%v state=%v", ok, st)
		}
	} else {
		b.kill()
	}
	logs := segmentFiles(t, b.dir, topic, 0, ".log")
	if len(logs) < 3 {
		t.Fatalf("%d segments; want at least 3 (segment.bytes not applied?)", len(logs))
	}
	damaged, damagedBytes := 0, int64(0)
	for _, ext := range []string{".index", ".timeindex"} {
		for _, f := range segmentFiles(t, b.dir, topic, 0, ext) {
			if fi, err := os.Stat(f); err == nil {
				damagedBytes += fi.Size()
			}
			if err := damage(f); err != nil {
				t.Fatal(err)
			}
			damaged++
		}
	}
	t.Logf("%d records in %d batches, %d segments, %d index files (%d bytes) damaged",
		end, batches, len(logs), damaged, damagedBytes)

	b.start()
	after := probePartition(t, b.addr(), topic, end, timestamps)
	for o := int64(0); o <= end; o++ {
		if x, y := before.fetches[o], after.fetches[o]; !reflect.DeepEqual(x, y) {
			t.Errorf("fetch @%d differs after index loss:\nbefore err=%d hw=%d lso=%d %d bytes\nafter  err=%d hw=%d lso=%d %d bytes",
				o, x.ErrorCode, x.HighWatermark, x.LogStartOffset, len(x.RecordBatches),
				y.ErrorCode, y.HighWatermark, y.LogStartOffset, len(y.RecordBatches))
		}
	}
	for _, ts := range timestamps {
		if x, y := before.lists[ts], after.lists[ts]; x != y {
			t.Errorf("list offsets @%d: before %v, after %v", ts, x, y)
		}
	}
	// The rebuilt indexes serve the next append too.
	res := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("after"), Timestamp: time.UnixMilli(base + int64(10*batches) + 2000)})
	if r, err := res.First(); err != nil || r.Offset != end {
		t.Fatalf("produce after restart: offset %v err %v, want offset %d", r, err, end)
	}
	if got := listOffset(ctx, t, newClient(t, b.addr()), topic, 0, base+int64(10*batches)+1000); got.Offset != end {
		t.Fatalf("list offsets for the new record = %v, want offset %d", got, end)
	}
}
