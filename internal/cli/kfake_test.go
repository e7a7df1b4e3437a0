package cli

import (
	"bufio"
	"context"
	"io"
	"strings"
	"testing"
	"time"
)

func TestDevKfakeServesUntilCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		var errb strings.Builder
		code := run(ctx, []string{"dev", "kfake", "--listen", "127.0.0.1:0", "--partitions", "2", "--topic", "seeded"},
			env{stdin: strings.NewReader(""), stdout: pw, stderr: &errb, getenv: func(string) string { return "" }})
		pw.Close()
		done <- code
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

	r := mustRun(t, "", "-b", addr, "topic", "list")
	if want := "TOPIC   PARTITIONS\nseeded  2\n"; r.stdout != want {
		t.Fatalf("topic list %q, want %q", r.stdout, want)
	}
	cancel()
	select {
	case code := <-done:
		if code != ExitOK {
			t.Fatalf("exit %d", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("kfake did not stop after cancel")
	}
}
