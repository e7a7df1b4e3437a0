package group

import (
	"context"
	"encoding/binary"
	"errors"
	"slices"
	"testing"

	"samsa/internal/coordrec"
)

// shareKey is a share group record key of type version for group and
// (for member records) member, as the broker encodes them.
func shareKey(version int16, group, member string) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(version))
	b = coordrec.AppendStr16(b, group)
	if member != "" {
		b = coordrec.AppendStr16(b, member)
	}
	return b
}

// TestLoadHandsShareGroupRecordsOverInLogOrder: the share group records
// a coordinator appended (AppendShareRecords) are handed, by group and in
// log order, to Config.ShareRecords by the next coordinator's load, next
// to the offsets of other groups, which they do not disturb; an append
// where the partition is not served is NOT_COORDINATOR.
func TestLoadHandsShareGroupRecordsOverInLogOrder(t *testing.T) {
	log := &memLog{}
	c := newLoaded(t, testConfig(), log)
	ctx := context.Background()
	sg1 := []KV{
		{Key: shareKey(10, "sg", "m"), Value: []byte{0, 0, 1}},
		{Key: shareKey(11, "sg", ""), Value: []byte{0, 0, 0, 0, 0, 1, 0}},
	}
	sg2 := []KV{{Key: shareKey(10, "sg", "m"), Value: nil}}
	if err := c.AppendShareRecords(ctx, "sg", sg1); err != nil {
		t.Fatal(err)
	}
	if _, err := c.OffsetCommit(ctx, OffsetCommitRequest{Group: "cg", Generation: -1,
		Topics: []OffsetCommitTopic{{Topic: "t", Partitions: []OffsetCommitPartition{{Partition: 0, Offset: 7}}}}}); err != nil {
		t.Fatal(err)
	}
	if err := c.AppendShareRecords(ctx, "sg", sg2); err != nil {
		t.Fatal(err)
	}
	if err := c.AppendShareRecords(ctx, "other", []KV{{Key: shareKey(15, "other", ""), Value: []byte{0, 0, 1, 1, 0}}}); err != nil {
		t.Fatal(err)
	}

	var got map[string][]KV
	var part int32 = -1
	cfg := testConfig()
	cfg.ShareRecords = func(p int32, groups map[string][]KV) { part, got = p, groups }
	next := newLoaded(t, cfg, log)
	want := append(slices.Clone(sg1), sg2...)
	if part != 0 || len(got) != 2 || len(got["sg"]) != len(want) || len(got["other"]) != 1 {
		t.Fatalf("handed partition %d, groups %v", part, got)
	}
	for i, kv := range got["sg"] {
		if string(kv.Key) != string(want[i].Key) || string(kv.Value) != string(want[i].Value) || (kv.Value == nil) != (want[i].Value == nil) {
			t.Fatalf("record %d: %x=%x, want %x=%x", i, kv.Key, kv.Value, want[i].Key, want[i].Value)
		}
	}
	res, err := next.OffsetFetch(ctx, OffsetFetchRequest{Group: "cg"})
	if err != nil || len(res.Topics) != 1 || res.Topics[0].Partitions[0].Offset != 7 {
		t.Fatalf("offsets after the load: %+v %v", res, err)
	}
	idle := NewCoordinator(testConfig())
	defer idle.Close()
	if err := idle.AppendShareRecords(ctx, "sg", sg1); !errors.Is(err, ErrNotCoordinator) {
		t.Fatalf("append without the partition: %v", err)
	}
}
