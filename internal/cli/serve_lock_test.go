package cli_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"samsa/internal/cli"
	"samsa/internal/config"
	"samsa/internal/node"
	"samsa/internal/testutil"
)

// samsaBin builds the samsa binary into the test's temporary dir (the
// build cache makes all but the first build a link).
func samsaBin(t *testing.T) string {
	t.Helper()
	bin, _, err := testutil.SamsaBinary(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// startOn starts a node on dir with its own port and returns it or the
// error.
func startOn(t *testing.T, dir string) (*node.Node, error) {
	t.Helper()
	cfg, err := config.Load("", []string{"listeners=PLAINTEXT://127.0.0.1:0", "log.dirs=" + dir, "admin.listener="})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return node.Start(ctx, node.Config{Broker: cfg, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
}

// TestSecondBrokerOnSameLogDirExitsAtOnce: the log dir's .lock names the
// holder's pid, and a second broker on the dir fails at once, in process
// and as a second `samsa serve`.
func TestSecondBrokerOnSameLogDirExitsAtOnce(t *testing.T) {
	b := testutil.StartBroker(t)
	lock, err := os.ReadFile(filepath.Join(b.Dir, ".lock"))
	if err != nil || strings.TrimSpace(string(lock)) != strconv.Itoa(os.Getpid()) {
		t.Fatalf(".lock holds %q (%v), want this pid %d", lock, err, os.Getpid())
	}
	start := time.Now()
	n, err := startOn(t, b.Dir)
	if err == nil {
		n.Close()
		t.Fatal("a second node started on a locked log dir")
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("refusal took %s", took)
	}
	if msg := err.Error(); !strings.Contains(msg, b.Dir) || !strings.Contains(msg, "pid "+strconv.Itoa(os.Getpid())) {
		t.Fatalf("error %q does not name the dir %s and the holder's pid", msg, b.Dir)
	}

	// The built binary, as an operator runs it.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, samsaBin(t), "serve", "--override", "log.dirs="+b.Dir,
		"--override", "listeners=PLAINTEXT://127.0.0.1:0", "--override", "admin.listener=")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start = time.Now()
	err = cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != cli.ExitFailure {
		t.Fatalf("second serve: %v, stderr:\n%s", err, stderr.String())
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("second serve took %s to exit", took)
	}
	if msg := stderr.String(); !strings.Contains(msg, b.Dir) || !strings.Contains(msg, "pid "+strconv.Itoa(os.Getpid())) {
		t.Fatalf("second serve's stderr does not name the dir and pid:\n%s", msg)
	}

	// Once the first broker is gone the dir is free again.
	if err := b.Node.Close(); err != nil {
		t.Fatal(err)
	}
	n, err = startOn(t, b.Dir)
	if err != nil {
		t.Fatalf("start after the holder closed: %v", err)
	}
	n.Close()
}

// TestServeHonoursSIGTERMWhileStarting stops a `samsa serve` whose startup
// is stuck on etcd's database file lock (held here by the test): SIGTERM
// ends it within seconds.
func TestServeHonoursSIGTERMWhileStarting(t *testing.T) {
	dir := t.TempDir()
	n, err := startOn(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	n.Close()
	var db string
	filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() && info.Name() == "db" {
			db = path
		}
		return nil
	})
	if db == "" {
		t.Fatalf("no etcd db file under %s", dir)
	}
	f, err := os.OpenFile(db, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, samsaBin(t), "serve", "--override", "log.dirs="+dir,
		"--override", "listeners=PLAINTEXT://127.0.0.1:0", "--override", "admin.listener=")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // into the startup, waiting on the db lock
	cmd.Process.Signal(syscall.SIGTERM)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != cli.ExitFailure {
			t.Fatalf("serve after SIGTERM: %v, stderr:\n%s", err, stderr.String())
		}
		if !strings.Contains(stderr.String(), "interrupted while starting") {
			t.Fatalf("stderr:\n%s", stderr.String())
		}
	case <-time.After(15 * time.Second):
		cmd.Process.Kill()
		<-exited
		t.Fatalf("serve ignored SIGTERM while starting; stderr:\n%s", stderr.String())
	}
}
