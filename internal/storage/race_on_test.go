//go:build race

package storage

// raceEnabled scales workloads down under the race detector.
const raceEnabled = true
