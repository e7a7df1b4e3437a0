package chaos

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"samsa/internal/record"
)

// This file holds what S-06 and S-07 need beyond cluster_test.go: a few
// etcd reads (replica assignment, broker registration), topic creation
// with configs, and the on-disk comparison of the replicas' logs.

// clusterKey returns the etcd key /samsa/<cluster-id>/<suffix>.
func (c *testCluster) clusterKey(ctx context.Context, suffix string) (string, error) {
	resp, err := c.etcdCli.Get(ctx, "/samsa/cluster-id")
	if err != nil {
		return "", fmt.Errorf("get cluster id: %w", err)
	}
	if len(resp.Kvs) == 0 {
		return "", errors.New("no cluster id in etcd")
	}
	return "/samsa/" + strings.TrimSpace(string(resp.Kvs[0].Value)) + "/" + suffix, nil
}

// assignment reads the replica list of topic/p from topics/<topic> in
// etcd; its order is the controller's order of preference when it elects
// a leader.
func (c *testCluster) assignment(topic string, p int32) []int32 {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	key, err := c.clusterKey(ctx, "topics/"+topic)
	if err != nil {
		c.t.Fatal(err)
	}
	resp, err := c.etcdCli.Get(ctx, key)
	if err != nil || len(resp.Kvs) == 0 {
		c.t.Fatalf("get %s: %v (%d keys)", key, err, len(resp.Kvs))
	}
	var v struct {
		Replicas [][]int32 `json:"replicas"`
	}
	if err := json.Unmarshal(resp.Kvs[0].Value, &v); err != nil {
		c.t.Fatalf("decode %s: %v", key, err)
	}
	if int(p) >= len(v.Replicas) {
		c.t.Fatalf("%s: no replicas for partition %d", key, p)
	}
	return v.Replicas[p]
}

// incarnation returns the incarnation in broker id's registration, "" if
// it is not registered. Every process start registers a new one.
func (c *testCluster) incarnation(id int32) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	key, err := c.clusterKey(ctx, "brokers/"+strconv.Itoa(int(id)))
	if err != nil {
		return "", err
	}
	resp, err := c.etcdCli.Get(ctx, key)
	if err != nil {
		return "", fmt.Errorf("get %s: %w", key, err)
	}
	if len(resp.Kvs) == 0 {
		return "", nil
	}
	var v struct {
		Incarnation string `json:"incarnation"`
	}
	if err := json.Unmarshal(resp.Kvs[0].Value, &v); err != nil {
		return "", fmt.Errorf("decode %s: %w", key, err)
	}
	return v.Incarnation, nil
}

// createTopicWith creates topic with replication factor 3 and the given
// topic configs, and waits for full ISR.
func (c *testCluster) createTopicWith(topic string, partitions int32, configs map[string]string) {
	c.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs()...))
	if err != nil {
		c.t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cfg := make(map[string]*string, len(configs))
	for k, v := range configs {
		cfg[k] = &v
	}
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, 3, cfg, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		c.t.Fatalf("create topic %s: %v", topic, err)
	}
	c.waitFullISR(topic, partitions)
}

// highWatermarks asks the cluster for the end offset (the leader's high
// watermark) of every partition of topic.
func (c *testCluster) highWatermarks(topic string, partitions int32) map[int32]int64 {
	c.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs()...))
	if err != nil {
		c.t.Fatal(err)
	}
	defer cl.Close()
	var ends kadm.ListedOffsets
	waitFor(c.t, 30*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var err error
		if ends, err = kadm.NewClient(cl).ListEndOffsets(ctx, topic); err != nil {
			return err
		}
		return ends.Error()
	})
	out := make(map[int32]int64)
	for p := range partitions {
		l, ok := ends.Lookup(topic, p)
		if !ok {
			c.t.Fatalf("no end offset for %s-%d", topic, p)
		}
		out[p] = l.Offset
	}
	return out
}

// stopAll sends SIGTERM to every running broker at once and waits for
// each to exit. A broker still running after 40 s fails the test and is
// killed, so its files can still be read.
func (c *testCluster) stopAll() {
	c.t.Helper()
	var running []*broker
	for _, b := range c.brokers {
		if b.running() {
			b.signal(syscall.SIGTERM)
			running = append(running, b)
		}
	}
	for _, b := range running {
		st, ok := b.waitExit(40 * time.Second)
		switch {
		case !ok:
			c.t.Errorf("%s still running 40s after SIGTERM; killing it", b.name)
			b.kill()
		case !st.Success():
			c.t.Errorf("%s exited with %v after SIGTERM", b.name, st)
		}
	}
}

// diskBatch is one record batch read from a replica's segment file.
type diskBatch struct {
	batch   record.Batch
	segment int64 // base offset in the segment's file name
}

// diskSegment is one .log file of a replica, as read.
type diskSegment struct {
	base int64
	size int64
}

// replicaLog is one replica's log of one partition read from disk: the
// batch stream of all its segments in order.
type replicaLog struct {
	node     int32
	batches  []diskBatch
	segments []diskSegment
	// torn is set when the last segment ends in a partial batch, which
	// recovery would cut off.
	torn int64
}

// logEnd is the offset after the last whole batch.
func (l *replicaLog) logEnd() int64 {
	if len(l.batches) == 0 {
		return 0
	}
	return l.batches[len(l.batches)-1].batch.LastOffset() + 1
}

var segmentFile = regexp.MustCompile(`^([0-9]{20})\.log$`)

// readReplicaLog reads every segment of topic/p under a broker's log dir
// (see internal/storage doc.go for the layout): batch after batch with
// record.Split (which checks that the header fits), checking each CRC.
// Files awaiting deletion are skipped.
func readReplicaLog(node int32, logDir, topic string, p int32) (*replicaLog, error) {
	dir := filepath.Join(logDir, topic+"-"+strconv.Itoa(int(p)))
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read partition dir: %w", err)
	}
	var bases []int64
	for _, e := range entries {
		m := segmentFile.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		base, err := strconv.ParseInt(m[1], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("segment name %s: %w", e.Name(), err)
		}
		bases = append(bases, base)
	}
	slices.Sort(bases)
	l := &replicaLog{node: node, torn: -1}
	for i, base := range bases {
		data, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("%020d.log", base)))
		if err != nil {
			return nil, fmt.Errorf("read segment %d: %w", base, err)
		}
		l.segments = append(l.segments, diskSegment{base: base, size: int64(len(data))})
		for rest, pos := data, 0; len(rest) > 0; {
			b, next, err := record.Split(rest)
			if errors.Is(err, record.ErrShortBatch) && i == len(bases)-1 {
				l.torn = base
				break
			}
			if err != nil {
				return nil, fmt.Errorf("segment %d position %d: %w", base, pos, err)
			}
			if got, want := b.CRC(), b.ComputeCRC(); got != want {
				return nil, fmt.Errorf("segment %d offset %d: crc %#08x, computed %#08x", base, b.BaseOffset(), got, want)
			}
			l.batches = append(l.batches, diskBatch{batch: b, segment: base})
			rest, pos = next, pos+len(b)
		}
	}
	return l, nil
}

// partitionCompare is what compareReplicaLogs found for one partition.
type partitionCompare struct {
	partition int32
	hw        int64 // the leader's high watermark before the brokers stopped
	end       int64 // compared below this offset: the smallest log end
	batches   int   // batches compared (per replica)
	bytes     int64 // bytes compared (per replica)
	sum       string
	ends      map[int32]int64
}

// compareReplicaLogs reads the log of every partition of topic from each
// broker's data dir (the brokers must be stopped) and checks that the
// committed prefix is the same on all of them, batch by batch and byte for
// byte. The committed prefix is every batch below the smallest log end of
// the replicas, which must be at least the partition's high watermark hw
// (read from the leader before the brokers stopped).
//
// Segments may roll at different offsets on different replicas (a
// follower rolls on its own appends), so the batch stream is compared,
// not the files. The test log gets the checksum (SHA-256 of the batch
// stream) per partition, and per replica the checksum of the committed
// bytes of each segment. It returns the total number of bytes compared,
// over all replicas.
//
// Every batch must pass its CRC, the stream must start at offset 0 and
// have no gap or overlap (no compaction or retention runs in these
// tests), and a torn tail may only lie above the committed prefix.
//
// Reference: KIP-101, KIP-279 (replica logs agree below the HW).
func compareReplicaLogs(c *testCluster, topic string, partitions int32, hw map[int32]int64) (total int64) {
	t := c.t
	t.Helper()
	for p := range partitions {
		var logs []*replicaLog
		for _, b := range c.brokers {
			l, err := readReplicaLog(b.id, filepath.Join(b.dir, "data"), topic, p)
			if err != nil {
				t.Errorf("%s-%d on broker %d: %v", topic, p, b.id, err)
				continue
			}
			logs = append(logs, l)
		}
		if len(logs) != len(c.brokers) {
			continue
		}
		pc := partitionCompare{partition: p, hw: hw[p], end: -1, ends: make(map[int32]int64)}
		for _, l := range logs {
			e := l.logEnd()
			pc.ends[l.node] = e
			if pc.end < 0 || e < pc.end {
				pc.end = e
			}
		}
		if pc.end < pc.hw {
			t.Errorf("%s-%d: log ends %v, below the high watermark %d", topic, p, pc.ends, pc.hw)
		}
		for _, l := range logs {
			if l.torn >= 0 {
				t.Logf("%s-%d on broker %d: torn batch at the end of segment %d", topic, p, l.node, l.torn)
			}
			if err := checkContiguous(l, pc.end); err != nil {
				t.Errorf("%s-%d on broker %d: %v", topic, p, l.node, err)
			}
		}
		ref := logs[0]
		n := committedCount(ref, pc.end)
		same := true
		for _, l := range logs[1:] {
			if m := committedCount(l, pc.end); m != n {
				same = false
				t.Errorf("%s-%d: broker %d has %d batches below %d, broker %d has %d",
					topic, p, ref.node, n, pc.end, l.node, m)
			}
			for i := range min(n, committedCount(l, pc.end)) {
				a, b := ref.batches[i].batch, l.batches[i].batch
				if !bytes.Equal(a, b) {
					same = false
					t.Errorf("%s-%d: batch %d differs: broker %d has offsets [%d, %d] epoch %d crc %#08x %d bytes; broker %d has [%d, %d] epoch %d crc %#08x %d bytes",
						topic, p, i, ref.node, a.BaseOffset(), a.LastOffset(), a.LeaderEpoch(), a.CRC(), len(a),
						l.node, b.BaseOffset(), b.LastOffset(), b.LeaderEpoch(), b.CRC(), len(b))
					break
				}
			}
		}
		h := sha256.New()
		for _, db := range ref.batches[:n] {
			h.Write(db.batch)
			pc.bytes += int64(len(db.batch))
		}
		pc.batches = n
		pc.sum = hex.EncodeToString(h.Sum(nil))[:16]
		total += pc.bytes * int64(len(logs))
		verdict := "identical"
		if !same {
			verdict = "NOT identical"
		}
		t.Logf("%s-%d: hw %d, log ends %v; %d batches, %d bytes below %d %s on %d replicas, sha256 %s (broker %d)",
			topic, p, pc.hw, pc.ends, pc.batches, pc.bytes, pc.end, verdict, len(logs), pc.sum, ref.node)
		for _, l := range logs {
			t.Logf("%s-%d broker %d segments: %s", topic, p, l.node, segmentSums(l, pc.end))
		}
	}
	return total
}

// committedCount returns how many of l's batches start below end.
func committedCount(l *replicaLog, end int64) int {
	n := 0
	for _, db := range l.batches {
		if db.batch.BaseOffset() >= end {
			break
		}
		n++
	}
	return n
}

// checkContiguous checks that the batches below end start at offset 0 and
// follow each other without a gap or an overlap.
func checkContiguous(l *replicaLog, end int64) error {
	next := int64(0)
	for _, db := range l.batches {
		b := db.batch
		if b.BaseOffset() >= end {
			return nil
		}
		if b.BaseOffset() != next {
			return fmt.Errorf("batch at offset %d in segment %d, expected %d", b.BaseOffset(), db.segment, next)
		}
		next = b.LastOffset() + 1
	}
	return nil
}

// segmentSums describes each segment of l: its base offset, the batches
// and bytes it holds below end, its file size, and the SHA-256 of those
// bytes (first 12 hex digits).
func segmentSums(l *replicaLog, end int64) string {
	var parts []string
	for _, s := range l.segments {
		h := sha256.New()
		batches, size := 0, 0
		for _, db := range l.batches {
			if db.segment == s.base && db.batch.BaseOffset() < end {
				h.Write(db.batch)
				batches++
				size += len(db.batch)
			}
		}
		parts = append(parts, fmt.Sprintf("%d:%d batches/%d of %d B/%s", s.base, batches, size, s.size, hex.EncodeToString(h.Sum(nil))[:12]))
	}
	return strings.Join(parts, " ")
}

// firstAckAfter returns when the first send to partition p acknowledged at
// or after from was acknowledged.
func (w *workload) firstAckAfter(p int32, from time.Time) (time.Time, bool) {
	var first time.Time
	for _, a := range w.acksBetween(p, from, from.Add(24*time.Hour)) {
		if first.IsZero() || a.at.Before(first) {
			first = a.at
		}
	}
	return first, !first.IsZero()
}

// waitServing waits until b answers a Metadata request, whatever brokers
// it lists (registrations of killed brokers may not have expired yet).
func (c *testCluster) waitServing(b *broker) {
	c.t.Helper()
	waitFor(c.t, readyTimeout, func() error {
		if err := b.exited(); err != nil {
			return err
		}
		_, err := metadataFrom(b.addr())
		return err
	})
}

// waitCommitted waits up to d until group has committed at least ends[p]
// on every partition p of topic.
func waitCommitted(t *testing.T, adm *kadm.Client, group, topic string, ends map[int32]int64, d time.Duration) {
	t.Helper()
	waitFor(t, d, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		offs, err := adm.FetchOffsets(ctx, group)
		if err != nil {
			return err
		}
		for p, end := range ends {
			if o, ok := offs.Lookup(topic, p); !ok || o.At < end {
				return fmt.Errorf("%s-%d committed %d of %d", topic, p, o.At, end)
			}
		}
		return nil
	})
}
