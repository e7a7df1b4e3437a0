package console

import (
	"sync"
	"time"
)

// lagHistory keeps the total lag of the groups whose pages are open, as
// their charts poll it, so that a page opened again (or by another user)
// starts with the last 15 minutes instead of an empty chart. Safe for
// concurrent use; mu guards every field.
//
// A group's history is recorded only from a poll that read the group's
// offsets itself, and handed out only with such a read: a user sees the
// history of a group only when the ACLs let them read that group now.
type lagHistory struct {
	mu     sync.Mutex
	groups map[string]*lagSeries
	max    int           // groups kept; the least recently recorded goes first
	points int           // points kept per group
	every  time.Duration // at most one point per group this often
}

type lagSeries struct {
	points [][2]int64 // (unix ms, total lag), oldest first
	last   time.Time
}

func newLagHistory(maxGroups, points int, every time.Duration) *lagHistory {
	return &lagHistory{groups: map[string]*lagSeries{}, max: maxGroups, points: points, every: every}
}

// record adds a point for group at now (unless one was added less than
// every ago) and returns the group's history, oldest first. The caller
// owns the returned slice.
func (h *lagHistory) record(group string, now time.Time, lag int64) [][2]int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.groups[group]
	if s == nil {
		if len(h.groups) >= h.max {
			var oldest string
			var at time.Time
			for g, o := range h.groups {
				if oldest == "" || o.last.Before(at) {
					oldest, at = g, o.last
				}
			}
			delete(h.groups, oldest)
		}
		s = &lagSeries{}
		h.groups[group] = s
	}
	if s.last.IsZero() || now.Sub(s.last) >= h.every {
		s.points = append(s.points, [2]int64{now.UnixMilli(), lag})
		if len(s.points) > h.points {
			s.points = append(s.points[:0], s.points[len(s.points)-h.points:]...)
		}
		s.last = now
	}
	// Points older than the window are dropped even when a group is
	// polled rarely.
	cut := now.Add(-time.Duration(h.points) * h.every).UnixMilli()
	i := 0
	for i < len(s.points) && s.points[i][0] < cut {
		i++
	}
	s.points = s.points[i:]
	return append([][2]int64(nil), s.points...)
}
