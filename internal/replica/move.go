package replica

import (
	"context"
	"errors"
	"fmt"

	"samsa/internal/storage"
)

// ErrReplicaNotAvailable means this broker does not host the partition
// (REPLICA_NOT_AVAILABLE).
var ErrReplicaNotAvailable = errors.New("replica: replica not available on this broker")

// LogMover moves a partition's log to another log dir of the broker;
// storage.LogDirs satisfies it. A LogStore without it moves nothing.
type LogMover interface {
	StartMove(tp storage.TopicPartition, dest string) (*storage.LogMove, error)
	Moving(tp storage.TopicPartition) *storage.LogMove
}

// moveTask is a log move running in the background.
type moveTask struct {
	dest   string
	cancel context.CancelFunc
	done   chan struct{}
}

// MoveLog moves tp's log to the log dir dest while the partition keeps
// serving (AlterReplicaLogDirs, KIP-113): a goroutine copies the sealed
// segments, then, holding the partition's append lock, copies the rest,
// commits and switches the partition to the new log
// (storage.LogMove.Finish). Offsets, records and the partition's role
// stay as they were. It returns once the move has started, or with
// ErrReplicaNotAvailable (tp not hosted here), storage.ErrLogDirNotFound
// (dest is not a log dir) or storage.ErrLogDirOffline (either dir
// offline). A move of tp to another dir under way is cancelled first
// (its copy removed), as Kafka replaces a future replica; moving tp to
// the dir it is in cancels a move under way and does nothing else.
func (m *Manager) MoveLog(tp storage.TopicPartition, dest string) error {
	p := m.Get(tp)
	if p == nil {
		return ErrReplicaNotAvailable
	}
	mover, ok := m.logs.(LogMover)
	if !ok {
		return fmt.Errorf("replica: move %s-%d: %w", tp.Topic, tp.Partition, storage.ErrLogDirNotFound)
	}
	m.movesMu.Lock()
	defer m.movesMu.Unlock()
	if t := m.moves[tp]; t != nil {
		if t.dest == dest {
			select {
			case <-t.done:
			default:
				return nil // under way
			}
		}
		t.cancel()
		<-t.done
	}
	delete(m.moves, tp)
	mv, err := mover.StartMove(tp, dest)
	if err != nil || mv == nil {
		return err
	}
	ctx, cancel := context.WithCancel(m.ctx)
	t := &moveTask{dest: dest, cancel: cancel, done: make(chan struct{})}
	if m.moves == nil {
		m.moves = make(map[storage.TopicPartition]*moveTask)
	}
	m.moves[tp] = t
	m.goFunc(func() {
		defer close(t.done)
		defer cancel()
		if err := p.moveLog(ctx, mv); err != nil {
			m.log.Warn("replica: log move to another log dir failed; the log stays where it was",
				"topic", tp.Topic, "partition", tp.Partition, "dest", dest, "err", err)
		}
	})
	return nil
}

// moveLog runs mv: the copy without locks, then the catch-up and swap
// with appendMu (no append, truncation or producer snapshot runs) and
// roleMu (the high watermark and waiters see one log or the other).
func (p *Partition) moveLog(ctx context.Context, mv *storage.LogMove) error {
	if err := mv.Copy(ctx); err != nil {
		mv.Abort()
		return err
	}
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	if err := ctx.Err(); err != nil {
		mv.Abort()
		return err
	}
	if p.m.Get(p.TP) != p {
		mv.Abort()
		return ErrReplicaNotAvailable
	}
	nl, err := mv.Finish()
	if err != nil {
		return err
	}
	nl.SetLastStableOffsetFunc(p.LastStableOffset)
	nl.SetChangeHook(p.logChanged)
	p.roleMu.Lock()
	old := p.log.Swap(nl)
	old.SetChangeHook(func(bool) {})
	p.refreshHWLocked(p.m.now().UnixMilli())
	p.changedLocked()
	p.roleMu.Unlock()
	for _, s := range p.waits {
		p.m.delayed.publish(s)
	}
	return nil
}

// FutureReplica is a log being copied to another log dir.
type FutureReplica struct {
	Dir       string // the log dir it is copied to
	Size      int64  // bytes copied so far
	OffsetLag int64  // the log end offset minus the offset the copy reached
}

// Future returns p's log move under way, if any.
func (p *Partition) Future() (FutureReplica, bool) {
	mover, ok := p.m.logs.(LogMover)
	if !ok {
		return FutureReplica{}, false
	}
	mv := mover.Moving(p.TP)
	if mv == nil {
		return FutureReplica{}, false
	}
	n, off := mv.Copied()
	return FutureReplica{Dir: mv.Dest(), Size: n, OffsetLag: max(p.LogEndOffset()-off, 0)}, true
}
