package cli_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"samsa/internal/cli"
	"samsa/internal/testutil"
)

// healthcheck runs samsa healthcheck with args and returns its exit code
// and streams.
func healthcheck(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return cli.RunForTest(ctx, "", append([]string{"healthcheck"}, args...)...)
}

func TestHealthcheckExitsZeroForAReadyBroker(t *testing.T) {
	b := testutil.StartBroker(t, "admin.listener=127.0.0.1:0")
	url := "http://" + b.Node.AdminAddr() + "/readyz"
	// The broker turns ready once it has registered; allow it a moment.
	deadline := time.Now().Add(10 * time.Second)
	var code int
	var stdout, stderr string
	for {
		code, stdout, stderr = healthcheck(t, "--url", url)
		if code == cli.ExitOK || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code != cli.ExitOK || stderr != "" {
		t.Fatalf("exit %d, stderr %q; want 0 and nothing on stderr", code, stderr)
	}
	if want := url + ": 200 OK\n"; stdout != want {
		t.Errorf("stdout %q, want %q", stdout, want)
	}
}

func TestHealthcheckExitsOneForAClosedPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	start := time.Now()
	code, stdout, stderr := healthcheck(t, "--url", "http://"+addr+"/readyz")
	if code != cli.ExitFailure || stdout != "" {
		t.Fatalf("exit %d, stdout %q; want 1 and nothing on stdout", code, stdout)
	}
	if !strings.Contains(stderr, "connection refused") || !strings.Contains(stderr, addr) {
		t.Errorf("stderr %q does not give the address and the reason", stderr)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("took %v for a refused connection", d)
	}
}

func TestHealthcheckExitsOneForANotReadyAnswer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "not ready", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	code, _, stderr := healthcheck(t, "--url", srv.URL+"/readyz")
	if code != cli.ExitFailure || !strings.Contains(stderr, "503 Service Unavailable: not ready") {
		t.Fatalf("exit %d, stderr %q; want 1 with the status and body", code, stderr)
	}
}

func TestHealthcheckGivesUpAtTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	start := time.Now()
	code, _, stderr := healthcheck(t, "--url", srv.URL+"/readyz", "--timeout", "200ms")
	if code != cli.ExitFailure || !strings.Contains(stderr, "no answer within 200ms") {
		t.Fatalf("exit %d, stderr %q; want 1 and the timeout", code, stderr)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %v with --timeout 200ms", d)
	}
}

func TestHealthcheckMisuse(t *testing.T) {
	for _, args := range [][]string{
		{"--url", "127.0.0.1:9080/readyz"},
		{"--url", "ftp://127.0.0.1/readyz"},
		{"--timeout", "0s"},
		{"extra"},
	} {
		if code, _, stderr := healthcheck(t, args...); code != cli.ExitMisuse {
			t.Errorf("%q: exit %d (stderr %q), want %d", args, code, stderr, cli.ExitMisuse)
		}
	}
}
