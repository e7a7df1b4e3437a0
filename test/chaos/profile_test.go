package chaos

import (
	"os"
	"strconv"
	"testing"
	"time"
)

// longProfile reports whether SAMSA_CHAOS_LONG is set: each scenario then
// runs for 5 minutes with TESTPLAN's fault schedule instead of the short
// profile of about 20 s that `go test ./...` runs.
func longProfile() bool { return os.Getenv("SAMSA_CHAOS_LONG") != "" }

// pick returns long under the long profile and short otherwise.
func pick(short, long time.Duration) time.Duration {
	if longProfile() {
		return long
	}
	return short
}

// sleepUntil sleeps until t; fault schedules are wall-clock plans.
func sleepUntil(t time.Time) { time.Sleep(time.Until(t)) }

// chaosSeed returns the seed of a scenario's random choices:
// SAMSA_CHAOS_SEED if set, else one from the clock. It is logged, so a
// run can be repeated with the same draws (the timing of the processes
// still varies).
func chaosSeed(t *testing.T) uint64 {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("SAMSA_CHAOS_SEED"); v != "" {
		var err error
		if seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("SAMSA_CHAOS_SEED=%q: %v", v, err)
		}
	}
	t.Logf("seed %d (SAMSA_CHAOS_SEED=%d repeats it)", seed, seed)
	return seed
}
