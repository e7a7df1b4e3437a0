package storage

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"samsa/internal/record"
	"samsa/internal/vfs"
)

// benchBatch builds a batch of about size bytes.
func benchBatch(b *testing.B, size int) record.Batch {
	bb := record.NewBuilder(record.CodecNone, 1_700_000_000_000)
	val := make([]byte, 1000)
	for n := 0; n < size; n += len(val) + 20 {
		bb.Add(record.Record{Value: val})
	}
	batch, err := bb.Build()
	if err != nil {
		b.Fatal(err)
	}
	return batch
}

func BenchmarkAppend(b *testing.B) {
	for _, size := range []int{1 << 10, 16 << 10} {
		for _, mode := range []string{"pagecache", "durable"} {
			b.Run(fmt.Sprintf("batch=%dKiB/mode=%s", size>>10, mode), func(b *testing.B) {
				m := openManager(b, vfs.Default, b.TempDir(), nil)
				defer m.Close()
				cfg := DefaultConfig()
				if mode == "pagecache" {
					cfg.FlushMessages = 1 << 62
				}
				l, err := m.Create(testTP, [16]byte{}, cfg)
				if err != nil {
					b.Fatal(err)
				}
				proto := benchBatch(b, size)
				b.SetBytes(int64(len(proto)))
				b.ReportAllocs()
				b.ResetTimer()
				if mode == "pagecache" {
					buf := make([]byte, len(proto))
					for i := 0; i < b.N; i++ {
						copy(buf, proto)
						if _, err := l.Append(buf, 0, false, 0); err != nil {
							b.Fatal(err)
						}
					}
					return
				}
				// Durable: several producers, each waiting for its fsync.
				const producers = 8
				var wg sync.WaitGroup
				var next sync.Mutex
				n := 0
				for p := 0; p < producers; p++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						buf := make([]byte, len(proto))
						for {
							next.Lock()
							if n >= b.N {
								next.Unlock()
								return
							}
							n++
							next.Unlock()
							copy(buf, proto)
							res, err := l.Append(buf, 0, false, 0)
							if err != nil {
								b.Error(err)
								return
							}
							if err := l.WaitDurable(context.Background(), res.LastOffset+1); err != nil {
								b.Error(err)
								return
							}
						}
					}()
				}
				wg.Wait()
			})
		}
	}
}

// benchLog fills a log with batches of about 1 KiB in 1 MiB segments.
func benchLog(b *testing.B, batches int) (*Manager, *Log) {
	m := openManager(b, vfs.Default, b.TempDir(), nil)
	cfg := DefaultConfig()
	cfg.FlushMessages = 1 << 62
	cfg.SegmentBytes = 1 << 20
	l, err := m.Create(testTP, [16]byte{}, cfg)
	if err != nil {
		b.Fatal(err)
	}
	proto := benchBatch(b, 1<<10)
	buf := make([]byte, len(proto))
	for i := 0; i < batches; i++ {
		copy(buf, proto)
		if _, err := l.Append(buf, 0, false, 0); err != nil {
			b.Fatal(err)
		}
	}
	return m, l
}

func BenchmarkIndexLookup(b *testing.B) {
	m, l := benchLog(b, 20000)
	defer m.Close()
	leo := l.LogEndOffset()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		o := int64(i*7919) % leo
		l.mu.RLock()
		s := l.segs[segmentFor(l.segs, o)]
		_ = s.index.lookup(int32(o - s.baseOffset))
		l.mu.RUnlock()
	}
}

// BenchmarkRead is Log.Read over 20,000 batches of 1 KiB, with the check
// of every batch returned (verify=crc, the default: magic, offsets and
// CRC-32C read through a 64 KiB buffer) and without the CRC part
// (verify=header). The file regions are not copied or sent.
func BenchmarkRead(b *testing.B) {
	for _, maxBytes := range []int64{1 << 10, 64 << 10, 1 << 20} {
		for _, verify := range []string{"crc", "header"} {
			b.Run(fmt.Sprintf("maxBytes=%dKiB/verify=%s", maxBytes>>10, verify), func(b *testing.B) {
				m, l := benchLog(b, 20000)
				defer m.Close()
				l.skipVerify = verify == "header"
				leo := l.LogEndOffset()
				b.ReportAllocs()
				b.ResetTimer()
				var total int64
				for i := 0; i < b.N; i++ {
					res, err := l.Read(int64(i*7919)%leo, maxBytes, leo, true)
					if err != nil {
						b.Fatal(err)
					}
					total += res.Size
				}
				b.SetBytes(total / int64(b.N))
			})
		}
	}
}

// BenchmarkFlushTimedIdleLogs is the flusher's timed pass (every 50 ms)
// over a log dir of idle durable logs: what many idle partitions cost a
// broker whose few busy ones are produced to.
func BenchmarkFlushTimedIdleLogs(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("logs=%d", n), func(b *testing.B) {
			m := openManager(b, vfs.NewMemFS(), "/data", nil)
			defer m.Close()
			for p := range n {
				tp := TopicPartition{Topic: fmt.Sprintf("t%03d", p/100), Partition: int32(p % 100)}
				if _, err := m.Create(tp, [16]byte{}, DefaultConfig()); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				m.flushTimed()
			}
		})
	}
}

// BenchmarkLogMove moves a log of size bytes (1 MiB segments) to another
// dir on the same disk and back, per iteration: Copy, then Finish with
// nothing appended meanwhile. It measures the copy rate (SetBytes is the
// log's size) and, reported as finish-ms, the time Finish holds the log's
// writers off.
func BenchmarkLogMove(b *testing.B) {
	for _, size := range []int{16 << 20, 64 << 20} {
		b.Run(fmt.Sprintf("log=%dMiB", size>>20), func(b *testing.B) {
			dir := b.TempDir()
			dirs := []string{dir + "/a", dir + "/b"}
			ld, err := OpenLogDirs(dirs, ManagerConfig{FS: vfs.Default, RetentionCheckInterval: 1 << 62, DefaultConfig: DefaultConfig()})
			if err != nil {
				b.Fatal(err)
			}
			defer ld.Close()
			cfg := DefaultConfig()
			cfg.SegmentBytes = 1 << 20
			cfg.FlushMessages = 1 << 62
			l, err := ld.Create(testTP, [16]byte{1}, cfg)
			if err != nil {
				b.Fatal(err)
			}
			proto := benchBatch(b, 16<<10)
			buf := make([]byte, len(proto))
			for n := 0; n < size; n += len(proto) {
				copy(buf, proto)
				if _, err := l.Append(buf, 0, false, 0); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(int64(size))
			b.ResetTimer()
			var finish time.Duration
			for i := 0; i < b.N; i++ {
				mv, err := ld.StartMove(testTP, dirs[(i+1)%2])
				if err != nil {
					b.Fatal(err)
				}
				if err := mv.Copy(context.Background()); err != nil {
					b.Fatal(err)
				}
				start := time.Now()
				if _, err := mv.Finish(); err != nil {
					b.Fatal(err)
				}
				finish += time.Since(start)
			}
			b.ReportMetric(float64(finish.Milliseconds())/float64(b.N), "finish-ms")
		})
	}
}
