package main

import (
	"bufio"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestDevKfakeServesUntilCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	cmd := newKfakeCmd()
	cmd.SetArgs([]string{"--listen", "127.0.0.1:0", "--partitions", "2", "--topic", "seeded"})
	cmd.SetOut(pw)
	done := make(chan error, 1)
	go func() {
		done <- cmd.ExecuteContext(ctx)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("read listen line: %v", err)
	}
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "kfake listening on ")
	if !ok || strings.HasSuffix(addr, ":0") {
		t.Fatalf("listen line %q", line)
	}
	go io.Copy(io.Discard, pr)

	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	tctx, tcancel := context.WithTimeout(ctx, 10*time.Second)
	defer tcancel()
	topics, err := kadm.NewClient(cl).ListTopics(tctx)
	if err != nil {
		t.Fatal(err)
	}
	if d, ok := topics["seeded"]; !ok || len(d.Partitions) != 2 {
		t.Fatalf("topics %v, want seeded with 2 partitions", topics.Names())
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("kfake: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("kfake did not stop after cancel")
	}
}
