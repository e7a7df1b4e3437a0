//go:build race

package cli

// raceEnabled skips what the race detector slows past its deadlines
// (etcd's bcrypt password check, under a fixed client dial timeout).
const raceEnabled = true
