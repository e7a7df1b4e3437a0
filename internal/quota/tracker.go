package quota

import (
	"hash/maphash"
	"math"
	"sync"
	"time"
)

// TrackerConfig configures a Tracker.
type TrackerConfig struct {
	// Window is the sampled window (quota.window.num x quota.window.size.seconds).
	Window WindowConfig
	// MaxThrottle caps the throttle time; 0 means no cap. Kafka caps request_percentage
	// throttles at one window sample (ClientRequestQuotaManager: quota.window.size.seconds)
	// and leaves byte-rate throttles uncapped (ClientQuotaManager).
	MaxThrottle time.Duration
	// InactiveExpiry is how long an unrecorded sensor survives Expire; 0 means
	// DefaultInactiveExpiry.
	InactiveExpiry time.Duration
}

// RequestTrackerConfig returns the configuration Kafka's request quota uses for window w:
// throttles capped at one sample of the window.
func RequestTrackerConfig(w WindowConfig) TrackerConfig {
	w = w.withDefaults()
	return TrackerConfig{Window: w, MaxThrottle: w.Size}
}

// trackerShards is the number of independently locked sensor maps. A power of two.
const trackerShards = 32

// sensor is one measured rate and the time it was last recorded.
type sensor struct {
	rate Rate
	last int64 // unix nanoseconds of the last Record
}

// Tracker measures rates per SensorKey and turns quota violations into throttle times, as
// Kafka's ClientQuotaManager does for producer_byte_rate, consumer_byte_rate and
// request_percentage. Byte rates can share one Tracker, since SensorKey carries the quota
// key; request_percentage needs its own, made with RequestTrackerConfig, for its cap.
//
// Tracker is safe for concurrent use. Sensors live in trackerShards maps, each under its own
// mutex, chosen by a hash of the SensorKey: Record runs on every request of every
// connection, and one mutex would serialise all handlers on it, while a sensor's update is a
// few additions that one short critical section covers. Methods never block beyond that
// section and do no IO.
type Tracker struct {
	cfg    TrackerConfig
	seed   maphash.Seed
	shards [trackerShards]struct {
		mu      sync.Mutex
		sensors map[SensorKey]*sensor // guarded by mu
		_       [48]byte              // keep shards on separate cache lines
	}
}

// NewTracker returns an empty Tracker.
func NewTracker(cfg TrackerConfig) *Tracker {
	cfg.Window = cfg.Window.withDefaults()
	if cfg.InactiveExpiry <= 0 {
		cfg.InactiveExpiry = DefaultInactiveExpiry
	}
	t := &Tracker{cfg: cfg, seed: maphash.MakeSeed()}
	for i := range t.shards {
		t.shards[i].sensors = make(map[SensorKey]*sensor)
	}
	return t
}

func (t *Tracker) shard(key SensorKey) int {
	return int(maphash.Comparable(t.seed, key) & (trackerShards - 1))
}

// Record adds value to key's rate at now and returns how long the client must be throttled,
// following Kafka's Sensor.record then ClientQuotaManager.throttleTime: the value is always
// recorded, and if the rate measured right after exceeds quota the throttle time is
// ThrottleTime(rate, quota, window), capped at MaxThrottle. A quota of +Inf never throttles.
// The broker returns the result as throttle_time_ms and mutes the connection for it
// (KIP-219). Concurrent callers may read their clocks before taking the shard lock, so now
// may be slightly behind an earlier call's; the Rate tolerates that.
func (t *Tracker) Record(now time.Time, key SensorKey, quota float64, value float64) (throttle time.Duration) {
	sh := &t.shards[t.shard(key)]
	sh.mu.Lock()
	s := sh.sensors[key]
	if s == nil {
		s = &sensor{}
		sh.sensors[key] = s
	}
	s.last = now.UnixNano()
	s.rate.Record(t.cfg.Window, now, value)
	if math.IsInf(quota, 1) {
		sh.mu.Unlock()
		return 0
	}
	observed, window := s.rate.Measure(t.cfg.Window, now)
	sh.mu.Unlock()
	throttle = ThrottleTime(observed, quota, window)
	if t.cfg.MaxThrottle > 0 && throttle > t.cfg.MaxThrottle {
		throttle = t.cfg.MaxThrottle
	}
	return throttle
}

// Rate returns key's measured rate per second at now, 0 for an unknown key.
func (t *Tracker) Rate(now time.Time, key SensorKey) float64 {
	sh := &t.shards[t.shard(key)]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	s := sh.sensors[key]
	if s == nil {
		return 0
	}
	r, _ := s.rate.Measure(t.cfg.Window, now)
	return r
}

// Expire drops sensors not recorded for more than InactiveExpiry before now and returns how
// many it dropped. Call it periodically (Kafka's metrics reaper runs every 30 s) to bound
// memory by the number of active clients.
func (t *Tracker) Expire(now time.Time) int {
	cutoff := now.UnixNano() - int64(t.cfg.InactiveExpiry)
	n := 0
	for i := range t.shards {
		sh := &t.shards[i]
		sh.mu.Lock()
		for k, s := range sh.sensors {
			if s.last < cutoff {
				delete(sh.sensors, k)
				n++
			}
		}
		sh.mu.Unlock()
	}
	return n
}

// Len returns the number of live sensors.
func (t *Tracker) Len() int {
	n := 0
	for i := range t.shards {
		sh := &t.shards[i]
		sh.mu.Lock()
		n += len(sh.sensors)
		sh.mu.Unlock()
	}
	return n
}

// RequestPercentage converts request handler time into the unit request_percentage is
// recorded in: the percentage of one thread-second, so 10 ms of handler time records 1.0
// (Kafka's ClientRequestQuotaManager nanosToPercentage, 100 / 1e9 per nanosecond). A client
// with request_percentage = 50 may thus use half of one handler-second per second.
//
// Kafka's total capacity is (num.io.threads + num.network.threads) x 100 %. samsa has no
// fixed thread pools: it measures per request the wall time its handler goroutine spends on
// the request (decode to response encode, excluding time parked in purgatory), and the
// capacity an operator should reason about is GOMAXPROCS x 100 %.
func RequestPercentage(handlerTime time.Duration) float64 {
	return float64(handlerTime) * (100.0 / float64(time.Second))
}
