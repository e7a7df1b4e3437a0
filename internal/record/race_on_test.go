//go:build race

package record

// raceEnabled scales heavy test workloads down under -race.
const raceEnabled = true
