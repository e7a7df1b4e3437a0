package broker

// AlterReplicaLogDirs: v0-2
//
// * v1: as v0 (the response is throttled before, not after, KIP-219).
// * v2: flexible versions.
//
// Moves replicas hosted here to another of this broker's log dirs
// (KIP-113) while they serve: a future log is copied in the destination
// dir, then, under the partition's append lock, brought up to date and
// swapped in (replica.Manager.MoveLog, storage.LogMove). The answer comes
// once each move has started; DescribeLogDirs shows the future replica
// (IsFuture, OffsetLag) until it is swapped in. Per partition:
//
//   - LOG_DIR_NOT_FOUND: the dir is not one of log.dirs (a path is
//     compared after filepath.Clean);
//   - KAFKA_STORAGE_ERROR: the destination or the current dir is offline;
//   - UNKNOWN_TOPIC_OR_PARTITION: no such partition in the cluster;
//   - REPLICA_NOT_AVAILABLE: the partition has no replica on this broker.
//     Kafka remembers the dir for a replica created later; samsa does
//     not, and places that replica by its usual rule;
//   - a partition already in the dir is a success, and cancels a move of
//     it to another dir under way; a partition moving elsewhere has that
//     move cancelled and starts again toward the new dir, as Kafka
//     replaces a future replica.
//
// Without ALTER on CLUSTER every partition is answered
// CLUSTER_AUTHORIZATION_FAILED (authz_apis.go).

import (
	"errors"
	"path/filepath"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/cluster"
	"samsa/internal/replica"
	"samsa/internal/storage"
)

func (b *Broker) handleAlterReplicaLogDirs(req *kmsg.AlterReplicaLogDirsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.AlterReplicaLogDirsResponse)
	img := b.cluster.Image()
	byTopic := make(map[string]int)
	for _, d := range req.Dirs {
		dest := filepath.Clean(d.Dir)
		for _, rt := range d.Topics {
			i, ok := byTopic[rt.Topic]
			if !ok {
				st := kmsg.NewAlterReplicaLogDirsResponseTopic()
				st.Topic = rt.Topic
				resp.Topics = append(resp.Topics, st)
				i = len(resp.Topics) - 1
				byTopic[rt.Topic] = i
			}
			for _, p := range rt.Partitions {
				sp := kmsg.NewAlterReplicaLogDirsResponseTopicPartition()
				sp.Partition = p
				sp.ErrorCode = b.alterReplicaLogDir(img, rt.Topic, p, dest)
				resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, sp)
			}
		}
	}
	return resp
}

// alterReplicaLogDir starts moving topic's partition p to dest and
// returns the partition's error code.
func (b *Broker) alterReplicaLogDir(img *cluster.Image, topic string, p int32, dest string) int16 {
	if _, ok := img.Partition(topic, p); !ok {
		return kerr.UnknownTopicOrPartition.Code
	}
	err := b.replicas.MoveLog(storage.TopicPartition{Topic: topic, Partition: p}, dest)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, replica.ErrReplicaNotAvailable):
		return kerr.ReplicaNotAvailable.Code
	case errors.Is(err, storage.ErrLogDirNotFound):
		return kerr.LogDirNotFound.Code
	case errors.Is(err, storage.ErrLogDirOffline):
		return kerr.KafkaStorageError.Code
	}
	b.log.Warn("alter replica log dirs", "topic", topic, "partition", p, "dir", dest, "err", err)
	return errCode(err).Code
}
