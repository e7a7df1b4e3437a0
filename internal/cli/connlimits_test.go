package cli_test

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/testutil"
)

// apiVersions sends an ApiVersions v0 request on nc and reads the answer;
// it returns the read error, nil when answered.
func apiVersions(nc net.Conn, corr int32) error {
	req := kmsg.NewPtrApiVersionsRequest()
	msg := binary.BigEndian.AppendUint32(nil, 0)
	msg = binary.BigEndian.AppendUint16(msg, uint16(req.Key()))
	msg = binary.BigEndian.AppendUint16(msg, 0)
	msg = binary.BigEndian.AppendUint32(msg, uint32(corr))
	msg = binary.BigEndian.AppendUint16(msg, 1)
	msg = append(msg, 't')
	msg = req.AppendTo(msg)
	binary.BigEndian.PutUint32(msg, uint32(len(msg)-4))
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := nc.Write(msg); err != nil {
		return err
	}
	var size [4]byte
	if _, err := io.ReadFull(nc, size[:]); err != nil {
		return err
	}
	_, err := io.ReadFull(nc, make([]byte, binary.BigEndian.Uint32(size[:])))
	return err
}

func dialT(t *testing.T, addr string) net.Conn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return nc
}

// TESTPLAN B-20. Reference: Kafka's ConnectionQuotas: a connection over
// max.connections.per.ip is closed at once; those within it are served,
// and closing one frees its slot.
func TestMaxConnectionsPerIPClosesTheThirdConnection(t *testing.T) {
	b := testutil.StartBroker(t, "max.connections.per.ip=2")
	first, second := dialT(t, b.Addr()), dialT(t, b.Addr())
	for i, nc := range []net.Conn{first, second} {
		if err := apiVersions(nc, 1); err != nil {
			t.Fatalf("connection %d: %v", i+1, err)
		}
	}
	third := dialT(t, b.Addr())
	if err := apiVersions(third, 1); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("third connection from 127.0.0.1: %v, want it closed", err)
	}
	for i, nc := range []net.Conn{first, second} {
		if err := apiVersions(nc, 2); err != nil {
			t.Fatalf("connection %d after the refusal: %v", i+1, err)
		}
	}
	first.Close()
	testutil.Eventually(t, 10*time.Second, func() error {
		return apiVersions(dialT(t, b.Addr()), 3)
	})
}

// Reference: KIP-612: an ip's connection_creation_rate, set through
// AlterClientQuotas, refuses connections beyond it; the refused one is
// closed only after the throttle time.
func TestIPConnectionCreationRateRefusesFasterConnections(t *testing.T) {
	b := testutil.StartBroker(t, "quota.window.num=2", "quota.window.size.seconds=1")
	mustSamsa(t, b.Addr(), "quota", "alter", "--entity-type", "ips", "--entity-name", "127.0.0.1",
		"--add-config", "connection_creation_rate=1")
	// The limiter learns the rate from the broker's image; wait until a
	// burst of connections meets it.
	var closedAfter time.Duration
	testutil.Eventually(t, 10*time.Second, func() error {
		for range 3 {
			nc := dialT(t, b.Addr())
			began := time.Now()
			if err := apiVersions(nc, 1); err != nil {
				closedAfter = time.Since(began)
				return nil
			}
		}
		return errors.New("three connections in a row all served")
	})
	if closedAfter < 300*time.Millisecond {
		t.Errorf("the refused connection closed after %v; want it held for the throttle (about a second)", closedAfter)
	}
}
