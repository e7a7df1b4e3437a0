// Package quota implements Kafka's client quotas and connection limits as deterministic
// types: quota configuration and entity precedence (KIP-55, KIP-546), sampled rates and
// throttle times (KIP-13, KIP-124, KIP-219), the controller mutation token bucket (KIP-599),
// and connection count and creation-rate limits (KIP-402, KIP-612). It opens no sockets,
// starts no goroutines, reads no clock: every method that depends on time takes now.
//
// # Configuration
//
// A Config holds what AlterClientQuotas stores: entity -> key -> value. Entities combine a
// user and a client id, each a name or the default, or are a single ip (or the default
// ip). Config.Alter validates like Kafka; NewImage freezes a Config into an Image that
// request handlers share (swap it through an atomic.Pointer when quotas change).
// Image.Resolve applies Kafka's precedence and names the SensorKey, the rate that clients
// matched by the same entity share. Image.Describe answers DescribeClientQuotas.
//
// # Usage
//
// The broker holds an atomic.Pointer[quota.Image], a Tracker for byte rates, a Tracker for
// requests, a MutationTracker and a ConnLimiter. Per produce request, after appending:
//
//	res := img.Resolve(user, clientID, quota.KeyProducerByteRate)
//	if res.Found {
//		throttle := byteRates.Record(now, res.Sensor, res.Quota, float64(requestBytes))
//		// put throttle in throttle_time_ms, then mute the connection for throttle (KIP-219)
//	}
//
// request_percentage records quota.RequestPercentage(handlerTime) into a Tracker made with
// RequestTrackerConfig. controller_mutation_rate uses a MutationTracker: for strict versions
// (StrictMutationQuota) call RecordStrict once per topic with its partition count and
// answer THROTTLING_QUOTA_EXCEEDED where it returns ErrThrottlingQuotaExceeded.
//
// Per accepted socket:
//
//	switch d := conns.Accept(now, listener, ip); d.Verdict {
//	case quota.Accept:   // serve; call conns.Release(listener, ip) on close
//	case quota.Reject:   // close, after d.Wait if it is not 0
//	case quota.Delay:    // hold the socket, wait d.Wait or for a Release, Accept again
//	}
//
// Call Tracker.Expire, MutationTracker.Expire and ConnLimiter.Expire every 30 s or so.
//
// # Invariants
//
//   - Given the same calls with the same now values, every type returns the same results.
//   - A Rate measures over at most quota.window.num samples of quota.window.size.seconds,
//     and divides by at least (num-1) samples' time, so a first burst is not over-counted.
//   - Memory is bounded by the sensors recorded within the inactive expiry (one hour).
//   - ConnLimiter counts never go negative: Release without a matching Accept fails.
//   - Image is immutable; Config, Rate and TokenBucket are not safe for concurrent use;
//     Tracker, MutationTracker and ConnLimiter are.
//
// # Locks
//
// Tracker shard mutexes, MutationTracker.mu and ConnLimiter.mu are leaves: no method holds
// one while taking another.
package quota
