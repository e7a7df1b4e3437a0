package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/testutil"
)

const (
	// readyTimeout bounds how long a started broker may take to answer
	// Metadata.
	readyTimeout = 20 * time.Second
	// exitTimeout bounds how long a killed broker may take to be reaped.
	exitTimeout = 10 * time.Second
)

// broker is one `samsa serve` subprocess bound to a data dir and a port.
// It can be killed and restarted on the same dir and port. A broker is
// used by one test goroutine; it is not safe for concurrent use.
type broker struct {
	t         *testing.T
	dir       string   // log.dirs
	port      int      // Kafka listener port, kept across restarts
	overrides []string // extra --override values
	logPath   string   // stdout+stderr of every run, appended
	bin       string   // binary to run; samsaBin when empty

	cmd  *exec.Cmd
	done chan struct{} // closed once cmd has been waited for
	// state is the exit status of the last run; valid once done is closed.
	state *os.ProcessState
	runs  int
	// startup is how long the last start took from exec to the first
	// successful Metadata response.
	startup time.Duration
}

// newBroker starts a broker on a fresh data dir and free port and waits
// until it answers Metadata. The broker is killed when the test ends.
func newBroker(t *testing.T, overrides ...string) *broker {
	t.Helper()
	b := &broker{
		t:         t,
		dir:       t.TempDir(),
		port:      freePort(t),
		overrides: overrides,
		logPath:   filepath.Join(t.TempDir(), "samsa.log"),
	}
	t.Cleanup(func() {
		if b.running() {
			b.kill()
		}
		if t.Failed() {
			b.dumpLog()
		}
	})
	b.start()
	return b
}

// addr is the broker's Kafka listener address.
func (b *broker) addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(b.port)) }

func (b *broker) running() bool {
	if b.done == nil {
		return false
	}
	select {
	case <-b.done:
		return false
	default:
		return true
	}
}

// start runs `samsa serve` and waits until it answers Metadata. It returns
// the time from process start to the first successful Metadata response.
func (b *broker) start() time.Duration {
	b.t.Helper()
	began := b.launch()
	if err := b.waitReady(); err != nil {
		b.t.Fatalf("broker run %d on %s not ready: %v", b.runs, b.addr(), err)
	}
	b.startup = time.Since(began)
	return b.startup
}

// launch runs `samsa serve` without waiting for it to serve, and returns
// when the process started. Brokers that embed members of one new etcd
// cluster are launched together, since none serves before a majority of
// the members runs.
func (b *broker) launch() time.Time {
	b.t.Helper()
	if b.running() {
		b.t.Fatalf("broker already running")
	}
	args := []string{"serve",
		"--override", "listeners=PLAINTEXT://" + b.addr(),
		"--override", "log.dirs=" + b.dir,
		"--override", "admin.listener=",
	}
	for _, o := range b.overrides {
		args = append(args, "--override", o)
	}
	logf, err := os.OpenFile(b.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		b.t.Fatal(err)
	}
	b.runs++
	fmt.Fprintf(logf, "==== run %d: samsa %v\n", b.runs, args)
	bin := b.bin
	if bin == "" {
		bin = samsaBin
	}
	cmd := exec.Command(bin, args...)
	testutil.DieWithParent(cmd)
	cmd.Stdout = logf
	cmd.Stderr = logf
	began := time.Now()
	if err := cmd.Start(); err != nil {
		logf.Close()
		b.t.Fatalf("start samsa: %v", err)
	}
	b.cmd = cmd
	done := make(chan struct{})
	b.done = done
	go func() {
		defer close(done)
		defer logf.Close()
		_ = cmd.Wait()
		b.state = cmd.ProcessState
	}()
	return began
}

// waitReady polls until the port accepts and a Metadata request succeeds,
// for up to readyTimeout.
func (b *broker) waitReady() error { return b.waitReadyWithin(readyTimeout) }

// waitReadyWithin is waitReady with a deadline of d.
func (b *broker) waitReadyWithin(d time.Duration) error {
	deadline := time.Now().Add(d)
	var last error
	for time.Now().Before(deadline) {
		select {
		case <-b.done:
			return fmt.Errorf("process exited early: %v", b.state)
		default:
		}
		if last = b.metadataOnce(); last == nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("after %s: %w", d, last)
}

func (b *broker) metadataOnce() error {
	c, err := net.DialTimeout("tcp", b.addr(), time.Second)
	if err != nil {
		return err
	}
	c.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr()), kgo.RetryTimeout(time.Second))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	if len(resp.Brokers) == 0 {
		return errors.New("metadata lists no brokers")
	}
	return nil
}

// signal sends sig to the running process.
func (b *broker) signal(sig syscall.Signal) {
	b.t.Helper()
	if err := b.cmd.Process.Signal(sig); err != nil {
		b.t.Fatalf("signal %v: %v", sig, err)
	}
}

// kill sends SIGKILL and waits for the process to be reaped.
func (b *broker) kill() {
	b.t.Helper()
	_ = b.cmd.Process.Signal(syscall.SIGKILL)
	if _, ok := b.waitExit(exitTimeout); !ok {
		b.t.Fatalf("broker did not exit %s after SIGKILL", exitTimeout)
	}
}

// waitExit waits up to d for the process to exit and returns its state.
func (b *broker) waitExit(d time.Duration) (*os.ProcessState, bool) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-b.done:
		return b.state, true
	case <-timer.C:
		return nil, false
	}
}

// log returns everything the broker wrote so far.
func (b *broker) log() string {
	data, _ := os.ReadFile(b.logPath)
	return string(data)
}

// waitLog polls the broker log until it contains s.
func (b *broker) waitLog(s string, d time.Duration) {
	b.t.Helper()
	waitFor(b.t, d, func() error {
		if !bytes.Contains([]byte(b.log()), []byte(s)) {
			return fmt.Errorf("log does not contain %q", s)
		}
		return nil
	})
}

func (b *broker) dumpLog() {
	const max = 8 << 10
	s := b.log()
	if len(s) > max {
		s = "...\n" + s[len(s)-max:]
	}
	b.t.Logf("broker log (%s):\n%s", b.logPath, s)
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	portsMu.Lock()
	defer portsMu.Unlock()
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		// NB: the kernel may hand a released port out again; two
		// listeners of one test given the same port fail to start.
		if !portsGiven[port] {
			portsGiven[port] = true
			return port
		}
	}
	t.Fatal("no fresh loopback port in 100 tries")
	return 0
}

var (
	portsMu    sync.Mutex
	portsGiven = map[int]bool{}
)

// waitFor polls f every 10ms until it returns nil or d passes, then fails
// the test with f's last error.
func waitFor(t *testing.T, d time.Duration, f func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %v", d, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
