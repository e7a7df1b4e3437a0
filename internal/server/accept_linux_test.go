package server

import (
	"bufio"
	"log/slog"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestAcceptSurvivesRunningOutOfDescriptors: a listener whose accept fails
// with EMFILE (the process hit RLIMIT_NOFILE, as a broker with too many
// partitions for its ulimit does) logs it and retries; once descriptors
// are free again the waiting connection is served. Stopping the listener
// instead would leave a running broker that no client can reach.
func TestAcceptSurvivesRunningOutOfDescriptors(t *testing.T) {
	var logs syncBuffer
	_, addr := start(t, Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))}, newTestHandler())

	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("needs /proc")
	}
	// NB: a low limit keeps the number of files to open small; it is
	// restored before anything else in the test needs descriptors.
	low := old
	low.Cur = uint64(len(ents) + 64)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Skipf("setrlimit: %v", err)
	}
	var filler []*os.File
	restore := func() {
		for _, f := range filler {
			f.Close()
		}
		filler = nil
		syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old)
	}
	defer restore()
	for {
		f, err := os.Open(os.DevNull)
		if err != nil {
			if !strings.Contains(err.Error(), "too many open files") {
				t.Fatalf("open: %v", err)
			}
			break
		}
		filler = append(filler, f)
	}
	// One descriptor for the client's socket; the server has none left.
	filler[len(filler)-1].Close()
	filler = filler[:len(filler)-1]
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		restore()
		t.Fatalf("dial: %v", err)
	}
	c := &client{t: t, nc: nc, r: bufio.NewReader(nc)}
	defer nc.Close()
	waitFor(t, 10*time.Second, "the accept failure in the log", func() bool {
		logs.mu.Lock()
		defer logs.mu.Unlock()
		return strings.Contains(logs.b.String(), "too many open files")
	})
	restore()

	c.write(encode(7, kmsg.NewPtrApiVersionsRequest(), 0))
	corr, _, err := c.readResponse(false)
	if err != nil {
		t.Fatalf("the connection that waited out EMFILE got no response: %v", err)
	}
	if corr != 7 {
		t.Fatalf("correlation id %d, want 7", corr)
	}
}
