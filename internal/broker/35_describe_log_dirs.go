package broker

// DescribeLogDirs: v0-4
//
// * v0: as v1, without a throttle time in the response.
// * v2: flexible versions.
// * v3: ErrorCode at the top level.
// * v4: TotalBytes and UsableBytes of the log dir's file system (KIP-827).
//
// A null topic list describes every hosted partition. OffsetLag is 0 (no
// future replicas) and IsFuture false.

import (
	"sort"
	"syscall"

	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/replica"
)

func (b *Broker) handleDescribeLogDirs(req *kmsg.DescribeLogDirsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	dir := kmsg.NewDescribeLogDirsResponseDir()
	dir.Dir = b.logDir
	dir.TotalBytes, dir.UsableBytes = -1, -1
	var fs syscall.Statfs_t
	if err := syscall.Statfs(b.logDir, &fs); err == nil {
		dir.TotalBytes = int64(fs.Blocks) * int64(fs.Bsize)
		dir.UsableBytes = int64(fs.Bavail) * int64(fs.Bsize)
	}

	byTopic := make(map[string][]*replica.Partition)
	for _, p := range b.replicas.Partitions() {
		byTopic[p.TP.Topic] = append(byTopic[p.TP.Topic], p)
	}
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
	names := make([]string, 0, len(byTopic))
	for name := range byTopic {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if want != nil && want[name] == nil {
			continue
		}
		parts := byTopic[name]
		sort.Slice(parts, func(i, j int) bool { return parts[i].TP.Partition < parts[j].TP.Partition })
		dt := kmsg.NewDescribeLogDirsResponseDirTopic()
		dt.Topic = name
		for _, p := range parts {
			if want != nil && !want[name][p.TP.Partition] {
				continue
			}
			dp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
			dp.Partition = p.TP.Partition
			dp.Size = p.Size()
			dt.Partitions = append(dt.Partitions, dp)
		}
		if len(dt.Partitions) > 0 {
			dir.Topics = append(dir.Topics, dt)
		}
	}
	resp.Dirs = append(resp.Dirs, dir)
	return resp
}
