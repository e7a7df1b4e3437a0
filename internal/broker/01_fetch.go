package broker

// Fetch: v4-16
//
// * v4: isolation level; LastStableOffset and AbortedTransactions. With no
//   transactions the last stable offset is the high watermark.
// * v5: LogStartOffset.
// * v7: fetch sessions (KIP-227). samsa refuses sessions as Kafka allows:
//   every response carries session id 0, so clients send full fetches. A
//   request naming a session id gets FETCH_SESSION_ID_NOT_FOUND.
// * v9: CurrentLeaderEpoch per partition (KIP-320): FENCED_LEADER_EPOCH or
//   UNKNOWN_LEADER_EPOCH when it differs from the leader's.
// * v11: RackID and PreferredReadReplica (KIP-392); always -1: no follower
//   fetching.
// * v12: flexible versions; DivergingEpoch, only used by replicas.
// * v13: topic ids instead of names (KIP-516); UNKNOWN_TOPIC_ID.
// * v15: ReplicaState replaces ReplicaID.
// * v16: NodeEndpoints (KIP-951), empty: the leader never moves.
//
// max_wait_ms/min_bytes long-poll: the request waits on the write goroutine
// until min_bytes are available, a partition errors, or max_wait_ms passes,
// woken by the logs' change notifications (no polling). Records above the
// high watermark are never returned. The response holds at most max_bytes
// (capped at 55 MiB, Kafka's fetch.max.bytes) and each partition at most its
// partition_max_bytes, except that the first partition with data always
// returns at least one whole batch.

import (
	"context"
	"reflect"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/replica"
	"samsa/internal/server"
	"samsa/internal/storage"
)

// fetchMaxBytes is Kafka's fetch.max.bytes default, the cap on a response.
const fetchMaxBytes = 55 << 20

func (b *Broker) handleFetch(ctx context.Context, req *kmsg.FetchRequest) server.Reply {
	if req.Version >= 7 && req.SessionID != 0 {
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		resp.ErrorCode = kerr.FetchSessionIDNotFound.Code
		return server.Reply{Msg: resp}
	}
	resp, n, wake, done := b.fetchOnce(req)
	if done || int64(n) >= int64(req.MinBytes) || req.MaxWaitMillis <= 0 {
		return server.Reply{Msg: resp}
	}
	deadline := b.now().Add(time.Duration(req.MaxWaitMillis) * time.Millisecond)
	return server.Reply{Wait: func(ctx context.Context) server.Reply {
		for {
			if !waitAny(ctx, wake, deadline.Sub(b.now())) {
				resp, _, _, _ = b.fetchOnce(req)
				return server.Reply{Msg: resp}
			}
			resp, n, wake, done = b.fetchOnce(req)
			if done || int64(n) >= int64(req.MinBytes) {
				return server.Reply{Msg: resp}
			}
		}
	}}
}

// fetchOnce builds a response from what the logs hold now. It returns the
// bytes of records in it, the channels that signal a change of any log it
// read (taken before reading, so no change is missed), and whether the
// response must go out at once (a partition has an error).
func (b *Broker) fetchOnce(req *kmsg.FetchRequest) (resp *kmsg.FetchResponse, n int, wake []<-chan struct{}, done bool) {
	resp = req.ResponseKind().(*kmsg.FetchResponse)
	img := b.cluster.Image()
	budget := int64(req.MaxBytes)
	if req.Version < 3 || budget > fetchMaxBytes {
		budget = fetchMaxBytes
	}
	if budget < 0 {
		budget = 0
	}
	minOne := true
	for i := range req.Topics {
		rt := &req.Topics[i]
		st := kmsg.NewFetchResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		name := rt.Topic
		unknownCode := kerr.UnknownTopicOrPartition.Code
		if req.Version >= 13 {
			unknownCode = kerr.UnknownTopicID.Code
			if t := img.TopicIDs[rt.TopicID]; t != nil {
				name = t.Name
			} else {
				name = ""
			}
		}
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			sp := kmsg.NewFetchResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = -1, -1, -1
			sp.RecordBatches = []byte{} // librdkafka rejects a null record set
			p, err := b.replicas.Leader(storage.TopicPartition{Topic: name, Partition: rp.Partition})
			switch {
			case name == "" || img.Topics[name] == nil:
				sp.ErrorCode = unknownCode
				done = true
			case err != nil:
				if b.replicas.Get(storage.TopicPartition{Topic: name, Partition: rp.Partition}) == nil &&
					(rp.Partition < 0 || int(rp.Partition) >= len(img.Topics[name].Replicas)) {
					sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				} else {
					sp.ErrorCode = errCode(err).Code
				}
				done = true
			default:
				if code := checkLeaderEpoch(p, rp.CurrentLeaderEpoch); code != 0 {
					sp.ErrorCode = code
					done = true
					break
				}
				wake = append(wake, p.Log.Changed())
				limit := min(int64(rp.PartitionMaxBytes), budget)
				batches, err := readPartition(p, rp.FetchOffset, limit, minOne, &sp)
				if err != nil {
					sp.ErrorCode = errCode(err).Code
					done = true
					break
				}
				if len(batches) > 0 {
					minOne = false
					budget -= int64(len(batches))
					n += len(batches)
					sp.RecordBatches = batches
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, n, wake, done
}

// readPartition reads from offset up to the high watermark and fills the
// offsets of sp.
func readPartition(p *replica.Partition, offset, limit int64, minOne bool, sp *kmsg.FetchResponseTopicPartition) ([]byte, error) {
	hw := p.HighWatermark()
	sp.HighWatermark = hw
	sp.LastStableOffset = hw
	sp.LogStartOffset = p.Log.LogStartOffset()
	if offset < sp.LogStartOffset || offset > p.Log.LogEndOffset() {
		return nil, storage.ErrOffsetOutOfRange
	}
	if offset >= hw {
		return nil, nil
	}
	if limit < 0 {
		limit = 0
	}
	res, err := p.Log.Read(offset, limit, hw, minOne)
	if err != nil {
		return nil, err
	}
	if res.Size == 0 {
		return nil, nil
	}
	return res.AppendTo(make([]byte, 0, res.Size))
}

// checkLeaderEpoch compares a client's idea of the leader epoch (-1: none)
// with the partition's. Reference: KIP-320.
func checkLeaderEpoch(p *replica.Partition, epoch int32) int16 {
	switch cur := p.LeaderEpoch(); {
	case epoch < 0 || epoch == cur:
		return 0
	case epoch < cur:
		return kerr.FencedLeaderEpoch.Code
	default:
		return kerr.UnknownLeaderEpoch.Code
	}
}

// waitAny blocks until one of chans is closed (true), or d passes or ctx is
// done (false).
func waitAny(ctx context.Context, chans []<-chan struct{}, d time.Duration) bool {
	if d <= 0 {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	cases := make([]reflect.SelectCase, 0, len(chans)+2)
	cases = append(cases,
		reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())},
		reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(t.C)})
	for _, c := range chans {
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(c)})
	}
	i, _, _ := reflect.Select(cases)
	return i >= 2
}
