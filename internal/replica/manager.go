package replica

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"samsa/internal/storage"
	"samsa/internal/txn"
	"samsa/internal/vfs"
)

// ErrNotLeader means this broker does not lead the partition (or does not
// host it at all).
var ErrNotLeader = errors.New("replica: not the leader")

// Partition is one hosted partition. Its fields other than the atomics are
// set when it is created and never change.
type Partition struct {
	TP      storage.TopicPartition
	TopicID [16]byte
	Log     *storage.Log

	leaderEpoch atomic.Int32
	leader      atomic.Bool

	// appendMu serialises appends with the producer state checks, so a
	// check and the append it allows are atomic.
	appendMu       sync.Mutex
	producers      *txn.State // guarded by appendMu
	producersDirty bool       // guarded by appendMu; changed since the last snapshot
}

// LeaderEpoch is the partition's current leader epoch.
func (p *Partition) LeaderEpoch() int32 { return p.leaderEpoch.Load() }

// IsLeader reports whether this broker leads the partition.
func (p *Partition) IsLeader() bool { return p.leader.Load() }

// HighWatermark is the offset below which records are committed and visible
// to consumers: the durable end of the log (see the package doc).
func (p *Partition) HighWatermark() int64 { return p.Log.DurableOffset() }

// Manager holds the hosted partitions.
type Manager struct {
	logs *storage.Manager
	fs   vfs.FS
	now  func() time.Time

	mu    sync.RWMutex
	parts map[storage.TopicPartition]*Partition // guarded by mu
}

// NewManager returns a Manager over the logs of logs; fs is the file
// system of their log dir (producer state snapshots live beside the logs).
// now nil means time.Now.
func NewManager(logs *storage.Manager, fs vfs.FS, now func() time.Time) *Manager {
	if now == nil {
		now = time.Now
	}
	return &Manager{logs: logs, fs: fs, now: now, parts: make(map[storage.TopicPartition]*Partition)}
}

// Get returns the hosted partition tp, or nil.
func (m *Manager) Get(tp storage.TopicPartition) *Partition {
	m.mu.RLock()
	p := m.parts[tp]
	m.mu.RUnlock()
	return p
}

// Leader returns tp if this broker leads it, else ErrNotLeader.
func (m *Manager) Leader(tp storage.TopicPartition) (*Partition, error) {
	p := m.Get(tp)
	if p == nil || !p.IsLeader() {
		return nil, ErrNotLeader
	}
	return p, nil
}

// Partitions returns every hosted partition.
func (m *Manager) Partitions() []*Partition {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]*Partition, 0, len(m.parts))
	for _, p := range m.parts {
		out = append(out, p)
	}
	return out
}

// Ensure makes tp hosted here with the given leadership and configuration,
// creating its log if needed. Calling it again updates epoch, leadership and
// config.
func (m *Manager) Ensure(tp storage.TopicPartition, topicID [16]byte, cfg storage.Config, leader bool, leaderEpoch int32) (*Partition, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.parts[tp]
	if p != nil && p.TopicID != topicID {
		// The topic was deleted and recreated under the same name.
		if err := m.removeLocked(tp); err != nil {
			return nil, err
		}
		p = nil
	}
	if p == nil {
		l, err := m.logs.Create(tp, topicID, cfg)
		if err != nil {
			return nil, fmt.Errorf("replica: create log %s-%d: %w", tp.Topic, tp.Partition, err)
		}
		p = &Partition{TP: tp, TopicID: topicID, Log: l}
		if err := p.loadProducersLocked(m, m.now().UnixMilli()); err != nil {
			return nil, err
		}
		m.parts[tp] = p
	} else {
		p.Log.SetConfig(cfg)
	}
	p.leaderEpoch.Store(leaderEpoch)
	p.leader.Store(leader)
	return p, nil
}

// Remove stops hosting tp and deletes its log.
func (m *Manager) Remove(tp storage.TopicPartition) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.removeLocked(tp)
}

func (m *Manager) removeLocked(tp storage.TopicPartition) error {
	p := m.parts[tp]
	if p == nil {
		return nil
	}
	p.leader.Store(false)
	delete(m.parts, tp)
	if err := m.logs.Delete(tp); err != nil {
		return fmt.Errorf("replica: delete log %s-%d: %w", tp.Topic, tp.Partition, err)
	}
	return nil
}
