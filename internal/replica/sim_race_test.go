//go:build race

package replica

// simDefaultSeeds is scaled down under the race detector, which slows the
// simulation about tenfold.
const simDefaultSeeds = 100
