package broker_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"samsa/internal/testutil"
)

// offsetForEpoch sends one OffsetForLeaderEpoch at version v for one
// partition and returns its answer.
func offsetForEpoch(t *testing.T, cl *kgo.Client, v int16, topic string, partition, current, epoch int32) kmsg.OffsetForLeaderEpochResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.Version = v
	req.ReplicaID = -1
	rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	rp.Partition = partition
	rp.CurrentLeaderEpoch = current
	rp.LeaderEpoch = epoch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	// Straight to the broker: kgo's sharding would answer for unknown
	// topics itself.
	kresp, err := cl.SeedBrokers()[0].Request(ctxT(t, 10*time.Second), req)
	if err != nil {
		t.Fatalf("OffsetForLeaderEpoch: %v", err)
	}
	resp := kresp.(*kmsg.OffsetForLeaderEpochResponse)
	if resp.Version != v {
		t.Fatalf("response version %d, want %d", resp.Version, v)
	}
	if len(resp.Topics) != 1 || resp.Topics[0].Topic != topic || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("OffsetForLeaderEpoch: malformed response %+v", resp.Topics)
	}
	return resp.Topics[0].Partitions[0]
}

// leaderEpoch returns the partition's leader epoch from Metadata.
func leaderEpoch(t *testing.T, cl *kgo.Client, topic string, partition int32) int32 {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp := request[*kmsg.MetadataResponse](t, cl, req)
	for _, p := range resp.Topics[0].Partitions {
		if p.Partition == partition {
			return p.LeaderEpoch
		}
	}
	t.Fatalf("metadata: no partition %d", partition)
	return -1
}

// Reference: KIP-101 (end offset of an epoch), KIP-279 (the epoch
// answered), KIP-320 (CurrentLeaderEpoch fencing).
func TestOffsetForLeaderEpochAnswersFromTheLeaderEpochCache(t *testing.T) {
	b := testutil.StartBroker(t)
	cl := b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	const topic = "ofle"
	testutil.CreateTopic(t, b.Admin(), topic, 2)
	for i := 0; i < 10; i++ {
		produceSync(t, cl, &kgo.Record{Topic: topic, Partition: 0, Value: []byte(fmt.Sprint(i))})
	}
	cur := leaderEpoch(t, cl, topic, 0)
	if cur < 0 {
		t.Fatalf("leader epoch %d", cur)
	}

	for v := int16(0); v <= 4; v++ {
		t.Run(fmt.Sprintf("v=%d", v), func(t *testing.T) {
			// Pin the version: kgo sends the highest both sides support.
			vs := kversion.Stable()
			vs.SetMaxKeyVersion(int16(kmsg.OffsetForLeaderEpoch), v)
			cl := b.Client(kgo.MaxVersions(vs))
			// The current epoch ends at the log end offset.
			p := offsetForEpoch(t, cl, v, topic, 0, -1, cur)
			if p.ErrorCode != 0 || p.EndOffset != 10 {
				t.Fatalf("epoch %d: error %v end offset %d, want 10", cur, kerr.ErrorForCode(p.ErrorCode), p.EndOffset)
			}
			if wantEpoch := map[bool]int32{true: cur, false: -1}[v >= 1]; p.LeaderEpoch != wantEpoch {
				t.Fatalf("epoch %d: LeaderEpoch %d, want %d", cur, p.LeaderEpoch, wantEpoch)
			}
			// An empty partition still answers for the current epoch.
			if p := offsetForEpoch(t, cl, v, topic, 1, -1, cur); p.ErrorCode != 0 || p.EndOffset != 0 {
				t.Fatalf("empty partition: error %v end offset %d, want 0", kerr.ErrorForCode(p.ErrorCode), p.EndOffset)
			}
			// An epoch the leader has not reached is undefined.
			if p := offsetForEpoch(t, cl, v, topic, 0, -1, cur+1); p.ErrorCode != 0 || p.EndOffset != -1 {
				t.Fatalf("future epoch: error %v end offset %d, want -1", kerr.ErrorForCode(p.ErrorCode), p.EndOffset)
			}
			if p := offsetForEpoch(t, cl, v, "no-such-topic", 0, -1, cur); p.ErrorCode != kerr.UnknownTopicOrPartition.Code {
				t.Fatalf("unknown topic: %v", kerr.ErrorForCode(p.ErrorCode))
			}
			if p := offsetForEpoch(t, cl, v, topic, 7, -1, cur); p.ErrorCode != kerr.UnknownTopicOrPartition.Code {
				t.Fatalf("unknown partition: %v", kerr.ErrorForCode(p.ErrorCode))
			}
			// CurrentLeaderEpoch exists from v2: a newer one is unknown to
			// the leader, an older one is fenced; before v2 it is not sent.
			p = offsetForEpoch(t, cl, v, topic, 0, cur+3, cur)
			switch want := map[bool]int16{true: kerr.UnknownLeaderEpoch.Code, false: 0}[v >= 2]; {
			case p.ErrorCode != want:
				t.Fatalf("current epoch %d: %v, want %v", cur+3, kerr.ErrorForCode(p.ErrorCode), kerr.ErrorForCode(want))
			case want != 0 && (p.EndOffset != -1 || p.LeaderEpoch != -1):
				t.Fatalf("error answer carries (%d, %d)", p.LeaderEpoch, p.EndOffset)
			}
			if cur > 0 && v >= 2 {
				if p := offsetForEpoch(t, cl, v, topic, 0, cur-1, cur); p.ErrorCode != kerr.FencedLeaderEpoch.Code {
					t.Fatalf("older current epoch: %v", kerr.ErrorForCode(p.ErrorCode))
				}
			}
			if p := offsetForEpoch(t, cl, v, topic, 0, cur, cur); p.ErrorCode != 0 || p.EndOffset != 10 {
				t.Fatalf("matching current epoch: %v %d", kerr.ErrorForCode(p.ErrorCode), p.EndOffset)
			}
		})
	}
}

// epochRequests counts OffsetForLeaderEpoch requests a client writes.
type epochRequests struct{ n atomic.Int64 }

func (h *epochRequests) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if key == int16(kmsg.OffsetForLeaderEpoch) && err == nil {
		h.n.Add(1)
	}
}

// A group consumer resuming from offsets committed with a leader epoch
// validates them with OffsetForLeaderEpoch (KIP-320) and then reads every
// remaining record once, none lost, none repeated.
func TestGroupConsumerResumesThroughOffsetForLeaderEpoch(t *testing.T) {
	b := testutil.StartBroker(t)
	const topic, group = "ofle-group", "ofle-g"
	testutil.CreateTopic(t, b.Admin(), topic, 1)
	cl := b.Client()
	const total = 40
	for i := 0; i < total; i++ {
		produceSync(t, cl, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprintf("r%02d", i))})
	}

	consume := func(n int, hooks *epochRequests) []string {
		t.Helper()
		opts := []kgo.Opt{kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(),
			kgo.FetchMaxWait(100 * time.Millisecond)}
		if hooks != nil {
			opts = append(opts, kgo.WithHooks(hooks))
		}
		c, err := kgo.NewClient(append(opts, kgo.SeedBrokers(b.Addr()))...)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		var got []string
		ctx := ctxT(t, 30*time.Second)
		for len(got) < n {
			fs := c.PollRecords(ctx, n-len(got))
			if err := ctx.Err(); err != nil {
				t.Fatalf("consumed %d of %d: %v", len(got), n, err)
			}
			fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
			var last *kgo.Record
			fs.EachRecord(func(r *kgo.Record) {
				got = append(got, string(r.Value))
				last = r
			})
			if last != nil {
				if err := c.CommitRecords(ctx, last); err != nil {
					t.Fatalf("commit: %v", err)
				}
			}
		}
		c.LeaveGroup()
		return got
	}

	first := consume(15, nil)
	hooks := &epochRequests{}
	second := consume(total-15, hooks)
	all := append(first, second...)
	for i, v := range all {
		if want := fmt.Sprintf("r%02d", i); v != want {
			t.Fatalf("record %d = %q, want %q (first %d, second %d)", i, v, want, len(first), len(second))
		}
	}
	if hooks.n.Load() == 0 {
		t.Fatal("the resuming consumer sent no OffsetForLeaderEpoch")
	}
}
