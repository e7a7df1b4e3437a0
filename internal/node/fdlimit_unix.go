//go:build unix

package node

import "syscall"

// openFileLimit returns the process's soft limit of open descriptors
// (RLIMIT_NOFILE; the Go runtime raises it to the hard limit at start),
// or 0 when it cannot be read.
func openFileLimit() uint64 {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0
	}
	return rl.Cur
}
