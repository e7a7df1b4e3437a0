package quota

import (
	"math"
	"time"
)

// Defaults of Kafka's quota.window.num and quota.window.size.seconds.
const (
	DefaultWindowSamples = 11
	DefaultWindowSize    = time.Second
	// DefaultInactiveExpiry is how long a sensor may go unrecorded before Expire drops it
	// (Kafka's ClientQuotaManager inactive sensor expiration, one hour).
	DefaultInactiveExpiry = time.Hour
)

// WindowConfig is the sampled window a Rate measures over: Samples samples (quota.window.num)
// of Size each (quota.window.size.seconds). Zero fields take Kafka's defaults.
type WindowConfig struct {
	Samples int
	Size    time.Duration
}

func (w WindowConfig) withDefaults() WindowConfig {
	if w.Samples <= 0 {
		w.Samples = DefaultWindowSamples
	}
	if w.Size <= 0 {
		w.Size = DefaultWindowSize
	}
	return w
}

// sample is one bucket of a Rate: the total recorded since start, and when the last value
// was recorded.
type sample struct {
	start int64 // unix nanoseconds
	last  int64 // unix nanoseconds of the last record
	value float64
}

// Rate is Kafka's Rate over a SampledTotal (org.apache.kafka.common.metrics.stats.Rate and
// SampledStat): values are added to the current sample, a sample is complete once it is
// Size old, the ring keeps Samples+1 samples, and a sample whose last record is
// Samples*Size old is reset before measuring, so a sample that overlaps the window is kept
// even if it started before it. A Rate is not safe for concurrent use; Tracker and
// ConnLimiter guard their Rates with mutexes. The zero value is an empty Rate.
type Rate struct {
	samples []sample
	current int
}

// Record adds value at now.
func (r *Rate) Record(w WindowConfig, now time.Time, value float64) {
	w = w.withDefaults()
	t := now.UnixNano()
	if len(r.samples) == 0 {
		r.samples = append(make([]sample, 0, w.Samples+1), sample{start: t, last: t})
		r.current = 0
	}
	s := &r.samples[r.current]
	if t-s.start >= int64(w.Size) {
		// NB: one sample more than quota.window.num, as SampledStat.advance keeps, because
		// purge only drops samples whose last record left the window.
		r.current = (r.current + 1) % (w.Samples + 1)
		if r.current >= len(r.samples) {
			r.samples = append(r.samples, sample{start: t, last: t})
		} else {
			r.samples[r.current] = sample{start: t, last: t}
		}
		s = &r.samples[r.current]
	}
	s.value += value
	s.last = t
}

// purge resets samples with no record in the window, as SampledStat.purgeObsoleteSamples.
func (r *Rate) purge(w WindowConfig, t int64) {
	expire := int64(w.Samples) * int64(w.Size)
	for i := range r.samples {
		if t-r.samples[i].last >= expire {
			r.samples[i] = sample{start: t, last: t}
		}
	}
}

// windowNanos is Rate.windowSize: the time from the oldest sample's start to now; when that
// holds fewer than Samples-1 whole samples, the missing whole samples are added (so a new
// sensor is measured as if it had been idle before, not over a tiny denominator). The 1 ms
// floor guards Samples = 1, where Kafka would divide by zero. The caller has purged.
func (r *Rate) windowNanos(w WindowConfig, t int64) int64 {
	oldest := t
	for _, s := range r.samples {
		if s.start < oldest {
			oldest = s.start
		}
	}
	elapsed := t - oldest
	full := elapsed / int64(w.Size)
	if min := int64(w.Samples - 1); full < min {
		elapsed += (min - full) * int64(w.Size)
	}
	return max(elapsed, int64(time.Millisecond))
}

// Measure returns the rate per second at now, and the window length it divided by.
func (r *Rate) Measure(w WindowConfig, now time.Time) (perSecond float64, window time.Duration) {
	w = w.withDefaults()
	t := now.UnixNano()
	r.purge(w, t)
	var total float64
	for _, s := range r.samples {
		total += s.value
	}
	win := r.windowNanos(w, t)
	return total / (float64(win) / float64(time.Second)), time.Duration(win)
}

// ThrottleTime is Kafka's QuotaUtils.throttleTime: the time for an observed rate above the
// quota to fall back to it if nothing more is recorded, (observed - quota) / quota * window,
// rounded to the millisecond. It returns 0 when observed <= quota (Quota.acceptable for an
// upper bound) or the quota is +Inf.
func ThrottleTime(observed, quota float64, window time.Duration) time.Duration {
	if !(observed > quota) || math.IsInf(quota, 1) || quota <= 0 {
		return 0
	}
	ms := math.Round((observed - quota) / quota * float64(window.Milliseconds()))
	if ms >= float64(math.MaxInt64/int64(time.Millisecond)) {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(ms) * time.Millisecond
}
