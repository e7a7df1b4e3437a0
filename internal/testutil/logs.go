package testutil

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// LogBuffer keeps a broker's log, written in JSON (log.format=json), so
// that a test can look for the lines it expects. It is safe for
// concurrent use.
type LogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p (one or more JSON lines) to the buffer.
func (l *LogBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// Lines returns the log lines written so far, each decoded into a map.
// A line that is not JSON comes back as {"msg": line}. The caller owns
// the returned slice.
func (l *LogBuffer) Lines() []map[string]any {
	l.mu.Lock()
	text := l.buf.String()
	l.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(text, "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			m = map[string]any{"msg": line}
		}
		out = append(out, m)
	}
	return out
}

// Find returns the lines whose msg is msg and whose attributes include
// every key and value of attrs, compared in their printed form (so that
// 3 matches a JSON 3, and "3" too).
func (l *LogBuffer) Find(msg string, attrs map[string]any) []map[string]any {
	var out []map[string]any
	for _, m := range l.Lines() {
		if m["msg"] != msg {
			continue
		}
		ok := true
		for k, v := range attrs {
			ok = ok && fmt.Sprint(m[k]) == fmt.Sprint(v)
		}
		if ok {
			out = append(out, m)
		}
	}
	return out
}

// WaitFor waits up to d for a line that Find(msg, attrs) returns and
// returns the first one; it fails the test, showing the log, if none
// comes.
func (l *LogBuffer) WaitFor(t testing.TB, d time.Duration, msg string, attrs map[string]any) map[string]any {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		if found := l.Find(msg, attrs); len(found) > 0 {
			return found[0]
		}
		if time.Now().After(deadline) {
			l.mu.Lock()
			text := l.buf.String()
			l.mu.Unlock()
			t.Fatalf("no log line %q with %v after %v; the log:\n%s", msg, attrs, d, text)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
