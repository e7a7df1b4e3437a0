package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// runKcat runs kcat with args and stdin and returns its stdout; it fails
// the test on a non-zero exit.
func runKcat(t *testing.T, kcat, stdin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, kcat, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kcat %s: %v\nstderr:\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}

// kcatMetadata is the part of `kcat -L -J` output the tests check.
type kcatMetadata struct {
	Brokers []struct {
		ID   int32  `json:"id"`
		Name string `json:"name"`
	} `json:"brokers"`
	Topics []struct {
		Topic      string `json:"topic"`
		Partitions []struct {
			Partition int32 `json:"partition"`
			Leader    int32 `json:"leader"`
		} `json:"partitions"`
	} `json:"topics"`
}

// TestKcatListsBrokerAndTopics checks `kcat -L`, in text and JSON form,
// shows the broker at its address and the topics with their partitions.
func TestKcatListsBrokerAndTopics(t *testing.T) {
	kcat := requireKcat(t)
	b := newBroker(t)
	createTopic(t, b.addr(), "listed-a", 3, nil)
	createTopic(t, b.addr(), "listed-b", 1, nil)

	text := runKcat(t, kcat, "", "-b", b.addr(), "-L")
	for _, want := range []string{
		"1 brokers:",
		fmt.Sprintf("broker 0 at %s", b.addr()),
		`topic "listed-a" with 3 partitions:`,
		`topic "listed-b" with 1 partitions:`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("kcat -L output lacks %q:\n%s", want, text)
		}
	}

	var md kcatMetadata
	if err := json.Unmarshal([]byte(runKcat(t, kcat, "", "-b", b.addr(), "-L", "-J")), &md); err != nil {
		t.Fatalf("kcat -L -J: %v", err)
	}
	if len(md.Brokers) != 1 || md.Brokers[0].ID != 0 || md.Brokers[0].Name != b.addr() {
		t.Errorf("kcat -L -J brokers = %+v, want one: 0 at %s", md.Brokers, b.addr())
	}
	parts := make(map[string]int)
	for _, tp := range md.Topics {
		for _, p := range tp.Partitions {
			if p.Leader != 0 {
				t.Errorf("%s/%d leader %d, want 0", tp.Topic, p.Partition, p.Leader)
			}
		}
		parts[tp.Topic] = len(tp.Partitions)
	}
	if parts["listed-a"] != 3 || parts["listed-b"] != 1 {
		t.Errorf("kcat -L -J partitions per topic = %v", parts)
	}
}

// TestKcatProduceConsumeRoundTrip produces keyed records with headers with
// kcat, then consumes them with kcat: key, value, headers, offset and
// partition come back exactly, in order; consuming from an offset starts
// there.
func TestKcatProduceConsumeRoundTrip(t *testing.T) {
	kcat := requireKcat(t)
	b := newBroker(t)
	const topic = "kcat-rt"
	createTopic(t, b.addr(), topic, 2, nil)

	// Two produce runs with different headers, into partition 1.
	var in1, in2 strings.Builder
	var want []string
	for i := 0; i < 30; i++ {
		fmt.Fprintf(&in1, "key-%02d:value %02d with spaces\n", i, i)
		want = append(want, fmt.Sprintf("key-%02d|value %02d with spaces|h1=one,h2=|%d|1", i, i, i))
	}
	for i := 30; i < 45; i++ {
		fmt.Fprintf(&in2, "key-%02d:v%02d=%s\n", i, i, strings.Repeat("z", i*10))
		want = append(want, fmt.Sprintf("key-%02d|v%02d=%s|trace=abc-%d|%d|1", i, i, strings.Repeat("z", i*10), 2, i))
	}
	runKcat(t, kcat, in1.String(), "-b", b.addr(), "-P", "-t", topic, "-p", "1", "-K:", "-H", "h1=one", "-H", "h2=")
	runKcat(t, kcat, in2.String(), "-b", b.addr(), "-P", "-t", topic, "-p", "1", "-K:", "-H", "trace=abc-2")

	const format = "%k|%s|%h|%o|%p\n"
	got := runKcat(t, kcat, "", "-b", b.addr(), "-C", "-t", topic, "-p", "1", "-o", "beginning", "-e", "-f", format)
	checkLines(t, "consume from beginning", got, want)

	got = runKcat(t, kcat, "", "-b", b.addr(), "-C", "-t", topic, "-p", "1", "-o", "17", "-e", "-f", format)
	checkLines(t, "consume -o 17", got, want[17:])

	got = runKcat(t, kcat, "", "-b", b.addr(), "-C", "-t", topic, "-p", "1", "-o", "-5", "-e", "-f", format)
	checkLines(t, "consume -o -5", got, want[len(want)-5:])

	got = runKcat(t, kcat, "", "-b", b.addr(), "-C", "-t", topic, "-p", "1", "-o", "40", "-c", "2", "-f", format)
	checkLines(t, "consume -o 40 -c 2", got, want[40:42])

	// Partition 0 got nothing; consuming the whole topic returns exactly
	// the records of partition 1.
	got = runKcat(t, kcat, "", "-b", b.addr(), "-C", "-t", topic, "-e", "-f", format)
	checkLines(t, "consume whole topic", got, want)
}

func checkLines(t *testing.T, what, got string, want []string) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if got == "" {
		lines = nil
	}
	if len(lines) != len(want) {
		t.Fatalf("%s: %d lines, want %d:\n%s", what, len(lines), len(want), got)
	}
	for i := range want {
		if lines[i] != want[i] {
			t.Fatalf("%s: line %d:\n got %q\nwant %q", what, i, lines[i], want[i])
		}
	}
}
