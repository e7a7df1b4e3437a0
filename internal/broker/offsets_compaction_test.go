package broker_test

import (
	"encoding/binary"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/testutil"
)

// offsetsLogKey is one record of __consumer_offsets, as the cleaner sees
// it: an offset commit key (group, topic, partition) or a group metadata
// key (group, partition -1).
type offsetsLogKey struct {
	group, topic string
	partition    int32
}

// readOffsetsLog reads __consumer_offsets-0 from its start to its high
// watermark and returns the records in order: each key with its value
// (nil for a tombstone).
func readOffsetsLog(t *testing.T, addr string) (keys []offsetsLogKey, vals [][]byte) {
	t.Helper()
	ends := kadm.NewClient(testutil.NewClient(t, addr))
	lo, err := ends.ListEndOffsets(ctxT(t, 10*time.Second), "__consumer_offsets")
	if err != nil {
		t.Fatal(err)
	}
	end, _ := lo.Lookup("__consumer_offsets", 0)
	if end.Err != nil {
		t.Fatal(end.Err)
	}
	cl := testutil.NewClient(t, addr,
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"__consumer_offsets": {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxWait(100*time.Millisecond))
	defer cl.Close()
	ctx := ctxT(t, 30*time.Second)
	for next := int64(-1); next < end.Offset-1; {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read __consumer_offsets: at %d of %d", next, end.Offset)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("read __consumer_offsets: %v", err) })
		fs.EachRecord(func(r *kgo.Record) {
			next = r.Offset
			if len(r.Key) < 2 {
				t.Fatalf("__consumer_offsets record at %d with a %d-byte key", r.Offset, len(r.Key))
			}
			k := offsetsLogKey{partition: -1}
			switch v := int16(binary.BigEndian.Uint16(r.Key)); v {
			case 0, 1:
				var ok kmsg.OffsetCommitKey
				if err := ok.ReadFrom(r.Key); err != nil {
					t.Fatalf("offset commit key at %d: %v", r.Offset, err)
				}
				k = offsetsLogKey{ok.Group, ok.Topic, ok.Partition}
			case 2:
				var gk kmsg.GroupMetadataKey
				if err := gk.ReadFrom(r.Key); err != nil {
					t.Fatalf("group metadata key at %d: %v", r.Offset, err)
				}
				k.group = gk.Group
			default:
				return // another record type (transactions' markers are not records)
			}
			keys = append(keys, k)
			vals = append(vals, r.Value)
		})
	}
	return keys, vals
}

// TestOffsetsCompactionUnderChurnKeepsLatestCommits is TESTPLAN S-23:
// __consumer_offsets is compacted while groups commit, are deleted (some
// come back and commit again) and have offsets deleted. The latest commit
// of every live group and partition survives the cleaner and a restart
// (the coordinator rebuilds from the compacted log), nothing deleted comes
// back, and tombstones stay for delete.retention.ms before the cleaner
// drops them.
func TestOffsetsCompactionUnderChurnKeepsLatestCommits(t *testing.T) {
	t.Parallel()
	const retention = 3 * time.Second
	b := testutil.StartBroker(t,
		"offsets.topic.num.partitions=1", "offsets.topic.replication.factor=1",
		"offsets.topic.segment.bytes=4096", "log.cleaner.backoff.ms=50",
		"log.cleaner.min.cleanable.ratio=0.01",
		fmt.Sprintf("log.cleaner.delete.retention.ms=%d", retention.Milliseconds()))
	const topic, partitions = "s23", 8
	adm := b.Admin()
	testutil.CreateTopic(t, adm, topic, partitions)
	ctx := ctxT(t, 2*time.Minute)

	// want[group][partition] is the latest commit; a group absent from
	// want must have no offsets at all.
	want := map[string]map[int32]int64{}
	commit := func(group string, round int, parts int32) {
		t.Helper()
		os := make(kadm.Offsets)
		for p := range parts {
			os.Add(kadm.Offset{Topic: topic, Partition: p, At: int64(round*100) + int64(p), LeaderEpoch: -1})
		}
		resp, err := adm.CommitOffsets(ctx, group, os)
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			t.Fatalf("commit %s round %d: %v", group, round, err)
		}
		if want[group] == nil {
			want[group] = map[int32]int64{}
		}
		for p := range parts {
			want[group][p] = int64(round*100) + int64(p)
		}
	}
	live := []string{"live-0", "live-1", "live-2", "live-3", "live-4"}
	gone := []string{"gone-0", "gone-1", "gone-2"}         // deleted, never back
	reborn := []string{"reborn-0", "reborn-1", "reborn-2"} // deleted, then commit again
	written := 0
	// The tombstones are looked for a third of delete.retention.ms after
	// the deletes, while the cleaner runs (every 50 ms here): a cleaner
	// that dropped them at once fails it. Later, the rounds after them on
	// a loaded machine (the race detector, the rest of the package in
	// parallel) can outlast delete.retention.ms, after which the cleaner
	// may rightly have dropped them.
	sawTombstone := false
	lookForTombstones := func() {
		keys, vals := readOffsetsLog(t, b.Addr())
		for i, k := range keys {
			if slices.Contains(gone, k.group) && vals[i] == nil {
				sawTombstone = true
			}
		}
	}
	for round := 1; round <= 60; round++ {
		for _, g := range live {
			parts := int32(partitions)
			if g == "live-0" && round > 40 {
				parts = partitions - 1 // its last partition's offset is deleted at round 40
			}
			commit(g, round, parts)
			written += int(parts)
		}
		if round <= 20 || round > 30 {
			for _, g := range reborn {
				commit(g, round, partitions)
				written += partitions
			}
		}
		if round <= 20 {
			for _, g := range gone {
				commit(g, round, partitions)
				written += partitions
			}
		}
		switch round {
		case 20:
			groups := append(append([]string{}, gone...), reborn...)
			resps, err := adm.DeleteGroups(ctx, groups...)
			if err == nil {
				err = resps.Error()
			}
			if err != nil {
				t.Fatalf("delete groups: %v", err)
			}
			for _, g := range groups {
				delete(want, g)
			}
			time.Sleep(retention / 3)
			lookForTombstones()
		case 40:
			resps, err := adm.DeleteOffsets(ctx, "live-0", kadm.TopicsSet{topic: {partitions - 1: {}}})
			if err == nil {
				err = resps.Error()
			}
			if err != nil {
				t.Fatalf("delete offsets: %v", err)
			}
			delete(want["live-0"], partitions-1)
		}
	}

	check := func(when string) {
		t.Helper()
		listed, err := adm.ListGroups(ctx)
		if err != nil {
			t.Fatalf("%s: list groups: %v", when, err)
		}
		for _, g := range gone {
			if _, ok := listed[g]; ok {
				t.Errorf("%s: deleted group %s is listed", when, g)
			}
		}
		for _, g := range append(append(append([]string{}, live...), gone...), reborn...) {
			resp, err := adm.FetchOffsets(ctx, g)
			if err != nil {
				t.Fatalf("%s: fetch offsets of %s: %v", when, g, err)
			}
			got := map[int32]int64{}
			resp.Each(func(o kadm.OffsetResponse) {
				if o.Err != nil {
					t.Fatalf("%s: %s %s/%d: %v", when, g, o.Topic, o.Partition, o.Err)
				}
				if o.At >= 0 {
					got[o.Partition] = o.At
				}
			})
			if fmt.Sprint(got) != fmt.Sprint(want[g]) && !(len(got) == 0 && len(want[g]) == 0) {
				t.Errorf("%s: %s committed %v, want %v", when, g, got, want[g])
			}
		}
	}
	check("before compaction")

	// Keep a filler group committing so that segments roll and the
	// cleaner has dirty segments to clean, until the log holds each live
	// key once and, past delete.retention.ms, no record of the groups
	// gone for good.
	fill := 0
	deadline := time.Now().Add(90 * time.Second)
	var keys []offsetsLogKey
	var vals [][]byte
	for {
		for range 10 {
			fill++
			commit("filler", fill, partitions)
		}
		keys, vals = readOffsetsLog(t, b.Addr())
		count := map[offsetsLogKey]int{}
		goneRecords := 0
		for i, k := range keys {
			count[k]++
			for _, g := range gone {
				if k.group == g {
					goneRecords++
					if vals[i] == nil {
						sawTombstone = true
					}
				}
			}
		}
		dup := 0
		for k, n := range count {
			if n > 1 && k.group != "filler" {
				dup++
			}
		}
		if dup == 0 && goneRecords == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 90 s: %d records, %d keys of other groups than the filler still twice, %d records of deleted groups", len(keys), dup, goneRecords)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !sawTombstone {
		t.Errorf("the deleted groups' tombstones were never seen in the log before the cleaner dropped them")
	}
	t.Logf("S-23: %d commit records written, %d records left after compaction (%d filler commits)", written, len(keys), fill*partitions)
	if len(keys) > written/4 {
		t.Fatalf("%d records left of %d written: the log was not compacted", len(keys), written)
	}
	check("after compaction")

	b.Restart()
	adm = b.Admin()
	check("after restart")
}
