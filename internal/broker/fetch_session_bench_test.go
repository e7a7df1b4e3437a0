package broker_test

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/testutil"
)

// BenchmarkFollowerFetchIdle measures a follower's fetch of many idle
// partitions from one leader, over TCP, with and without a fetch session
// (KIP-227): the request and response bytes, the round trip (ns/op) and
// the process CPU per fetch (broker and client, which share the process),
// less what the idle broker spends meanwhile (cpu-ns/op). The fetch waits for nothing (max_wait_ms 0), as a follower's
// does once data arrives somewhere; an idle long-poll costs the same work
// once per replica.fetch.wait.max.ms.
//
//	go test -run '^$' -bench BenchmarkFollowerFetchIdle -benchtime 200x ./internal/broker/
func BenchmarkFollowerFetchIdle(b *testing.B) {
	for _, partitions := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("partitions=%d", partitions), func(b *testing.B) {
			// Topics of 1,000 partitions: one topic's partition states
			// are one etcd value, which has a size limit.
			br := testutil.StartBroker(b)
			cl := br.Client()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			var topics []string
			ids := make(map[string][16]byte)
			for i := range partitions / 1000 {
				topic := fmt.Sprintf("idle%d", i)
				testutil.CreateTopic(b, br.Admin(), topic, 1000)
				topics = append(topics, topic)
				ids[topic] = benchTopicID(b, ctx, cl, topic)
			}
			full := func(sessionID, epoch int32) *kmsg.FetchRequest {
				req := kmsg.NewPtrFetchRequest()
				// Replica id 1 is no replica of the topic: the leader reads as for a
				// follower and records no fetch offset.
				req.ReplicaID, req.ReplicaState.ID, req.ReplicaState.Epoch = 1, 1, -1
				req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 0, 1, 10<<20
				req.SessionID, req.SessionEpoch = sessionID, epoch
				for _, topic := range topics {
					rt := kmsg.NewFetchRequestTopic()
					rt.Topic, rt.TopicID = topic, ids[topic]
					for p := range int32(1000) {
						rp := kmsg.NewFetchRequestTopicPartition()
						rp.Partition, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LogStartOffset = p, 1<<20, -1, -1
						rt.Partitions = append(rt.Partitions, rp)
					}
					req.Topics = append(req.Topics, rt)
				}
				return req
			}
			// Wait until the broker hosts every partition, then take the
			// process's idle CPU rate, which is subtracted below.
			for ready := false; !ready; {
				ready = true
				for _, rt := range benchFetch(b, ctx, cl, full(0, -1)).Topics {
					for _, rp := range rt.Partitions {
						ready = ready && rp.ErrorCode == 0
					}
				}
				if !ready {
					time.Sleep(100 * time.Millisecond)
				}
			}
			idle := processCPU()
			start := time.Now()
			time.Sleep(time.Second)
			idleRate := float64(processCPU()-idle) / float64(time.Since(start))
			for _, sessions := range []bool{false, true} {
				b.Run(fmt.Sprintf("sessions=%v", sessions), func(b *testing.B) {
					req := full(0, -1)
					var sid int32
					if sessions {
						resp := benchFetch(b, ctx, cl, full(0, 0))
						sid = resp.SessionID
						if sid == 0 {
							b.Fatal("no fetch session")
						}
						req = kmsg.NewPtrFetchRequest()
						req.ReplicaID, req.ReplicaState.ID, req.ReplicaState.Epoch = 1, 1, -1
						req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 0, 1, 10<<20
						req.SessionID = sid
					}
					var respBytes int
					before, start := processCPU(), time.Now()
					b.ResetTimer()
					for i := range b.N {
						if sessions {
							req.SessionEpoch = int32(i + 1)
						}
						resp := benchFetch(b, ctx, cl, req)
						if i == 0 {
							respBytes = len(resp.AppendTo(nil))
						}
					}
					b.StopTimer()
					busy := float64(processCPU()-before) - idleRate*float64(time.Since(start))
					cpu := time.Duration(busy) / time.Duration(b.N)
					req.SetVersion(16)
					b.ReportMetric(float64(len(req.AppendTo(nil))), "req-bytes")
					b.ReportMetric(float64(respBytes), "resp-bytes")
					b.ReportMetric(float64(cpu.Nanoseconds()), "cpu-ns/op")
				})
			}
		})
	}
}

func benchFetch(b *testing.B, ctx context.Context, cl interface {
	Request(context.Context, kmsg.Request) (kmsg.Response, error)
}, req *kmsg.FetchRequest) *kmsg.FetchResponse {
	kr, err := cl.Request(ctx, req)
	if err != nil {
		b.Fatal(err)
	}
	resp := kr.(*kmsg.FetchResponse)
	if resp.ErrorCode != 0 {
		b.Fatalf("fetch: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	return resp
}

func benchTopicID(b *testing.B, ctx context.Context, cl interface {
	Request(context.Context, kmsg.Request) (kmsg.Response, error)
}, topic string) [16]byte {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	kr, err := cl.Request(ctx, req)
	if err != nil {
		b.Fatal(err)
	}
	resp := kr.(*kmsg.MetadataResponse)
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
		b.Fatalf("metadata: %+v", resp.Topics)
	}
	return resp.Topics[0].TopicID
}

// processCPU is the user and system CPU time the process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
