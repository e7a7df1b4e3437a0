//go:build linux

package e2e

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

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
	// Once answer bytes reach our receive queue the broker has handled the
	// Fetch and is writing an answer far larger than the socket buffers.
	raw, err := conn.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, func() error {
		n, err := receiveQueued(raw)
		if err != nil || n == 0 {
			return fmt.Errorf("no answer bytes queued yet (n=%d, err=%v)", n, err)
		}
		return nil
	})

	b.signal(syscall.SIGTERM)
	b.waitLog("a second signal exits at once", 5*time.Second)
	select {
	case <-b.done:
		t.Fatalf("shutdown did not wait for the in-flight Fetch answer (exited %v); cannot test a second signal", b.state)
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

// receiveQueued returns how many bytes wait unread in the socket's
// receive queue (ioctl SIOCINQ).
func receiveQueued(raw syscall.RawConn) (int, error) {
	var n int32
	var serr error
	if err := raw.Control(func(fd uintptr) {
		if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCINQ, uintptr(unsafe.Pointer(&n))); errno != 0 {
			serr = errno
		}
	}); err != nil {
		return 0, err
	}
	return int(n), serr
}
