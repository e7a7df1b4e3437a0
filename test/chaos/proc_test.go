package chaos

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"samsa/internal/testutil"
)

// exitTimeout bounds how long a killed process may take to be reaped.
const exitTimeout = 10 * time.Second

// proc is one samsa subprocess that can be signalled, killed and run again
// with the same arguments. Its stdout and stderr of every run are appended
// to logPath. A proc is used by one test goroutine; it is not safe for
// concurrent use.
type proc struct {
	t       *testing.T
	name    string // for messages: "etcd", "broker 1"
	args    []string
	env     []string // added to the test's environment
	logPath string

	cmd  *exec.Cmd
	done chan struct{} // closed once cmd has been waited for
	// state is the exit status of the last run; valid once done is closed.
	state   *os.ProcessState
	runs    int
	stopped bool // SIGSTOPped and not yet continued
}

// start runs the process; it does not wait for readiness.
func (p *proc) start() {
	p.t.Helper()
	if p.running() {
		p.t.Fatalf("%s already running", p.name)
	}
	logf, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		p.t.Fatal(err)
	}
	p.runs++
	fmt.Fprintf(logf, "==== %s run %d at %s: samsa %s\n", p.name, p.runs,
		time.Now().Format("15:04:05.000"), strings.Join(p.args, " "))
	cmd := exec.Command(samsaBin, p.args...)
	testutil.DieWithParent(cmd)
	if len(p.env) > 0 {
		cmd.Env = append(os.Environ(), p.env...)
	}
	cmd.Stdout = logf
	cmd.Stderr = logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		p.t.Fatalf("start %s: %v", p.name, err)
	}
	p.cmd = cmd
	p.stopped = false
	done := make(chan struct{})
	p.done = done
	go func() {
		defer close(done)
		defer logf.Close()
		_ = cmd.Wait()
		p.state = cmd.ProcessState
	}()
}

func (p *proc) running() bool {
	if p.done == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// exited reports an error if the process is no longer running.
func (p *proc) exited() error {
	select {
	case <-p.done:
		return fmt.Errorf("%s exited: %v", p.name, p.state)
	default:
		return nil
	}
}

// signal sends sig to the running process.
func (p *proc) signal(sig syscall.Signal) {
	p.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatalf("%s: signal %v: %v", p.name, sig, err)
	}
	p.note("signal %v", sig)
	switch sig {
	case syscall.SIGSTOP:
		p.stopped = true
	case syscall.SIGCONT:
		p.stopped = false
	}
}

// kill sends SIGKILL and waits for the process to be reaped.
func (p *proc) kill() {
	p.t.Helper()
	if !p.running() {
		return
	}
	p.note("SIGKILL")
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	if _, ok := p.waitExit(exitTimeout); !ok {
		p.t.Fatalf("%s did not exit %s after SIGKILL", p.name, exitTimeout)
	}
	p.stopped = false
}

// waitExit waits up to d for the process to exit and returns its state.
func (p *proc) waitExit(d time.Duration) (*os.ProcessState, bool) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-p.done:
		return p.state, true
	case <-timer.C:
		return nil, false
	}
}

// note appends a line to the process log, so faults line up with what the
// process logged around them.
func (p *proc) note(format string, args ...any) {
	f, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "==== %s %s: %s\n", p.name, time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

// log returns everything the process wrote so far.
func (p *proc) log() string {
	data, _ := os.ReadFile(p.logPath)
	return string(data)
}

// firstLine polls the log for up to d until a line starting with one of
// prefixes appears and returns it.
func (p *proc) firstLine(d time.Duration, prefixes ...string) string {
	p.t.Helper()
	var line string
	waitFor(p.t, d, func() error {
		if err := p.exited(); err != nil {
			return err
		}
		sc := bufio.NewScanner(strings.NewReader(p.log()))
		for sc.Scan() {
			for _, prefix := range prefixes {
				if strings.HasPrefix(sc.Text(), prefix) {
					line = sc.Text()
					return nil
				}
			}
		}
		return fmt.Errorf("%s printed no line starting with %q", p.name, prefixes)
	})
	return line
}

// dumpTail logs the last bytes of the process log, and with
// SAMSA_CHAOS_KEEP=<dir> copies the whole log to
// <dir>/<test>-<process>.log (the test's temp dir is removed).
func (p *proc) dumpTail() {
	const max = 12 << 10
	s := p.log()
	if dir := os.Getenv("SAMSA_CHAOS_KEEP"); dir != "" {
		name := strings.NewReplacer("/", "_", " ", "_").Replace(p.t.Name() + "-" + p.name + ".log")
		err := os.MkdirAll(dir, 0o755)
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644)
		}
		if err != nil {
			p.t.Logf("keep %s log: %v", p.name, err)
		}
	}
	if len(s) > max {
		s = "...\n" + s[len(s)-max:]
	}
	p.t.Logf("%s log (%s), tail:\n%s", p.name, p.logPath, s)
}

// waitFor polls f every 20ms until it returns nil or d passes, then fails
// the test with f's last error.
func waitFor(t testing.TB, d time.Duration, f func() error) {
	t.Helper()
	if err := poll(d, f); err != nil {
		t.Fatalf("after %s: %v", d, err)
	}
}

// poll calls f every 20ms until it returns nil (poll returns nil) or d
// passes (poll returns f's last error).
func poll(d time.Duration, f func() error) error {
	deadline := time.Now().Add(d)
	for {
		err := f()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}
