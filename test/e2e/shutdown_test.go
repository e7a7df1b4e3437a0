package e2e

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// cleanShutdownMarker is the file Kafka (and samsa) leave in a log dir
// after a clean shutdown, so the next start can skip recovery.
const cleanShutdownMarker = ".kafka_cleanshutdown"

// TestCleanShutdownWithLongPollInFlight sends SIGTERM while a consumer's
// Fetch is parked waiting for data (MaxWait 20 s). The broker must answer
// or drop the long poll, exit 0 within a few seconds, and leave the clean
// shutdown marker.
func TestCleanShutdownWithLongPollInFlight(t *testing.T) {
	const topic = "longpoll"
	b := newBroker(t)
	createTopic(t, b.addr(), topic, 1, nil)
	cl := newClient(t, b.addr())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("one")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	id := topicID(ctx, t, cl, topic)

	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxWaitMillis = 20000
	req.MinBytes = 1
	req.MaxBytes = 1 << 20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, id
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = 0, 1, 1<<20
	rp.CurrentLeaderEpoch, rp.LogStartOffset = -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	polled := make(chan error, 1)
	go func() {
		_, err := req.RequestWith(ctx, cl.Broker(0))
		polled <- err
	}()
	// NB: nothing outside the broker shows that a Fetch is parked; the
	// non-event "no answer within 300 ms" is both the wait and a check
	// that the long poll really waits.
	select {
	case err := <-polled:
		t.Fatalf("fetch at the end offset with MaxWait 20s returned at once: %v", err)
	case <-time.After(300 * time.Millisecond):
	}

	sent := time.Now()
	b.signal(syscall.SIGTERM)
	st, ok := b.waitExit(5 * time.Second)
	if !ok {
		t.Fatalf("broker still running 5s after SIGTERM with a long poll in flight")
	}
	t.Logf("exited %v after SIGTERM: %v", time.Since(sent).Round(time.Millisecond), st)
	if st.ExitCode() != 0 {
		t.Fatalf("exit code %d after SIGTERM, want 0", st.ExitCode())
	}
	select {
	case err := <-polled:
		t.Logf("long poll ended with: %v", err)
	case <-time.After(5 * time.Second):
		t.Fatalf("long poll still waiting 5s after the broker exited")
	}
	if _, err := os.Stat(filepath.Join(b.dir, cleanShutdownMarker)); err != nil {
		t.Fatalf("clean shutdown marker: %v", err)
	}

	// The next start finds the marker, and the data is intact.
	b.start()
	got := consumeAll(t, b.addr(), topic)[0]
	if len(got) != 1 || string(got[0].Value) != "one" {
		t.Fatalf("after restart read %d records, want the one produced", len(got))
	}
}

// TestServeEmptyDirStartup starts `samsa serve` on an empty data dir and
// measures the time until it answers Metadata.
func TestServeEmptyDirStartup(t *testing.T) {
	b := newBroker(t)
	t.Logf("empty data dir: Metadata answered %v after exec", b.startup.Round(time.Millisecond))
	if b.startup >= 10*time.Second {
		t.Fatalf("startup took %v, want < 10s", b.startup)
	}
	if b.runs != 1 {
		t.Fatalf("runs = %d", b.runs)
	}
}
