package broker_test

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/testutil"
)

// TestDescribeTopicPartitions: the topics named (or all), in name order,
// with each partition's leader, replicas and ISR as Metadata gives them,
// paged by ResponsePartitionLimit with a cursor, and unknown topics
// reported.
func TestDescribeTopicPartitions(t *testing.T) {
	t.Parallel()
	b := testutil.StartBroker(t)
	testutil.CreateTopic(t, b.Admin(), "dtp-a", 3)
	testutil.CreateTopic(t, b.Admin(), "dtp-b", 2)
	cl := b.Client()
	describe := func(limit int32, cursor *kmsg.DescribeTopicPartitionsRequestCursor, topics ...string) *kmsg.DescribeTopicPartitionsResponse {
		t.Helper()
		req := kmsg.NewPtrDescribeTopicPartitionsRequest()
		req.ResponsePartitionLimit, req.Cursor = limit, cursor
		for _, name := range topics {
			rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
			rt.Topic = name
			req.Topics = append(req.Topics, rt)
		}
		return request[*kmsg.DescribeTopicPartitionsResponse](t, cl, req)
	}
	type part struct {
		topic string
		p     int32
	}
	collect := func(resp *kmsg.DescribeTopicPartitionsResponse) []part {
		t.Helper()
		var out []part
		for _, rt := range resp.Topics {
			if rt.ErrorCode != 0 {
				t.Fatalf("topic %v: %v", rt.Topic, kerr.ErrorForCode(rt.ErrorCode))
			}
			for _, rp := range rt.Partitions {
				if rp.ErrorCode != 0 || len(rp.Replicas) != 1 || rp.LeaderID != rp.Replicas[0] || !slices.Equal(rp.ISR, rp.Replicas) || rp.LeaderEpoch < 0 {
					t.Fatalf("%s-%d: %v leader %d replicas %v isr %v", *rt.Topic, rp.Partition, kerr.ErrorForCode(rp.ErrorCode), rp.LeaderID, rp.Replicas, rp.ISR)
				}
				out = append(out, part{*rt.Topic, rp.Partition})
			}
		}
		return out
	}
	want := []part{{"dtp-a", 0}, {"dtp-a", 1}, {"dtp-a", 2}, {"dtp-b", 0}, {"dtp-b", 1}}
	if got := collect(describe(0, nil, "dtp-b", "dtp-a")); !slices.Equal(got, want) {
		t.Fatalf("named topics: %v, want %v", got, want)
	}
	// Pages of two partitions, following the cursor.
	var got []part
	var cursor *kmsg.DescribeTopicPartitionsRequestCursor
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatal("no end to the pages")
		}
		resp := describe(2, cursor, "dtp-a", "dtp-b")
		page := collect(resp)
		if len(page) > 2 {
			t.Fatalf("page of %d partitions with a limit of 2", len(page))
		}
		got = append(got, page...)
		if resp.NextCursor == nil {
			break
		}
		cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: resp.NextCursor.Topic, Partition: resp.NextCursor.Partition}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("paged: %v, want %v", got, want)
	}
	// No topic named: every topic, ours among them.
	all := collect(describe(0, nil))
	for _, p := range want {
		if !slices.Contains(all, p) {
			t.Fatalf("listing of all topics misses %v: %v", p, all)
		}
	}
	resp := describe(0, nil, "dtp-missing")
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("unknown topic: %+v, want UNKNOWN_TOPIC_OR_PARTITION", resp.Topics)
	}
	resp = describe(0, &kmsg.DescribeTopicPartitionsRequestCursor{Topic: "dtp-b"}, "dtp-a")
	if len(resp.Topics) == 0 || resp.Topics[0].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("cursor outside the topics named: %+v, want INVALID_REQUEST", resp.Topics)
	}
}
