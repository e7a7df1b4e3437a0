//go:build !race

package replica

// simDefaultSeeds is the number of simulation seeds a plain test run covers.
const simDefaultSeeds = 1000
