package server

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe for the server's goroutines to write.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) slowTopics(t *testing.T) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(s.b.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if m["msg"] != "server: slow request" {
			continue
		}
		if m["level"] != "WARN" || m["api"] != "Metadata" || m["api_version"] != float64(12) || m["client_id"] != "test" {
			t.Errorf("slow request line %v", m)
		}
		out = append(out, m["correlation_id"].(string))
	}
	return out
}

// TestSlowRequestLogLeavesOutParkedAndQueuedTime checks that a request
// slow in Handle or in Wait is logged at WARN, and that neither a Wait
// parked by design (a long-poll) nor a request queued behind it is.
func TestSlowRequestLogLeavesOutParkedAndQueuedTime(t *testing.T) {
	var buf syncBuffer
	log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == "correlation_id" {
			a.Value = slog.StringValue(a.Value.String())
		}
		return a
	}}))
	_, addr := start(t, Config{Logger: log, SlowRequest: 80 * time.Millisecond}, newTestHandler())
	c := dial(t, addr)
	const v = 12
	var out []byte
	for i, name := range []string{"parked-300", "fast", "slow-handle-150", "slow-wait-150", "fast"} {
		out = append(out, encode(int32(i), metadata(name), v)...)
	}
	c.write(out)
	for range 5 {
		c.readMetadata(v)
	}
	// The write goroutine logs before it writes the response.
	if got, want := strings.Join(buf.slowTopics(t), ","), "2,3"; got != want {
		t.Fatalf("slow requests logged: %q, want %q", got, want)
	}
}

func TestSlowRequestLogOffAtZero(t *testing.T) {
	var buf syncBuffer
	_, addr := start(t, Config{Logger: slog.New(slog.NewJSONHandler(&buf, nil))}, newTestHandler())
	c := dial(t, addr)
	c.write(encode(0, metadata("slow-handle-50"), 12))
	c.readMetadata(12)
	if got := buf.slowTopics(t); len(got) != 0 {
		t.Fatalf("slow requests logged with the log off: %v", got)
	}
}
