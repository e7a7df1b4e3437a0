package quota

import (
	"fmt"
	"math"
	"sync"
	"testing"
	"time"
)

var t0 = time.Unix(1_700_000_000, 0)

func at(d time.Duration) time.Time { return t0.Add(d) }

// Reference: Kafka QuotaUtils.throttleTime: (observed - quota) / quota * window, rounded
// to the millisecond; 0 while observed <= quota (Quota.acceptable for an upper bound).
func TestThrottleTimeFormula(t *testing.T) {
	tests := []struct {
		observed, quota float64
		window          time.Duration
		want            time.Duration
	}{
		{150, 100, 11 * time.Second, 5500 * time.Millisecond},
		{200, 100, 10 * time.Second, 10 * time.Second},
		{100, 100, 10 * time.Second, 0},
		{99, 100, 10 * time.Second, 0},
		{100.0001, 100, 10 * time.Second, 0},               // 0.01 ms rounds to 0
		{100.006, 100, 10 * time.Second, time.Millisecond}, // 0.6 ms rounds to 1
		{1e9, 1, time.Second, 999_999_999 * time.Second},
		{5, math.Inf(1), time.Second, 0},
	}
	for _, tt := range tests {
		if got := ThrottleTime(tt.observed, tt.quota, tt.window); got != tt.want {
			t.Errorf("ThrottleTime(%v, %v, %v) = %v, want %v", tt.observed, tt.quota, tt.window, got, tt.want)
		}
	}
}

type rec struct {
	at    time.Duration
	value float64
}

// Reference: KIP-13 (byte-rate quotas), Kafka Rate.windowSize (the elapsed time is extended
// to at least quota.window.num - 1 full samples), SampledStat.purgeObsoleteSamples and
// ClientQuotaManager.throttleTime. Window: 11 samples of 1 s.
func TestRecordThrottlesByKafkaFormula(t *testing.T) {
	tests := []struct {
		name  string
		cfg   TrackerConfig
		quota float64
		recs  []rec
		want  time.Duration // throttle returned by the last record
	}{
		// 1000 / (0 s extended to 10 s) = 100 B/s; (100-10)/10 * 10 s = 90 s.
		{"first burst over", TrackerConfig{}, 10, []rec{{0, 1000}}, 90 * time.Second},
		// 100 B/s against 100: acceptable.
		{"first burst at quota", TrackerConfig{}, 100, []rec{{0, 1000}}, 0},
		// 110 B/s: 0.1 * 10 s.
		{"first burst just over", TrackerConfig{}, 100, []rec{{0, 1100}}, time.Second},
		// 1200 over 5 s elapsed, extended to 10 s: 120 B/s; 0.2 * 10 s.
		{"two samples", TrackerConfig{}, 100, []rec{{0, 600}, {5 * time.Second, 600}}, 2 * time.Second},
		// The first sample is 12 s old at the second record: purged. 2000 / 10 s = 200 B/s.
		{"old sample purged", TrackerConfig{}, 100, []rec{{0, 5000}, {12 * time.Second, 2000}}, 10 * time.Second},
		// The first sample started 11.5 s ago but its last record is 10.6 s old: kept
		// (purge goes by the last record). 5101 / 11.5 s = 443.6 B/s; 3.4357 * 11.5 s.
		{"sample overlapping the window kept", TrackerConfig{}, 100, []rec{{0, 5000}, {900 * time.Millisecond, 1}, {11500 * time.Millisecond, 100}}, 39510 * time.Millisecond},
		// 10.5 s elapsed, 10 full samples: no extension. 1501 / 10.5 s; (142.95-100)/100 * 10.5 s.
		{"no extension past num-1 samples", TrackerConfig{}, 100, []rec{{0, 1}, {10500 * time.Millisecond, 1500}}, 4510 * time.Millisecond},
		// Same ring at 2 samples of 500 ms: 300 / (0 extended to 0.5 s) = 600/s; (600-100)/100 * 500 ms.
		{"small window", TrackerConfig{Window: WindowConfig{Samples: 2, Size: 500 * time.Millisecond}}, 100, []rec{{0, 300}}, 2500 * time.Millisecond},
		// Request quota: 40 s capped at one window sample (ClientRequestQuotaManager).
		{"request cap", RequestTrackerConfig(WindowConfig{}), 1, []rec{{0, 50}}, time.Second},
		{"unlimited", TrackerConfig{}, math.Inf(1), []rec{{0, 1e12}}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := NewTracker(tt.cfg)
			key := SensorKey{KeyProducerByteRate, "u", "c"}
			var got time.Duration
			for _, r := range tt.recs {
				got = tr.Record(at(r.at), key, tt.quota, r.value)
			}
			if got != tt.want {
				t.Fatalf("throttle = %v, want %v", got, tt.want)
			}
		})
	}
}

// Reference: KIP-124: request_percentage counts handler time as a percentage of one
// thread-second (Kafka ClientRequestQuotaManager.nanosToPercentage).
func TestRequestPercentageIsPercentOfOneThreadSecond(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want float64
	}{{10 * time.Millisecond, 1}, {time.Second, 100}, {time.Microsecond, 1e-4}} {
		if got := RequestPercentage(tt.d); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("RequestPercentage(%v) = %v, want %v", tt.d, got, tt.want)
		}
	}
}

// simulate runs clients that each want to send want bytes/s in 10 ms requests, but wait out
// every throttle before their next request (KIP-219: the broker mutes the channel and the
// client waits), for dur of simulated time. It returns the bytes all clients sent and the
// tracker's own measure of each distinct sensor at the end.
func simulate(tr *Tracker, img *Image, user string, clients []string, want float64, dur time.Duration) (total float64, measured map[SensorKey]float64) {
	const tick = 10 * time.Millisecond
	size := want * tick.Seconds()
	next := make([]time.Duration, len(clients))
	for now := time.Duration(0); now < dur; now += time.Millisecond {
		for i, c := range clients {
			if now < next[i] {
				continue
			}
			res := img.Resolve(user, c, KeyProducerByteRate)
			th := tr.Record(at(now), res.Sensor, res.Quota, size)
			total += size
			next[i] = now + max(tick, th)
		}
	}
	measured = make(map[SensorKey]float64)
	for _, c := range clients {
		k := img.Resolve(user, c, KeyProducerByteRate).Sensor
		measured[k] = tr.Rate(at(dur), k)
	}
	return total, measured
}

// Reference: KIP-13, KIP-219: a client that sends 10x its quota but obeys throttle_time_ms
// is held to its quota.
//
// NB: Kafka's Rate gives a new sensor a credit: it divides by at least quota.window.num - 1
// samples, so the first second may carry (num-1) x size x quota bytes without a throttle
// (10 s of quota by default). Over 60 s that credit alone is 1/6 of the quota, and the
// sampled window then releases it again in bursts with an 11 s period, so bytes sent in the
// first minute run 10-15 % above the quota; over ten minutes they settle within 2 %. The
// test checks the 60 s rate net of that credit, the 60 s rate gross with the credit as the
// upper bound, the tracker's own measure at 60 s, and the 10 minute rate.
func TestThrottledClientConvergesToQuota(t *testing.T) {
	const quota = 1 << 20 // producer_byte_rate, B/s
	const dur, long = 60 * time.Second, 600 * time.Second
	credit := float64(DefaultWindowSamples-1) * DefaultWindowSize.Seconds() * quota
	tests := []struct {
		name    string
		entity  Entity
		clients []string
	}{
		{"one client on its client-id quota", Entity{ClientID: Named("c1")}, []string{"c1"}},
		{"two clients sharing a user quota", Entity{User: Named("alice")}, []string{"c1", "c2"}},
		{"three clients sharing the default user quota", Entity{User: Default()}, []string{"c1", "c2", "c3"}},
	}
	within := func(got, want, tol float64) bool { return got >= want*(1-tol) && got <= want*(1+tol) }
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := make(Config)
			mustAlter(t, c, tt.entity, KeyProducerByteRate, quota)
			img := NewImage(c)
			total, measured := simulate(NewTracker(TrackerConfig{}), img, "alice", tt.clients, 10*quota, dur)
			net := (total - credit) / dur.Seconds()
			gross := total / dur.Seconds()
			longTotal, _ := simulate(NewTracker(TrackerConfig{}), img, "alice", tt.clients, 10*quota, long)
			longRate := longTotal / long.Seconds()
			t.Logf("60 s: net of credit %.1f %%, gross %.1f %%; 600 s: %.1f %%; tracker at 60 s %v (quota %d)",
				100*net/quota, 100*gross/quota, 100*longRate/quota, measured, quota)
			if !within(net, quota, 0.10) {
				t.Errorf("60 s rate net of the new-sensor credit %.0f B/s, want within 10 %% of %d", net, quota)
			}
			if gross > quota+credit/dur.Seconds() {
				t.Errorf("60 s gross rate %.0f B/s above quota plus credit", gross)
			}
			if len(measured) != 1 {
				t.Errorf("clients did not share one sensor: %v", measured)
			}
			for k, m := range measured {
				if !within(m, quota, 0.10) {
					t.Errorf("tracker measures %v at %.0f B/s, want within 10 %% of %d", k, m, quota)
				}
			}
			if !within(longRate, quota, 0.05) {
				t.Errorf("600 s rate %.0f B/s, want within 5 %% of %d", longRate, quota)
			}
		})
	}
}

func TestExpireDropsIdleSensors(t *testing.T) {
	tr := NewTracker(TrackerConfig{})
	k1 := SensorKey{KeyProducerByteRate, "a", ""}
	k2 := SensorKey{KeyProducerByteRate, "b", ""}
	tr.Record(at(0), k1, 10, 1)
	tr.Record(at(30*time.Minute), k2, 10, 1)
	if n := tr.Expire(at(time.Hour)); n != 0 || tr.Len() != 2 {
		t.Fatalf("at exactly one hour: expired %d, left %d", n, tr.Len())
	}
	if n := tr.Expire(at(time.Hour + time.Millisecond)); n != 1 || tr.Len() != 1 {
		t.Fatalf("after one hour: expired %d, left %d", n, tr.Len())
	}
	if r := tr.Rate(at(time.Hour), k1); r != 0 {
		t.Fatalf("expired sensor still measures %v", r)
	}
}

// TestTrackerConcurrentRecordSumsExactly runs under -race: concurrent records into shared
// and private sensors, with Expire running alongside, lose nothing.
func TestTrackerConcurrentRecordSumsExactly(t *testing.T) {
	tr := NewTracker(TrackerConfig{})
	shared := SensorKey{KeyRequestPercentage, "shared", ""}
	const workers, per = 8, 500
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			own := SensorKey{KeyRequestPercentage, fmt.Sprint("w", w), ""}
			for i := 0; i < per; i++ {
				tr.Record(at(0), shared, math.Inf(1), 1)
				tr.Record(at(0), own, 1, 1)
				if i%100 == 0 {
					tr.Expire(at(0))
					tr.Len()
				}
			}
		}()
	}
	wg.Wait()
	// All at t0: the window is 10 s, so rate = count / 10.
	if got, want := tr.Rate(at(0), shared), float64(workers*per)/10; got != want {
		t.Fatalf("shared rate %v, want %v", got, want)
	}
	if tr.Len() != workers+1 {
		t.Fatalf("sensors %d, want %d", tr.Len(), workers+1)
	}
}

func BenchmarkRecord(b *testing.B) {
	for _, keys := range []int{1, 1000} {
		sensors := make([]SensorKey, keys)
		for i := range sensors {
			sensors[i] = SensorKey{KeyProducerByteRate, fmt.Sprint("user-", i), "client"}
		}
		b.Run(fmt.Sprintf("keys=%d", keys), func(b *testing.B) {
			tr := NewTracker(TrackerConfig{})
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				tr.Record(t0.Add(time.Duration(i)*time.Microsecond), sensors[i%keys], 1<<20, 1024)
				i++
			}
		})
		b.Run(fmt.Sprintf("keys=%d/parallel", keys), func(b *testing.B) {
			tr := NewTracker(TrackerConfig{})
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				i := 0
				for pb.Next() {
					tr.Record(t0.Add(time.Duration(i)*time.Microsecond), sensors[i%keys], 1<<20, 1024)
					i++
				}
			})
		})
	}
	b.Run("resolve+record", func(b *testing.B) {
		c := make(Config)
		if err := c.Alter(Entity{User: Default()}, KeyProducerByteRate, 1<<20, false); err != nil {
			b.Fatal(err)
		}
		img := NewImage(c)
		tr := NewTracker(TrackerConfig{})
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			res := img.Resolve("alice", "client", KeyProducerByteRate)
			tr.Record(t0.Add(time.Duration(i)*time.Microsecond), res.Sensor, res.Quota, 1024)
			i++
		}
	})
}
