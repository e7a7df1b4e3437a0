package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
)

// BenchmarkAlterPartition measures one partition-state CAS through the
// embedded etcd, including the wait for the image to show it (an etcd
// commit with its fsync, plus the watch round trip).
func BenchmarkAlterPartition(b *testing.B) {
	ctx := context.Background()
	c, err := Open(ctx, Config{NodeID: 0, DataDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	if _, err := c.CreateTopic(ctx, "bench", 1, 1, nil); err != nil {
		b.Fatal(err)
	}
	st, _ := c.Image().Partition("bench", 0)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		st.PartitionEpoch++
		if st, err = c.AlterPartition(ctx, "bench", 0, st); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkImageApply measures building the next image after one
// partition state change, for images of growing size.
func BenchmarkImageApply(b *testing.B) {
	for _, topics := range []int{10, 1000, 10000} {
		b.Run(fmt.Sprintf("topics=%d", topics), func(b *testing.B) {
			k := newKeys("cid")
			bl := newBuilder("cid", k, slog.New(slog.DiscardHandler))
			e := &imageEvents{k: k}
			e.put(k.broker(0), brokerValue{})
			for i := range topics {
				name := fmt.Sprintf("t%d", i)
				e.put(k.topic(name), topicValue{ID: testTopicID, Replicas: [][]int32{{0}, {0}, {0}}})
				for p := range int32(3) {
					e.put(k.partition(name, p), partitionValue{ISR: []int32{0}})
				}
			}
			bl.apply(e.take(), 0)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				bl.apply(e.put(k.partition("t0", 1), partitionValue{LeaderEpoch: 1, ISR: []int32{0}}).take(), 0)
			}
		})
	}
}
