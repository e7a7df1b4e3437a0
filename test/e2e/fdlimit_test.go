package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// TestOpenFileLimitFailsClearlyAndLosesNothing: a broker run under a low
// `ulimit -n` that is asked for more partitions than it has descriptors
// for logs "too many open files", keeps running and serving the
// connections it has, refuses to start at all under a limit its data
// cannot fit (exit status 1, the cause in its log), warns at startup
// when the limit is tight, and once given enough descriptors serves
// every acknowledged record and every partition.
func TestOpenFileLimitFailsClearlyAndLosesNothing(t *testing.T) {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("needs /proc")
	}
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Max < 2000 {
		t.Skipf("needs a hard descriptor limit of 2000 (%d, %v)", rl.Max, err)
	}
	wrapper := filepath.Join(t.TempDir(), "samsa-ulimit")
	limit := func(n int) {
		t.Helper()
		script := fmt.Sprintf("#!/bin/sh\nulimit -n %d || exit 2\nexec %s \"$@\"\n", n, samsaBin)
		if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	limit(300)
	b := &broker{t: t, dir: t.TempDir(), port: freePort(t), logPath: filepath.Join(t.TempDir(), "samsa.log"), bin: wrapper}
	t.Cleanup(func() {
		if b.running() {
			b.kill()
		}
		if t.Failed() {
			b.dumpLog()
		}
	})
	b.start()

	fits := map[string]int32{"fits": 100}
	adm := kadm.NewClient(newClient(t, b.addr()))
	createTopic(t, b.addr(), "fits", 100, nil)
	waitAllHosted(t, b.addr(), fits, time.Minute)
	l := newScaleLedger()
	produceScale(t, b.addr(), fits, "r1", l)

	// 300 more partitions do not fit in 300 descriptors.
	ctx := t.Context()
	if _, err := adm.CreateTopic(ctx, 300, 1, nil, "toomany"); err != nil {
		t.Fatalf("create topic toomany: %v", err)
	}
	b.waitLog("too many open files", time.Minute)
	if !b.running() {
		t.Fatal("broker exited on reaching its descriptor limit")
	}
	// NB: no new connection is accepted while every descriptor is taken
	// (the listener retries, internal/server); the records are checked
	// after the restart.
	b.signal(syscall.SIGTERM)
	if _, ok := b.waitExit(time.Minute); !ok {
		t.Fatal("broker did not stop within 1m of SIGTERM")
	}

	// Its logs alone need more than 200 descriptors: it must not start.
	limit(200)
	b.launch()
	st, ok := b.waitExit(time.Minute)
	if !ok {
		t.Fatal("broker under a limit its logs cannot fit kept running")
	}
	if st.ExitCode() != 1 {
		t.Fatalf("exit status %d under a limit too low for its logs, want 1", st.ExitCode())
	}
	run := b.log()[strings.LastIndex(b.log(), "==== run"):]
	if !strings.Contains(run, "too many open files") {
		t.Fatalf("the failed start does not say why:\n%s", run)
	}

	// Enough to run, not enough for comfort: a warning, then everything.
	limit(1200)
	b.launch()
	if err := b.waitReadyWithin(time.Minute); err != nil {
		t.Fatalf("restart with 1200 descriptors: %v", err)
	}
	if run := b.log()[strings.LastIndex(b.log(), "==== run"):]; !strings.Contains(run, "open file limit is low") {
		t.Fatalf("no warning at startup with 1200 descriptors for 400 partitions:\n%s", run)
	}
	all := map[string]int32{"fits": 100, "toomany": 300}
	waitAllHosted(t, b.addr(), all, time.Minute)
	checkScale(t, b.addr(), fits, l)
	produceScale(t, b.addr(), all, "r2", l)
	checkScale(t, b.addr(), all, l)
}
