package node

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"samsa/internal/broker"
)

// absLogDirs returns log.dirs as absolute, cleaned paths, each created if
// missing. A dir listed twice (under any spelling) is refused.
func absLogDirs(dirs []string) ([]string, error) {
	if len(dirs) == 0 {
		return nil, errors.New("log.dirs: empty")
	}
	out := make([]string, 0, len(dirs))
	for _, d := range dirs {
		a, err := filepath.Abs(d)
		if err != nil {
			return nil, fmt.Errorf("log.dirs: %s: %w", d, err)
		}
		if slices.Contains(out, a) {
			return nil, fmt.Errorf("log.dirs: %s listed twice", a)
		}
		if err := os.MkdirAll(a, 0o755); err != nil {
			return nil, fmt.Errorf("log dir: %w", err)
		}
		out = append(out, a)
	}
	return out, nil
}

// logDirStates lists the log dirs for DescribeLogDirs.
func (n *Node) logDirStates() []broker.LogDirState {
	dirs := n.logs.Dirs()
	out := make([]broker.LogDirState, len(dirs))
	for i, m := range dirs {
		out[i] = broker.LogDirState{Dir: m.Dir(), Offline: m.Offline()}
	}
	return out
}

// offlineReportRetry is how long a failed report of offline replicas
// waits before it is tried again.
const offlineReportRetry = time.Second

// watchLogDirs starts the goroutines that act when a log dir goes
// offline: one per dir waits for it, and one reports, in the broker's
// registration (cluster.SetOfflineReplicas), every failed dir and the
// partitions whose logs were in them, retrying until etcd takes it, so
// that the controller moves those leaderships to in-sync replicas on
// other brokers and removes this broker from their ISRs (KIP-112). When
// the failed dir is the metadata dir or the last online one, LogDirFailed
// fires too.
func (n *Node) watchLogDirs() {
	dirs := n.logs.Dirs()
	events := make(chan int, len(dirs))
	for i, m := range dirs {
		n.goAttach(func(ctx context.Context) {
			select {
			case <-m.OfflineNotify():
				events <- i
			case <-ctx.Done():
			}
		})
	}
	n.goAttach(func(ctx context.Context) {
		for {
			select {
			case <-ctx.Done():
				return
			case i := <-events:
				m := dirs[i]
				n.log.Error("node: log dir offline: its partitions answer KAFKA_STORAGE_ERROR and move to other replicas",
					"dir", m.Dir(), "partitions", len(m.Logs()), "err", m.OfflineErr())
				switch {
				case n.logs.Offline():
					n.failDirs(fmt.Errorf("every log dir is offline (the last: %s): %w", m.Dir(), m.OfflineErr()))
				case i == 0:
					n.failDirs(fmt.Errorf("the metadata log dir %s (the first of log.dirs) is offline: %w", m.Dir(), m.OfflineErr()))
				}
				n.replicas.SyncFetchers()
				n.reportOffline(ctx)
			}
		}
	})
}

// failDirs fires LogDirFailed with err, once.
func (n *Node) failDirs(err error) {
	n.dirFailedOnce.Do(func() {
		n.dirFailedErr.Store(&err)
		close(n.dirFailed)
	})
}

// reportOffline writes the offline dirs and replicas into the broker's
// registration, retrying until it succeeds or ctx is done.
func (n *Node) reportOffline(ctx context.Context) {
	for {
		var dirs []string
		replicas := make(map[string][]int32)
		count := 0
		for _, m := range n.logs.Dirs() {
			if !m.Offline() {
				continue
			}
			dirs = append(dirs, m.Dir())
			for _, l := range m.Logs() {
				tp := l.TopicPartition()
				replicas[tp.Topic] = append(replicas[tp.Topic], tp.Partition)
				count++
			}
		}
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := n.cluster.SetOfflineReplicas(wctx, dirs, replicas)
		cancel()
		if err == nil {
			n.log.Info("node: offline replicas reported to the controller", "dirs", dirs, "partitions", count)
			return
		}
		if ctx.Err() != nil {
			return
		}
		n.log.Warn("node: report offline replicas; retrying", "dirs", dirs, "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(offlineReportRetry):
		}
	}
}
