package broker

// DescribeLogDirs: v0-4
//
// * v0: as v1, without a throttle time in the response.
// * v2: flexible versions.
// * v3: ErrorCode at the top level.
// * v4: TotalBytes and UsableBytes of the log dir's file system (KIP-827).
//
// Every log dir of log.dirs is answered, in that order (KIP-113). A dir
// that went offline (a write or sync there failed) has ErrorCode
// KAFKA_STORAGE_ERROR and no partitions, as Kafka answers it; its total
// and usable bytes are still given when its file system answers statfs.
// A null topic list describes every hosted partition. OffsetLag is 0 (no
// future replicas) and IsFuture false.

import (
	"sort"
	"syscall"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/replica"
)

func (b *Broker) handleDescribeLogDirs(req *kmsg.DescribeLogDirsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	var want map[string]map[int32]bool
	if req.Topics != nil {
		want = make(map[string]map[int32]bool)
		for _, rt := range req.Topics {
			m := want[rt.Topic]
			if m == nil {
				m = make(map[int32]bool)
				want[rt.Topic] = m
			}
			for _, p := range rt.Partitions {
				m[p] = true
			}
		}
	}
	// byDir holds the wanted partitions of each dir, by topic.
	byDir := make(map[string]map[string][]*replica.Partition)
	for _, p := range b.replicas.Partitions() {
		if want != nil && !want[p.TP.Topic][p.TP.Partition] {
			continue
		}
		d := p.LogDir()
		if byDir[d] == nil {
			byDir[d] = make(map[string][]*replica.Partition)
		}
		byDir[d][p.TP.Topic] = append(byDir[d][p.TP.Topic], p)
	}
	var dirs []LogDirState
	if b.logDirs != nil {
		dirs = b.logDirs()
	}
	for _, ld := range dirs {
		dir := kmsg.NewDescribeLogDirsResponseDir()
		dir.Dir = ld.Dir
		dir.TotalBytes, dir.UsableBytes = -1, -1
		var fs syscall.Statfs_t
		if err := syscall.Statfs(ld.Dir, &fs); err == nil {
			dir.TotalBytes = int64(fs.Blocks) * int64(fs.Bsize)
			dir.UsableBytes = int64(fs.Bavail) * int64(fs.Bsize)
		}
		if ld.Offline {
			dir.ErrorCode = kerr.KafkaStorageError.Code
			resp.Dirs = append(resp.Dirs, dir)
			continue
		}
		byTopic := byDir[ld.Dir]
		names := make([]string, 0, len(byTopic))
		for name := range byTopic {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			parts := byTopic[name]
			sort.Slice(parts, func(i, j int) bool { return parts[i].TP.Partition < parts[j].TP.Partition })
			dt := kmsg.NewDescribeLogDirsResponseDirTopic()
			dt.Topic = name
			for _, p := range parts {
				dp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
				dp.Partition = p.TP.Partition
				dp.Size = p.Size()
				dt.Partitions = append(dt.Partitions, dp)
			}
			dir.Topics = append(dir.Topics, dt)
		}
		resp.Dirs = append(resp.Dirs, dir)
	}
	return resp
}
