package quota

import (
	"errors"
	"math"
	"sync"
	"testing"
	"time"
)

// Reference: KIP-599 and Kafka's TokenBucket: burst = samples x window x quota, a new
// bucket is full, tokens refill at quota per second up to the burst, and the time to
// recover is -tokens / quota.
func TestTokenBucketKIP599(t *testing.T) {
	w := WindowConfig{} // 11 x 1 s
	var b TokenBucket
	if got := b.Tokens(w, at(0), 5); got != 55 {
		t.Fatalf("new bucket holds %v, want the burst 55", got)
	}
	b.Record(w, at(0), 5, 60)
	if got := b.Tokens(w, at(0), 5); got != -5 {
		t.Fatalf("after taking 60: %v, want -5", got)
	}
	if got := b.Throttle(w, at(0), 5); got != time.Second {
		t.Fatalf("throttle %v, want 1s", got)
	}
	if got := b.Throttle(w, at(400*time.Millisecond), 5); got != 600*time.Millisecond {
		t.Fatalf("throttle after 400 ms %v, want 600ms", got)
	}
	if got := b.Tokens(w, at(time.Hour), 5); got != 55 {
		t.Fatalf("refill is not capped at the burst: %v", got)
	}

	// The example in Kafka's TokenBucket doc: Q = 5, S = 100, W = 1 s, a burst of 560
	// leaves -60 tokens and a 12 s wait.
	w100 := WindowConfig{Samples: 100, Size: time.Second}
	var k TokenBucket
	k.Record(w100, at(0), 5, 560)
	if got := k.Throttle(w100, at(0), 5); got != 12*time.Second {
		t.Fatalf("KIP-599 example: %v, want 12s", got)
	}
}

// Reference: KIP-599: with a strict quota a topic is refused only once the bucket is
// exhausted, so the topic that exhausts it is accepted and those after it get
// THROTTLING_QUOTA_EXCEEDED with the time to recover.
func TestRecordStrictRefusesTopicsAfterTheQuotaIsExhausted(t *testing.T) {
	type step struct {
		at         time.Duration
		partitions float64
		throttle   time.Duration
		refused    bool
	}
	tests := []struct {
		name  string
		quota float64
		steps []step
	}{
		{"empty is not exhausted", 5, []step{{0, 30, 0, false}, {0, 25, 0, false}, {0, 1, 0, false}, {0, 1, 200 * time.Millisecond, true}}},
		{"one topic overdraws", 5, []step{{0, 30, 0, false}, {0, 30, 0, false}, {0, 10, time.Second, true}, {time.Second, 10, 0, false}}},
		{"refused topic takes nothing", 2, []step{{0, 30, 0, false}, {0, 5, 4 * time.Second, true}, {0, 5, 4 * time.Second, true}, {4 * time.Second, 1, 0, false}}},
		{"first topic larger than the burst", 1, []step{{0, 100, 0, false}, {0, 1, 89 * time.Second, true}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := NewMutationTracker(WindowConfig{}, 0)
			key := SensorKey{KeyControllerMutationRate, "u", ""}
			for i, s := range tt.steps {
				th, err := m.RecordStrict(at(s.at), key, tt.quota, s.partitions)
				if refused := errors.Is(err, ErrThrottlingQuotaExceeded); refused != s.refused || th != s.throttle {
					t.Fatalf("step %d: throttle %v err %v; want %v refused=%v", i, th, err, s.throttle, s.refused)
				}
			}
		})
	}
}

// Reference: KIP-599: requests below the strict versions are never refused; the response
// carries the throttle time.
func TestRecordPermissiveOnlyThrottles(t *testing.T) {
	m := NewMutationTracker(WindowConfig{}, 0)
	key := SensorKey{KeyControllerMutationRate, "", "c"}
	if th := m.RecordPermissive(at(0), key, 5, 50); th != 0 {
		t.Fatalf("within burst: %v", th)
	}
	if th := m.RecordPermissive(at(0), key, 5, 20); th != 3*time.Second {
		t.Fatalf("15 over: %v, want 3s", th)
	}
	if th := m.Throttle(at(time.Second), key, 5); th != 2*time.Second {
		t.Fatalf("Throttle after 1 s: %v, want 2s", th)
	}
	if th := m.RecordPermissive(at(0), SensorKey{KeyControllerMutationRate, "", "free"}, math.Inf(1), 1e9); th != 0 {
		t.Fatalf("unlimited quota throttled: %v", th)
	}
	if n := m.Expire(at(time.Hour + time.Millisecond)); n != 1 {
		t.Fatalf("Expire dropped %d buckets, want 1", n)
	}
}

// Reference: KIP-599 (CreateTopics v6, DeleteTopics v5, CreatePartitions v3).
func TestStrictMutationQuotaVersions(t *testing.T) {
	tests := []struct {
		key, version int16
		want         bool
	}{
		{19, 5, false}, {19, 6, true}, {19, 7, true},
		{20, 4, false}, {20, 5, true},
		{37, 2, false}, {37, 3, true},
		{0, 9, false},
	}
	for _, tt := range tests {
		if got := StrictMutationQuota(tt.key, tt.version); got != tt.want {
			t.Errorf("StrictMutationQuota(%d, %d) = %v, want %v", tt.key, tt.version, got, tt.want)
		}
	}
}

// TestMutationTrackerConcurrentStrictNeverOveradmits runs under -race: concurrent strict
// records against one bucket admit topics only while it is not below zero, so at most one
// topic per refill overdraws it.
func TestMutationTrackerConcurrentStrictNeverOveradmits(t *testing.T) {
	m := NewMutationTracker(WindowConfig{}, 0)
	key := SensorKey{KeyControllerMutationRate, "u", ""}
	var mu sync.Mutex
	admitted := 0
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				if _, err := m.RecordStrict(at(0), key, 1, 1); err == nil {
					mu.Lock()
					admitted++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	// Burst 11 tokens: 11 single-partition topics bring the bucket to 0, which is not
	// exhausted, so a 12th is admitted and takes it to -1; nothing more is.
	if admitted != 12 {
		t.Fatalf("admitted %d topics, want 12", admitted)
	}
}
