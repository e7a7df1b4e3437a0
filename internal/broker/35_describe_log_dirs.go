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
// A null topic list describes every hosted partition. A replica moving to
// another dir (AlterReplicaLogDirs) is listed in its current dir and, as
// a future replica (IsFuture), in the dir it moves to, with the bytes
// copied so far and OffsetLag the current log end offset minus the offset
// the copy has reached, as Kafka reports it. A current replica's OffsetLag
// is its high watermark minus its log end offset when positive, else 0,
// as in Kafka (always 0 here: a high watermark never passes the log end).

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
	type entry struct {
		p      *replica.Partition
		future *replica.FutureReplica
	}
	byDir := make(map[string]map[string][]entry)
	add := func(d string, e entry) {
		if byDir[d] == nil {
			byDir[d] = make(map[string][]entry)
		}
		byDir[d][e.p.TP.Topic] = append(byDir[d][e.p.TP.Topic], e)
	}
	for _, p := range b.replicas.Partitions() {
		if want != nil && !want[p.TP.Topic][p.TP.Partition] {
			continue
		}
		add(p.LogDir(), entry{p: p})
		if f, ok := p.Future(); ok {
			add(f.Dir, entry{p: p, future: &f})
		}
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
			sort.Slice(parts, func(i, j int) bool { return parts[i].p.TP.Partition < parts[j].p.TP.Partition })
			dt := kmsg.NewDescribeLogDirsResponseDirTopic()
			dt.Topic = name
			for _, e := range parts {
				dp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
				dp.Partition = e.p.TP.Partition
				dp.Size = e.p.Size()
				dp.OffsetLag = max(e.p.HighWatermark()-e.p.LogEndOffset(), 0)
				if e.future != nil {
					dp.Size, dp.OffsetLag, dp.IsFuture = e.future.Size, e.future.OffsetLag, true
				}
				dt.Partitions = append(dt.Partitions, dp)
			}
			dir.Topics = append(dir.Topics, dt)
		}
		resp.Dirs = append(resp.Dirs, dir)
	}
	return resp
}
