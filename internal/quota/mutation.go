package quota

import (
	"errors"
	"math"
	"sync"
	"time"
)

// ErrThrottlingQuotaExceeded is returned by MutationTracker.RecordStrict when the client's
// controller_mutation_rate bucket is already exhausted. The broker answers the topic it was
// recording for with THROTTLING_QUOTA_EXCEEDED (KIP-599).
var ErrThrottlingQuotaExceeded = errors.New("quota: throttling quota exceeded")

// TokenBucket is Kafka's TokenBucket stat (KIP-599) for controller_mutation_rate. The quota
// is the refill rate in tokens per second; the bucket holds at most
// burst = Samples x Size (in seconds) x quota tokens. Recording takes tokens and may drive the
// bucket below zero; the quota is exhausted while the bucket is below zero, and it takes
// -tokens / quota seconds to refill to zero. A new bucket is full (Kafka's bucket starts at
// time 0, so its first refill fills it).
//
// TokenBucket is not safe for concurrent use; MutationTracker guards its buckets.
type TokenBucket struct {
	tokens  float64
	last    int64 // unix nanoseconds of the last refill
	started bool
}

func burst(w WindowConfig, quota float64) float64 {
	return float64(w.Samples) * w.Size.Seconds() * quota
}

func (b *TokenBucket) refill(w WindowConfig, now time.Time, quota float64) {
	t := now.UnixNano()
	bu := burst(w, quota)
	if !b.started {
		b.tokens, b.last, b.started = bu, t, true
		return
	}
	if t > b.last {
		b.tokens = math.Min(bu, b.tokens+quota*float64(t-b.last)/float64(time.Second))
		b.last = t
	}
}

// Tokens refills the bucket to now and returns its tokens.
func (b *TokenBucket) Tokens(w WindowConfig, now time.Time, quota float64) float64 {
	w = w.withDefaults()
	b.refill(w, now, quota)
	return b.tokens
}

// Record refills the bucket to now and takes n tokens.
func (b *TokenBucket) Record(w WindowConfig, now time.Time, quota, n float64) {
	w = w.withDefaults()
	b.refill(w, now, quota)
	b.tokens = math.Min(burst(w, quota), b.tokens-n)
}

// Throttle returns how long until the bucket is back at zero: -tokens / quota seconds,
// rounded to the millisecond (ControllerMutationQuotaManager.throttleTimeMs), or 0 if it
// is not below zero.
func (b *TokenBucket) Throttle(w WindowConfig, now time.Time, quota float64) time.Duration {
	tok := b.Tokens(w, now, quota)
	if tok >= 0 || math.IsInf(quota, 1) {
		return 0
	}
	return time.Duration(math.Round(-tok/quota*1000)) * time.Millisecond
}

// StrictMutationQuota reports whether a request of this API key and version is subject to
// the strict controller mutation quota (KIP-599): CreateTopics v6+, DeleteTopics v5+ and
// CreatePartitions v3+ get THROTTLING_QUOTA_EXCEEDED per topic; older versions are only
// throttled through throttle_time_ms (the permissive quota).
func StrictMutationQuota(apiKey, version int16) bool {
	switch apiKey {
	case 19: // CreateTopics
		return version >= 6
	case 20: // DeleteTopics
		return version >= 5
	case 37: // CreatePartitions
		return version >= 3
	}
	return false
}

// MutationTracker keeps one TokenBucket per SensorKey for controller_mutation_rate. A
// mutation is one partition created (CreateTopics, CreatePartitions) or deleted
// (DeleteTopics).
//
// MutationTracker is safe for concurrent use. One mutex guards all buckets: mutations are
// admin requests, rare next to produce and fetch, and strict recording must check and take
// tokens atomically anyway.
type MutationTracker struct {
	window WindowConfig
	expiry time.Duration

	mu      sync.Mutex
	buckets map[SensorKey]*mutationBucket // guarded by mu
}

type mutationBucket struct {
	b    TokenBucket
	used int64 // unix nanoseconds of the last record
}

// NewMutationTracker returns an empty MutationTracker. A zero expiry means
// DefaultInactiveExpiry.
func NewMutationTracker(w WindowConfig, expiry time.Duration) *MutationTracker {
	if expiry <= 0 {
		expiry = DefaultInactiveExpiry
	}
	return &MutationTracker{window: w.withDefaults(), expiry: expiry, buckets: make(map[SensorKey]*mutationBucket)}
}

func (m *MutationTracker) bucketLocked(now time.Time, key SensorKey) *mutationBucket {
	b := m.buckets[key]
	if b == nil {
		b = &mutationBucket{}
		m.buckets[key] = b
	}
	b.used = now.UnixNano()
	return b
}

// RecordStrict is Kafka's StrictControllerMutationQuota.record: if the bucket is already
// below zero it takes nothing and returns the time until it is back at zero with
// ErrThrottlingQuotaExceeded; otherwise it takes n tokens, even if that drives the bucket
// below zero, and returns 0, nil. So a request is refused only once the quota is exhausted,
// and one topic may overdraw it. Call it once per topic, in request order, with that topic's
// partition count; a +Inf quota always admits.
func (m *MutationTracker) RecordStrict(now time.Time, key SensorKey, quota, n float64) (time.Duration, error) {
	if math.IsInf(quota, 1) {
		return 0, nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	b := m.bucketLocked(now, key)
	if th := b.b.Throttle(m.window, now, quota); th > 0 {
		return th, ErrThrottlingQuotaExceeded
	}
	b.b.Record(m.window, now, quota, n)
	return 0, nil
}

// RecordPermissive is Kafka's PermissiveControllerMutationQuota.record, for requests below
// the strict versions: it always takes n tokens and returns the throttle time for the
// response, 0 unless the bucket ended below zero.
func (m *MutationTracker) RecordPermissive(now time.Time, key SensorKey, quota, n float64) time.Duration {
	if math.IsInf(quota, 1) {
		return 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	b := m.bucketLocked(now, key)
	b.b.Record(m.window, now, quota, n)
	return b.b.Throttle(m.window, now, quota)
}

// Throttle returns the time until key's bucket is back at zero, without recording. The
// broker uses the largest strict throttle of a request as its throttle_time_ms.
func (m *MutationTracker) Throttle(now time.Time, key SensorKey, quota float64) time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	b := m.buckets[key]
	if b == nil {
		return 0
	}
	return b.b.Throttle(m.window, now, quota)
}

// Expire drops buckets not recorded for longer than the expiry and returns how many. A
// dropped bucket comes back full, which is what it would have refilled to anyway once
// expiry >= Samples x Size.
func (m *MutationTracker) Expire(now time.Time) int {
	cutoff := now.UnixNano() - int64(m.expiry)
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for k, b := range m.buckets {
		if b.used < cutoff {
			delete(m.buckets, k)
			n++
		}
	}
	return n
}
