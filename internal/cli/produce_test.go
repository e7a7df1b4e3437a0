package cli_test

import (
	"context"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"samsa/internal/cli"
	"samsa/internal/testutil"
)

// closedAddr returns a loopback address where nothing listens.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func TestProduceWithoutBrokerFailsFastAndSaysWhy(t *testing.T) {
	addr := closedAddr(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	start := time.Now()
	code, _, errs := cli.RunForTest(ctx, "x\n", "-b", addr, "produce", "t1")
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("produce took %s against a closed port", took)
	}
	if code != cli.ExitFailure || !strings.Contains(errs, "connection refused") || !strings.Contains(errs, addr) {
		t.Fatalf("exit %d, stderr %q; want exit 1 naming %s and the refused connection", code, errs, addr)
	}
}

// TestProduceCountsUnacknowledgedRecordsAsFailed loses the broker in the
// middle of a produce: the records it never acknowledged are counted as
// failed when the command is stopped.
func TestProduceCountsUnacknowledgedRecordsAsFailed(t *testing.T) {
	b := testutil.StartBroker(t)
	adm := b.Admin()
	testutil.CreateTopic(t, adm, "t1", 1)
	addr := b.Addr()

	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		code int
		errs string
	}
	done := make(chan result, 1)
	go func() {
		code, _, errs := cli.RunForTestIO(ctx, pr, "-b", addr, "produce", "t1")
		done <- result{code, errs}
	}()
	pw.Write([]byte("a\nb\n"))
	testutil.Eventually(t, 20*time.Second, func() error {
		ends, err := adm.ListEndOffsets(context.Background(), "t1")
		if err != nil {
			return err
		}
		if o, _ := ends.Lookup("t1", 0); o.Offset != 2 {
			return testutil.Errorf("end offset %d", o.Offset)
		}
		return nil
	})
	b.Node.Close()
	pw.Write([]byte("c\nd\n"))
	pw.Close()
	time.Sleep(time.Second) // let the producer retry, then stop it as ^C does
	cancel()
	r := <-done
	if r.code != cli.ExitFailure {
		t.Fatalf("exit %d, stderr %q", r.code, r.errs)
	}
	if !strings.Contains(r.errs, "produced 2 records") || !strings.Contains(r.errs, ", 2 failed") ||
		!strings.Contains(r.errs, "2 of 4 records failed") {
		t.Fatalf("stderr %q; want 2 produced and 2 failed", r.errs)
	}
}

// TestProduceToNewTopicFollowsBrokerAutoCreate: produce asks for a missing
// topic as kcat does, so the broker's auto.create.topics.enable decides.
func TestProduceToNewTopicFollowsBrokerAutoCreate(t *testing.T) {
	t.Run("auto.create.topics.enable=true", func(t *testing.T) {
		b := testutil.StartBroker(t, "num.partitions=3")
		out := mustSamsa(t, b.Addr(), "topic", "list")
		if strings.Contains(out, "brand-new") {
			t.Fatalf("topic exists before produce:\n%s", out)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		code, _, errs := cli.RunForTest(ctx, "hello\nworld\n", "-b", b.Addr(), "produce", "brand-new")
		if code != cli.ExitOK || !strings.Contains(errs, "produced 2 records") {
			t.Fatalf("exit %d, stderr %q", code, errs)
		}
		out = mustSamsa(t, b.Addr(), "topic", "list")
		if !strings.Contains(out, "brand-new  3") {
			t.Fatalf("auto-created topic not listed with num.partitions=3:\n%s", out)
		}
	})
	t.Run("auto.create.topics.enable=false", func(t *testing.T) {
		b := testutil.StartBroker(t, "auto.create.topics.enable=false")
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		start := time.Now()
		code, _, errs := cli.RunForTest(ctx, "hello\n", "-b", b.Addr(), "produce", "brand-new")
		if code != cli.ExitFailure || !strings.Contains(errs, "auto.create.topics.enable=false") ||
			!strings.Contains(errs, "samsa topic create brand-new") {
			t.Fatalf("exit %d, stderr %q", code, errs)
		}
		if took := time.Since(start); took > 10*time.Second {
			t.Fatalf("refusal took %s", took)
		}
	})
}
