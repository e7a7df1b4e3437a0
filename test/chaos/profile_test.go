package chaos

import (
	"os"
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
