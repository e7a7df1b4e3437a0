package console

import (
	"sync"
	"time"
)

// Rate is one point of a throughput chart: what this broker appended from
// producers and sent to consumers per second, over the interval that
// ends at T.
type Rate struct {
	T                                        int64 // unix ms
	RecordsIn, BytesIn, RecordsOut, BytesOut float64
}

// rateRing keeps the last n samples of the counters and the rates
// between them. Safe for concurrent use; mu guards every field.
type rateRing struct {
	mu     sync.Mutex
	rates  []Rate // ring of up to cap-1 rates
	next   int
	full   bool
	last   Counters
	lastT  time.Time
	topics map[string]TopicRate // rates of the last interval, by topic
}

// TopicRate is one topic's rates over the last sampled interval.
type TopicRate struct {
	RecordsIn, BytesIn, RecordsOut, BytesOut float64
}

func newRateRing(n int) *rateRing {
	return &rateRing{rates: make([]Rate, n-1)}
}

// perSec is the rate of a counter that moved from a to b in d; a counter
// that went down (a partition left the broker) counts as still.
func perSec(a, b int64, d time.Duration) float64 {
	if b <= a || d <= 0 {
		return 0
	}
	return float64(b-a) / d.Seconds()
}

func (q *rateRing) add(t time.Time, c Counters) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.lastT.IsZero() {
		d := t.Sub(q.lastT)
		q.rates[q.next] = Rate{T: t.UnixMilli(),
			RecordsIn: perSec(q.last.RecordsIn, c.RecordsIn, d), BytesIn: perSec(q.last.BytesIn, c.BytesIn, d),
			RecordsOut: perSec(q.last.RecordsOut, c.RecordsOut, d), BytesOut: perSec(q.last.BytesOut, c.BytesOut, d)}
		q.next = (q.next + 1) % len(q.rates)
		q.full = q.full || q.next == 0
		q.topics = make(map[string]TopicRate, len(c.ByTopic))
		for name, b := range c.ByTopic {
			a := q.last.ByTopic[name]
			q.topics[name] = TopicRate{
				RecordsIn: perSec(a.RecordsIn, b.RecordsIn, d), BytesIn: perSec(a.BytesIn, b.BytesIn, d),
				RecordsOut: perSec(a.RecordsOut, b.RecordsOut, d), BytesOut: perSec(a.BytesOut, b.BytesOut, d),
			}
		}
	}
	q.last, q.lastT = c, t
}

// snapshot returns the rates oldest first. The caller owns the slice.
func (q *rateRing) snapshot() []Rate {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.full {
		return append([]Rate(nil), q.rates[:q.next]...)
	}
	return append(append([]Rate(nil), q.rates[q.next:]...), q.rates[:q.next]...)
}

// topic returns a topic's rates over the last interval.
func (q *rateRing) topic(name string) TopicRate {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.topics[name]
}
