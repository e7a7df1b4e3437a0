package e2e

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/testutil"
)

// scaleConns returns the idle and active connection counts of the
// connection scale run (SAMSA_SCALE_IDLE_CONNS, SAMSA_SCALE_ACTIVE_CONNS;
// 10,000 and 1,000 unless set). It skips unless SAMSA_SCALE is set.
func scaleConns(t *testing.T) (idle, active int) {
	t.Helper()
	if os.Getenv("SAMSA_SCALE") == "" {
		t.Skip("scale measurement: set SAMSA_SCALE=1 (make scale)")
	}
	get := func(name string, def int) int {
		s := os.Getenv(name)
		if s == "" {
			return def
		}
		v, err := strconv.Atoi(s)
		if err != nil || v <= 0 {
			t.Fatalf("%s=%q: want a positive count", name, s)
		}
		return v
	}
	return get("SAMSA_SCALE_IDLE_CONNS", 10000), get("SAMSA_SCALE_ACTIVE_CONNS", 1000)
}

// apiVersionsFrame is a whole ApiVersions v0 request frame (request
// header v1, empty body) with the given correlation id.
func apiVersionsFrame(corr int32) []byte {
	const clientID = "idle"
	body := 2 + 2 + 4 + 2 + len(clientID)
	f := make([]byte, 4, 4+body)
	binary.BigEndian.PutUint32(f, uint32(body))
	f = binary.BigEndian.AppendUint16(f, 18) // ApiVersions
	f = binary.BigEndian.AppendUint16(f, 0)
	f = binary.BigEndian.AppendUint32(f, uint32(corr))
	f = binary.BigEndian.AppendUint16(f, uint16(len(clientID)))
	return append(f, clientID...)
}

// roundTripApiVersions sends one ApiVersions v0 request on c and checks
// that the answer carries the correlation id and error code 0.
func roundTripApiVersions(c net.Conn, r *bufio.Reader, corr int32) error {
	c.SetDeadline(time.Now().Add(30 * time.Second))
	defer c.SetDeadline(time.Time{})
	if _, err := c.Write(apiVersionsFrame(corr)); err != nil {
		return err
	}
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return err
	}
	resp := make([]byte, binary.BigEndian.Uint32(hdr[:]))
	if _, err := io.ReadFull(r, resp); err != nil {
		return err
	}
	if len(resp) < 6 {
		return fmt.Errorf("ApiVersions response of %d bytes", len(resp))
	}
	if got := int32(binary.BigEndian.Uint32(resp)); got != corr {
		return fmt.Errorf("correlation id %d, want %d", got, corr)
	}
	var av kmsg.ApiVersionsResponse
	if err := av.ReadFrom(resp[4:]); err != nil {
		return fmt.Errorf("ApiVersions response: %w", err)
	}
	if av.ErrorCode != 0 || len(av.ApiKeys) == 0 {
		return fmt.Errorf("ApiVersions error %d with %d keys", av.ErrorCode, len(av.ApiKeys))
	}
	return nil
}

// TestScaleConnections is the connection measurement of
// docs/performance.md: one broker holds 10,000 idle client connections
// (each has done an ApiVersions round trip and stays open), then 1,000
// clients produce at once beside them. It logs the broker's memory per
// idle connection and the active clients' throughput, checks that every
// idle connection still answers afterwards, and reads back every
// acknowledged record exactly once.
func TestScaleConnections(t *testing.T) {
	idle, active := scaleConns(t)
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("needs /proc")
	}
	report := func(format string, args ...any) { t.Logf("conns: "+format, args...) }
	b := newBroker(t)
	pid := b.cmd.Process.Pid
	const topic, partitions = "scale-conns", 8
	createTopic(t, b.addr(), topic, partitions, nil)
	runtime.GC()
	base := testutil.ReadProcStats(t, pid)
	report("%d CPUs; broker idle with no client: %s", runtime.NumCPU(), base)

	// Idle connections, opened 100 at a time.
	conns := make([]net.Conn, idle)
	readers := make([]*bufio.Reader, idle)
	t.Cleanup(func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	})
	began := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, idle)
	sem := make(chan struct{}, 100)
	for i := range idle {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			c, err := net.DialTimeout("tcp", b.addr(), 30*time.Second)
			if err != nil {
				errs <- fmt.Errorf("dial %d: %w", i, err)
				return
			}
			conns[i], readers[i] = c, bufio.NewReaderSize(c, 4096)
			if err := roundTripApiVersions(c, readers[i], int32(i)); err != nil {
				errs <- fmt.Errorf("connection %d: %w", i, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	opened := time.Since(began)
	time.Sleep(2 * time.Second) // let the broker settle its buffers
	withIdle := testutil.ReadProcStats(t, pid)
	perConn := float64(withIdle.RSSKiB-base.RSSKiB) / float64(idle)
	report("%d idle connections opened in %s: %s; %.1f KiB RSS per idle connection",
		idle, opened.Round(time.Millisecond), withIdle, perConn)
	if withIdle.ByKind["socket"] < idle {
		t.Fatalf("broker holds %d sockets, want at least %d", withIdle.ByKind["socket"], idle)
	}

	// Active clients, one connection each to the broker for produce.
	l := newScaleLedger()
	clients := make([]*kgo.Client, active)
	for i := range clients {
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr()), kgo.DefaultProduceTopic(topic),
			kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(time.Millisecond),
			kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordDeliveryTimeout(2*time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		clients[i] = cl
		defer cl.Close()
	}
	const perClient = 200
	var failed atomic.Int64
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	began = time.Now()
	for i, cl := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range perClient {
				r := &kgo.Record{Partition: int32((i + j) % partitions), Value: fmt.Appendf(nil, "c%d-%d", i, j)}
				if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
					failed.Add(1)
					continue
				}
				l.add(r)
			}
		}()
	}
	wg.Wait()
	took := time.Since(began)
	during := testutil.ReadProcStats(t, pid)
	report("%d clients produced %d records each (acks=all, synchronous, 1 in flight each) in %s: %.0f records/s, %d failed; broker %s",
		active, perClient, took.Round(time.Millisecond), float64(l.count())/took.Seconds(), failed.Load(), during)
	if f := failed.Load(); f > 0 {
		t.Fatalf("%d produce requests failed", f)
	}
	for _, cl := range clients {
		cl.Close()
	}

	// Every idle connection still answers.
	errs = make(chan error, idle)
	for i := range idle {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := roundTripApiVersions(conns[i], readers[i], int32(idle+i)); err != nil {
				errs <- fmt.Errorf("idle connection %d after the load: %w", i, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	report("every idle connection answered ApiVersions after the load")

	var end int64
	for _, o := range endOffsets(t, b.addr(), topic) {
		end += o
	}
	if end != int64(l.count()) {
		t.Fatalf("%d records in the log, %d acknowledged: duplicates or unacknowledged writes", end, l.count())
	}
	checkScale(t, b.addr(), map[string]int32{topic: partitions}, l)
	report("every one of %d acknowledged records read back at its offset, none twice", l.count())
}
