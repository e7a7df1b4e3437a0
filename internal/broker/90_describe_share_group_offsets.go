package broker

// DescribeShareGroupOffsets: v0-1 (KIP-932)
//
// * v1: Lag (KIP-1226, Kafka 4.2).
//
// Served by the group's coordinator: the share-partition start offset
// (SPSO) of each partition, read from its share coordinator, or -1 for a
// partition the group has no state for. No Topics means every topic the
// group's members subscribed to or whose offsets were altered. DESCRIBE
// on the group (else GROUP_AUTHORIZATION_FAILED for the group) and on each
// topic (else TOPIC_AUTHORIZATION_FAILED for its partitions), as Kafka
// checks them.
//
// Share group membership is kept in memory (share_groups.go), so a new
// group coordinator knows no share group without members. A group it
// does not know is described anyway when the request names its topics
// and some of their partitions have state at the share coordinators:
// the group exists, without members (it becomes an empty share group
// here). Otherwise it is GROUP_ID_NOT_FOUND, as for any unknown group.
//
// Lag is the records from the SPSO up to the partition's end (the high
// watermark; the last stable offset under share.isolation.level
// read_committed, which is all such a group can deliver) that are not
// yet acknowledged or archived, from the state the share coordinator
// holds: end - SPSO minus the acknowledged and archived records in
// between. It is -1 for a partition without state, or whose end the
// partition leader did not answer. Differences from Kafka: LeaderEpoch
// is -1.

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/cluster"
	"samsa/internal/server"
	"samsa/internal/share"
	"samsa/internal/storage"
)

func (b *Broker) handleDescribeShareGroupOffsets(ctx context.Context, c *server.Conn, req *kmsg.DescribeShareGroupOffsetsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeShareGroupOffsetsResponse)
	z := b.authzFor(c)
	img := b.cluster.Image()
	for _, g := range req.Groups {
		rg := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
		rg.GroupID = g.GroupID
		if !z.group(opDescribe, g.GroupID) {
			rg.ErrorCode = kerr.GroupAuthorizationFailed.Code
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		named := map[string][]int32{}
		for _, t := range g.Topics {
			named[t.Topic] = t.Partitions
		}
		if _, _, _, err := b.describeShareGroup(g.GroupID); err != nil && !b.shareGroupAfterFailover(ctx, g.GroupID, named, img, err) {
			rg.ErrorCode, rg.ErrorMessage = groupCode(err), errMessage(err)
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		topics := g.Topics
		if topics == nil {
			b.shares.mu.Lock()
			var names []string
			for n := range b.shares.topics[g.GroupID] {
				names = append(names, n)
			}
			b.shares.mu.Unlock()
			sort.Strings(names)
			for _, n := range names {
				t := img.Topics[n]
				if t == nil {
					continue
				}
				rt := kmsg.NewDescribeShareGroupOffsetsRequestGroupTopic()
				rt.Topic = n
				for p := range t.Replicas {
					rt.Partitions = append(rt.Partitions, int32(p))
				}
				topics = append(topics, rt)
			}
		}
		for _, t := range topics {
			rt := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
			rt.Topic = t.Topic
			ti := img.Topics[t.Topic]
			if ti != nil {
				rt.TopicID = ti.ID
			}
			for _, p := range t.Partitions {
				rp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
				rp.Partition, rp.StartOffset, rp.LeaderEpoch = p, -1, -1
				switch {
				case !z.topic(opDescribe, t.Topic):
					rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				case ti == nil || p < 0 || int(p) >= len(ti.Replicas):
					rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				default:
					st, _, ok, err := (coordPersister{b}).read(ctx, sharePartKey{g.GroupID, ti.ID, p}, -1)
					if err != nil {
						rp.ErrorCode, rp.ErrorMessage = errorCode(errCode(err)), errMessage(err)
					} else if ok {
						rp.StartOffset = st.StartOffset
						if end, err := b.shareEndOffset(ctx, g.GroupID, t.Topic, p); err == nil {
							rp.Lag = shareLag(st, end)
						}
					}
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			rg.Topics = append(rg.Topics, rt)
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp
}

// shareLag is the records of [st.StartOffset, end) not acknowledged or
// archived in st.
func shareLag(st share.State, end int64) int64 {
	if end <= st.StartOffset {
		return 0
	}
	n := end - st.StartOffset
	for _, sb := range st.Batches {
		if sb.State != share.Acknowledged && sb.State != share.Archived {
			continue
		}
		first, last := max(sb.First, st.StartOffset), min(sb.Last, end-1)
		if last >= first {
			n -= last - first + 1
		}
	}
	return n
}

// shareEndOffset is how far a share group can read the partition: its
// high watermark, or its last stable offset under share.isolation.level
// read_committed; from the local replica when this broker leads it, else
// with ListOffsets (latest) to its leader.
func (b *Broker) shareEndOffset(ctx context.Context, group, topic string, partition int32) (int64, error) {
	committed := b.groupConfig(group).ShareIsolationLevel == "read_committed"
	if rp := b.replicas.Get(storage.TopicPartition{Topic: topic, Partition: partition}); rp != nil && rp.IsLeader() {
		if committed {
			return rp.LastStableOffset(), nil
		}
		return rp.HighWatermark(), nil
	}
	st, ok := b.cluster.Image().Partition(topic, partition)
	if !ok || st.Leader < 0 {
		return -1, errShareNotLeader
	}
	br, err := b.brokers.Broker(st.Leader)
	if err != nil {
		return -1, err
	}
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	if committed {
		req.IsolationLevel = 1
	}
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = partition, -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, br)
	if err != nil {
		return -1, err
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return -1, fmt.Errorf("broker: malformed ListOffsets response from %d", st.Leader)
	}
	r := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
		return -1, err
	}
	return r.Offset, nil
}

// shareGroupAfterFailover reports whether id, which this coordinator
// does not know as a share group (err), is an empty share group whose
// state the share coordinators hold for one of the partitions named; if
// so, it is adopted as an empty share group. Share groups are rebuilt
// from __consumer_offsets on a coordinator failover; this finds those
// whose records are not there (a log written by a version that kept
// share group membership in memory).
func (b *Broker) shareGroupAfterFailover(ctx context.Context, id string, parts map[string][]int32, img *cluster.Image, err error) bool {
	if !errors.Is(err, share.ErrGroupIDNotFound) {
		return false
	}
	for topic, ps := range parts {
		ti := img.Topics[topic]
		if ti == nil {
			continue
		}
		for _, p := range ps {
			if p < 0 || int(p) >= len(ti.Replicas) {
				continue
			}
			if _, _, ok, err := (coordPersister{b}).read(ctx, sharePartKey{id, ti.ID, p}, -1); err == nil && ok {
				// NB: a group of another type is not adopted:
				// emptyShareGroup refuses it.
				if unlock, err := b.emptyShareGroup(ctx, id, true); err == nil {
					err := b.setShareGroupTopicLocked(ctx, id, topic, true)
					unlock()
					return err == nil
				}
				return false
			}
		}
	}
	return false
}
