package broker

// WriteTxnMarkers: v0-1
//
// * v1: flexible versions.
//
// Sent by a transaction coordinator to the leaders of a transaction's
// partitions; ALTER or CLUSTER_ACTION on the cluster is required (every
// partition gets CLUSTER_AUTHORIZATION_FAILED otherwise). Each marker is appended as
// a COMMIT or ABORT control batch (replica.Partition.AppendMarker) to each
// of its partitions this broker leads, and answered once committed; on
// __consumer_offsets the group coordinator then materialises or drops the
// producer's pending offsets (onOffsetsMarker). Per partition errors:
// UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER (the coordinator looks
// the leader up again and retries), INVALID_PRODUCER_EPOCH for a marker
// older than the producer's epoch in the partition. The request waits on
// the connection's write goroutine.

import (
	"context"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/server"
)

func (b *Broker) handleWriteTxnMarkers(conn *server.Conn, req *kmsg.WriteTxnMarkersRequest) server.Reply {
	return inOrder(func(ctx context.Context) kmsg.Response {
		resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
		z := b.authzFor(conn)
		allowed := z.cluster(opAlter) || z.cluster(opClusterAction)
		var wg sync.WaitGroup
		for _, m := range req.Markers {
			rm := kmsg.NewWriteTxnMarkersResponseMarker()
			rm.ProducerID = m.ProducerID
			for _, t := range m.Topics {
				rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
				rt.Topic = t.Topic
				rt.Partitions = make([]kmsg.WriteTxnMarkersResponseMarkerTopicPartition, len(t.Partitions))
				for i, p := range t.Partitions {
					rp := &rt.Partitions[i]
					rp.Default()
					rp.Partition = p
					if !allowed {
						rp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
						continue
					}
					wg.Add(1)
					go func() {
						defer wg.Done()
						err := b.writeMarker(ctx, t.Topic, p, m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch)
						if err != nil {
							rp.ErrorCode = markerCode(err)
						}
					}()
				}
				rm.Topics = append(rm.Topics, rt)
			}
			resp.Markers = append(resp.Markers, rm)
		}
		wg.Wait()
		return resp
	})
}

// markerCode is the code of a failed marker write: a kerr value from
// leaderPartition as it is, anything else through errCode.
func markerCode(err error) int16 {
	if ke, ok := err.(*kerr.Error); ok {
		return ke.Code
	}
	return errCode(err).Code
}
