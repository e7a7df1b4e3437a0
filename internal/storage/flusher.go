package storage

import (
	"fmt"
	"sync"
	"time"
)

// flushTick is how often the flusher checks page-cache logs for flush.ms.
const flushTick = 50 * time.Millisecond

// markDirty queues l for the flusher (once until the flusher takes it).
func (m *Manager) markDirty(l *Log) {
	if !l.dirty.CompareAndSwap(false, true) {
		return
	}
	// NB: the oldest append not yet covered: later appends find the log
	// dirty and leave it.
	l.dirtySince.Store(m.now().UnixNano())
	m.flushMu.Lock()
	m.dirty = append(m.dirty, l)
	m.flushMu.Unlock()
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

// flushLoop is the group-commit flusher: it syncs each dirty log's unsynced
// segments and then publishes the log end offset it read before syncing as
// the durable offset. Appends that arrive during a sync mark the log dirty
// again and are covered by the next pass, so one fsync serves every append
// queued while the previous one ran.
func (m *Manager) flushLoop() {
	m.every(flushTick, m.kick, func(timer bool) time.Duration {
		if timer {
			m.flushTimed()
		}
		m.flushDirty()
		return flushTick
	})
}

func (m *Manager) flushDirty() {
	for {
		m.flushMu.Lock()
		dirty := m.dirty
		m.dirty = nil
		m.flushMu.Unlock()
		if len(dirty) == 0 {
			return
		}
		// The logs are fsynced in parallel: their files are independent,
		// and the device serves concurrent syncs in about the time of one,
		// so a produce request spanning many partitions waits for one
		// fsync rather than one per partition.
		//
		// NB: these goroutines are owned by flushDirty, which runs on the
		// Manager's flusher goroutine: each is counted in wg before it
		// starts and flushDirty waits for all of them (wg.Wait) before it
		// returns, so none outlives the flusher or Close.
		sem := make(chan struct{}, maxParallelSyncs)
		var wg sync.WaitGroup
		for _, l := range dirty {
			// NB: read before dirty is cleared; an append after the
			// Store below sets its own time.
			since := l.dirtySince.Load()
			l.dirty.Store(false)
			if l.closed.Load() || l.offline.Load() || m.offline.Load() {
				continue
			}
			sem <- struct{}{}
			wg.Add(1)
			go func() {
				defer func() { <-sem; wg.Done() }()
				start := m.now()
				if err := l.flush(false); err != nil {
					l.goOffline(err)
					return
				}
				if m.obs != nil {
					end := m.now()
					var wait time.Duration
					if since > 0 {
						wait = end.Sub(time.Unix(0, since))
					}
					m.obs.ObserveFlush(end.Sub(start), wait)
				}
			}()
		}
		wg.Wait()
	}
}

// maxParallelSyncs bounds the fsyncs one flusher pass runs at once.
const maxParallelSyncs = 16

// flushTimed queues page-cache logs whose flush.ms elapsed with data
// pending.
func (m *Manager) flushTimed() {
	now := m.now()
	for _, l := range m.logsUnordered() {
		cfg := l.cfg.Load()
		if cfg.Durable() || cfg.FlushMs < 0 {
			continue
		}
		l.mu.RLock()
		due := (l.pendingMsgs > 0 || len(l.unsynced) > 0) && now.Sub(l.lastFlush) >= time.Duration(cfg.FlushMs)*time.Millisecond
		l.mu.RUnlock()
		if due {
			m.markDirty(l)
		}
	}
}

// flush fsyncs everything appended so far (the rolled segments not yet
// synced and the active one; with final, the indexes too) without holding
// appendMu, then advances the recovery point and the durable offset. An
// error must take the log offline: the caller never retries.
func (l *Log) flush(final bool) error {
	l.mu.Lock()
	leo := l.logEnd.Load()
	gen := l.truncGen.Load()
	segs := append(l.unsynced, l.segs[len(l.segs)-1])
	l.unsynced = nil
	syncDir := l.dirDirty
	l.dirDirty = false
	l.pendingMsgs = 0
	l.lastFlush = l.now()
	l.mu.Unlock()
	for i, s := range segs {
		if err := s.sync(final || i < len(segs)-1); err != nil {
			return err
		}
	}
	if syncDir {
		if err := l.fs.SyncDir(l.dir); err != nil {
			return fmt.Errorf("storage: sync dir %s: %w", l.dir, err)
		}
	}
	l.mu.Lock()
	moved := false
	// NB: an odd gen is a truncation in progress that has not yet
	// published its log end: leo may be beyond it.
	if gen == l.truncGen.Load() && gen%2 == 0 {
		if leo > l.recoveryPoint.Load() {
			l.recoveryPoint.Store(leo)
		}
		if leo > l.durable.Load() {
			l.durable.Store(leo)
			moved = true
		}
	}
	l.mu.Unlock()
	if moved {
		l.notify(true)
	}
	return nil
}
