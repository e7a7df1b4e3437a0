//go:build !race

package broker_test

// raceEnabled scales heavy workloads down under -race, where every memory
// access costs several times more.
const raceEnabled = false
