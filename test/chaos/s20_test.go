package chaos

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestS20ProducerKilledMidTransaction is TESTPLAN S-20: a librdkafka
// transactional producer is killed with SIGKILL while its transaction is
// open on every partition, beside producers that keep committing. The
// open transaction holds every partition's last stable offset back until
// the coordinator aborts it: that must happen within the transaction
// timeout plus 10 s of the kill, the killed producer's records must never
// be visible at read_committed, and the other transactions must be whole.
func TestS20ProducerKilledMidTransaction(t *testing.T) {
	const (
		topic      = "s20"
		partitions = 5
	)
	python := requireLibrdkafka(t)
	kills := int(pick(2, 6))
	c := startCluster(t)
	c.createTopic(topic, partitions)
	w := startTxnWorkload(t, c, topic, partitions, "s20-a")
	w.waitCommits(3, 60*time.Second)

	bound := txnTimeout + 10*time.Second
	for i := range kills {
		id := "s20-hang-" + strconv.Itoa(i)
		ctx, cancel := context.WithCancel(context.Background())
		cmd := exec.CommandContext(ctx, python, "testdata/txn_hang.py", strings.Join(c.addrs(), ","), topic,
			strconv.Itoa(partitions), id, strconv.FormatInt(txnTimeout.Milliseconds(), 10))
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		line, _ := bufio.NewReader(out).ReadString('\n')
		if strings.TrimSpace(line) != "open" {
			cancel()
			_ = cmd.Wait()
			t.Fatalf("txn_hang.py %s: %q\n%s", id, line, stderr.String())
		}
		// The open transaction's first record: the LSO must be held there
		// now, and move past the partition's end within the bound.
		ends := c.highWatermarks(topic, partitions)
		cancel() // SIGKILL
		_ = cmd.Wait()
		took := waitStableBeyond(t, c, topic, ends, bound+30*time.Second)
		t.Logf("kill %d: producer %s killed with its transaction open; every partition stable past %v after %s",
			i, id, ends, took.Round(time.Millisecond))
		if took > bound {
			t.Errorf("kill %d: last stable offsets stuck %s after the kill, above the bound of %s", i, took, bound)
		}
	}
	// The killed producers' records are not the workload's: check counts
	// any of them visible at read_committed as unexpected.
	r := w.check()
	t.Logf("S-20: %d producers killed mid-transaction; %v", kills, r)
}

// waitStableBeyond waits until every partition's last stable offset is at
// least its offset in ends, and returns how long that took.
func waitStableBeyond(t *testing.T, c *testCluster, topic string, ends map[int32]int64, d time.Duration) time.Duration {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	start := time.Now()
	waitFor(t, d, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		lso, err := adm.ListCommittedOffsets(ctx, topic)
		if err != nil {
			return err
		}
		var behind []error
		for p, end := range ends {
			l, ok := lso.Lookup(topic, p)
			if !ok || l.Err != nil || l.Offset < end {
				behind = append(behind, fmt.Errorf("%s-%d: last stable offset %d < %d", topic, p, l.Offset, end))
			}
		}
		return errors.Join(behind...)
	})
	return time.Since(start)
}
