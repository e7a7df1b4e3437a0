package chaos

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestS24ClockSkewAcrossProcesses is TESTPLAN S-24 with broker processes.
// Each broker's clock is the machine's plus an offset the test writes to a
// file (SAMSA_TEST_CLOCK_FILE; libfaketime cannot shift a Go binary):
// broker 1 runs 288 s ahead, broker 2 288 s behind, and under the safe
// producer's load broker 0's clock strobes between +288 s and -288 s
// every 200 ms while broker 1's jumps from +288 s to -288 s. The topic has
// 4 KiB segments and retention.ms of 10 min, so every broker's retention
// check runs on many sealed segments whose records are, by each clock,
// between 288 s in the future and 576 s in the past: none is older than
// retention.ms minus the largest skew between two clocks, so no replica
// may delete its first segment. Nothing acknowledged may be lost,
// duplicated or moved.
//
// etcd runs on the machine's clock: its leases measure time with Go's
// monotonic clock, which no test can shift without changing the clock of
// the whole machine.
func TestS24ClockSkewAcrossProcesses(t *testing.T) {
	const (
		topic      = "s24"
		partitions = 3
		skewMs     = 288_000
	)
	clocks := t.TempDir()
	setClock := func(id int, ms int64) {
		t.Helper()
		path := filepath.Join(clocks, "clock-"+strconv.Itoa(id))
		if err := os.WriteFile(path+".tmp", []byte(strconv.FormatInt(ms, 10)), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(path+".tmp", path); err != nil {
			t.Fatal(err)
		}
	}
	setClock(0, 0)
	setClock(1, skewMs)
	setClock(2, -skewMs)
	c := startClusterWith(t, clusterProfile{
		env:       []string{"SAMSA_TEST_CLOCK_FILE=" + filepath.Join(clocks, "clock-{node.id}")},
		overrides: []string{"log.retention.check.interval.ms=100"},
	})
	c.createTopicWith(topic, partitions, map[string]string{"segment.bytes": "4096", "retention.ms": "600000"})
	w := startWorkload(t, c, topic, partitions)
	w.waitAcks(0, 50, 30*time.Second)

	deadline := time.Now().Add(pick(6*time.Second, 60*time.Second))
	for i := 0; time.Now().Before(deadline); i++ {
		if i%2 == 0 {
			setClock(0, skewMs)
		} else {
			setClock(0, -skewMs)
		}
		if i == 10 {
			setClock(1, -skewMs)
		}
		time.Sleep(200 * time.Millisecond)
	}
	setClock(0, 0)
	for p := range int32(partitions) {
		w.waitAcks(p, 50, 60*time.Second)
	}
	c.waitFullISR(topic, partitions)
	time.Sleep(time.Second) // several retention checks on every broker
	w.stop(30 * time.Second)

	for _, b := range c.brokers {
		for p := range partitions {
			dir := filepath.Join(b.dir, "data", topic+"-"+strconv.Itoa(p))
			segs, err := filepath.Glob(filepath.Join(dir, "*.log"))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(dir, "00000000000000000000.log")); err != nil {
				t.Errorf("broker %d: %s-%d lost its first segment (%d segments left): retention deleted records younger than retention.ms minus the skew: %v",
					b.id, topic, p, len(segs), err)
			} else if len(segs) < 3 {
				t.Errorf("broker %d: %s-%d has %d segments: the test did not roll enough to exercise retention", b.id, topic, p, len(segs))
			}
		}
	}
	r := w.check(c)
	t.Logf("S-24 across processes: %v", r)
}
