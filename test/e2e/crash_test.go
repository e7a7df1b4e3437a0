package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// ackedRecord is a record the broker acknowledged with acks=all.
type ackedRecord struct {
	partition int32
	offset    int64
	value     string
}

// ackLog collects acknowledged records from produce promises. It is safe
// for concurrent use; mu guards acked.
type ackLog struct {
	mu    sync.Mutex
	acked []ackedRecord
	count atomic.Int64
}

func (l *ackLog) add(r *kgo.Record) {
	l.mu.Lock()
	l.acked = append(l.acked, ackedRecord{r.Partition, r.Offset, string(r.Value)})
	l.mu.Unlock()
	l.count.Add(1)
}

func (l *ackLog) snapshot() []ackedRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]ackedRecord(nil), l.acked...)
}

// crashValue encodes the partition and a global sequence number, so a
// record found at any offset can be traced to what was sent there.
func crashValue(partition int32, seq int64) string {
	return fmt.Sprintf("p%d-seq%08d-%s", partition, seq, strings.Repeat("x", int(seq%97)))
}

// TestS02KillDuringAcksAll checks that an acks=all write survives kill -9
// of the only broker: a producer writes continuously to 4 partitions, the
// broker is killed mid-stream and restarted on the same data dir and port,
// three times. Afterwards every acknowledged record is at its acknowledged
// offset with its value, and every record in the log is one that was sent
// to that partition.
func TestS02KillDuringAcksAll(t *testing.T) {
	const (
		topic      = "s02"
		partitions = 4
		rounds     = 3
	)
	b := newBroker(t)
	createTopic(t, b.addr(), topic, partitions, nil)

	acks := &ackLog{}
	var seq int64 // next sequence number; only the producing goroutine touches it during a round
	for round := 1; round <= rounds; round++ {
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr()),
			kgo.RequiredAcks(kgo.AllISRAcks()),
			kgo.DisableIdempotentWrite(),
			kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.ProducerLinger(time.Millisecond),
			kgo.MaxBufferedRecords(2000))
		if err != nil {
			t.Fatal(err)
		}
		before := acks.count.Load()
		ctx, cancel := context.WithCancel(context.Background())
		var promises sync.WaitGroup
		produced := make(chan struct{})
		// inflight bounds unacknowledged records, so the volume written per
		// round follows the broker's latency rather than the machine's
		// speed, and there is always a window of unacknowledged writes.
		inflight := make(chan struct{}, 512)
		go func() {
			defer close(produced)
			for ctx.Err() == nil {
				select {
				case inflight <- struct{}{}:
				case <-ctx.Done():
					return
				}
				p := int32(seq % partitions)
				r := &kgo.Record{Topic: topic, Partition: p, Value: []byte(crashValue(p, seq))}
				seq++
				promises.Add(1)
				cl.Produce(ctx, r, func(r *kgo.Record, err error) {
					defer promises.Done()
					<-inflight
					if err == nil {
						acks.add(r)
					}
				})
			}
		}()
		// Let the producer run for at least a second and get a good number
		// of acknowledgements in, then kill the broker mid-stream.
		began := time.Now()
		waitFor(t, 20*time.Second, func() error {
			if n := acks.count.Load() - before; n < 500 || time.Since(began) < 1200*time.Millisecond {
				return fmt.Errorf("round %d: %d acks so far", round, n)
			}
			return nil
		})
		b.kill()
		cancel()
		<-produced
		cl.Close() // fails every buffered and in-flight record
		promisesDone := make(chan struct{})
		go func() { promises.Wait(); close(promisesDone) }()
		select {
		case <-promisesDone:
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: produce promises not all called 10s after close", round)
		}
		t.Logf("round %d: %d acks before kill -9 (total %d, sent %d)", round, acks.count.Load()-before, acks.count.Load(), seq)

		b.start()
		checkAcked(t, b.addr(), topic, partitions, acks.snapshot())
	}
}

// checkAcked consumes topic and checks every acknowledged record is at its
// offset with its value, no offset was acknowledged twice, and every
// record in the log carries a value sent to its partition.
func checkAcked(t *testing.T, addr, topic string, partitions int32, acked []ackedRecord) {
	t.Helper()
	type key struct {
		p int32
		o int64
	}
	want := make(map[key]string, len(acked))
	for _, a := range acked {
		k := key{a.partition, a.offset}
		if prev, dup := want[k]; dup {
			t.Fatalf("offset %d/%d acknowledged twice: %q and %q", a.partition, a.offset, prev, a.value)
		}
		want[k] = a.value
	}
	got := consumeAll(t, addr, topic)
	found := 0
	for p := int32(0); p < partitions; p++ {
		prev := int64(-1)
		prefix := "p" + strconv.Itoa(int(p)) + "-seq"
		for _, r := range got[p] {
			if r.Offset <= prev {
				t.Fatalf("partition %d: offset %d after %d", p, r.Offset, prev)
			}
			prev = r.Offset
			v := string(r.Value)
			if !strings.HasPrefix(v, prefix) {
				t.Errorf("partition %d offset %d holds %q, never sent to this partition", p, r.Offset, v)
			}
			if w, ok := want[key{p, r.Offset}]; ok {
				found++
				if w != v {
					t.Errorf("partition %d offset %d: acknowledged %q, log holds %q", p, r.Offset, w, v)
				}
			}
		}
	}
	if found != len(want) {
		have := make(map[key]bool)
		for p, recs := range got {
			for _, r := range recs {
				have[key{p, r.Offset}] = true
			}
		}
		lost := 0
		for k, v := range want {
			if !have[k] {
				if lost < 10 {
					t.Errorf("acknowledged %d/%d %q missing after restart", k.p, k.o, v)
				}
				lost++
			}
		}
		t.Fatalf("%d of %d acknowledged records missing", lost, len(want))
	}
}
