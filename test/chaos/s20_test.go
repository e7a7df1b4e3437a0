package chaos

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// s20TopicConfigs make S-20's topic compacted and its cleaner quick:
// segments of 4 KiB roll every few seconds under the workload, any dirty
// part is cleanable, and markers go 1 s after their first cleaning.
var s20TopicConfigs = map[string]string{
	"cleanup.policy":            "compact",
	"segment.bytes":             "4096",
	"min.cleanable.dirty.ratio": "0.01",
	"delete.retention.ms":       "1000",
}

// compactBound bounds how long after the last stable offsets moved past
// a hanging transaction the cleaner of each partition's leader may take
// to clean past the transaction's first offset: the segment holding it
// must roll (a few seconds of workload) and a cleaner pass run
// (log.cleaner.backoff.ms is 500 ms in these clusters).
const compactBound = 20 * time.Second

// TestS20ProducerKilledMidTransaction is TESTPLAN S-20: a librdkafka
// transactional producer is killed with SIGKILL while its transaction is
// open on every partition of a compacted topic, beside producers that
// keep committing; twice, or (long profile) one producer after another
// for 5 minutes. The open transaction holds every partition's last
// stable offset back until the coordinator aborts it: that must happen
// within the transaction timeout plus 10 s of the kill. Meanwhile the
// cleaner must not clean past the transaction's first offset; once it is
// aborted, each partition leader's cleaner checkpoint must move past that
// offset within compactBound, and the log read at read_uncommitted below
// the checkpoint must hold none of the killed producers' records nor any
// record of a transaction the workload aborted. The killed producer's
// records must never be visible at read_committed, and the other
// transactions must be whole.
func TestS20ProducerKilledMidTransaction(t *testing.T) {
	const (
		topic      = "s20"
		partitions = 5
	)
	python := requireLibrdkafka(t)
	c := startCluster(t)
	c.createTopicWith(topic, partitions, s20TopicConfigs)
	w := startTxnWorkload(t, c, topic, partitions, "s20-a")
	w.waitCommits(3, 60*time.Second)

	bound := txnTimeout + 10*time.Second
	var hangValues []string
	// Two kills (short), or kills one after another for 5 minutes (long).
	faultsEnd := time.Now().Add(pick(0, 5*time.Minute))
	kills := 0
	for i := 0; i < 2 || time.Now().Before(faultsEnd); i++ {
		kills++
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
		first, err := parseHangOffsets(line, partitions)
		if err != nil {
			cancel()
			_ = cmd.Wait()
			t.Fatalf("txn_hang.py %s: %v\n%s", id, err, stderr.String())
		}
		for p := range partitions {
			hangValues = append(hangValues, fmt.Sprintf("hang-%s-%d", id, p))
		}
		// The open transaction's first record on each partition is at
		// first[p]: the LSO is held there now, and must move past the
		// partition's end within the bound.
		ends := c.highWatermarks(topic, partitions)
		// At read_uncommitted the open transaction's records are there
		// (so that their absence after cleaning means something).
		for p, v := range readAt(t, c, topic, first) {
			if want := fmt.Sprintf("hang-%s-%d", id, p); v != want {
				t.Errorf("kill %d: %s-%d offset %d at read_uncommitted holds %q, want %q", i, topic, p, first[p], v, want)
			}
		}
		cancel() // SIGKILL
		_ = cmd.Wait()
		killed := time.Now()
		held, early := waitStableCleanerHeld(t, c, topic, ends, first, bound+30*time.Second)
		took := time.Since(killed)
		t.Logf("kill %d: producer %s killed with its transaction open at %v; every partition stable past %v after %s; "+
			"cleaner checkpoints while it was open %v", i, id, first, ends, took.Round(time.Millisecond), held)
		if took > bound {
			t.Errorf("kill %d: last stable offsets stuck %s after the kill, above the bound of %s", i, took, bound)
		}
		for _, e := range early {
			t.Errorf("kill %d: the cleaner cleaned past an open transaction: %s", i, e)
		}

		stable := time.Now()
		ck := waitCleanedPast(t, c, topic, first, compactBound+30*time.Second)
		cleanTook := time.Since(stable)
		t.Logf("kill %d: every leader's cleaner checkpoint past the aborted transaction %s after the last stable offsets moved: %v",
			i, cleanTook.Round(time.Millisecond), ck)
		if cleanTook > compactBound {
			t.Errorf("kill %d: compaction past the aborted transaction took %s, above the bound of %s", i, cleanTook, compactBound)
		}
		aborted := append(w.values(txnAborted), hangValues...)
		n, left := readCleaned(t, c, topic, ck, aborted)
		t.Logf("kill %d: %d records read at read_uncommitted below the cleaner checkpoints; %d aborted records left there",
			i, n, len(left))
		for _, l := range left {
			t.Errorf("kill %d: aborted record in the cleaned part of the log: %s", i, l)
		}
	}
	// The killed producers' records are not the workload's: check counts
	// any of them visible at read_committed as unexpected.
	r := w.check()
	t.Logf("S-20: %d producers killed mid-transaction; %v", kills, r)
}

// parseHangOffsets reads txn_hang.py's "open P:O P:O ..." line: the
// offset of its open transaction's record on each partition.
func parseHangOffsets(line string, partitions int32) (map[int32]int64, error) {
	f := strings.Fields(line)
	if len(f) == 0 || f[0] != "open" {
		return nil, fmt.Errorf("%q", line)
	}
	out := make(map[int32]int64)
	for _, po := range f[1:] {
		ps, offs, ok := strings.Cut(po, ":")
		p, err1 := strconv.ParseInt(ps, 10, 32)
		o, err2 := strconv.ParseInt(offs, 10, 64)
		if !ok || err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%q: bad offset %q", line, po)
		}
		out[int32(p)] = o
	}
	if len(out) != int(partitions) {
		return nil, fmt.Errorf("%q: %d partitions, want %d", line, len(out), partitions)
	}
	return out, nil
}

// waitStableCleanerHeld waits until every partition's last stable offset
// is at least its offset in ends. While it waits it also reads each
// partition leader's cleaner checkpoint and then the last stable offsets:
// a checkpoint past first[p] read before a last stable offset still at or
// below first[p] means the cleaner cleaned into an open transaction, and
// is returned. held is each partition's last checkpoint read while its
// last stable offset was still at or below first[p].
func waitStableCleanerHeld(t *testing.T, c *testCluster, topic string, ends, first map[int32]int64, d time.Duration) (held map[int32]int64, early []string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	held = make(map[int32]int64)
	waitFor(t, d, func() error {
		ck, ckErr := c.cleanerCheckpoints(topic, first)
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
			if ckErr == nil && ok && l.Err == nil && l.Offset <= first[p] {
				held[p] = ck[p]
			}
			if ckErr == nil && ok && l.Err == nil && l.Offset <= first[p] && ck[p] > first[p] && len(early) < 10 {
				early = append(early, fmt.Sprintf("%s-%d: cleaner checkpoint %d, then last stable offset %d, open transaction at %d",
					topic, p, ck[p], l.Offset, first[p]))
			}
		}
		return errors.Join(behind...)
	})
	return held, early
}

// waitCleanedPast waits until the cleaner checkpoint of every partition's
// leader is past its offset in first, and returns the checkpoints.
func waitCleanedPast(t *testing.T, c *testCluster, topic string, first map[int32]int64, d time.Duration) map[int32]int64 {
	t.Helper()
	var ck map[int32]int64
	waitFor(t, d, func() error {
		var err error
		if ck, err = c.cleanerCheckpoints(topic, first); err != nil {
			return err
		}
		var behind []error
		for p, o := range first {
			if ck[p] <= o {
				behind = append(behind, fmt.Errorf("%s-%d: cleaner checkpoint %d <= %d", topic, p, ck[p], o))
			}
		}
		return errors.Join(behind...)
	})
	return ck
}

// cleanerCheckpoints reads, for each partition in parts, the
// cleaner-offset-checkpoint file in the log dir of the partition's
// leader (as etcd names it): Kafka's checkpoint text format, a version
// line (0), a count line, then "topic partition offset" lines. A
// partition not in the file (never cleaned) has checkpoint 0.
func (c *testCluster) cleanerCheckpoints(topic string, parts map[int32]int64) (map[int32]int64, error) {
	files := make(map[int32]map[int32]int64) // by broker
	out := make(map[int32]int64, len(parts))
	for p := range parts {
		st, err := c.state(topic, p)
		if err != nil {
			return nil, err
		}
		ck, ok := files[st.Leader]
		if !ok {
			if st.Leader < 0 || int(st.Leader) >= len(c.brokers) {
				return nil, fmt.Errorf("%s-%d: leader %d", topic, p, st.Leader)
			}
			if ck, err = readCleanerCheckpoint(filepath.Join(c.brokers[st.Leader].dir, "data", "cleaner-offset-checkpoint"), topic); err != nil {
				return nil, err
			}
			files[st.Leader] = ck
		}
		out[p] = ck[p]
	}
	return out, nil
}

// readCleanerCheckpoint parses a cleaner-offset-checkpoint file and
// returns topic's offsets by partition; a missing file holds none.
func readCleanerCheckpoint(path, topic string) (map[int32]int64, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return map[int32]int64{}, nil
	}
	if err != nil {
		return nil, err
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) < 2 || lines[0] != "0" {
		return nil, fmt.Errorf("%s: bad header %q", path, b)
	}
	n, err := strconv.Atoi(lines[1])
	if err != nil || n != len(lines)-2 {
		return nil, fmt.Errorf("%s: count %q for %d entries", path, lines[1], len(lines)-2)
	}
	out := make(map[int32]int64)
	for _, l := range lines[2:] {
		f := strings.Fields(l)
		if len(f) != 3 {
			return nil, fmt.Errorf("%s: bad line %q", path, l)
		}
		p, err1 := strconv.ParseInt(f[1], 10, 32)
		o, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%s: bad line %q", path, l)
		}
		if f[0] == topic {
			out[int32(p)] = o
		}
	}
	return out, nil
}

// readCleaned reads every partition of topic from its start at
// read_uncommitted up to its offset in below (the cleaner checkpoints)
// and returns how many records it read there and which of them hold one
// of the values in gone, with their offsets.
func readCleaned(t *testing.T, c *testCluster, topic string, below map[int32]int64, gone []string) (n int, left []string) {
	t.Helper()
	isGone := make(map[string]bool, len(gone))
	for _, v := range gone {
		isGone[v] = true
	}
	offsets := make(map[int32]kgo.Offset, len(below))
	todo := make(map[int32]bool, len(below))
	for p := range below {
		offsets[p] = kgo.NewOffset().AtStart()
		todo[p] = true
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs()...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.FetchIsolationLevel(kgo.ReadUncommitted()), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// The workload keeps writing, so a record at or past each checkpoint
	// comes.
	for len(todo) > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read_uncommitted: partitions %v not read up to their cleaner checkpoints %v", todo, below)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset >= below[r.Partition] {
				delete(todo, r.Partition)
				return
			}
			n++
			if isGone[string(r.Value)] {
				left = append(left, fmt.Sprintf("%s-%d offset %d: %s", topic, r.Partition, r.Offset, r.Value))
			}
		})
	}
	sort.Strings(left)
	return n, left
}

// readAt reads at read_uncommitted the first record at or after each
// partition's offset in at and returns its value when it is at that
// offset ("" otherwise).
func readAt(t *testing.T, c *testCluster, topic string, at map[int32]int64) map[int32]string {
	t.Helper()
	offsets := make(map[int32]kgo.Offset, len(at))
	for p, o := range at {
		offsets[p] = kgo.NewOffset().At(o)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs()...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.FetchIsolationLevel(kgo.ReadUncommitted()), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out := make(map[int32]string, len(at))
	for len(out) < len(at) {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read_uncommitted at %v: read only %v", at, out)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if _, ok := out[r.Partition]; ok {
				return
			}
			out[r.Partition] = ""
			if r.Offset == at[r.Partition] {
				out[r.Partition] = string(r.Value)
			}
		})
	}
	return out
}
