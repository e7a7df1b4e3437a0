package fetchsession

import (
	"fmt"
	"runtime"
	"testing"
)

func benchParts(n int) []Partition {
	parts := make([]Partition, n)
	for i := range parts {
		parts[i] = idPart(fmt.Sprintf("t%d", i/1000), byte(i/1000), int32(i%1000), 100)
	}
	return parts
}

// BenchmarkCacheIdleIncremental is the cache's share of an incremental
// fetch that names nothing and finds nothing new: Open, then Respond.
func BenchmarkCacheIdleIncremental(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("partitions=%d", n), func(b *testing.B) {
			c := New(Config{MaxSlots: 10, EvictionMs: 1000})
			x, _ := c.Open(Request{Epoch: InitialEpoch, Privileged: true, Partitions: benchParts(n)}, 0)
			results := make([]Result, n)
			id, _, _ := x.Respond(results, 0)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				x, err := c.Open(Request{SessionID: id, Epoch: int32(i + 1), Privileged: true}, 0)
				if err != nil {
					b.Fatal(err)
				}
				x.Respond(results, 0)
			}
		})
	}
}

// BenchmarkHandlerIdleBuild is a follower's cost of working out that an
// idle fetch names nothing.
func BenchmarkHandlerIdleBuild(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("partitions=%d", n), func(b *testing.B) {
			var h Handler
			want := benchParts(n)
			h.Build(want)
			h.Done(nil, 1, true)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if p := h.Build(want); len(p.Send) != 0 {
					b.Fatal("an idle fetch names partitions")
				}
				h.Done(nil, 1, true)
			}
		})
	}
}

// BenchmarkSessionMemory reports the heap a session holds per partition.
func BenchmarkSessionMemory(b *testing.B) {
	const n = 10000
	parts := benchParts(n)
	results := make([]Result, n)
	var before, after runtime.MemStats
	for range b.N {
		c := New(Config{MaxSlots: 10, EvictionMs: 1000})
		runtime.GC()
		runtime.ReadMemStats(&before)
		x, _ := c.Open(Request{Epoch: InitialEpoch, Privileged: true, Partitions: parts}, 0)
		x.Respond(results, 0)
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "B/partition")
		runtime.KeepAlive(c)
	}
}
