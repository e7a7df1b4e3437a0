package cli_test

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"samsa/internal/cli"
	"samsa/internal/testutil"
)

var (
	produceProgressRE = regexp.MustCompile(`^(produce|e2e) (\S+): (\d+) records/s, (\d+\.\d\d) MB/s, latency p50 (\d+\.\d\d ms|-) p99 (\d+\.\d\d ms|-), (\d+) records total$`)
	consumeProgressRE = regexp.MustCompile(`^consume (\S+): (\d+) records/s, (\d+\.\d\d) MB/s, (\d+) records total$`)
)

// progressLine is one parsed progress line.
type progressLine struct {
	topic         string
	recordsPerSec int64
	mbPerSec      float64
	p50, p99      float64 // -1 when the interval had no acknowledgement
	total         int64
}

// progressLines parses the progress lines of stderr; other lines are
// skipped, a line that looks like progress but does not parse fails.
func progressLines(t *testing.T, stderr string, producer bool) []progressLine {
	t.Helper()
	var out []progressLine
	for _, l := range strings.Split(stderr, "\n") {
		if !strings.Contains(l, "records/s") {
			continue
		}
		var pl progressLine
		if producer {
			m := produceProgressRE.FindStringSubmatch(l)
			if m == nil {
				t.Fatalf("progress line does not parse: %q", l)
			}
			pl.topic = m[2]
			pl.recordsPerSec, _ = strconv.ParseInt(m[3], 10, 64)
			pl.mbPerSec, _ = strconv.ParseFloat(m[4], 64)
			pl.p50, pl.p99 = latencyField(m[5]), latencyField(m[6])
			pl.total, _ = strconv.ParseInt(m[7], 10, 64)
		} else {
			m := consumeProgressRE.FindStringSubmatch(l)
			if m == nil {
				t.Fatalf("progress line does not parse: %q", l)
			}
			pl.topic = m[1]
			pl.recordsPerSec, _ = strconv.ParseInt(m[2], 10, 64)
			pl.mbPerSec, _ = strconv.ParseFloat(m[3], 64)
			pl.total, _ = strconv.ParseInt(m[4], 10, 64)
		}
		out = append(out, pl)
	}
	return out
}

func latencyField(s string) float64 {
	if s == "-" {
		return -1
	}
	v, _ := strconv.ParseFloat(strings.TrimSuffix(s, " ms"), 64)
	return v
}

// TestProduceProgress feeds produce two bursts of lines more than a second
// apart: with --progress the first interval's line shows the first burst
// with its latency; without, stderr (not a terminal) has only the summary.
func TestProduceProgress(t *testing.T) {
	t.Parallel()
	b := testutil.StartBroker(t)
	addr := b.Addr()
	testutil.CreateTopic(t, b.Admin(), "pp", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	pr, pw := io.Pipe()
	go func() { // ends when it has written both bursts; the command reads them
		for i := range 50 {
			fmt.Fprintf(pw, "first %d\n", i)
		}
		time.Sleep(1500 * time.Millisecond)
		for i := range 50 {
			fmt.Fprintf(pw, "second %d\n", i)
		}
		pw.Close()
	}()
	code, _, errs := cli.RunForTestIO(ctx, pr, "-b", addr, "produce", "pp", "--progress")
	if code != cli.ExitOK {
		t.Fatalf("produce: exit %d\n%s", code, errs)
	}
	lines := progressLines(t, errs, true)
	if len(lines) == 0 {
		t.Fatalf("no progress line:\n%s", errs)
	}
	// The pause after the first burst is longer than an interval, so
	// one line ends inside it, with the whole burst counted.
	var sawBurst bool
	for _, l := range lines {
		if l.topic != "pp" || l.total > 100 || (l.recordsPerSec > 0 && (l.p50 < 0 || l.p99 < l.p50)) {
			t.Fatalf("progress line %+v:\n%s", l, errs)
		}
		sawBurst = sawBurst || l.total == 50
	}
	if first := lines[0]; !sawBurst || first.recordsPerSec <= 0 || first.p50 < 0 {
		t.Fatalf("want the first line to show the first burst and its latency, one line at 50 records:\n%s", errs)
	}
	if !strings.Contains(errs, "produced 100 records") {
		t.Fatalf("no summary:\n%s", errs)
	}

	for _, args := range [][]string{{"produce", "pp"}, {"produce", "pp", "--progress=false"}} {
		code, _, errs := cli.RunForTest(ctx, "a\nb\n", append([]string{"-b", addr}, args...)...)
		if code != cli.ExitOK || strings.Contains(errs, "records/s") {
			t.Fatalf("%v: exit %d, stderr %q: want no progress line", args, code, errs)
		}
	}
}

// TestConsumeProgress consumes 20 records and then waits for --timeout:
// the line of the first second counts them and their 0.2 MB.
func TestConsumeProgress(t *testing.T) {
	t.Parallel()
	b := testutil.StartBroker(t)
	addr := b.Addr()
	testutil.CreateTopic(t, b.Admin(), "cp", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var recs []*kgo.Record
	for i := range 20 {
		// 10 kB each, so the line's MB/s is above 0.00.
		recs = append(recs, &kgo.Record{Topic: "cp", Value: []byte(fmt.Sprintf("%02d%s", i, strings.Repeat("v", 9998)))})
	}
	if err := b.Client().ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	code, out, errs := samsa(t, addr, "consume", "cp", "--from", "beginning", "--timeout", "1500ms", "--progress")
	if code != cli.ExitOK || strings.Count(out, "\n") != 20 {
		t.Fatalf("consume: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	lines := progressLines(t, errs, false)
	if len(lines) == 0 {
		t.Fatalf("no progress line:\n%s", errs)
	}
	var peak progressLine
	for _, l := range lines {
		if l.topic != "cp" || l.total > 20 {
			t.Fatalf("progress line %+v:\n%s", l, errs)
		}
		if l.recordsPerSec > peak.recordsPerSec {
			peak = l
		}
	}
	if last := lines[len(lines)-1]; last.total != 20 || peak.mbPerSec <= 0.05 {
		t.Fatalf("want the last line at 20 records and one above 0.05 MB/s:\n%s", errs)
	}
}

// TestPerfProgress runs perf e2e at a steady rate for over two seconds
// with --progress: each line shows the acknowledgements of its second.
func TestPerfProgress(t *testing.T) {
	t.Parallel()
	b := testutil.StartBroker(t)
	addr := b.Addr()
	code, out, errs := samsa(t, addr, "perf", "e2e", "--topic", "pe", "--rate", "200", "--record-size", "100",
		"--duration", "2300ms", "--grace", "5s", "--progress", "--json")
	if code != cli.ExitOK {
		t.Fatalf("perf e2e: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	lines := progressLines(t, errs, true)
	if len(lines) < 2 {
		t.Fatalf("want a progress line a second:\n%s", errs)
	}
	var steady bool
	for i, l := range lines {
		if l.topic != "pe" || (l.recordsPerSec > 0 && (l.p50 < 0 || l.p99 < l.p50)) || (i > 0 && l.total < lines[i-1].total) {
			t.Fatalf("progress line %+v:\n%s", l, errs)
		}
		steady = steady || (l.recordsPerSec >= 100 && l.recordsPerSec <= 300 && l.p50 >= 0)
	}
	if !steady {
		t.Fatalf("no line near the 200 records/s sent, with its latency:\n%s", errs)
	}
	// stdout keeps only the result.
	if strings.Contains(out, "records/s") || !strings.HasPrefix(out, "{") {
		t.Fatalf("perf e2e stdout:\n%s", out)
	}
}
