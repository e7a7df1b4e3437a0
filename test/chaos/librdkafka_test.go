package chaos

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"samsa/internal/testutil"
)

// The workload runs two client stacks at once, each with its own
// producer, values and sequence numbers:
//
//	stack      | client                                  | rate     | values
//	-----------+-----------------------------------------+----------+---------------------------
//	franz-go   | kgo.Client in the test process          | 200/s    | <topic>-p<p>-<seq>
//	librdkafka | confluent-kafka-python in a subprocess  | 100/s    | <topic>-rdk-p<p>-<seq>
//	           | (testdata/librdkafka_client.py)         |          |
//
// Both are TESTPLAN's safe producer: acks=all, idempotence on, unbounded
// retries, no local message timeout that could fire during a run.
// librdkafka's delivery reports come back as JSON lines on the
// subprocess's stdout and become acks and failures of the workload like
// franz-go's, so the checker applies every rule to both.
//
// A librdkafka failure is definite when the broker rejected the batch
// with one of the idempotence errors below; every other error, local
// purges at shutdown included, is indefinite. (librdkafka keeps a
// per-message persistence status, but confluent-kafka-python 1.7 does not
// expose it, and a purged message may have been sent before a retry put
// it back in the queue.)
//
// The stacks are configured with SAMSA_CHAOS_CLIENTS, a comma-separated
// list of stack names (default: both). With librdkafka wanted but no
// python3 that imports confluent_kafka, a scenario fails under CI=1 and
// is skipped otherwise.

// Client stack names, as they appear in results.
const (
	stackFranz = "franz-go"
	stackRdk   = "librdkafka"
)

// rdkRate is the librdkafka producer's sends per second.
const rdkRate = 100

// rdkDefinite lists the librdkafka delivery errors that mean the write did
// not happen: the broker rejected the batch for its producer id, epoch or
// sequence. librdkafka raises a fatal error for some of them
// (OUT_OF_ORDER_SEQUENCE_NUMBER on the head-of-line request,
// UNKNOWN_PRODUCER_ID) and the script then continues with a new producer.
var rdkDefinite = map[string]bool{
	"OUT_OF_ORDER_SEQUENCE_NUMBER": true,
	"PRODUCER_FENCED":              true,
	"INVALID_PRODUCER_EPOCH":       true,
	"UNKNOWN_PRODUCER_ID":          true,
}

// rdkError is a librdkafka delivery error as the script reported it.
type rdkError struct {
	Name      string `json:"err"`
	Code      int    `json:"code"`
	Fatal     bool   `json:"fatal"`
	Retriable bool   `json:"retriable"`
	Reason    string `json:"reason"`
}

func (e *rdkError) Error() string {
	return fmt.Sprintf("librdkafka %s (%d): %s", e.Name, e.Code, e.Reason)
}

// stacksWanted returns the client stacks SAMSA_CHAOS_CLIENTS names, or
// both when it is unset.
func stacksWanted(t *testing.T) []string {
	t.Helper()
	v := os.Getenv("SAMSA_CHAOS_CLIENTS")
	if v == "" {
		return []string{stackFranz, stackRdk}
	}
	var out []string
	for s := range strings.SplitSeq(v, ",") {
		s = strings.TrimSpace(s)
		if s != stackFranz && s != stackRdk {
			t.Fatalf("SAMSA_CHAOS_CLIENTS=%q: unknown stack %q (want %s and/or %s)", v, s, stackFranz, stackRdk)
		}
		out = append(out, s)
	}
	if !slices.Contains(out, stackFranz) {
		// The scenarios' broker attribution (batches.by) needs it.
		t.Fatalf("SAMSA_CHAOS_CLIENTS=%q: %s is always run", v, stackFranz)
	}
	return out
}

// confluentPython is the python3 interpreter that imports confluent_kafka,
// found once; path is empty if there is none.
var confluentPython struct {
	once sync.Once
	path string
}

// requireLibrdkafka returns a python3 that imports confluent_kafka. If
// there is none it fails the test under CI (which installs
// python3-confluent-kafka) and skips it otherwise. The system python is
// tried first: version managers put interpreters without the distro's
// packages first in PATH.
func requireLibrdkafka(t *testing.T) string {
	t.Helper()
	confluentPython.once.Do(func() {
		for _, name := range []string{"/usr/bin/python3", "python3", "/usr/local/bin/python3"} {
			p, err := exec.LookPath(name)
			if err != nil {
				continue
			}
			if exec.Command(p, "-c", "import confluent_kafka").Run() == nil {
				confluentPython.path = p
				return
			}
		}
	})
	if confluentPython.path == "" {
		const what = "no python3 with the confluent_kafka module for the librdkafka producer " +
			"(apt-get install python3-confluent-kafka, or SAMSA_CHAOS_CLIENTS=franz-go to run franz-go alone)"
		if os.Getenv("CI") != "" {
			t.Fatalf("%s; CI is set, so this fails instead of skipping", what)
		}
		t.Skip(what)
	}
	return confluentPython.path
}

// rdkLine is one line of the script's stdout (see its doc).
type rdkLine struct {
	T         string `json:"t"`
	Seq       int64  `json:"s"`
	Partition int32  `json:"p"`
	Offset    int64  `json:"o"`
	Value     string `json:"v"`
	rdkError
	// done
	Sent       int64 `json:"sent"`
	Unresolved int   `json:"unresolved"`
	Producers  int   `json:"producers"`
	// read
	Complete bool `json:"complete"`
}

// rdkProducer is the librdkafka producer subprocess of a workload. It
// records every delivery report into the workload (under w.mu) from its
// own reader goroutine; stop and stopNow end it. Its fields other than
// those under w.mu are set by startRdkProducer and the stop methods of
// the one test goroutine.
type rdkProducer struct {
	w       *workload
	prefix  string // value prefix: <topic>-rdk
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	logPath string
	began   time.Time

	readDone chan struct{} // closed when stdout is read to its end
	exited   chan struct{} // closed once cmd has been waited for
	once     sync.Once
	stopped  bool // stop or stopNow ran
}

// rdkState is what the workload keeps of the librdkafka producer, under
// workload.mu.
type rdkState struct {
	sent      int64    // from the done line, or the highest seq seen + 1
	done      bool     // the done line arrived: every send has an outcome
	fatal     []string // fatal errors, each replacing the producer
	producers int
	bad       []string // lines that did not parse
}

// startRdkProducer starts the librdkafka producer for w against seeds.
func startRdkProducer(t *testing.T, w *workload, python string, seeds []string) *rdkProducer {
	t.Helper()
	r := &rdkProducer{w: w, prefix: w.tag + "-rdk", logPath: filepath.Join(t.TempDir(), "librdkafka.log"),
		readDone: make(chan struct{}), exited: make(chan struct{})}
	logf, err := os.Create(r.logPath)
	if err != nil {
		t.Fatal(err)
	}
	r.cmd = exec.Command(python, "testdata/librdkafka_client.py", "produce",
		strings.Join(seeds, ","), w.topic, strconv.Itoa(int(w.partitions)), r.prefix, strconv.Itoa(rdkRate))
	testutil.DieWithParent(r.cmd)
	r.cmd.Stderr = logf
	// SAMSA_CHAOS_RDK_DEBUG sets librdkafka's debug contexts (such as
	// "eos,msg,protocol") for the producer's log.
	r.cmd.Env = append(os.Environ(), "RDK_DEBUG="+os.Getenv("SAMSA_CHAOS_RDK_DEBUG"))
	// NB: if the test binary dies, stdin closes, which stops the script.
	if r.stdin, err = r.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := r.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	r.began = time.Now()
	if err := r.cmd.Start(); err != nil {
		logf.Close()
		t.Fatalf("start librdkafka producer: %v", err)
	}
	go r.read(stdout)
	go func() {
		defer close(r.exited)
		defer logf.Close()
		<-r.readDone // Wait closes stdout: read it to the end first
		_ = r.cmd.Wait()
	}()
	t.Cleanup(func() {
		if t.Failed() {
			r.dumpTail(t)
		}
	})
	return r
}

// read turns the script's stdout into acks and failures of the workload.
func (r *rdkProducer) read(stdout io.Reader) {
	defer close(r.readDone)
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	w := r.w
	for sc.Scan() {
		var l rdkLine
		err := json.Unmarshal(sc.Bytes(), &l)
		now := time.Now()
		w.mu.Lock()
		rs := &w.mu.rdk
		switch {
		case err != nil:
			rs.bad = append(rs.bad, fmt.Sprintf("%q: %v", sc.Text(), err))
		case l.T == "ack":
			w.mu.acks = append(w.mu.acks, ack{l.Seq, l.Partition, l.Offset, l.Value, now, stackRdk})
			rs.sent = max(rs.sent, l.Seq+1)
		case l.T == "fail":
			e := l.rdkError
			w.mu.failures = append(w.mu.failures, failure{l.Seq, l.Partition, l.Value, &e, rdkDefinite[e.Name], stackRdk})
			rs.sent = max(rs.sent, l.Seq+1)
		case l.T == "fatal":
			rs.fatal = append(rs.fatal, fmt.Sprintf("%s at %s", l.rdkError.Error(), now.Format("15:04:05.000")))
		case l.T == "done":
			rs.done = true
			rs.sent = l.Sent
			rs.producers = l.Producers
		default:
			rs.bad = append(rs.bad, fmt.Sprintf("%q: unknown line", sc.Text()))
		}
		w.mu.Unlock()
	}
}

// stop asks the script to end its sends and to wait up to d for the
// outstanding ones, then waits for it to exit (killing it after d plus a
// margin). It is idempotent with stopNow.
func (r *rdkProducer) stop(d time.Duration) {
	r.once.Do(func() {
		r.stopped = true
		fmt.Fprintf(r.stdin, "stop %.3f\n", d.Seconds())
		r.stdin.Close()
		r.wait(d + 20*time.Second)
	})
}

// stopNow ends the script at once: outstanding sends are purged and
// reported as indefinite failures.
func (r *rdkProducer) stopNow() { r.stop(0) }

// wait waits up to d for the script to exit, then kills it.
func (r *rdkProducer) wait(d time.Duration) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-r.exited:
		return
	case <-timer.C:
	}
	r.w.t.Logf("librdkafka producer still running %s after stop; killing it", d)
	_ = r.cmd.Process.Signal(syscall.SIGKILL)
	<-r.exited
}

// dumpTail logs the end of the script's stderr.
func (r *rdkProducer) dumpTail(t *testing.T) {
	const max = 8 << 10
	data, _ := os.ReadFile(r.logPath)
	s := string(data)
	if len(s) > max {
		s = "...\n" + s[len(s)-max:]
	}
	t.Logf("librdkafka producer log (%s), tail:\n%s", r.logPath, s)
}

// rdkRead reads partitions [0, len(ends)) of topic up to ends with a
// librdkafka consumer (assign, read_committed) and returns the records
// per partition in the order read. It fails the test if the read does not
// reach every end.
func rdkRead(t *testing.T, python string, seeds []string, topic string, ends []int64) map[int32][]rdkLine {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	es := make([]string, len(ends))
	for i, e := range ends {
		es[i] = strconv.FormatInt(e, 10)
	}
	cmd := exec.CommandContext(ctx, python, "testdata/librdkafka_client.py", "read",
		strings.Join(seeds, ","), topic, strings.Join(es, ","))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("librdkafka read back: %v\nstderr:\n%s", err, stderr.String())
	}
	out := make(map[int32][]rdkLine)
	complete := false
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var l rdkLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("librdkafka read back: line %q: %v", sc.Text(), err)
		}
		if l.T == "done" {
			complete = l.Complete
			continue
		}
		out[l.Partition] = append(out[l.Partition], l)
	}
	if !complete {
		t.Fatalf("librdkafka read back did not reach the end offsets %v\nstderr:\n%s", ends, stderr.String())
	}
	return out
}

// TestResentByClient covers the rule that tells a client's re-send under a
// bumped producer epoch from a retry the broker failed to deduplicate.
func TestResentByClient(t *testing.T) {
	rec := func(pid int64, epoch int16) *kgo.Record {
		return &kgo.Record{ProducerID: pid, ProducerEpoch: epoch}
	}
	for _, tc := range []struct {
		name   string
		copies []*kgo.Record
		want   bool
	}{
		{"one copy", []*kgo.Record{rec(7, 0)}, false},
		{"same producer and epoch", []*kgo.Record{rec(7, 0), rec(7, 0)}, false},
		{"epoch bumped", []*kgo.Record{rec(7, 0), rec(7, 1)}, true},
		{"two bumps", []*kgo.Record{rec(7, 0), rec(7, 1), rec(7, 2)}, true},
		{"two copies in one epoch of three", []*kgo.Record{rec(7, 0), rec(7, 1), rec(7, 1)}, false},
		{"other producer", []*kgo.Record{rec(7, 0), rec(8, 1)}, false},
		{"not idempotent", []*kgo.Record{rec(-1, 0), rec(-1, 1)}, false},
	} {
		if got := resentByClient(tc.copies); got != tc.want {
			t.Errorf("%s: resentByClient = %v, want %v", tc.name, got, tc.want)
		}
	}
}
