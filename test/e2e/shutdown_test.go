package e2e

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
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

// TestSecondSignalExitsAtOnce makes a clean shutdown wait on a client that
// does not read a large Fetch answer, then sends a second SIGTERM: the
// broker must exit at once, with status 1.
func TestSecondSignalExitsAtOnce(t *testing.T) {
	const topic = "big"
	b := newBroker(t)
	createTopic(t, b.addr(), topic, 1, nil)
	cl := newClient(t, b.addr(), kgo.ProducerBatchCompression(kgo.NoCompression()))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// 16 MiB in 900 KiB records: more than the socket buffers on both
	// sides of a loopback connection can hold.
	val := []byte(strings.Repeat("s", 900<<10))
	for i := 0; i < 18; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: val}).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	id := topicID(ctx, t, cl, topic)

	// A raw connection with a tiny receive buffer that asks for all of it
	// and never reads the answer.
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		}); err != nil {
			return err
		}
		return serr
	}}
	conn, err := d.DialContext(ctx, "tcp", b.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(11) // non-flexible: request header v1
	req.ReplicaID = -1
	req.MaxBytes = 64 << 20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, id
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes = 64 << 20
	rp.CurrentLeaderEpoch, rp.LogStartOffset = -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	if _, err := conn.Write(requestFrame(req, 1, "slow-reader")); err != nil {
		t.Fatal(err)
	}
	// NB: the broker gives no sign that its write is stuck; give it time to
	// fill the socket buffers.
	time.Sleep(500 * time.Millisecond)

	b.signal(syscall.SIGTERM)
	b.waitLog("a second signal exits at once", 5*time.Second)
	select {
	case <-b.done:
		st, _ := b.waitExit(0)
		t.Fatalf("shutdown did not wait for the in-flight Fetch answer (exited %v); cannot test a second signal", st)
	case <-time.After(300 * time.Millisecond):
	}
	sent := time.Now()
	b.signal(syscall.SIGTERM)
	st, ok := b.waitExit(2 * time.Second)
	if !ok {
		t.Fatalf("broker still running 2s after the second SIGTERM")
	}
	t.Logf("exited %v after the second SIGTERM: %v", time.Since(sent).Round(time.Millisecond), st)
	if st.ExitCode() != 1 {
		t.Fatalf("exit code %d after a second SIGTERM, want 1", st.ExitCode())
	}
}

// requestFrame encodes a request with a v1 (non-flexible) header:
//
//	size int32 | api key int16 | api version int16 | correlation id int32 |
//	client id (int16 length, bytes) | body
func requestFrame(req kmsg.Request, correlationID int32, clientID string) []byte {
	if req.IsFlexible() {
		panic(errors.New("requestFrame: flexible versions need header v2"))
	}
	b := make([]byte, 4, 64)
	b = binary.BigEndian.AppendUint16(b, uint16(req.Key()))
	b = binary.BigEndian.AppendUint16(b, uint16(req.GetVersion()))
	b = binary.BigEndian.AppendUint32(b, uint32(correlationID))
	b = binary.BigEndian.AppendUint16(b, uint16(len(clientID)))
	b = append(b, clientID...)
	b = req.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
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
