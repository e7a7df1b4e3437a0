package storage

import (
	"fmt"
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
// again and are covered by the next one, so one fsync serves every append
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

// flushDirty starts a flush of every queued log, up to maxParallelSyncs
// at once, and returns without waiting for them.
//
// The logs are fsynced in parallel: their files are independent, and the
// device serves concurrent syncs in about the time of one, so a produce
// request spanning many partitions waits for one fsync rather than one per
// partition. Each log is flushed by one goroutine at a time (Log.flushing),
// which flushes it again at once when it was appended to meanwhile
// (Log.flushAgain), so a log waits only for its own previous fsync, never
// for a slower one of another log: how long a record stays invisible then
// depends on its own log's fsyncs alone.
//
// NB: the flush goroutines are owned by the Manager (goFunc), so Close
// waits for them; each takes a slot of flushSlots before it starts.
func (m *Manager) flushDirty() {
	for {
		m.flushMu.Lock()
		dirty := m.dirty
		m.dirty = nil
		m.flushMu.Unlock()
		if len(dirty) == 0 {
			return
		}
		for _, l := range dirty {
			// NB: read before dirty is cleared; an append after the
			// Store below sets its own time.
			since := l.dirtySince.Load()
			l.dirty.Store(false)
			if l.closed.Load() || l.moved.Load() || l.offline.Load() || m.offline.Load() {
				continue
			}
			// NB: flushAgain is set before the CompareAndSwap: a goroutine
			// giving l up either sees it (and goes again) or has given l
			// up before the CompareAndSwap, which then succeeds. Set
			// after a failed CompareAndSwap it could be missed by both.
			l.flushAgain.Store(true)
			if !l.flushing.CompareAndSwap(false, true) {
				continue // the goroutine flushing l goes again when done
			}
			select {
			case m.flushSlots <- struct{}{}:
			case <-m.stop:
				l.flushing.Store(false)
				return
			}
			m.goFunc(func() {
				defer func() { <-m.flushSlots }()
				m.flushLog(l, since)
			})
		}
	}
}

// flushLog flushes l until nothing was appended to it during its last
// flush, then gives l up (Log.flushing). since is the unix nanos of the
// oldest append the first flush covers, for the FlushObserver.
func (m *Manager) flushLog(l *Log, since int64) {
	for {
		l.flushAgain.Store(false)
		if m.isClosed() || l.closed.Load() || l.moved.Load() || l.offline.Load() || m.offline.Load() {
			// NB: Close flushes every log itself after the flusher stops.
			l.flushing.Store(false)
			return
		}
		start := m.now()
		if err := l.flush(false); err != nil {
			l.goOffline(err)
			l.flushing.Store(false)
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
		since = l.dirtySince.Load()
		if l.flushAgain.Load() {
			continue
		}
		l.flushing.Store(false)
		// NB: a flushDirty that found l still flushing after the Load
		// above set flushAgain and left l to this goroutine: take l back,
		// unless a goroutine flushDirty started already has.
		if !l.flushAgain.Load() || !l.flushing.CompareAndSwap(false, true) {
			return
		}
	}
}

// maxParallelSyncs bounds the fsyncs one Manager runs at once.
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
	l.backlog.flushStartLocked()
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
	l.backlog.flushDoneLocked()
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

// Bounds on the backlog of a durable log past which an acks=1 produce is
// answered only once its batch is durable (Log.HoldAck).
//
// NB: under the durable policy an acks=1 record is acknowledged before the
// fsync but becomes visible (high watermark) only after it. A producer that
// writes faster than the device syncs would otherwise grow the backlog,
// and with it every fsync and the time records stay invisible, without
// bound. Holding its acknowledgements while the backlog is over these
// bounds slows it to the rate the device syncs, as acks=all producers are,
// so a record acknowledged at once waits at most for the fsync under way
// and one of about ackBacklogBytes more. The age bound catches a log whose
// fsyncs are slow for other reasons (a device shared with other logs).
const (
	ackBacklogBytes = 1 << 20
	ackBacklogAge   = 25 * time.Millisecond
)

// backlog is what a durable log has appended and not yet fsynced, in two
// parts: what the flush under way covers, and what came after it began.
// Guarded by Log.mu.
type backlog struct {
	pendingBytes, flushingBytes int64
	// pendingSince and flushingSince are unix nanos of the oldest append
	// of each part; 0 when the part is empty.
	pendingSince, flushingSince int64
}

// appendedLocked counts an append of n bytes.
func (b *backlog) appendedLocked(n int64, now func() time.Time) {
	b.pendingBytes += n
	if b.pendingSince == 0 {
		b.pendingSince = now().UnixNano()
	}
}

// flushStartLocked moves the appends so far into the flush that is
// starting (a failed flush before it left its part in place).
func (b *backlog) flushStartLocked() {
	b.flushingBytes += b.pendingBytes
	if b.flushingSince == 0 {
		b.flushingSince = b.pendingSince
	}
	b.pendingBytes, b.pendingSince = 0, 0
}

// flushDoneLocked drops the part the finished flush covered.
func (b *backlog) flushDoneLocked() { b.flushingBytes, b.flushingSince = 0, 0 }

// totalLocked returns the unsynced bytes and the unix nanos of the oldest
// unsynced append (0: none).
func (b *backlog) totalLocked() (bytes, since int64) {
	since = b.flushingSince
	if since == 0 {
		since = b.pendingSince
	}
	return b.pendingBytes + b.flushingBytes, since
}

// Backlog returns, for a durable log, how many appended bytes are not yet
// fsynced and how long ago the oldest of them was appended: the time an
// acks=1 record has stayed invisible so far. Both are 0 when everything is
// synced, and always in page-cache mode.
func (l *Log) Backlog() (bytes int64, age time.Duration) {
	l.mu.RLock()
	bytes, since := l.backlog.totalLocked()
	l.mu.RUnlock()
	if since != 0 {
		age = max(0, l.now().Sub(time.Unix(0, since)))
	}
	return bytes, age
}

// HoldAck reports whether an acks=1 produce just appended to l should be
// answered only once its batch is durable (WaitDurable), because the
// flusher is behind on l: more than ackBacklogBytes unsynced, or an
// unsynced append older than ackBacklogAge. It counts each hold in the
// Manager (HeldAcks). Always false in page-cache mode. Safe for
// concurrent use; it does not block.
func (l *Log) HoldAck() bool {
	if !l.cfg.Load().Durable() {
		return false
	}
	bytes, age := l.Backlog()
	if bytes <= ackBacklogBytes && age <= ackBacklogAge {
		return false
	}
	if l.m != nil {
		l.m.heldAcks.Add(1)
	}
	return true
}

// Backlog returns the unsynced bytes of the Manager's durable logs and the
// age of the oldest unsynced append among them (Log.Backlog).
func (m *Manager) Backlog() (bytes int64, oldest time.Duration) {
	for _, l := range m.Logs() {
		b, age := l.Backlog()
		bytes += b
		oldest = max(oldest, age)
	}
	return bytes, oldest
}

// HeldAcks counts the acks=1 answers held until durable (Log.HoldAck).
func (m *Manager) HeldAcks() int64 { return m.heldAcks.Load() }
